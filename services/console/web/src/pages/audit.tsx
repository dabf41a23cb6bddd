import {
  type AuditRecord,
  AuditService,
  statusName,
  statusWord,
  type VerifyChainResponse,
} from "@toolmesh/proto";
import { useEffect, useState } from "preact/hooks";
import { auth, client, describeError, when } from "../api.js";
import { Field, Head } from "../widgets.js";

/** Searches the access log; shows whether its hash chain verifies. */
export function AuditPage() {
  const [agent, setAgent] = useState("");
  const [tool, setTool] = useState("");
  const [records, setRecords] = useState<AuditRecord[]>([]);
  const [chain, setChain] = useState<VerifyChainResponse | undefined>();
  const [error, setError] = useState("");
  const search = (event?: Event) => {
    event?.preventDefault();
    client(AuditService)
      .queryRecords({ agentId: agent, tool, pageSize: 100 }, auth())
      .then(
        (res) => setRecords(res.records),
        (e: unknown) => setError(describeError(e)),
      );
  };
  useEffect(() => {
    search();
    client(AuditService)
      .verifyChain({}, auth())
      .then(setChain, (e: unknown) => setError(describeError(e)));
  }, []);
  return (
    <section>
      <h2>
        Audit{" "}
        {chain && (
          <small class={chain.ok ? "ok" : "error"}>
            {chain.ok
              ? `chain intact (${chain.recordsChecked} records checked)`
              : `chain broken at sequence ${chain.firstBreakSequence}: ${chain.reason}`}
          </small>
        )}
      </h2>
      {error && <p class="error">{error}</p>}
      <form class="inline" onSubmit={search}>
        <Field name="agent" placeholder="agent id" value={agent} onValue={setAgent} />
        <Field name="tool" placeholder="tool" value={tool} onValue={setTool} />
        <button type="submit">Search</button>
      </form>
      <table>
        <Head columns={["seq", "time", "tool", "agent", "status", "ms", "error", "trace"]} />
        <tbody>
          {records.map((r) => {
            return (
              <tr key={r.id}>
                <td>{String(r.sequence)}</td>
                <td>{when(r.time)}</td>
                <td>{r.tool}</td>
                <td>{r.agentId}</td>
                <td>
                  <span class={`status ${statusWord(r.status)}`}>{statusName(r.status)}</span>
                </td>
                <td>{r.durationMs}</td>
                <td>{r.errorCode}</td>
                <td>
                  {r.traceId && <a href={`#/trace/${r.traceId}`}>{r.traceId.slice(0, 12)}…</a>}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}
