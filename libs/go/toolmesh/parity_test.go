package toolmesh_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"toolmesh.dev/go/toolmesh"
)

type vectorExpect struct {
	Status                string           `json:"status"`
	Output                map[string]any   `json:"output"`
	Error                 map[string]any   `json:"error"`
	TraceID               string           `json:"trace_id"`
	Attempts              uint32           `json:"attempts"`
	RefusalCode           string           `json:"refusal_code"`
	Code                  string           `json:"code"`
	ViolationPaths        []string         `json:"violation_paths"`
	MissingScopes         []string         `json:"missing_scopes"`
	AvailableToolsInclude []string         `json:"available_tools_include"`
	Results               []vectorExpect   `json:"results"`
	Tools                 []string         `json:"tools"`
	Definitions           []map[string]any `json:"definitions"`
}

type vectorCase struct {
	Name      string         `json:"name"`
	Op        string         `json:"op"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Token     string         `json:"token"`
	TraceID   string         `json:"trace_id"`
	TimeoutMs int            `json:"timeout_ms"`
	Calls     []struct {
		Tool      string         `json:"tool"`
		Arguments map[string]any `json:"arguments"`
	} `json:"calls"`
	Keyword string       `json:"keyword"`
	Format  string       `json:"format"`
	Names   []string     `json:"names"`
	Expect  vectorExpect `json:"expect"`
}

// TestParityVectors runs test/vectors/cases.json with the Go client.
func TestParityVectors(t *testing.T) {
	for _, vc := range vectors.Cases {
		t.Run(vc.Name, func(t *testing.T) {
			token := agentToken
			if vc.Token != "" {
				token = vc.Token
			}
			got, err := runVector(client(t, token), vc)
			want := vc.Expect
			if err != nil {
				checkRefusal(t, err, want)
				return
			}
			if want.Code != "" {
				t.Fatalf("want %s, got %+v", want.Code, got)
			}
			switch {
			case want.Results != nil:
				results := got.([]*toolmesh.Result)
				if len(results) != len(want.Results) {
					t.Fatalf("got %d results, want %d", len(results), len(want.Results))
				}
				for i := range results {
					checkResult(t, results[i], want.Results[i])
				}
			case want.Tools != nil:
				if !slices.Equal(got.([]string), want.Tools) {
					t.Fatalf("tools %v, want %v", got, want.Tools)
				}
			case want.Definitions != nil:
				if !reflect.DeepEqual(got, want.Definitions) {
					a, _ := json.Marshal(got)
					b, _ := json.Marshal(want.Definitions)
					t.Fatalf("definitions\n%s\nwant\n%s", a, b)
				}
			default:
				checkResult(t, got.(*toolmesh.Result), want)
			}
		})
	}
}

func runVector(c *toolmesh.Client, vc vectorCase) (any, error) {
	ctx := context.Background()
	switch vc.Op {
	case "dispatch":
		var opts []toolmesh.CallOption
		if vc.TraceID != "" {
			opts = append(opts, toolmesh.WithTraceID(vc.TraceID))
		}
		if vc.TimeoutMs > 0 {
			opts = append(opts, toolmesh.WithTimeout(time.Duration(vc.TimeoutMs)*time.Millisecond))
		}
		return c.Dispatch(ctx, vc.Tool, vc.Arguments, opts...)
	case "batch":
		var calls []toolmesh.Call
		for _, call := range vc.Calls {
			calls = append(calls, toolmesh.Call{Tool: call.Tool, Arguments: call.Arguments})
		}
		return c.Batch(ctx, calls, "")
	case "list_tools":
		tools, err := c.ListTools(ctx, toolmesh.ToolFilter{Keyword: vc.Keyword})
		var names []string
		for _, tool := range tools {
			names = append(names, tool.GetSpec().GetName())
		}
		slices.Sort(names)
		return names, err
	case "export":
		return c.ExportToolSchemas(ctx, vc.Format, vc.Names...)
	}
	return nil, errors.New("unknown op " + vc.Op)
}

func checkResult(t *testing.T, got *toolmesh.Result, want vectorExpect) {
	t.Helper()
	if got.Status != want.Status {
		t.Fatalf("status %s, want %s (%+v)", got.Status, want.Status, got)
	}
	if want.Output != nil && !reflect.DeepEqual(got.Output, want.Output) {
		t.Fatalf("output %v, want %v", got.Output, want.Output)
	}
	if code, ok := want.Error["code"]; ok && (got.Error == nil || got.Error.Code != code) {
		t.Fatalf("error %+v, want code %v", got.Error, code)
	}
	if msg, ok := want.Error["message"]; ok && (got.Error == nil || got.Error.Message != msg) {
		t.Fatalf("error %+v, want message %v", got.Error, msg)
	}
	if want.TraceID != "" && got.TraceID != want.TraceID {
		t.Fatalf("trace id %s, want %s", got.TraceID, want.TraceID)
	}
	if want.Attempts != 0 && got.Attempts != want.Attempts {
		t.Fatalf("attempts %d, want %d", got.Attempts, want.Attempts)
	}
	if want.RefusalCode != "" && got.RefusalCode != want.RefusalCode {
		t.Fatalf("refusal code %s, want %s", got.RefusalCode, want.RefusalCode)
	}
}

func checkRefusal(t *testing.T, err error, want vectorExpect) {
	t.Helper()
	var base *toolmesh.StatusError
	if !errors.As(err, &base) {
		t.Fatalf("unexpected error %v", err)
	}
	if want.Code == "" || codeName(base) != want.Code {
		t.Fatalf("code %s, want %q (%v)", codeName(base), want.Code, err)
	}
	if want.ViolationPaths != nil {
		var v *toolmesh.ValidationError
		if !errors.As(err, &v) {
			t.Fatalf("want *ValidationError, got %v", err)
		}
		var paths []string
		for _, violation := range v.Violations {
			paths = append(paths, violation.Path)
		}
		slices.Sort(paths)
		expected := slices.Clone(want.ViolationPaths)
		slices.Sort(expected)
		if !slices.Equal(paths, expected) {
			t.Fatalf("violation paths %v, want %v", paths, expected)
		}
	}
	if want.MissingScopes != nil {
		var p *toolmesh.PermissionError
		if !errors.As(err, &p) || !slices.Equal(p.MissingScopes, want.MissingScopes) {
			t.Fatalf("want missing scopes %v, got %v", want.MissingScopes, err)
		}
	}
	for _, name := range want.AvailableToolsInclude {
		var nf *toolmesh.ToolNotFoundError
		if !errors.As(err, &nf) || !slices.Contains(nf.AvailableTools, name) {
			t.Fatalf("want %s among the available tools, got %v", name, err)
		}
	}
}

// codeName is the upper-case gRPC code name, as in the vectors (INVALID_ARGUMENT).
func codeName(e *toolmesh.StatusError) string {
	names := map[string]string{
		"InvalidArgument": "INVALID_ARGUMENT", "PermissionDenied": "PERMISSION_DENIED", "NotFound": "NOT_FOUND",
		"Unauthenticated": "UNAUTHENTICATED", "Unavailable": "UNAVAILABLE", "FailedPrecondition": "FAILED_PRECONDITION",
		"DeadlineExceeded": "DEADLINE_EXCEEDED", "AlreadyExists": "ALREADY_EXISTS", "Internal": "INTERNAL",
	}
	if n, ok := names[e.Code.String()]; ok {
		return n
	}
	return e.Code.String()
}
