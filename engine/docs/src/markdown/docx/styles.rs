//! A Word document's styles as the reader needs them: bold, italic, strike and hidden run
//! properties through the style chain (`w:basedOn`) and the document defaults, and what a
//! paragraph style makes of a paragraph (heading, title, quote, code, list).
//!
//! What this module must not do: follow a style chain past its length or round a cycle.

use std::collections::HashMap;

use crate::markdown::Style;
use crate::markdown::ooxml::El;

/// Bold, italic, struck and hidden as a run, a style or a default sets them (`None`:
/// inherited).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct RunProps {
    pub(super) bold: Option<bool>,
    pub(super) italic: Option<bool>,
    strike: Option<bool>,
    pub(super) vanish: Option<bool>,
}

impl RunProps {
    pub(super) fn parse(rpr: El) -> RunProps {
        let strike = match (toggle(rpr.child("w:strike")), toggle(rpr.child("w:dstrike"))) {
            (None, None) => None,
            (a, b) => Some(a == Some(true) || b == Some(true)),
        };
        RunProps {
            bold: toggle(rpr.child("w:b")),
            italic: toggle(rpr.child("w:i")),
            strike,
            vanish: toggle(rpr.child("w:vanish")),
        }
    }

    /// `self` with what `other` sets laid over it.
    pub(super) fn over(self, other: RunProps) -> RunProps {
        RunProps {
            bold: other.bold.or(self.bold),
            italic: other.italic.or(self.italic),
            strike: other.strike.or(self.strike),
            vanish: other.vanish.or(self.vanish),
        }
    }

    pub(super) fn style(self) -> Style {
        Style {
            bold: self.bold == Some(true),
            italic: self.italic == Some(true),
            strike: self.strike == Some(true),
            code: false,
        }
    }
}

/// An on/off property: present without `w:val`, or with a value other than 0/false/off.
pub(super) fn toggle(el: Option<El>) -> Option<bool> {
    el.map(|e| !matches!(e.attr("w:val").map(str::trim), Some("0" | "false" | "off" | "none")))
}

#[derive(Clone, Debug, Default)]
pub(super) struct StyleDef {
    pub(super) id: String,
    pub(super) name: String,
    based_on: Option<String>,
    pub(super) num_id: Option<String>,
    pub(super) ilvl: Option<u8>,
    pub(super) outline: Option<u8>,
    pub(super) run: RunProps,
}

#[derive(Debug, Default)]
pub(super) struct Styles {
    pub(super) map: HashMap<String, StyleDef>,
    default_paragraph: Option<String>,
}

impl Styles {
    pub(super) fn parse(root: El) -> Styles {
        let mut styles = Styles::default();
        let Some(list) = root.child("w:styles") else { return styles };
        for s in list.children().filter(|s| s.is("w:style")) {
            let Some(id) = s.attr("w:styleId") else { continue };
            let ppr = s.child("w:pPr");
            let num = ppr.and_then(|p| p.child("w:numPr"));
            let def = StyleDef {
                id: id.to_string(),
                name: s.child("w:name").and_then(|n| n.attr("w:val")).unwrap_or_default().to_string(),
                based_on: s.child("w:basedOn").and_then(|b| b.attr("w:val")).map(str::to_string),
                num_id: num
                    .and_then(|n| n.child("w:numId"))
                    .and_then(|n| n.attr("w:val"))
                    .map(|v| v.trim().to_string()),
                ilvl: num
                    .and_then(|n| n.child("w:ilvl"))
                    .and_then(|n| n.attr("w:val"))
                    .and_then(|v| v.trim().parse().ok()),
                outline: ppr
                    .and_then(|p| p.child("w:outlineLvl"))
                    .and_then(|o| o.attr("w:val"))
                    .and_then(|v| v.trim().parse().ok()),
                run: s.child("w:rPr").map(RunProps::parse).unwrap_or_default(),
            };
            if s.attr("w:type").unwrap_or("paragraph") == "paragraph"
                && matches!(s.attr("w:default"), Some("1" | "true" | "on"))
            {
                styles.default_paragraph = Some(def.id.clone());
            }
            styles.map.insert(def.id.clone(), def);
        }
        styles
    }

    /// A style and the styles it is based on, nearest first.
    pub(super) fn chain(&self, id: Option<&str>) -> Vec<&StyleDef> {
        let mut out: Vec<&StyleDef> = Vec::new();
        let mut next = id.or(self.default_paragraph.as_deref());
        while let Some(id) = next {
            if out.len() >= 16 || out.iter().any(|s| s.id == id) {
                break;
            }
            let Some(style) = self.map.get(id) else { break };
            out.push(style);
            next = style.based_on.as_deref();
        }
        out
    }

    /// The run properties a style (and its bases) give.
    pub(super) fn run_props(&self, id: Option<&str>) -> RunProps {
        self.chain(id).iter().rev().fold(RunProps::default(), |acc, s| acc.over(s.run))
    }
}

/// What a paragraph is, by its style.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum ParaKind {
    Title,
    /// A heading of Word level 1 to 9.
    Heading(u8),
    Quote,
    Code,
    Normal,
}

/// The number after "heading" in a style name (`Heading 2`, `heading2`), `Some(None)`
/// when the name says heading without a number (`TOC Heading`).
pub(super) fn heading_number(name: &str) -> Option<Option<u8>> {
    let lower = name.to_ascii_lowercase();
    if !lower.contains("heading") {
        return None;
    }
    let digits: String = lower.chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect();
    Some(digits.parse::<u8>().ok().map(|n| n.clamp(1, 9)))
}

pub(super) fn squeeze(name: &str) -> String {
    name.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
}
