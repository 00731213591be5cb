// The wallet and the settings only the user changes (here, with the CLI, or in the file):
// the wallet's address and balances per network, the hosted service, routing per route,
// caps and budgets, and the folders whose files local calls may read and write by path.

import { useEffect, useState } from "preact/hooks";
import { ApiError, appApi } from "./api";
import type { Catalog } from "./schema";

type Balance = { network: string; chain: string; symbol: string; balance: string | null; gas: string | null; error: string | null };
type Wallet = { address: string | null; balances: Balance[] };
type SettingsInfo = {
  file: string;
  problem: string | null;
  unconfirmed: { changes: string[]; reason: string | null; confirm_with: "password" | "system" | "nothing" } | null;
  service_url: string | null;
  routing: { default: string; routes: Record<string, string> };
  files: { folders: string[] };
  policy: {
    per_call: string | null;
    per_day: string | null;
    per_session: string | null;
    approve_above: string | null;
    networks: Record<string, string>;
    clients: Record<string, string>;
  };
};

const LIMITS = [
  ["per_call", "Most a single call may pay"],
  ["per_day", "Most paid in a day"],
  ["per_session", "Most paid while this server runs"],
  ["approve_above", "Ask me before paying more than"],
] as const;

export function WalletPanel() {
  const [wallet, setWallet] = useState<Wallet | undefined>();
  const [failed, setFailed] = useState<string | undefined>();
  useEffect(() => {
    appApi<Wallet>("/wallet").then(setWallet, (e) => setFailed((e as Error).message));
  }, []);
  return (
    <section aria-labelledby="wallet-title" class="panel">
      <h3 id="wallet-title">Wallet</h3>
      {failed && <p class="muted">{failed}</p>}
      {!wallet && !failed && <p role="status">Reading balances…</p>}
      {wallet && !wallet.address && (
        <p>
          No wallet yet: create one with <code>paperchain wallet new</code> or import a key with <code>paperchain wallet import</code>.
        </p>
      )}
      {wallet?.address && (
        <>
          <p class="mono" aria-label="Wallet address">
            {wallet.address}
          </p>
          {wallet.balances.length === 0 ? (
            <p class="muted">No network it pays on has an RPC endpoint configured.</p>
          ) : (
            <table>
              <caption class="visually-hidden">Balances per network</caption>
              <thead>
                <tr>
                  <th scope="col">Network</th>
                  <th scope="col">Balance</th>
                  <th scope="col">Gas</th>
                </tr>
              </thead>
              <tbody>
                {wallet.balances.map((b) => (
                  <tr>
                    <td>
                      {b.chain} <span class="muted">({b.network})</span>
                    </td>
                    <td class="number">{b.error ? <span class="muted">cannot read: {b.error}</span> : `${b.balance} ${b.symbol}`}</td>
                    <td class="number">{b.gas ?? ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}

export function SettingsPanel({ catalog }: { catalog: Catalog }) {
  const [info, setInfo] = useState<SettingsInfo | undefined>();
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [status, setStatus] = useState<string>("");
  const [error, setError] = useState<{ key: string; message: string } | undefined>();
  const [newRoute, setNewRoute] = useState("");
  const [newMode, setNewMode] = useState("hosted");
  const [newFolder, setNewFolder] = useState("");
  const [password, setPassword] = useState("");
  const [confirmError, setConfirmError] = useState<string | undefined>();

  const load = () => appApi<SettingsInfo>("/settings").then(setInfo, (e) => setStatus((e as Error).message));
  useEffect(() => {
    void load();
  }, []);
  if (!info) return <p role="status">{status || "Reading the settings…"}</p>;

  const change = async (key: string, value: string | null, list?: "add" | "remove") => {
    setError(undefined);
    try {
      const body = list ? { key, [list]: value } : { key, value };
      const next = await appApi<SettingsInfo>("/settings", { method: "POST", body: JSON.stringify(body) });
      setInfo(next);
      const waits = next.unconfirmed?.changes.some((c) => c.startsWith(`${key}:`));
      setStatus(
        list === "add" ? `${value} granted.` : list === "remove" ? `${value} no longer granted.` : waits ? `${key} saved; it waits for you to confirm it (above).` : `${key} saved.`,
      );
      return true;
    } catch (e) {
      setError({ key, message: e instanceof ApiError ? e.message : String(e) });
      return false;
    }
  };

  const confirmChanges = async (e: Event) => {
    e.preventDefault();
    if (!info.unconfirmed) return;
    setConfirmError(undefined);
    try {
      const body = { changes: info.unconfirmed.changes, password: password || undefined };
      setInfo(await appApi<SettingsInfo>("/settings/confirm", { method: "POST", body: JSON.stringify(body) }));
      setPassword("");
      setStatus("Confirmed: the settings file is followed from the next call.");
    } catch (err) {
      setConfirmError(err instanceof ApiError ? err.message : String(err));
      void load();
    }
  };

  const discardChanges = async () => {
    setConfirmError(undefined);
    try {
      setInfo(await appApi<SettingsInfo>("/settings/discard", { method: "POST" }));
      setDraft({});
      setStatus("Taken back: the settings file is as you last confirmed it.");
    } catch (err) {
      setConfirmError(err instanceof ApiError ? err.message : String(err));
    }
  };

  const saveAll = async (e: Event) => {
    e.preventDefault();
    for (const [key, value] of Object.entries(draft)) {
      if (!(await change(key, value.trim() === "" ? null : value.trim()))) return;
    }
    setDraft({});
  };

  const current = (key: string, value: string | null) => draft[key] ?? value ?? "";
  const field = (key: string, label: string, value: string | null, help?: string) => {
    const id = `setting-${key.replace(/[^a-z0-9]+/gi, "-")}`;
    return (
      <div class="field">
        <label for={id}>{label}</label>
        <input
          id={id}
          type="text"
          inputMode={key.startsWith("policy.") ? "decimal" : undefined}
          value={current(key, value)}
          aria-invalid={error?.key === key || undefined}
          aria-describedby={help ? `${id}-help` : undefined}
          onInput={(e) => setDraft({ ...draft, [key]: (e.currentTarget as HTMLInputElement).value })}
        />
        {help && (
          <small class="help" id={`${id}-help`}>
            {help}
          </small>
        )}
        {error?.key === key && (
          <p class="field-error" role="alert">
            {error.message}
          </p>
        )}
      </div>
    );
  };

  return (
    <section aria-labelledby="settings-title" class="panel">
      <h3 id="settings-title">Settings</h3>
      <p class="muted">
        Saved in <code>{info.file}</code>; the server follows them from the next call.
      </p>
      {info.problem && (
        <div class="problem" role="alert">
          <strong>The settings file is not followed.</strong> {info.problem}. The settings below are those last valid ones.
        </div>
      )}
      {info.unconfirmed && (
        <div class="problem unconfirmed" role="alert">
          <form aria-label="Changes waiting for you" onSubmit={confirmChanges}>
          <strong>Not followed until you confirm it.</strong> The settings file allows more than you confirmed; until you
          do, every call keeps to the tighter of the two, shown below.
          {info.unconfirmed.reason && <p>{info.unconfirmed.reason}.</p>}
          <ul>
            {info.unconfirmed.changes.map((c) => (
              <li key={c}>{c}</li>
            ))}
          </ul>
          {info.unconfirmed.confirm_with === "password" && (
            <div class="field">
              <label for="confirm-password">The wallet's password</label>
              <input id="confirm-password" type="password" autoComplete="current-password" value={password} aria-invalid={confirmError ? true : undefined} onInput={(e) => setPassword((e.currentTarget as HTMLInputElement).value)} />
            </div>
          )}
          {info.unconfirmed.confirm_with === "system" && <p class="muted">Your system will ask who you are.</p>}
          {confirmError && (
            <p class="field-error" role="alert">
              {confirmError}
            </p>
          )}
          <div class="actions">
            <button type="submit" class="primary" disabled={info.unconfirmed.confirm_with === "password" && password === ""}>
              Confirm these changes
            </button>
            <button type="button" onClick={() => void discardChanges()}>
              Take them back
            </button>
          </div>
          </form>
        </div>
      )}
      <form onSubmit={saveAll} aria-label="Service and limits">
        {field("service.url", "Hosted service", info.service_url, "Where calls routed to the hosted service go, and are paid.")}
        <div class="field">
          <label for="setting-routing-default">Where calls run unless a route says otherwise</label>
          <select id="setting-routing-default" value={current("routing.default", info.routing.default)} onChange={(e) => setDraft({ ...draft, "routing.default": (e.currentTarget as HTMLSelectElement).value })}>
            <option value="local">local: on this machine, free</option>
            <option value="hosted">hosted: on the service, paid</option>
            <option value="auto">auto: here, and on the service when this machine cannot</option>
          </select>
        </div>
        {LIMITS.map(([name, label]) => field(`policy.${name}`, `${label} (dollars)`, info.policy[name]))}
        <div class="actions">
          <button type="submit" class="primary" disabled={Object.keys(draft).length === 0}>
            Save settings
          </button>
          <span role="status">{status}</span>
        </div>
      </form>
      <h4>Routing per route</h4>
      <table>
        <caption class="visually-hidden">Routes with their own routing</caption>
        <thead>
          <tr>
            <th scope="col">Route</th>
            <th scope="col">Runs</th>
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {Object.entries(info.routing.routes).map(([route, mode]) => (
            <tr>
              <td>{route}</td>
              <td>{mode}</td>
              <td>
                <button type="button" aria-label={`Remove the routing of ${route}`} onClick={() => change(`routing.routes.${route}`, null)}>
                  Remove
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form
        class="filters"
        aria-label="Route a route"
        onSubmit={async (e) => {
          e.preventDefault();
          if (newRoute && (await change(`routing.routes.${newRoute}`, newMode))) setNewRoute("");
        }}
      >
        <label for="route-pick">Route</label>
        <select id="route-pick" value={newRoute} onChange={(e) => setNewRoute((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">(choose)</option>
          {catalog.operations.map((op) => (
            <option value={op.operationId}>{op.operationId}</option>
          ))}
        </select>
        <label for="route-mode">runs</label>
        <select id="route-mode" value={newMode} onChange={(e) => setNewMode((e.currentTarget as HTMLSelectElement).value)}>
          <option value="local">local</option>
          <option value="hosted">hosted</option>
          <option value="auto">auto</option>
        </select>
        <button type="submit" disabled={!newRoute}>
          Set
        </button>
        {error?.key.startsWith("routing.routes.") && <p class="field-error">{error.message}</p>}
      </form>
      <h4>Folders agents may use</h4>
      <p class="muted">
        Local calls (agents over MCP, the HTTP API) may read files given by path and save results only inside these folders.
      </p>
      {info.files.folders.length === 0 ? (
        <p>No folder yet: agents send files as data, and results come back in the answer.</p>
      ) : (
        <ul class="folders" aria-label="Granted folders">
          {info.files.folders.map((folder) => (
            <li>
              <code>{folder}</code>{" "}
              <button type="button" aria-label={`Remove the folder ${folder}`} onClick={() => change("files.folders", folder, "remove")}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <form
        class="filters"
        aria-label="Grant a folder"
        onSubmit={async (e) => {
          e.preventDefault();
          if (newFolder.trim() && (await change("files.folders", newFolder.trim(), "add"))) setNewFolder("");
        }}
      >
        <label for="folder-new">Folder</label>
        <input
          id="folder-new"
          type="text"
          placeholder="~/Documents"
          value={newFolder}
          aria-invalid={error?.key === "files.folders" || undefined}
          onInput={(e) => setNewFolder((e.currentTarget as HTMLInputElement).value)}
        />
        <button type="submit" disabled={!newFolder.trim()}>
          Grant
        </button>
        {error?.key === "files.folders" && (
          <p class="field-error" role="alert">
            {error.message}
          </p>
        )}
      </form>
    </section>
  );
}
