import { buildWaterfall, type Waterfall } from "@toolmesh/cli/waterfall";
import { AuditService, TraceEventKind } from "@toolmesh/proto";
import { useEffect, useState } from "preact/hooks";
import { auth, client, describeError, ms } from "../api.js";

/** One trace as a waterfall: TOOL_EXECUTE → backend events → TOOL_RESULT → CALLBACK. */
export function TracePage({ traceId }: { traceId: string }) {
  const [waterfall, setWaterfall] = useState<Waterfall | undefined>();
  const [error, setError] = useState("");
  useEffect(() => {
    client(AuditService)
      .getTrace({ traceId }, auth())
      .then((res) =>
        setWaterfall(
          buildWaterfall(
            res.events.map((e) => ({
              kind: TraceEventKind[e.kind] ?? "UNSPECIFIED",
              timeMs: ms(e.time),
              callId: e.callId,
              tool: e.tool,
              customKind: e.customKind,
            })),
          ),
        ),
      )
      .catch((e: unknown) => setError(describeError(e)));
  }, [traceId]);
  if (error) return <p class="error">{error}</p>;
  if (!waterfall) return <p class="muted">loading trace {traceId}…</p>;
  const total = Math.max(waterfall.totalMs, 1);
  return (
    <section>
      <h2>
        Trace <code>{traceId}</code>{" "}
        <small class="muted">
          {waterfall.rows.length} events over {waterfall.totalMs} ms
        </small>
      </h2>
      <ol class="waterfall">
        {waterfall.rows.map((row, i) => (
          <li class="row" key={`${row.callId}-${i}`} data-kind={row.kind}>
            <span class="label">{row.label}</span>
            <span class="tool">{row.tool}</span>
            <span class="track">
              <span
                class={`bar ${row.kind.toLowerCase()}`}
                style={{
                  left: `${(row.offsetMs / total) * 100}%`,
                  width:
                    row.durationMs > 0
                      ? `${Math.max((row.durationMs / total) * 100, 0.5)}%`
                      : "2px",
                }}
              />
            </span>
            <span class="duration">
              +{row.offsetMs} ms{row.durationMs > 0 ? ` · ${row.durationMs} ms` : ""}
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}
