import { AgentService, type GetSystemStatusResponse, type Task, TaskStatus } from "@toolmesh/proto";
import { useEffect, useState } from "preact/hooks";
import { auth, client, describeError } from "../api.js";
import { Head } from "../widgets.js";

/** A timestamp as people read it, or "-". */
function shown(ts: { seconds: bigint } | undefined): string {
  return ts ? new Date(Number(ts.seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, "Z") : "-";
}

/**
 * The tool agent (GetSystemStatus): tools, the CodingAgent's running and queued tasks with their
 * specs, the ServiceAgent's windows (and which are IM windows), the IM connection and the model.
 */
export function AgentPage() {
  const [status, setStatus] = useState<GetSystemStatusResponse | undefined>();
  const [task, setTask] = useState<Task | undefined>();
  const [error, setError] = useState("");
  useEffect(() => {
    const load = () =>
      client(AgentService)
        .getSystemStatus({}, auth())
        .then((s) => {
          setStatus(s);
          setError("");
        })
        .catch((e: unknown) => setError(describeError(e)));
    load();
    const timer = setInterval(load, 5000);
    return () => clearInterval(timer);
  }, []);
  const open = (id: string) =>
    client(AgentService)
      .getTask({ id }, auth())
      .then((r) => setTask(r.task))
      .catch((e: unknown) => setError(describeError(e)));
  const coding = status?.codingAgent;
  const im = status?.im;
  return (
    <section class="agent">
      <h2>Tool agent</h2>
      {error && <p class="error">{error}</p>}
      {status && (
        <dl class="facts">
          <dt>tools</dt>
          <dd>
            {status.tools
              ? `${status.tools.total} (${status.tools.active} active, ${status.tools.disabled} disabled)`
              : "unknown"}
          </dd>
          <dt>CodingAgent</dt>
          <dd>
            {coding?.runningCount ?? 0} running of {coding?.concurrency ?? 0}
            {coding?.runningTaskIds.length ? ` (${coding.runningTaskIds.join(", ")})` : ""},{" "}
            {coding?.queuedCount ?? 0} queued
          </dd>
          <dt>model</dt>
          <dd>
            {status.model?.configured
              ? `${status.model.model} at ${status.model.url}`
              : "none (TOOLMESH_MODEL_URL is unset)"}
          </dd>
          <dt>IM</dt>
          <dd class="im">
            {!im?.configured
              ? "off"
              : `${im.connected ? "connected" : "disconnected"} to ${im.url} as ${im.contact}${
                  !im.connected && im.lastError ? ` (${im.lastError})` : ""
                }`}
          </dd>
        </dl>
      )}
      <h3>Tasks</h3>
      <table class="tasks">
        <Head columns={["task", "status", "owner", "tool", "description"]} />
        <tbody>
          {(coding?.recentTasks ?? []).map((t) => (
            <tr key={t.id}>
              <td>
                <button type="button" class="link" onClick={() => void open(t.id)}>
                  {t.id.slice(0, 12)}
                </button>
              </td>
              <td>{TaskStatus[t.status]}</td>
              <td>{t.owner?.agentId}</td>
              <td>{t.toolName || t.error?.code || "-"}</td>
              <td>{t.spec?.description.split("\n")[0]}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {task && (
        <div class="detail">
          <h3>task {task.id}</h3>
          <p>
            {TaskStatus[task.status]}
            {task.toolName ? ` · registered ${task.toolName} (enable it under Tools)` : ""}
            {task.error ? ` · ${task.error.code}: ${task.error.message}` : ""} ·{" "}
            <a href={`#/trace/${task.traceId}`}>its build's trace</a>
          </p>
          <pre>{task.log.map((e) => `${shown(e.time)} ${e.text}`).join("\n")}</pre>
        </div>
      )}
      <h3>Windows</h3>
      <table class="windows">
        <Head columns={["chat id", "owner", "IM", "messages", "updated"]} />
        <tbody>
          {(status?.windows ?? []).map((w) => (
            <tr key={`${w.owner?.agentId}/${w.owner?.userId}/${w.chatId}`}>
              <td>{w.chatId}</td>
              <td>{w.owner?.agentId}</td>
              <td>{w.imWindow ? "yes" : "no"}</td>
              <td>{w.messageCount}</td>
              <td>{shown(w.updatedAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
