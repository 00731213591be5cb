// Tries the sandbox chain's contracts together on a scratch anvil: puts the runtime code of
// SandboxUsdc.json, SandboxPermit2.json and SandboxUptoProxy.json (build.js writes them) at
// the Base USDC, canonical Permit2 and x402UptoPermit2Proxy addresses with `anvil_setCode`,
// as the sandbox does, and settles x402 `upto` payments through them with viem, some signed
// by the official x402 client (@x402/evm's UptoEvmScheme), some by hand from the EIP-712
// types. Prints one line per check and exits non-zero if any fails.
//
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node hosted/contracts/check.js
//
// anvil, the accounts, the placing of the code and the reporting are harness.js's.
const fs = require("fs");
const os = require("os");
const path = require("path");
const viem = require("viem");
const x402 = require("@x402/evm");
const harness = require("./harness");
const { USDC, PERMIT2, CHAIN_ID, NETWORK, artifact, usdcArtifact, permit2Artifact, withPermit2Errors } = harness;
const { anvilAccounts, check, assert, compileRuntime, revertOf, abiEntryText, encodeType, runChecks } = harness;

const PROXY = "0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002";

const proxyArtifact = artifact("SandboxUptoProxy");
// The proxy's ABI with the errors Permit2 may pass up through it, to name any revert.
const settleAbi = withPermit2Errors(proxyArtifact.abi);

// anvil's default accounts 0 to 5.
const accounts = anvilAccounts(["deployer", "facilitator", "payer", "payee", "newcomer", "stranger"]);

