// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The Permit2 of `paperchain serve --hosted --sandbox`: the signature-transfer half of
// Permit2 (one-off transfers authorised by an EIP-712 signature, with or without a witness,
// replay-protected by unordered nonces), which is what the x402 `upto` proxy settles through.
// Its ABI, EIP-712 domain (name "Permit2", no version) and struct hashing are those of the
// canonical contract at 0x000000000022D473030F116dDEE9F6B43aC78BA3, so that a signature
// made for that contract (by the x402 clients, viem, alloy) verifies here unchanged. Left
// out: the allowance-transfer half (approve, permit, lockdown) and the batch transfers.
//
// Written for Paperchain from the documented behaviour of Permit2, not derived from its
// source. It is never deployed: the sandbox puts its runtime code at the canonical address
// with `anvil_setCode`, so no constructor runs and the domain separator is computed from
// `block.chainid` and `address(this)` on every call.
//
// Rebuild the committed artifact (SandboxPermit2.json) after any change:
//   NODE_PATH="${PAPERCHAIN_TOOLS:-$HOME/.cache/paperchain/tools}/npm/node_modules" \
//     node hosted/contracts/build.js
pragma solidity ^0.8.20;

/// The structs of the signature-transfer interface. Declared here, under this name, so that
/// the ABI's internal types read `struct ISignatureTransfer.…` as the canonical ones do.
interface ISignatureTransfer {
    /// A token and the most of it the signature lets the spender move.
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    /// What the owner signs (with the spender, msg.sender of the transfer, hashed in).
    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    /// Chosen by the spender at transfer time: where the tokens go and how many of them.
    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }
}

interface IERC1271 {
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4);
}

interface IERC20 {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

contract SandboxPermit2 {
    bytes32 private constant EIP712_DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("Permit2");
    bytes32 private constant TOKEN_PERMISSIONS_TYPEHASH = keccak256("TokenPermissions(address token,uint256 amount)");
    bytes32 private constant PERMIT_TRANSFER_FROM_TYPEHASH = keccak256(
        "PermitTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline)TokenPermissions(address token,uint256 amount)"
    );
    // The witness variant's type is this stub followed by the caller's witness type string,
    // which names the witness member, closes the struct and appends the referenced struct
    // types in EIP-712 (alphabetical) order, TokenPermissions among them.
    string private constant PERMIT_WITNESS_TRANSFER_FROM_STUB =
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";

    // secp256k1n / 2: a larger s is the malleable twin of a valid signature (EIP-2).
    uint256 private constant HALF_CURVE_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;
    bytes4 private constant ERC1271_MAGIC = 0x1626ba7e;

    /// Used unordered nonces: bit `nonce & 0xff` of word `nonce >> 8` of the owner's bitmap.
    mapping(address => mapping(uint256 => uint256)) public nonceBitmap;

    event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask);

    error SignatureExpired(uint256 signatureDeadline);
    error InvalidAmount(uint256 maxAmount);
    error InvalidNonce();
    error InvalidSignatureLength();
    error InvalidSigner();
    error InvalidContractSignature();
    /// The token's transferFrom returned false, returned something that is not a bool, or
    /// the token has no code. (A revert of the token is passed on as it is.)
    error TransferFromFailed();

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(EIP712_DOMAIN_TYPEHASH, NAME_HASH, block.chainid, address(this)));
    }

    /// Moves `transferDetails.requestedAmount` of the permitted token from `owner` to
    /// `transferDetails.to`, on the owner's signature of `permit` for spender msg.sender.
    function permitTransferFrom(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        ISignatureTransfer.SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes calldata signature
    ) external {
        bytes32 structHash = keccak256(
            abi.encode(
                PERMIT_TRANSFER_FROM_TYPEHASH,
                _hashTokenPermissions(permit.permitted),
                msg.sender,
                permit.nonce,
                permit.deadline
            )
        );
        _permitTransferFrom(permit, transferDetails, owner, structHash, signature);
    }

    /// As `permitTransferFrom`, with the hash of a caller-defined `witness` struct signed
    /// along; `witnessTypeString` completes the EIP-712 type (see the stub above).
    function permitWitnessTransferFrom(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        ISignatureTransfer.SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external {
        bytes32 typeHash = keccak256(abi.encodePacked(PERMIT_WITNESS_TRANSFER_FROM_STUB, witnessTypeString));
        bytes32 structHash = keccak256(
            abi.encode(
                typeHash,
                _hashTokenPermissions(permit.permitted),
                msg.sender,
                permit.nonce,
                permit.deadline,
                witness
            )
        );
        _permitTransferFrom(permit, transferDetails, owner, structHash, signature);
    }

    /// Marks the nonces of `mask` in word `wordPos` of the caller's bitmap as used, so that
    /// signatures carrying them can no longer be spent.
    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external {
        nonceBitmap[msg.sender][wordPos] |= mask;
        emit UnorderedNonceInvalidation(msg.sender, wordPos, mask);
    }

    // ---- internals ----

    function _permitTransferFrom(
        ISignatureTransfer.PermitTransferFrom calldata permit,
        ISignatureTransfer.SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 structHash,
        bytes calldata signature
    ) private {
        if (block.timestamp > permit.deadline) {
            revert SignatureExpired(permit.deadline);
        }
        if (transferDetails.requestedAmount > permit.permitted.amount) {
            revert InvalidAmount(permit.permitted.amount);
        }
        _useUnorderedNonce(owner, permit.nonce);
        _verify(owner, keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash)), signature);
        _safeTransferFrom(permit.permitted.token, owner, transferDetails.to, transferDetails.requestedAmount);
    }

    function _hashTokenPermissions(ISignatureTransfer.TokenPermissions calldata permitted)
        private
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, permitted.token, permitted.amount));
    }

    function _useUnorderedNonce(address owner, uint256 nonce) private {
        uint256 wordPos = nonce >> 8;
        uint256 bit = 1 << (nonce & 0xff);
        uint256 word = nonceBitmap[owner][wordPos];
        if (word & bit != 0) {
            revert InvalidNonce();
        }
        nonceBitmap[owner][wordPos] = word | bit;
    }

    /// A contract owner answers EIP-1271; an EOA signs with its key, 65 bytes r‖s‖v or the
    /// 64-byte EIP-2098 compact form r‖(v-27)<<255|s.
    function _verify(address owner, bytes32 digest, bytes calldata signature) private view {
        if (owner.code.length > 0) {
            (bool ok, bytes memory answer) =
                owner.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, signature)));
            if (!ok || answer.length < 32 || bytes4(bytes32(answer)) != ERC1271_MAGIC) {
                revert InvalidContractSignature();
            }
            return;
        }
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
            revert InvalidSignatureLength();
        }
        if (uint256(s) > HALF_CURVE_ORDER) {
            revert InvalidSigner();
        }
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0) || signer != owner) {
            revert InvalidSigner();
        }
    }

    /// `token.transferFrom(from, to, amount)`, accepting tokens that return true or nothing.
    function _safeTransferFrom(address token, address from, address to, uint256 amount) private {
        if (token.code.length == 0) {
            revert TransferFromFailed();
        }
        (bool ok, bytes memory answer) = token.call(abi.encodeCall(IERC20.transferFrom, (from, to, amount)));
        if (!ok) {
            if (answer.length > 0) {
                assembly {
                    revert(add(answer, 0x20), mload(answer))
                }
            }
            revert TransferFromFailed();
        }
        if (answer.length > 0 && (answer.length < 32 || uint256(bytes32(answer)) != 1)) {
            revert TransferFromFailed();
        }
    }
}
