//! Function signatures: parsing one (a user's or a table line) into its canonical form,
//! types and selector, and the bundled table of well-known signatures looked up by
//! selector (`engine/data/function-signatures.txt`, described in `engine/data/README.md`).
//!
//! Selectors are computed with keccak-256 when the table is first used, never stored, so
//! a line cannot carry a selector that disagrees with its text.

use std::collections::HashMap;
use std::sync::LazyLock;

use alloy::dyn_abi::{DynSolType, Specifier};
use alloy::json_abi::Function;
use alloy::primitives::keccak256;

/// The bundled table's text, one canonical signature a line.
const TABLE_TEXT: &str = include_str!("../../../data/function-signatures.txt");

/// Longest signature text accepted from a user.
pub const MAX_SIGNATURE_CHARS: usize = 1024;
/// Deepest nesting of arrays and tuples in one parameter type (alloy's decoder stops at 16 too).
const MAX_TYPE_DEPTH: usize = 16;
/// Most values a signature's types describe before any dynamic length is read (fixed-size
/// arrays multiply): the decoder builds a template of that size for each dynamic array element.
const MAX_TEMPLATE_VALUES: usize = 65_536;

/// A 4-byte function selector.
pub type Selector = [u8; 4];

/// A parsed function signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// Canonical text: `name(type,...)` with canonical type names and tuples for structs.
    pub text: String,
    /// The function's name.
    pub name: String,
    /// Parameter types, in order.
    pub types: Vec<DynSolType>,
    /// keccak-256 of `text`, first 4 bytes.
    pub selector: Selector,
    /// Return types, from `returns (...)` or the short form `f(address)(uint256)`; empty
    /// when the text gives none.
    pub outputs: Vec<DynSolType>,
}

/// Parses a signature such as `transfer(address,uint256)`; parameter names, `function` and
/// modifiers are accepted and dropped, type aliases (`uint`) are made canonical, and
/// return types (`returns (uint256)`, or `balanceOf(address)(uint256)` as `cast` writes
/// them) are kept in `outputs`. The error is a sentence for the user.
pub fn parse_signature(text: &str) -> Result<Signature, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("the signature is empty; give one such as transfer(address,uint256)".into());
    }
    if text.chars().count() > MAX_SIGNATURE_CHARS {
        return Err(format!("the signature is longer than {MAX_SIGNATURE_CHARS} characters"));
    }
    let function = Function::parse(text)
        .map_err(|e| format!("not a function signature such as transfer(address,uint256): {}", parser_error(&e)))?;
    let mut types = Vec::with_capacity(function.inputs.len());
    for (index, param) in function.inputs.iter().enumerate() {
        let ty = param.resolve().map_err(|e| {
            format!("parameter {} has type `{}`, which is not an ABI type: {}", index + 1, param.ty, first_line(&e))
        })?;
        check_type(&ty).map_err(|why| format!("parameter {} (`{}`): {why}", index + 1, ty.sol_type_name()))?;
        types.push(ty);
    }
    let mut outputs = Vec::with_capacity(function.outputs.len());
    for (index, param) in function.outputs.iter().enumerate() {
        let ty = param.resolve().map_err(|e| {
            format!("return value {} has type `{}`, which is not an ABI type: {}", index + 1, param.ty, first_line(&e))
        })?;
        check_type(&ty).map_err(|why| format!("return value {} (`{}`): {why}", index + 1, ty.sol_type_name()))?;
        outputs.push(ty);
    }
    let mut sig = Signature::new(function.name, types);
    sig.outputs = outputs;
    Ok(sig)
}

impl Signature {
    fn new(name: String, types: Vec<DynSolType>) -> Signature {
        let list: Vec<_> = types.iter().map(|t| t.sol_type_name()).collect();
        let text = format!("{name}({})", list.join(","));
        let hash = keccak256(text.as_bytes());
        let selector = [hash[0], hash[1], hash[2], hash[3]];
        Signature { text, name, types, selector, outputs: Vec::new() }
    }
}

