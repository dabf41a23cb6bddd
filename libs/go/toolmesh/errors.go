package toolmesh

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonv1 "toolmesh.dev/go/gen/toolmesh/common/v1"
)

// StatusError is a gRPC error from a toolmesh service with its code, message and decoded details
// (ValidationFailure, ToolNotFound, PermissionDenial, BadField from toolmesh.common.v1).
// errors.As also finds the typed views: *ValidationError, *PermissionError, *ToolNotFoundError,
// *UnauthenticatedError.
type StatusError struct {
	Code    codes.Code
	Message string
	Details []proto.Message
	status  *status.Status
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// GRPCStatus lets status.Code and status.FromError see through the wrapper.
func (e *StatusError) GRPCStatus() *status.Status { return e.status }

// Violation is one failing JSON path (or request field) with what is wrong there.
type Violation struct {
	Path    string
	Message string
	Keyword string
}

// ValidationError is INVALID_ARGUMENT: the arguments failed the tool's schema, or a request
// field is wrong. Violations has one entry a path.
type ValidationError struct {
	*StatusError
	Subject    string
	Violations []Violation
}

func (e *ValidationError) Unwrap() error { return e.StatusError }

// PermissionError is PERMISSION_DENIED with what no grant covered.
type PermissionError struct {
	*StatusError
	Resource      string
	MissingScopes []string
	DenyGrantID   string
	Principal     string
	Reason        string
}

func (e *PermissionError) Unwrap() error { return e.StatusError }

// ToolNotFoundError is NOT_FOUND for a tool, with the tools the caller may use.
type ToolNotFoundError struct {
	*StatusError
	Requested      string
	AvailableTools []string
}

func (e *ToolNotFoundError) Unwrap() error { return e.StatusError }

// UnauthenticatedError is UNAUTHENTICATED: the bearer token is missing, wrong or expired.
type UnauthenticatedError struct{ *StatusError }

func (e *UnauthenticatedError) Unwrap() error { return e.StatusError }

// FromError turns a gRPC error into the typed toolmesh error; other errors pass through.
func FromError(err error) error {
	if err == nil {
		return nil
	}
	var already *StatusError
	if errors.As(err, &already) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	base := &StatusError{Code: st.Code(), Message: st.Message(), status: st}
	for _, d := range st.Details() {
		if m, ok := d.(proto.Message); ok {
			base.Details = append(base.Details, m)
		}
	}
	switch st.Code() {
	case codes.InvalidArgument:
		v := &ValidationError{StatusError: base}
		for _, d := range base.Details {
			switch m := d.(type) {
			case *commonv1.ValidationFailure:
				v.Subject = m.GetSubject()
				for _, f := range m.GetViolations() {
					v.Violations = append(v.Violations, Violation{Path: f.GetPath(), Message: f.GetMessage(), Keyword: f.GetKeyword()})
				}
			case *commonv1.BadField:
				v.Violations = append(v.Violations, Violation{Path: m.GetField(), Message: m.GetDescription()})
			}
		}
		return v
	case codes.PermissionDenied:
		p := &PermissionError{StatusError: base, Reason: base.Message}
		for _, d := range base.Details {
			if m, ok := d.(*commonv1.PermissionDenial); ok {
				p.Resource, p.MissingScopes, p.DenyGrantID, p.Principal = m.GetResource(), m.GetMissingScopes(), m.GetDenyGrantId(), m.GetPrincipal()
				if m.GetReason() != "" {
					p.Reason = m.GetReason()
				}
			}
		}
		return p
	case codes.NotFound:
		for _, d := range base.Details {
			if m, ok := d.(*commonv1.ToolNotFound); ok {
				return &ToolNotFoundError{StatusError: base, Requested: m.GetRequested(), AvailableTools: m.GetAvailableTools()}
			}
		}
	case codes.Unauthenticated:
		return &UnauthenticatedError{StatusError: base}
	}
	return base
}
