import {
  type ApiKey,
  Effect,
  type Grant,
  PermissionService,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import { useState } from "preact/hooks";
import { auth, client, when } from "../api.js";
import { Field, Head, usePageActions } from "../widgets.js";

const permission = () => client(PermissionService);

/** API keys (create, revoke) and grants (add, revoke). */
export function AccessPage() {
  const [keys, setKeys] = useState<ApiKey[]>([]);
  const [grants, setGrants] = useState<Grant[]>([]);
  const [secret, setSecret] = useState("");
  const { error, act } = usePageActions(async () => {
    const [k, g] = await Promise.all([
      permission().listApiKeys({ includeRevoked: true, pageSize: 500 }, auth()),
      permission().listGrants({ pageSize: 500 }, auth()),
    ]);
    setKeys(k.apiKeys);
    setGrants(g.grants);
  });

  const [agent, setAgent] = useState("");
  const [keyName, setKeyName] = useState("");
  const createKey = (event: Event) => {
    event.preventDefault();
    act(async () => {
      const res = await permission().createApiKey(
        { agentId: agent, name: keyName, roles: ["agent"] },
        auth(),
      );
      setSecret(res.secret);
    })();
  };

  const [grantAgent, setGrantAgent] = useState("");
  const [pattern, setPattern] = useState("");
  const [scopes, setScopes] = useState("*");
  const addGrant = (event: Event) => {
    event.preventDefault();
    act(() =>
      permission().grant(
        {
          grant: {
            principal: { kind: PrincipalKind.AGENT, id: grantAgent },
            resource: { kind: ResourceKind.GLOB, pattern },
            scopes: scopes
              .split(",")
              .map((s) => s.trim())
              .filter(Boolean),
            effect: Effect.ALLOW,
            enabled: true,
          },
        },
        auth(),
      ),
    )();
  };

  return (
    <section>
      {error && <p class="error">{error}</p>}
      <h2>API keys</h2>
      <form class="inline" onSubmit={createKey}>
        <Field name="agent" placeholder="agent id" value={agent} onValue={setAgent} />
        <Field name="keyName" placeholder="name" value={keyName} onValue={setKeyName} />
        <button type="submit" disabled={agent === ""}>
          Create key
        </button>
      </form>
      {secret && (
        <p class="secret">
          New key's secret (shown once): <code>{secret}</code>{" "}
          <button type="button" class="link" onClick={() => setSecret("")}>
            hide
          </button>
        </p>
      )}
      <table class="keys">
        <Head columns={["id", "agent", "name", "roles", "created", "state", ""]} />
        <tbody>
          {keys.map((k) => (
            <tr key={k.id} data-key={k.id}>
              <td>
                <code>{k.id}</code>
              </td>
              <td>{k.agentId}</td>
              <td>{k.name}</td>
              <td>{k.roles.join(", ")}</td>
              <td>{when(k.createdAt)}</td>
              <td class="state">{k.revoked ? "revoked" : "active"}</td>
              <td>
                {!k.revoked && (
                  <button
                    type="button"
                    onClick={() => {
                      if (
                        window.confirm(
                          `Revoke key ${k.id} of ${k.agentId}? Calls with it fail within a second.`,
                        )
                      )
                        act(() => permission().revokeApiKey({ id: k.id }, auth()))();
                    }}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Grants</h2>
      <form class="inline" onSubmit={addGrant}>
        <Field
          name="grantAgent"
          placeholder="agent id"
          value={grantAgent}
          onValue={setGrantAgent}
        />
        <Field
          name="pattern"
          placeholder="tool glob, e.g. data.*"
          value={pattern}
          onValue={setPattern}
        />
        <Field name="scopes" placeholder="scopes" value={scopes} onValue={setScopes} />
        <button type="submit" disabled={grantAgent === "" || pattern === ""}>
          Allow
        </button>
      </form>
      <table>
        <Head columns={["id", "effect", "principal", "resource", "scopes", "expires", ""]} />
        <tbody>
          {grants.map((g) => (
            <tr key={g.id}>
              <td>
                <code>{g.id}</code>
              </td>
              <td>{Effect[g.spec?.effect ?? 0]}</td>
              <td>
                {PrincipalKind[g.spec?.principal?.kind ?? 0]?.toLowerCase()}:{g.spec?.principal?.id}
              </td>
              <td>
                {ResourceKind[g.spec?.resource?.kind ?? 0]?.toLowerCase()}:
                {g.spec?.resource?.pattern}
              </td>
              <td>{g.spec?.scopes.join(", ")}</td>
              <td>{when(g.spec?.expiresAt)}</td>
              <td>
                <button
                  type="button"
                  onClick={act(() => permission().revoke({ grantId: g.id }, auth()))}
                >
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
