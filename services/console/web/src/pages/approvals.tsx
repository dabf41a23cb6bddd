import {
  type Approval,
  ApprovalDecision,
  ApprovalState,
  CallStatus,
  type DecideApprovalResponse,
  DispatcherService,
  statusName,
  statusWord,
} from "@toolmesh/proto";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { auth, client, describeError, watchOutcomes, when } from "../api.js";
import { Field, Head } from "../widgets.js";

/** How often the list is read again: a new hold is not broadcast, so it is polled. */
const POLL_MS = 5000;
/** ListApprovals' largest page; more held calls than this show as a note. */
const PAGE = 1000;
/** Most decisions kept on the page. */
const KEEP = 50;

const dispatcher = () => client(DispatcherService);

/** Why a call is held, in words: `tool` or `grant:<id>`. */
function whyHeld(requiredBy: string): string {
  return requiredBy === "tool" ? "the tool requires approval" : requiredBy.replace(":", " ");
}

/**
 * Calls held for approval that the session may decide, or its own agent made (ListApprovals),
 * with Approve / Deny and an optional reason; the calls decided here stay below, with their
 * outcome and trace.
 */
export function ApprovalsPage() {
  const [held, setHeld] = useState<Approval[] | undefined>();
  const [more, setMore] = useState(false);
  const [decided, setDecided] = useState<DecideApprovalResponse[]>([]);
  const [reasons, setReasons] = useState<Record<string, string>>({});
  const [deciding, setDeciding] = useState("");
  const [error, setError] = useState("");
  // Holds known to have ended; a list read before they ended must not bring them back.
  const ended = useRef(new Set<string>());
  const drop = useCallback((callId: string) => {
    ended.current.add(callId);
    setHeld((list) => list?.filter((a) => a.callId !== callId));
  }, []);
  const reload = useCallback(() => {
    dispatcher()
      .listApprovals({ pageSize: PAGE }, auth())
      .then(
        (res) => {
          setHeld(res.approvals.filter((a) => !ended.current.has(a.callId)));
          setMore(res.nextPageToken !== "");
        },
        (e: unknown) => setError(describeError(e)),
      );
  }, []);
  useEffect(() => {
    reload();
    const timer = setInterval(reload, POLL_MS);
    // A hold that ends elsewhere (another approver, the expiry) leaves at once: its end is an
    // outcome, watched as the live page does.
    const abort = new AbortController();
    watchOutcomes(abort.signal, (event) => drop(event.callId), setError);
    return () => {
      clearInterval(timer);
      abort.abort();
    };
  }, []);

  const decide = (a: Approval, decision: ApprovalDecision) => {
    setError("");
    setDeciding(a.callId);
    dispatcher()
      .decideApproval({ callId: a.callId, decision, reason: reasons[a.callId] ?? "" }, auth())
      .then(
        (res) => {
          drop(a.callId);
          setDecided((list) => [res, ...list].slice(0, KEEP));
        },
        (e: unknown) => {
          // The server's own words: not an approver, one's own call, decided or expired already.
          setError(describeError(e));
          reload();
        },
      )
      .finally(() => setDeciding(""));
  };

  return (
    <section>
      <h2>
        Approvals{" "}
        <small class="muted">
          {held === undefined ? "loading" : `${held.length}${more ? "+" : ""} held`}
        </small>
      </h2>
      {error && <p class="error">{error}</p>}
      <table class="approvals">
        <Head
          columns={[
            "requested",
            "expires",
            "tool",
            "agent",
            "user",
            "arguments",
            "why held",
            "reason",
            "",
          ]}
        />
        <tbody>
          {(held ?? []).map((a) => (
            <tr key={a.callId} data-call={a.callId}>
              <td>{when(a.requestedAt)}</td>
              <td>{when(a.expiresAt)}</td>
              <td>{a.tool}</td>
              <td>{a.agentId}</td>
              <td>{a.userId || "-"}</td>
              <td>
                <code class="arguments">{JSON.stringify(a.arguments ?? {})}</code>
              </td>
              <td>
                {a.requiredBy.map(whyHeld).join(", ")}
                <br />
                <small class="muted">approvers: {["admin", ...a.approverRoles].join(", ")}</small>
              </td>
              <td>
                <Field
                  name="reason"
                  placeholder="reason (optional)"
                  value={reasons[a.callId] ?? ""}
                  onValue={(reason) => setReasons((all) => ({ ...all, [a.callId]: reason }))}
                />
              </td>
              <td class="actions">
                <button
                  type="button"
                  disabled={deciding !== ""}
                  onClick={() => decide(a, ApprovalDecision.APPROVE)}
                >
                  {deciding === a.callId ? "Deciding…" : "Approve"}
                </button>{" "}
                <button
                  type="button"
                  disabled={deciding !== ""}
                  onClick={() => decide(a, ApprovalDecision.DENY)}
                >
                  Deny
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {held?.length === 0 && (
        <p class="muted">
          No held calls for you. The list shows the calls your token may decide (as an admin, or
          with a role of TOOLMESH_APPROVER_ROLES or of the tool's approver roles) and those your own
          agent made; an auditor who holds none of these roles sees none.
        </p>
      )}
      {more && <p class="muted">Showing the oldest {PAGE} held calls.</p>}
      {decided.length > 0 && (
        <>
          <h2>Decided here</h2>
          <table class="decided">
            <Head
              columns={["decided", "tool", "agent", "decision", "outcome", "detail", "trace"]}
            />
            <tbody>
              {decided.map(({ approval, result }) => {
                const status = result?.status ?? CallStatus.UNSPECIFIED;
                return (
                  <tr key={approval?.callId} data-call={approval?.callId}>
                    <td>{when(approval?.decidedAt)}</td>
                    <td>{approval?.tool}</td>
                    <td>{approval?.agentId}</td>
                    <td class="decision">
                      {ApprovalState[approval?.state ?? 0]?.toLowerCase()}
                      {approval?.reason && <small class="muted"> ({approval.reason})</small>}
                    </td>
                    <td>
                      <span class={`status ${statusWord(status)}`}>{statusName(status)}</span>
                    </td>
                    <td>{result?.error ? `${result.error.code}: ${result.error.message}` : ""}</td>
                    <td>
                      {approval?.traceId && (
                        <a href={`#/trace/${approval.traceId}`}>{approval.traceId.slice(0, 12)}…</a>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
