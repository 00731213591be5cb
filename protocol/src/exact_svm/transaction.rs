//! The Solana payment transaction itself: the payer signs a versioned
//! (v0) transaction whose fee payer is the facilitator, who co-signs and sends it. The
//! instructions are the ones facilitators check, in this order:
//!
//! 0. Compute Budget `SetComputeUnitLimit`
//! 1. Compute Budget `SetComputeUnitPrice` (micro-lamports per unit, paid by the fee payer)
//! 2. Token or Token-2022 `TransferChecked` of exactly the amount, from the payer's token
//!    account to the payee's associated token account, signed by the payer
//! 3. Memo with a random nonce, so two payments of the same amount to the same payee under
//!    the same blockhash are two transactions, not one
//!
//! This module builds, signs, reads and encodes such transactions from plain bytes. Where
//! accounts live (associated token accounts), which blockhash is recent and how many
//! decimals a mint has are the caller's: they need the chain.

use ed25519_dalek::Signer as _;
pub use ed25519_dalek::SigningKey;

use crate::SignError;

/// The Compute Budget program.
pub const COMPUTE_BUDGET_PROGRAM: &str = "ComputeBudget111111111111111111111111111111";
/// The SPL Token program.
pub const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
/// The SPL Token-2022 program.
pub const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
/// The SPL Memo program (v2).
pub const MEMO_PROGRAM: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";

/// Token instruction `TransferChecked`.
const TRANSFER_CHECKED: u8 = 12;
/// Compute Budget instructions.
const SET_COMPUTE_UNIT_LIMIT: u8 = 2;
const SET_COMPUTE_UNIT_PRICE: u8 = 3;
/// The version prefix of a v0 message.
const V0_PREFIX: u8 = 0x80;
/// How long a signed payment may still land: its blockhash lasts 150 slots (about a minute
/// at 400 ms a slot), twice that for slow slots. The payer's ledger keeps the payment open
/// and the paywall keeps its replay key that long; both sides use this one figure.
pub const BLOCKHASH_LIFETIME_SECONDS: u64 = 120;

/// The largest transaction the network carries (bytes on the wire).
pub const MAX_TRANSACTION_BYTES: usize = 1232;

/// A 32-byte Solana address.
pub type Address = [u8; 32];

/// Base58 text of an address (or of any bytes: a keypair, a signature).
pub fn to_base58(bytes: &[u8]) -> String {
    bs58::encode(bytes).into_string()
}

/// An address from base58 text; `what` names it in the error.
pub fn address(text: &str, what: &str) -> Result<Address, SignError> {
    let bytes = bs58::decode(text).into_vec().map_err(|_| SignError::Malformed(format!("{what} is not base58")))?;
    bytes.try_into().map_err(|_| SignError::Malformed(format!("{what} is not a 32-byte Solana address")))
}

/// A constant address (one of the program ids above).
pub fn program(text: &str) -> Address {
    address(text, "program").expect("a program id constant is a valid address")
}

/// The address of a signing key (its Ed25519 public key).
pub fn address_of(key: &SigningKey) -> Address {
    key.verifying_key().to_bytes()
}

/// What one `exact` payment transfers, with every account already resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The facilitator's fee payer (the requirement's `extra.feePayer`).
    pub fee_payer: Address,
    /// The payer's token account (its associated token account for the mint).
    pub source: Address,
    /// The payee's associated token account for the mint.
    pub destination: Address,
    /// The token (the requirement's `asset`).
    pub mint: Address,
    /// The program that owns the mint: Token or Token-2022.
    pub token_program: Address,
    /// Atomic units (the requirement's `amount`).
    pub amount: u64,
    /// The mint's decimals, which `TransferChecked` repeats.
    pub decimals: u8,
    /// A blockhash the cluster still accepts: the transaction lapses about a minute later.
    pub recent_blockhash: [u8; 32],
    /// Compute units the transaction may use.
    pub compute_unit_limit: u32,
    /// Micro-lamports per compute unit (the priority fee the fee payer pays).
    pub compute_unit_price: u64,
    /// The memo's text: a random nonce.
    pub memo: String,
}

/// A fresh memo nonce: 16 random bytes as hex.
pub fn random_memo() -> String {
    rand::random::<[u8; 16]>().iter().map(|b| format!("{b:02x}")).collect()
}

