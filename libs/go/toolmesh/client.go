// Package toolmesh is a thin Go client for the toolmesh Dispatcher, Registry and Callback
// services: dispatch tool calls, batch them, cancel, wait for outcomes, list and export tools.
// Every RPC carries the bearer token and a deadline, is retried only on UNAVAILABLE, and
// fails with errors that keep the status details (see StatusError).
package toolmesh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	agentv1 "toolmesh.dev/go/gen/toolmesh/agent/v1"
	callbackv1 "toolmesh.dev/go/gen/toolmesh/callback/v1"
	dispatcherv1 "toolmesh.dev/go/gen/toolmesh/dispatcher/v1"
	permissionv1 "toolmesh.dev/go/gen/toolmesh/permission/v1"
	registryv1 "toolmesh.dev/go/gen/toolmesh/registry/v1"
)

// Default ports of the services; the Registry, Permission and Callback addresses default to the
// Dispatcher's host with these ports.
const (
	DispatcherPort = 7100
	RegistryPort   = 7101
	PermissionPort = 7102
	CallbackPort   = 7104
)

// dispatchGrace is added to a call's own timeout for the RPC deadline, so that the Dispatcher
// answers INTERRUPTED before the client gives up with DEADLINE_EXCEEDED.
const dispatchGrace = 2 * time.Second

// Client calls toolmesh services. The raw generated stubs are exported for anything the thin
// methods do not cover; they carry the token, default deadline and retries too.
type Client struct {
	Dispatcher dispatcherv1.DispatcherServiceClient
	// Agent is the tool agent's service (chat, tasks, system status) at the Dispatcher's address,
	// which forwards it.
	Agent      agentv1.AgentServiceClient
	Registry   registryv1.RegistryServiceClient
	Permission permissionv1.PermissionServiceClient
	Callback   callbackv1.CallbackServiceClient

	conns          []*grpc.ClientConn
	defaultTimeout time.Duration
}

type options struct {
	registry, permission, callback string
	defaultTimeout                 time.Duration
	attempts                       int
	initialBackoff, maxBackoff     time.Duration
	dialOptions                    []grpc.DialOption
}

// Option configures New.
type Option func(*options)

// WithRegistry sets the Registry address (default: the Dispatcher's host, port 7101).
func WithRegistry(address string) Option { return func(o *options) { o.registry = address } }

// WithPermission sets the Permission address (default: the Dispatcher's host, port 7102).
func WithPermission(address string) Option { return func(o *options) { o.permission = address } }

// WithCallback sets the Callback address (default: the Dispatcher's host, port 7104).
func WithCallback(address string) Option { return func(o *options) { o.callback = address } }

// WithDefaultTimeout sets the deadline of RPCs whose context has none (default 30s).
func WithDefaultTimeout(d time.Duration) Option { return func(o *options) { o.defaultTimeout = d } }

// WithRetry bounds retries on UNAVAILABLE: at most attempts tries, exponential backoff with
// jitter from initial up to max (default 4 tries, 100ms, 2s). attempts 1 disables retries.
func WithRetry(attempts int, initial, max time.Duration) Option {
	return func(o *options) { o.attempts, o.initialBackoff, o.maxBackoff = attempts, initial, max }
}

// WithDialOptions adds grpc dial options (for example TLS credentials).
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

