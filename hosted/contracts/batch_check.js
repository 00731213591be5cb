// Tries SandboxBatchEscrow (the x402 `batch-settlement` escrow) with the official x402
// TypeScript stack on a scratch anvil: puts the runtime code of SandboxUsdc.json,
// SandboxPermit2.json and SandboxBatchEscrow.json (build.js writes them) at the Base USDC,
// canonical Permit2, escrow and both deposit-collector addresses with `anvil_setCode`, as the
// sandbox would, and a small Multicall3 (`tryAggregate` only, compiled here) at the Multicall3
// address, which the package's facilitator reads channel state through. Then a resource server
// (@x402/core's x402HTTPResourceServer with @x402/evm's batch-settlement server scheme, on a
// local HTTP port), its facilitator (x402Facilitator with the batch-settlement facilitator
// scheme, in process) and a payer (@x402/fetch with the batch-settlement client scheme) do what
// a service and its callers do: one deposit, 100 paid calls each carrying a cumulative voucher,
// claims in a few batch transactions, a sweep to the receiver, a cooperative refund of the
// rest, a Permit2 deposit (with and without a sponsored EIP-2612 permit), and a payer's own
// withdrawal after the channel's delay. Balances and the channel state are compared to the
// atomic unit. Prints one line per check and exits non-zero if any fails.
//
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node hosted/contracts/batch_check.js [--wire]
//
// --wire also prints the decoded x402 messages of the run (a 402's PaymentRequired, the
// deposit, voucher and refund PaymentPayloads and their PAYMENT-RESPONSEs, the facilitator's
// verify answer to the deposit, its claim and refund settle payloads) as JSON after the checks.
//
// anvil, the accounts, the placing of the code and the reporting are harness.js's.
const fs = require("fs");
const http = require("http");
const vm = require("vm");
const viem = require("viem");
const x402 = require("@x402/evm");
const { x402Client } = require("@x402/core/client");
const { x402Facilitator } = require("@x402/core/facilitator");
const { x402ResourceServer, x402HTTPResourceServer } = require("@x402/core/server");
const {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
} = require("@x402/core/http");
const { wrapFetchWithPayment } = require("@x402/fetch");
const batchClient = require("@x402/evm/batch-settlement/client");
const batchServer = require("@x402/evm/batch-settlement/server");
const batchFacilitator = require("@x402/evm/batch-settlement/facilitator");
const harness = require("./harness");
const { USDC, CHAIN_ID, NETWORK, artifact, withPermit2Errors, anvilAccounts, check, assert, freePort } = harness;
const { compileRuntime, revertOf, abiEntryText, encodeType, runChecks } = harness;

const ESCROW = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003";
const ERC3009_COLLECTOR = "0x4020806089470a89826cB9fB1f4059150b550004";
const PERMIT2_COLLECTOR = "0x4020425FAf3B746C082C2f942b4E5159887B0005";
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";

const PRICE = 1_000n; // atomic units (0.001 USDC) per call
const CALLS = 100;
const DEPOSIT = 150_000n; // the route's extra.minDeposit, so the client deposits this once
const PERMIT2_DEPOSIT = 20_000n; // extra.minDeposit of the Permit2 route
const WITHDRAW_DELAY = 900; // the package's minimum and the server scheme's default
const MINTED = 1_000_000n;
const wireWanted = process.argv.includes("--wire");

const escrowArtifact = artifact("SandboxBatchEscrow");
// The escrow's ABI with the errors of the token and Permit2 below it, to name any revert.
const escrowAbi = withPermit2Errors(escrowArtifact.abi);

// anvil's default accounts 0 to 7.
const roles = ["deployer", "facilitator", "payer", "payee", "authorizer", "permit2Payer", "sponsoredPayer", "stranger"];
const accounts = anvilAccounts(roles);

// The batch-settlement EIP-712 domain and types as the package defines them, written out here
// (not taken from @x402/evm) so that the hand-signed messages check the package's encoding
// independently; "types agree with the package" compares the two.
const escrowDomain = { name: "x402 Batch Settlement", version: "1", chainId: CHAIN_ID, verifyingContract: ESCROW };
const channelConfigFields = [
  { name: "payer", type: "address" },
  { name: "payerAuthorizer", type: "address" },
  { name: "receiver", type: "address" },
  { name: "receiverAuthorizer", type: "address" },
  { name: "token", type: "address" },
  { name: "withdrawDelay", type: "uint40" },
  { name: "salt", type: "bytes32" },
];
const types = {
  ChannelConfig: { ChannelConfig: channelConfigFields },
  Voucher: {
    Voucher: [
      { name: "channelId", type: "bytes32" },
      { name: "maxClaimableAmount", type: "uint128" },
    ],
  },
  Refund: {
    Refund: [
      { name: "channelId", type: "bytes32" },
      { name: "nonce", type: "uint256" },
      { name: "amount", type: "uint128" },
    ],
  },
  ClaimBatch: {
    ClaimBatch: [{ name: "claims", type: "ClaimEntry[]" }],
    ClaimEntry: [
      { name: "channelId", type: "bytes32" },
      { name: "maxClaimableAmount", type: "uint128" },
      { name: "totalClaimed", type: "uint128" },
    ],
  },
  PermitWitnessTransferFrom: {
    PermitWitnessTransferFrom: [
      { name: "permitted", type: "TokenPermissions" },
      { name: "spender", type: "address" },
      { name: "nonce", type: "uint256" },
      { name: "deadline", type: "uint256" },
      { name: "witness", type: "DepositWitness" },
    ],
    TokenPermissions: [
      { name: "token", type: "address" },
      { name: "amount", type: "uint256" },
    ],
    DepositWitness: [{ name: "channelId", type: "bytes32" }],
  },
};

