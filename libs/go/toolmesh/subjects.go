package toolmesh

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	eventsv1 "toolmesh.dev/go/gen/toolmesh/events/v1"
)

// SubjectToken escapes user data as one NATS subject token exactly like libs/nats subjectToken:
// bytes outside [A-Za-z0-9_-] become %XX (UTF-8), and the empty string is %00.
func SubjectToken(value string) string {
	if value == "" {
		return "%00"
	}
	var b strings.Builder
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// CallbackSubject is `toolmesh.callback.<status>.<tool>` for a status (success, failure,
// interrupted, pending; "*" for any) and a tool ("*" for any), escaped like the publishers.
// Subscribe with any NATS client; payloads are binary toolmesh.events.v1.CallbackEvent.
func CallbackSubject(status, tool string) string {
	s, t := "*", "*"
	if status != "*" {
		s = SubjectToken(strings.TrimPrefix(strings.ToLower(status), "call_status_"))
	}
	if tool != "*" {
		t = SubjectToken(tool)
	}
	return "toolmesh.callback." + s + "." + t
}

// DecodeCallbackEvent decodes a NATS callback payload (binary toolmesh.events.v1.CallbackEvent)
// into an Outcome; typeHeader is the message's Toolmesh-Type header, checked when not empty.
func DecodeCallbackEvent(data []byte, typeHeader string) (*Outcome, error) {
	event := &eventsv1.CallbackEvent{}
	if name := string(event.ProtoReflect().Descriptor().FullName()); typeHeader != "" && typeHeader != name {
		return nil, fmt.Errorf("toolmesh: expected %s, got %s", name, typeHeader)
	}
	if err := proto.Unmarshal(data, event); err != nil {
		return nil, fmt.Errorf("toolmesh: bad callback event: %w", err)
	}
	return OutcomeOf(event), nil
}