// New connects to the Dispatcher at address (host:port) with a bearer token (JWT or API key).
// Several replicas are given as one comma-separated address ("10.0.0.1:7100,10.0.0.2:7100"), as
// may be the addresses of WithRegistry and the others: RPCs go round robin to the replicas that
// are up, and one retried after UNAVAILABLE goes to the next.
func New(address, token string, opts ...Option) (*Client, error) {
	if token == "" {
		return nil, errors.New("toolmesh: a bearer token is needed (a JWT or an API key secret)")
	}
	o := &options{defaultTimeout: 30 * time.Second, attempts: 4, initialBackoff: 100 * time.Millisecond, maxBackoff: 2 * time.Second}
	for _, opt := range opts {
		opt(o)
	}
	// Several Dispatchers: "host1:7100,host2:7110". The other services default to the first's host.
	host := address
	if first := splitAddresses(address); len(first) > 0 {
		host = first[0]
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	addr := func(given string, port int) string {
		if given != "" {
			return given
		}
		return net.JoinHostPort(host, fmt.Sprint(port))
	}
	c := &Client{defaultTimeout: o.defaultTimeout}
	dial := append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(token)),
		grpc.WithChainUnaryInterceptor(c.unaryInterceptor(o)),
		grpc.WithChainStreamInterceptor(c.streamInterceptor()),
	}, o.dialOptions...)
	conns := map[string]*grpc.ClientConn{}
	conn := func(a string) (*grpc.ClientConn, error) {
		if cc, ok := conns[a]; ok {
			return cc, nil
		}
		target, balanced := dialTarget(a)
		cc, err := grpc.NewClient(target, append(append([]grpc.DialOption{}, dial...), balanced...)...)
		if err != nil {
			return nil, fmt.Errorf("toolmesh: cannot connect to %s: %w", a, err)
		}
		conns[a] = cc
		c.conns = append(c.conns, cc)
		return cc, nil
	}
	d, err := conn(address)
	if err != nil {
		return nil, err
	}
	r, err := conn(addr(o.registry, RegistryPort))
	if err != nil {
		return nil, err
	}
	p, err := conn(addr(o.permission, PermissionPort))
	if err != nil {
		return nil, err
	}
	cb, err := conn(addr(o.callback, CallbackPort))
	if err != nil {
		return nil, err
	}
	c.Dispatcher = dispatcherv1.NewDispatcherServiceClient(d)
	c.Agent = agentv1.NewAgentServiceClient(d)
	c.Registry = registryv1.NewRegistryServiceClient(r)
	c.Permission = permissionv1.NewPermissionServiceClient(p)
	c.Callback = callbackv1.NewCallbackServiceClient(cb)
	return c, nil
}

// Close closes every connection.
func (c *Client) Close() error {
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// noRetryOption marks an RPC that is sent once: the interceptor never retries it.
type noRetryOption struct{ grpc.EmptyCallOption }

var noRetry grpc.CallOption = noRetryOption{}

func (c *Client) unaryInterceptor(o *options) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.defaultTimeout)
			defer cancel()
		}
		attempts := o.attempts
		for _, opt := range callOpts {
			if _, once := opt.(noRetryOption); once {
				attempts = 1
			}
		}
		for attempt := 1; ; attempt++ {
			err := invoker(ctx, method, req, reply, cc, callOpts...)
			if status.Code(err) != codes.Unavailable || attempt >= attempts {
				return FromError(err)
			}
			pause := o.initialBackoff << (attempt - 1)
			if pause > o.maxBackoff {
				pause = o.maxBackoff
			}
			pause = pause/2 + time.Duration(rand.Int64N(int64(pause/2)+1))
			select {
			case <-ctx.Done():
				return FromError(err)
			case <-time.After(pause):
			}
		}
	}
}

func (c *Client) streamInterceptor() grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		s, err := streamer(ctx, desc, cc, method, callOpts...)
		return s, FromError(err)
	}
}

// Dispatch runs one tool call. Tool failures come back as a Result with status FAILURE or
// INTERRUPTED; refusals (auth, validation, permission, unknown tool) are errors.
func (c *Client) Dispatch(ctx context.Context, tool string, args map[string]any, opts ...CallOption) (*Result, error) {
	req, err := dispatchRequest(tool, args, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.withCallDeadline(ctx, req.GetTimeoutMs())
	defer cancel()
	res, err := c.Dispatcher.Dispatch(ctx, req)
	if err != nil {
		return nil, err
	}
	return resultOf(res), nil
}

// chatTimeout bounds a Chat without a deadline of its own: the tool agent answers within
// TOOLMESH_CHAT_TIMEOUT_MS (2 minutes by default).
const chatTimeout = 130 * time.Second

// ChatReply is the ServiceAgent's answer to one message.
type ChatReply struct {
	Response string
	// ChatID is the window, as given or as opened.
	ChatID string
	// TaskIDs are the tasks the message filed (submit_task), in order.
	TaskIDs []string
}

// Chat says message to the ServiceAgent in the caller's window chatID (a new one when empty) and
// returns its answer; the window is the caller's alone and keeps its history. It is sent once,
// never retried (a lost answer may have been given); UNAVAILABLE names TOOLMESH_MODEL_URL when
// the tool agent has no model.
func (c *Client) Chat(ctx context.Context, message, chatID string) (*ChatReply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, chatTimeout)
		defer cancel()
	}
	res, err := c.Agent.Chat(ctx, &agentv1.ChatRequest{Message: message, ChatId: chatID}, noRetry)
	if err != nil {
		return nil, err
	}
	return &ChatReply{Response: res.GetResponse(), ChatID: res.GetChatId(), TaskIDs: res.GetTaskIds()}, nil
}

