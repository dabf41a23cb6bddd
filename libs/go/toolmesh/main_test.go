package toolmesh_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"toolmesh.dev/go/internal/stacktest"
)

// stack is the real stack every test here runs against, with the parity backend
// (test/vectors/setup.ts) serving the vec.* tools; agentToken is the vectors' agent.
var (
	stack      *stacktest.Stack
	agentToken string
	vectors    struct {
		Agent stacktest.Claims `json:"agent"`
		Cases []vectorCase     `json:"cases"`
	}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	raw, err := os.ReadFile(filepath.Join(stacktest.RepoRoot(), "test/vectors/cases.json"))
	if err == nil {
		err = json.Unmarshal(raw, &vectors)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot read test/vectors/cases.json:", err)
		return 1
	}
	stack, err = stacktest.Start(map[string]stacktest.Claims{
		"vectors": vectors.Agent,
		// An agent whose only grant needs approval, and an approver (TOOLMESH_APPROVER_ROLES
		// defaults to approver): see approvals_test.go.
		"payer":    {Sub: "go-payer", Roles: []string{"agent"}},
		"approver": {Sub: "go-approver", Roles: []string{"agent", "approver"}},
	}, 1)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the stack:", err)
		return 1
	}
	defer stack.Stop()
	agentToken = stack.Token("vectors")
	if err := startVectorBackend(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// startVectorBackend runs test/vectors/setup.ts: the vec.* tools, registered and granted.
func startVectorBackend() error {
	cmd := exec.Command("node", "--import", "tsx", filepath.Join(stacktest.RepoRoot(), "test/vectors/setup.ts"))
	cmd.Dir = stacktest.RepoRoot()
	cmd.Env = append(os.Environ(),
		"TOOLMESH_REGISTRY_URL=http://"+stack.Address("registry"),
		"TOOLMESH_PERMISSION_URL=http://"+stack.Address("permission"),
		"TOOLMESH_DISPATCHER_URL=http://"+stack.Address("dispatcher"),
		"TOOLMESH_ADMIN_TOKEN="+stack.AdminToken,
		"TOOLMESH_VECTOR_AGENT_TOKEN="+agentToken,
	)
	out, err := stack.Spawn(cmd, "vectors")
	if err != nil {
		return err
	}
	if out.WaitFor(func(l string) bool { return strings.Contains(l, `"ready":true`) }, 60*time.Second) == "" {
		return fmt.Errorf("test/vectors/setup.ts did not get ready:\n%s", stack.Logs("vectors"))
	}
	return nil
}

// eventually calls probe until it returns nil, failing the test with the last error once timeout
// has passed: grants and tools reach the Dispatcher through NATS watches, within about a second.
func eventually(t *testing.T, timeout time.Duration, what string, probe func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := probe()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last: %v", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