// A Multicall3 stand-in: only `tryAggregate`, the one call the package's facilitator makes.
const MULTICALL_SOURCE = `// SPDX-License-Identifier: MIT OR Apache-2.0
pragma solidity ^0.8.20;
contract CheckMulticall3 {
    struct Call { address target; bytes callData; }
    struct Result { bool success; bytes returnData; }
    function tryAggregate(bool requireSuccess, Call[] calldata calls) external payable returns (Result[] memory results) {
        results = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; i++) {
            (bool ok, bytes memory answer) = calls[i].target.call(calls[i].callData);
            require(ok || !requireSuccess, "CheckMulticall3: call failed");
            results[i] = Result(ok, answer);
        }
    }
}
`;

/// The batch-settlement constants, EIP-712 types and contract ABI of the installed @x402/evm.
/// The package keeps them internal (its bundles do not export them), so they are read from the
/// bundle's own `src/batch-settlement/constants.ts` and `abi.ts` sections.
function packageReference() {
  const file = require.resolve("@x402/evm/batch-settlement/facilitator");
  const text = fs.readFileSync(file, "utf8");
  const section = (name) => {
    const start = text.indexOf(`// src/batch-settlement/${name}.ts\n`);
    if (start < 0) throw new Error(`no ${name}.ts section in ${file}`);
    const end = text.indexOf("\n// src/", start + 1);
    return text.slice(start, end < 0 ? undefined : end);
  };
  const names = [
    "batchSettlementABI",
    "BATCH_SETTLEMENT_ADDRESS",
    "ERC3009_DEPOSIT_COLLECTOR_ADDRESS",
    "PERMIT2_DEPOSIT_COLLECTOR_ADDRESS",
    "MIN_WITHDRAW_DELAY",
    "MAX_WITHDRAW_DELAY",
    "BATCH_SETTLEMENT_DOMAIN",
    "CHANNEL_CONFIG_TYPEHASH",
    "channelConfigTypes",
    "voucherTypes",
    "refundTypes",
    "claimBatchTypes",
    "batchPermit2WitnessTypes",
  ];
  const code = `${section("constants")}\n${section("abi")}\n;({ ${names.join(", ")} })`;
  return vm.runInNewContext(code, { require });
}

/// JSON round trip, as a message between two processes would take (bigints become strings).
const wire = (value) => JSON.parse(JSON.stringify(value, (_, v) => (typeof v === "bigint" ? v.toString() : v)));

