package toolmesh_test

import (
	"context"
	"regexp"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"toolmesh.dev/go/toolmesh"
)

// The stack's tool agent talks to a scripted model that answers "you said: <message> (<n> user
// messages)", so the history each window keeps shows in the answer.

func TestChatKeepsAWindowPerPrincipal(t *testing.T) {
	ctx := context.Background()
	agent := client(t, stack.Token("payer"))
	first, err := agent.Chat(ctx, "hello from go", "go-w1")
	if err != nil {
		t.Fatal(err)
	}
	want := toolmesh.ChatReply{Response: "you said: hello from go (1 user messages)", ChatID: "go-w1"}
	if first.Response != want.Response || first.ChatID != want.ChatID || len(first.TaskIDs) != 0 {
		t.Fatalf("got %+v, want %+v", *first, want)
	}
	second, err := agent.Chat(ctx, "again", "go-w1")
	if err != nil || second.Response != "you said: again (2 user messages)" {
		t.Fatalf("got %+v, %v", second, err)
	}
	// Another principal naming the same window has one of its own.
	other, err := client(t, stack.Token("approver")).Chat(ctx, "hello", "go-w1")
	if err != nil || other.Response != "you said: hello (1 user messages)" {
		t.Fatalf("got %+v, %v", other, err)
	}
}

func TestChatOpensAWindowWhenNoneIsNamed(t *testing.T) {
	reply, err := client(t, stack.Token("payer")).Chat(context.Background(), "a new window", "")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^w-[0-9a-f]{12}$`).MatchString(reply.ChatID) {
		t.Fatalf("chat id %q", reply.ChatID)
	}
}

func TestChatRefusesABadWindowID(t *testing.T) {
	_, err := client(t, stack.Token("payer")).Chat(context.Background(), "hi", "not a window!")
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || st.Message() != "chat_id: must be 1-128 characters of A-Z a-z 0-9 _ . : -" {
		t.Fatalf("got %v", err)
	}
}
