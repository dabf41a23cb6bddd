package toolmesh_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	commonv1 "toolmesh.dev/go/gen/toolmesh/common/v1"
	eventsv1 "toolmesh.dev/go/gen/toolmesh/events/v1"

	"toolmesh.dev/go/internal/stacktest"
	"toolmesh.dev/go/toolmesh"
)

func client(t *testing.T, token string) *toolmesh.Client {
	t.Helper()
	c, err := toolmesh.New(stack.Address("dispatcher"), token,
		toolmesh.WithRegistry(stack.Address("registry")),
		toolmesh.WithPermission(stack.Address("permission")),
		toolmesh.WithCallback(stack.Address("callback")),
		toolmesh.WithDefaultTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestDispatchReturnsTheToolOutput(t *testing.T) {
	res, err := client(t, agentToken).Dispatch(context.Background(), "vec.echo", map[string]any{"text": "go", "times": 2},
		toolmesh.WithTraceID("0af7651916cd43dd8448eb211c80319c"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() || res.Output["text"] != "gogo" || res.TraceID != "0af7651916cd43dd8448eb211c80319c" || res.CallID == "" {
		t.Fatalf("unexpected result %+v", res)
	}
}

func TestToolFailureIsAResult(t *testing.T) {
	res, err := client(t, agentToken).Dispatch(context.Background(), "vec.fail", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "FAILURE" || res.Error == nil || res.Error.Code != "out_of_stock" {
		t.Fatalf("unexpected result %+v", res)
	}
}

func TestRefusalsCarryTheirDetails(t *testing.T) {
	ctx := context.Background()
	c := client(t, agentToken)

	_, err := c.Dispatch(ctx, "vec.echo", map[string]any{"text": "", "times": 0})
	var invalid *toolmesh.ValidationError
	if !errors.As(err, &invalid) {
		t.Fatalf("want *ValidationError, got %v", err)
	}
	var paths []string
	for _, v := range invalid.Violations {
		paths = append(paths, v.Path)
	}
	slices.Sort(paths)
	if !slices.Equal(paths, []string{"/text", "/times"}) || status.Code(err) != codes.InvalidArgument {
		t.Fatalf("violations %+v, code %v", invalid.Violations, status.Code(err))
	}

	_, err = c.Dispatch(ctx, "vec.secret", nil)
	var denied *toolmesh.PermissionError
	if !errors.As(err, &denied) || !slices.Equal(denied.MissingScopes, []string{"write:secret"}) || denied.Reason == "" {
		t.Fatalf("want *PermissionError with write:secret missing, got %#v", err)
	}

	_, err = c.Dispatch(ctx, "vec.ecko", nil)
	var unknown *toolmesh.ToolNotFoundError
	if !errors.As(err, &unknown) || !slices.Contains(unknown.AvailableTools, "vec.echo") || unknown.Requested != "vec.ecko" {
		t.Fatalf("want *ToolNotFoundError listing vec.echo, got %v", err)
	}
	var base *toolmesh.StatusError
	if !errors.As(err, &base) || base.Code != codes.NotFound {
		t.Fatalf("want a *StatusError under it, got %v", err)
	}

	_, err = client(t, "not-a-token").Dispatch(ctx, "vec.echo", map[string]any{"text": "x"})
	var unauthenticated *toolmesh.UnauthenticatedError
	if !errors.As(err, &unauthenticated) {
		t.Fatalf("want *UnauthenticatedError, got %v", err)
	}
}

func TestTimeoutIsInterrupted(t *testing.T) {
	res, err := client(t, agentToken).Dispatch(context.Background(), "vec.slow", map[string]any{"ms": 5000},
		toolmesh.WithTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "INTERRUPTED" || res.DurationMs > 3000 {
		t.Fatalf("unexpected result %+v", res)
	}
}

func TestBatchKeepsOrderAndRefusals(t *testing.T) {
	results, err := client(t, agentToken).Batch(context.Background(), []toolmesh.Call{
		{Tool: "vec.echo", Arguments: map[string]any{"text": "a"}},
		{Tool: "vec.secret"},
		{Tool: "vec.add", Arguments: map[string]any{"a": 1, "b": 2}},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{results[0].Status, results[1].Status, results[2].Status}
	if !slices.Equal(got, []string{"SUCCESS", "REFUSED", "SUCCESS"}) || results[1].RefusalCode != "PERMISSION_DENIED" || results[2].Output["sum"] != 3.0 {
		t.Fatalf("unexpected results %v %+v", got, results)
	}
}

func TestWaitOutcome(t *testing.T) {
	c := client(t, agentToken)
	res, err := c.Dispatch(context.Background(), "vec.echo", map[string]any{"text": "watch"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	outcome, err := c.WaitOutcome(ctx, res.CallID)
	if err != nil {
		t.Fatal(err)
	}
	if outcome.CallID != res.CallID || outcome.Status != "SUCCESS" || outcome.Output["text"] != "watch" {
		t.Fatalf("unexpected outcome %+v", outcome)
	}
}

func TestCancelOfAnUnknownCallIsNotFound(t *testing.T) {
	err := client(t, agentToken).Cancel(context.Background(), "no-such-call", "test")
	if status.Code(err) != codes.NotFound {
		t.Fatalf("want NOT_FOUND, got %v", err)
	}
}

func TestRetriesStopOnTheBound(t *testing.T) {
	port := stack.FreePorts[0] // nothing listens there
	attempts := 0
	count := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		attempts++
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c, err := toolmesh.New("127.0.0.1:"+itoa(port), "t", toolmesh.WithRetry(3, 10*time.Millisecond, 20*time.Millisecond),
		toolmesh.WithDialOptions(grpc.WithChainUnaryInterceptor(count)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Dispatch(context.Background(), "a.b", nil, toolmesh.WithTimeout(time.Second))
	if status.Code(err) != codes.Unavailable || attempts != 3 {
		t.Fatalf("want UNAVAILABLE after 3 attempts, got %v after %d", err, attempts)
	}
	_, err = c.ListTools(context.Background(), toolmesh.ToolFilter{})
	if attempts != 6 {
		t.Fatalf("want 3 more attempts for ListTools, got %d (%v)", attempts-3, err)
	}
}

func TestNewNeedsAToken(t *testing.T) {
	if _, err := toolmesh.New("127.0.0.1:1", ""); err == nil {
		t.Fatal("want an error for an empty token")
	}
}

func TestSubjectTokensMatchTheTypeScriptVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(stacktest.RepoRoot(), "test/vectors/subject-tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct{ Value, Token string } `json:"cases"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		if got := toolmesh.SubjectToken(c.Value); got != c.Token {
			t.Errorf("SubjectToken(%q) = %q, want %q", c.Value, got, c.Token)
		}
	}
	if got := toolmesh.CallbackSubject("SUCCESS", "data.query"); got != "toolmesh.callback.success.data%2Equery" {
		t.Errorf("CallbackSubject = %q", got)
	}
}

func TestOutcomeWordsMatchTheTypeScriptVectors(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(stacktest.RepoRoot(), "test/vectors/outcome-words.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Statuses []struct {
			Status, Word string
			Final        bool
		} `json:"statuses"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Statuses) != len(commonv1.CallStatus_name) {
		t.Fatalf("the vectors name %d statuses, the contract has %d", len(file.Statuses), len(commonv1.CallStatus_name))
	}
	for _, s := range file.Statuses {
		value, ok := commonv1.CallStatus_value["CALL_STATUS_"+s.Status]
		if !ok || toolmesh.StatusName(commonv1.CallStatus(value)) != s.Status {
			t.Errorf("status %s is not in the contract", s.Status)
		}
		if got := toolmesh.IsFinal(s.Status); got != s.Final {
			t.Errorf("IsFinal(%q) = %v, want %v", s.Status, got, s.Final)
		}
		if got := toolmesh.CallbackSubject(s.Status, "*"); got != "toolmesh.callback."+s.Word+".*" {
			t.Errorf("CallbackSubject(%q) = %q, want the word %s", s.Status, got, s.Word)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestExampleAgentCallsATool(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agent")
	build := exec.Command("go", "build", "-o", bin, "./examples/agent")
	build.Dir = filepath.Join(stacktest.RepoRoot(), "libs/go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/agent: %v\n%s", err, out)
	}
	run := exec.Command(bin, "vec.echo", `{"text":"go","times":2}`)
	run.Env = append(os.Environ(), "TOOLMESH_ADDRESS="+stack.Address("dispatcher"), "TOOLMESH_TOKEN="+agentToken)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	var printed struct {
		Status string         `json:"status"`
		Output map[string]any `json:"output"`
	}
	if err := json.Unmarshal(out, &printed); err != nil || printed.Status != "SUCCESS" || printed.Output["text"] != "gogo" {
		t.Fatalf("agent printed %s (%v)", out, err)
	}
	refused := exec.Command(bin, "vec.echo", `{"text":""}`)
	refused.Env = run.Env
	out, err = refused.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "invalid argument /text:") {
		t.Fatalf("want the violation printed and a failure exit, got %v\n%s", err, out)
	}
}

func TestDecodeCallbackEvent(t *testing.T) {
	data, _ := proto.Marshal(&eventsv1.CallbackEvent{CallId: "c1", Tool: "vec.echo", Status: commonv1.CallStatus_CALL_STATUS_SUCCESS})
	o, err := toolmesh.DecodeCallbackEvent(data, "toolmesh.events.v1.CallbackEvent")
	if err != nil || o.CallID != "c1" || o.Status != "SUCCESS" {
		t.Fatalf("got %+v, %v", o, err)
	}
	if _, err := toolmesh.DecodeCallbackEvent(data, "toolmesh.events.v1.TraceEvent"); err == nil {
		t.Fatal("want an error for another message type")
	}
}

func TestDecodeCallbackEventCarriesTheCost(t *testing.T) {
	data, _ := proto.Marshal(&eventsv1.CallbackEvent{
		CallId: "c2", Tool: "vec.priced", Status: commonv1.CallStatus_CALL_STATUS_SUCCESS,
		Cost: &eventsv1.Cost{Currency: "CREDITS", Micros: 11000, ReportedMicros: 10000},
	})
	o, err := toolmesh.DecodeCallbackEvent(data, "toolmesh.events.v1.CallbackEvent")
	if err != nil || o.Cost == nil || *o.Cost != (toolmesh.Cost{Currency: "CREDITS", Micros: 11000, ReportedMicros: 10000}) || o.Cost.Amount() != 0.011 {
		t.Fatalf("got %+v, %v", o, err)
	}
	free, _ := proto.Marshal(&eventsv1.CallbackEvent{CallId: "c3", Status: commonv1.CallStatus_CALL_STATUS_SUCCESS})
	if o, _ := toolmesh.DecodeCallbackEvent(free, "toolmesh.events.v1.CallbackEvent"); o.Cost != nil {
		t.Fatalf("a call without a price has no cost, got %+v", o.Cost)
	}
}

func TestRunToolCallsAnswersAnOpenAIReply(t *testing.T) {
	reply := map[string]any{
		"role": "assistant",
		"tool_calls": []any{
			map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "vec__echo", "arguments": `{"text":"go","times":1}`}},
			map[string]any{"id": "call_2", "type": "function", "function": map[string]any{"name": "vec__echo", "arguments": `{"text":`}},
		},
	}
	messages, err := client(t, agentToken).RunToolCalls(context.Background(), reply)
	if err != nil {
		t.Fatal(err)
	}
	if len(messages) != 2 || messages[0]["tool_call_id"] != "call_1" || messages[1]["tool_call_id"] != "call_2" {
		t.Fatalf("messages %v", messages)
	}
	if content, _ := messages[1]["content"].(string); !strings.Contains(content, "not valid JSON") {
		t.Fatalf("a garbled call should say its arguments are not JSON: %q", content)
	}
}
