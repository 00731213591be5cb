// Wallet and spend: the ledger as a table with filters, spend plotted by day, by route and
// by client, and the rows as CSV.

import { useEffect, useState } from "preact/hooks";
import { appApi } from "./api";
import { SaveButton } from "./SaveButton";
import type { Catalog } from "./schema";
import { SettingsPanel, WalletPanel } from "./Settings";

export type Row = {
  id: number;
  at: string;
  front_door: string;
  client: string | null;
  route: string;
  ran: string;
  service: string | null;
  status: number | null;
  state: string;
  amount: string | null;
  micros: number;
  network: string | null;
  tx: string | null;
  error: string | null;
};

/** Micro-dollars as "$0.001": at least two decimals, no trailing zeros beyond. */
export const dollars = (micros: number) => `$${(micros / 1e6).toFixed(6).replace(/(\.\d\d\d*?)0+$/, "$1")}`;

/** Sums of paid micro-dollars by a key, largest first. */
export function spendBy(rows: Row[], key: (r: Row) => string): [string, number][] {
  const sums = new Map<string, number>();
  for (const r of rows) if (r.micros > 0) sums.set(key(r), (sums.get(key(r)) ?? 0) + r.micros);
  return [...sums.entries()].sort((a, b) => b[1] - a[1]);
}

/** A bar chart as SVG, with a table of the same numbers for screen readers. */
function Bars({ title, data }: { title: string; data: [string, number][] }) {
  const max = Math.max(1, ...data.map(([, v]) => v));
  const height = 22;
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      {data.length === 0 ? (
        <p class="muted">Nothing paid yet.</p>
      ) : (
        <svg role="img" aria-label={`${title}: ${data.map(([k, v]) => `${k} ${dollars(v)}`).join(", ")}`} width="100%" height={data.length * height} viewBox={`0 0 400 ${data.length * height}`} preserveAspectRatio="none">
          {data.map(([k, v], i) => (
            <g>
              <rect class="bar" x={150} y={i * height + 3} width={(v / max) * 170} height={height - 6} />
              <text x={146} y={i * height + 15} text-anchor="end">
                {k.length > 22 ? `${k.slice(0, 21)}…` : k}
              </text>
              <text x={154 + (v / max) * 170} y={i * height + 15}>
                {dollars(v)}
              </text>
            </g>
          ))}
        </svg>
      )}
    </figure>
  );
}

function csvOf(rows: Row[]): string {
  const columns: (keyof Row)[] = ["at", "front_door", "client", "route", "ran", "service", "status", "state", "amount", "micros", "network", "tx", "error"];
  const cell = (v: unknown) => {
    const s = v == null ? "" : String(v);
    // A cell a spreadsheet would run as a formula is written as text.
    const safe = /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
    return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  return [columns.join(","), ...rows.map((r) => columns.map((c) => cell(r[c])).join(","))].join("\r\n") + "\r\n";
}

export function Spend({ catalog }: { catalog: Catalog }) {
  const [rows, setRows] = useState<Row[] | undefined>();
  const [recorded, setRecorded] = useState(true);
  const [failed, setFailed] = useState<string | undefined>();
  const [route, setRoute] = useState("");
  const [client, setClient] = useState("");
  const [paidOnly, setPaidOnly] = useState(false);

  const load = () =>
    appApi<{ rows: Row[]; recorded: boolean }>("/ledger")
      .then((l) => {
        setRows(l.rows);
        setRecorded(l.recorded);
      })
      .catch((e) => setFailed((e as Error).message));
  useEffect(() => {
    void load();
  }, []);

  if (failed) return <p role="alert">The ledger could not be read: {failed}</p>;
  if (!rows) return <p role="status">Reading the ledger…</p>;
  const routes = [...new Set(rows.map((r) => r.route))].sort();
  const clients = [...new Set(rows.map((r) => r.client ?? "(unnamed)"))].sort();
  const shown = rows.filter(
    (r) => (!route || r.route === route) && (!client || (r.client ?? "(unnamed)") === client) && (!paidOnly || r.micros > 0),
  );
  const total = shown.reduce((sum, r) => sum + r.micros, 0);
  return (
    <section aria-labelledby="spend-title">
      <h2 id="spend-title">Wallet and spend</h2>
      {!recorded && <p class="muted">This server records no calls (it runs without the paying client).</p>}
      <div class="panels">
        <WalletPanel />
        <SettingsPanel catalog={catalog} />
      </div>
      <div class="charts">
        <Bars title="Spend by day" data={spendBy(shown, (r) => r.at.slice(0, 10)).sort((a, b) => a[0].localeCompare(b[0]))} />
        <Bars title="Spend by route" data={spendBy(shown, (r) => r.route)} />
        <Bars title="Spend by client" data={spendBy(shown, (r) => r.client ?? "(unnamed)")} />
      </div>
      <div class="filters" role="group" aria-label="Filters">
        <label for="filter-route">Route</label>
        <select id="filter-route" value={route} onChange={(e) => setRoute((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">all</option>
          {routes.map((r) => (
            <option value={r}>{r}</option>
          ))}
        </select>
        <label for="filter-client">Client</label>
        <select id="filter-client" value={client} onChange={(e) => setClient((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">all</option>
          {clients.map((c) => (
            <option value={c}>{c}</option>
          ))}
        </select>
        <input id="filter-paid" type="checkbox" checked={paidOnly} onChange={(e) => setPaidOnly((e.currentTarget as HTMLInputElement).checked)} />
        <label for="filter-paid">Paid calls only</label>
        <button type="button" onClick={() => void load()}>
          Refresh
        </button>
        <SaveButton blob={() => new Blob([csvOf(shown)], { type: "text/csv" })} filename="paperchain-ledger.csv" label="Export CSV" />
      </div>
      <p>
        {shown.length} calls, {dollars(total)} paid.
      </p>
      <div class="table-wrap">
        <table class="ledger">
          <caption class="visually-hidden">Ledger</caption>
          <thead>
            <tr>
              <th scope="col">When (UTC)</th>
              <th scope="col">Route</th>
              <th scope="col">Client</th>
              <th scope="col">Ran</th>
              <th scope="col">State</th>
              <th scope="col">Paid</th>
              <th scope="col">Network</th>
              <th scope="col">Transaction</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => (
              <tr key={r.id}>
                <td>{r.at.replace("T", " ").replace("Z", "")}</td>
                <td>{r.route}</td>
                <td>{r.client ?? ""}</td>
                <td>{r.ran}</td>
                <td title={r.error ?? undefined}>{r.state}</td>
                <td class="number">{r.micros > 0 ? dollars(r.micros) : ""}</td>
                <td>{r.network ?? ""}</td>
                <td class="mono">{r.tx ? `${r.tx.slice(0, 10)}…` : ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