/// Refuses types Solidity cannot declare and types too big to decode safely.
fn check_type(ty: &DynSolType) -> Result<(), String> {
    fn walk(ty: &DynSolType, depth: usize, values: &mut usize) -> Result<(), String> {
        if depth > MAX_TYPE_DEPTH {
            return Err(format!("arrays and tuples are nested more than {MAX_TYPE_DEPTH} deep"));
        }
        *values = values.saturating_add(1);
        if *values > MAX_TEMPLATE_VALUES {
            return Err(format!("the type describes more than {MAX_TEMPLATE_VALUES} values"));
        }
        match ty {
            DynSolType::Array(inner) => walk(inner, depth + 1, values),
            DynSolType::FixedArray(inner, size) => {
                if *size == 0 {
                    return Err("a fixed-size array needs a length of at least 1".into());
                }
                if *size > MAX_TEMPLATE_VALUES {
                    return Err(format!("the type describes more than {MAX_TEMPLATE_VALUES} values"));
                }
                // One element stands for all of them; count the rest without walking them.
                let before = *values;
                walk(inner, depth + 1, values)?;
                let per_element = *values - before;
                *values = before.saturating_add(per_element.saturating_mul(*size));
                if *values > MAX_TEMPLATE_VALUES {
                    return Err(format!("the type describes more than {MAX_TEMPLATE_VALUES} values"));
                }
                Ok(())
            }
            DynSolType::Tuple(members) => {
                if members.is_empty() {
                    return Err("an empty tuple is not a parameter type".into());
                }
                members.iter().try_for_each(|m| walk(m, depth + 1, values))
            }
            _ => Ok(()),
        }
    }
    walk(ty, 0, &mut 0)
}

/// alloy's parser draws a caret under the input; a field error says it in words.
fn parser_error(error: &impl std::fmt::Display) -> String {
    let text = error.to_string();
    let lines: Vec<&str> = text.lines().collect();
    match lines.as_slice() {
        [_, _, caret, rest @ ..] if caret.trim() == "^" => {
            let at = caret.find('^').unwrap_or_default() + 1;
            let what = rest.join(" ");
            let what = what.trim();
            if what.is_empty() {
                format!("unexpected text at character {at}")
            } else {
                format!("{what} at character {at}")
            }
        }
        _ => first_line(error),
    }
}

fn first_line(error: &impl std::fmt::Display) -> String {
    let text = error.to_string();
    text.lines().next().unwrap_or_default().trim().to_string()
}

/// The bundled signatures, in file order (best known first), indexed by selector.
pub struct SignatureTable {
    entries: Vec<Signature>,
    by_selector: HashMap<Selector, Vec<usize>>,
}

impl SignatureTable {
    /// Builds a table from `text` (one signature a line; `#` comments and blank lines
    /// skipped). Lines that do not parse are skipped and logged: the table's own test
    /// makes sure there are none.
    pub fn parse(text: &str) -> SignatureTable {
        let mut entries = Vec::new();
        let mut by_selector: HashMap<Selector, Vec<usize>> = HashMap::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            match parse_signature(line) {
                Ok(sig) => {
                    by_selector.entry(sig.selector).or_default().push(entries.len());
                    entries.push(sig);
                }
                Err(why) => tracing::error!(line, why, "skipping a bad line of the signature table"),
            }
        }
        SignatureTable { entries, by_selector }
    }

    /// Number of signatures.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every signature, in table order.
    pub fn entries(&self) -> &[Signature] {
        &self.entries
    }

    /// The signatures with `selector`, best known first.
    pub fn lookup(&self, selector: Selector) -> impl Iterator<Item = &Signature> {
        self.by_selector.get(&selector).into_iter().flatten().filter_map(|&i| self.entries.get(i))
    }
}

static TABLE: LazyLock<SignatureTable> = LazyLock::new(|| SignatureTable::parse(TABLE_TEXT));

