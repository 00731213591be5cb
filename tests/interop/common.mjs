// What the interop scripts share: the loopback-only fetch guard (these are tests against a
// local sandbox; nothing here may reach the internet) and a `require` that resolves the npm
// packages `cargo xtask setup` installs into its tools folder.

import { createRequire } from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";

const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);

function assertLoopback(target) {
  const { hostname } = new URL(target);
  if (!LOOPBACK.has(hostname)) {
    throw new Error(`refusing to fetch ${target}: only loopback addresses are allowed here`);
  }
}

/// Checks `target`, then routes every fetch of this process (the client's and any library's)
/// through the same check. Throws when `target` is not a loopback address.
export function guardFetch(target) {
  assertLoopback(target);
  const realFetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    assertLoopback(input instanceof Request ? input.url : String(input));
    return realFetch(input, init);
  };
}

/// The tools folder and a `require` resolving from its npm packages. The packages live there,
/// not beside the scripts; createRequire resolves from that folder (node 20 keeps
/// import.meta.resolve's parent argument behind a flag), so these are the packages' published
/// CommonJS builds, built from the same sources as their ESM builds.
export function toolsRequire() {
  const tools = process.env.PAPERCHAIN_TOOLS || join(homedir(), ".cache/paperchain/tools");
  return { tools, require: createRequire(join(tools, "npm", "package.json")) };
}

/// POSTs `body` as JSON to `path` of `baseUrl` with the paying `fetch` (an x402 client's
/// wrapper) and prints one JSON line: the status, the decoded PAYMENT-RESPONSE (or null) and
/// the answer. `fail(code, message)` reports a client failure.
export async function payAndPrint(pay, decodePaymentResponseHeader, baseUrl, path, body, fail) {
  let response;
  try {
    response = await pay(new URL(path, baseUrl), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch (error) {
    fail(1, `the x402 client failed: ${error.message}`);
  }
  const header = response.headers.get("PAYMENT-RESPONSE");
  const text = await response.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = { text };
  }
  const line = {
    status: response.status,
    paymentResponse: header ? decodePaymentResponseHeader(header) : null,
    body: answer,
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
