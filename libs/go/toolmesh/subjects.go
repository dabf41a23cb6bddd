package toolmesh

import (
	"fmt"
	"strings"
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
