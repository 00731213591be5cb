//! `POST /v1/chain/calldata`: the function and arguments of raw calldata, decoded offline
//! with a given signature or with the bundled table of well-known signatures.
//!
//! A decode counts only when it is clean: alloy's dynamic ABI decoder reads the arguments,
//! every value is in range for its type (no dirty high bits in a `uint8`, no bytes after
//! a `bytes4`), and encoding the values again gives exactly the input bytes. So garbage
//! after a known selector, trailing bytes, dirty padding and aliased offsets never
//! "decode", and a selector collision only shows both functions when the data really is
//! a valid encoding for both.
//!
//! With `signature`, only that signature is tried. When its selector differs from the
//! calldata's, the answer is still 200: `decoded` is empty, `best` null and `note` says
//! the selectors differ (the input is well-formed; the mismatch is the answer).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::evm::abi::{self, DecodedArg};
use crate::evm::signatures::{self, Selector, Signature};
use crate::output::Reply;
use crate::price::Price;

/// Most hex digits of calldata accepted (64 KiB of calldata).
pub const MAX_CALLDATA_HEX_DIGITS: usize = 128 * 1024;

/// Request of `/v1/chain/calldata`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalldataInput {
    /// The calldata as 0x-prefixed hex: the 4-byte function selector, then the ABI-encoded arguments (an even number of hex digits, at least 8 and at most 131072 after the 0x).
    #[schemars(regex(pattern = r"^0x([0-9a-fA-F]{2}){4,}$"), length(min = 10, max = 131074))]
    pub calldata: String,
    /// A function signature to decode with, such as `transfer(address,uint256)` (parameter names, `function` and `returns (...)` are allowed and dropped). When omitted or null, the selector is looked up in the bundled table and every clean decode is returned.
    #[serde(default)]
    #[schemars(length(max = 1024), extend("format" = "solidity-function"))]
    pub signature: Option<String>,
}

/// The decoded calldata.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CalldataDecode {
    /// The first 4 bytes (the function selector) as 0x and 8 lower-case hex digits.
    pub selector: String,
    /// Byte length of the calldata, selector included.
    pub bytes: u64,
    /// The bundled table's signatures with this selector, best known first: unverified hints, since different functions can share a selector.
    pub candidates: Vec<String>,
    /// Every signature that decodes the arguments cleanly (the given `signature`, or the candidates), best known first.
    pub decoded: Vec<DecodedCall>,
    /// The best clean decode: the given signature's, or the best known candidate's; null when nothing decodes cleanly.
    pub best: Option<DecodedCall>,
    /// Warning that lookup matches are unverified hints and selectors can collide, with what was found; null when the given `signature` decoded cleanly.
    pub note: Option<String>,
}

/// One clean decode.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub struct DecodedCall {
    /// The canonical signature, such as `transfer(address,uint256)`.
    pub signature: String,
    /// The function's name.
    pub name: String,
    /// The arguments, in order.
    pub args: Vec<DecodedArg>,
}

/// The checked call.
pub struct CalldataCall {
    data: Vec<u8>,
    signature: Option<Signature>,
}

/// The route.
pub struct CalldataRoute;

