import { CallbackService, formatCosts, type Usage } from "@toolmesh/proto";
import { useEffect, useState } from "preact/hooks";
import { auth, client, describeError, when } from "../api.js";
import { Head } from "../widgets.js";

/** Usage (Callback's GetUsage) of the last 24 hours: calls, errors, time, cache and cost. */
export function UsagePage() {
  const [rows, setRows] = useState<Usage[]>([]);
  const [error, setError] = useState("");
  useEffect(() => {
    const since = new Date(Date.now() - 24 * 60 * 60 * 1000);
    client(CallbackService)
      .getUsage(
        {
          startHour: {
            seconds: BigInt(Math.floor(since.getTime() / 1000)),
            nanos: 0,
          },
          pageSize: 1000,
        },
        auth(),
      )
      // Newest hour first: what an operator looks for.
      .then((r) => setRows([...r.usage].reverse()))
      .catch((e: unknown) => setError(describeError(e)));
  }, []);
  return (
    <section>
      <h2>Usage, last 24 hours</h2>
      {error && <p class="error">{error}</p>}
      <table class="usage">
        <Head
          columns={[
            "hour",
            "agent",
            "user",
            "tool",
            "calls",
            "errors",
            "exec ms",
            "cache hits",
            "cost",
          ]}
        />
        <tbody>
          {rows.map((u) => (
            <tr key={`${u.hour?.seconds}.${u.agentId}.${u.userId}.${u.tool}`}>
              <td>{when(u.hour)}</td>
              <td>{u.agentId}</td>
              <td>{u.userId || "-"}</td>
              <td>{u.tool}</td>
              <td>{String(u.calls)}</td>
              <td>{String(u.errors)}</td>
              <td>{String(u.durationMs)}</td>
              <td>
                {u.cacheHits + u.cacheMisses > 0n
                  ? `${u.cacheHits} of ${u.cacheHits + u.cacheMisses}`
                  : "-"}
              </td>
              <td>{formatCosts(u.costMicros)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
