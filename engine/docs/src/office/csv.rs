//! Writing CSV (RFC 4180, CRLF line ends) that a spreadsheet opens without running
//! anything: text that it would take for a formula is prefixed with `'` (route book §4).

/// One field: quoted when it holds a comma, a quote, a line break or outer spaces. With
/// `guard`, text starting with `= + - @`, a tab or a carriage return gets a leading `'`.
pub fn field(text: &str, guard: bool) -> String {
    let guarded;
    let text = if guard && text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        guarded = format!("'{text}");
        guarded.as_str()
    } else {
        text
    };
    if text.contains([',', '"', '\r', '\n']) || text.starts_with(' ') || text.ends_with(' ') {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// Rows of text cells as a CSV document, every text guarded except plain numbers
/// (`-12.50` is a number, not a formula).
pub fn document<R: AsRef<[String]>>(rows: &[R]) -> String {
    let mut out = String::new();
    for row in rows {
        let fields: Vec<String> = row.as_ref().iter().map(|t| field(t, !is_plain_number(t))).collect();
        out += &fields.join(",");
        out += "\r\n";
    }
    out
}

/// A number as a table prints it: optional sign, digits with optional `,` thousands
/// groups, optional decimals (`-1,234.50`, `+7`, `.5`).
pub fn is_plain_number(text: &str) -> bool {
    parse_plain_number(text).is_some()
}

/// The value of [`is_plain_number`] text.
pub fn parse_plain_number(text: &str) -> Option<f64> {
    let t = text.trim();
    let unsigned = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (unsigned, None),
    };
    if fraction.is_some_and(|f| f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let grouped = whole.contains(',');
    let groups: Vec<&str> = whole.split(',').collect();
    let whole_ok = if grouped {
        (1..=3).contains(&groups[0].len())
            && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()))
            && groups[1..].iter().all(|g| g.len() == 3)
    } else {
        whole.bytes().all(|b| b.is_ascii_digit()) && (!whole.is_empty() || fraction.is_some())
    };
    // A leading zero before more digits is a code (`007`), kept as text.
    let code = !grouped && whole.len() > 1 && whole.starts_with('0');
    if !whole_ok || code || (whole.is_empty() && fraction.is_none()) {
        return None;
    }
    t.replace(',', "").parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_and_formulas_guarded() {
        assert_eq!(field("plain", true), "plain");
        assert_eq!(field("a,b", true), "\"a,b\"");
        assert_eq!(field("say \"hi\"", false), "\"say \"\"hi\"\"\"");
        assert_eq!(field("=1+2", true), "'=1+2");
        assert_eq!(field("=1+2", false), "=1+2");
        assert_eq!(field("@SUM(A1)", true), "'@SUM(A1)");
        assert_eq!(field(" pad", true), "\" pad\"");
        assert_eq!(document(&[vec!["-12.50".to_string(), "-x".to_string()]]), "-12.50,'-x\r\n");
    }

    #[test]
    fn plain_numbers_are_told_from_codes_and_text() {
        for (text, value) in [("12", 12.0), ("-1,234.50", -1234.5), ("+7", 7.0), (".5", 0.5), ("0.25", 0.25)] {
            assert_eq!(parse_plain_number(text), Some(value), "{text}");
        }
        for text in ["007", "1,23", "12,3456", "1.2.3", "", "-", "12a", "1 000", "1.", "$5"] {
            assert_eq!(parse_plain_number(text), None, "{text}");
        }
    }
}
