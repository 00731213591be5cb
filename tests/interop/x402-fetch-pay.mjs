// Pays one Paperchain route with the official x402 TypeScript client (@x402/fetch with
// @x402/evm and viem, as `cargo xtask setup` installs them) and prints one JSON line:
//   {"status": 200, "paymentResponse": {...decoded PAYMENT-RESPONSE...} | null, "body": ...}
//
//   PAPERCHAIN_PAYER_KEY=0x... node tests/interop/x402-fetch-pay.mjs BASE_URL PATH JSON_BODY|-
//
// The body is read from stdin when it is `-` (document inputs outgrow an argument). The key
// comes from the environment, not argv, so it does not show in process lists. Only loopback
// addresses may be fetched: this is a test against a local sandbox, and nothing here may
// reach the internet. Exit 0 once an answer is printed, whatever its status; 2 on a usage or
// setup mistake; 1 when the client fails.

import { join } from "node:path";
import { readFileSync } from "node:fs";
import { guardFetch, payAndPrint, toolsRequire } from "./common.mjs";

function fail(code, message) {
  process.stderr.write(`x402-fetch-pay: ${message}\n`);
  process.exit(code);
}

const [baseUrl, path, bodyArg] = process.argv.slice(2);
if (!baseUrl || !path || bodyArg === undefined) {
  fail(2, "usage: PAPERCHAIN_PAYER_KEY=0x... node x402-fetch-pay.mjs BASE_URL PATH JSON_BODY|-");
}
const key = process.env.PAPERCHAIN_PAYER_KEY ?? "";
if (!/^0x[0-9a-fA-F]{64}$/.test(key)) {
  fail(2, "PAPERCHAIN_PAYER_KEY must be the payer's private key, 0x and 64 hex digits");
}
let body;
try {
  body = JSON.parse(bodyArg === "-" ? readFileSync(0, "utf8") : bodyArg);
} catch (error) {
  fail(2, `the request body is not JSON: ${error.message}`);
}

try {
  guardFetch(baseUrl);
} catch (error) {
  fail(2, error.message);
}
const { tools, require } = toolsRequire();
let x402Fetch, x402Evm, viemAccounts;
try {
  x402Fetch = require("@x402/fetch");
  x402Evm = require("@x402/evm");
  viemAccounts = require("viem/accounts");
} catch (error) {
  const where = join(tools, "npm");
  fail(2, `the x402 TypeScript client is not installed in ${where}; run \`cargo xtask setup\` (${error.message})`);
}
const { wrapFetchWithPaymentFromConfig, decodePaymentResponseHeader } = x402Fetch;
const { ExactEvmScheme } = x402Evm;
const { privateKeyToAccount } = viemAccounts;

// The client as @x402/fetch's README and `paperchain serve --hosted --sandbox` show it.
const pay = wrapFetchWithPaymentFromConfig(globalThis.fetch, {
  schemes: [{ network: "eip155:8453", client: new ExactEvmScheme(privateKeyToAccount(key)) }],
});

await payAndPrint(pay, decodePaymentResponseHeader, baseUrl, path, body, fail);