/// The wire bytes of the transaction paying `transfer`, signed by `owner` and with the fee
/// payer's signature left empty (all zeros) for the facilitator to fill.
pub fn sign_transfer(owner: &SigningKey, transfer: &Transfer) -> Result<Vec<u8>, SignError> {
    let owner_address = address_of(owner);
    if owner_address == transfer.fee_payer {
        return Err(SignError::Unsupported("the fee payer cannot be the payer".into()));
    }
    let message = transfer_message(&owner_address, transfer);
    let signature = owner.sign(&message);
    let mut wire = Vec::with_capacity(1 + 2 * 64 + message.len());
    compact_u16(&mut wire, 2);
    wire.extend_from_slice(&[0; 64]);
    wire.extend_from_slice(&signature.to_bytes());
    wire.extend_from_slice(&message);
    if wire.len() > MAX_TRANSACTION_BYTES {
        return Err(SignError::Malformed(format!("the transaction is {} bytes, over Solana's 1,232", wire.len())));
    }
    Ok(wire)
}

/// The v0 message of `transfer` paid by `owner`. Accounts in the order the runtime requires:
/// writable signers (fee payer first), read-only signers, writable, read-only.
fn transfer_message(owner: &Address, transfer: &Transfer) -> Vec<u8> {
    let compute_budget = program(COMPUTE_BUDGET_PROGRAM);
    let memo = program(MEMO_PROGRAM);
    // 0 fee payer, 1 owner, 2 source, 3 destination, 4 mint, 5 token program, 6 compute budget, 7 memo
    let keys: [&Address; 8] = [
        &transfer.fee_payer,
        owner,
        &transfer.source,
        &transfer.destination,
        &transfer.mint,
        &transfer.token_program,
        &compute_budget,
        &memo,
    ];
    let mut message = vec![V0_PREFIX, 2, 1, 4];
    compact_u16(&mut message, keys.len());
    for key in keys {
        message.extend_from_slice(key);
    }
    message.extend_from_slice(&transfer.recent_blockhash);
    let mut limit = vec![SET_COMPUTE_UNIT_LIMIT];
    limit.extend_from_slice(&transfer.compute_unit_limit.to_le_bytes());
    let mut price = vec![SET_COMPUTE_UNIT_PRICE];
    price.extend_from_slice(&transfer.compute_unit_price.to_le_bytes());
    let mut transfer_checked = vec![TRANSFER_CHECKED];
    transfer_checked.extend_from_slice(&transfer.amount.to_le_bytes());
    transfer_checked.push(transfer.decimals);
    let instructions: [(u8, &[u8], &[u8]); 4] =
        [(6, &[], &limit), (6, &[], &price), (5, &[2, 4, 3, 1], &transfer_checked), (7, &[], transfer.memo.as_bytes())];
    compact_u16(&mut message, instructions.len());
    for (program, accounts, data) in instructions {
        message.push(program);
        compact_u16(&mut message, accounts.len());
        message.extend_from_slice(accounts);
        compact_u16(&mut message, data.len());
        message.extend_from_slice(data);
    }
    // No address lookup tables.
    compact_u16(&mut message, 0);
    message
}

/// A transaction read from its wire bytes: enough to see who signed what and what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transaction<'a> {
    /// The signatures, in the order of the signing accounts.
    pub signatures: Vec<[u8; 64]>,
    /// The signed message: what every signature covers.
    pub message: &'a [u8],
    /// The account keys written in the message (no lookup tables resolved).
    pub keys: Vec<Address>,
    /// How many of the first keys sign.
    pub required_signatures: usize,
    /// The recent blockhash.
    pub blockhash: [u8; 32],
    /// Instructions: the program's key index, account indexes and data.
    pub instructions: Vec<Instruction<'a>>,
}

/// One compiled instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction<'a> {
    /// Index of the program's key.
    pub program: u8,
    /// Indexes of its accounts.
    pub accounts: &'a [u8],
    /// Its data.
    pub data: &'a [u8],
}

