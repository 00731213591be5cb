//! The one ABI layer of the chain routes: values decoded only when the encoding is clean,
//! values read from a caller's JSON for a signature's types, values shown as text, and
//! revert data explained (`Error(string)`, `Panic(uint256)`, the bundled custom errors of
//! `engine/data/error-signatures.txt`, or errors the caller declares).
//!
//! A decode counts only when it is clean: alloy's dynamic decoder reads the values, every
//! value is in range for its type (no dirty high bits in a `uint8`, nothing after a
//! `bytes4`), and encoding them again gives exactly the input bytes. So garbage, trailing
//! bytes, dirty padding and aliased offsets never "decode", and a selector collision shows
//! both candidates only when the data really is a valid encoding for both.

use std::collections::HashMap;
use std::sync::LazyLock;

use alloy::dyn_abi::{DynSolType, DynSolValue};
use alloy::primitives::{I256, U256};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::signatures::{self, Selector, Signature};
use crate::error::EngineError;

/// Decodes `data` as the sequence `types` (a function's arguments or return values, an
/// event's data), or says why the encoding is not clean.
pub fn clean_decode(types: &[DynSolType], data: &[u8]) -> Result<Vec<DynSolValue>, String> {
    if types.is_empty() {
        if !data.is_empty() {
            return Err(format!("{} bytes are left and no value is expected", data.len()));
        }
        return Ok(Vec::new());
    }
    if !data.len().is_multiple_of(32) {
        return Err(format!("the {} bytes are not a whole number of 32-byte words", data.len()));
    }
    if !within_budget(types, data) {
        return Err("offsets point into shared or missing data, which is not a canonical encoding".into());
    }
    let tuple = DynSolType::Tuple(types.to_vec());
    let value = tuple.abi_decode_sequence(data).map_err(|e| format!("the ABI decoder refused them ({e})"))?;
    check_ranges(&value)?;
    if value.abi_encode_sequence().as_deref() != Some(data) {
        return Err("encoding the decoded values again does not give the same bytes (dirty padding, \
            extra bytes or non-canonical offsets)"
            .into());
    }
    match value {
        DynSolValue::Tuple(values) => Ok(values),
        _ => Err("the ABI decoder did not answer a list of values".into()),
    }
}

/// Decodes one 32-byte word (an indexed event topic of a value type) as `ty`, cleanly.
pub fn clean_decode_word(ty: &DynSolType, word: &[u8; 32]) -> Result<DynSolValue, String> {
    let value = ty.abi_decode(word).map_err(|e| format!("the ABI decoder refused it ({e})"))?;
    check_ranges(&value)?;
    if value.abi_encode() != word {
        return Err("the word is not a clean encoding of its type".into());
    }
    Ok(value)
}

/// Whether decoding `types` from `data` builds no more values than `data` has words.
///
/// In a canonical encoding every value owns at least one word of its own, so a walk that
/// meets more values than there are words has found offsets pointing at shared data:
/// a few kilobytes of such data could make the decoder build millions of values.
fn within_budget(types: &[DynSolType], data: &[u8]) -> bool {
    let mut budget = data.len() / 32 + 1;
    walk_seq(types.iter(), data, &mut budget, 0).is_some()
}

fn walk_seq<'t>(
    types: impl Iterator<Item = &'t DynSolType>,
    buf: &[u8],
    budget: &mut usize,
    depth: usize,
) -> Option<()> {
    let mut head = 0usize;
    for ty in types {
        walk_value(ty, buf, head, budget, depth)?;
        let size = if ty.is_dynamic() { 32 } else { ty.minimum_words().checked_mul(32)? };
        head = head.checked_add(size)?;
    }
    Some(())
}

