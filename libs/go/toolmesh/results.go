package toolmesh

import (
	"strings"

	commonv1 "toolmesh.dev/go/gen/toolmesh/common/v1"
	dispatcherv1 "toolmesh.dev/go/gen/toolmesh/dispatcher/v1"
	eventsv1 "toolmesh.dev/go/gen/toolmesh/events/v1"
)

// CallError says why a call did not succeed: a stable code, a sentence and details.
type CallError struct {
	Code    string
	Message string
	Details map[string]any
}

// Result is the answer to one dispatched call. Tool failures are results, not errors.
type Result struct {
	CallID     string
	TraceID    string
	Status     string // SUCCESS, FAILURE, INTERRUPTED, PENDING or REFUSED (in a batch)
	Output     map[string]any
	Error      *CallError
	DurationMs uint32
	Attempts   uint32
	Replayed   bool
	// RefusalCode is the gRPC code name of a refused call inside a batch.
	RefusalCode string
	// Cost is what the call cost, for a tool with a price; nil otherwise.
	Cost *Cost
}

// Cost is what a call of a priced tool cost, in millionths of Currency: Micros in all (its price
// per call and per second, and what the tool reported), ReportedMicros the part the tool reported
// itself.
type Cost struct {
	Currency       string
	Micros         uint64
	ReportedMicros uint64
}

// Amount is the cost in units of its currency (Micros / 1,000,000).
func (c *Cost) Amount() float64 { return float64(c.Micros) / 1e6 }

func costOf(c *eventsv1.Cost) *Cost {
	if c == nil {
		return nil
	}
	return &Cost{Currency: c.GetCurrency(), Micros: c.GetMicros(), ReportedMicros: c.GetReportedMicros()}
}

// OK is true when the tool ran and succeeded.
func (r *Result) OK() bool { return r.Status == "SUCCESS" }

// Outcome is a normalised outcome as the Callback service broadcasts it.
type Outcome struct {
	CallID, TraceID, Tool, AgentID, UserID string
	Status                                 string
	Output                                 map[string]any
	Error                                  *CallError
	Reason                                 string
	DurationMs, Attempts                   uint32
	// Cost is what the call cost, for a tool with a price; nil otherwise.
	Cost  *Cost
	Event *eventsv1.CallbackEvent
}

// finalStatuses are the statuses of a call that has ended (test/vectors/outcome-words.json).
var finalStatuses = map[string]bool{"SUCCESS": true, "FAILURE": true, "INTERRUPTED": true, "REFUSED": true}

// IsFinal is true for the status of a call that has ended: SUCCESS, FAILURE, INTERRUPTED, or
// REFUSED (a call held for approval and then denied or ended unrun). PENDING, held or accepted by
// an asynchronous tool, is not final.
func IsFinal(status string) bool { return finalStatuses[status] }

// Final is true once the outcome's call has ended; see IsFinal.
func (o *Outcome) Final() bool { return IsFinal(o.Status) }

// StatusName is `SUCCESS` for CALL_STATUS_SUCCESS and so on.
func StatusName(s commonv1.CallStatus) string {
	return strings.TrimPrefix(s.String(), "CALL_STATUS_")
}

func callError(e *commonv1.CallError) *CallError {
	if e == nil {
		return nil
	}
	return &CallError{Code: e.GetCode(), Message: e.GetMessage(), Details: e.GetDetails().AsMap()}
}

func resultOf(r *dispatcherv1.DispatchResponse) *Result {
	out := r.GetOutput().AsMap()
	return &Result{
		CallID: r.GetCallId(), TraceID: r.GetTraceId(), Status: StatusName(r.GetStatus()),
		Output: out, Error: callError(r.GetError()), DurationMs: r.GetDurationMs(),
		Attempts: r.GetAttempts(), Replayed: r.GetReplayed(), RefusalCode: r.GetRefusalCode(),
		Cost: costOf(r.GetCost()),
	}
}

// OutcomeOf converts a CallbackEvent (from Watch or NATS) into an Outcome.
func OutcomeOf(e *eventsv1.CallbackEvent) *Outcome {
	return &Outcome{
		CallID: e.GetCallId(), TraceID: e.GetTraceId(), Tool: e.GetTool(), AgentID: e.GetAgentId(),
		UserID: e.GetUserId(), Status: StatusName(e.GetStatus()), Output: e.GetOutput().AsMap(),
		Error: callError(e.GetError()), Reason: e.GetReason(), DurationMs: e.GetDurationMs(),
		Attempts: e.GetAttempts(), Cost: costOf(e.GetCost()), Event: e,
	}
}
