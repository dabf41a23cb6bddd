import {
  type OAuthConnection,
  type OAuthProvider,
  PermissionService,
  type Secret,
  SecretHolderKind,
  SecretToolKind,
} from "@toolmesh/proto";
import { useState } from "preact/hooks";
import { auth, client, when } from "../api.js";
import { Field, Head, usePageActions } from "../widgets.js";

const permission = () => client(PermissionService);

/** A secret's scope as one line: which tools, whose calls. */
function scopeOf(secret: Secret): [string, string] {
  const scope = secret.scope;
  const tools = `${SecretToolKind[scope?.toolKind ?? 0]?.toLowerCase()}:${scope?.tool ?? ""}`;
  const kind = SecretHolderKind[scope?.holderKind ?? 0]?.toLowerCase() ?? "";
  return [tools, scope?.holder ? `${kind}:${scope.holder}` : kind];
}

/**
 * The vault as an operator sees it: secrets by name, scope and version (the console never gets a
 * value: the API has none to give), OAuth upstreams with a link that connects a user's account,
 * and users' connections with their revocation.
 */
export function VaultPage() {
  const [secrets, setSecrets] = useState<Secret[]>([]);
  const [providers, setProviders] = useState<OAuthProvider[]>([]);
  const [connections, setConnections] = useState<OAuthConnection[]>([]);
  const [link, setLink] = useState<{ provider: string; user: string; url: string }>();
  const [user, setUser] = useState("");
  const { error, act } = usePageActions(async () => {
    const [s, p, c] = await Promise.all([
      permission().listSecrets({ pageSize: 500 }, auth()),
      permission().listOAuthProviders({}, auth()),
      permission().listConnections({}, auth()),
    ]);
    setSecrets(s.secrets);
    setProviders(p.providers);
    setConnections(c.connections);
  });

  return (
    <section class="vault">
      {error && <p class="error">{error}</p>}
      <h2>Secrets</h2>
      <p class="muted">
        Values are never shown: put them with <code>toolmesh secrets put</code> (from stdin).
      </p>
      <table class="secrets">
        <Head columns={["name", "tools", "for", "version", "updated", "by", "description"]} />
        <tbody>
          {secrets.map((s) => {
            const [tools, holder] = scopeOf(s);
            return (
              <tr key={s.id} data-secret={s.name}>
                <td>
                  <code>{s.name}</code>
                </td>
                <td>{tools}</td>
                <td>{holder}</td>
                <td class="version">{String(s.version)}</td>
                <td>{when(s.updatedAt)}</td>
                <td>{s.updatedBy}</td>
                <td>{s.description}</td>
              </tr>
            );
          })}
        </tbody>
      </table>

      <h2>OAuth upstreams</h2>
      <form class="inline" onSubmit={(event) => event.preventDefault()}>
        <Field
          name="connectUser"
          placeholder="user (empty: yours)"
          value={user}
          onValue={setUser}
        />
      </form>
      <table class="providers">
        <Head columns={["name", "issuer", "scopes", "redirect URI", ""]} />
        <tbody>
          {providers.map((p) => {
            const name = p.spec?.name ?? "";
            return (
              <tr key={name} data-provider={name}>
                <td>
                  <code>{name}</code>
                </td>
                <td>{p.spec?.issuer}</td>
                <td>{p.spec?.scopes.join(" ")}</td>
                <td>
                  <code>{p.redirectUri}</code>
                </td>
                <td>
                  <button
                    type="button"
                    onClick={act(async () => {
                      const res = await permission().connectAccount(
                        { provider: name, userId: user },
                        auth(),
                      );
                      setLink({ provider: name, user, url: res.url });
                    })}
                  >
                    Connect
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {link && (
        <p class="connect-link">
          Open{" "}
          <a href={link.url} target="_blank" rel="noopener noreferrer">
            this link
          </a>{" "}
          as {link.user || "the user you act for"} to connect an account of{" "}
          <code>{link.provider}</code> (it is valid for a few minutes, once).
        </p>
      )}

      <h2>Connections</h2>
      <table class="connections">
        <Head
          columns={["provider", "user", "version", "connected", "token expires", "scopes", ""]}
        />
        <tbody>
          {connections.map((c) => (
            <tr key={`${c.provider}/${c.userId}`} data-connection={`${c.provider}/${c.userId}`}>
              <td>
                <code>{c.provider}</code>
              </td>
              <td>{c.userId}</td>
              <td>{String(c.version)}</td>
              <td>{when(c.connectedAt)}</td>
              <td>{when(c.accessExpiresAt)}</td>
              <td>{c.scopes.join(" ")}</td>
              <td>
                <button
                  type="button"
                  onClick={() => {
                    if (
                      window.confirm(
                        `Revoke ${c.userId}'s connection to ${c.provider}? Their next call that needs it is refused with a link to connect again.`,
                      )
                    )
                      act(() =>
                        permission().revokeConnection(
                          { provider: c.provider, userId: c.userId },
                          auth(),
                        ),
                      )();
                  }}
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