fn walk_value(ty: &DynSolType, buf: &[u8], head: usize, budget: &mut usize, depth: usize) -> Option<()> {
    if depth > 32 {
        return None;
    }
    if !ty.is_dynamic() {
        *budget = budget.checked_sub(ty.minimum_words().max(1))?;
        return Some(());
    }
    *budget = budget.checked_sub(1)?;
    let content = buf.get(read_usize(buf, head)?..)?;
    match ty {
        DynSolType::Array(inner) => {
            let len = read_usize(content, 0)?;
            if len > *budget {
                return None;
            }
            walk_seq(std::iter::repeat_n(&**inner, len), content.get(32..)?, budget, depth + 1)
        }
        DynSolType::FixedArray(inner, size) => {
            walk_seq(std::iter::repeat_n(&**inner, *size), content, budget, depth + 1)
        }
        DynSolType::Tuple(members) => walk_seq(members.iter(), content, budget, depth + 1),
        _ => Some(()),
    }
}

/// The content of a single dynamic `bytes` or `string` return value (its offset word, then
/// its length word, then the bytes), read leniently: trailing data is ignored, but every
/// offset and length must lie within `data`.
pub fn dynamic_bytes(data: &[u8]) -> Option<&[u8]> {
    let offset = read_usize(data, 0)?;
    let length = read_usize(data, offset)?;
    let start = offset.checked_add(32)?;
    data.get(start..start.checked_add(length)?)
}

/// A word at `pos` read as an offset or length: None past the end or when it does not fit.
fn read_usize(buf: &[u8], pos: usize) -> Option<usize> {
    let word = buf.get(pos..pos.checked_add(32)?)?;
    let (high, low) = word.split_at(24);
    if high.iter().any(|&b| b != 0) {
        return None;
    }
    usize::try_from(u64::from_be_bytes(low.try_into().ok()?)).ok()
}

/// alloy keeps the whole word for narrow types; a clean value has nothing beyond its width.
fn check_ranges(value: &DynSolValue) -> Result<(), String> {
    match value {
        DynSolValue::Uint(v, bits) if *bits < 256 && (*v >> *bits) != U256::ZERO => {
            Err(format!("a value is too large for uint{bits}"))
        }
        DynSolValue::Int(v, bits) if *bits < 256 => {
            let rest = v.asr(bits.saturating_sub(1));
            if rest == I256::ZERO || rest == I256::MINUS_ONE {
                Ok(())
            } else {
                Err(format!("a value is out of range for int{bits}"))
            }
        }
        DynSolValue::FixedBytes(word, size) if word.get(*size..).is_some_and(|rest| rest.iter().any(|&b| b != 0)) => {
            Err(format!("a bytes{size} value has bytes beyond its length"))
        }
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) | DynSolValue::Tuple(items) => {
            items.iter().try_for_each(check_ranges)
        }
        _ => Ok(()),
    }
}

/// The value as the text answers give: addresses EIP-55 checksummed, integers in decimal,
/// bytes as 0x hex, bools `true`/`false`, strings as given (untrusted data: returned, never
/// interpreted); arrays and tuples as JSON text of their elements' texts.
pub fn render(value: &DynSolValue) -> String {
    match value {
        DynSolValue::Array(_) | DynSolValue::FixedArray(_) | DynSolValue::Tuple(_) => render_json(value).to_string(),
        DynSolValue::Address(a) => a.to_checksum(None),
        DynSolValue::Function(f) => format!("0x{}", hex::encode(f.as_slice())),
        DynSolValue::Bool(b) => b.to_string(),
        DynSolValue::Int(v, _) => v.to_string(),
        DynSolValue::Uint(v, _) => v.to_string(),
        DynSolValue::FixedBytes(word, size) => {
            format!("0x{}", hex::encode(word.get(..*size).unwrap_or(word.as_slice())))
        }
        DynSolValue::Bytes(b) => format!("0x{}", hex::encode(b)),
        DynSolValue::String(s) => s.clone(),
        #[allow(unreachable_patterns)]
        other => format!("{other:?}"),
    }
}

fn render_json(value: &DynSolValue) -> Value {
    match value {
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) | DynSolValue::Tuple(items) => {
            Value::Array(items.iter().map(render_json).collect())
        }
        leaf => Value::String(render(leaf)),
    }
}

/// One decoded value with its type: an argument, a return value or an error's field.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct DecodedArg {
    /// The canonical ABI type, such as `uint256` or `(address,bytes)[]`.
    #[serde(rename = "type")]
    pub ty: String,
    /// The value as text: addresses EIP-55 checksummed, integers in decimal, bytes as 0x hex, bools `true`/`false`, strings as given; arrays and tuples as JSON text, an array of their elements' texts (tuples in member order).
    pub value: String,
}

