// Payments waiting for the user: when a call (an agent's, most often) costs more than
// policy.approve_above, it waits here. A dialog says who asks, for which route, to which
// service and how much; the call goes on or fails with the answer.

import { useEffect, useRef, useState } from "preact/hooks";
import { appApi } from "./api";

export type Waiting = {
  id: number;
  route: string;
  host: string;
  client: string | null;
  front_door: string;
  description: string;
  dollars: string;
  asked_at_ms: number;
};

const POLL_MS = 1500;

export function Approvals() {
  const [waiting, setWaiting] = useState<Waiting[]>([]);
  const [problem, setProblem] = useState<string | undefined>();
  const dialog = useRef<HTMLDialogElement>(null);
  const seen = useRef(new Set<number>());

  useEffect(() => {
    let stopped = false;
    const poll = async () => {
      try {
        const answer = await appApi<{ waiting: Waiting[] }>("/approvals");
        if (stopped) return;
        setWaiting(answer.waiting);
        for (const w of answer.waiting) {
          if (seen.current.has(w.id)) continue;
          seen.current.add(w.id);
          // A desktop notification too, when the user allowed them.
          if ("Notification" in window && Notification.permission === "granted") {
            new Notification("Paperchain: a payment waits for you", { body: `${w.client ?? "A client"} asks to pay $${w.dollars} for ${w.route}` });
          }
        }
      } catch {
        // The server restarts or stops: try again at the next tick.
      }
      if (!stopped) setTimeout(poll, POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
    };
  }, []);

  const current = waiting[0];
  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (current && !d.open) d.showModal();
    if (!current && d.open) d.close();
  }, [current?.id]);

  const answer = async (approve: boolean) => {
    if (!current) return;
    setProblem(undefined);
    try {
      await appApi(`/approvals/${current.id}`, { method: "POST", body: JSON.stringify({ approve }) });
    } catch (e) {
      setProblem((e as Error).message);
    }
    setWaiting((list) => list.filter((w) => w.id !== current.id));
  };

  return (
    <dialog ref={dialog} class="approval" aria-labelledby="approval-title" aria-describedby="approval-what" onCancel={(e) => e.preventDefault()}>
      {current && (
        <>
          <h2 id="approval-title">Approve a payment?</h2>
          <p id="approval-what">
            <strong>{current.client ?? "An unnamed client"}</strong> (through {current.front_door}) asks to pay{" "}
            <strong>${current.dollars}</strong> for <strong>{current.route}</strong> on <strong>{current.host}</strong>.
          </p>
          <p class="muted mono">{current.description}</p>
          {waiting.length > 1 && <p class="muted">{waiting.length - 1} more waiting after this one.</p>}
          {problem && <p class="field-error">{problem}</p>}
          <div class="actions">
            <button type="button" class="primary" onClick={() => answer(true)}>
              Approve ${current.dollars}
            </button>
            {/* Deny has the focus: Enter on a dialog that appeared unasked never pays. */}
            <button type="button" autofocus onClick={() => answer(false)}>
              Deny
            </button>
          </div>
        </>
      )}
    </dialog>
  );
}
