// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The x402 `batch-settlement` escrow of `paperchain serve --hosted --sandbox`: capital-backed
// payment channels. A payer deposits once into a channel (payer, receiver, token and the
// rest of a ChannelConfig, whose EIP-712 hash is the channel id); for each call it signs a
// cumulative EIP-712 Voucher ("up to this much in total"); the receiver side claims the
// vouchers of many channels in one transaction, later sweeps what it claimed to the receiver
// (`settle`), and returns the unused rest of a channel to its payer (`refund`). A payer whose
// receiver does not close the channel takes the unclaimed rest back itself after the
// channel's withdraw delay (`initiateWithdraw`, then `finalizeWithdraw`).
//
// The ABI of the escrow role (functions, struct layouts, the Settled event, the views and
// digest helpers) is the one @x402/evm 2.27.0's batch-settlement client, server and
// facilitator call at 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003, so that they drive this
// code unchanged; the other events and the errors are ours.
//
// One code, three addresses. The official binding has the payer sign its deposit for one of
// two deposit collectors, contracts at their own canonical addresses: an EIP-3009
// `ReceiveWithAuthorization` whose `to` is the ERC-3009 collector (only `to` may submit it),
// or a Permit2 witness transfer whose spender is the Permit2 collector. The escrow's `deposit`
// has the collector pull the tokens and checks that its own balance grew by the amount. The
// sandbox puts this same runtime code at the escrow and at both collector addresses; what a
// copy does depends on `address(this)`: at the escrow the escrow functions work and `collect`
// reverts, at a collector only `collect` works, and only when the escrow calls it.
//
// Where the package leaves a choice, the payer's safety decides:
// - deposits go through the two canonical collectors only, not any contract a submitter
//   names, and the withdraw delay must lie within the package's bounds (15 min to 30 days);
// - a claim row at or below the channel's claimed total (a replay, an older voucher) moves
//   nothing and is skipped, so it cannot fail the rest of its batch (the package's refund
//   sends the channel's last claim again ahead of the refund); a row above its voucher's
//   amount or above the deposit reverts the batch;
// - a voucher checked against a payerAuthorizer must be its ECDSA signature (as the
//   facilitator checks it); without one, the payer's (ECDSA, or EIP-1271 for a contract);
// - only the payer or its payerAuthorizer starts or finalizes a withdrawal, which pays at
//   most the unclaimed rest at finalization (claims made during the delay come first); a
//   refund that leaves nothing unclaimed ends a pending withdrawal;
// - every refund advances the channel's refund nonce, moved tokens or not, so a signed
//   refund is used once.
//
// Written for Paperchain from the behaviour of the @x402/evm package and the published notes
// on the batch-settlement contract (x402-batch-settlement-implementers.md in the x402
// repository), not derived from the x402 contracts. It is never deployed: the sandbox puts
// its runtime code at the addresses with `anvil_setCode`, so there is no constructor and no
// immutable, the domain separator is computed from `block.chainid` and `address(this)` on
// every call, and all state starts from empty storage. hosted/contracts/batch_check.js tries
// it with the official x402 client, server and facilitator.
//
// Rebuild the committed artifact (SandboxBatchEscrow.json) after any change:
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node hosted/contracts/build.js
pragma solidity ^0.8.20;

interface IERC20 {
    function balanceOf(address account) external view returns (uint256);
    function transfer(address to, uint256 value) external returns (bool);
}

interface IERC1271 {
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4);
}

/// EIP-3009 with a bytes signature (ECDSA r‖s‖v or, for a contract payer, EIP-1271), as
/// USDC (FiatToken 2.2) and SandboxUsdc.sol have it.
interface IERC3009 {
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external;
}

interface IERC20Permit {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;
}

/// The part of Permit2's signature-transfer interface the Permit2 collector calls
/// (SandboxPermit2.sol implements it).
interface ISignatureTransfer {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;
}