/// `values` of `types`, as answers show them.
pub fn typed_values(types: &[DynSolType], values: &[DynSolValue]) -> Vec<DecodedArg> {
    types
        .iter()
        .zip(values)
        .map(|(ty, v)| DecodedArg { ty: ty.sol_type_name().into_owned(), value: render(v) })
        .collect()
}

// --- Hex inputs -----------------------------------------------------------------------

/// Bytes given as 0x hex at `field` (an even number of digits, at most `max_bytes` bytes);
/// every error names the field and says what is wrong.
pub fn parse_hex_bytes(field: &str, text: &str, max_bytes: usize) -> Result<Vec<u8>, EngineError> {
    let invalid = |why: String| EngineError::invalid(field, format!("{field}: {why}"));
    if text.len() > max_bytes.saturating_mul(2).saturating_add(2) {
        return Err(invalid(format!("{} characters is more than the limit of {max_bytes} bytes", text.len())));
    }
    let Some(digits) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) else {
        return Err(invalid("write the bytes as hex starting with 0x (\"0x\" for none)".into()));
    };
    if let Some((at, c)) = digits.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(invalid(format!("{:?} at position {} is not a hex digit", c, at + 2)));
    }
    if !digits.len().is_multiple_of(2) {
        return Err(invalid(format!("an odd number of hex digits ({}); each byte is two", digits.len())));
    }
    hex::decode(digits).map_err(|e| invalid(format!("not hex: {e}")))
}

/// A 32-byte word (a topic, a hash, a slot) given as 0x and 64 hex digits at `field`.
pub fn parse_word(field: &str, text: &str) -> Result<alloy::primitives::B256, EngineError> {
    let bytes = parse_hex_bytes(field, text, 32)?;
    <[u8; 32]>::try_from(bytes.as_slice()).map(alloy::primitives::B256::from).map_err(|_| {
        EngineError::invalid(field, format!("{field}: {} bytes; a 32-byte word is 0x and 64 hex digits", bytes.len()))
    })
}

// --- Values from a caller's JSON ------------------------------------------------------

/// Most argument values (leaves of arrays and tuples included) one request may give.
pub const MAX_ARG_VALUES: usize = 4096;

/// The arguments of `sig` read from `args` (a JSON array, one element per parameter).
///
/// Each element is a string in the notation `cast` accepts (`"1000000"`, `"0xabc…"`,
/// `"true"`, `"[1,2]"`, `"(0xabc…,5)"`), a JSON number, a bool, or for arrays and tuples a
/// JSON array of elements. The error is `(pointer, sentence)`, the pointer under `at`
/// (`/args/1/0`).
pub fn values_from_json(sig: &Signature, args: &[Value], at: &str) -> Result<Vec<DynSolValue>, (String, String)> {
    if args.len() != sig.types.len() {
        return Err((
            at.to_string(),
            format!(
                "{at}: {} takes {} argument{}, and {} {} given",
                sig.text,
                sig.types.len(),
                if sig.types.len() == 1 { "" } else { "s" },
                args.len(),
                if args.len() == 1 { "was" } else { "were" }
            ),
        ));
    }
    let mut count = 0usize;
    sig.types
        .iter()
        .zip(args)
        .enumerate()
        .map(|(i, (ty, arg))| value_from_json(ty, arg, &format!("{at}/{i}"), &mut count))
        .collect()
}

