import { AuditService } from "@toolmesh/proto";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { auth, client, describeError, session } from "./api.js";
import { AccessPage } from "./pages/access.js";
import { AgentPage } from "./pages/agent.js";
import { ApprovalsPage } from "./pages/approvals.js";
import { AuditPage } from "./pages/audit.js";
import { HealthPage } from "./pages/health.js";
import { LivePage } from "./pages/live.js";
import { ToolsPage } from "./pages/tools.js";
import { TracePage } from "./pages/trace.js";
import { UsagePage } from "./pages/usage.js";
import { VaultPage } from "./pages/vault.js";
import "./style.css";

const PAGES: [string, string][] = [
  ["live", "Live calls"],
  ["approvals", "Approvals"],
  ["tools", "Tools & groups"],
  ["access", "Keys & grants"],
  ["vault", "Secrets & connections"],
  ["audit", "Audit"],
  ["usage", "Usage"],
  ["agent", "Tool agent"],
  ["health", "Health"],
];

/** The page in the location's hash: #/tools, #/trace/<id> … (never a token). */
function useRoute(): string[] {
  const read = () => window.location.hash.replace(/^#\/?/, "").split("/").filter(Boolean);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onHash = () => setRoute(read());
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);
  return route;
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState("");
  const submit = async (event: Event) => {
    event.preventDefault();
    session.signIn(token.trim());
    try {
      // An admin or auditor may read the audit log; any other credential is refused here.
      await client(AuditService).queryRecords({ pageSize: 1 }, auth());
      onSignedIn();
    } catch (e) {
      session.signOut();
      setError(describeError(e));
    }
  };
  return (
    <form class="signin" onSubmit={submit}>
      <h1>toolmesh console</h1>
      <p>Sign in with an admin or auditor token (for a local stack: .toolmesh/admin.token).</p>
      <input
        type="password"
        name="token"
        autocomplete="off"
        placeholder="token"
        value={token}
        onInput={(e) => setToken((e.target as HTMLInputElement).value)}
      />
      <button type="submit" disabled={token.trim() === ""}>
        Sign in
      </button>
      {error && <p class="error">{error}</p>}
    </form>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(session.token !== null);
  const route = useRoute();
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const [page = "live", arg = ""] = route;
  return (
    <div class="shell">
      <nav>
        <strong>toolmesh</strong>
        {PAGES.map(([id, label]) => (
          <a key={id} href={`#/${id}`} class={page === id ? "active" : ""}>
            {label}
          </a>
        ))}
        <button
          type="button"
          class="link"
          onClick={() => {
            session.signOut();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </nav>
      <main>
        {page === "live" && <LivePage />}
        {page === "approvals" && <ApprovalsPage />}
        {page === "tools" && <ToolsPage />}
        {page === "access" && <AccessPage />}
        {page === "vault" && <VaultPage />}
        {page === "audit" && <AuditPage />}
        {page === "usage" && <UsagePage />}
        {page === "agent" && <AgentPage />}
        {page === "health" && <HealthPage />}
        {page === "trace" && <TracePage traceId={arg} />}
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app") as HTMLElement);