// RunToolCalls runs the tool calls of a model's reply (OpenAI Chat tool_calls, OpenAI Responses
// function_call items or Anthropic tool_use blocks, decoded from the API's JSON) and returns the
// messages to append to the conversation, in the same dialect.
func (c *Client) RunToolCalls(ctx context.Context, message map[string]any) ([]map[string]any, error) {
	msg, err := structpb.NewStruct(message)
	if err != nil {
		return nil, fmt.Errorf("toolmesh: the reply is not JSON: %w", err)
	}
	res, err := c.Dispatcher.DispatchToolCalls(ctx, &dispatcherv1.DispatchToolCallsRequest{Message: msg})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(res.GetMessages()))
	for _, m := range res.GetMessages() {
		out = append(out, m.AsMap())
	}
	return out, nil
}

// Call is one call of a batch.
type Call struct {
	Tool      string
	Arguments map[string]any
	Options   []CallOption
}

// Batch runs many calls; results come in request order, each with its own status (a refused
// call has status REFUSED and RefusalCode set).
func (c *Client) Batch(ctx context.Context, calls []Call, traceID string) ([]*Result, error) {
	if len(calls) == 0 {
		return nil, errors.New("toolmesh: a batch needs at least one call")
	}
	req := &dispatcherv1.DispatchBatchRequest{TraceId: traceID}
	var total uint32
	for _, call := range calls {
		r, err := dispatchRequest(call.Tool, call.Arguments, call.Options)
		if err != nil {
			return nil, err
		}
		total += r.GetTimeoutMs()
		req.Calls = append(req.Calls, r)
	}
	ctx, cancel := c.withCallDeadline(ctx, total)
	defer cancel()
	res, err := c.Dispatcher.DispatchBatch(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]*Result, 0, len(res.GetResults()))
	for _, r := range res.GetResults() {
		out = append(out, resultOf(r))
	}
	return out, nil
}

// Cancel interrupts a running call of the caller's.
func (c *Client) Cancel(ctx context.Context, callID, reason string) error {
	_, err := c.Dispatcher.Cancel(ctx, &dispatcherv1.CancelRequest{CallId: callID, Reason: reason})
	return err
}

// WaitOutcome waits (Callback Watch) for the final outcome of a call, for example a PENDING one:
// SUCCESS, FAILURE, INTERRUPTED, or REFUSED for a call held for approval that was denied or ended
// unrun (Reason approval_denied, approval_expired …). Bound it with the context's deadline; without one the client's default timeout applies.
func (c *Client) WaitOutcome(ctx context.Context, callID string) (*Outcome, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.defaultTimeout)
		defer cancel()
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	stream, err := c.Callback.Watch(ctx, &callbackv1.WatchRequest{CallId: callID})
	if err != nil {
		return nil, err
	}
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("toolmesh: the watch of call %s ended without a final outcome", callID)
		}
		if err != nil {
			return nil, FromError(err)
		}
		o := OutcomeOf(res.GetEvent())
		if o.Final() {
			return o, nil
		}
	}
}

// ToolFilter narrows ListTools.
type ToolFilter struct {
	Category, Keyword, Group string
}

// ListTools returns every tool the caller may call (all pages).
func (c *Client) ListTools(ctx context.Context, filter ToolFilter) ([]*registryv1.Tool, error) {
	var tools []*registryv1.Tool
	token := ""
	for {
		page, err := c.Registry.ListTools(ctx, &registryv1.ListToolsRequest{
			Category: filter.Category, Keyword: filter.Keyword, Group: filter.Group, PageSize: 500, PageToken: token,
		})
		if err != nil {
			return nil, err
		}
		tools = append(tools, page.GetTools()...)
		token = page.GetNextPageToken()
		if token == "" {
			return tools, nil
		}
	}
}

// ExportToolSchemas renders tools for a model provider: "openai", "anthropic" or "mcp".
// names, when given, selects the tools.
func (c *Client) ExportToolSchemas(ctx context.Context, format string, names ...string) ([]map[string]any, error) {
	kind, ok := map[string]registryv1.SchemaFormat{
		"openai": registryv1.SchemaFormat_SCHEMA_FORMAT_OPENAI, "anthropic": registryv1.SchemaFormat_SCHEMA_FORMAT_ANTHROPIC,
		"mcp": registryv1.SchemaFormat_SCHEMA_FORMAT_MCP,
	}[strings.ToLower(format)]
	if !ok {
		return nil, fmt.Errorf("toolmesh: format must be openai, anthropic or mcp, not %q", format)
	}
	res, err := c.Registry.ExportToolSchemas(ctx, &registryv1.ExportToolSchemasRequest{Format: kind, Names: names})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(res.GetTools()))
	for _, t := range res.GetTools() {
		out = append(out, t.GetDefinition().AsMap())
	}
	return out, nil
}