fn value_from_json(ty: &DynSolType, arg: &Value, at: &str, count: &mut usize) -> Result<DynSolValue, (String, String)> {
    *count += 1;
    if *count > MAX_ARG_VALUES {
        return Err((at.to_string(), format!("{at}: more than {MAX_ARG_VALUES} values in the arguments")));
    }
    let fail = |why: String| Err((at.to_string(), format!("{at}: {why}")));
    let text = match (ty, arg) {
        (DynSolType::Array(inner), Value::Array(items)) => {
            return items
                .iter()
                .enumerate()
                .map(|(i, item)| value_from_json(inner, item, &format!("{at}/{i}"), count))
                .collect::<Result<_, _>>()
                .map(DynSolValue::Array);
        }
        (DynSolType::FixedArray(inner, size), Value::Array(items)) => {
            if items.len() != *size {
                return fail(format!("a {} takes {size} elements, not {}", ty.sol_type_name(), items.len()));
            }
            return items
                .iter()
                .enumerate()
                .map(|(i, item)| value_from_json(inner, item, &format!("{at}/{i}"), count))
                .collect::<Result<_, _>>()
                .map(DynSolValue::FixedArray);
        }
        (DynSolType::Tuple(members), Value::Array(items)) => {
            if items.len() != members.len() {
                return fail(format!(
                    "the tuple {} has {} members, not {}",
                    ty.sol_type_name(),
                    members.len(),
                    items.len()
                ));
            }
            return members
                .iter()
                .zip(items)
                .enumerate()
                .map(|(i, (member, item))| value_from_json(member, item, &format!("{at}/{i}"), count))
                .collect::<Result<_, _>>()
                .map(DynSolValue::Tuple);
        }
        (_, Value::String(text)) => text.clone(),
        (_, Value::Number(n)) => n.to_string(),
        (_, Value::Bool(b)) => b.to_string(),
        (_, other) => {
            return fail(format!(
                "a {} is written as a string{}, not {}",
                ty.sol_type_name(),
                if matches!(ty, DynSolType::Array(_) | DynSolType::FixedArray(..) | DynSolType::Tuple(_)) {
                    " or a JSON array"
                } else {
                    ""
                },
                json_kind(other)
            ));
        }
    };
    let value = ty.coerce_str(&text).map_err(|e| {
        let why = e.to_string();
        let why = why.lines().next().unwrap_or_default().trim().to_string();
        (at.to_string(), format!("{at}: {text:?} is not a {} ({why})", ty.sol_type_name()))
    })?;
    if matches!(ty, DynSolType::String) {
        return Ok(value);
    }
    // A string for an array may hold many values: count them against the same bound.
    *count += count_leaves(&value).saturating_sub(1);
    if *count > MAX_ARG_VALUES {
        return fail(format!("more than {MAX_ARG_VALUES} values in the arguments"));
    }
    Ok(value)
}

fn count_leaves(value: &DynSolValue) -> usize {
    match value {
        DynSolValue::Array(items) | DynSolValue::FixedArray(items) | DynSolValue::Tuple(items) => {
            items.iter().map(count_leaves).sum::<usize>().max(1)
        }
        _ => 1,
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A signature at `sig_field` and its arguments at `args_field`, checked together; every
/// error names the field (or the argument) at fault. Shared by the routes that encode a call.
pub fn signature_and_args(
    text: &str,
    sig_field: &str,
    args: &[Value],
    args_field: &str,
) -> Result<(Signature, Vec<alloy::dyn_abi::DynSolValue>), EngineError> {
    let signature = signatures::parse_signature(text)
        .map_err(|why| EngineError::invalid(sig_field, format!("{sig_field}: {why}")))?;
    // The arguments are read for the signature's types: one that does not fit contradicts
    // the signature, which no schema of `args` alone can state.
    let values = values_from_json(&signature, args, args_field)
        .map_err(|(at, why)| EngineError::invalid_with("inconsistent_fields", at, why))?;
    Ok((signature, values))
}

/// Calldata of `sig` with `values`: the selector, then the encoded arguments.
pub fn encode_call(sig: &Signature, values: Vec<DynSolValue>) -> Vec<u8> {
    let mut data = sig.selector.to_vec();
    if !values.is_empty() {
        data.extend(DynSolValue::Tuple(values).abi_encode_sequence().unwrap_or_default());
    }
    data
}

/// Most error signatures a caller may declare.
pub const MAX_ERRORS: usize = 64;

/// The caller's error signatures at `field`, each error naming its element.
pub fn parse_errors(texts: &[String], field: &str) -> Result<Vec<Signature>, EngineError> {
    if texts.len() > MAX_ERRORS {
        return Err(EngineError::invalid(
            field,
            format!("{field}: at most {MAX_ERRORS} errors, {} given", texts.len()),
        ));
    }
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let text = text.trim();
            let text = text.strip_prefix("error ").unwrap_or(text);
            signatures::parse_signature(text)
                .map_err(|why| EngineError::invalid(format!("{field}/{i}"), format!("{field}/{i}: {why}")))
        })
        .collect()
}

