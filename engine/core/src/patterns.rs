//! Pieces of the JSON Schema (ECMA 262) patterns in the published request schemas. Each
//! pattern is the text form of a check the engine makes, and a test holds the two together
//! through a JSON Schema validator, so a client that matches the schema is never refused
//! for the form of a value.

/// The characters `str::trim` removes (Unicode White_Space), as the inside of a character
/// class.
#[macro_export]
#[doc(hidden)]
macro_rules! __white_space {
    () => {
        "\\t\\n\\u000B\\f\\r \\u0085\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000"
    };
}
pub use crate::__white_space as white_space;

/// Matches (unanchored, as JSON Schema applies patterns) a text with a character other than
/// the blanks `str::trim` removes: the published form of "not blank".
pub const NOT_BLANK: &str = concat!("[^", white_space!(), "]");

/// An alternation matching the decimal numerals (leading zeros allowed, at most as many
/// digits as `limit`) whose value is below `limit`, itself a numeral without leading zeros.
pub fn decimal_below(limit: &str) -> String {
    let digits: Vec<u32> = limit.chars().map(|c| c.to_digit(10).expect("a decimal numeral")).collect();
    let n = digits.len();
    let mut branches = Vec::new();
    if n > 1 {
        branches.push(format!("[0-9]{{1,{}}}", n - 1));
    }
    for (i, &d) in digits.iter().enumerate() {
        if d == 0 {
            continue;
        }
        let rest = n - i - 1;
        let tail = if rest == 0 { String::new() } else { format!("[0-9]{{{rest}}}") };
        branches.push(format!("{}[0-{}]{tail}", &limit[..i], d - 1));
    }
    branches.join("|")
}

/// What [`crate::evm::parse_uint256`] reads: 0x and 1 to 64 hex digits, or a decimal number
/// below 2^256, with blanks around either.
pub fn uint256() -> String {
    let blank = white_space!();
    let below = decimal_below("115792089237316195423570985008687907853269984665640564039457584007913129639936");
    format!("^[{blank}]*(?:0[xX][0-9a-fA-F]{{1,64}}|{below})[{blank}]*$")
}

/// What the bank-statement reader's date patterns take (`paperchain_docs::statement`): one day (`D`, `DD`, `d`,
/// `dd`), one month (`M` to `MMMM`) and at most one year (`YY`, `YYYY`, either case), in any
/// order, with spaces, tabs and ASCII punctuation around them.
pub fn date_format() -> String {
    let between = r"[ \t!-/:-@\[-`{-~]*";
    let (day, month, year) = (r"(?:D{1,2}|d{1,2})", "M{1,4}", "(?:Y{4}|Y{2}|y{4}|y{2})");
    let optional_year = format!("(?:{year})?");
    let orders = [
        [day, month, &optional_year],
        [month, day, &optional_year],
        [year, month, day],
        [year, day, month],
        [day, year, month],
        [month, year, day],
    ];
    let branches: Vec<String> =
        orders.iter().map(|parts| parts.iter().map(|part| format!("{part}{between}")).collect::<String>()).collect();
    format!("^{between}(?:{})$", branches.join("|"))
}

/// A JSON Schema validator of strings with `pattern`: how the tests that hold a published
/// pattern to its check read the pattern (here and in the crates of routes, through the
/// `testing` feature).
#[cfg(any(test, feature = "testing"))]
pub fn validator(pattern: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&serde_json::json!({ "type": "string", "pattern": pattern })).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_blank_is_what_trim_leaves_something_of() {
        let validator = validator(NOT_BLANK);
        for code in (0..0x3100).chain([0xFEFF, 0x180E, 0x1F600]) {
            let Some(c) = char::from_u32(code) else { continue };
            for text in [c.to_string(), format!(" {c} "), format!("{c}\u{3000}")] {
                let kept = !text.trim().is_empty();
                assert_eq!(validator.is_valid(&serde_json::json!(text)), kept, "{text:?} (U+{code:04X})");
            }
        }
    }

    #[test]
    fn decimals_below_a_limit_are_exactly_those_below_it() {
        for limit in [7u64, 10, 100, 305, 1000, 4_294_967_296, 90_009] {
            let validator = validator(&format!("^(?:{})$", decimal_below(&limit.to_string())));
            let width = limit.to_string().len();
            for n in (0..limit.min(2_000)).chain(limit.saturating_sub(2_000)..limit + 2_000) {
                let text = n.to_string();
                let fits = n < limit;
                assert_eq!(validator.is_valid(&serde_json::json!(text)), fits, "{text} below {limit}");
                let padded = format!("{n:0width$}");
                assert_eq!(validator.is_valid(&serde_json::json!(padded)), fits && padded.len() == width, "{padded}");
            }
        }
    }

    #[test]
    fn uint256_is_what_parse_uint256_reads() {
        let validator = validator(&uint256());
        let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        let past = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        let texts = [
            "0",
            "3",
            max,
            past,
            &"9".repeat(77),
            &"9".repeat(78),
            &"0".repeat(78),
            "0x0",
            "0X1f",
            "0x",
            "x1",
            &format!("0x{}", "f".repeat(64)),
            &format!("0x{}", "f".repeat(65)),
            " 5\t",
            "5 5",
            "-1",
            "+1",
            "1e3",
            "\u{3000}0x10\u{a0}",
            "0x1g",
            "",
        ];
        for text in texts {
            let read = crate::evm::parse_uint256(text).is_some();
            assert_eq!(validator.is_valid(&serde_json::json!(text)), read, "{text:?}");
        }
    }
}