async function run({ publicClient, testClient, wallet, send, balanceOf, balanceChanges, place }) {
  const { deployer, facilitator, payer, payee, authorizer, permit2Payer, sponsoredPayer, stranger } = accounts;
  const reference = packageReference();

  const read = (functionName, args = []) =>
    publicClient.readContract({ address: ESCROW, abi: escrowAbi, functionName, args });
  const simulate = (account, functionName, args, address = ESCROW) =>
    publicClient.simulateContract({ address, abi: escrowAbi, functionName, args, account });
  const channel = async (channelId) => {
    const [balance, totalClaimed] = await read("channels", [channelId]);
    return { balance, totalClaimed };
  };
  const receiverTotals = async () => {
    const [totalClaimed, totalSettled] = await read("receivers", [payee.address, USDC]);
    return { totalClaimed, totalSettled };
  };
  const gasOf = async (hash) => (await publicClient.getTransactionReceipt({ hash })).gasUsed;
  const events = (receipt, eventName) =>
    viem.parseEventLogs({ abi: escrowArtifact.abi, logs: receipt.logs, eventName }).filter((log) =>
      viem.isAddressEqual(log.address, ESCROW),
    );

  // ---- static agreement with the package ----

  await check("every function and event of the package's batchSettlementABI is in ours, unchanged", () => {
    const ours = new Set(escrowArtifact.abi.map(abiEntryText));
    const missing = reference.batchSettlementABI.map(abiEntryText).filter((x) => !ours.has(x));
    assert(missing.length === 0, `missing or different: ${JSON.stringify(missing)}`);
    const theirs = new Set(reference.batchSettlementABI.map(abiEntryText));
    const extra = escrowArtifact.abi.filter((item) => !theirs.has(abiEntryText(item)));
    const count = (type) => extra.filter((item) => item.type === type).length;
    return `${reference.batchSettlementABI.length} entries; ours adds ${count("function")} functions, ${count("event")} events, ${count("error")} errors`;
  });
  await check("addresses, withdraw-delay bounds and EIP-712 types agree with the package", () => {
    assert(reference.BATCH_SETTLEMENT_ADDRESS === ESCROW, `escrow ${reference.BATCH_SETTLEMENT_ADDRESS}`);
    assert(reference.ERC3009_DEPOSIT_COLLECTOR_ADDRESS === ERC3009_COLLECTOR, "ERC-3009 collector");
    assert(reference.PERMIT2_DEPOSIT_COLLECTOR_ADDRESS === PERMIT2_COLLECTOR, "Permit2 collector");
    assert(reference.MIN_WITHDRAW_DELAY === WITHDRAW_DELAY && reference.MAX_WITHDRAW_DELAY === 2_592_000, "delays");
    assert(
      reference.BATCH_SETTLEMENT_DOMAIN.name === escrowDomain.name &&
        reference.BATCH_SETTLEMENT_DOMAIN.version === escrowDomain.version,
      "domain",
    );
    const pairs = [
      ["ChannelConfig", types.ChannelConfig, reference.channelConfigTypes],
      ["Voucher", types.Voucher, reference.voucherTypes],
      ["Refund", types.Refund, reference.refundTypes],
      ["ClaimBatch", types.ClaimBatch, reference.claimBatchTypes],
      ["PermitWitnessTransferFrom", types.PermitWitnessTransferFrom, reference.batchPermit2WitnessTypes],
    ];
    for (const [primaryType, ours, theirs] of pairs) {
      assert(encodeType(primaryType, ours) === encodeType(primaryType, theirs), `${primaryType} differs`);
    }
    return pairs.length + " types";
  });

  // ---- the sandbox chain ----

  await check("runtime code placed at USDC, Permit2, the escrow, both collectors and Multicall3", async () => {
    await place({
      deployer,
      code: [
        ...[ESCROW, ERC3009_COLLECTOR, PERMIT2_COLLECTOR].map((address) => [address, escrowArtifact.runtime]),
        [MULTICALL3, compileRuntime("CheckMulticall3", MULTICALL_SOURCE)],
      ],
      holders: [payer, permit2Payer, sponsoredPayer],
      amount: MINTED,
      approvers: [permit2Payer],
    });
  });
  await check("on-chain type hashes and domain separator are those of the EIP-712 types", async () => {
    const hashes = {
      CHANNEL_CONFIG_TYPEHASH: ["ChannelConfig", types.ChannelConfig],
      VOUCHER_TYPEHASH: ["Voucher", types.Voucher],
      REFUND_TYPEHASH: ["Refund", types.Refund],
      CLAIM_BATCH_TYPEHASH: ["ClaimBatch", types.ClaimBatch],
    };
    for (const [constant, [primaryType, t]] of Object.entries(hashes)) {
      const onChain = await read(constant);
      assert(onChain === viem.keccak256(viem.toHex(encodeType(primaryType, t))), constant);
    }
    assert((await read("CHANNEL_CONFIG_TYPEHASH")) === reference.CHANNEL_CONFIG_TYPEHASH, "package typehash");
    const witness = await read("DEPOSIT_WITNESS_TYPE_STRING");
    const stub = "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";
    assert(stub + witness === encodeType("PermitWitnessTransferFrom", types.PermitWitnessTransferFrom), witness);
    const separator = await read("DOMAIN_SEPARATOR");
    assert(separator === viem.hashDomain({ domain: escrowDomain, types: { EIP712Domain: viem.getTypesForEIP712Domain({ domain: escrowDomain }) } }), "domain separator");
  });

  // ---- facilitator, resource server and payer, as the package wires them ----

  const facilitatorWallet = wallet(facilitator).extend(viem.publicActions);
  const facilitatorSigner = x402.toFacilitatorEvmSigner({
    address: facilitator.address,
    readContract: (args) => facilitatorWallet.readContract(args),
    verifyTypedData: (args) => facilitatorWallet.verifyTypedData(args),
    writeContract: (args) => facilitatorWallet.writeContract(args),
    sendTransaction: (args) => facilitatorWallet.sendTransaction(args),
    waitForTransactionReceipt: (args) => facilitatorWallet.waitForTransactionReceipt(args),
    getCode: (args) => facilitatorWallet.getCode(args),
  });
  // The facilitator holds the receiverAuthorizer key and advertises it in /supported, so the
  // server delegates claim and refund signatures to it.
  const authorizerSigner = { address: authorizer.address, signTypedData: (m) => authorizer.signTypedData(m) };
  const facilitatorCore = new x402Facilitator().register(
    NETWORK,
    new batchFacilitator.BatchSettlementEvmScheme(facilitatorSigner, authorizerSigner),
  );
  const facilitatorLog = [];
  // In process, with a JSON round trip each way as over HTTP.
  const facilitatorClient = {
    getSupported: async () => wire(facilitatorCore.getSupported()),
    verify: async (payload, requirements) => {
      const response = wire(await facilitatorCore.verify(wire(payload), wire(requirements)));
      facilitatorLog.push({ op: "verify", payload: wire(payload), requirements: wire(requirements), response });
      return response;
    },
    settle: async (payload, requirements) => {
      const response = wire(await facilitatorCore.settle(wire(payload), wire(requirements)));
      facilitatorLog.push({ op: "settle", payload: wire(payload), requirements: wire(requirements), response });
      return response;
    },
  };

  const serverScheme = new batchServer.BatchSettlementEvmScheme(payee.address, { withdrawDelay: WITHDRAW_DELAY });
  const resourceServer = new x402ResourceServer(facilitatorClient).register(NETWORK, serverScheme);
  const route = (minDeposit, extra = {}) => ({
    accepts: {
      scheme: "batch-settlement",
      payTo: payee.address,
      price: { amount: String(PRICE), asset: USDC, extra: { name: "USD Coin", version: "2", ...extra } },
      network: NETWORK,
      maxTimeoutSeconds: 300,
      extra: { minDeposit: String(minDeposit) },
    },
    description: "one paid call",
    mimeType: "application/json",
  });
  const httpServer = new x402HTTPResourceServer(resourceServer, {
    "GET /paid": route(DEPOSIT),
    "GET /permit2": route(PERMIT2_DEPOSIT, { assetTransferMethod: "permit2" }),
  });
  await httpServer.initialize();

  const wireLog = [];
  let handled = 0;
  const listener = http.createServer((req, res) => {
    serve(req, res).catch((e) => {
      res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(String(e && e.stack ? e.stack : e));
    });
  });
  async function serve(req, res) {
    const base = `http://${req.headers.host}`;
    const url = new URL(req.url, base);
    const header = (name) => {
      const value = req.headers[name.toLowerCase()];
      return Array.isArray(value) ? value[0] : value;
    };
    const adapter = {
      getHeader: header,
      getMethod: () => req.method,
      getPath: () => url.pathname,
      getUrl: () => url.href,
      getAcceptHeader: () => header("accept") || "",
      getUserAgent: () => header("user-agent") || "",
    };
    const context = { adapter, path: url.pathname, method: req.method };
    const entry = { path: url.pathname };
    const signature = header("payment-signature");
    if (signature) entry.paymentPayload = decodePaymentSignatureHeader(signature);
    wireLog.push(entry);
    const reply = (status, headers, body) => {
      entry.status = status;
      const find = (name) => Object.entries(headers).find(([k]) => k.toLowerCase() === name.toLowerCase());
      if (find("payment-required")) entry.paymentRequired = decodePaymentRequiredHeader(find("payment-required")[1]);
      if (find("payment-response")) entry.paymentResponse = decodePaymentResponseHeader(find("payment-response")[1]);
      res.writeHead(status, headers);
      res.end(body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body));
    };
    const result = await httpServer.processHTTPRequest(context);
    if (result.type === "no-payment-required") return reply(200, { "Content-Type": "application/json" }, { free: true });
    if (result.type === "payment-error") return reply(result.response.status, result.response.headers, result.response.body);
    handled += 1;
    const body = JSON.stringify({ call: handled });
    const settled = await httpServer.processSettlement(
      result.paymentPayload,
      result.paymentRequirements,
      result.declaredExtensions,
      { request: context, responseBody: Buffer.from(body) },
      undefined,
      result.beforeHandlerSettlement,
    );
    if (!settled.success) return reply(settled.response.status, settled.response.headers, settled.response.body);
    return reply(200, { "Content-Type": "application/json", ...settled.headers }, body);
  }
  const httpPort = await freePort();
  await new Promise((resolve) => listener.listen(httpPort, "127.0.0.1", resolve));
  const service = `http://127.0.0.1:${httpPort}`;

  /// A payer as an x402 client: the batch-settlement client scheme behind @x402/fetch.
  function payerClient(account) {
    const signer = x402.toClientEvmSigner(
      { address: account.address, signTypedData: (m) => account.signTypedData(m) },
      publicClient,
    );
    const scheme = new batchClient.BatchSettlementEvmScheme(signer, { storage: new batchClient.InMemoryClientChannelStorage() });
    const client = new x402Client().register(NETWORK, scheme);
    return { scheme, signer, fetch: wrapFetchWithPayment(globalThis.fetch, client) };
  }
  async function paidCall(client, routePath) {
    const response = await client.fetch(`${service}${routePath}`);
    const text = await response.text();
    assert(response.status === 200, `${routePath} answered ${response.status}: ${text.slice(0, 200)}`);
    const header = response.headers.get("PAYMENT-RESPONSE");
    return { body: JSON.parse(text), settle: header ? decodePaymentResponseHeader(header) : undefined };
  }

  const alice = payerClient(payer);
  const bob = payerClient(permit2Payer);
  const manager = serverScheme.createChannelManager(facilitatorClient, NETWORK, USDC);
  let requirements; // of /paid, from its first 402
  let config; // the payer's channel
  let channelId;
  const gas = {};
  const claimed = []; // claim transactions: label, rows, gas
  let refundPayload; // the facilitator's settle payload of the payer-requested refund

  try {
    await check("an unpaid call gets a 402 with batch-settlement requirements", async () => {
      const response = await fetch(`${service}/paid`);
      assert(response.status === 402, `status ${response.status}`);
      const required = decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED"));
      requirements = required.accepts.find((a) => a.scheme === "batch-settlement");
      assert(requirements, "no batch-settlement offer");
      const extra = requirements.extra;
      assert(viem.isAddressEqual(extra.receiverAuthorizer, authorizer.address), `receiverAuthorizer ${extra.receiverAuthorizer}`);
      assert(extra.withdrawDelay === WITHDRAW_DELAY && extra.minDeposit === String(DEPOSIT), JSON.stringify(extra));
      config = alice.scheme.buildChannelConfig(requirements);
      channelId = batchClient.computeChannelId(config, NETWORK);
      return `amount ${requirements.amount}, minDeposit ${extra.minDeposit}`;
    });
    await check("getChannelId and the digest helpers equal viem's EIP-712 hashes", async () => {
      assert((await read("getChannelId", [config])) === channelId, "getChannelId");
      const typed = (primaryType, message) => viem.hashTypedData({ domain: escrowDomain, types: types[primaryType], primaryType, message });
      assert(channelId === typed("ChannelConfig", config), "channel id rule");
      assert((await read("getVoucherDigest", [channelId, 12_345n])) === typed("Voucher", { channelId, maxClaimableAmount: 12_345n }), "voucher");
      assert((await read("getRefundDigest", [channelId, 7n, 99n])) === typed("Refund", { channelId, nonce: 7n, amount: 99n }), "refund");
      const rows = [
        { voucher: { channel: config, maxClaimableAmount: 5n }, signature: "0x", totalClaimed: 4n },
        { voucher: { channel: { ...config, salt: viem.pad("0x01") }, maxClaimableAmount: 9n }, signature: "0x", totalClaimed: 9n },
      ];
      const entries = rows.map((r) => ({
        channelId: typed("ChannelConfig", r.voucher.channel),
        maxClaimableAmount: r.voucher.maxClaimableAmount,
        totalClaimed: r.totalClaimed,
      }));
      assert((await read("getClaimBatchDigest", [rows])) === typed("ClaimBatch", { claims: entries }), "claim batch");
      assert((await read("getClaimBatchDigest", [[]])) === typed("ClaimBatch", { claims: [] }), "empty claim batch");
    });

    // ---- one deposit, then vouchers ----

    await check(`call 1 deposits ${DEPOSIT} through the ERC-3009 collector (official client and facilitator)`, async () => {
      const { changes, out } = await balanceChanges([payer.address, ESCROW, ERC3009_COLLECTOR], () => paidCall(alice, "/paid"));
      assert(out.settle && out.settle.success && out.settle.transaction, "no settled deposit");
      assert(changes[0] === -DEPOSIT && changes[1] === DEPOSIT && changes[2] === 0n, `balances moved ${changes}`);
      const ch = await channel(channelId);
      assert(ch.balance === DEPOSIT && ch.totalClaimed === 0n, `channel ${ch.balance}/${ch.totalClaimed}`);
      const entry = wireLog.find((e) => e.paymentPayload && e.paymentPayload.payload.type === "deposit");
      assert(entry.paymentPayload.payload.voucher.maxClaimableAmount === String(PRICE), "first voucher");
      gas.deposit = await gasOf(out.settle.transaction);
      return `gas ${gas.deposit}`;
    });

    async function claimNow(label, expectRows) {
      const results = await manager.claim();
      assert(results.length === 1, `${results.length} claim transactions`);
      assert(results[0].vouchers === expectRows, `${results[0].vouchers} rows, expected ${expectRows}`);
      const used = await gasOf(results[0].transaction);
      claimed.push({ label, rows: results[0].vouchers, gas: used });
      return { used, receipt: await publicClient.getTransactionReceipt({ hash: results[0].transaction }) };
    }

    await check("calls 2 to 40 pay by voucher only; no token moves", async () => {
      const { changes } = await balanceChanges([payer.address, ESCROW], async () => {
        for (let i = 2; i <= 40; i += 1) await paidCall(alice, "/paid");
      });
      assert(changes[0] === 0n && changes[1] === 0n, `balances moved ${changes}`);
      const last = wireLog.filter((e) => e.paymentPayload && e.path === "/paid").pop().paymentPayload.payload;
      assert(last.type === "voucher" && last.voucher.maxClaimableAmount === String(40n * PRICE), `last voucher ${last.voucher.maxClaimableAmount}`);
    });
    await check("claim batch 1 (claimWithSignature by the facilitator) raises totalClaimed to 40000", async () => {
      const { used } = await claimNow("after call 40", 1);
      const ch = await channel(channelId);
      assert(ch.totalClaimed === 40n * PRICE && ch.balance === DEPOSIT, `channel ${ch.balance}/${ch.totalClaimed}`);
      return `gas ${used}`;
    });
    await check("calls 41 to 70, claim batch 2 raises totalClaimed to 70000", async () => {
      for (let i = 41; i <= 70; i += 1) await paidCall(alice, "/paid");
      const { used } = await claimNow("after call 70", 1);
      const ch = await channel(channelId);
      assert(ch.totalClaimed === 70n * PRICE, `totalClaimed ${ch.totalClaimed}`);
      return `gas ${used}`;
    });

    let bobConfig;
    let bobChannelId;
    await check(`a second payer deposits ${PERMIT2_DEPOSIT} through the Permit2 collector and makes 5 calls`, async () => {
      const { changes, out } = await balanceChanges([permit2Payer.address, ESCROW, PERMIT2_COLLECTOR], () => paidCall(bob, "/permit2"));
      assert(changes[0] === -PERMIT2_DEPOSIT && changes[1] === PERMIT2_DEPOSIT && changes[2] === 0n, `balances moved ${changes}`);
      const deposit = wireLog.filter((e) => e.paymentPayload && e.path === "/permit2")[0].paymentPayload.payload;
      assert(deposit.deposit.authorization.permit2Authorization, "not a Permit2 deposit");
      for (let i = 2; i <= 5; i += 1) await paidCall(bob, "/permit2");
      bobConfig = bob.scheme.buildChannelConfig(requirements);
      bobChannelId = batchClient.computeChannelId(bobConfig, NETWORK);
      const ch = await channel(bobChannelId);
      assert(ch.balance === PERMIT2_DEPOSIT, `channel balance ${ch.balance}`);
      return `gas ${await gasOf(out.settle.transaction)}`;
    });

    let lastBatch;
    await check(`calls 71 to ${CALLS}; claim batch 3 claims both channels in one transaction`, async () => {
      for (let i = 71; i <= CALLS; i += 1) await paidCall(alice, "/paid");
      const { used, receipt } = await claimNow(`after call ${CALLS}`, 2);
      lastBatch = facilitatorLog.filter((e) => e.op === "settle" && e.payload.payload.type === "claim").pop();
      const claimedEvents = events(receipt, "Claimed");
      assert(claimedEvents.length === 2, `${claimedEvents.length} Claimed events`);
      const a = await channel(channelId);
      const b = await channel(bobChannelId);
      assert(a.totalClaimed === BigInt(CALLS) * PRICE && b.totalClaimed === 5n * PRICE, `totals ${a.totalClaimed}, ${b.totalClaimed}`);
      return `gas ${used} for 2 rows`;
    });
    await check("settle sweeps the claimed 105000 to the receiver", async () => {
      const { changes, out } = await balanceChanges([payee.address, ESCROW], () => manager.settle());
      const expected = (BigInt(CALLS) + 5n) * PRICE;
      assert(changes[0] === expected && changes[1] === -expected, `balances moved ${changes}`);
      const totals = await receiverTotals();
      assert(totals.totalClaimed === expected && totals.totalSettled === expected, JSON.stringify(wire(totals)));
      gas.settle = await gasOf(out.transaction);
      return `gas ${gas.settle}`;
    });

    // ---- replays and limits ----

    const claimArgs = (rows) =>
      rows.map((c) => ({
        voucher: {
          channel: { ...c.voucher.channel, withdrawDelay: Number(c.voucher.channel.withdrawDelay) },
          maxClaimableAmount: BigInt(c.voucher.maxClaimableAmount),
        },
        signature: c.signature,
        totalClaimed: BigInt(c.totalClaimed),
      }));
    const signBatch = (signer, rows) =>
      signer.signTypedData({
        domain: escrowDomain,
        types: types.ClaimBatch,
        primaryType: "ClaimBatch",
        message: {
          claims: rows.map((r) => ({
            channelId: viem.hashTypedData({ domain: escrowDomain, types: types.ChannelConfig, primaryType: "ChannelConfig", message: r.voucher.channel }),
            maxClaimableAmount: r.voucher.maxClaimableAmount,
            totalClaimed: r.totalClaimed,
          })),
        },
      });
    const voucherOfCall = (n) => wireLog.filter((e) => e.paymentPayload && e.path === "/paid")[n - 1].paymentPayload.payload;
    const signedVoucher = async (signer, max) =>
      signer.signTypedData({ domain: escrowDomain, types: types.Voucher, primaryType: "Voucher", message: { channelId, maxClaimableAmount: max } });

    await check("the last claim batch submitted again (same authorizer signature) moves nothing", async () => {
      const rows = claimArgs(lastBatch.payload.payload.claims);
      const signature = await signBatch(authorizer, rows);
      const before = { a: await channel(channelId), r: await receiverTotals() };
      const { changes, out: receipt } = await balanceChanges([payer.address, payee.address, ESCROW], () =>
        send(stranger, ESCROW, escrowAbi, "claimWithSignature", [rows, signature]),
      );
      const after = { a: await channel(channelId), r: await receiverTotals() };
      assert(changes.every((c) => c === 0n), `balances moved ${changes}`);
      assert(events(receipt, "Claimed").length === 0, "Claimed emitted");
      assert(JSON.stringify(wire(before)) === JSON.stringify(wire(after)), "state changed");
      return `submitted by a stranger, gas ${receipt.gasUsed}`;
    });
    await check("an older, lower voucher (call 50's) claimed by the receiver moves nothing", async () => {
      const v = voucherOfCall(50);
      assert(v.voucher.maxClaimableAmount === String(50n * PRICE), `call 50 signed ${v.voucher.maxClaimableAmount}`);
      const row = { voucher: { channel: config, maxClaimableAmount: 50n * PRICE }, signature: v.voucher.signature, totalClaimed: 50n * PRICE };
      const before = await receiverTotals();
      const { changes, out: receipt } = await balanceChanges([payer.address, payee.address, ESCROW], () =>
        send(payee, ESCROW, escrowAbi, "claim", [[row]]),
      );
      assert(changes.every((c) => c === 0n) && events(receipt, "Claimed").length === 0, `balances moved ${changes}`);
      const ch = await channel(channelId);
      assert(ch.totalClaimed === BigInt(CALLS) * PRICE, `totalClaimed ${ch.totalClaimed}`);
      assert(JSON.stringify(wire(before)) === JSON.stringify(wire(await receiverTotals())), "receiver totals changed");
    });
    await check("the facilitator rejects call 50's voucher sent again (cumulative below claimed)", async () => {
      const payload = { x402Version: 2, accepted: requirements, payload: voucherOfCall(50) };
      const verdict = await facilitatorClient.verify(payload, requirements);
      assert(!verdict.isValid && verdict.invalidReason === "invalid_batch_settlement_evm_cumulative_below_claimed", JSON.stringify(verdict));
      return verdict.invalidReason;
    });
    await check("the service answers call 99's payment sent again with a 402, and charges nothing", async () => {
      const old = wireLog.filter((e) => e.paymentPayload && e.path === "/paid")[98];
      const header = Buffer.from(JSON.stringify(old.paymentPayload)).toString("base64");
      const before = await serverScheme.getStorage().get(channelId);
      const response = await fetch(`${service}/paid`, { headers: { "PAYMENT-SIGNATURE": header } });
      await response.text();
      const after = await serverScheme.getStorage().get(channelId);
      assert(response.status === 402, `status ${response.status}`);
      assert(after.chargedCumulativeAmount === before.chargedCumulativeAmount, "charged again");
      return `error ${decodePaymentRequiredHeader(response.headers.get("PAYMENT-REQUIRED")).error}`;
    });
    await check("claims above the voucher, above the deposit, with a forged voucher or by a stranger revert", async () => {
      const max = 120_000n;
      const good = await signedVoucher(payer, max);
      const overVoucher = await revertOf(() =>
        simulate(payee, "claim", [[{ voucher: { channel: config, maxClaimableAmount: max }, signature: good, totalClaimed: max + 1n }]]),
      );
      const big = 200_000n;
      const overBalance = await revertOf(async () =>
        simulate(payee, "claim", [[{ voucher: { channel: config, maxClaimableAmount: big }, signature: await signedVoucher(payer, big), totalClaimed: DEPOSIT + 1n }]]),
      );
      const forged = await revertOf(async () =>
        simulate(payee, "claim", [[{ voucher: { channel: config, maxClaimableAmount: max }, signature: await signedVoucher(stranger, max), totalClaimed: max }]]),
      );
      const row = { voucher: { channel: config, maxClaimableAmount: max }, signature: good, totalClaimed: max };
      const byStranger = await revertOf(() => simulate(stranger, "claim", [[row]]));
      const strangerBatch = await revertOf(async () => simulate(stranger, "claimWithSignature", [[row], await signBatch(stranger, [row])]));
      const empty = await revertOf(() => simulate(payee, "claim", [[]]));
      const got = [overVoucher, overBalance, forged, byStranger, strangerBatch, empty];
      const want = ["ClaimExceedsVoucher", "ClaimExceedsBalance", "InvalidVoucherSignature", "UnauthorizedCaller", "InvalidAuthorizerSignature", "EmptyBatch"];
      assert(JSON.stringify(got) === JSON.stringify(want), `reverted ${got.join(", ")}`);
      return got.join(", ");
    });
    await check("a collector takes calls from the escrow only; escrow functions fail at a collector", async () => {
      const collect = await revertOf(() =>
        simulate(stranger, "collect", [payer.address, USDC, 1n, channelId, "0x"], ERC3009_COLLECTOR),
      );
      const atCollector = await revertOf(() => simulate(stranger, "settle", [payee.address, USDC], PERMIT2_COLLECTOR));
      const unknown = await revertOf(() => simulate(stranger, "deposit", [config, 1n, stranger.address, "0x"]));
      assert(collect === "UnauthorizedCaller" && atCollector === "WrongAddress" && unknown === "UnknownCollector", `${collect}, ${atCollector}, ${unknown}`);
    });

    // ---- cooperative close ----

    await check(`the payer's refund request returns the unused ${DEPOSIT - BigInt(CALLS) * PRICE} (claim + refundWithSignature in one multicall)`, async () => {
      const { changes, out } = await balanceChanges([payer.address, payee.address, ESCROW], () => alice.scheme.refund(`${service}/paid`));
      const rest = DEPOSIT - BigInt(CALLS) * PRICE;
      assert(out.success, JSON.stringify(out));
      assert(changes[0] === rest && changes[1] === 0n && changes[2] === -rest, `balances moved ${changes}`);
      const ch = await channel(channelId);
      assert(ch.balance === BigInt(CALLS) * PRICE && ch.totalClaimed === BigInt(CALLS) * PRICE, `channel ${ch.balance}/${ch.totalClaimed}`);
      assert((await read("refundNonce", [channelId])) === 1n, "refund nonce");
      refundPayload = facilitatorLog.filter((e) => e.op === "settle" && e.payload.payload.type === "refund").pop();
      gas.refund = await gasOf(out.transaction);
      return `refunded ${out.amount}, gas ${gas.refund}`;
    });
    await check("the refund signature used again reverts InvalidRefundNonce; a direct refund needs the receiver side", async () => {
      const p = refundPayload.payload.payload;
      const cfg = { ...p.channelConfig, withdrawDelay: Number(p.channelConfig.withdrawDelay) };
      const signature = await authorizer.signTypedData({
        domain: escrowDomain,
        types: types.Refund,
        primaryType: "Refund",
        message: { channelId, nonce: BigInt(p.refundNonce), amount: BigInt(p.amount) },
      });
      const replay = await revertOf(() => simulate(stranger, "refundWithSignature", [cfg, BigInt(p.amount), BigInt(p.refundNonce), signature]));
      const direct = await revertOf(() => simulate(stranger, "refund", [cfg, 1n]));
      assert(replay === "InvalidRefundNonce" && direct === "UnauthorizedCaller", `${replay}, ${direct}`);
    });
    await check(`the payer paid exactly ${CALLS} x ${PRICE}; client and server dropped the closed channel`, async () => {
      const spent = MINTED - (await balanceOf(payer.address));
      assert(spent === BigInt(CALLS) * PRICE, `payer spent ${spent}`);
      // After a full refund the client drops its record of the channel, the server too.
      assert(!(await batchClient.hasChannel(alice.scheme.storage, channelId)), "the client still has a record");
      assert(!(await serverScheme.getStorage().get(channelId)), "the server still has a record");
      return `payer ${await balanceOf(payer.address)}, payee ${await balanceOf(payee.address)}`;
    });

    // ---- Permit2 with a sponsored EIP-2612 permit (no approval transaction) ----

    await check("a payer who never approved Permit2 deposits with an EIP-2612 permit (eip2612GasSponsoring)", async () => {
      const permit2Requirements = { ...requirements, extra: { ...requirements.extra, assetTransferMethod: "permit2" } };
      const carol = payerClient(sponsoredPayer);
      const created = await carol.scheme.createPaymentPayload(2, permit2Requirements, { extensions: { eip2612GasSponsoring: {} } });
      assert(created.extensions && created.extensions.eip2612GasSponsoring, "the client made no EIP-2612 permit");
      const payload = { x402Version: 2, accepted: permit2Requirements, payload: created.payload, extensions: created.extensions };
      const verdict = await facilitatorClient.verify(payload, permit2Requirements);
      assert(verdict.isValid, JSON.stringify(verdict));
      const { changes, out } = await balanceChanges([sponsoredPayer.address, ESCROW], () => facilitatorClient.settle(payload, permit2Requirements));
      assert(out.success, JSON.stringify(out));
      const amount = BigInt(created.payload.deposit.amount);
      assert(changes[0] === -amount && changes[1] === amount, `balances moved ${changes}`);
      return `deposited ${amount}, gas ${await gasOf(out.transaction)}`;
    });

    // ---- the same channel reopened, and closed by the service ----

    await check("the payer comes back: a top-up deposit reopens the channel, 3 calls, then the service closes it", async () => {
      const { changes } = await balanceChanges([payer.address], async () => {
        for (let i = 1; i <= 3; i += 1) await paidCall(alice, "/paid");
      });
      assert(changes[0] === -DEPOSIT, `payer moved ${changes[0]}`);
      const reopened = await channel(channelId);
      const charged = BigInt(CALLS + 3) * PRICE;
      assert(reopened.balance === BigInt(CALLS) * PRICE + DEPOSIT, `balance ${reopened.balance}`);
      const last = wireLog.filter((e) => e.paymentPayload && e.path === "/paid").pop().paymentPayload.payload;
      assert(last.voucher.maxClaimableAmount === String(charged), `last voucher ${last.voucher.maxClaimableAmount}`);
      // The receiver side closes: manager.refund claims the outstanding voucher and refunds the
      // rest in one multicall (claimWithSignature + refundWithSignature, nonce 1).
      const { changes: moved, out } = await balanceChanges([payer.address, ESCROW], () => manager.refund([channelId]));
      const rest = reopened.balance - charged;
      assert(out.length === 1 && moved[0] === rest && moved[1] === -rest, `balances moved ${moved}`);
      const ch = await channel(channelId);
      assert(ch.balance === charged && ch.totalClaimed === charged, `channel ${ch.balance}/${ch.totalClaimed}`);
      assert((await read("refundNonce", [channelId])) === 2n, "refund nonce");
      gas.serviceRefund = await gasOf(out[0].transaction);
      return `refunded ${rest}, gas ${gas.serviceRefund}`;
    });

    // ---- the payer's own withdrawal when the receiver does not close ----

    await check("withdrawal: initiate, finalize too early reverts, the receiver still claims during the delay, then the payer gets the rest", async () => {
      await paidCall(bob, "/permit2"); // a sixth call, voucher 6000, not yet claimed
      const initiated = await send(permit2Payer, ESCROW, escrowAbi, "initiateWithdraw", [bobConfig, 2n ** 128n - 1n]);
      const [, initiatedAt] = await read("pendingWithdrawals", [bobChannelId]);
      assert(initiatedAt > 0, "no pending withdrawal");
      const early = await revertOf(() => simulate(permit2Payer, "finalizeWithdraw", [bobConfig]));
      const byStranger = await revertOf(() => simulate(stranger, "finalizeWithdraw", [bobConfig]));
      assert(early === "WithdrawDelayNotElapsed" && byStranger === "UnauthorizedCaller", `${early}, ${byStranger}`);
      await claimNow("during the withdraw delay", 1);
      assert((await channel(bobChannelId)).totalClaimed === 6n * PRICE, "claim during the delay");
      await testClient.increaseTime({ seconds: WITHDRAW_DELAY });
      await testClient.mine({ blocks: 1 });
      const { changes, out: finalized } = await balanceChanges([permit2Payer.address, ESCROW], () =>
        send(permit2Payer, ESCROW, escrowAbi, "finalizeWithdraw", [bobConfig]),
      );
      const rest = PERMIT2_DEPOSIT - 6n * PRICE;
      assert(changes[0] === rest && changes[1] === -rest, `balances moved ${changes}`);
      const ch = await channel(bobChannelId);
      assert(ch.balance === 6n * PRICE && ch.totalClaimed === 6n * PRICE, `channel ${ch.balance}/${ch.totalClaimed}`);
      const again = await revertOf(() => simulate(permit2Payer, "finalizeWithdraw", [bobConfig]));
      assert(again === "NoPendingWithdrawal", `finalize again: ${again}`);
      gas.initiateWithdraw = initiated.gasUsed;
      gas.finalizeWithdraw = finalized.gasUsed;
      return `withdrew ${rest}, gas initiate ${initiated.gasUsed}, finalize ${finalized.gasUsed}`;
    });

    await check("final accounting to the atomic unit: payers, receiver, escrow and collectors", async () => {
      await manager.settle();
      const sponsoredDeposit = MINTED - (await balanceOf(sponsoredPayer.address));
      const expect = {
        payer: MINTED - BigInt(CALLS + 3) * PRICE,
        permit2Payer: MINTED - 6n * PRICE,
        payee: BigInt(CALLS + 3 + 6) * PRICE,
        escrow: sponsoredDeposit,
      };
      const got = {
        payer: await balanceOf(payer.address),
        permit2Payer: await balanceOf(permit2Payer.address),
        payee: await balanceOf(payee.address),
        escrow: await balanceOf(ESCROW),
      };
      assert(JSON.stringify(wire(got)) === JSON.stringify(wire(expect)), `got ${JSON.stringify(wire(got))}`);
      assert((await balanceOf(ERC3009_COLLECTOR)) === 0n && (await balanceOf(PERMIT2_COLLECTOR)) === 0n, "a collector holds tokens");
      const totals = await receiverTotals();
      assert(totals.totalClaimed === expect.payee && totals.totalSettled === expect.payee, JSON.stringify(wire(totals)));
      return Object.entries(got).map(([k, v]) => `${k} ${v}`).join(", ");
    });
  } finally {
    listener.close();
  }

  console.log(
    `gas: deposit ${gas.deposit}; ${claimed.map((c) => `claim ${c.label} (${c.rows} row${c.rows > 1 ? "s" : ""}) ${c.gas}`).join("; ")}; settle ${gas.settle}; refund asked by the payer ${gas.refund}; refund by the service ${gas.serviceRefund}; initiateWithdraw ${gas.initiateWithdraw}; finalizeWithdraw ${gas.finalizeWithdraw}`,
  );

  if (wireWanted) {
    const paid = wireLog.filter((e) => e.path === "/paid");
    const first402 = paid.find((e) => e.paymentRequired && !e.paymentPayload);
    const deposit = paid.find((e) => e.paymentPayload && e.paymentPayload.payload.type === "deposit");
    const voucher = paid.find((e) => e.paymentPayload && e.paymentPayload.payload.type === "voucher");
    const refundAsked = paid.find((e) => e.paymentPayload && e.paymentPayload.payload.type === "refund");
    const verified = facilitatorLog.find((e) => e.op === "verify" && e.payload.payload.type === "deposit");
    const claim = facilitatorLog.find((e) => e.op === "settle" && e.payload.payload.type === "claim");
    console.log(
      JSON.stringify(
        {
          paymentRequired: first402 && first402.paymentRequired,
          depositPaymentPayload: deposit && deposit.paymentPayload,
          depositPaymentResponse: deposit && deposit.paymentResponse,
          voucherPaymentPayload: voucher && voucher.paymentPayload,
          voucherPaymentResponse: voucher && voucher.paymentResponse,
          facilitatorDepositVerifyResponse: verified && verified.response,
          refundPaymentPayload: refundAsked && refundAsked.paymentPayload.payload,
          refundPaymentResponse: refundAsked && refundAsked.paymentResponse,
          facilitatorClaimSettle: claim && { payload: claim.payload.payload, response: claim.response },
          facilitatorRefundSettle: refundPayload && { payload: refundPayload.payload.payload, response: refundPayload.response },
        },
        null,
        2,
      ),
    );
  }
}

runChecks(run, { pollingInterval: 50 });
