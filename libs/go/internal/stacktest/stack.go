// Package stacktest starts a real toolmesh stack for Go tests the way every toolmesh test starts
// one: `node --import tsx scripts/stack.ts --json` (the shared TypeScript harness) runs
// nats-server and every service on free ports with a temp data dir and prints one JSON line with
// the addresses, the tokens it minted with the stack's own JWT secret and ports with nothing
// listening; closing its stdin stops them all.
package stacktest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Stack is a running test stack.
type Stack struct {
	NatsURL    string
	DataDir    string
	Ports      map[string]int
	Pids       map[string]int
	AdminToken string
	// Tokens are JWTs for the principals Start was given, by their names.
	Tokens map[string]string
	// FreePorts are ports with nothing listening, chosen the way the services' ports are.
	FreePorts []int
	harness   *exec.Cmd
	harnessIn io.WriteCloser
	procs     []*exec.Cmd
	logs      map[string]*Lines
}

// RepoRoot is the repository root, found from this file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "../../../.."))
}

// Address is 127.0.0.1:port of a service; a service the stack does not run is a mistake in the
// test, so it panics naming the ones it runs.
func (s *Stack) Address(service string) string {
	p, ok := s.Ports[service]
	if !ok {
		panic(fmt.Sprintf("the test stack runs no %s; it runs %v", service, s.Ports))
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// Token is the JWT minted for the principal Start named name; it panics for a name it was not given.
func (s *Stack) Token(name string) string {
	t, ok := s.Tokens[name]
	if !ok {
		panic(fmt.Sprintf("no token named %s; the stack minted one for each principal given to Start", name))
	}
	return t
}

// Claims are a principal's JWT claims, as scripts/stack.ts --tokens takes them.
type Claims struct {
	Sub        string   `json:"sub"`
	Roles      []string `json:"roles,omitempty"`
	OnBehalfOf string   `json:"onBehalfOf,omitempty"`
}

// stackInfo is the JSON line scripts/stack.ts prints.
type stackInfo struct {
	NatsURL  string `json:"natsUrl"`
	DataDir  string `json:"dataDir"`
	Services map[string]struct {
		Port int `json:"port"`
		Pid  int `json:"pid"`
	} `json:"services"`
	AdminToken string            `json:"adminToken"`
	Tokens     map[string]string `json:"tokens"`
	FreePorts  []int             `json:"freePorts"`
}

// Start starts the shared test stack (nats-server and every service, with a second Dispatcher,
// dispatcher-2, for the clients' failover), with a token for each principal, by name, and
// freePorts ports with nothing listening.
func Start(principals map[string]Claims, freePorts int) (*Stack, error) {
	root := RepoRoot()
	tokens, err := json.Marshal(principals)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", "--import", "tsx", filepath.Join(root, "scripts", "stack.ts"), "--json", "--dispatchers", "2", "--model-echo",
		"--tokens", string(tokens), "--free-ports", fmt.Sprint(freePorts))
	cmd.Dir = root
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	s := &Stack{Ports: map[string]int{}, Pids: map[string]int{}, logs: map[string]*Lines{}, harness: cmd, harnessIn: stdin}
	out, err := s.spawn(cmd, "stack")
	if err != nil {
		return nil, err
	}
	line := out.WaitFor(func(l string) bool { return strings.HasPrefix(l, "{") }, 120*time.Second)
	if line == "" {
		s.Stop()
		return nil, fmt.Errorf("scripts/stack.ts did not start a stack:\n%s", s.Logs("stack"))
	}
	var info stackInfo
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		s.Stop()
		return nil, fmt.Errorf("scripts/stack.ts printed %q: %w", line, err)
	}
	s.NatsURL, s.DataDir, s.AdminToken = info.NatsURL, info.DataDir, info.AdminToken
	s.Tokens, s.FreePorts = info.Tokens, info.FreePorts
	for name, svc := range info.Services {
		if svc.Port != 0 {
			s.Ports[name] = svc.Port
		}
		s.Pids[name] = svc.Pid
	}
	return s, nil
}

// Kill sends SIGKILL to one process of the stack (dispatcher-2 …), as a crash would; it is not
// restarted.
func (s *Stack) Kill(name string) error {
	pid, ok := s.Pids[name]
	if !ok || pid == 0 {
		return fmt.Errorf("the stack runs no process named %s", name)
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// Spawn starts a helper process that belongs to the stack (stopped with it) and returns its
// stdout lines.
func (s *Stack) Spawn(cmd *exec.Cmd, name string) (*Lines, error) {
	return s.spawn(cmd, name)
}

// Logs is the tail of a process's output: a service's log file, or a spawned process's lines.
func (s *Stack) Logs(name string) string {
	if b, err := os.ReadFile(filepath.Join(s.DataDir, "logs", name+".log")); err == nil && s.DataDir != "" {
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		return strings.Join(lines, "\n")
	}
	out, errs := s.logs[name], s.logs[name+".stderr"]
	text := ""
	if out != nil {
		text += out.Tail()
	}
	if errs != nil {
		text += "\n" + errs.Tail()
	}
	return text
}

func (s *Stack) spawn(cmd *exec.Cmd, name string) (*Lines, error) {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %w", name, err)
	}
	s.procs = append(s.procs, cmd)
	out, errs := NewLines(stdout), NewLines(stderr)
	s.logs[name], s.logs[name+".stderr"] = out, errs
	return out, nil
}

// Stop terminates every process (newest first); closing the harness's stdin makes it stop the
// stack and remove its data dir.
func (s *Stack) Stop() {
	_ = s.harnessIn.Close()
	for i := len(s.procs) - 1; i >= 0; i-- {
		if s.procs[i] == s.harness {
			continue
		}
		if p := s.procs[i].Process; p != nil {
			_ = p.Signal(syscall.SIGTERM)
		}
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		done := make(chan struct{})
		go func(c *exec.Cmd) { _ = c.Wait(); close(done) }(s.procs[i])
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = s.procs[i].Process.Kill()
			<-done
		}
	}
}

// Lines keeps a process's output lines and lets a caller wait for one.
type Lines struct {
	mu    sync.Mutex
	lines []string
	subs  []chan string
}

// NewLines reads r line by line in the background.
func NewLines(r io.Reader) *Lines {
	l := &Lines{}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			if len(l.lines) > 300 {
				l.lines = l.lines[1:]
			}
			for _, c := range l.subs {
				select {
				case c <- sc.Text():
				default:
				}
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// WaitFor returns the first line (seen or future) that passes test, or "" after timeout.
func (l *Lines) WaitFor(test func(string) bool, timeout time.Duration) string {
	c := make(chan string, 1024)
	l.mu.Lock()
	for _, line := range l.lines {
		if test(line) {
			l.mu.Unlock()
			return line
		}
	}
	l.subs = append(l.subs, c)
	l.mu.Unlock()
	deadline := time.After(timeout)
	for {
		select {
		case line := <-c:
			if test(line) {
				return line
			}
		case <-deadline:
			return ""
		}
	}
}

// Tail is the last lines, for error messages.
func (l *Lines) Tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := len(l.lines) - 30
	if start < 0 {
		start = 0
	}
	return strings.Join(l.lines[start:], "\n")
}
