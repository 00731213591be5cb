//! Dates as statements print them, read by a pattern: `DD/MM/YYYY`, `MM/DD/YY`,
//! `YYYY-MM-DD`, `DD.MM.YYYY`, `DD MMM YYYY`, `MMM D, YYYY`, `DD/MM` (the year taken from
//! the statement)… `DD` and `D` read a day of one or two digits, `MM` and `M` a month
//! number, `MMM` and `MMMM` a month name (English, German, French, Spanish, Italian or
//! Dutch, abbreviated or not), `YYYY` and `YY` the year; an ASCII punctuation mark
//! stands for itself, and a space or tab for any run of spaces.
//! [`crate::patterns::date_format`] says the same as a regular expression, for the
//! published schema.

use time::{Date, Month};

use crate::error::EngineError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Day,
    Month,
    MonthName,
    Year4,
    Year2,
    Space,
    Literal(char),
}

/// A date pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DatePattern {
    tokens: Vec<Token>,
    /// The pattern as written (`DD/MM/YYYY`).
    pub text: String,
}

/// The patterns tried, in this order, when the caller names none.
pub const CANDIDATES: &[&str] = &[
    "DD/MM/YYYY",
    "MM/DD/YYYY",
    "YYYY-MM-DD",
    "DD.MM.YYYY",
    "DD-MM-YYYY",
    "MM-DD-YYYY",
    "YYYY/MM/DD",
    "DD/MM/YY",
    "MM/DD/YY",
    "DD.MM.YY",
    "DD-MM-YY",
    "DD MMM YYYY",
    "DD-MMM-YYYY",
    "MMM DD, YYYY",
    "MMM DD YYYY",
    "DD MMM YY",
    "DD-MMM-YY",
    "DD MMM",
    "MMM DD",
    "DD/MM",
    "MM/DD",
    "DD.MM.",
    "DD.MM",
];

/// Month names and their abbreviations (lower case, without the final period).
const MONTHS: [&[&str]; 12] = [
    &["january", "jan", "januar", "janvier", "janv", "enero", "ene", "gennaio", "gen", "januari", "jän", "jänner"],
    &["february", "feb", "februar", "février", "fevrier", "févr", "fevr", "fév", "febrero", "febbraio", "februari"],
    &["march", "mar", "märz", "maerz", "mär", "mrz", "mars", "marzo", "maart", "mrt"],
    &["april", "apr", "avril", "avr", "abril", "abr", "aprile"],
    &["may", "mai", "mayo", "may", "maggio", "mag", "mei"],
    &["june", "jun", "juni", "juin", "junio", "giugno", "giu"],
    &["july", "jul", "juli", "juillet", "juil", "julio", "luglio", "lug"],
    &["august", "aug", "août", "aout", "agosto", "ago", "augustus"],
    &["september", "sep", "sept", "septembre", "septiembre", "settembre", "set"],
    &["october", "oct", "oktober", "okt", "octobre", "octubre", "ottobre", "ott"],
    &["november", "nov", "novembre", "noviembre"],
    &["december", "dec", "dezember", "dez", "décembre", "decembre", "déc", "diciembre", "dic", "dicembre"],
];

