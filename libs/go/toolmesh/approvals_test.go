package toolmesh_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	dispatcherv1 "toolmesh.dev/go/gen/toolmesh/dispatcher/v1"
	permissionv1 "toolmesh.dev/go/gen/toolmesh/permission/v1"

	"toolmesh.dev/go/toolmesh"
)

// A call held for approval, as an agent meets it: go-payer's only grant of vec.echo needs
// approval, so its call is held; the agent waits for the outcome of its own call, an approver
// denies it, and WaitOutcome returns the REFUSED outcome the Callback service delivers.
func TestWaitOutcomeReturnsTheRefusedOutcomeOfADeniedHeldCall(t *testing.T) {
	ctx := context.Background()
	_, err := client(t, stack.AdminToken).Permission.Grant(ctx, &permissionv1.GrantRequest{Grant: &permissionv1.GrantSpec{
		Principal:        &permissionv1.PrincipalRef{Kind: permissionv1.PrincipalKind_PRINCIPAL_KIND_AGENT, Id: "go-payer"},
		Resource:         &permissionv1.Resource{Kind: permissionv1.ResourceKind_RESOURCE_KIND_TOOL, Pattern: "vec.echo"},
		Scopes:           []string{"read:data"},
		Effect:           permissionv1.Effect_EFFECT_ALLOW,
		Enabled:          true,
		RequiresApproval: true,
		Description:      "go client tests: every call of go-payer waits for an approver",
	}})
	if err != nil {
		t.Fatal(err)
	}
	payer := client(t, stack.Token("payer"))
	var held *toolmesh.Result
	eventually(t, 15*time.Second, "vec.echo to be held for go-payer", func() error {
		held, err = payer.Dispatch(ctx, "vec.echo", map[string]any{"text": "pay"})
		if err == nil && held.Status != "PENDING" {
			return fmt.Errorf("the call was not held: %+v", held)
		}
		return err
	})
	if held.Error == nil || held.Error.Code != "awaiting_approval" {
		t.Fatalf("want the error code awaiting_approval, got %+v", held)
	}

	type waited struct {
		outcome *toolmesh.Outcome
		err     error
	}
	done := make(chan waited, 1)
	go func() {
		waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		o, err := payer.WaitOutcome(waitCtx, held.CallID)
		done <- waited{o, err}
	}()
	_, err = client(t, stack.Token("approver")).Dispatcher.DecideApproval(ctx, &dispatcherv1.DecideApprovalRequest{
		CallId: held.CallID, Decision: dispatcherv1.ApprovalDecision_APPROVAL_DECISION_DENY, Reason: "not this month",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatalf("WaitOutcome: %v", got.err)
	}
	o := got.outcome
	if o.CallID != held.CallID || o.Status != "REFUSED" || !o.Final() || o.Reason != "approval_denied" {
		t.Fatalf("want REFUSED approval_denied for %s, got %+v", held.CallID, o)
	}
	if o.Error == nil || o.Error.Code != "approval_denied" || !strings.Contains(o.Error.Message, "not this month") {
		t.Fatalf("want the error approval_denied with the approver's reason, got %+v", o.Error)
	}
}
