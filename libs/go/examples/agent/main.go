// Command agent calls one tool through the whole toolmesh chain and prints the outcome.
//
//	TOOLMESH_ADDRESS=127.0.0.1:7100 TOOLMESH_TOKEN=tmk_... go run ./examples/agent data.query '{"sql":"select 1"}'
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"toolmesh.dev/go/toolmesh"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: agent <tool> [json-arguments]")
		os.Exit(2)
	}
	args := map[string]any{}
	if len(os.Args) > 2 {
		if err := json.Unmarshal([]byte(os.Args[2]), &args); err != nil {
			fmt.Fprintln(os.Stderr, "arguments must be a JSON object:", err)
			os.Exit(2)
		}
	}
	address := os.Getenv("TOOLMESH_ADDRESS")
	if address == "" {
		address = "127.0.0.1:7100"
	}
	client, err := toolmesh.New(address, os.Getenv("TOOLMESH_TOKEN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer client.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := client.Dispatch(ctx, os.Args[1], args)
	var invalid *toolmesh.ValidationError
	var denied *toolmesh.PermissionError
	var unknown *toolmesh.ToolNotFoundError
	switch {
	case errors.As(err, &invalid):
		for _, v := range invalid.Violations {
			fmt.Fprintf(os.Stderr, "invalid argument %s: %s\n", v.Path, v.Message)
		}
		os.Exit(1)
	case errors.As(err, &denied):
		fmt.Fprintf(os.Stderr, "denied: %s (missing scopes %v)\n", denied.Reason, denied.MissingScopes)
		os.Exit(1)
	case errors.As(err, &unknown):
		fmt.Fprintf(os.Stderr, "no tool %q; available: %v\n", unknown.Requested, unknown.AvailableTools)
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, _ := json.MarshalIndent(map[string]any{"call_id": res.CallID, "status": res.Status, "output": res.Output, "error": res.Error}, "", "  ")
	fmt.Println(string(out))
	if !res.OK() {
		os.Exit(1)
	}
}
