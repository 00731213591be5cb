//! Text for XML documents the engine writes (XMP packets, Office Open XML parts).

/// The characters [`is_xml_char`] refuses, as the inside of a JSON Schema (ECMA 262)
/// character class.
macro_rules! xml_forbidden {
    () => {
        "\\u0000-\\u0008\\u000B\\u000C\\u000E-\\u001F\\uFFFE\\uFFFF"
    };
}

/// The published pattern of a text XML can hold.
pub const TEXT_PATTERN: &str = concat!("^[^", xml_forbidden!(), "]*$");

/// The published pattern of a text XML can hold that is not only blanks.
pub const LINE_PATTERN: &str = concat!(
    "^[^",
    xml_forbidden!(),
    "]*[^",
    xml_forbidden!(),
    crate::patterns::white_space!(),
    "][^",
    xml_forbidden!(),
    "]*$"
);

/// Whether XML 1.0 can carry `c` at all (tab, line feed and carriage return are the only
/// control characters it allows).
pub fn is_xml_char(c: char) -> bool {
    // The same characters as `xml_forbidden!`.
    !matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

/// `text` escaped for XML text and attribute values; characters XML cannot carry are dropped.
pub fn escape(text: &str) -> String {
    escape_with(text, true)
}

/// `text` escaped for element content only: the markup characters, quotes left as typed.
pub fn escape_text(text: &str) -> String {
    escape_with(text, false)
}

fn escape_with(text: &str, quotes: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&apos;"),
            c if !is_xml_char(c) => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_drops_what_xml_cannot_carry() {
        assert_eq!(escape(r#"<b>&"'"#), "&lt;b&gt;&amp;&quot;&apos;");
        assert_eq!(escape("a\u{1}b\tc\u{fffe}"), "ab\tc");
        assert_eq!(escape_text(r#"<b>&"'"#), "&lt;b&gt;&amp;\"'");
        assert!(is_xml_char('\t') && is_xml_char('\n') && is_xml_char('é'));
        assert!(!is_xml_char('\u{1}') && !is_xml_char('\u{c}') && !is_xml_char('\u{fffe}'));
    }
}
