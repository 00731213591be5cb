// Compiles TradeSimulator.sol beside this file with solcjs and writes trade-simulator.json
// (runtime code, the keccak-256 of the source it came from, compiler and settings). The
// engine embeds that JSON (engine/core/src/evm/trade_sim.rs); a unit test there fails when
// the source changed without a rebuild.
//
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node engine/data/build-trade-simulator.js
//
// `cargo xtask setup` installs solc (npm `solc`, the version pinned in xtask/src/setup.rs).
const fs = require("fs");
const path = require("path");
const solc = require("solc");
const { keccak256 } = require("js-sha3");

const file = "TradeSimulator.sol";
const source = fs.readFileSync(path.join(__dirname, file), "utf8");
const settings = {
  optimizer: { enabled: true, runs: 200 },
  // No PUSH0 or later opcodes: runs on any chain and hardfork the check may meet.
  evmVersion: "paris",
  outputSelection: { "*": { TradeSimulator: ["evm.deployedBytecode.object"] } },
};
const input = { language: "Solidity", sources: { [file]: { content: source } }, settings };
const output = JSON.parse(solc.compile(JSON.stringify(input)));
for (const e of output.errors || []) console.error(e.formattedMessage);
if ((output.errors || []).some((e) => e.severity === "error")) process.exit(1);
const runtime = output.contracts[file].TradeSimulator.evm.deployedBytecode.object;
const artifact = {
  contractName: "TradeSimulator",
  source: file,
  sourceKeccak256: "0x" + keccak256(source),
  compiler: `solc ${solc.version()}`,
  settings: { optimizer: settings.optimizer, evmVersion: settings.evmVersion },
  runtime: "0x" + runtime,
};
fs.writeFileSync(path.join(__dirname, "trade-simulator.json"), JSON.stringify(artifact, null, 2) + "\n");
console.log(`wrote trade-simulator.json (${runtime.length / 2} bytes of runtime code)`);