impl Route for CalldataRoute {
    type Input = CalldataInput;
    type Prepared = CalldataCall;
    type Output = CalldataDecode;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/calldata",
        operation: "decode_calldata",
        family: Family::Chain,
        summary: "Function and arguments of raw calldata",
        description: "Decodes raw EVM calldata offline, reading no chain. With `signature`, decodes with that signature \
            only. Without it, looks the 4-byte selector up in a bundled table of 492 well-known function signatures \
            (ERC-20, EIP-2612, ERC-3009, ERC-721, ERC-1155, ERC-4626, WETH, Multicall3, Uniswap V2/V3/Universal Router, \
            Permit2, Safe, OpenZeppelin Ownable/AccessControl/Pausable, proxies, ERC-4337, Seaport, Aave, Compound, \
            Curve, Balancer, 1inch, CoW, Lido, bridges, governance, ENS, Chainlink) and returns every candidate that \
            decodes cleanly: in range for its types and re-encoding to exactly the input bytes. Matches by selector \
            are unverified hints; different functions can share a selector.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: CalldataInput, _ctx: &Context) -> Result<CalldataCall, EngineError> {
        let data = parse_calldata(&input.calldata)?;
        let signature = match input.signature.as_deref() {
            None => None,
            Some(text) => Some(
                signatures::parse_signature(text)
                    .map_err(|why| EngineError::invalid("/signature", format!("/signature: {why}")))?,
            ),
        };
        Ok(CalldataCall { data, signature })
    }

    fn quote(_: &CalldataCall) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: CalldataCall, _ctx: &Context) -> Result<Reply<CalldataDecode>, EngineError> {
        blocking(move || Ok(Reply::Json(decode(&call.data, call.signature.as_ref())))).await
    }
}

/// Reads the calldata field; every error names `/calldata`.
fn parse_calldata(text: &str) -> Result<Vec<u8>, EngineError> {
    let invalid = |why: String| EngineError::invalid("/calldata", format!("/calldata: {why}"));
    if text.len() > MAX_CALLDATA_HEX_DIGITS + 2 {
        return Err(invalid(format!(
            "the calldata has {} characters, more than the limit of {MAX_CALLDATA_HEX_DIGITS} hex digits (64 KiB)",
            text.len()
        )));
    }
    let Some(digits) = text.strip_prefix("0x") else {
        return Err(invalid("the calldata must be hex starting with 0x".into()));
    };
    if let Some((at, c)) = digits.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(invalid(format!("{c:?} at position {} is not a hex digit", at + 2)));
    }
    if !digits.len().is_multiple_of(2) {
        return Err(invalid(format!("the calldata has an odd number of hex digits ({})", digits.len())));
    }
    if digits.len() < 8 {
        return Err(invalid(format!(
            "the calldata has {} bytes; it needs at least the 4-byte function selector (8 hex digits)",
            digits.len() / 2
        )));
    }
    hex::decode(digits).map_err(|e| invalid(format!("not hex: {e}")))
}

/// The whole answer for `data` (at least 4 bytes, checked by [`parse_calldata`]).
pub fn decode(data: &[u8], signature: Option<&Signature>) -> CalldataDecode {
    let (selector, args) = match data.split_first_chunk::<4>() {
        Some((selector, args)) => (*selector, args),
        None => ([0; 4], data),
    };
    let table = signatures::table();
    let candidates: Vec<&Signature> = table.lookup(selector).collect();
    let mut answer = CalldataDecode {
        selector: hex_selector(selector),
        bytes: data.len() as u64,
        candidates: candidates.iter().map(|s| s.text.clone()).collect(),
        decoded: Vec::new(),
        best: None,
        note: None,
    };
    match signature {
        Some(sig) if sig.selector != selector => {
            answer.note = Some(format!(
                "The signature {} has selector {}, not the calldata's {}; nothing was decoded.",
                sig.text,
                hex_selector(sig.selector),
                answer.selector
            ));
        }
        Some(sig) => match clean_decode(sig, args) {
            Ok(call) => {
                answer.best = Some(call.clone());
                answer.decoded.push(call);
            }
            Err(why) => {
                answer.note = Some(format!("The arguments do not decode cleanly as {}: {why}.", sig.text));
            }
        },
        None => {
            let mut failures = Vec::new();
            for sig in &candidates {
                match clean_decode(sig, args) {
                    Ok(call) => answer.decoded.push(call),
                    Err(why) => failures.push(format!("{}: {why}", sig.text)),
                }
            }
            answer.best = answer.decoded.first().cloned();
            let found = match (candidates.len(), answer.decoded.len()) {
                (0, _) => format!(
                    "No signature in the table has selector {}; give `signature` to decode with one you know.",
                    answer.selector
                ),
                (1, 0) => {
                    format!("The one signature with this selector does not decode cleanly ({}).", failures.join(""))
                }
                (n, 0) => {
                    format!("None of the {n} signatures with this selector decodes cleanly ({}).", failures.join("; "))
                }
                (_, 1) => "One signature decodes the arguments cleanly.".to_string(),
                (_, n) => format!(
                    "{n} signatures decode the arguments cleanly (the selectors collide); best is the most widely used one, which is not proof that it is the function called."
                ),
            };
            answer.note = Some(format!(
                "Signatures are matched by selector alone from a bundled table of {} well-known functions: they are \
                 unverified hints, and different functions can share a selector. {found}",
                table.len()
            ));
        }
    }
    answer
}

