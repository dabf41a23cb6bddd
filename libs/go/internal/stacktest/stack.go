// Package stacktest starts a real toolmesh stack for Go tests: nats-server on a free port with a
// temp store and each service that exists (`node --import tsx services/<name>/src/main.ts`),
// reading each port from the JSON log line whose msg starts with "listening".
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

// Services in start order.
var Services = []string{"permission", "registry", "audit", "callback", "dispatcher"}

// Stack is a running test stack.
type Stack struct {
	Root       string
	NatsURL    string
	DataDir    string
	Ports      map[string]int
	AdminToken string
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

// Start starts nats-server and every service whose main.ts exists.
func Start() (*Stack, error) {
	root, err := os.MkdirTemp("", "toolmesh-go-")
	if err != nil {
		return nil, err
	}
	s := &Stack{Root: root, DataDir: filepath.Join(root, "data"), Ports: map[string]int{}, logs: map[string]*Lines{}}
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	bin := os.Getenv("NATS_SERVER_BIN")
	if bin == "" {
		bin = "nats-server"
	}
	nats := exec.Command(bin, "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-js", "-sd", filepath.Join(root, "nats"))
	natsErr, err := s.spawn(nats, "nats-server", true)
	if err != nil {
		s.Stop()
		return nil, err
	}
	if natsErr.WaitFor(func(l string) bool { return strings.Contains(l, "Server is ready") }, 20*time.Second) == "" {
		s.Stop()
		return nil, fmt.Errorf("nats-server did not start:\n%s", natsErr.Tail())
	}
	s.NatsURL = fmt.Sprintf("nats://127.0.0.1:%d", port)
	repo := RepoRoot()
	for _, name := range Services {
		entry := filepath.Join(repo, "services", name, "src", "main.ts")
		if _, err := os.Stat(entry); err != nil {
			continue
		}
		cmd := exec.Command("node", "--import", "tsx", entry)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(),
			"NATS_URL="+s.NatsURL,
			fmt.Sprintf("TOOLMESH_%s_PORT=0", strings.ToUpper(name)),
			"TOOLMESH_DATA_DIR="+s.DataDir,
			"TOOLMESH_JWT_SECRET="+JWTSecret,
			"LOG_LEVEL=info",
		)
		out, err := s.spawn(cmd, name, false)
		if err != nil {
			s.Stop()
			return nil, err
		}
		line := out.WaitFor(listening, 60*time.Second)
		if line == "" {
			s.Stop()
			return nil, fmt.Errorf("%s did not report listening:\n%s\n%s", name, out.Tail(), s.logs[name+".stderr"].Tail())
		}
		var record struct{ Port int }
		_ = json.Unmarshal([]byte(line), &record)
		s.Ports[name] = record.Port
	}
	if err := s.readAdminToken(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func listening(line string) bool {
	var record map[string]any
	if json.Unmarshal([]byte(line), &record) != nil {
		return false
	}
	msg, _ := record["msg"].(string)
	return strings.HasPrefix(msg, "listening")
}

// readAdminToken takes the token the Permission service bootstraps into the data dir, or mints an
// admin JWT when there is no Permission service.
func (s *Stack) readAdminToken() error {
	if _, ok := s.Ports["permission"]; !ok {
		s.AdminToken = MintJWT("admin-go", []string{"admin"})
		return nil
	}
	file := filepath.Join(s.DataDir, "admin.token")
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && strings.TrimSpace(string(b)) != "" {
			s.AdminToken = strings.TrimSpace(string(b))
			return nil
		}
	}
	return fmt.Errorf("the permission service wrote no %s", file)
}

// Spawn starts a helper process that belongs to the stack (stopped with it) and returns its
// stdout lines.
func (s *Stack) Spawn(cmd *exec.Cmd, name string) (*Lines, error) {
	return s.spawn(cmd, name, false)
}

// Logs is the tail of a process's stdout and stderr.
func (s *Stack) Logs(name string) string {
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

func (s *Stack) spawn(cmd *exec.Cmd, name string, stderrOnly bool) (*Lines, error) {
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
	if stderrOnly {
		return errs, nil
	}
	return out, nil
}

// Stop terminates every process (newest first) and removes the temp dirs.
func (s *Stack) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
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
	_ = os.RemoveAll(s.Root)
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
