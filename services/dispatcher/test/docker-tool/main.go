// A tool for the docker runtime tests: it speaks the local HTTP tool contract (GET /healthz,
// POST /invoke) on 127.0.0.1:$TOOLMESH_TOOL_PORT and reports what it can see from inside its
// container, so that the tests check the isolation from the tool's side too.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
)

func main() {
	if code := os.Getenv("EXIT_AT_START"); code != "" {
		fmt.Fprintln(os.Stderr, "failing at start as asked")
		os.Exit(4)
	}
	addr := os.Getenv("TOOLMESH_TOOL_HOST") + ":" + os.Getenv("TOOLMESH_TOOL_PORT")
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})
	http.HandleFunc("/invoke", invoke)
	fmt.Fprintf(os.Stderr, "docker-tool listening on %s\n", addr)
	if err := http.ListenAndServe(addr, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type request struct {
	Text    string `json:"text"`
	Exit    int    `json:"exit"`
	Read    string `json:"read"`
	AllocMB int    `json:"alloc_mb"`
}

// kept holds what alloc_mb allocated, so that it stays in use.
var kept [][]byte

func invoke(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for i := 0; i < req.AllocMB; i++ {
		block := make([]byte, 1<<20)
		for j := range block {
			block[j] = 1
		}
		kept = append(kept, block)
	}
	if req.Exit != 0 {
		fmt.Fprintf(os.Stderr, "exiting with %d as asked\n", req.Exit)
		os.Exit(req.Exit)
	}
	out := map[string]any{
		"text":          req.Text,
		"uid":           os.Getuid(),
		"gid":           os.Getgid(),
		"mode":          os.Getenv("MODE"),
		"root_writable": writable("/probe"),
		"tmp_writable":  writable("/tmp/probe"),
		"call_id":       r.Header.Get("x-toolmesh-call-id"),
	}
	if token, ok := os.LookupEnv("ECHO_TOKEN"); ok {
		sum := sha256.Sum256([]byte(token))
		out["token_sha256"] = hex.EncodeToString(sum[:])
	}
	if dir, ok := os.LookupEnv("TOOLMESH_SECRETS_DIR"); ok {
		out["secrets_dir"] = dir
	}
	if req.Read != "" {
		data, err := os.ReadFile(req.Read)
		if err != nil {
			out["read_error"] = err.Error()
		} else {
			out["read"] = string(data)
			sum := sha256.Sum256(data)
			out["read_sha256"] = hex.EncodeToString(sum[:])
		}
		out["read_dir_writable"] = writable(req.Read + ".write-probe")
		out["read_file"] = owner(req.Read)
		out["read_dir"] = owner(filepath.Dir(req.Read))
	}
	w.Header().Set("content-type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// owner tells a path's permission bits (octal) and owner, as the container sees them.
func owner(path string) map[string]any {
	info, err := os.Stat(path)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	out := map[string]any{"mode": fmt.Sprintf("%o", info.Mode().Perm())}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		out["uid"] = st.Uid
		out["gid"] = st.Gid
	}
	return out
}

func writable(path string) bool {
	f, err := os.Create(path)
	if err != nil {
		return false
	}
	_ = f.Close()
	_ = os.Remove(path)
	return true
}
