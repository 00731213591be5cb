// Pays one Paperchain route on Solana with the official x402 TypeScript client (@x402/fetch
// with @x402/svm and @solana/kit, as `cargo xtask setup` installs them) and prints one JSON
// line:
//   {"status": 200, "paymentResponse": {...decoded PAYMENT-RESPONSE...} | null, "body": ...}
//
//   PAPERCHAIN_SOLANA_PAYER_KEY=<base58 keypair> PAPERCHAIN_SOLANA_RPC=http://127.0.0.1:... \
//     node tests/interop/x402-svm-pay.mjs BASE_URL PATH JSON_BODY
//
// The key (base58 of the 64-byte keypair, as the sandbox prints it) comes from the
// environment, not argv. The client reads the mint and a recent blockhash from the RPC URL
// given (the sandbox's validator). Only loopback addresses may be fetched. Exit 0 once an
// answer is printed, whatever its status; 2 on a usage or setup mistake; 1 when the client
// fails.

import { join } from "node:path";
import { guardFetch, payAndPrint, toolsRequire } from "./common.mjs";

function fail(code, message) {
  process.stderr.write(`x402-svm-pay: ${message}\n`);
  process.exit(code);
}

const SOLANA_MAINNET = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";

const [baseUrl, path, bodyArg] = process.argv.slice(2);
if (!baseUrl || !path || bodyArg === undefined) {
  fail(2, "usage: PAPERCHAIN_SOLANA_PAYER_KEY=... PAPERCHAIN_SOLANA_RPC=... node x402-svm-pay.mjs BASE_URL PATH JSON_BODY");
}
const key = process.env.PAPERCHAIN_SOLANA_PAYER_KEY ?? "";
const rpcUrl = process.env.PAPERCHAIN_SOLANA_RPC ?? "";
if (!/^[1-9A-HJ-NP-Za-km-z]{80,90}$/.test(key)) {
  fail(2, "PAPERCHAIN_SOLANA_PAYER_KEY must be the payer's keypair, base58 of 64 bytes");
}
let body;
try {
  body = JSON.parse(bodyArg);
} catch (error) {
  fail(2, `the request body is not JSON: ${error.message}`);
}
try {
  guardFetch(baseUrl);
  guardFetch(rpcUrl);
} catch (error) {
  fail(2, error.message);
}
const { tools, require } = toolsRequire();
let x402Fetch, x402Svm, kit;
try {
  x402Fetch = require("@x402/fetch");
  x402Svm = require("@x402/svm");
  kit = require("@solana/kit");
} catch (error) {
  const where = join(tools, "npm");
  fail(2, `the x402 TypeScript Solana client is not installed in ${where}; run \`cargo xtask setup\` (${error.message})`);
}
const { wrapFetchWithPaymentFromConfig, decodePaymentResponseHeader } = x402Fetch;
const { ExactSvmScheme } = x402Svm;

const signer = await kit.createKeyPairSignerFromBytes(kit.getBase58Encoder().encode(key));
const pay = wrapFetchWithPaymentFromConfig(globalThis.fetch, {
  schemes: [{ network: SOLANA_MAINNET, client: new ExactSvmScheme(signer, { rpcUrl }) }],
});

await payAndPrint(pay, decodePaymentResponseHeader, baseUrl, path, body, fail);
