// One button that saves a file: the browser's download, or in the desktop app the
// system's save dialog, then where the file went.

import { useState } from "preact/hooks";
import { ApiError, saveBlob } from "./api";

export function SaveButton({ blob, filename, label, primary }: { blob: () => Blob; filename: string; label: string; primary?: boolean }) {
  const [said, setSaid] = useState<{ text: string; failed: boolean } | undefined>();
  const [busy, setBusy] = useState(false);
  const save = async () => {
    setBusy(true);
    setSaid(undefined);
    try {
      const saved = await saveBlob(blob(), filename);
      if (saved) setSaid({ text: `Saved to ${saved}`, failed: false });
      else if (saved === null) setSaid({ text: "Not saved: the dialog was cancelled.", failed: false });
    } catch (e) {
      const message = e instanceof ApiError ? `${e.message} [${e.status} ${e.code}]` : String((e as Error).message ?? e);
      setSaid({ text: `Not saved: ${message}`, failed: true });
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="save">
      <button type="button" class={primary ? "primary" : undefined} disabled={busy} onClick={() => void save()}>
        {label}
      </button>
      <span class={said?.failed ? "save-said error-text" : "save-said muted"} role="status" data-testid="saved">
        {said?.text}
      </span>
    </span>
  );
}