impl<'a> Transaction<'a> {
    /// Reads a legacy or v0 transaction; `None` when the bytes are not one (or carry
    /// anything after it).
    pub fn parse(wire: &'a [u8]) -> Option<Transaction<'a>> {
        let mut at = Reader { bytes: wire, at: 0 };
        let count = at.compact_u16()?;
        let mut signatures = Vec::with_capacity(count.min(16));
        for _ in 0..count {
            signatures.push(at.take(64)?.try_into().ok()?);
        }
        let message_start = at.at;
        if at.peek()? & 0x80 != 0 {
            // Versioned: only version 0 exists.
            if at.byte()? != V0_PREFIX {
                return None;
            }
        }
        let required_signatures = at.byte()? as usize;
        let _readonly_signed = at.byte()?;
        let _readonly_unsigned = at.byte()?;
        let key_count = at.compact_u16()?;
        let mut keys = Vec::with_capacity(key_count.min(64));
        for _ in 0..key_count {
            keys.push(at.take(32)?.try_into().ok()?);
        }
        let blockhash = at.take(32)?.try_into().ok()?;
        let instruction_count = at.compact_u16()?;
        let mut instructions = Vec::with_capacity(instruction_count.min(64));
        for _ in 0..instruction_count {
            let program = at.byte()?;
            let accounts = at.compact_u16()?;
            let accounts = at.take(accounts)?;
            let data = at.compact_u16()?;
            let data = at.take(data)?;
            instructions.push(Instruction { program, accounts, data });
        }
        if wire[message_start] == V0_PREFIX {
            let tables = at.compact_u16()?;
            for _ in 0..tables {
                at.take(32)?;
                let writable = at.compact_u16()?;
                at.take(writable)?;
                let readonly = at.compact_u16()?;
                at.take(readonly)?;
            }
        }
        if at.at != wire.len() || signatures.len() != required_signatures || required_signatures > keys.len() {
            return None;
        }
        Some(Transaction {
            signatures,
            message: &wire[message_start..],
            keys,
            required_signatures,
            blockhash,
            instructions,
        })
    }

    /// The key at `index`, when the message lists it.
    pub fn key(&self, index: u8) -> Option<&Address> {
        self.keys.get(index as usize)
    }

    /// The amount of the first `TransferChecked` of the Token or Token-2022 program.
    pub fn transferred_amount(&self) -> Option<u64> {
        let tokens = [program(TOKEN_PROGRAM), program(TOKEN_2022_PROGRAM)];
        self.instructions.iter().find_map(|ix| {
            let program = self.key(ix.program)?;
            (tokens.contains(program) && ix.data.len() == 10 && ix.data[0] == TRANSFER_CHECKED)
                .then(|| u64::from_le_bytes(ix.data[1..9].try_into().expect("eight bytes")))
        })
    }

    /// The first `TransferChecked`'s authority (who pays) and mint, and the memo's text:
    /// what finds the payment on chain later. `None` when the transaction has no transfer.
    pub fn payment_parts(&self) -> Option<(Address, Address, Option<String>)> {
        let tokens = [program(TOKEN_PROGRAM), program(TOKEN_2022_PROGRAM)];
        let transfer = self.instructions.iter().find(|ix| {
            self.key(ix.program).is_some_and(|p| tokens.contains(p))
                && ix.data.first() == Some(&TRANSFER_CHECKED)
                && ix.accounts.len() >= 4
        })?;
        let authority = *self.key(transfer.accounts[3])?;
        let mint = *self.key(transfer.accounts[1])?;
        let memo_program = program(MEMO_PROGRAM);
        let memo = self
            .instructions
            .iter()
            .find(|ix| self.key(ix.program) == Some(&memo_program))
            .and_then(|ix| std::str::from_utf8(ix.data).ok().map(str::to_string));
        Some((authority, mint, memo))
    }

    /// Whether the signature at `index` is a valid signature of the message by the key at `index`.
    pub fn signed_by(&self, index: usize) -> bool {
        let (Some(signature), Some(key)) = (self.signatures.get(index), self.keys.get(index)) else { return false };
        let Ok(key) = ed25519_dalek::VerifyingKey::from_bytes(key) else { return false };
        key.verify_strict(self.message, &ed25519_dalek::Signature::from_bytes(signature)).is_ok()
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let slice = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(slice)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Solana's "compact-u16": 7 bits a byte, low first, at most three bytes, shortest form only.
    fn compact_u16(&mut self) -> Option<usize> {
        let mut value = 0usize;
        for i in 0..3 {
            let byte = self.byte()?;
            value |= ((byte & 0x7f) as usize) << (7 * i);
            if byte & 0x80 == 0 {
                if (i > 0 && byte == 0) || value > u16::MAX as usize {
                    return None;
                }
                return Some(value);
            }
        }
        None
    }
}

fn compact_u16(out: &mut Vec<u8>, value: usize) {
    let mut rest = value;
    loop {
        let low = (rest & 0x7f) as u8;
        rest >>= 7;
        if rest == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A transfer with every account filled in.
    pub(crate) fn transfer() -> Transfer {
        Transfer {
            fee_payer: [1; 32],
            source: [2; 32],
            destination: [3; 32],
            mint: program("EPjFWdd5AufqSSqeM2qN3xzybapC8G4wEGGkZwyTDt1v"),
            token_program: program(TOKEN_PROGRAM),
            amount: 2_000,
            decimals: 6,
            recent_blockhash: [9; 32],
            compute_unit_limit: 20_000,
            compute_unit_price: 1,
            memo: "00112233445566778899aabbccddeeff".into(),
        }
    }

    #[test]
    fn compact_u16_round_trips_and_refuses_long_forms() {
        for value in [0usize, 1, 127, 128, 255, 16_383, 16_384, 65_535] {
            let mut out = Vec::new();
            compact_u16(&mut out, value);
            let mut reader = Reader { bytes: &out, at: 0 };
            assert_eq!(reader.compact_u16(), Some(value), "{value}");
            assert_eq!(reader.at, out.len());
        }
        // 0x80 0x00 is zero written in two bytes: not the shortest form.
        assert_eq!(Reader { bytes: &[0x80, 0x00], at: 0 }.compact_u16(), None);
        assert_eq!(Reader { bytes: &[0xff, 0xff, 0x7f], at: 0 }.compact_u16(), None);
    }

    #[test]
    fn a_signed_transfer_reads_back_and_verifies() {
        let owner = SigningKey::from_bytes(&[7; 32]);
        let wire = sign_transfer(&owner, &transfer()).unwrap();
        let tx = Transaction::parse(&wire).unwrap();
        assert_eq!(tx.required_signatures, 2);
        assert_eq!(tx.signatures[0], [0; 64], "the fee payer's signature is left to the facilitator");
        assert!(tx.signed_by(1), "the owner's signature covers the message");
        assert!(!tx.signed_by(0));
        assert_eq!(tx.keys[0], [1; 32]);
        assert_eq!(tx.keys[1], address_of(&owner));
        assert_eq!(tx.blockhash, [9; 32]);
        assert_eq!(tx.transferred_amount(), Some(2_000));
        let (authority, mint, memo) = tx.payment_parts().unwrap();
        assert_eq!((authority, mint), (address_of(&owner), transfer().mint));
        assert_eq!(memo.as_deref(), Some("00112233445566778899aabbccddeeff"));
        let programs: Vec<String> = tx.instructions.iter().map(|ix| to_base58(tx.key(ix.program).unwrap())).collect();
        assert_eq!(programs, [COMPUTE_BUDGET_PROGRAM, COMPUTE_BUDGET_PROGRAM, TOKEN_PROGRAM, MEMO_PROGRAM]);
        assert_eq!(tx.instructions[0].data, [2, 0x20, 0x4e, 0, 0]);
        assert_eq!(tx.instructions[2].accounts, [2, 4, 3, 1]);
        assert_eq!(tx.instructions[2].data, [12, 0xd0, 0x07, 0, 0, 0, 0, 0, 0, 6]);
        // Ed25519 is deterministic: the same transfer is the same bytes.
        assert_eq!(sign_transfer(&owner, &transfer()).unwrap(), wire);
        // Any change to the message breaks the owner's signature.
        let mut forged = wire.clone();
        let at = wire.len() - 40;
        forged[at] ^= 1;
        assert!(!Transaction::parse(&forged).is_some_and(|tx| tx.signed_by(1)));
    }

    #[test]
    fn truncated_or_padded_transactions_do_not_parse() {
        let owner = SigningKey::from_bytes(&[7; 32]);
        let wire = sign_transfer(&owner, &transfer()).unwrap();
        for cut in [0, 1, 65, 129, 130, wire.len() - 1] {
            assert!(Transaction::parse(&wire[..cut]).is_none(), "cut at {cut}");
        }
        let mut padded = wire.clone();
        padded.push(0);
        assert!(Transaction::parse(&padded).is_none());
        // Version 1 does not exist.
        let mut v1 = wire.clone();
        v1[129] = 0x81;
        assert!(Transaction::parse(&v1).is_none());
    }
}
