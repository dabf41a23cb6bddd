import { type CallbackEvent, statusName, statusWord } from "@toolmesh/proto";
import { useEffect, useState } from "preact/hooks";
import { watchOutcomes, when } from "../api.js";
import { Head } from "../widgets.js";

/** Most outcomes kept on the page; older ones drop off. */
const KEEP = 200;

/** Call outcomes as they happen (CallbackService.Watch), newest first. */
export function LivePage() {
  const [events, setEvents] = useState<CallbackEvent[]>([]);
  const [state, setState] = useState("connecting");
  useEffect(() => {
    const abort = new AbortController();
    setState("watching");
    watchOutcomes(
      abort.signal,
      (event) => setEvents((list) => [event, ...list].slice(0, KEEP)),
      setState,
    );
    return () => abort.abort();
  }, []);
  return (
    <section>
      <h2>
        Live calls <small class="muted">{state}</small>
      </h2>
      <table class="live">
        <Head columns={["time", "status", "tool", "agent", "ms", "trace"]} />
        <tbody>
          {events.map((e) => {
            return (
              <tr key={e.callId} data-call={e.callId}>
                <td>{when(e.time)}</td>
                <td>
                  <span class={`status ${statusWord(e.status)}`}>{statusName(e.status)}</span>
                </td>
                <td>{e.tool}</td>
                <td>{e.agentId}</td>
                <td>{e.durationMs}</td>
                <td>
                  <a href={`#/trace/${e.traceId}`}>{e.traceId.slice(0, 12)}…</a>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {events.length === 0 && (
        <p class="muted">No calls yet; outcomes appear here as they happen.</p>
      )}
    </section>
  );
}
