// Compiles the sandbox chain's contracts beside this file with solcjs and writes one JSON
// artifact per contract (ABI, runtime code, the keccak-256 of the source it came from,
// compiler and settings):
//
//   SandboxUsdc.sol      -> SandboxUsdc.json       the test USDC, at the Base USDC address
//   SandboxPermit2.sol   -> SandboxPermit2.json    Permit2's signature transfers, at the
//                                                  canonical Permit2 address
//   SandboxUptoProxy.sol -> SandboxUptoProxy.json  the x402 `upto` settlement proxy, at the
//                                                  x402UptoPermit2Proxy address
//
// The hosted crate embeds these JSON files (hosted/src/sandbox.rs) and puts each runtime code
// at its address on the sandbox chain with `anvil_setCode`; a unit test there fails when a
// source changed without a rebuild. Each source is compiled on its own (none imports
// another), so an artifact depends on its own source only. hosted/contracts/check.js tries
// the three together on a scratch anvil.
//
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node hosted/contracts/build.js
//
// `cargo xtask setup` installs solc (npm `solc`, the version pinned in xtask/src/setup.rs).
const fs = require("fs");
const path = require("path");
const solc = require("solc");
const { keccak256 } = require("js-sha3");

const contracts = ["SandboxUsdc", "SandboxPermit2", "SandboxUptoProxy", "SandboxBatchEscrow"];

for (const contract of contracts) {
  const file = `${contract}.sol`;
  const source = fs.readFileSync(path.join(__dirname, file), "utf8");
  const settings = {
    optimizer: { enabled: true, runs: 200 },
    // No PUSH0 or later opcodes: runs under any hardfork anvil is started with.
    evmVersion: "paris",
    outputSelection: { "*": { [contract]: ["abi", "evm.deployedBytecode.object"] } },
  };
  const input = { language: "Solidity", sources: { [file]: { content: source } }, settings };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  for (const e of output.errors || []) console.error(e.formattedMessage);
  if ((output.errors || []).some((e) => e.severity === "error")) process.exit(1);
  const compiled = output.contracts[file][contract];
  const runtime = compiled.evm.deployedBytecode.object;
  const artifact = {
    contractName: contract,
    source: file,
    sourceKeccak256: "0x" + keccak256(source),
    compiler: `solc ${solc.version()}`,
    settings: { optimizer: settings.optimizer, evmVersion: settings.evmVersion },
    abi: compiled.abi,
    runtime: "0x" + runtime,
  };
  fs.writeFileSync(path.join(__dirname, `${contract}.json`), JSON.stringify(artifact, null, 2) + "\n");
  console.log(`wrote ${contract}.json (${runtime.length / 2} bytes of runtime code)`);
}