impl DatePattern {
    /// Reads a pattern; errors name `field`.
    pub fn parse(text: &str, field: &str) -> Result<DatePattern, EngineError> {
        let bad = |why: &str| {
            EngineError::invalid(
                field,
                format!(
                    "{field}: {why}; write the pattern with DD, MM or MMM, and YYYY or YY (`DD/MM/YYYY`, `MMM D, YYYY`)"
                ),
            )
        };
        let mut tokens = Vec::new();
        let text = text.trim_matches([' ', '\t']);
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let run = chars[i..].iter().take_while(|&&c| c == chars[i]).count();
            let token = match (chars[i], run) {
                ('D' | 'd', 1 | 2) => Token::Day,
                ('M', 1 | 2) => Token::Month,
                ('M', 3 | 4) => Token::MonthName,
                ('Y' | 'y', 4) => Token::Year4,
                ('Y' | 'y', 2) => Token::Year2,
                ('D' | 'd' | 'M' | 'Y' | 'y', _) => {
                    return Err(bad(&format!("`{}` is not a part of a date", chars[i].to_string().repeat(run))));
                }
                (' ' | '\t', _) => Token::Space,
                (c, _) if c.is_ascii_punctuation() => Token::Literal(c),
                (c, _) => return Err(bad(&format!("`{}` is not a part of a date", c.escape_debug()))),
            };
            let width = if matches!(token, Token::Space | Token::Literal(_)) { 1 } else { run };
            if !(token == Token::Space && tokens.last() == Some(&Token::Space)) {
                tokens.push(token);
            }
            i += width;
        }
        let has = |t: &[Token]| tokens.iter().filter(|x| t.contains(x)).count();
        if has(&[Token::Day]) != 1
            || has(&[Token::Month, Token::MonthName]) != 1
            || has(&[Token::Year4, Token::Year2]) > 1
        {
            return Err(bad("a date pattern has one day, one month and at most one year"));
        }
        Ok(DatePattern { tokens, text: text.to_string() })
    }

    /// Whether the pattern carries a year.
    pub fn has_year(&self) -> bool {
        self.tokens.iter().any(|t| matches!(t, Token::Year4 | Token::Year2))
    }

    /// Reads `text` (all of it) as a date, `year` standing in when the pattern has none.
    pub fn read(&self, text: &str, year: i32) -> Option<Date> {
        let chars: Vec<char> = text.trim().chars().collect();
        let (mut day, mut month, mut y) = (None, None, None);
        let mut i = 0;
        let digits = |i: usize, max: usize| -> (u32, usize) {
            let n = chars[i..].iter().take(max).take_while(|c| c.is_ascii_digit()).count();
            let value = chars[i..i + n].iter().fold(0u32, |v, c| v * 10 + c.to_digit(10).unwrap_or(0));
            (value, n)
        };
        for token in &self.tokens {
            match token {
                Token::Day | Token::Month => {
                    let (value, n) = digits(i, 2);
                    if n == 0 {
                        return None;
                    }
                    if *token == Token::Day {
                        day = Some(value)
                    } else {
                        month = Some(value)
                    }
                    i += n;
                }
                Token::MonthName => {
                    let n = chars[i..].iter().take_while(|c| c.is_alphabetic()).count();
                    let name: String = chars[i..i + n].iter().collect::<String>().to_lowercase();
                    month = Some(MONTHS.iter().position(|names| names.contains(&name.as_str()))? as u32 + 1);
                    i += n;
                    if chars.get(i) == Some(&'.') {
                        i += 1;
                    }
                }
                Token::Year4 => {
                    let (value, n) = digits(i, 4);
                    if n != 4 {
                        return None;
                    }
                    y = Some(value as i32);
                    i += 4;
                }
                Token::Year2 => {
                    let (value, n) = digits(i, 2);
                    if n != 2 || chars.get(i + 2).is_some_and(char::is_ascii_digit) {
                        return None;
                    }
                    y = Some(if value >= 70 { 1900 + value as i32 } else { 2000 + value as i32 });
                    i += 2;
                }
                Token::Space => {
                    let n = chars[i..].iter().take_while(|c| c.is_whitespace()).count();
                    if n == 0 {
                        return None;
                    }
                    i += n;
                }
                Token::Literal(c) => {
                    if chars.get(i) != Some(c) {
                        return None;
                    }
                    i += 1;
                }
            }
        }
        if i != chars.len() {
            return None;
        }
        let month = Month::try_from(u8::try_from(month?).ok()?).ok()?;
        Date::from_calendar_date(y.unwrap_or(year), month, u8::try_from(day?).ok()?).ok()
    }
}

