// Package stacktest starts a real toolmesh stack for Go tests the way every toolmesh test starts
// one: `node --import tsx scripts/stack.ts --json` (the shared TypeScript harness) runs
// nats-server and every service on free ports with a temp data dir and prints one JSON line with
// the addresses and tokens; closing its stdin stops them all.
package stacktest

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// JWTSecret is the HS256 secret the services of a test stack verify tokens with.
const JWTSecret = "go-tests-jwt-secret-at-least-32-bytes-long!!"

// Stack is a running test stack.
type Stack struct {
	NatsURL    string
	DataDir    string
	Ports      map[string]int
	Pids       map[string]int
	AdminToken string
	harness    *exec.Cmd
	harnessIn  io.WriteCloser
	procs      []*exec.Cmd
	logs       map[string]*Lines
}

// RepoRoot is the repository root, found from this file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "../../../.."))
}

// Address is 127.0.0.1:port of a service, or "" when it is not running.
func (s *Stack) Address(service string) string {
	if p, ok := s.Ports[service]; ok {
		return fmt.Sprintf("127.0.0.1:%d", p)
	}
	return ""
}

// Missing names the first of the services that is not running, or "".
func (s *Stack) Missing(services ...string) string {
	for _, name := range services {
		if _, ok := s.Ports[name]; !ok {
			return name
		}
	}
	return ""
}

// stackInfo is the JSON line scripts/stack.ts prints.
type stackInfo struct {
	NatsURL  string `json:"natsUrl"`
	DataDir  string `json:"dataDir"`
	Services map[string]struct {
		Port int `json:"port"`
		Pid  int `json:"pid"`
	} `json:"services"`
	AdminToken string `json:"adminToken"`
}

// Start starts the shared test stack (nats-server and every service, with a second Dispatcher,
// dispatcher-2, for the clients' failover).
func Start() (*Stack, error) {
	root := RepoRoot()
	cmd := exec.Command("node", "--import", "tsx", filepath.Join(root, "scripts", "stack.ts"), "--json", "--dispatchers", "2")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "TOOLMESH_JWT_SECRET="+JWTSecret)
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

// FreePort is a TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// MintJWT is an HS256 JWT as the services verify it (iss and aud toolmesh, claim roles).
func MintJWT(sub string, roles []string) string {
	enc := base64.RawURLEncoding
	now := time.Now().Unix()
	head, _ := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
	body, _ := json.Marshal(map[string]any{"iss": "toolmesh", "aud": "toolmesh", "sub": sub, "roles": roles, "iat": now, "exp": now + 3600})
	signing := enc.EncodeToString(head) + "." + enc.EncodeToString(body)
	mac := hmac.New(sha256.New, []byte(JWTSecret))
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
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