/// Return values of `signature` from `data`, or a note saying why there are none.
pub fn decode_returns(signature: &Signature, data: &[u8]) -> (Vec<DecodedArg>, Option<String>) {
    if signature.outputs.is_empty() {
        let note = if data.is_empty() {
            "The call returned no data.".to_string()
        } else {
            "No return types were given, so the return data is not decoded; write them as `returns (uint256)`."
                .to_string()
        };
        return (Vec::new(), Some(note));
    }
    match clean_decode(&signature.outputs, data) {
        Ok(values) => (typed_values(&signature.outputs, &values), None),
        Err(_) if data.is_empty() => (
            Vec::new(),
            Some(
                "The call returned no data, so the return types do not fit: is there a contract at this address?"
                    .into(),
            ),
        ),
        Err(why) => {
            let types: Vec<_> = signature.outputs.iter().map(|t| t.sol_type_name()).collect();
            (Vec::new(), Some(format!("The return data does not decode as ({}): {why}.", types.join(","))))
        }
    }
}

// --- Revert data ----------------------------------------------------------------------

/// `Error(string)`, what `require(cond, "reason")` and `revert("reason")` throw.
pub const ERROR_SELECTOR: Selector = [0x08, 0xc3, 0x79, 0xa0];
/// `Panic(uint256)`, what failed assertions, overflows and bad indexes throw.
pub const PANIC_SELECTOR: Selector = [0x4e, 0x48, 0x7b, 0x71];

/// The bundled custom errors' text, one canonical error signature a line.
const ERRORS_TEXT: &str = include_str!("../../../data/error-signatures.txt");

static ERRORS: LazyLock<signatures::SignatureTable> = LazyLock::new(|| signatures::SignatureTable::parse(ERRORS_TEXT));

/// The bundled table of well-known custom errors (OpenZeppelin's ERC-6093 and access
/// errors, Permit2, Uniswap, Safe…), by selector.
pub fn error_table() -> &'static signatures::SignatureTable {
    &ERRORS
}

/// Why a call reverted, as far as its revert data tells.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct Revert {
    /// What the data is: `error` (`Error(string)`), `panic` (`Panic(uint256)`), `custom` (a custom error decoded cleanly), `unknown` (data no known error decodes) or `empty` (no data: `revert()`, a failed `require` without a message, out of gas, or a call to code that does not exist).
    pub kind: RevertKind,
    /// A plain-words explanation: the reason string (untrusted text from the contract), the panic's meaning, or the custom error with its arguments.
    pub message: String,
    /// The 4-byte selector of the revert data, 0x hex; null when there are fewer than 4 bytes.
    pub selector: Option<String>,
    /// The error's canonical signature (`Error(string)`, `ERC20InsufficientBalance(address,uint256,uint256)`); null when unknown or empty.
    pub signature: Option<String>,
    /// The error's arguments; empty when unknown.
    pub args: Vec<DecodedArg>,
    /// The panic code (`0x11` for an overflow); null unless `kind` is `panic`.
    pub panic_code: Option<String>,
    /// The raw revert data, 0x hex.
    pub data: String,
}

/// What revert data is.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RevertKind {
    /// `Error(string)`.
    Error,
    /// `Panic(uint256)`.
    Panic,
    /// A custom error decoded cleanly.
    Custom,
    /// Data that no known error decodes cleanly.
    Unknown,
    /// No data at all.
    Empty,
}