/// The years printed in `text` (four digits from 1970 to 2099 standing alone).
pub fn years_in(text: &str) -> impl Iterator<Item = i32> + '_ {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|w| w.len() == 4)
        .filter_map(|w| w.parse::<i32>().ok())
        .filter(|y| (1970..2100).contains(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pattern: &str, text: &str) -> Option<String> {
        DatePattern::parse(pattern, "/date_format").unwrap().read(text, 2026).map(|d| d.to_string())
    }

    #[test]
    fn patterns_read_the_dates_of_the_common_locales() {
        assert_eq!(read("DD/MM/YYYY", "05/01/2026").as_deref(), Some("2026-01-05"));
        assert_eq!(read("MM/DD/YYYY", "01/05/2026").as_deref(), Some("2026-01-05"));
        assert_eq!(read("DD.MM.YYYY", "31.12.2025").as_deref(), Some("2025-12-31"));
        assert_eq!(read("YYYY-MM-DD", "2026-02-28").as_deref(), Some("2026-02-28"));
        assert_eq!(read("DD MMM YYYY", "5 Jan 2026").as_deref(), Some("2026-01-05"));
        assert_eq!(read("DD MMM YYYY", "05  März 2026").as_deref(), Some("2026-03-05"));
        assert_eq!(read("MMM D, YYYY", "Sept. 9, 2026").as_deref(), Some("2026-09-09"));
        assert_eq!(read("DD/MM/YY", "05/01/26").as_deref(), Some("2026-01-05"));
        assert_eq!(read("DD/MM", "05/01").as_deref(), Some("2026-01-05"));
        assert_eq!(read("DD.MM.", "24.12.").as_deref(), Some("2026-12-24"));
        for (pattern, text) in [
            ("DD/MM/YYYY", "31/02/2026"),
            ("DD/MM/YYYY", "05/01/2026 rent"),
            ("MM/DD/YYYY", "13/01/2026"),
            ("DD/MM/YY", "05/01/2026"),
            ("DD MMM YYYY", "5 Foo 2026"),
        ] {
            assert_eq!(read(pattern, text), None, "{pattern} {text}");
        }
    }

    #[test]
    fn bad_patterns_are_named() {
        for pattern in ["DD/DD/YYYY", "YYYY", "DDD/MM", "DD/MM/YYY", "DD/MM/YYYY/YY", "Q1 DD/MM"] {
            let e = DatePattern::parse(pattern, "/date_format").expect_err(pattern);
            assert_eq!(e.field.as_deref(), Some("/date_format"), "{pattern}");
        }
        for pattern in CANDIDATES {
            DatePattern::parse(pattern, "/date_format").unwrap();
        }
    }

    /// The schema's pattern and the parser agree: on the candidates, on patterns people write
    /// and on every pattern of up to four characters drawn from the letters and marks that
    /// matter.
    #[test]
    fn the_schema_pattern_takes_what_the_parser_takes() {
        let schema = crate::patterns::validator(&crate::patterns::date_format());
        let agree = |pattern: &str| {
            let parsed = DatePattern::parse(pattern, "/date_format").is_ok();
            assert_eq!(schema.is_valid(&serde_json::json!(pattern)), parsed, "{pattern:?}: the parser says {parsed}");
        };
        for pattern in CANDIDATES {
            agree(pattern);
        }
        for pattern in [
            "MMM D, YYYY",
            " DD/MM/YYYY\t",
            "D.M.YY",
            "YYYY年MM月DD日",
            "DD\u{2013}MM",
            "DD\u{a0}MM",
            "dd/mm/yyyy",
            "DD/MM/YYYYY",
            "MMMMM DD",
            "DDMMYYYY",
            "Dd/MM",
            "yY/MM/DD",
            "DD//MM",
            "DD\nMM",
        ] {
            agree(pattern);
        }
        let alphabet = ['D', 'd', 'M', 'Y', 'y', '/', ' ', 'x', '\u{e9}'];
        let mut count = 0;
        for length in 1..=4u32 {
            for mut n in 0..alphabet.len().pow(length) {
                let mut pattern = String::new();
                for _ in 0..length {
                    pattern.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                agree(&pattern);
                count += 1;
            }
        }
        assert_eq!(count, 9 + 81 + 729 + 6561);
    }
}
