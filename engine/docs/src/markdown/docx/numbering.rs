//! A Word document's numbering (`numbering.xml`): abstract list definitions, the lists
//! that use them with their level overrides, and the labels their counters make (decimal,
//! letters, roman numerals, multi-level `1.2.`).
//!
//! What this module must not do: keep counters (the reader does, per list and level).

use std::collections::HashMap;

use super::styles::{Styles, toggle};
use crate::markdown::ooxml::El;

#[derive(Clone, Debug)]
pub(super) struct Level {
    pub(super) start: i64,
    pub(super) format: String,
    pub(super) text: Option<String>,
    pub(super) legal: bool,
}

impl Level {
    pub(super) fn parse(lvl: El) -> Level {
        let val = |name: &str| lvl.child(name).and_then(|e| e.attr("w:val"));
        Level {
            start: val("w:start").and_then(|v| v.trim().parse().ok()).unwrap_or(1),
            format: val("w:numFmt").unwrap_or("decimal").to_string(),
            text: val("w:lvlText").map(str::to_string),
            legal: toggle(lvl.child("w:isLgl")) == Some(true),
        }
    }
}

#[derive(Debug, Default)]
struct Abstract {
    pub(super) levels: HashMap<u8, Level>,
    style_link: Option<String>,
}

#[derive(Debug, Default)]
struct Num {
    abstract_id: String,
    /// Level → (start override, level override).
    overrides: HashMap<u8, (Option<i64>, Option<Level>)>,
}

#[derive(Debug, Default)]
pub(super) struct Numbering {
    abstracts: HashMap<String, Abstract>,
    nums: HashMap<String, Num>,
}

fn ilvl_of(el: El) -> Option<u8> {
    el.attr("w:ilvl").and_then(|v| v.trim().parse::<u8>().ok()).filter(|l| *l < 9)
}

impl Numbering {
    pub(super) fn parse(root: El) -> Numbering {
        let mut numbering = Numbering::default();
        let Some(list) = root.child("w:numbering") else { return numbering };
        for el in list.children() {
            if el.is("w:abstractNum") {
                let Some(id) = el.attr("w:abstractNumId") else { continue };
                let mut abs = Abstract {
                    style_link: el.child("w:numStyleLink").and_then(|l| l.attr("w:val")).map(str::to_string),
                    ..Abstract::default()
                };
                for lvl in el.children().filter(|l| l.is("w:lvl")) {
                    if let Some(i) = ilvl_of(lvl) {
                        abs.levels.insert(i, Level::parse(lvl));
                    }
                }
                numbering.abstracts.insert(id.trim().to_string(), abs);
            } else if el.is("w:num") {
                let Some(id) = el.attr("w:numId") else { continue };
                let Some(abstract_id) = el.child("w:abstractNumId").and_then(|a| a.attr("w:val")) else { continue };
                let mut num = Num { abstract_id: abstract_id.trim().to_string(), ..Num::default() };
                for o in el.children().filter(|o| o.is("w:lvlOverride")) {
                    let Some(i) = ilvl_of(o) else { continue };
                    let start =
                        o.child("w:startOverride").and_then(|s| s.attr("w:val")).and_then(|v| v.trim().parse().ok());
                    num.overrides.insert(i, (start, o.child("w:lvl").map(Level::parse)));
                }
                numbering.nums.insert(id.trim().to_string(), num);
            }
        }
        numbering
    }

    /// The level definition list `num_id` uses at `ilvl`, overrides applied.
    pub(super) fn level(&self, styles: &Styles, num_id: &str, ilvl: u8) -> Option<Level> {
        let num = self.nums.get(num_id)?;
        let mut abs = self.abstracts.get(&num.abstract_id)?;
        // A list style's abstract definition only links to the numbering style that holds the levels.
        for _ in 0..4 {
            if !abs.levels.is_empty() {
                break;
            }
            let linked = abs
                .style_link
                .as_deref()
                .and_then(|link| styles.map.get(link))
                .and_then(|s| s.num_id.as_deref())
                .and_then(|id| self.nums.get(id))
                .and_then(|n| self.abstracts.get(&n.abstract_id));
            match linked {
                Some(next) => abs = next,
                None => break,
            }
        }
        let over = num.overrides.get(&ilvl);
        let mut level = over.and_then(|o| o.1.clone()).or_else(|| abs.levels.get(&ilvl).cloned())?;
        if let Some(start) = over.and_then(|o| o.0) {
            level.start = start;
        }
        Some(level)
    }
}

/// What a numbered paragraph shows before its text.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Marker {
    Bullet,
    /// Numbering with no visible marker (`w:numFmt w:val="none"`).
    Hidden,
    /// A plain number (`%1.`, `%1)`, `(a)`): an ordered list item; also as the level's
    /// format writes it (`iv`, `c`).
    Number(i64, String),
    /// A label the text starts with: `1.2.`, `Article 3`.
    Label(String),
}

pub(super) fn format_number(n: i64, format: &str) -> String {
    match format {
        "lowerLetter" | "upperLetter" if n > 0 => {
            let letter = (b'a' + ((n - 1) % 26) as u8) as char;
            let s = letter.to_string().repeat(((n - 1) / 26 + 1).min(10) as usize);
            if format == "upperLetter" { s.to_ascii_uppercase() } else { s }
        }
        "lowerRoman" | "upperRoman" if (1..4000).contains(&n) => {
            let r = roman(n);
            if format == "lowerRoman" { r.to_ascii_lowercase() } else { r }
        }
        "decimalZero" if (0..10).contains(&n) => format!("0{n}"),
        _ => n.to_string(),
    }
}

fn roman(mut n: i64) -> String {
    const TABLE: [(i64, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for (value, letters) in TABLE {
        while n >= value {
            out.push_str(letters);
            n -= value;
        }
    }
    out
}

/// The `%N` placeholders of a level text (levels 1 to 9), in order.
pub(super) fn placeholders(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%'
            && let Some(d) = chars.peek().and_then(|d| d.to_digit(10)).filter(|d| (1..=9).contains(d))
        {
            out.push(d as u8);
            chars.next();
        }
    }
    out
}

/// Whether a level text holds nothing but placeholders and separators.
pub(super) fn only_separators(text: &str) -> bool {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' && chars.peek().is_some_and(char::is_ascii_digit) {
            chars.next();
        } else if !matches!(c, ' ' | '.' | ')' | '(' | ':' | '[' | ']') {
            return false;
        }
    }
    true
}
