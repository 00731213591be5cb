// Talking to the local server: the route API under /v1 (as any client does) and the app's
// own API under /app/api, which needs this page's session token.

const token = document.querySelector('meta[name="paperchain-token"]')?.getAttribute("content") ?? "";

/** An error as the server words it: status, code, message and the field it is about. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    const error = body.error ?? body;
    return new ApiError(response.status, String(error.code ?? "error"), String(error.message ?? text), error.field);
  } catch {
    return new ApiError(response.status, "error", text || response.statusText);
  }
}

/** GET or POST the app's own API. */
export async function appApi<T>(path: string, init: RequestInit = {}): Promise<T> {
  const headers = new Headers(init.headers);
  headers.set("x-paperchain-token", token);
  if (init.body) headers.set("content-type", "application/json");
  const response = await fetch(`/app/api${path}`, { ...init, headers });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

/** A route's answer: JSON, or a file (with the route's report on it, when it gives one). */
export type RouteAnswer =
  | { kind: "json"; value: unknown }
  | { kind: "file"; blob: Blob; filename: string; contentType: string; report?: Record<string, unknown> };

/** The `Paperchain-Report` header: what the route did to the file, as JSON. */
function reportOf(header: string | null): Record<string, unknown> | undefined {
  if (!header) return undefined;
  try {
    const report = JSON.parse(header);
    return report && typeof report === "object" && !Array.isArray(report) ? report : undefined;
  } catch {
    return undefined;
  }
}

function filenameOf(disposition: string | null, fallback: string): string {
  const star = disposition?.match(/filename\*=UTF-8''([^;]+)/i);
  if (star) return decodeURIComponent(star[1]);
  const plain = disposition?.match(/filename="?([^";]+)"?/i);
  return plain ? plain[1] : fallback;
}

/** Runs a route with `body`; `signal` cancels it. `local` keeps it on this machine
 * whatever the routing says (previews are never paid for). */
export async function callRoute(path: string, body: unknown, signal?: AbortSignal, local = false): Promise<RouteAnswer> {
  const headers: Record<string, string> = { "content-type": "application/json", "x-paperchain-token": token };
  if (local) headers["paperchain-route"] = "local";
  const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body), signal });
  if (!response.ok) throw await errorOf(response);
  const contentType = response.headers.get("content-type") ?? "";
  if (contentType.startsWith("application/json")) return { kind: "json", value: await response.json() };
  const blob = await response.blob();
  const fallback = path.split("/").pop() ?? "result";
  const filename = filenameOf(response.headers.get("content-disposition"), fallback);
  return { kind: "file", blob, filename, contentType, report: reportOf(response.headers.get("paperchain-report")) };
}

/** The file's bytes in base64, for a route's `data` field. */
export async function base64Of(file: Blob): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  }
  return btoa(binary);
}

let inDesktopApp = false;

/** Whether the page is shown by the desktop app (the session says so): files are then
 * saved through the system's own save dialog, which the app opens. */
export function setDesktop(desktop: boolean) {
  inDesktopApp = desktop;
}

/** Where a file went: the path the user chose in the desktop app, `null` when the user
 * cancelled there, `undefined` in a browser (its download asks and says where). */
export type Saved = string | null | undefined;

/** Saves a blob under `filename`: the user picks where. */
export async function saveBlob(blob: Blob, filename: string): Promise<Saved> {
  if (inDesktopApp) {
    const response = await fetch(`/app/api/desktop/save?name=${encodeURIComponent(filename)}`, {
      method: "POST",
      headers: { "x-paperchain-token": token, "content-type": "application/octet-stream" },
      body: blob,
    });
    if (!response.ok) throw await errorOf(response);
    return ((await response.json()) as { saved: string | null }).saved;
  }
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return undefined;
}
