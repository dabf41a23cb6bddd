package toolmesh

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	commonv1 "toolmesh.dev/go/gen/toolmesh/common/v1"
	dispatcherv1 "toolmesh.dev/go/gen/toolmesh/dispatcher/v1"
)

// CallOption adjusts one Dispatch.
type CallOption func(*dispatcherv1.DispatchRequest)

// WithTraceID joins the call to a trace (32 lowercase hex characters).
func WithTraceID(id string) CallOption {
	return func(r *dispatcherv1.DispatchRequest) { ensureContext(r).TraceId = id }
}

// WithParentID names the call that caused this one.
func WithParentID(id string) CallOption {
	return func(r *dispatcherv1.DispatchRequest) { ensureContext(r).ParentId = id }
}

// WithIdempotencyKey makes a repeated call return the first outcome.
func WithIdempotencyKey(key string) CallOption {
	return func(r *dispatcherv1.DispatchRequest) { ensureContext(r).IdempotencyKey = key }
}

// WithTimeout caps the tool's run; the RPC deadline gets a little more.
func WithTimeout(d time.Duration) CallOption {
	return func(r *dispatcherv1.DispatchRequest) { r.TimeoutMs = uint32(d.Milliseconds()) }
}

func ensureContext(r *dispatcherv1.DispatchRequest) *commonv1.CallContext {
	if r.Context == nil {
		r.Context = &commonv1.CallContext{}
	}
	return r.Context
}

func dispatchRequest(tool string, args map[string]any, opts []CallOption) (*dispatcherv1.DispatchRequest, error) {
	if tool == "" {
		return nil, errors.New("toolmesh: tool must name a registered tool, for example data.query")
	}
	s, err := structpb.NewStruct(args)
	if err != nil {
		return nil, fmt.Errorf("toolmesh: arguments of %s are not JSON values: %w", tool, err)
	}
	r := &dispatcherv1.DispatchRequest{Tool: tool, Arguments: s}
	for _, opt := range opts {
		opt(r)
	}
	return r, nil
}

func (c *Client) withCallDeadline(ctx context.Context, timeoutMs uint32) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || timeoutMs == 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond+dispatchGrace)
}
