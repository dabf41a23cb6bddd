import type { JsonObject } from "@bufbuild/protobuf";
import {
  CircuitState,
  DispatcherService,
  type DispatchResponse,
  type Group,
  RegistryService,
  RuntimeState,
  type RuntimeStatus,
  statusName,
  statusWord,
  type Tool,
  type ToolCircuit,
  ToolStatus,
} from "@toolmesh/proto";
import { useEffect, useState } from "preact/hooks";
import { auth, client, describeError, when } from "../api.js";
import { Head } from "../widgets.js";

/**
 * Tools with their schemas and runtimes, groups, local and docker tools' instances, the circuit
 * breakers of tools that failed, and a call form.
 */
export function ToolsPage() {
  const [tools, setTools] = useState<Tool[]>([]);
  const [groups, setGroups] = useState<Group[]>([]);
  const [runtimes, setRuntimes] = useState<RuntimeStatus[]>([]);
  const [breakers, setBreakers] = useState<ToolCircuit[]>([]);
  const [selected, setSelected] = useState<string>("");
  const [error, setError] = useState("");
  useEffect(() => {
    const registry = client(RegistryService);
    Promise.all([
      registry.listTools({ pageSize: 500 }, auth()),
      registry.listGroups({}, auth()),
      client(DispatcherService).getRuntimeStatus({}, auth()),
    ])
      .then(([t, g, r]) => {
        setTools(t.tools);
        setGroups(g.groups);
        setRuntimes(r.runtimes);
        setBreakers(r.breakers);
      })
      .catch((e: unknown) => setError(describeError(e)));
  }, []);
  const tool = tools.find((t) => t.spec?.name === selected);
  return (
    <section>
      <h2>Tools</h2>
      {error && <p class="error">{error}</p>}
      <table>
        <Head columns={["name", "version", "status", "runtime", "groups", "description"]} />
        <tbody>
          {tools.map((t) => (
            <tr key={t.spec?.name} class={t.spec?.name === selected ? "selected" : ""}>
              <td>
                <button type="button" class="link" onClick={() => setSelected(t.spec?.name ?? "")}>
                  {t.spec?.name}
                </button>
              </td>
              <td>{t.spec?.version}</td>
              <td>{ToolStatus[t.spec?.status ?? 0]}</td>
              <td>{t.spec?.runtime?.kind.case ?? "-"}</td>
              <td>{t.groups.join(", ")}</td>
              <td>{t.spec?.description.split("\n")[0]}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {tool?.spec && (
        <div class="detail">
          <h3>{tool.spec.name}</h3>
          <p>{tool.spec.description}</p>
          <StatusSwitch
            tool={tool}
            onChanged={(t) => setTools(tools.map((x) => (x.spec?.name === t.spec?.name ? t : x)))}
          />
          <div class="columns">
            <div>
              <h4>input schema</h4>
              <pre>{JSON.stringify(tool.spec.inputSchema ?? {}, null, 2)}</pre>
            </div>
            <div>
              <h4>runtime</h4>
              <pre>{JSON.stringify(tool.spec.runtime?.kind ?? {}, null, 2)}</pre>
            </div>
          </div>
          <CallForm tool={tool.spec.name} />
        </div>
      )}
      <h2>Groups</h2>
      <table>
        <Head columns={["name", "tools", "description"]} />
        <tbody>
          {groups.map((g) => (
            <tr key={g.name}>
              <td>{g.name}</td>
              <td>{g.tools.join(", ")}</td>
              <td>{g.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Local and docker tool instances</h2>
      <table class="runtimes">
        <Head
          columns={[
            "tool / instance",
            "state",
            "instances",
            "pid",
            "restarts",
            "in flight",
            "calls",
            "starts saved",
            "last error",
          ]}
        />
        <tbody>
          {runtimes.flatMap((r) => [
            <tr key={r.tool} class="runtime">
              <td>
                {r.tool}
                {r.kind === "docker" ? " (docker)" : ""}
              </td>
              <td>{RuntimeState[r.state]}</td>
              <td>
                {r.instances.filter((i) => i.state === RuntimeState.RUNNING).length}/
                {r.maxInstances || 1}
                {r.minInstances ? ` (min ${r.minInstances})` : ""}
              </td>
              <td>{processOf(r.pid, r.containerId)}</td>
              <td>{r.restarts}</td>
              <td>{r.inFlight}</td>
              <td>{String(r.instances.reduce((sum, i) => sum + i.calls, 0n))}</td>
              <td>{String(r.startsSaved)}</td>
              <td>{r.lastError || "-"}</td>
            </tr>,
            ...r.instances.map((i) => (
              <tr key={`${r.tool}#${i.id}`} class="instance">
                <td>
                  #{i.id} {i.startedFor}
                </td>
                <td>{RuntimeState[i.state]}</td>
                <td>{i.healthFailures ? `${i.healthFailures} failed checks` : ""}</td>
                <td>{processOf(i.pid, i.containerId)}</td>
                <td>{i.restarts}</td>
                <td>{i.inFlight}</td>
                <td>{String(i.calls)}</td>
                <td />
                <td>{i.lastError || "-"}</td>
              </tr>
            )),
          ])}
        </tbody>
      </table>
      <h2>Circuit breakers</h2>
      <table class="breakers">
        <Head columns={["tool", "state", "failures in a row", "opens", "retry at", "last error"]} />
        <tbody>
          {breakers.map(({ tool, breaker }) => (
            <tr key={tool}>
              <td>{tool}</td>
              <td>{CircuitState[breaker?.state ?? CircuitState.UNSPECIFIED]}</td>
              <td>{breaker?.consecutiveFailures ?? 0}</td>
              <td>{breaker?.opens ?? 0}</td>
              <td>{breaker?.retryAt ? when(breaker.retryAt) : "-"}</td>
              <td>{breaker?.lastError || "-"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/**
 * Enables or disables a tool (its status alone, compare-and-set on its revision): how an
 * operator lets agents call a tool the tool agent built, which it registers disabled.
 */
function StatusSwitch({ tool, onChanged }: { tool: Tool; onChanged: (tool: Tool) => void }) {
  const [error, setError] = useState("");
  const spec = tool.spec;
  if (!spec) return null;
  const disabled = spec.status === ToolStatus.DISABLED;
  const flip = async () => {
    setError("");
    try {
      const res = await client(RegistryService).updateTool(
        {
          tool: { ...spec, status: disabled ? ToolStatus.ACTIVE : ToolStatus.DISABLED },
          expectedRevision: tool.revision,
        },
        auth(),
      );
      if (res.tool) onChanged(res.tool);
    } catch (e) {
      setError(describeError(e));
    }
  };
  return (
    <p class="status-switch">
      {disabled
        ? spec.labels["toolmesh.task"]
          ? `Built by the tool agent (task ${spec.labels["toolmesh.task"]}); disabled until enabled here. `
          : "Disabled: agents cannot call it. "
        : ""}
      <button type="button" onClick={() => void flip()}>
        {disabled ? "Enable" : "Disable"}
      </button>
      {error && <span class="error"> {error}</span>}
    </p>
  );
}

/** Calls a tool as the signed-in principal, through the whole chain. */
function CallForm({ tool }: { tool: string }) {
  const [args, setArgs] = useState("{}");
  const [result, setResult] = useState<DispatchResponse | undefined>();
  const [error, setError] = useState("");
  const call = async (event: Event) => {
    event.preventDefault();
    setError("");
    setResult(undefined);
    let parsed: JsonObject;
    try {
      parsed = JSON.parse(args);
    } catch (e) {
      setError(`the arguments are not JSON: ${(e as Error).message}`);
      return;
    }
    try {
      setResult(await client(DispatcherService).dispatch({ tool, arguments: parsed }, auth()));
    } catch (e) {
      setError(describeError(e));
    }
  };
  return (
    <form class="call" onSubmit={call}>
      <h4>call {tool}</h4>
      <textarea
        name="arguments"
        rows={4}
        value={args}
        onInput={(e) => setArgs((e.target as HTMLTextAreaElement).value)}
      />
      <button type="submit">Call</button>
      {error && <pre class="error">{error}</pre>}
      {result && (
        <div class="result">
          <span class={`status ${statusWord(result.status)}`}>{statusName(result.status)}</span> in{" "}
          {result.durationMs} ms · <a href={`#/trace/${result.traceId}`}>open its trace</a>
          <pre>{JSON.stringify(result.error ?? result.output ?? {}, null, 2)}</pre>
        </div>
      )}
    </form>
  );
}

/** A process id, or the short id of a container. */
function processOf(pid: number, containerId: string): string {
  return pid ? String(pid) : containerId ? containerId.slice(0, 12) : "-";
}
