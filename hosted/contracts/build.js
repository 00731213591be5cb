// Compiles SandboxUsdc.sol beside this file with solcjs and writes SandboxUsdc.json (ABI,
// runtime code, the keccak-256 of the source it came from, compiler and settings). The
// the hosted crate embeds that JSON (hosted/src/sandbox.rs) and puts the runtime code at the
// Base USDC address of the sandbox chain; a unit test there fails when the source changed
// without a rebuild.
//
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node hosted/contracts/build.js
//
// `cargo xtask setup` installs solc (npm `solc`, the version pinned in xtask/src/setup.rs).
const fs = require("fs");
const path = require("path");
const solc = require("solc");
const { keccak256 } = require("js-sha3");

const file = "SandboxUsdc.sol";
const contract = "SandboxUsdc";
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
