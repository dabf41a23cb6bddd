// Command hello is the ten-line Go agent of the README: one tool call through the whole chain.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"toolmesh.dev/go/toolmesh"
)

func main() {
	client, err := toolmesh.New("127.0.0.1:7100", os.Getenv("TOOLMESH_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	res, err := client.Dispatch(context.Background(), "example.greet", map[string]any{"name": "Ada"})
	if err != nil {
		log.Fatal(err) // *toolmesh.ValidationError, *toolmesh.PermissionError ... via errors.As
	}
	fmt.Println(res.Status, res.Output)
}
