// The app: four screens behind one navigation, everything generated from the catalog.

import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { appApi, setDesktop } from "./api";
import { Agents, type SessionInfo } from "./Agents";
import { Approvals } from "./Approvals";
import { Chain } from "./Chain";
import { Documents } from "./Documents";
import { type Catalog, catalog } from "./schema";
import { Spend } from "./Spend";
import "./style.css";

const screens = [
  { id: "documents", label: "Documents" },
  { id: "chain", label: "Chain" },
  { id: "spend", label: "Wallet and spend" },
  { id: "agents", label: "Agents" },
] as const;
type ScreenId = (typeof screens)[number]["id"];

function current(): ScreenId {
  const id = location.hash.replace(/^#\/?/, "");
  return (screens.find((s) => s.id === id)?.id ?? "documents") as ScreenId;
}

function App() {
  const [screen, setScreen] = useState<ScreenId>(current());
  const [cat, setCat] = useState<Catalog | undefined>();
  const [session, setSession] = useState<SessionInfo | undefined>();
  const [failed, setFailed] = useState<string | undefined>();
  useEffect(() => {
    const onHash = () => setScreen(current());
    addEventListener("hashchange", onHash);
    catalog().then(setCat, (e) => setFailed(String(e.message ?? e)));
    appApi<SessionInfo>("/session").then(
      (s) => {
        setDesktop(s.desktop);
        setSession(s);
      },
      (e) => setFailed(String(e.message ?? e)),
    );
    return () => removeEventListener("hashchange", onHash);
  }, []);
  useEffect(() => {
    document.title = `${screens.find((s) => s.id === screen)?.label} · Paperchain`;
  }, [screen]);
  return (
    <>
      <header class="top">
        <h1>Paperchain</h1>
        <nav aria-label="Screens">
          <ul>
            {screens.map((s) => (
              <li>
                <a href={`#/${s.id}`} aria-current={s.id === screen ? "page" : undefined}>
                  {s.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        {session && <span class="muted version">v{session.version}</span>}
      </header>
      <Approvals />
      <main>
        {failed && <p role="alert">The local server did not answer: {failed}</p>}
        {!cat || !session ? (
          !failed && <p role="status">Loading…</p>
        ) : screen === "documents" ? (
          <Documents catalog={cat} />
        ) : screen === "chain" ? (
          <Chain catalog={cat} />
        ) : screen === "spend" ? (
          <Spend catalog={cat} />
        ) : (
          <Agents session={session} />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById("root")!);
