// Agents: the MCP endpoints of this server, the snippet that adds Paperchain to Claude
// Desktop, and which clients called and what each spent.

import { useEffect, useState } from "preact/hooks";
import { ApiError, appApi } from "./api";
import { type Row, dollars, spendBy } from "./Spend";

export type SessionInfo = {
  version: string;
  base_url: string;
  openapi: string;
  mcp: { all: string; chain: string; docs: string };
  ledger: boolean;
  executable?: string;
  desktop: boolean;
};

type ClaudeDesktop = { file: string; installed: unknown; entry: unknown };

export function Agents({ session }: { session: SessionInfo }) {
  const [rows, setRows] = useState<Row[]>([]);
  const [copied, setCopied] = useState(false);
  const [claude, setClaude] = useState<ClaudeDesktop | undefined>();
  const [claudeStatus, setClaudeStatus] = useState("");
  useEffect(() => {
    appApi<{ rows: Row[] }>("/ledger").then((l) => setRows(l.rows), () => setRows([]));
    appApi<ClaudeDesktop>("/agents/claude-desktop").then(setClaude, (e) => setClaudeStatus((e as Error).message));
  }, []);
  const addToClaude = async () => {
    try {
      setClaude(await appApi<ClaudeDesktop>("/agents/claude-desktop", { method: "POST" }));
      setClaudeStatus("Added. Restart Claude Desktop to load it.");
    } catch (e) {
      setClaudeStatus((e as Error).message);
    }
  };
  const snippet = JSON.stringify(
    { mcpServers: { paperchain: { command: session.executable ?? "paperchain", args: ["mcp", "--stdio"] } } },
    null,
    2,
  );
  const calls = new Map<string, number>();
  for (const r of rows) {
    const name = r.client ?? "(unnamed)";
    calls.set(name, (calls.get(name) ?? 0) + 1);
  }
  const spent = new Map(spendBy(rows, (r) => r.client ?? "(unnamed)"));
  return (
    <section aria-labelledby="agents-title">
      <h2 id="agents-title">Agents</h2>
      <h3>MCP</h3>
      <dl class="facts">
        <dt>Every operation, in three tools</dt>
        <dd class="mono">{session.mcp.all}</dd>
        <dt>Chain reads, one tool each</dt>
        <dd class="mono">{session.mcp.chain}</dd>
        <dt>Documents, one tool each</dt>
        <dd class="mono">{session.mcp.docs}</dd>
        <dt>HTTP API</dt>
        <dd class="mono">{session.openapi}</dd>
      </dl>
      <h3>Claude Desktop</h3>
      <p>
        <code>paperchain mcp --stdio</code> in Claude Desktop's configuration gives it every operation, in three tools that fit in its context; it uses this server while it runs.
      </p>
      {claude && (
        <p>
          {claude.installed ? "Claude Desktop has Paperchain" : "Claude Desktop does not have Paperchain yet"} (<code>{claude.file}</code>).
        </p>
      )}
      <button type="button" class="primary" onClick={addToClaude}>
        {claude?.installed ? "Update Claude Desktop's entry" : "Add to Claude Desktop"}
      </button>
      <span role="status"> {claudeStatus}</span>
      <p>Or add this to the file yourself:</p>
      <pre class="json" aria-label="Claude Desktop configuration">{snippet}</pre>
      <button
        type="button"
        onClick={() =>
          navigator.clipboard?.writeText(snippet).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        Copy the snippet
      </button>
      <span role="status">{copied ? " Copied." : ""}</span>
      {session.desktop && <LoginItem />}
      <h3>Clients that called</h3>
      {calls.size === 0 ? (
        <p class="muted">No calls recorded yet.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Client</th>
              <th scope="col">Calls</th>
              <th scope="col">Paid</th>
            </tr>
          </thead>
          <tbody>
            {[...calls.entries()].map(([name, n]) => (
              <tr>
                <td>{name}</td>
                <td class="number">{n}</td>
                <td class="number">{dollars(spent.get(name) ?? 0)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** In the desktop app: whether it starts when the user logs in (and keeps serving the
 * user's agents from the tray). */
function LoginItem() {
  const [on, setOn] = useState<boolean | undefined>();
  const [status, setStatus] = useState("");
  useEffect(() => {
    appApi<{ start_at_login: boolean }>("/desktop").then(
      (d) => setOn(d.start_at_login),
      (e) => setStatus((e as Error).message),
    );
  }, []);
  const change = async (next: boolean) => {
    try {
      const d = await appApi<{ start_at_login: boolean }>("/desktop", { method: "POST", body: JSON.stringify({ start_at_login: next }) });
      setOn(d.start_at_login);
      setStatus(d.start_at_login ? "Paperchain starts at login, in the tray." : "Paperchain no longer starts at login.");
    } catch (e) {
      setStatus(e instanceof ApiError ? e.message : String(e));
    }
  };
  return (
    <>
      <h3>This app</h3>
      <p>Closing the window keeps the server running for your agents; the tray icon opens it again or quits.</p>
      <p>
        <input id="start-at-login" type="checkbox" checked={on ?? false} disabled={on === undefined} onChange={(e) => void change((e.currentTarget as HTMLInputElement).checked)} />
        <label for="start-at-login">Start Paperchain when I log in</label>
      </p>
      <p id="login-status" role="status" class="muted">
        {status}
      </p>
    </>
  );
}