contract SandboxBatchEscrow {
    /// What a channel is; its EIP-712 hash under this contract's domain is the channel id, so
    /// none of it can change for the life of the channel.
    struct ChannelConfig {
        address payer; // whose deposit it is, and where refunds and withdrawals go
        address payerAuthorizer; // signs vouchers (ECDSA) if set; zero: `payer` signs them
        address receiver; // who is paid
        address receiverAuthorizer; // signs claim batches and refunds for the receiver side
        address token;
        uint40 withdrawDelay; // seconds between initiateWithdraw and finalizeWithdraw
        bytes32 salt; // tells apart channels with the same parties
    }

    /// A cumulative voucher: the receiver may have claimed at most `maxClaimableAmount` of the
    /// channel in total. Signed by the payer side as `Voucher(channelId, maxClaimableAmount)`.
    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    /// One row of a claim: a voucher, its signature, and the channel's new claimed total
    /// (what the service charged so far, at most the voucher's amount).
    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    /// `balance`: deposited less refunded and withdrawn; `totalClaimed`: the part of it the
    /// receiver has claimed (always at most `balance`). The unclaimed rest is the payer's.
    struct ChannelState {
        uint128 balance;
        uint128 totalClaimed;
    }

    struct PendingWithdrawal {
        uint128 amount;
        uint40 initiatedAt;
    }

    /// Claimed into the escrow for a receiver and token, and swept out to it by `settle`.
    struct ReceiverTotals {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    address public constant ESCROW = 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003;
    address public constant ERC3009_DEPOSIT_COLLECTOR = 0x4020806089470a89826cB9fB1f4059150b550004;
    address public constant PERMIT2_DEPOSIT_COLLECTOR = 0x4020425FAf3B746C082C2f942b4E5159887B0005;
    ISignatureTransfer public constant PERMIT2 = ISignatureTransfer(0x000000000022D473030F116dDEE9F6B43aC78BA3);

    /// The bounds the package enforces off chain (15 minutes, 30 days), enforced here at
    /// deposit: a shorter delay would leave a receiver too little time to claim.
    uint40 public constant MIN_WITHDRAW_DELAY = 900;
    uint40 public constant MAX_WITHDRAW_DELAY = 2_592_000;

    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant VERSION_HASH = keccak256("1");
    bytes32 public constant CHANNEL_CONFIG_TYPEHASH = keccak256(
        "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
    );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH = keccak256(
        "ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
    );
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant DEPOSIT_WITNESS_TYPEHASH = keccak256("DepositWitness(bytes32 channelId)");
    /// Completes Permit2's `PermitWitnessTransferFrom(TokenPermissions permitted,address
    /// spender,uint256 nonce,uint256 deadline,` with the witness member and the referenced
    /// struct types in EIP-712 (alphabetical) order, as the package signs them.
    string public constant DEPOSIT_WITNESS_TYPE_STRING =
        "DepositWitness witness)DepositWitness(bytes32 channelId)TokenPermissions(address token,uint256 amount)";

    // secp256k1n / 2: a larger s is the malleable twin of a valid signature (EIP-2).
    uint256 private constant HALF_CURVE_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;

    mapping(bytes32 => ChannelState) private _channels;
    mapping(bytes32 => PendingWithdrawal) private _pendingWithdrawals;
    mapping(bytes32 => uint256) private _refundNonces;
    mapping(address => mapping(address => ReceiverTotals)) private _receivers;
    // 0 at rest, 1 inside a state-changing call: zero is the resting state because the code is
    // placed, not constructed.
    uint256 private _entered;

    event Deposited(
        bytes32 indexed channelId, address indexed payer, address indexed token, uint128 amount, uint128 balance
    );
    /// `amount` is what this claim added; `totalClaimed` the channel's new total.
    event Claimed(
        bytes32 indexed channelId, address indexed receiver, address indexed token, uint128 amount, uint128 totalClaimed
    );
    /// As the package parses it: `sender` is whoever called `settle`.
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    /// `nonce` is the channel's refund nonce after this refund.
    event Refunded(bytes32 indexed channelId, address indexed payer, uint128 amount, uint256 nonce);
    event WithdrawInitiated(bytes32 indexed channelId, address indexed payer, uint128 amount, uint40 finalizableAt);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed payer, uint128 amount);

    /// An escrow function called on a collector's copy of the code, or the reverse.
    error WrongAddress();
    error UnauthorizedCaller();
    error ZeroAmount();
    error EmptyBatch();
    /// A zero payer, receiver, receiverAuthorizer or token.
    error InvalidChannelConfig();
    error WithdrawDelayOutOfRange(uint40 withdrawDelay);
    /// Only the two canonical collectors take deposits.
    error UnknownCollector(address collector);
    /// The escrow's token balance did not grow by exactly the deposit.
    error DepositAmountMismatch(uint256 expected, uint256 received);
    error InvalidVoucherSignature();
    error InvalidAuthorizerSignature();
    /// The rows of a claimWithSignature batch name different receiverAuthorizers.
    error AuthorizerMismatch();
    error ClaimExceedsVoucher(uint128 totalClaimed, uint128 maxClaimableAmount);
    error ClaimExceedsBalance(uint128 totalClaimed, uint128 balance);
    error InvalidRefundNonce(uint256 expected, uint256 given);
    error NothingToWithdraw();
    error WithdrawalPending();
    error NoPendingWithdrawal();
    error WithdrawDelayNotElapsed(uint40 finalizableAt);
    error TransferFailed();
    error ReentrancyGuardReentrantCall();

    modifier onlyEscrow() {
        if (address(this) != ESCROW) {
            revert WrongAddress();
        }
        _;
    }

    modifier nonReentrant() {
        if (_entered != 0) {
            revert ReentrancyGuardReentrantCall();
        }
        _entered = 1;
        _;
        _entered = 0;
    }

    // ---- deposits ----

    /// Adds `amount` of `config.token` to the channel of `config`, pulled from `config.payer`
    /// by `collector` on the payer's signature in `collectorData`. Anyone may submit it (the
    /// facilitator does): the signature binds the tokens to this channel id.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        onlyEscrow
        nonReentrant
    {
        if (amount == 0) {
            revert ZeroAmount();
        }
        _checkConfig(config);
        if (collector != ERC3009_DEPOSIT_COLLECTOR && collector != PERMIT2_DEPOSIT_COLLECTOR) {
            revert UnknownCollector(collector);
        }
        bytes32 channelId = getChannelId(config);
        uint256 before = IERC20(config.token).balanceOf(address(this));
        SandboxBatchEscrow(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        uint256 received = IERC20(config.token).balanceOf(address(this)) - before;
        if (received != amount) {
            revert DepositAmountMismatch(amount, received);
        }
        ChannelState storage ch = _channels[channelId];
        uint128 balance = ch.balance + amount;
        ch.balance = balance;
        emit Deposited(channelId, config.payer, config.token, amount, balance);
    }

    /// The collector role: moves `amount` of `token` from `payer` to the escrow (the caller).
    /// At the ERC-3009 collector `collectorData` is abi.encode(validAfter, validBefore, salt,
    /// signature) of a ReceiveWithAuthorization to this collector whose nonce is
    /// keccak256(abi.encode(channelId, salt)); at the Permit2 collector it is
    /// abi.encode(nonce, deadline, signature, eip2612PermitData) of a Permit2 witness transfer
    /// to this collector with witness DepositWitness(channelId), eip2612PermitData being empty
    /// or abi.encode(value, deadline, v, r, s) of a permit for Permit2 submitted first.
    function collect(address payer, address token, uint256 amount, bytes32 channelId, bytes calldata collectorData)
        external
    {
        if (msg.sender != ESCROW) {
            revert UnauthorizedCaller();
        }
        if (address(this) == ERC3009_DEPOSIT_COLLECTOR) {
            (uint256 validAfter, uint256 validBefore, uint256 salt, bytes memory signature) =
                abi.decode(collectorData, (uint256, uint256, uint256, bytes));
            bytes32 nonce = keccak256(abi.encode(channelId, salt));
            IERC3009(token).receiveWithAuthorization(payer, address(this), amount, validAfter, validBefore, nonce, signature);
            _transfer(token, msg.sender, amount);
        } else if (address(this) == PERMIT2_DEPOSIT_COLLECTOR) {
            _collectPermit2(payer, token, amount, channelId, collectorData);
        } else {
            revert WrongAddress();
        }
    }

    // ---- claims and settlement ----

    /// Claims each row's voucher up to the row's `totalClaimed`; the caller must be the
    /// receiver or the receiverAuthorizer of every row's channel.
    function claim(VoucherClaim[] calldata voucherClaims) external onlyEscrow nonReentrant {
        uint256 n = voucherClaims.length;
        if (n == 0) {
            revert EmptyBatch();
        }
        for (uint256 i = 0; i < n; i++) {
            ChannelConfig calldata c = voucherClaims[i].voucher.channel;
            if (msg.sender != c.receiver && msg.sender != c.receiverAuthorizer) {
                revert UnauthorizedCaller();
            }
            _claim(getChannelId(c), voucherClaims[i]);
        }
    }

    /// As `claim`, submitted by anyone with the rows' (single) receiverAuthorizer's signature
    /// of `getClaimBatchDigest(voucherClaims)`.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        onlyEscrow
        nonReentrant
    {
        uint256 n = voucherClaims.length;
        if (n == 0) {
            revert EmptyBatch();
        }
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        bytes32[] memory ids = new bytes32[](n);
        bytes32[] memory entries = new bytes32[](n);
        for (uint256 i = 0; i < n; i++) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) {
                revert AuthorizerMismatch();
            }
            ids[i] = getChannelId(voucherClaims[i].voucher.channel);
            entries[i] = _claimEntryHash(ids[i], voucherClaims[i]);
        }
        bytes32 digest = _digest(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
        if (!_isValidSignatureNow(authorizer, digest, authorizerSignature)) {
            revert InvalidAuthorizerSignature();
        }
        for (uint256 i = 0; i < n; i++) {
            _claim(ids[i], voucherClaims[i]);
        }
    }

    /// Pays `receiver` what was claimed for it in `token` and not yet paid out. Anyone may
    /// call it; the money only goes to the receiver. Nothing to pay is a no-op.
    function settle(address receiver, address token) external onlyEscrow nonReentrant {
        ReceiverTotals storage r = _receivers[receiver][token];
        uint128 amount = r.totalClaimed - r.totalSettled;
        if (amount == 0) {
            return;
        }
        r.totalSettled = r.totalClaimed;
        _transfer(token, receiver, amount);
        emit Settled(receiver, token, msg.sender, amount);
    }

    // ---- refunds (receiver side) ----

    /// Returns up to `amount` of the channel's unclaimed rest to the payer; called by the
    /// receiver or the receiverAuthorizer. Advances the channel's refund nonce.
    function refund(ChannelConfig calldata config, uint128 amount) external onlyEscrow nonReentrant {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) {
            revert UnauthorizedCaller();
        }
        _refund(getChannelId(config), config, amount);
    }

    /// As `refund`, submitted by anyone with the receiverAuthorizer's signature of
    /// `Refund(channelId, nonce, amount)` for the channel's current refund nonce.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external onlyEscrow nonReentrant {
        bytes32 channelId = getChannelId(config);
        uint256 expected = _refundNonces[channelId];
        if (nonce != expected) {
            revert InvalidRefundNonce(expected, nonce);
        }
        if (
            !_isValidSignatureNow(
                config.receiverAuthorizer, getRefundDigest(channelId, nonce, amount), receiverAuthorizerSignature
            )
        ) {
            revert InvalidAuthorizerSignature();
        }
        _refund(channelId, config, amount);
    }

    // ---- withdrawal (payer side) ----

    /// Starts the payer's withdrawal of up to `amount` of the unclaimed rest; it can be
    /// finalized `config.withdrawDelay` seconds later. The receiver may still claim vouchers
    /// until then. Called by the payer or its payerAuthorizer; one withdrawal at a time.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external onlyEscrow nonReentrant {
        _onlyPayerSide(config);
        if (amount == 0) {
            revert ZeroAmount();
        }
        bytes32 channelId = getChannelId(config);
        ChannelState storage ch = _channels[channelId];
        if (ch.balance == ch.totalClaimed) {
            revert NothingToWithdraw();
        }
        PendingWithdrawal storage p = _pendingWithdrawals[channelId];
        if (p.initiatedAt != 0) {
            revert WithdrawalPending();
        }
        uint40 now40 = uint40(block.timestamp);
        p.amount = amount;
        p.initiatedAt = now40;
        emit WithdrawInitiated(channelId, config.payer, amount, now40 + config.withdrawDelay);
    }

    /// Pays the payer the pending withdrawal, capped at the unclaimed rest as it is now (claims
    /// made during the delay come first). Called by the payer or its payerAuthorizer.
    function finalizeWithdraw(ChannelConfig calldata config) external onlyEscrow nonReentrant {
        _onlyPayerSide(config);
        bytes32 channelId = getChannelId(config);
        PendingWithdrawal memory p = _pendingWithdrawals[channelId];
        if (p.initiatedAt == 0) {
            revert NoPendingWithdrawal();
        }
        uint40 finalizableAt = p.initiatedAt + config.withdrawDelay;
        if (block.timestamp < finalizableAt) {
            revert WithdrawDelayNotElapsed(finalizableAt);
        }
        delete _pendingWithdrawals[channelId];
        ChannelState storage ch = _channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 paid = p.amount < available ? p.amount : available;
        if (paid != 0) {
            ch.balance -= paid;
            _transfer(config.token, config.payer, paid);
        }
        emit WithdrawFinalized(channelId, config.payer, paid);
    }

    // ---- batching ----

    /// Runs each call on this contract in order, in one transaction (the facilitator claims
    /// and refunds in one); any failure reverts them all.
    function multicall(bytes[] calldata data) external onlyEscrow returns (bytes[] memory results) {
        results = new bytes[](data.length);
        for (uint256 i = 0; i < data.length; i++) {
            (bool ok, bytes memory answer) = address(this).delegatecall(data[i]);
            if (!ok) {
                assembly {
                    revert(add(answer, 0x20), mload(answer))
                }
            }
            results[i] = answer;
        }
    }

    // ---- views ----

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(EIP712_DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    /// The EIP-712 hash (domain included) of `config`: chain- and contract-bound.
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return _digest(
            keccak256(
                abi.encode(
                    CHANNEL_CONFIG_TYPEHASH,
                    config.payer,
                    config.payerAuthorizer,
                    config.receiver,
                    config.receiverAuthorizer,
                    config.token,
                    config.withdrawDelay,
                    config.salt
                )
            )
        );
    }

    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return _digest(keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return _digest(keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// The digest a receiverAuthorizer signs for `claimWithSignature`: ClaimBatch of one
    /// ClaimEntry(channelId, maxClaimableAmount, totalClaimed) per row (defined for an empty
    /// batch too, though no claim takes one).
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) external view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; i++) {
            entries[i] = _claimEntryHash(getChannelId(voucherClaims[i].voucher.channel), voucherClaims[i]);
        }
        return _digest(keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }

    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed) {
        ChannelState memory ch = _channels[channelId];
        return (ch.balance, ch.totalClaimed);
    }

    function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt) {
        PendingWithdrawal memory p = _pendingWithdrawals[channelId];
        return (p.amount, p.initiatedAt);
    }

    function receivers(address receiver, address token)
        external
        view
        returns (uint128 totalClaimed, uint128 totalSettled)
    {
        ReceiverTotals memory r = _receivers[receiver][token];
        return (r.totalClaimed, r.totalSettled);
    }

    function refundNonce(bytes32 channelId) external view returns (uint256) {
        return _refundNonces[channelId];
    }

    // ---- internals ----

    function _checkConfig(ChannelConfig calldata config) private pure {
        if (
            config.payer == address(0) || config.receiver == address(0) || config.receiverAuthorizer == address(0)
                || config.token == address(0)
        ) {
            revert InvalidChannelConfig();
        }
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange(config.withdrawDelay);
        }
    }

    function _onlyPayerSide(ChannelConfig calldata config) private view {
        if (msg.sender != config.payer && (config.payerAuthorizer == address(0) || msg.sender != config.payerAuthorizer)) {
            revert UnauthorizedCaller();
        }
    }

    /// Raises the channel's claimed total to `row.totalClaimed` and credits the difference to
    /// the receiver. A row at or below the claimed total (a voucher claimed again, an older
    /// one) moves nothing and is skipped, so that it cannot fail the rest of its batch.
    function _claim(bytes32 channelId, VoucherClaim calldata row) private {
        ChannelState storage ch = _channels[channelId];
        uint128 claimed = ch.totalClaimed;
        uint128 total = row.totalClaimed;
        if (total <= claimed) {
            return;
        }
        uint128 max = row.voucher.maxClaimableAmount;
        if (total > max) {
            revert ClaimExceedsVoucher(total, max);
        }
        uint128 balance = ch.balance;
        if (total > balance) {
            revert ClaimExceedsBalance(total, balance);
        }
        ChannelConfig calldata c = row.voucher.channel;
        bytes32 digest = getVoucherDigest(channelId, max);
        bool valid = c.payerAuthorizer != address(0)
            ? _recover(digest, row.signature) == c.payerAuthorizer
            : _isValidSignatureNow(c.payer, digest, row.signature);
        if (!valid) {
            revert InvalidVoucherSignature();
        }
        uint128 added = total - claimed;
        ch.totalClaimed = total;
        _receivers[c.receiver][c.token].totalClaimed += added;
        emit Claimed(channelId, c.receiver, c.token, added, total);
    }

    /// Refunds min(amount, unclaimed rest) to the payer. The nonce advances even when nothing
    /// is left to refund, so a signed refund is used once whatever it moved. A refund that
    /// leaves nothing unclaimed also ends a pending withdrawal (there is nothing left for it).
    function _refund(bytes32 channelId, ChannelConfig calldata config, uint128 amount) private {
        if (amount == 0) {
            revert ZeroAmount();
        }
        uint256 nonce = ++_refundNonces[channelId];
        ChannelState storage ch = _channels[channelId];
        uint128 available = ch.balance - ch.totalClaimed;
        uint128 paid = amount < available ? amount : available;
        if (paid != 0) {
            ch.balance -= paid;
            _transfer(config.token, config.payer, paid);
            emit Refunded(channelId, config.payer, paid, nonce);
        }
        if (paid == available && _pendingWithdrawals[channelId].initiatedAt != 0) {
            delete _pendingWithdrawals[channelId];
        }
    }

    function _collectPermit2(
        address payer,
        address token,
        uint256 amount,
        bytes32 channelId,
        bytes calldata collectorData
    ) private {
        (uint256 nonce, uint256 deadline, bytes memory signature, bytes memory permitData) =
            abi.decode(collectorData, (uint256, uint256, bytes, bytes));
        if (permitData.length != 0) {
            _permit2612(payer, token, permitData);
        }
        PERMIT2.permitWitnessTransferFrom(
            ISignatureTransfer.PermitTransferFrom({
                permitted: ISignatureTransfer.TokenPermissions({token: token, amount: amount}),
                nonce: nonce,
                deadline: deadline
            }),
            ISignatureTransfer.SignatureTransferDetails({to: msg.sender, requestedAmount: amount}),
            payer,
            keccak256(abi.encode(DEPOSIT_WITNESS_TYPEHASH, channelId)),
            DEPOSIT_WITNESS_TYPE_STRING,
            signature
        );
    }

    /// Submits the payer's EIP-2612 permit for Permit2, abi.encode(value, deadline, v, r, s). A
    /// permit that fails (already used, say by someone who saw it) is ignored: the transfer then
    /// stands or falls on the allowance Permit2 already has.
    function _permit2612(address payer, address token, bytes memory permitData) private {
        (uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) =
            abi.decode(permitData, (uint256, uint256, uint8, bytes32, bytes32));
        try IERC20Permit(token).permit(payer, address(PERMIT2), value, deadline, v, r, s) {} catch {}
    }

    function _claimEntryHash(bytes32 channelId, VoucherClaim calldata row) private pure returns (bytes32) {
        return keccak256(abi.encode(CLAIM_ENTRY_TYPEHASH, channelId, row.voucher.maxClaimableAmount, row.totalClaimed));
    }

    function _digest(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
    }

    /// A contract signer answers EIP-1271; an EOA signs with its key.
    function _isValidSignatureNow(address signer, bytes32 digest, bytes calldata signature)
        private
        view
        returns (bool)
    {
        if (signer.code.length > 0) {
            (bool ok, bytes memory answer) =
                signer.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, signature)));
            return ok && answer.length >= 32 && bytes4(bytes32(answer)) == ERC1271_MAGIC;
        }
        address recovered = _recover(digest, signature);
        return recovered != address(0) && recovered == signer;
    }

    /// The ECDSA signer of `digest`, from 65 bytes r‖s‖v or the 64-byte EIP-2098 compact form;
    /// address(0) for anything malformed or malleable.
    function _recover(bytes32 digest, bytes calldata signature) private pure returns (address) {
        bytes32 r;
        bytes32 s;
        uint8 v;
        if (signature.length == 65) {
            r = bytes32(signature[0:32]);
            s = bytes32(signature[32:64]);
            v = uint8(signature[64]);
            if (v < 27) {
                v += 27;
            }
        } else if (signature.length == 64) {
            r = bytes32(signature[0:32]);
            uint256 vs = uint256(bytes32(signature[32:64]));
            s = bytes32(vs & (type(uint256).max >> 1));
            v = uint8(vs >> 255) + 27;
        } else {
            return address(0);
        }
        if (uint256(s) > HALF_CURVE_ORDER || (v != 27 && v != 28)) {
            return address(0);
        }
        return ecrecover(digest, v, r, s);
    }

    /// `token.transfer(to, amount)`, accepting tokens that return true or nothing.
    function _transfer(address token, address to, uint256 amount) private {
        if (token.code.length == 0) {
            revert TransferFailed();
        }
        (bool ok, bytes memory answer) = token.call(abi.encodeCall(IERC20.transfer, (to, amount)));
        if (!ok) {
            if (answer.length > 0) {
                assembly {
                    revert(add(answer, 0x20), mload(answer))
                }
            }
            revert TransferFailed();
        }
        if (answer.length > 0 && (answer.length < 32 || uint256(bytes32(answer)) != 1)) {
            revert TransferFailed();
        }
    }
}
