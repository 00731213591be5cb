//! Money amounts as statements print them: `1,234.56`, `1.234,56`, `1 234,56`, `1'234.56`,
//! with a sign in front or behind, in parentheses, or as `CR`/`DR`, with or without a
//! currency symbol or code. Amounts are kept exact, in hundredths (or the finest
//! decimals printed).

/// Which character parts decimals from units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decimal {
    /// `1,234.56`.
    Point,
    /// `1.234,56`.
    Comma,
}

/// An exact amount: `units / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amount {
    /// The value in the smallest unit printed.
    pub units: i128,
    /// Decimals.
    pub scale: u32,
}

impl Amount {
    /// Zero with two decimals.
    pub const ZERO: Amount = Amount { units: 0, scale: 2 };

    /// This amount with `scale` decimals (at least its own).
    pub fn at(self, scale: u32) -> Amount {
        if scale <= self.scale {
            return self;
        }
        Amount { units: self.units * 10i128.pow(scale - self.scale), scale }
    }

    /// The sum.
    pub fn plus(self, other: Amount) -> Amount {
        let scale = self.scale.max(other.scale);
        Amount { units: self.at(scale).units + other.at(scale).units, scale }
    }

    /// The difference `self - other`.
    pub fn minus(self, other: Amount) -> Amount {
        self.plus(Amount { units: -other.units, scale: other.scale })
    }

    /// The same amount.
    pub fn same(self, other: Amount) -> bool {
        let scale = self.scale.max(other.scale);
        self.at(scale).units == other.at(scale).units
    }

    /// Below zero.
    pub fn is_negative(self) -> bool {
        self.units < 0
    }

    /// As plain decimal text (`-1234.50`), at least two decimals.
    pub fn text(self) -> String {
        let a = self.at(2);
        let digits = a.units.unsigned_abs().to_string();
        let scale = a.scale as usize;
        let padded = format!("{digits:0>width$}", width = scale + 1);
        let (whole, fraction) = padded.split_at(padded.len() - scale);
        format!("{}{whole}.{fraction}", if a.units < 0 { "-" } else { "" })
    }

    /// As a floating-point number (for JSON and spreadsheets; exact for the amounts
    /// statements print, up to 15 digits).
    pub fn to_f64(self) -> f64 {
        self.text().parse().unwrap_or(0.0)
    }
}

/// Currency symbols and ISO codes that may stand beside an amount, with the currency
/// they name (`$` is taken for USD).
pub const CURRENCY_MARKS: &[(&str, &str)] = &[
    ("US$", "USD"),
    ("$", "USD"),
    ("€", "EUR"),
    ("£", "GBP"),
    ("¥", "JPY"),
    ("₹", "INR"),
    ("CHF", "CHF"),
    ("Fr.", "CHF"),
    ("kr", "SEK"),
    ("zł", "PLN"),
];

/// Three-letter codes recognised in the text as the statement's currency.
pub const CURRENCY_CODES: &[&str] =
    &["USD", "EUR", "GBP", "CHF", "CAD", "AUD", "NZD", "JPY", "SEK", "NOK", "DKK", "PLN", "INR", "CZK", "HUF", "ZAR"];

/// Whether `text` looks like an amount at all: digits with group and decimal marks, and
/// at most a sign, parentheses, a currency mark and CR/DR around them.
pub fn looks_like_amount(text: &str) -> bool {
    let core = strip_marks(text.trim()).0;
    let digits = core.chars().filter(char::is_ascii_digit).count();
    digits > 0
        && core.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | ' ' | '\'' | '\u{a0}' | '\u{202f}'))
        && ends_with_decimals(&core)
}

/// The amount decimals part: two digits after the last mark (or a whole number).
fn ends_with_decimals(core: &str) -> bool {
    match core.rfind(['.', ',']) {
        Some(i) => {
            let tail = &core[i + 1..];
            // `1,234` with three digits is a thousands group (a whole amount).
            tail.len() == 2 || tail.len() == 3 || (tail.len() == 1 && core[..i].chars().all(|c| c.is_ascii_digit()))
        }
        None => true,
    }
}

/// The text without currency marks, sign and CR/DR, and the sign found (`true` when
/// negative).
fn strip_marks(text: &str) -> (String, bool) {
    let mut t = text.trim().to_string();
    let mut negative = false;
    let upper = t.to_ascii_uppercase();
    for (suffix, neg) in [(" DR", true), ("DR", true), (" CR", false), ("CR", false), (" D", true), (" C", false)] {
        if upper.ends_with(suffix) && t.len() > suffix.len() {
            let cut = t.len() - suffix.len();
            if t[..cut].trim_end().ends_with(|c: char| c.is_ascii_digit()) {
                t.truncate(cut);
                negative = neg;
                break;
            }
        }
    }
    let mut t = t.trim().to_string();
    if t.starts_with('(') && t.ends_with(')') {
        t = t[1..t.len() - 1].trim().to_string();
        negative = true;
    }
    for (mark, _) in CURRENCY_MARKS {
        t = t.replace(mark, "");
    }
    for code in CURRENCY_CODES {
        t = t.replace(code, "");
    }
    let mut t = t.trim().to_string();
    for minus in ['-', '−', '–'] {
        if let Some(rest) = t.strip_prefix(minus) {
            t = rest.trim().to_string();
            negative = true;
        } else if let Some(rest) = t.strip_suffix(minus) {
            t = rest.trim().to_string();
            negative = true;
        }
    }
    if let Some(rest) = t.strip_prefix('+') {
        t = rest.trim().to_string();
    }
    // A currency mark between the sign and the digits (`-$12.00`).
    for (mark, _) in CURRENCY_MARKS {
        t = t.replace(mark, "");
    }
    (t.trim().to_string(), negative)
}

