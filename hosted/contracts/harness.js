// What check.js and batch_check.js share: the sandbox chain's addresses and artifacts, anvil's
// default accounts, a scratch anvil with viem clients for it, the runtime code placed with
// `anvil_setCode` as the sandbox does, and the checks' reporting (one line per check, then
// "all checks passed" or how many failed, and the exit code).
//
// anvil is found as the hosted crate finds it: $PAPERCHAIN_ANVIL, else
// $PAPERCHAIN_TOOLS/npm/node_modules/.bin/anvil (tools in ~/.cache/paperchain/tools by
// default), else on the PATH. It is started on a free port and stopped at the end.
const { spawn } = require("child_process");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");
const solc = require("solc");
const viem = require("viem");
const { mnemonicToAccount } = require("viem/accounts");

const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const PERMIT2 = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
const CHAIN_ID = 8453;
const NETWORK = `eip155:${CHAIN_ID}`;

const artifact = (name) => JSON.parse(fs.readFileSync(path.join(__dirname, `${name}.json`), "utf8"));
const usdcArtifact = artifact("SandboxUsdc");
const permit2Artifact = artifact("SandboxPermit2");
/// `abi` with the errors Permit2 may pass up through it, to name any revert.
const withPermit2Errors = (abi) => [...abi, ...permit2Artifact.abi.filter((item) => item.type === "error")];

// anvil's default accounts come from its mnemonic "test … junk": never funds of any real chain.
const MNEMONIC = "test test test test test test test test test test test junk";
/// The accounts at addresses 0, 1, … of anvil's mnemonic, by the names in `roles`.
const anvilAccounts = (roles) =>
  Object.fromEntries(roles.map((who, i) => [who, mnemonicToAccount(MNEMONIC, { addressIndex: i })]));

let failures = 0;