/// Explains revert `data`, trying `declared` errors (the caller's) before the bundled ones.
pub fn decode_revert(data: &[u8], declared: &[Signature]) -> Revert {
    let hex_data = format!("0x{}", hex::encode(data));
    let Some((selector, args)) = data.split_first_chunk::<4>() else {
        let (kind, message) = if data.is_empty() {
            (RevertKind::Empty, "reverted without data (revert(), a require without a message, running out of gas, or calling an address without code)".to_string())
        } else {
            (
                RevertKind::Unknown,
                format!("reverted with {} bytes of data, too short for an error selector", data.len()),
            )
        };
        return Revert {
            kind,
            message,
            selector: None,
            signature: None,
            args: Vec::new(),
            panic_code: None,
            data: hex_data,
        };
    };
    let mut revert = Revert {
        kind: RevertKind::Unknown,
        message: String::new(),
        selector: Some(format!("0x{}", hex::encode(selector))),
        signature: None,
        args: Vec::new(),
        panic_code: None,
        data: hex_data,
    };
    if *selector == ERROR_SELECTOR
        && let Ok(values) = clean_decode(&[DynSolType::String], args)
    {
        let reason = match values.first() {
            Some(DynSolValue::String(s)) => super::clean_text(s, 1024),
            _ => String::new(),
        };
        revert.kind = RevertKind::Error;
        revert.signature = Some("Error(string)".into());
        revert.args = vec![DecodedArg { ty: "string".into(), value: reason.clone() }];
        revert.message = format!("reverted: {reason}");
        return revert;
    }
    if *selector == PANIC_SELECTOR
        && let Ok(values) = clean_decode(&[DynSolType::Uint(256)], args)
    {
        let code = match values.first() {
            Some(DynSolValue::Uint(code, _)) => *code,
            _ => U256::ZERO,
        };
        revert.kind = RevertKind::Panic;
        revert.signature = Some("Panic(uint256)".into());
        revert.args = vec![DecodedArg { ty: "uint256".into(), value: code.to_string() }];
        revert.panic_code = Some(format!("{code:#x}"));
        revert.message = format!("panicked: {}", panic_meaning(code));
        return revert;
    }
    let candidates = declared.iter().filter(|s| s.selector == *selector).chain(error_table().lookup(*selector));
    for sig in candidates {
        if let Ok(values) = clean_decode(&sig.types, args) {
            let shown = typed_values(&sig.types, &values);
            let list: Vec<&str> = shown.iter().map(|v| v.value.as_str()).collect();
            revert.kind = RevertKind::Custom;
            revert.message = format!("reverted with the custom error {}({})", sig.name, list.join(", "));
            revert.signature = Some(sig.text.clone());
            revert.args = shown;
            return revert;
        }
    }
    revert.message = format!(
        "reverted with error selector {} and {} bytes of arguments, which no known error decodes; give the contract's \
         error signatures in `errors` to decode it",
        revert.selector.as_deref().unwrap_or_default(),
        args.len()
    );
    revert
}