// The upto types as the x402 scheme defines them (written out here, not taken from @x402/evm,
// so that the hand-signed payments check the package's encoding independently).
const uptoTypes = {
  PermitWitnessTransferFrom: [
    { name: "permitted", type: "TokenPermissions" },
    { name: "spender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
    { name: "witness", type: "Witness" },
  ],
  TokenPermissions: [
    { name: "token", type: "address" },
    { name: "amount", type: "uint256" },
  ],
  Witness: [
    { name: "to", type: "address" },
    { name: "facilitator", type: "address" },
    { name: "validAfter", type: "uint256" },
  ],
};
const permit2Domain = { name: "Permit2", chainId: CHAIN_ID, verifyingContract: PERMIT2 };

// A minimal EIP-1271 wallet: valid signatures are those of the key whose address is in slot 0.
const WALLET_SOURCE = `// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;
contract CheckWallet {
    address public signer;
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 65) return 0xffffffff;
        address recovered =
            ecrecover(hash, uint8(signature[64]), bytes32(signature[0:32]), bytes32(signature[32:64]));
        return recovered != address(0) && recovered == signer ? bytes4(0x1626ba7e) : bytes4(0xffffffff);
    }
}
`;

function compareAbi(ours, reference) {
  const a = new Set(ours.map(abiEntryText));
  const b = new Set(reference.map(abiEntryText));
  const onlyOurs = [...a].filter((x) => !b.has(x));
  const onlyReference = [...b].filter((x) => !a.has(x));
  assert(
    onlyOurs.length === 0 && onlyReference.length === 0,
    `only ours: ${JSON.stringify(onlyOurs)}; only reference: ${JSON.stringify(onlyReference)}`,
  );
  return `${a.size} entries`;
}

/// The x402UptoPermit2Proxy ABI the Rust facilitator (x402-chain-eip155) is built from, if
/// that crate is in the cargo registry.
function rustReferenceAbi() {
  const registry = path.join(process.env.CARGO_HOME || path.join(os.homedir(), ".cargo"), "registry/src");
  if (!fs.existsSync(registry)) return null;
  for (const index of fs.readdirSync(registry)) {
    const dir = path.join(registry, index);
    for (const crate of fs.readdirSync(dir).filter((c) => c.startsWith("x402-chain-eip155-")).sort().reverse()) {
      const file = path.join(dir, crate, "abi/X402UptoPermit2Proxy.json");
      if (fs.existsSync(file)) return { crate, abi: JSON.parse(fs.readFileSync(file, "utf8")) };
    }
  }
  return null;
}

async function run({ publicClient, testClient, send, balanceChanges, place }) {
  const { deployer, facilitator, payer, payee, newcomer, stranger } = accounts;

  const allowance = (owner, spender) =>
    publicClient.readContract({ address: USDC, abi: usdcArtifact.abi, functionName: "allowance", args: [owner, spender] });
  const now = async () => (await publicClient.getBlock()).timestamp;
  const simulate = (account, functionName, args) =>
    publicClient.simulateContract({ address: PROXY, abi: settleAbi, functionName, args, account });
  const settle = (account, functionName, args) => send(account, PROXY, settleAbi, functionName, args);
  const emitted = (receipt, eventName) =>
    viem.parseEventLogs({ abi: proxyArtifact.abi, logs: receipt.logs }).some((log) => log.eventName === eventName);

  /// Signs an upto authorisation by hand; returns the arguments of `settle` after the amount.
  let nextNonce = 1n;
  async function signUpto(signer, { owner = signer.address, max, nonce, deadline, to = payee.address, validAfter = 0n, signedTo }) {
    nonce = nonce ?? nextNonce++;
    deadline = deadline ?? (await now()) + 600n;
    const permit = { permitted: { token: USDC, amount: max }, nonce, deadline };
    const witness = { to, facilitator: facilitator.address, validAfter };
    const signature = await signer.signTypedData({
      domain: permit2Domain,
      types: uptoTypes,
      primaryType: "PermitWitnessTransferFrom",
      message: { permitted: permit.permitted, spender: PROXY, nonce, deadline, witness: { ...witness, to: signedTo ?? to } },
    });
    return { permit, owner, witness, signature };
  }
  const settleArgs = (auth, amount) => [auth.permit, amount, auth.owner, auth.witness, auth.signature];

  /// A payment payload made by the official x402 `upto` client, as settle arguments.
  async function officialPayload(signerAccount, max, context) {
    const signer = {
      address: signerAccount.address,
      signTypedData: (message) => signerAccount.signTypedData(message),
      readContract: (args) => publicClient.readContract(args),
    };
    const requirements = {
      scheme: "upto",
      network: NETWORK,
      asset: USDC,
      amount: String(max),
      payTo: payee.address,
      maxTimeoutSeconds: 300,
      extra: { facilitatorAddress: facilitator.address, name: "USD Coin", version: "2" },
    };
    const result = await new x402.UptoEvmScheme(signer).createPaymentPayload(2, requirements, context);
    const a = result.payload.permit2Authorization;
    assert(viem.isAddressEqual(a.spender, PROXY), `the client signed for spender ${a.spender}`);
    const auth = {
      permit: { permitted: { token: a.permitted.token, amount: BigInt(a.permitted.amount) }, nonce: BigInt(a.nonce), deadline: BigInt(a.deadline) },
      owner: a.from,
      witness: { to: a.witness.to, facilitator: a.witness.facilitator, validAfter: BigInt(a.witness.validAfter) },
      signature: result.payload.signature,
    };
    return { auth, extensions: result.extensions };
  }

  // ---- static agreement with the reference ----

  await check("proxy ABI equals @x402/evm x402UptoPermit2ProxyABI", () =>
    compareAbi(proxyArtifact.abi, x402.x402UptoPermit2ProxyABI),
  );
  await check("proxy ABI equals the Rust facilitator's X402UptoPermit2Proxy.json", () => {
    const reference = rustReferenceAbi();
    if (!reference) return "skipped: no x402-chain-eip155 in the cargo registry";
    return `${reference.crate}, ${compareAbi(proxyArtifact.abi, reference.abi)}`;
  });
  await check("Permit2 stub + WITNESS_TYPE_STRING is viem's encoding of the x402 upto types", () => {
    const witnessTypeString = readConstantFromSource("WITNESS_TYPE_STRING");
    const ours =
      "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline," +
      witnessTypeString;
    for (const types of [uptoTypes, x402.uptoPermit2WitnessTypes]) {
      const theirs = encodeType("PermitWitnessTransferFrom", types);
      assert(theirs === ours, `viem encodes ${theirs}`);
    }
    return ours;
  });

  // ---- the sandbox as the hosted crate sets it up ----

  await check("runtime code placed at USDC, Permit2 and the upto proxy; USDC initialised and minted", async () => {
    await place({
      deployer,
      code: [[PROXY, proxyArtifact.runtime]],
      holders: [payer, newcomer],
      amount: 1_000_000n,
      approvers: [payer],
    });
  });
  await check("on-chain PERMIT2(), WITNESS_TYPEHASH(), WITNESS_TYPE_STRING(), DOMAIN_SEPARATOR()", async () => {
    const read = (address, abi, functionName) => publicClient.readContract({ address, abi, functionName });
    const permit2 = await read(PROXY, proxyArtifact.abi, "PERMIT2");
    assert(viem.isAddressEqual(permit2, PERMIT2), `PERMIT2() is ${permit2}`);
    const typehash = await read(PROXY, proxyArtifact.abi, "WITNESS_TYPEHASH");
    assert(typehash === viem.keccak256(viem.toHex("Witness(address to,address facilitator,uint256 validAfter)")), "WITNESS_TYPEHASH");
    const typeString = await read(PROXY, proxyArtifact.abi, "WITNESS_TYPE_STRING");
    assert(typeString === readConstantFromSource("WITNESS_TYPE_STRING"), `WITNESS_TYPE_STRING() is ${typeString}`);
    const separator = await read(PERMIT2, permit2Artifact.abi, "DOMAIN_SEPARATOR");
    assert(separator === viem.hashDomain({ domain: permit2Domain, types: { EIP712Domain: viem.getTypesForEIP712Domain({ domain: permit2Domain }) } }), "DOMAIN_SEPARATOR");
  });

  // ---- settle ----

  let official;
  await check("settle 12000 of max 20000, signed by @x402/evm UptoEvmScheme", async () => {
    official = await officialPayload(payer, 20_000n);
    const { out: receipt, changes } = await balanceChanges([payer.address, payee.address], () =>
      settle(facilitator, "settle", settleArgs(official.auth, 12_000n)),
    );
    assert(changes[0] === -12_000n && changes[1] === 12_000n, `balances moved ${changes}`);
    assert(emitted(receipt, "Settled"), "no Settled event");
    const nonce = official.auth.permit.nonce;
    const word = await publicClient.readContract({ address: PERMIT2, abi: permit2Artifact.abi, functionName: "nonceBitmap", args: [payer.address, nonce >> 8n] });
    assert((word >> (nonce & 255n)) & 1n, "nonce not marked used");
    return `payer ${changes[0]}, payee +${changes[1]}, gas ${receipt.gasUsed}`;
  });
  await check("the same signature again reverts InvalidNonce", async () => {
    assert(official, "needs the previous check");
    const name = await revertOf(() => simulate(facilitator, "settle", settleArgs(official.auth, 12_000n)));
    assert(name === "InvalidNonce", `reverted ${name}`);
  });
  await check("amount 20001 of max 20000 reverts AmountExceedsPermitted", async () => {
    const auth = await signUpto(payer, { max: 20_000n });
    const name = await revertOf(() => simulate(facilitator, "settle", settleArgs(auth, 20_001n)));
    assert(name === "AmountExceedsPermitted", `reverted ${name}`);
  });
  await check("a caller other than witness.facilitator reverts UnauthorizedFacilitator", async () => {
    const auth = await signUpto(payer, { max: 20_000n });
    const name = await revertOf(() => simulate(stranger, "settle", settleArgs(auth, 12_000n)));
    assert(name === "UnauthorizedFacilitator", `reverted ${name}`);
  });
  await check("an expired deadline reverts SignatureExpired", async () => {
    const auth = await signUpto(payer, { max: 20_000n, deadline: (await now()) - 1n });
    const name = await revertOf(() => simulate(facilitator, "settle", settleArgs(auth, 12_000n)));
    assert(name === "SignatureExpired", `reverted ${name}`);
  });
  await check("validAfter in the future reverts PaymentTooEarly", async () => {
    const auth = await signUpto(payer, { max: 20_000n, validAfter: (await now()) + 3600n });
    const name = await revertOf(() => simulate(facilitator, "settle", settleArgs(auth, 12_000n)));
    assert(name === "PaymentTooEarly", `reverted ${name}`);
  });
  await check("a signature for a different `to` reverts InvalidSigner", async () => {
    const auth = await signUpto(payer, { max: 20_000n, signedTo: stranger.address });
    const name = await revertOf(() => simulate(facilitator, "settle", settleArgs(auth, 12_000n)));
    assert(name === "InvalidSigner", `reverted ${name}`);
  });
  await check("owner 0 reverts InvalidOwner, to 0 reverts InvalidDestination", async () => {
    const auth = await signUpto(payer, { max: 20_000n });
    const noOwner = await revertOf(() => simulate(facilitator, "settle", settleArgs({ ...auth, owner: viem.zeroAddress }, 1n)));
    const noTo = await revertOf(() =>
      simulate(facilitator, "settle", settleArgs({ ...auth, witness: { ...auth.witness, to: viem.zeroAddress } }, 1n)),
    );
    assert(noOwner === "InvalidOwner" && noTo === "InvalidDestination", `reverted ${noOwner}, ${noTo}`);
  });
  await check("settle with a 64-byte EIP-2098 compact signature (nonce in word 1)", async () => {
    const auth = await signUpto(payer, { max: 3_000n, nonce: 256n + 7n });
    const compact = viem.serializeCompactSignature(viem.signatureToCompactSignature(viem.parseSignature(auth.signature)));
    const { changes } = await balanceChanges([payer.address, payee.address], () =>
      settle(facilitator, "settle", settleArgs({ ...auth, signature: compact }, 3_000n)),
    );
    assert(changes[0] === -3_000n && changes[1] === 3_000n, `balances moved ${changes}`);
  });
  await check("invalidateUnorderedNonces makes a signed nonce revert InvalidNonce", async () => {
    const nonce = (5n << 8n) | 42n;
    const auth = await signUpto(payer, { max: 1_000n, nonce });
    const receipt = await send(payer, PERMIT2, permit2Artifact.abi, "invalidateUnorderedNonces", [5n, 1n << 42n]);
    const events = viem.parseEventLogs({ abi: permit2Artifact.abi, logs: receipt.logs, eventName: "UnorderedNonceInvalidation" });
    assert(events.length === 1 && events[0].args.word === 5n && events[0].args.mask === 1n << 42n, "no UnorderedNonceInvalidation");
    const name = await revertOf(() => simulate(facilitator, "settle", settleArgs(auth, 1_000n)));
    assert(name === "InvalidNonce", `reverted ${name}`);
  });
  await check("Permit2 permitTransferFrom (no witness) for spender = caller", async () => {
    const permit = { permitted: { token: USDC, amount: 2_000n }, nonce: nextNonce++, deadline: (await now()) + 600n };
    const signature = await payer.signTypedData({
      domain: permit2Domain,
      types: {
        PermitTransferFrom: [
          { name: "permitted", type: "TokenPermissions" },
          { name: "spender", type: "address" },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
        TokenPermissions: uptoTypes.TokenPermissions,
      },
      primaryType: "PermitTransferFrom",
      message: { ...permit, spender: facilitator.address },
    });
    const details = { to: payee.address, requestedAmount: 1_500n };
    const { changes } = await balanceChanges([payer.address, payee.address], () =>
      send(facilitator, PERMIT2, permit2Artifact.abi, "permitTransferFrom", [permit, details, payer.address, signature]),
    );
    assert(changes[0] === -1_500n && changes[1] === 1_500n, `balances moved ${changes}`);
  });

  // ---- settleWithPermit ----

  let withPermit;
  await check("settleWithPermit 12000 of 20000 for an owner who never approved Permit2 (@x402/evm, eip2612GasSponsoring)", async () => {
    assert((await allowance(newcomer.address, PERMIT2)) === 0n, "newcomer already has an allowance");
    withPermit = await officialPayload(newcomer, 20_000n, { extensions: { eip2612GasSponsoring: {} } });
    const info = withPermit.extensions && withPermit.extensions.eip2612GasSponsoring && withPermit.extensions.eip2612GasSponsoring.info;
    assert(info, "the client made no EIP-2612 permit");
    const { r, s, v } = viem.parseSignature(info.signature);
    withPermit.permit2612 = { value: BigInt(info.amount), deadline: BigInt(info.deadline), r, s, v: Number(v) };
    const { out: receipt, changes } = await balanceChanges([newcomer.address, payee.address], () =>
      settle(facilitator, "settleWithPermit", [withPermit.permit2612, ...settleArgs(withPermit.auth, 12_000n)]),
    );
    assert(changes[0] === -12_000n && changes[1] === 12_000n, `balances moved ${changes}`);
    assert(emitted(receipt, "SettledWithPermit"), "no SettledWithPermit event");
    const left = await allowance(newcomer.address, PERMIT2);
    assert(left === 8_000n, `Permit2 allowance left ${left}`);
    return `allowance left ${left}, gas ${receipt.gasUsed}`;
  });
  await check("settleWithPermit again with the used EIP-2612 permit and a fresh Permit2 nonce", async () => {
    assert(withPermit && withPermit.permit2612, "needs the previous check");
    const auth = await signUpto(newcomer, { max: 8_000n });
    const { changes } = await balanceChanges([newcomer.address, payee.address], () =>
      settle(facilitator, "settleWithPermit", [withPermit.permit2612, ...settleArgs(auth, 5_000n)]),
    );
    assert(changes[0] === -5_000n && changes[1] === 5_000n, `balances moved ${changes}`);
  });
  await check("settleWithPermit with permit value below the permitted amount reverts Permit2612AmountMismatch", async () => {
    assert(withPermit && withPermit.permit2612, "needs the previous check");
    const auth = await signUpto(newcomer, { max: 20_001n });
    const name = await revertOf(() => simulate(facilitator, "settleWithPermit", [withPermit.permit2612, ...settleArgs(auth, 1n)]));
    assert(name === "Permit2612AmountMismatch", `reverted ${name}`);
  });

  // ---- an EIP-1271 owner ----

  await check("EIP-1271 contract owner: settleWithPermit pays, a foreign key reverts InvalidContractSignature", async () => {
    const walletAddress = "0x00000000000000000000000000000000000c0de1";
    await testClient.setCode({ address: walletAddress, bytecode: compileRuntime("CheckWallet", WALLET_SOURCE) });
    await testClient.setStorageAt({ address: walletAddress, index: 0, value: viem.pad(stranger.address) });
    await send(deployer, USDC, usdcArtifact.abi, "mint", [walletAddress, 50_000n]);
    const nonce = await publicClient.readContract({ address: USDC, abi: usdcArtifact.abi, functionName: "nonces", args: [walletAddress] });
    const deadline = (await now()) + 600n;
    const permitSignature = await stranger.signTypedData({
      domain: { name: "USD Coin", version: "2", chainId: CHAIN_ID, verifyingContract: USDC },
      types: {
        Permit: [
          { name: "owner", type: "address" },
          { name: "spender", type: "address" },
          { name: "value", type: "uint256" },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
      },
      primaryType: "Permit",
      message: { owner: walletAddress, spender: PERMIT2, value: 10_000n, nonce, deadline },
    });
    const { r, s, v } = viem.parseSignature(permitSignature);
    const permit2612 = { value: 10_000n, deadline, r, s, v: Number(v) };
    const foreign = await signUpto(payer, { owner: walletAddress, max: 10_000n });
    const name = await revertOf(() => simulate(facilitator, "settleWithPermit", [permit2612, ...settleArgs(foreign, 4_000n)]));
    assert(name === "InvalidContractSignature", `a foreign key's signature reverted ${name}`);
    const auth = await signUpto(stranger, { owner: walletAddress, max: 10_000n });
    const { changes } = await balanceChanges([walletAddress, payee.address], () =>
      settle(facilitator, "settleWithPermit", [permit2612, ...settleArgs(auth, 4_000n)]),
    );
    assert(changes[0] === -4_000n && changes[1] === 4_000n, `balances moved ${changes}`);
  });
}

/// A string constant as written in SandboxUptoProxy.sol, to compare the chain's answer with.
function readConstantFromSource(name) {
  const source = fs.readFileSync(path.join(__dirname, "SandboxUptoProxy.sol"), "utf8");
  const match = new RegExp(`string public constant ${name} =\\s*"([^"]*)"`).exec(source);
  if (!match) throw new Error(`no string constant ${name} in SandboxUptoProxy.sol`);
  return match[1];
}

runChecks(run);