/// Runs one check; `fn` returns an optional detail or throws.
async function check(name, fn) {
  try {
    const detail = await fn();
    console.log(`ok   ${name}${detail ? ` (${detail})` : ""}`);
  } catch (e) {
    failures += 1;
    const reverted = e && e.walk ? e.walk((x) => x instanceof viem.ContractFunctionRevertedError) : null;
    const why = reverted ? ` with ${reverted.data ? reverted.data.errorName : reverted.reason || "no data"}` : "";
    const message = String(e && e.shortMessage ? e.shortMessage : e && e.message ? e.message : e).split("\n")[0];
    console.log(`FAIL ${name}: ${message.replace(/\.$/, "")}${why}`);
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

function findAnvil() {
  const set = (key) => (process.env[key] ? process.env[key] : undefined);
  if (set("PAPERCHAIN_ANVIL")) return set("PAPERCHAIN_ANVIL");
  const tools = set("PAPERCHAIN_TOOLS") || path.join(os.homedir(), ".cache/paperchain/tools");
  const bundled = path.join(tools, "npm/node_modules/.bin/anvil");
  if (fs.existsSync(bundled)) return bundled;
  for (const dir of (process.env.PATH || "").split(path.delimiter)) {
    const candidate = path.join(dir, "anvil");
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`no anvil: set PAPERCHAIN_ANVIL, or install it at ${bundled}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/// The runtime code of contract `name` in the Solidity `source`, compiled with solcjs.
function compileRuntime(name, source) {
  const file = `${name}.sol`;
  const input = {
    language: "Solidity",
    sources: { [file]: { content: source } },
    settings: { evmVersion: "paris", outputSelection: { "*": { [name]: ["evm.deployedBytecode.object"] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input)));
  const errors = (output.errors || []).filter((e) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  return "0x" + output.contracts[file][name].evm.deployedBytecode.object;
}

/// The name of the error a call reverts with (`Error(reason)` for a string), or null when it
/// does not revert.
async function revertOf(call) {
  try {
    await call();
    return null;
  } catch (e) {
    const reverted = e.walk ? e.walk((x) => x instanceof viem.ContractFunctionRevertedError) : null;
    if (!reverted) throw e;
    if (reverted.data && reverted.data.errorName) return reverted.data.errorName;
    if (reverted.reason) return `Error(${reverted.reason})`;
    return reverted.signature || "revert without data";
  }
}

/// Canonical text of an ABI entry, internal types and component names aside.
function abiEntryText(item) {
  const type = (p) => (p.type.startsWith("tuple") ? `(${p.components.map(type).join(",")})${p.type.slice(5)}` : p.type);
  const params = (ps) => (ps || []).map((p) => `${type(p)} ${p.name || ""}${p.indexed ? " indexed" : ""}`).join(",");
  const outputs = item.outputs ? ` returns (${item.outputs.map(type).join(",")})` : "";
  return `${item.type} ${item.name || ""}(${params(item.inputs)})${outputs} ${item.stateMutability || ""}`.trim();
}

/// EIP-712 encodeType of `primaryType` in `typeSet`, from viem's own files (not exported).
function encodeType(primaryType, typeSet) {
  const { encodeType: viemEncodeType } = require(path.join(path.dirname(require.resolve("viem")), "utils/signature/hashTypedData.js"));
  return viemEncodeType({ primaryType, types: typeSet });
}

/// Starts anvil, runs `run(sandbox)` with viem clients for it (`pollingInterval` for the
/// public and wallet clients, viem's default if not given) and stops anvil; then prints "all
/// checks passed" or how many failed, and exits 0, 1 if a check failed, 2 if `run` threw.
function runChecks(run, { pollingInterval } = {}) {
  main(run, pollingInterval).then(
    () => {
      console.log(failures ? `${failures} check(s) failed` : "all checks passed");
      process.exit(failures ? 1 : 0);
    },
    (e) => {
      console.error(e);
      process.exit(2);
    },
  );
}

async function main(run, pollingInterval) {
  const anvilPath = findAnvil();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const anvil = spawn(anvilPath, ["--port", String(port), "--chain-id", String(CHAIN_ID), "--silent"], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const stop = () => anvil.exitCode === null && anvil.kill();
  process.on("exit", stop);
  try {
    await run(await connect(url, anvil, pollingInterval));
  } finally {
    stop();
  }
}

/// viem clients for the anvil at `url`, once it answers, and the helpers both checks use.
async function connect(url, anvil, pollingInterval) {
  const chain = viem.defineChain({
    id: CHAIN_ID,
    name: "sandbox",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  const transport = viem.http(url);
  const publicClient = viem.createPublicClient({ chain, transport, pollingInterval });
  const testClient = viem.createTestClient({ chain, transport, mode: "anvil" });
  const wallet = (account) => viem.createWalletClient({ account, chain, transport, pollingInterval });

  for (let i = 0; ; i += 1) {
    if (anvil.exitCode !== null) throw new Error(`anvil exited with ${anvil.exitCode}`);
    try {
      if ((await publicClient.getChainId()) === CHAIN_ID) break;
    } catch (e) {
      if (i > 100) throw new Error(`anvil did not answer at ${url}: ${e.message}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  /// Sends a transaction and waits for its receipt, which must be a success.
  async function send(account, address, abi, functionName, args) {
    const hash = await wallet(account).writeContract({ address, abi, functionName, args });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    assert(receipt.status === "success", `${functionName} failed in ${hash}`);
    return receipt;
  }
  const balanceOf = (who) =>
    publicClient.readContract({ address: USDC, abi: usdcArtifact.abi, functionName: "balanceOf", args: [who] });

  /// Moves that `fn` makes to each balance of `who`, by address.
  async function balanceChanges(who, fn) {
    const before = await Promise.all(who.map(balanceOf));
    const out = await fn();
    const after = await Promise.all(who.map(balanceOf));
    return { out, changes: who.map((_, i) => after[i] - before[i]) };
  }

  /// The sandbox as the hosted crate sets it up: SandboxUsdc and SandboxPermit2 at the USDC and
  /// Permit2 addresses, then each `[address, runtime]` of `code`; USDC initialised by
  /// `deployer`, `amount` minted to each of `holders` and Permit2 approved for all the USDC of
  /// each of `approvers`.
  async function place({ deployer, code, holders, amount, approvers }) {
    await testClient.setCode({ address: USDC, bytecode: usdcArtifact.runtime });
    await testClient.setCode({ address: PERMIT2, bytecode: permit2Artifact.runtime });
    for (const [address, bytecode] of code) {
      await testClient.setCode({ address, bytecode });
    }
    await send(deployer, USDC, usdcArtifact.abi, "initialize", [deployer.address]);
    for (const who of holders) {
      await send(deployer, USDC, usdcArtifact.abi, "mint", [who.address, amount]);
    }
    for (const who of approvers) {
      await send(who, USDC, usdcArtifact.abi, "approve", [PERMIT2, viem.maxUint256]);
    }
  }

  return { publicClient, testClient, wallet, send, balanceOf, balanceChanges, place };
}

module.exports = {
  // the sandbox chain
  USDC, PERMIT2, CHAIN_ID, NETWORK, artifact, usdcArtifact, permit2Artifact, withPermit2Errors, anvilAccounts,
  // the checks and what they use
  check, assert, freePort, compileRuntime, revertOf, abiEntryText, encodeType, runChecks,
};
