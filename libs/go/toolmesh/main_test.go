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

// stack is the real stack every test here runs against; vectorsReady is "" when the parity
// backend (test/vectors/setup.ts) is serving, else why it is not.
var (
	stack        *stacktest.Stack
	vectorsReady string
	agentToken   string
	vectors      struct {
		Agent struct {
			Sub   string   `json:"sub"`
			Roles []string `json:"roles"`
		} `json:"agent"`
		Cases []vectorCase `json:"cases"`
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
	stack, err = stacktest.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot start the stack:", err)
		return 1
	}
	defer stack.Stop()
	agentToken = stacktest.MintJWT(vectors.Agent.Sub, vectors.Agent.Roles)
	if missing := stack.Missing("permission", "registry", "dispatcher"); missing != "" {
		vectorsReady = fmt.Sprintf("services/%s/src/main.ts does not exist yet", missing)
	} else if err := startVectorBackend(); err != nil {
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

func needVectors(t *testing.T, services ...string) {
	t.Helper()
	if vectorsReady != "" {
		t.Skip(vectorsReady)
	}
	if missing := stack.Missing(services...); missing != "" {
		t.Skipf("services/%s/src/main.ts does not exist yet", missing)
	}
}