/// The bundled table.
pub fn table() -> &'static SignatureTable {
    &TABLE
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn hex4(s: Selector) -> String {
        format!("0x{}", hex::encode(s))
    }

    #[test]
    fn every_line_is_canonical_unique_and_parses() {
        let lines: Vec<&str> =
            TABLE_TEXT.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        assert_eq!(lines.len(), table().len(), "a line of the table does not parse");
        let mut seen = HashSet::new();
        for (line, sig) in lines.iter().zip(table().entries()) {
            assert_eq!(*line, sig.text, "not canonical");
            assert!(seen.insert(*line), "duplicate line {line}");
        }
        assert!(table().len() >= 300, "{}", table().len());
    }

    #[test]
    fn selectors_are_the_well_known_ones() {
        for (text, selector) in [
            ("transfer(address,uint256)", "0xa9059cbb"),
            ("approve(address,uint256)", "0x095ea7b3"),
            ("transferFrom(address,address,uint256)", "0x23b872dd"),
            ("multicall(bytes[])", "0xac9650d8"),
            ("aggregate3((address,bool,bytes)[])", "0x82ad56cb"),
            ("execute(bytes,bytes[],uint256)", "0x3593564c"),
            ("exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))", "0x414bf389"),
            ("supply(address,uint256,address,uint16)", "0x617ba037"),
        ] {
            let sig = table().entries().iter().find(|s| s.text == text).expect(text);
            assert_eq!(hex4(sig.selector), selector, "{text}");
        }
    }

    #[test]
    fn the_table_holds_known_collisions() {
        for (selector, first, second) in [
            ([0x42, 0x96, 0x6c, 0x68], "burn(uint256)", "collate_propagate_storage(bytes16)"),
            ([0x23, 0xb8, 0x72, 0xdd], "transferFrom(address,address,uint256)", "gasprice_bit_ether(int128)"),
            ([0x41, 0x97, 0x3c, 0xd9], "putCurEpochConPubKeyBytes(bytes)", "f1121318093(bytes,bytes,uint64)"),
        ] {
            let found: Vec<&str> = table().lookup(selector).map(|s| s.text.as_str()).collect();
            assert_eq!(found, [first, second]);
        }
    }

    #[test]
    fn user_signatures_are_made_canonical() {
        let sig = parse_signature("function transfer(address to, uint amount) external returns (bool)").unwrap();
        assert_eq!(sig.text, "transfer(address,uint256)");
        assert_eq!(sig.name, "transfer");
        assert_eq!(sig.selector, [0xa9, 0x05, 0x9c, 0xbb]);
        assert_eq!(sig.outputs, [DynSolType::Bool]);
        let sig = parse_signature(" f((uint,bytes)[2], int) ").unwrap();
        assert_eq!(sig.text, "f((uint256,bytes)[2],int256)");
        assert_eq!(parse_signature("totalSupply()").unwrap().types, []);
        let short = parse_signature("balanceOf(address)(uint256)").unwrap();
        assert_eq!(
            (short.text.as_str(), short.outputs.as_slice()),
            ("balanceOf(address)", &[DynSolType::Uint(256)][..])
        );
        assert!(parse_signature("f() returns (uint7)").unwrap_err().starts_with("return value 1"));
    }

    #[test]
    fn bad_signatures_are_refused() {
        for bad in [
            "",
            "transfer",
            "transfer(address,uint256",
            "transfer(adress,uint256)",
            "transfer(address,,uint256)",
            "(address)",
            "f(uint256[0])",
            "f(())",
            "f(uint7)",
            "f(MyStruct)",
            "f(uint256[100000])",
            "f(uint256[300][300][])",
        ] {
            assert!(parse_signature(bad).is_err(), "{bad:?} was accepted");
        }
        let deep = format!("f(uint256{})", "[]".repeat(20));
        assert!(parse_signature(&deep).is_err());
        assert_eq!(
            parse_signature("transfer(address,uint256").unwrap_err(),
            "not a function signature such as transfer(address,uint256): expected `)` at character 25"
        );
        assert!(parse_signature("1abc()").unwrap_err().ends_with("unexpected text at character 1"));
        let long = format!("f({})", vec!["uint256"; 200].join(","));
        assert!(parse_signature(&long).unwrap_err().contains("longer than"));
    }
}
