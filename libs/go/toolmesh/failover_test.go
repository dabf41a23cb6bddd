package toolmesh_test

import (
	"context"
	"testing"
	"time"

	"toolmesh.dev/go/toolmesh"
)

// Two Dispatchers behind no load balancer: the client spreads calls over both and, once one is
// killed, every call still succeeds on the other.
func TestCallsFailOverBetweenTwoDispatchers(t *testing.T) {
	both := stack.Address("dispatcher") + "," + stack.Address("dispatcher-2")
	c, err := toolmesh.New(both, agentToken,
		toolmesh.WithRegistry(stack.Address("registry")),
		toolmesh.WithCallback(stack.Address("callback")),
		toolmesh.WithDefaultTimeout(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	call := func(round string) {
		t.Helper()
		res, err := c.Dispatch(ctx, "vec.echo", map[string]any{"text": round})
		if err != nil || !res.OK() || res.Output["text"] != round {
			t.Fatalf("%s: want the echo, got %+v, %v", round, res, err)
		}
	}
	for range 6 {
		call("both up")
	}
	if err := stack.Kill("dispatcher-2"); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		call("one killed")
	}
}