/// Parses `text` as an amount with decimals parted by `decimal`; `None` when it is not one.
pub fn parse(text: &str, decimal: Decimal) -> Option<Amount> {
    if !looks_like_amount(text) {
        return None;
    }
    let (core, negative) = strip_marks(text);
    let (group_marks, point) = match decimal {
        Decimal::Point => ([',', ' ', '\'', '\u{a0}', '\u{202f}'], '.'),
        Decimal::Comma => (['.', ' ', '\'', '\u{a0}', '\u{202f}'], ','),
    };
    let (whole, fraction) = match core.rsplit_once(point) {
        Some((w, f)) => (w.to_string(), f.to_string()),
        None => (core.clone(), String::new()),
    };
    if fraction.contains(group_marks) || !fraction.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Groups of three after the first.
    let groups: Vec<&str> = whole.split(group_marks).collect();
    if groups.len() > 1 && (groups[0].is_empty() || groups[0].len() > 3 || groups[1..].iter().any(|g| g.len() != 3)) {
        return None;
    }
    let digits: String = groups.concat();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || digits.len() + fraction.len() > 30 {
        return None;
    }
    let units: i128 = format!("{digits}{fraction}").parse().ok()?;
    let amount = Amount { units: if negative { -units } else { units }, scale: fraction.len() as u32 };
    Some(amount.at(2))
}

/// The decimal mark most amount-like texts use: `1.234,56` and `12,50` vote for a comma,
/// `1,234.56` and `12.50` for a point.
pub fn decimal_of<'a>(texts: impl Iterator<Item = &'a str>) -> Decimal {
    let (mut comma, mut point) = (0, 0);
    for text in texts {
        let (core, _) = strip_marks(text);
        if !looks_like_amount(text) {
            continue;
        }
        let bytes = core.as_bytes();
        let n = bytes.len();
        if n >= 3 && bytes[n - 3] == b',' {
            comma += 1;
        } else if n >= 3 && bytes[n - 3] == b'.' {
            point += 1;
        }
    }
    if comma > point { Decimal::Comma } else { Decimal::Point }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str, d: Decimal) -> Option<String> {
        parse(text, d).map(Amount::text)
    }

    #[test]
    fn amounts_of_the_common_locales_are_read_exactly() {
        use Decimal::*;
        assert_eq!(p("1,234.56", Point).as_deref(), Some("1234.56"));
        assert_eq!(p("-12.50", Point).as_deref(), Some("-12.50"));
        assert_eq!(p("(1,000.00)", Point).as_deref(), Some("-1000.00"));
        assert_eq!(p("12.00-", Point).as_deref(), Some("-12.00"));
        assert_eq!(p("$1,250.00", Point).as_deref(), Some("1250.00"));
        assert_eq!(p("-$7.10", Point).as_deref(), Some("-7.10"));
        assert_eq!(p("45.00 DR", Point).as_deref(), Some("-45.00"));
        assert_eq!(p("45.00CR", Point).as_deref(), Some("45.00"));
        assert_eq!(p("1.234,56", Comma).as_deref(), Some("1234.56"));
        assert_eq!(p("-12,50 €", Comma).as_deref(), Some("-12.50"));
        assert_eq!(p("1 234,56", Comma).as_deref(), Some("1234.56"));
        assert_eq!(p("1'234.56", Point).as_deref(), Some("1234.56"));
        assert_eq!(p("£0.99", Point).as_deref(), Some("0.99"));
        assert_eq!(p("900", Point).as_deref(), Some("900.00"));
        for text in ["12/01/2026", "Rent", "1,23,4.00", "12.3.4", "", "-", "12a"] {
            assert_eq!(p(text, Point), None, "{text}");
        }
        assert_eq!(p("1.234,56", Point), None);
    }

    #[test]
    fn the_decimal_mark_is_the_one_most_amounts_use() {
        assert_eq!(decimal_of(["1.234,56", "12,50", "3,00"].into_iter()), Decimal::Comma);
        assert_eq!(decimal_of(["1,234.56", "12.50", "7"].into_iter()), Decimal::Point);
    }

    #[test]
    fn sums_keep_every_cent() {
        let a = parse("0.10", Decimal::Point).unwrap();
        let mut total = Amount::ZERO;
        for _ in 0..3 {
            total = total.plus(a);
        }
        assert!(total.same(parse("0.30", Decimal::Point).unwrap()));
        assert_eq!(Amount { units: -5, scale: 2 }.text(), "-0.05");
        assert_eq!(parse("-0.05", Decimal::Point).unwrap().to_f64(), -0.05);
    }
}
