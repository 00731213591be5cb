// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The x402 `upto` settlement proxy of `paperchain serve --hosted --sandbox`. A payer signs a
// Permit2 `PermitWitnessTransferFrom` with this contract as spender, a maximum amount, and a
// witness naming the payee and the one facilitator allowed to settle; that facilitator then
// calls `settle` with the amount actually owed (at most the maximum), and this contract has
// Permit2 move it. `settleWithPermit` first submits the payer's EIP-2612 permit giving Permit2
// its allowance, so a payer who never approved Permit2 pays without sending a transaction.
//
// The ABI (functions, struct layouts, events, errors) is that of the x402UptoPermit2Proxy at
// 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002, so that the x402 facilitators and clients
// drive this code unchanged; its construction and initialisation members are left out.
//
// Written for Paperchain from the documented behaviour of the x402 `upto` scheme, not derived
// from the x402 contracts. It is never deployed: the sandbox puts its runtime code at the
// proxy's address with `anvil_setCode`, so there is no constructor and no immutable, Permit2 is
// a constant (the canonical address, where the sandbox puts SandboxPermit2.sol), and the
// reentrancy guard works from the all-zero storage the code starts with.
//
// Rebuild the committed artifact (SandboxUptoProxy.json) after any change:
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node hosted/contracts/build.js
pragma solidity ^0.8.20;

/// The part of Permit2's signature-transfer interface this proxy calls (SandboxPermit2.sol
/// implements it); under this name so that the ABI's internal types match the reference.
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

interface IERC20Permit {
    function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)
        external;
}

contract SandboxUptoProxy {
    /// Signed along with the permit: who is paid, who may settle, and not before when.
    struct Witness {
        address to;
        address facilitator;
        uint256 validAfter;
    }

    /// The payer's EIP-2612 permit of the token for spender Permit2.
    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    ISignatureTransfer public constant PERMIT2 = ISignatureTransfer(0x000000000022D473030F116dDEE9F6B43aC78BA3);

    bytes32 public constant WITNESS_TYPEHASH = keccak256("Witness(address to,address facilitator,uint256 validAfter)");

    /// Completes Permit2's `PermitWitnessTransferFrom(TokenPermissions permitted,address
    /// spender,uint256 nonce,uint256 deadline,` with the witness member and the referenced
    /// struct types in EIP-712 (alphabetical) order, as viem and alloy encode them.
    string public constant WITNESS_TYPE_STRING =
        "Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)";

    // 0 outside `settle`/`settleWithPermit`, 1 inside: zero is the resting state because the
    // code is placed, not constructed, so no constructor could have set a nonzero one.
    uint256 private _entered;

    event Settled();
    event SettledWithPermit();

    error InvalidOwner();
    error InvalidDestination();
    error UnauthorizedFacilitator();
    error PaymentTooEarly();
    error AmountExceedsPermitted();
    error Permit2612AmountMismatch();
    error ReentrancyGuardReentrantCall();
    /// In the reference ABI (its initialiser rejects a zero Permit2); never raised here, where
    /// Permit2 is a constant.
    error InvalidPermit2Address();

    modifier nonReentrant() {
        if (_entered != 0) {
            revert ReentrancyGuardReentrantCall();
        }
        _entered = 1;
        _;
        _entered = 0;
    }

    /// Has Permit2 move `amount` (at most `permit.permitted.amount`) of the permitted token from
    /// `owner` to `witness.to`; only `witness.facilitator` may call it.
    function settle(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _check(permit, amount, owner, witness);
        _transfer(permit, amount, owner, witness, signature);
        emit Settled();
    }

    /// As `settle`, after submitting the owner's EIP-2612 permit for Permit2. A permit that
    /// fails (already used, say by an earlier settlement or by someone who saw it) is ignored:
    /// the transfer then stands or falls on the allowance Permit2 already has.
    function settleWithPermit(
        EIP2612Permit calldata permit2612,
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) external nonReentrant {
        _check(permit, amount, owner, witness);
        if (permit2612.value < permit.permitted.amount) {
            revert Permit2612AmountMismatch();
        }
        _permit2612(permit.permitted.token, owner, permit2612);
        _transfer(permit, amount, owner, witness, signature);
        emit SettledWithPermit();
    }

    // ---- internals ----

    function _check(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness
    ) private view {
        if (owner == address(0)) {
            revert InvalidOwner();
        }
        if (witness.to == address(0)) {
            revert InvalidDestination();
        }
        if (msg.sender != witness.facilitator) {
            revert UnauthorizedFacilitator();
        }
        if (block.timestamp < witness.validAfter) {
            revert PaymentTooEarly();
        }
        if (amount > permit.permitted.amount) {
            revert AmountExceedsPermitted();
        }
    }

    function _permit2612(address token, address owner, EIP2612Permit calldata p) private {
        try IERC20Permit(token).permit(owner, address(PERMIT2), p.value, p.deadline, p.v, p.r, p.s) {} catch {}
    }

    function _transfer(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        Witness calldata witness,
        bytes calldata signature
    ) private {
        bytes32 witnessHash = keccak256(abi.encode(WITNESS_TYPEHASH, witness.to, witness.facilitator, witness.validAfter));
        PERMIT2.permitWitnessTransferFrom(
            permit,
            ISignatureTransfer.SignatureTransferDetails({to: witness.to, requestedAmount: amount}),
            owner,
            witnessHash,
            WITNESS_TYPE_STRING,
            signature
        );
    }
}