/// What a Solidity panic code means.
pub fn panic_meaning(code: U256) -> String {
    let known: HashMap<u64, &str> = HashMap::from([
        (0x00, "a generic compiler-inserted panic"),
        (0x01, "an assert failed"),
        (0x11, "an arithmetic operation overflowed or underflowed"),
        (0x12, "division or modulo by zero"),
        (0x21, "a value too big or negative was converted to an enum"),
        (0x22, "a storage byte array was incorrectly encoded"),
        (0x31, "pop() on an empty array"),
        (0x32, "an array index was out of bounds"),
        (0x41, "too much memory was allocated"),
        (0x51, "a zero-initialised internal function was called"),
    ]);
    match u64::try_from(code).ok().and_then(|c| known.get(&c)) {
        Some(meaning) => format!("{meaning} (code {code:#x})"),
        None => format!("an unknown panic code {code:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::primitives::Address;

    fn sig(text: &str) -> Signature {
        signatures::parse_signature(text).unwrap()
    }

    #[test]
    fn json_arguments_become_values_and_errors_name_the_element() {
        let transfer = sig("transfer(address,uint256)");
        let alice = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
        let values = values_from_json(&transfer, &[Value::from(alice), Value::from(1_000_000)], "/args").unwrap();
        assert_eq!(values[0], DynSolValue::Address(alice.parse::<Address>().unwrap()));
        assert_eq!(values[1], DynSolValue::Uint(U256::from(1_000_000), 256));

        let nested = sig("f((address,uint8)[],string)");
        let args = serde_json::json!([[[alice, "7"], [alice, 8]], "hi"]);
        let values = values_from_json(&nested, args.as_array().unwrap(), "/args").unwrap();
        assert_eq!(render(&values[0]), format!("[[\"{alice}\",\"7\"],[\"{alice}\",\"8\"]]"));
        // The cast notation in one string works as well.
        let args = serde_json::json!([format!("[({alice},7)]"), "hi"]);
        assert!(values_from_json(&nested, args.as_array().unwrap(), "/args").is_ok());

        let args = serde_json::json!([[[alice, "256"]], "hi"]);
        let (at, why) = values_from_json(&nested, args.as_array().unwrap(), "/args").unwrap_err();
        assert_eq!(at, "/args/0/0/1");
        assert!(why.contains("uint8"), "{why}");
        let (at, why) = values_from_json(&transfer, &[Value::from(alice)], "/args").unwrap_err();
        assert_eq!(at, "/args");
        assert!(why.contains("takes 2 arguments, and 1 was given"), "{why}");
        let (at, _) = values_from_json(&transfer, &[Value::Null, Value::from(1)], "/args").unwrap_err();
        assert_eq!(at, "/args/0");
        let many = serde_json::json!([vec![1; MAX_ARG_VALUES + 1]]);
        let (_, why) = values_from_json(&sig("f(uint256[])"), many.as_array().unwrap(), "/args").unwrap_err();
        assert!(why.contains("more than"), "{why}");
    }

    #[test]
    fn reverts_are_explained() {
        let error = encode_call(&sig("Error(string)"), vec![DynSolValue::String("not enough".into())]);
        let revert = decode_revert(&error, &[]);
        assert_eq!((revert.kind, revert.message.as_str()), (RevertKind::Error, "reverted: not enough"));

        let panic = encode_call(&sig("Panic(uint256)"), vec![DynSolValue::Uint(U256::from(0x11), 256)]);
        let revert = decode_revert(&panic, &[]);
        assert_eq!(revert.kind, RevertKind::Panic);
        assert_eq!(revert.panic_code.as_deref(), Some("0x11"));
        assert!(revert.message.contains("overflowed"), "{}", revert.message);

        let alice: Address = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4".parse().unwrap();
        let custom = encode_call(
            &sig("ERC20InsufficientBalance(address,uint256,uint256)"),
            vec![
                DynSolValue::Address(alice),
                DynSolValue::Uint(U256::from(5), 256),
                DynSolValue::Uint(U256::from(9), 256),
            ],
        );
        let revert = decode_revert(&custom, &[]);
        assert_eq!(revert.kind, RevertKind::Custom);
        assert_eq!(revert.signature.as_deref(), Some("ERC20InsufficientBalance(address,uint256,uint256)"));
        assert_eq!(revert.args.len(), 3);

        let mine = sig("TooLate(uint64)");
        let data = encode_call(&mine, vec![DynSolValue::Uint(U256::from(77), 64)]);
        assert_eq!(decode_revert(&data, &[]).kind, RevertKind::Unknown);
        let revert = decode_revert(&data, std::slice::from_ref(&mine));
        assert_eq!(
            (revert.kind, revert.message.as_str()),
            (RevertKind::Custom, "reverted with the custom error TooLate(77)")
        );

        assert_eq!(decode_revert(&[], &[]).kind, RevertKind::Empty);
        assert_eq!(decode_revert(&[1, 2], &[]).kind, RevertKind::Unknown);
        // Error(string) with garbage after its selector is not an Error.
        assert_eq!(decode_revert(&[0x08, 0xc3, 0x79, 0xa0, 1], &[]).kind, RevertKind::Unknown);
    }

    #[test]
    fn the_error_table_parses_whole() {
        let lines = ERRORS_TEXT.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).count();
        assert_eq!(lines, error_table().len(), "a line of error-signatures.txt does not parse");
        for entry in error_table().entries() {
            assert!(ERRORS_TEXT.lines().any(|l| l.trim() == entry.text), "{} is not canonical", entry.text);
        }
    }
}
