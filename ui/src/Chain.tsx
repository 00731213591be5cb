// Chain: one search box. An address, a transaction hash, an ENS name or calldata; the app
// runs the reads that apply and shows them. Everything the chain says is shown as text.

import { useState } from "preact/hooks";
import { ApiError, callRoute } from "./api";
import { type Catalog, choices, resolve } from "./schema";

type Kind = "address" | "transaction" | "ens" | "calldata";

/** What a pasted string is. */
export function classify(text: string): Kind | undefined {
  const s = text.trim();
  if (/^0x[0-9a-fA-F]{40}$/.test(s)) return "address";
  if (/^0x[0-9a-fA-F]{64}$/.test(s)) return "transaction";
  if (/^0x([0-9a-fA-F]{2}){4,}$/.test(s)) return "calldata";
  if (/^\S+\.[a-z]{2,}$/i.test(s)) return "ens";
  return undefined;
}

type Card = { title: string; path: string; state: "running" | "done" | "failed"; value?: any; error?: string };

function Value({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

/** The risk check's verdict first, its reasons prominent. */
function RiskCard({ value }: { value: any }) {
  const reasons: any[] = value?.reasons ?? [];
  return (
    <div>
      <p class={`verdict verdict-${String(value?.verdict ?? "unknown")}`}>
        Verdict: <strong>{String(value?.verdict ?? "unknown")}</strong>
        {value?.risk_score !== undefined && <> · score {String(value.risk_score)}</>}
      </p>
      {reasons.length > 0 && (
        <ul class="reasons">
          {reasons.map((r) => (
            <li class={`severity-${String(r.severity ?? "info")}`}>
              <strong>{String(r.severity ?? "")}</strong> {String(r.message ?? r.code ?? JSON.stringify(r))}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function Facts({ pairs }: { pairs: [string, unknown][] }) {
  return (
    <dl class="facts">
      {pairs
        .filter(([, v]) => v !== undefined && v !== null)
        .map(([k, v]) => (
          <>
            <dt>{k}</dt>
            <dd>{typeof v === "object" ? JSON.stringify(v) : String(v)}</dd>
          </>
        ))}
    </dl>
  );
}

function Summary({ card }: { card: Card }) {
  const v = card.value;
  switch (card.path) {
    case "/v1/check/address":
    case "/v1/check/token":
      return <RiskCard value={v} />;
    case "/v1/chain/balance":
      return <Facts pairs={[["Balance", v?.formatted], ["Symbol", v?.symbol], ["Asset", v?.asset]]} />;
    case "/v1/chain/token":
      return v?.is_erc20 === false ? (
        <p class="muted">Not an ERC-20 token.</p>
      ) : (
        <Facts pairs={[["Name", v?.name], ["Symbol", v?.symbol], ["Decimals", v?.decimals], ["Total supply", v?.total_supply]]} />
      );
    case "/v1/chain/tx":
      return (
        <Facts
          pairs={[
            ["Status", v?.status],
            ["From", v?.from],
            ["To", v?.to],
            ["Value", v?.value_formatted],
            ["Fee", v?.fee?.total_formatted],
            ["Block", v?.block],
            ["Time", v?.timestamp],
          ]}
        />
      );
    default:
      return null;
  }
}

export function Chain({ catalog }: { catalog: Catalog }) {
  const chainSchema = catalog.schemas.EvmChain ? resolve(catalog.schemas.EvmChain, catalog.schemas) : undefined;
  const chains = (chainSchema && choices(chainSchema)?.map((c) => String(c.value))) ?? ["base", "ethereum", "polygon"];
  const [query, setQuery] = useState("");
  const [chain, setChain] = useState(chains.includes("base") ? "base" : chains[0]);
  const [cards, setCards] = useState<Card[]>([]);
  const [problem, setProblem] = useState<string | undefined>();

  const has = (path: string) => catalog.operations.some((o) => o.path === path);

  const run = async (text: string) => {
    const kind = classify(text);
    setProblem(undefined);
    if (!kind) {
      setCards([]);
      setProblem("Paste an address (0x and 40 hex digits), a transaction hash (0x and 64), an ENS name or calldata.");
      return;
    }
    const s = text.trim();
    let plan: { title: string; path: string; body: unknown }[] = [];
    if (kind === "ens") {
      const ens = await callRoute("/v1/chain/ens", { name: s }).catch((e) => e as ApiError);
      if (ens instanceof Error) {
        setCards([{ title: `ENS ${s}`, path: "/v1/chain/ens", state: "failed", error: ens.message }]);
        return;
      }
      const address = (ens.kind === "json" && (ens.value as any)?.address) || undefined;
      setCards([{ title: `ENS ${s}`, path: "/v1/chain/ens", state: "done", value: ens.kind === "json" ? ens.value : undefined }]);
      if (!address) return;
      plan = addressPlan(String(address));
    } else if (kind === "address") plan = addressPlan(s);
    else if (kind === "transaction") plan = [{ title: "Transaction", path: "/v1/chain/tx", body: { chain, hash: s } }];
    else plan = [{ title: "Decoded calldata", path: "/v1/chain/calldata", body: { calldata: s } }];
    plan = plan.filter((p) => has(p.path));
    const start: Card[] = plan.map((p) => ({ title: p.title, path: p.path, state: "running" }));
    setCards((old) => (kind === "ens" ? [...old, ...start] : start));
    await Promise.all(
      plan.map(async (p) => {
        let card: Card;
        try {
          const answer = await callRoute(p.path, p.body);
          card = { title: p.title, path: p.path, state: "done", value: answer.kind === "json" ? answer.value : undefined };
        } catch (e) {
          card = { title: p.title, path: p.path, state: "failed", error: (e as Error).message };
        }
        setCards((old) => old.map((c) => (c.path === p.path && c.state === "running" ? card : c)));
      }),
    );
  };

  // The risk check runs on the chains its schema lists, never on another chain than asked.
  const checked = catalog.schemas.PrecheckChain ? choices(resolve(catalog.schemas.PrecheckChain, catalog.schemas)) : undefined;
  const addressPlan = (address: string) => [
    ...(checked?.some((c) => c.value === chain) ? [{ title: "Risk check", path: "/v1/check/address", body: { chain, address } }] : []),
    { title: "Balance", path: "/v1/chain/balance", body: { chain, address } },
    { title: "Token", path: "/v1/chain/token", body: { chain, address } },
  ];

  return (
    <section aria-labelledby="chain-title">
      <h2 id="chain-title">Chain</h2>
      <form
        class="search"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          void run(query);
        }}
      >
        <label for="chain-query">Address, transaction, ENS name or calldata</label>
        <input id="chain-query" type="search" value={query} spellcheck={false} autocomplete="off" onInput={(e) => setQuery((e.currentTarget as HTMLInputElement).value)} />
        <label for="chain-network">Chain</label>
        <select id="chain-network" value={chain} onChange={(e) => setChain((e.currentTarget as HTMLSelectElement).value)}>
          {chains.map((c) => (
            <option value={c}>{c}</option>
          ))}
        </select>
        <button type="submit" class="primary">
          Look up
        </button>
      </form>
      {problem && (
        <p class="field-error" role="alert">
          {problem}
        </p>
      )}
      <div class="cards" aria-live="polite">
        {cards.map((card) => (
          <article class={`card ${card.state}`} aria-label={card.title}>
            <h3>{card.title}</h3>
            {card.state === "running" && <p class="muted">Reading…</p>}
            {card.state === "failed" && <p class="muted">{card.error}</p>}
            {card.state === "done" && (
              <>
                <Summary card={card} />
                <details>
                  <summary>Everything the route answered</summary>
                  <Value value={card.value} />
                </details>
              </>
            )}
          </article>
        ))}
      </div>
    </section>
  );
}