fn hex_selector(selector: Selector) -> String {
    format!("0x{}", hex::encode(selector))
}

/// Decodes `args` with `sig`, or says why the decode is not clean.
fn clean_decode(sig: &Signature, args: &[u8]) -> Result<DecodedCall, String> {
    let values = abi::clean_decode(&sig.types, args).map_err(|why| {
        if sig.types.is_empty() {
            format!("{} bytes follow the selector and the function takes no arguments", args.len())
        } else {
            why
        }
    })?;
    Ok(DecodedCall {
        signature: sig.text.clone(),
        name: sig.name.clone(),
        args: abi::typed_values(&sig.types, &values),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::error::ErrorKind;
    use alloy::dyn_abi::{DynSolType, DynSolValue};
    use alloy::primitives::{Address, I256, U256};

    const ALICE: &str = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4";
    const BOB: &str = "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2";

    fn word_hex(value: &DynSolValue) -> String {
        hex::encode(value.abi_encode())
    }

    fn addr(text: &str) -> DynSolValue {
        DynSolValue::Address(text.parse::<Address>().unwrap())
    }

    fn uint(v: u64) -> DynSolValue {
        DynSolValue::Uint(U256::from(v), 256)
    }

    /// Calldata for `signature` with `values`, encoded by alloy.
    fn encode(signature: &str, values: Vec<DynSolValue>) -> String {
        let sig = signatures::parse_signature(signature).unwrap();
        let body =
            if values.is_empty() { Vec::new() } else { DynSolValue::Tuple(values).abi_encode_sequence().unwrap() };
        format!("0x{}{}", hex::encode(sig.selector), hex::encode(body))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    }

    /// Calls the route through the catalog and checks the answer against its published schema.
    fn call(body: serde_json::Value) -> Result<CalldataDecode, EngineError> {
        let mut catalog = Catalog::empty();
        crate::register(&mut catalog);
        let entry = catalog.by_path("/v1/chain/calldata").expect("route registered");
        let ctx = Context::new();
        let reply = runtime().block_on(entry.call(body.to_string().as_bytes(), &ctx))?;
        let Reply::Json(value) = reply else { panic!("not JSON") };
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let schema = entry.output_schema(&mut generator);
        let mut schema = serde_json::to_value(&schema).unwrap();
        let defs = serde_json::to_value(generator.definitions()).unwrap();
        schema.as_object_mut().unwrap().insert("$defs".into(), defs);
        let validator = jsonschema::validator_for(&schema).unwrap();
        let errors: Vec<String> = validator.iter_errors(&value).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "answer does not match the schema: {errors:?}\n{value:#}");
        for member in ["selector", "bytes", "candidates", "decoded", "best", "note"] {
            assert!(value.get(member).is_some(), "{member} missing from {value:#}");
        }
        Ok(serde_json::from_value(value).unwrap())
    }

    fn ok(body: serde_json::Value) -> CalldataDecode {
        call(body).unwrap()
    }

    fn err(body: serde_json::Value) -> EngineError {
        call(body).unwrap_err()
    }

    fn args(call: &DecodedCall) -> Vec<(&str, &str)> {
        call.args.iter().map(|a| (a.ty.as_str(), a.value.as_str())).collect()
    }

    #[test]
    fn decodes_transfer_approve_and_transfer_from() {
        let data = encode("transfer(address,uint256)", vec![addr(ALICE), uint(1_000_000)]);
        let answer = ok(serde_json::json!({ "calldata": data }));
        assert_eq!(answer.selector, "0xa9059cbb");
        assert_eq!(answer.bytes, 68);
        assert_eq!(answer.candidates, ["transfer(address,uint256)"]);
        assert_eq!(answer.decoded.len(), 1);
        let best = answer.best.unwrap();
        assert_eq!(best.signature, "transfer(address,uint256)");
        assert_eq!(best.name, "transfer");
        assert_eq!(args(&best), [("address", ALICE), ("uint256", "1000000")]);
        assert!(answer.note.unwrap().contains("unverified hints"));

        let max = DynSolValue::Uint(U256::MAX, 256);
        let data = encode("approve(address,uint256)", vec![addr(BOB), max]);
        let best = ok(serde_json::json!({ "calldata": data })).best.unwrap();
        assert_eq!(best.signature, "approve(address,uint256)");
        assert_eq!(args(&best), [("address", BOB), ("uint256", U256::MAX.to_string().as_str())]);

        let data = encode("transferFrom(address,address,uint256)", vec![addr(ALICE), addr(BOB), uint(42)]);
        let answer = ok(serde_json::json!({ "calldata": data.to_uppercase().replacen("0X", "0x", 1) }));
        // The collision partner takes one int128 and cannot consume three words.
        assert_eq!(answer.candidates, ["transferFrom(address,address,uint256)", "gasprice_bit_ether(int128)"]);
        assert_eq!(answer.decoded.len(), 1);
        assert_eq!(args(&answer.best.unwrap()), [("address", ALICE), ("address", BOB), ("uint256", "42")]);
    }

    #[test]
    fn decodes_nested_dynamic_types() {
        let inner = encode("transfer(address,uint256)", vec![addr(ALICE), uint(5)]);
        let inner_bytes = hex::decode(&inner[2..]).unwrap();
        let calls = DynSolValue::Array(vec![
            DynSolValue::Tuple(vec![addr(BOB), DynSolValue::Bool(true), DynSolValue::Bytes(inner_bytes.clone())]),
            DynSolValue::Tuple(vec![addr(ALICE), DynSolValue::Bool(false), DynSolValue::Bytes(Vec::new())]),
        ]);
        let data = encode("aggregate3((address,bool,bytes)[])", vec![calls]);
        let answer = ok(serde_json::json!({ "calldata": data }));
        let best = answer.best.unwrap();
        assert_eq!(best.signature, "aggregate3((address,bool,bytes)[])");
        assert_eq!(best.args.len(), 1);
        assert_eq!(best.args[0].ty, "(address,bool,bytes)[]");
        let value: serde_json::Value = serde_json::from_str(&best.args[0].value).unwrap();
        assert_eq!(
            value,
            serde_json::json!([[BOB, "true", format!("0x{}", hex::encode(&inner_bytes))], [ALICE, "false", "0x"]])
        );

        // bytes[] (multicall), with strings and fixed arrays through an explicit signature.
        let data = encode(
            "multicall(bytes[])",
            vec![DynSolValue::Array(vec![DynSolValue::Bytes(inner_bytes), DynSolValue::Bytes(vec![1, 2, 3])])],
        );
        let best = ok(serde_json::json!({ "calldata": data })).best.unwrap();
        assert_eq!(best.signature, "multicall(bytes[])");
        let value: Vec<String> = serde_json::from_str(&best.args[0].value).unwrap();
        assert_eq!(value[1], "0x010203");

        let data = encode(
            "note(string,uint8[2],int24,bytes4)",
            vec![
                DynSolValue::String("hé \"quoted\"".into()),
                DynSolValue::FixedArray(vec![
                    DynSolValue::Uint(U256::from(7), 8),
                    DynSolValue::Uint(U256::from(255), 8),
                ]),
                DynSolValue::Int(I256::try_from(-5i64).unwrap(), 24),
                DynSolValue::FixedBytes(alloy::primitives::B256::ZERO, 4),
            ],
        );
        let answer =
            ok(serde_json::json!({ "calldata": data, "signature": "note(string s, uint8[2], int24, bytes4)" }));
        assert_eq!(answer.note, None);
        let best = answer.best.unwrap();
        assert_eq!(best.signature, "note(string,uint8[2],int24,bytes4)");
        assert_eq!(
            args(&best),
            [("string", "hé \"quoted\""), ("uint8[2]", r#"["7","255"]"#), ("int24", "-5"), ("bytes4", "0x00000000")]
        );
    }

    #[test]
    fn unknown_selector_gives_nothing() {
        let answer = ok(
            serde_json::json!({ "calldata": "0xdeadbeef0000000000000000000000000000000000000000000000000000000000000001" }),
        );
        assert_eq!(answer.selector, "0xdeadbeef");
        assert_eq!(answer.bytes, 36);
        assert!(answer.candidates.is_empty());
        assert!(answer.decoded.is_empty());
        assert_eq!(answer.best, None);
        assert!(answer.note.unwrap().contains("No signature in the table"));
    }

    #[test]
    fn garbage_after_a_known_selector_does_not_decode() {
        let transfer = encode("transfer(address,uint256)", vec![addr(ALICE), uint(1)]);
        let cases = [
            // Too short.
            "0xa9059cbb1234".to_string(),
            // Dirty high bytes in the address word.
            format!("0xa9059cbb{}{}", "ff".repeat(12) + &ALICE[2..].to_lowercase(), word_hex(&uint(1))),
            // A trailing extra word.
            format!("{transfer}{}", word_hex(&uint(9))),
            // Not word-aligned.
            format!("{transfer}00"),
            // Random bytes.
            format!("0xa9059cbb{}", "37".repeat(64)),
        ];
        for data in cases {
            let answer = ok(serde_json::json!({ "calldata": data }));
            assert_eq!(answer.candidates, ["transfer(address,uint256)"], "{data}");
            assert!(answer.decoded.is_empty(), "{data}: {:?}", answer.decoded);
            assert_eq!(answer.best, None);
            let note = answer.note.unwrap();
            assert!(
                note.contains(
                    "The one signature with this selector does not decode cleanly (transfer(address,uint256): "
                ),
                "{note}"
            );
        }
        // A function without arguments followed by bytes.
        let answer = ok(serde_json::json!({ "calldata": "0x18160ddd00" }));
        assert_eq!(answer.candidates, ["totalSupply()"]);
        assert!(answer.decoded.is_empty());
        let answer = ok(serde_json::json!({ "calldata": "0x18160ddd" }));
        assert_eq!(answer.best.unwrap().args, []);
    }

    #[test]
    fn values_out_of_range_for_narrow_types_do_not_decode() {
        let sig = "f(uint8,int16,bytes2,bool)";
        let good = encode(
            sig,
            vec![
                DynSolValue::Uint(U256::from(200), 8),
                DynSolValue::Int(I256::try_from(-300i64).unwrap(), 16),
                DynSolValue::FixedBytes(alloy::primitives::B256::right_padding_from(&[0xab, 0xcd]), 2),
                DynSolValue::Bool(true),
            ],
        );
        let answer = ok(serde_json::json!({ "calldata": good, "signature": sig }));
        assert_eq!(
            args(answer.best.as_ref().unwrap()),
            [("uint8", "200"), ("int16", "-300"), ("bytes2", "0xabcd"), ("bool", "true")]
        );
        let words: Vec<String> =
            good.as_bytes()[10..].chunks(64).map(|c| String::from_utf8(c.to_vec()).unwrap()).collect();
        let bad_words = [
            format!("{:0>64x}", 256),            // uint8 of 256
            format!("{:0>64x}", 0x8000),         // int16 of 32768 without sign extension
            format!("abcd{}01", "0".repeat(58)), // bytes2 with a stray byte
            format!("{:0>64x}", 2),              // bool of 2
        ];
        for (i, bad) in bad_words.iter().enumerate() {
            let mut w = words.clone();
            w[i] = bad.clone();
            let data = format!("{}{}", &good[..10], w.concat());
            let answer = ok(serde_json::json!({ "calldata": data, "signature": sig }));
            assert!(answer.decoded.is_empty(), "word {i}: {:?}", answer.decoded);
            assert!(
                answer.note.unwrap().starts_with("The arguments do not decode cleanly as f(uint8,int16,bytes2,bool)")
            );
        }
    }

    #[test]
    fn collisions_list_every_clean_decode_best_known_first() {
        // burn(uint256) and collate_propagate_storage(bytes16) share 0x42966c68; a value
        // whose low 16 bytes are zero is a valid encoding of both.
        let both = format!("0x42966c68{}{}", "11".repeat(16), "00".repeat(16));
        let answer = ok(serde_json::json!({ "calldata": both }));
        assert_eq!(answer.candidates, ["burn(uint256)", "collate_propagate_storage(bytes16)"]);
        assert_eq!(answer.decoded.len(), 2);
        let best = answer.best.unwrap();
        assert_eq!(best.signature, "burn(uint256)");
        assert_eq!(answer.decoded[1].args[0].value, format!("0x{}", "11".repeat(16)));
        assert!(answer.note.unwrap().contains("2 signatures decode"));

        // A small amount is only a uint256.
        let burn = encode("burn(uint256)", vec![uint(1000)]);
        let answer = ok(serde_json::json!({ "calldata": burn }));
        assert_eq!(answer.candidates.len(), 2);
        assert_eq!(answer.decoded.len(), 1);
        assert_eq!(args(&answer.best.unwrap()), [("uint256", "1000")]);
    }

    #[test]
    fn explicit_signature() {
        let data = encode("transfer(address,uint256)", vec![addr(ALICE), uint(7)]);
        let answer = ok(serde_json::json!({ "calldata": data, "signature": "transfer(address to, uint amount)" }));
        assert_eq!(answer.decoded.len(), 1);
        assert_eq!(answer.note, None);
        assert_eq!(answer.candidates, ["transfer(address,uint256)"]);
        assert_eq!(args(&answer.best.unwrap()), [("address", ALICE), ("uint256", "7")]);

        // Not in the table: decoded all the same.
        let data = encode(
            "myFunc(address[],string)",
            vec![DynSolValue::Array(vec![addr(BOB)]), DynSolValue::String("x".into())],
        );
        let answer = ok(serde_json::json!({ "calldata": data, "signature": "myFunc(address[],string)" }));
        assert!(answer.candidates.is_empty());
        assert_eq!(args(&answer.best.unwrap()), [("address[]", format!("[\"{BOB}\"]").as_str()), ("string", "x")]);

        // A different selector: a clear answer, nothing decoded.
        let data = encode("transfer(address,uint256)", vec![addr(ALICE), uint(7)]);
        let answer = ok(serde_json::json!({ "calldata": data, "signature": "approve(address,uint256)" }));
        assert!(answer.decoded.is_empty());
        assert_eq!(answer.best, None);
        let note = answer.note.unwrap();
        assert!(note.contains("has selector 0x095ea7b3, not the calldata's 0xa9059cbb"), "{note}");

        // The right selector with data that does not fit.
        let answer = ok(serde_json::json!({ "calldata": "0xa9059cbb", "signature": "transfer(address,uint256)" }));
        assert!(answer.decoded.is_empty());
        assert!(answer.note.unwrap().contains("do not decode cleanly"));

        // null is the same as omitted.
        let answer = ok(serde_json::json!({ "calldata": data, "signature": null }));
        assert!(answer.note.unwrap().contains("unverified hints"));
    }

    #[test]
    fn aliased_offsets_are_refused_without_decoding() {
        // uint256[][][] whose every element points at the same array: a few kilobytes that
        // would expand to millions of values.
        let n = 100usize;
        let mut words: Vec<String> = Vec::new();
        let w = |v: usize| format!("{v:064x}");
        words.push(w(32)); // offset of the outer array
        words.push(w(n)); // outer length
        // n offsets (relative to the elements' start) all pointing at the same middle array
        for _ in 0..n {
            words.push(w(n * 32));
        }
        words.push(w(n)); // middle length
        for _ in 0..n {
            words.push(w(n * 32));
        }
        words.push(w(n)); // inner length
        for i in 0..n {
            words.push(w(i));
        }
        let selector = signatures::parse_signature("f(uint256[][][])").unwrap().selector;
        let data = format!("0x{}{}", hex::encode(selector), words.concat());
        let answer = ok(serde_json::json!({ "calldata": data, "signature": "f(uint256[][][])" }));
        assert!(answer.decoded.is_empty());
        assert!(answer.note.unwrap().contains("not a canonical encoding"));
        // alloy alone would build the million values: the walk is what refuses them.
        let ty = DynSolType::Tuple(vec![DynSolType::parse("uint256[][][]").unwrap()]);
        let args = hex::decode(words.concat()).unwrap();
        assert!(ty.abi_decode_sequence(&args).is_ok());

        // Canonical nesting, empty members included, stays within the walk's budget.
        let empty = DynSolValue::Array(Vec::new());
        let nested = DynSolValue::Array(vec![
            DynSolValue::Array(vec![empty.clone(), DynSolValue::Array(vec![uint(1), uint(2)])]),
            empty.clone(),
            DynSolValue::Array(vec![empty.clone()]),
        ]);
        let bytes = DynSolValue::Array(vec![DynSolValue::Bytes(Vec::new()), DynSolValue::Bytes(vec![9; 33])]);
        let static_tuples = DynSolValue::Array(vec![DynSolValue::Tuple(vec![addr(ALICE), uint(3)]); 3]);
        let sig = "g(uint256[][][],bytes[],(address,uint256)[])";
        let data = encode(sig, vec![nested, bytes, static_tuples]);
        let answer = ok(serde_json::json!({ "calldata": data, "signature": sig }));
        let best = answer.best.expect("canonical nesting decodes");
        assert_eq!(best.args[0].value, r#"[[[],["1","2"]],[],[[]]]"#);
        assert_eq!(best.args[2].value, format!(r#"[["{ALICE}","3"],["{ALICE}","3"],["{ALICE}","3"]]"#));
    }

    /// A value of `ty` built from `seed`, for round trips.
    fn sample(ty: &DynSolType, seed: u8) -> DynSolValue {
        match ty {
            DynSolType::Address => DynSolValue::Address(Address::with_last_byte(seed)),
            DynSolType::Bool => DynSolValue::Bool(seed.is_multiple_of(2)),
            DynSolType::Int(bits) => DynSolValue::Int(I256::try_from(-i64::from(seed)).unwrap(), *bits),
            DynSolType::Uint(bits) => DynSolValue::Uint(U256::from(seed), *bits),
            DynSolType::FixedBytes(size) => {
                let mut word = alloy::primitives::B256::ZERO;
                word[..*size].fill(seed);
                DynSolValue::FixedBytes(word, *size)
            }
            DynSolType::Bytes => DynSolValue::Bytes(vec![seed; usize::from(seed % 40)]),
            DynSolType::String => DynSolValue::String(format!("s{seed}")),
            DynSolType::Array(inner) => DynSolValue::Array(vec![sample(inner, seed), sample(inner, seed + 1)]),
            DynSolType::FixedArray(inner, n) => DynSolValue::FixedArray((0..*n).map(|_| sample(inner, seed)).collect()),
            DynSolType::Tuple(members) => {
                DynSolValue::Tuple(members.iter().enumerate().map(|(i, m)| sample(m, seed + i as u8)).collect())
            }
            DynSolType::Function => DynSolValue::Function(alloy::primitives::Function::repeat_byte(seed)),
            #[allow(unreachable_patterns)]
            other => panic!("no sample for {other:?}"),
        }
    }

    #[test]
    fn every_table_signature_round_trips() {
        for sig in signatures::table().entries() {
            let values: Vec<DynSolValue> = sig.types.iter().enumerate().map(|(i, t)| sample(t, 3 + i as u8)).collect();
            let data = hex::decode(&encode(&sig.text, values)[2..]).unwrap();
            let answer = decode(&data, None);
            assert!(answer.decoded.iter().any(|d| d.signature == sig.text), "{}: {:?}", sig.text, answer.note);
            assert!(answer.best.is_some());
        }
    }

    #[test]
    fn hostile_data_never_panics() {
        // A small deterministic generator: words of small numbers (offsets and lengths that
        // land inside the data), huge numbers and random bytes, after every table selector.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for sig in signatures::table().entries() {
            for round in 0..8 {
                let words = (next() % 24) as usize;
                let mut data = sig.selector.to_vec();
                for _ in 0..words {
                    let mut word = [0u8; 32];
                    match next() % 4 {
                        0 => word[31] = (next() % 16 * 32) as u8,
                        1 => word[31] = (next() % 8) as u8,
                        2 => word.fill(0xff),
                        _ => word.iter_mut().for_each(|b| *b = next() as u8),
                    }
                    data.extend_from_slice(&word);
                }
                if round == 7 {
                    data.push(1);
                }
                let answer = decode(&data, None);
                assert!(answer.decoded.iter().all(|d| answer.candidates.contains(&d.signature)));
            }
        }
    }

    #[test]
    fn every_error_names_its_field() {
        let long = format!("0x{}", "ab".repeat(MAX_CALLDATA_HEX_DIGITS / 2 + 1));
        let ok_long = format!("0x{}", "ab".repeat(MAX_CALLDATA_HEX_DIGITS / 2));
        for (body, field) in [
            (serde_json::json!({}), "/calldata"),
            (serde_json::json!({ "calldata": 12 }), "/calldata"),
            (serde_json::json!({ "calldata": "a9059cbb" }), "/calldata"),
            (serde_json::json!({ "calldata": "0Xa9059cbb" }), "/calldata"),
            (serde_json::json!({ "calldata": "0xa9059cb" }), "/calldata"),
            (serde_json::json!({ "calldata": "0xa9059c" }), "/calldata"),
            (serde_json::json!({ "calldata": "0x" }), "/calldata"),
            (serde_json::json!({ "calldata": "0xa9059cbg" }), "/calldata"),
            (serde_json::json!({ "calldata": "0xa9059cbb " }), "/calldata"),
            (serde_json::json!({ "calldata": long }), "/calldata"),
            (serde_json::json!({ "calldata": "0xa9059cbb", "signature": "transfer" }), "/signature"),
            (serde_json::json!({ "calldata": "0xa9059cbb", "signature": "transfer(adress)" }), "/signature"),
            (serde_json::json!({ "calldata": "0xa9059cbb", "signature": "" }), "/signature"),
            (serde_json::json!({ "calldata": "0xa9059cbb", "signature": 5 }), "/signature"),
            (serde_json::json!({ "calldata": "0xa9059cbb", "chain": "base" }), "/chain"),
        ] {
            let e = err(body.clone());
            assert_eq!(e.kind, ErrorKind::InvalidInput, "{body}");
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {e:?}");
            assert!(e.message.starts_with(field), "{body}: {}", e.message);
        }
        // The limit itself is accepted.
        let answer = ok(serde_json::json!({ "calldata": ok_long }));
        assert_eq!(answer.bytes, (MAX_CALLDATA_HEX_DIGITS / 2) as u64);
    }

    #[test]
    fn the_description_states_the_table_size() {
        let size = signatures::table().len().to_string();
        assert!(CalldataRoute::INFO.description.contains(&format!(" {size} well-known")), "table has {size}");
        let readme = include_str!("../../../data/README.md");
        assert!(readme.contains(&format!("{size} signatures")), "README does not state {size}");
    }
}
