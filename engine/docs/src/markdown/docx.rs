//! DOCX to Markdown: the body of a Word document in reading order, read from its parts
//! after the Office gate (`office::package::check`).
//!
//! Paragraph styles give headings (`Title` → level 1, `Heading N` or an outline level N →
//! level N + 1, docling's convention), quotes and code; `w:numPr` (on the paragraph or its
//! style) gives list items, numbered from `numbering.xml` with running counters per list
//! and level, multi-level labels (`1.2.`) written into the item's text. Tables repeat a
//! merged cell's text in every cell it covers and flatten what a cell holds onto one
//! line. Pictures become [`Block::Image`] with their description, text boxes are read
//! once, equations (OMML) are written as LaTeX between `$` (`$$` alone in a paragraph),
//! deleted text is skipped, headers, footers, footnotes and comments are left out.
//!
//! [`ooxml`] holds what the PowerPoint reader shares: bounded part reading, relationships,
//! a small namespace-normalised XML tree, and chart data.

use std::collections::HashMap;

use crate::error::EngineError;
use crate::markdown::{Block, Document, Inline, Style, one_line};
use crate::office::package::Kind;

use crate::markdown::omml;
use crate::markdown::ooxml::{self, El, MAX_DEPTH, Package, Rels, clean_alt, kids, safe_link};

/// Widest span a merged table cell may claim (Word's limit is 63 columns).
const MAX_SPAN: usize = 64;
/// Most columns a table row may have.
const MAX_COLUMNS: usize = 512;

/// Reads a DOCX file.
pub fn read(bytes: &[u8], field: &str) -> Result<Document, EngineError> {
    let mut pkg = Package::open(bytes, Kind::WordDocument, field)?;
    let root = pkg.rels("")?;
    let main = root
        .first("officeDocument")
        .filter(|r| !r.external)
        .map(|r| r.target.clone())
        .unwrap_or_else(|| "word/document.xml".to_string());
    let dom = pkg.xml(&main)?.ok_or_else(|| ooxml::missing(field, &main))?;
    let rels = pkg.rels(&main)?;
    let styles = match rels.first("styles").filter(|r| !r.external).map(|r| r.target.clone()) {
        Some(part) => pkg.xml(&part)?.map(|d| Styles::parse(d.root())).unwrap_or_default(),
        None => Styles::default(),
    };
    let numbering = match rels.first("numbering").filter(|r| !r.external).map(|r| r.target.clone()) {
        Some(part) => pkg.xml(&part)?.map(|d| Numbering::parse(d.root())).unwrap_or_default(),
        None => Numbering::default(),
    };
    let core_title = pkg.core_title(&root)?;
    let mut reader = Reader {
        pkg,
        rels,
        styles,
        numbering,
        counters: HashMap::new(),
        slots: 0,
        first_title: None,
        field: field.to_string(),
    };
    let mut blocks = Vec::new();
    if let Some(body) = dom.root().child("w:document").and_then(|d| d.child("w:body")) {
        reader.blocks(body, &mut blocks, 0)?;
    }
    ooxml::normalise_list_levels(&mut blocks);
    let mut doc = Document { title: core_title.or(reader.first_title), blocks: Vec::new() };
    for block in blocks {
        doc.push(block);
    }
    Ok(doc)
}

// ---------------------------------------------------------------------------------------
// Styles

/// Bold, italic, struck and hidden as a run, a style or a default sets them (`None`:
/// inherited).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct RunProps {
    bold: Option<bool>,
    italic: Option<bool>,
    strike: Option<bool>,
    vanish: Option<bool>,
}

impl RunProps {
    fn parse(rpr: El) -> RunProps {
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
    fn over(self, other: RunProps) -> RunProps {
        RunProps {
            bold: other.bold.or(self.bold),
            italic: other.italic.or(self.italic),
            strike: other.strike.or(self.strike),
            vanish: other.vanish.or(self.vanish),
        }
    }

    fn style(self) -> Style {
        Style {
            bold: self.bold == Some(true),
            italic: self.italic == Some(true),
            strike: self.strike == Some(true),
            code: false,
        }
    }
}

/// An on/off property: present without `w:val`, or with a value other than 0/false/off.
fn toggle(el: Option<El>) -> Option<bool> {
    el.map(|e| !matches!(e.attr("w:val").map(str::trim), Some("0" | "false" | "off" | "none")))
}

#[derive(Clone, Debug, Default)]
struct StyleDef {
    id: String,
    name: String,
    based_on: Option<String>,
    num_id: Option<String>,
    ilvl: Option<u8>,
    outline: Option<u8>,
    run: RunProps,
}

#[derive(Debug, Default)]
struct Styles {
    map: HashMap<String, StyleDef>,
    default_paragraph: Option<String>,
}

impl Styles {
    fn parse(root: El) -> Styles {
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
    fn chain(&self, id: Option<&str>) -> Vec<&StyleDef> {
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
    fn run_props(&self, id: Option<&str>) -> RunProps {
        self.chain(id).iter().rev().fold(RunProps::default(), |acc, s| acc.over(s.run))
    }
}

/// What a paragraph is, by its style.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ParaKind {
    Title,
    /// A heading of Word level 1 to 9.
    Heading(u8),
    Quote,
    Code,
    Normal,
}

/// The number after "heading" in a style name (`Heading 2`, `heading2`), `Some(None)`
/// when the name says heading without a number (`TOC Heading`).
fn heading_number(name: &str) -> Option<Option<u8>> {
    let lower = name.to_ascii_lowercase();
    if !lower.contains("heading") {
        return None;
    }
    let digits: String = lower.chars().skip_while(|c| !c.is_ascii_digit()).take_while(char::is_ascii_digit).collect();
    Some(digits.parse::<u8>().ok().map(|n| n.clamp(1, 9)))
}

fn squeeze(name: &str) -> String {
    name.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
}

// ---------------------------------------------------------------------------------------
// Numbering

#[derive(Clone, Debug)]
struct Level {
    start: i64,
    format: String,
    text: Option<String>,
    legal: bool,
}

impl Level {
    fn parse(lvl: El) -> Level {
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
    levels: HashMap<u8, Level>,
    style_link: Option<String>,
}

#[derive(Debug, Default)]
struct Num {
    abstract_id: String,
    /// Level → (start override, level override).
    overrides: HashMap<u8, (Option<i64>, Option<Level>)>,
}

#[derive(Debug, Default)]
struct Numbering {
    abstracts: HashMap<String, Abstract>,
    nums: HashMap<String, Num>,
}

fn ilvl_of(el: El) -> Option<u8> {
    el.attr("w:ilvl").and_then(|v| v.trim().parse::<u8>().ok()).filter(|l| *l < 9)
}

impl Numbering {
    fn parse(root: El) -> Numbering {
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
    fn level(&self, styles: &Styles, num_id: &str, ilvl: u8) -> Option<Level> {
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
enum Marker {
    Bullet,
    /// Numbering with no visible marker (`w:numFmt w:val="none"`).
    Hidden,
    /// A plain number (`%1.`, `%1)`, `(a)`): an ordered list item; also as the level's
    /// format writes it (`iv`, `c`).
    Number(i64, String),
    /// A label the text starts with: `1.2.`, `Article 3`.
    Label(String),
}

fn format_number(n: i64, format: &str) -> String {
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
fn placeholders(text: &str) -> Vec<u8> {
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
fn only_separators(text: &str) -> bool {
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

// ---------------------------------------------------------------------------------------
// The body

/// One piece of a paragraph's content.
#[derive(Debug)]
enum Seg {
    Text(String, Style, Option<String>),
    Math(String),
}

/// An open field (`w:fldChar`): its instruction and, once read, its link.
#[derive(Debug, Default)]
struct Field {
    instruction: String,
    in_instruction: bool,
    link: Option<String>,
}

#[derive(Debug, Default)]
struct Content {
    segs: Vec<Seg>,
    /// Blocks a paragraph carries besides its text: pictures, text boxes, charts.
    extras: Vec<Block>,
    fields: Vec<Field>,
}

impl Content {
    fn push_text(&mut self, text: &str, style: Style, link: Option<&str>) {
        if text.is_empty() || self.fields.last().is_some_and(|f| f.in_instruction) {
            return;
        }
        // A soft hyphen only shows where a line breaks.
        let text = text.replace('\u{ad}', "");
        let link = link.map(str::to_string).or_else(|| self.fields.iter().rev().find_map(|f| f.link.clone()));
        if let Some(Seg::Text(last, s, l)) = self.segs.last_mut()
            && *s == style
            && *l == link
        {
            last.push_str(&text);
            return;
        }
        self.segs.push(Seg::Text(text, style, link));
    }

    fn has_text(&self) -> bool {
        self.segs.iter().any(|s| matches!(s, Seg::Text(t, _, _) if !t.trim().is_empty()))
    }

    fn has_math(&self) -> bool {
        self.segs.iter().any(|s| matches!(s, Seg::Math(m) if !m.is_empty()))
    }
}

/// The URL a `HYPERLINK` field instruction names (without `\l` bookmarks).
fn field_link(instruction: &str) -> Option<String> {
    let rest = instruction.trim_start();
    let rest = rest.strip_prefix("HYPERLINK").or_else(|| rest.strip_prefix("hyperlink"))?;
    let rest = rest.trim_start();
    if rest.starts_with("\\l") {
        return None;
    }
    let url = match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next().unwrap_or_default(),
        None => rest.split_whitespace().next().unwrap_or_default(),
    };
    safe_link(url)
}

struct Reader<'a> {
    pkg: Package<'a>,
    rels: Rels,
    styles: Styles,
    numbering: Numbering,
    counters: HashMap<String, [Option<i64>; 9]>,
    /// Table cells written so far, against [`ooxml::MAX_TABLE_SLOTS`].
    slots: usize,
    first_title: Option<String>,
    field: String,
}

impl Reader<'_> {
    fn blocks(&mut self, parent: El, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        for el in kids(parent) {
            match el.name() {
                "w:p" => self.paragraph(el, out, depth + 1)?,
                "w:tbl" => {
                    let rows = self.table(el, depth + 1)?;
                    if !rows.is_empty() {
                        out.push(Block::Table(rows));
                    }
                }
                "w:sdt" => {
                    if let Some(content) = el.child("w:sdtContent") {
                        self.blocks(content, out, depth + 1)?;
                    }
                }
                "w:customXml" | "w:ins" | "w:moveTo" | "w:smartTag" | "w:txbxContent" => {
                    self.blocks(el, out, depth + 1)?
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The style id, kind and numbering of a paragraph.
    fn classify(&self, ppr: Option<El>) -> (Option<String>, ParaKind, Option<(String, u8)>) {
        let style_id = ppr.and_then(|p| p.child("w:pStyle")).and_then(|s| s.attr("w:val")).map(str::to_string);
        let chain = self.styles.chain(style_id.as_deref());
        let own = chain.first().map(|s| format!("{} {}", s.id, s.name)).or(style_id.clone()).unwrap_or_default();
        let is_title = !own.to_ascii_lowercase().contains("subtitle")
            && (chain.iter().any(|s| s.id.eq_ignore_ascii_case("title") || s.name.eq_ignore_ascii_case("title"))
                || (chain.is_empty() && style_id.as_deref().is_some_and(|s| s.eq_ignore_ascii_case("title"))));
        // The outline level: the paragraph's own, else the nearest style's (9 is body text).
        let direct_outline = ppr.and_then(|p| p.child("w:outlineLvl")).and_then(|o| o.attr("w:val"));
        let outline = match direct_outline.and_then(|v| v.trim().parse::<u8>().ok()) {
            Some(level) => Some(level),
            None => chain.iter().find_map(|s| s.outline),
        }
        .filter(|l| *l <= 8);
        let named = chain
            .iter()
            .find_map(|s| heading_number(&s.name).or_else(|| heading_number(&s.id)))
            .or_else(|| if chain.is_empty() { style_id.as_deref().and_then(heading_number) } else { None });
        let kind = if is_title {
            ParaKind::Title
        } else if let Some(number) = named {
            ParaKind::Heading(outline.map(|o| o + 1).or(number).unwrap_or(1))
        } else if let Some(o) = outline {
            ParaKind::Heading(o + 1)
        } else if chain.iter().any(|s| {
            let (id, name) = (squeeze(&s.id), squeeze(&s.name));
            ["quote", "intensequote"].iter().any(|q| id == *q || name == *q)
        }) {
            ParaKind::Quote
        } else if chain.iter().any(|s| {
            let (id, name) = (squeeze(&s.id), squeeze(&s.name));
            ["code", "sourcecode", "htmlpreformatted", "codeblock", "verbatim"].iter().any(|c| id == *c || name == *c)
        }) {
            ParaKind::Code
        } else {
            ParaKind::Normal
        };
        // Numbering: the paragraph's numPr over its style's.
        let direct = ppr.and_then(|p| p.child("w:numPr"));
        let direct_id =
            direct.and_then(|n| n.child("w:numId")).and_then(|n| n.attr("w:val")).map(|v| v.trim().to_string());
        let direct_lvl = direct
            .and_then(|n| n.child("w:ilvl"))
            .and_then(|n| n.attr("w:val"))
            .and_then(|v| v.trim().parse::<u8>().ok());
        let styled = chain.iter().find(|s| s.num_id.is_some() || s.ilvl.is_some());
        let num_id = direct_id.or_else(|| styled.and_then(|s| s.num_id.clone()));
        let ilvl = direct_lvl.or_else(|| styled.and_then(|s| s.ilvl)).unwrap_or(0).min(8);
        let num = num_id.filter(|id| id != "0" && !id.is_empty()).map(|id| (id, ilvl));
        (style_id, kind, num)
    }

    /// Advances the counters of list `num_id` at `ilvl` and returns the item's marker.
    fn advance(&mut self, num_id: &str, ilvl: u8) -> Option<Marker> {
        let level = self.numbering.level(&self.styles, num_id, ilvl)?;
        match level.format.as_str() {
            "bullet" => return Some(Marker::Bullet),
            "none" => return Some(Marker::Hidden),
            _ => {}
        }
        let i = ilvl as usize;
        let starts: Vec<(i64, String)> = (0..=ilvl)
            .map(|l| {
                self.numbering
                    .level(&self.styles, num_id, l)
                    .map(|lv| (lv.start, if level.legal { "decimal".to_string() } else { lv.format }))
                    .unwrap_or((1, "decimal".to_string()))
            })
            .collect();
        let counters = self.counters.entry(num_id.to_string()).or_insert([None; 9]);
        let value = counters[i].map_or(level.start, |v| v.saturating_add(1));
        counters[i] = Some(value);
        for deeper in counters.iter_mut().skip(i + 1) {
            *deeper = None;
        }
        let text = level.text.clone().unwrap_or_else(|| format!("%{}.", i + 1));
        let refs = placeholders(&text);
        if refs.is_empty() {
            let shown = one_line(&text);
            return Some(if shown.is_empty() { Marker::Hidden } else { Marker::Label(shown) });
        }
        if refs == [ilvl + 1] && only_separators(&text) {
            return Some(Marker::Number(value, format_number(value, &level.format)));
        }
        // Levels a label shows but no item has set yet show their start (Word does not
        // show empty levels).
        for r in &refs {
            let l = (*r - 1) as usize;
            if l < i && counters[l].is_none() {
                counters[l] = Some(starts.get(l).map_or(1, |s| s.0));
            }
        }
        let number = |l: usize| -> String {
            let value = counters.get(l).copied().flatten().unwrap_or(1);
            let format = starts.get(l).map_or("decimal", |s| s.1.as_str());
            format_number(value, format)
        };
        if only_separators(&text) {
            let parts: Vec<String> = refs.iter().map(|r| number((*r - 1) as usize)).collect();
            return Some(Marker::Label(format!("{}.", parts.join("."))));
        }
        let mut label = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '%'
                && let Some(d) = chars.peek().and_then(|d| d.to_digit(10)).filter(|d| (1..=9).contains(d))
            {
                chars.next();
                label.push_str(&number(d as usize - 1));
            } else {
                label.push(c);
            }
        }
        Some(Marker::Label(one_line(&label)))
    }

    fn paragraph(&mut self, p: El, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
        let ppr = p.child("w:pPr");
        let (style_id, kind, num) = self.classify(ppr);
        let heading = matches!(kind, ParaKind::Title | ParaKind::Heading(_));
        let base = if heading { RunProps::default() } else { self.styles.run_props(style_id.as_deref()) };
        let mut content = Content::default();
        self.runs(p, &mut content, base, None, depth + 1)?;
        let has_text = content.has_text();
        let has_math = content.has_math();
        let marker = match &num {
            Some((id, ilvl)) if has_text || has_math => self.advance(id, *ilvl),
            _ => None,
        };
        let list = !heading && matches!(marker, Some(Marker::Bullet | Marker::Number(..) | Marker::Label(_)));
        if has_math && !has_text && !list {
            // Equations alone in a paragraph are display equations.
            for seg in &content.segs {
                if let Seg::Math(m) = seg
                    && !m.is_empty()
                {
                    let mut inline = Inline::new();
                    inline.text(&format!("$${m}$$"));
                    out.push(Block::Paragraph(inline.finish()));
                }
            }
            out.append(&mut content.extras);
            return Ok(());
        }
        let mut inline = Inline::new();
        let label = match (&marker, kind) {
            (Some(Marker::Label(l)), ParaKind::Heading(_)) => Some(l.trim_end_matches('.').to_string()),
            (Some(Marker::Number(_, shown)), ParaKind::Heading(_)) => Some(shown.clone()),
            (Some(Marker::Label(l)), _) if list => Some(l.clone()),
            _ => None,
        };
        if let Some(label) = label.filter(|l| !l.is_empty()) {
            inline.text(&label);
            inline.text(" ");
        }
        for seg in &content.segs {
            match seg {
                Seg::Text(text, style, link) => inline.push(text, *style, link.as_deref()),
                Seg::Math(m) if !m.is_empty() => inline.text(&format!("${m}$")),
                Seg::Math(_) => {}
            }
        }
        if has_text || has_math {
            let text = inline.finish();
            match kind {
                ParaKind::Title => {
                    if self.first_title.is_none() {
                        self.first_title = Some(one_line(&inline.plain()));
                    }
                    out.push(Block::Heading { level: 1, text });
                }
                ParaKind::Heading(level) => out.push(Block::Heading { level: (level + 1).min(6), text }),
                _ if list => {
                    let ordered = match marker {
                        Some(Marker::Number(n, _)) => Some(n.max(0) as u64),
                        _ => None,
                    };
                    let level = num.as_ref().map_or(0, |n| n.1);
                    out.push(Block::ListItem { level, ordered, text });
                }
                ParaKind::Quote => out.push(Block::Quote(text)),
                ParaKind::Code => {
                    let plain = inline.plain();
                    match out.last_mut() {
                        Some(Block::Code { text: code, .. }) => {
                            code.push('\n');
                            code.push_str(plain.trim_end());
                        }
                        _ => out.push(Block::Code { language: String::new(), text: plain.trim_end().to_string() }),
                    }
                }
                ParaKind::Normal => out.push(Block::Paragraph(text)),
            }
        }
        out.append(&mut content.extras);
        Ok(())
    }

    /// Reads the runs of a paragraph (or of a hyperlink, an insertion, a content control
    /// inside one) into `content`.
    fn runs(
        &mut self,
        parent: El,
        content: &mut Content,
        base: RunProps,
        link: Option<&str>,
        depth: usize,
    ) -> Result<(), EngineError> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        for el in kids(parent) {
            match el.name() {
                "w:r" => self.run(el, content, base, link, depth + 1)?,
                "w:hyperlink" => {
                    let target = el
                        .attr("r:id")
                        .and_then(|id| self.rels.get(id))
                        .filter(|r| r.external)
                        .and_then(|r| safe_link(&r.target));
                    self.runs(el, content, base, target.as_deref().or(link), depth + 1)?;
                }
                "w:fldSimple" => {
                    let target = el.attr("w:instr").and_then(field_link);
                    self.runs(el, content, base, target.as_deref().or(link), depth + 1)?;
                }
                "w:ins" | "w:moveTo" | "w:smartTag" | "w:customXml" | "w:dir" | "w:bdo" => {
                    self.runs(el, content, base, link, depth + 1)?
                }
                "w:sdt" => {
                    if let Some(inner) = el.child("w:sdtContent") {
                        self.runs(inner, content, base, link, depth + 1)?;
                    }
                }
                "m:oMath" => content.segs.push(Seg::Math(omml::latex(el))),
                "m:oMathPara" => {
                    for m in el.children().filter(|m| m.is("m:oMath")) {
                        content.segs.push(Seg::Math(omml::latex(m)));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn run(
        &mut self,
        r: El,
        content: &mut Content,
        base: RunProps,
        link: Option<&str>,
        depth: usize,
    ) -> Result<(), EngineError> {
        let mut props = base;
        if let Some(rpr) = r.child("w:rPr") {
            if let Some(rstyle) = rpr.child("w:rStyle").and_then(|s| s.attr("w:val")) {
                props = props.over(self.styles.run_props(Some(rstyle)));
            }
            props = props.over(RunProps::parse(rpr));
        }
        if props.vanish == Some(true) {
            return Ok(());
        }
        let style = props.style();
        for el in kids(r) {
            match el.name() {
                "w:t" => content.push_text(&el.text(), style, link),
                "w:tab" | "w:ptab" | "w:br" | "w:cr" => content.push_text(" ", style, link),
                "w:noBreakHyphen" => content.push_text("-", style, link),
                "w:sym" => {
                    let c = el
                        .attr("w:char")
                        .and_then(|h| u32::from_str_radix(h.trim(), 16).ok())
                        .filter(|c| !(0xF000..=0xF0FF).contains(c))
                        .and_then(char::from_u32);
                    if let Some(c) = c {
                        content.push_text(&c.to_string(), style, link);
                    }
                }
                "w:fldChar" => match el.attr("w:fldCharType") {
                    Some("begin") if content.fields.len() < 32 => {
                        content.fields.push(Field { in_instruction: true, ..Field::default() });
                    }
                    Some("separate") => {
                        if let Some(f) = content.fields.last_mut() {
                            f.in_instruction = false;
                            f.link = field_link(&f.instruction);
                        }
                    }
                    Some("end") => {
                        content.fields.pop();
                    }
                    _ => {}
                },
                "w:instrText" => {
                    if let Some(f) = content.fields.last_mut().filter(|f| f.in_instruction)
                        && f.instruction.len() < 4096
                    {
                        f.instruction.push_str(&el.text());
                    }
                }
                "w:drawing" => self.drawing(el, &mut content.extras, depth + 1)?,
                "w:pict" | "w:object" => self.vml(el, None, &mut content.extras, depth + 1)?,
                _ => {}
            }
        }
        Ok(())
    }

    fn drawing(&mut self, drawing: El, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
        for anchor in kids(drawing) {
            let doc_pr = anchor.child("wp:docPr");
            let alt = doc_pr
                .and_then(|d| d.attr("descr").filter(|a| !a.trim().is_empty()).or_else(|| d.attr("title")))
                .map(clean_alt)
                .unwrap_or_default();
            if let Some(data) = anchor.child("a:graphic").and_then(|g| g.child("a:graphicData")) {
                self.visual(data, &alt, out, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Pictures, text boxes and charts inside a drawing, in document order.
    fn visual(&mut self, parent: El, alt: &str, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        for el in kids(parent) {
            match el.name() {
                "pic:pic" => {
                    let own = el
                        .child("pic:nvPicPr")
                        .and_then(|n| n.child("pic:cNvPr"))
                        .and_then(|c| c.attr("descr"))
                        .map(clean_alt)
                        .filter(|a| !a.is_empty());
                    out.push(Block::Image { alt: own.unwrap_or_else(|| alt.to_string()) });
                }
                "w:txbxContent" => self.blocks(el, out, depth + 1)?,
                "c:chart" => {
                    let part = el.attr("r:id").and_then(|id| self.rels.get(id)).filter(|r| !r.external);
                    if let Some(part) = part.map(|r| r.target.clone()) {
                        out.extend(ooxml::chart(&mut self.pkg, &part)?);
                    }
                }
                _ => self.visual(el, alt, out, depth + 1)?,
            }
        }
        Ok(())
    }

    /// VML pictures and text boxes (`w:pict`, `w:object`).
    fn vml(&mut self, parent: El, alt: Option<&str>, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        for el in kids(parent) {
            match el.name() {
                "v:imagedata" => {
                    let title = el.attr("o:title").filter(|t| !t.trim().is_empty()).or(alt).unwrap_or_default();
                    out.push(Block::Image { alt: clean_alt(title) });
                }
                "w:txbxContent" => self.blocks(el, out, depth + 1)?,
                _ => {
                    let own = el.attr("alt").filter(|a| !a.trim().is_empty()).or(alt);
                    self.vml(el, own, out, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    fn table(&mut self, tbl: El, depth: usize) -> Result<Vec<Vec<String>>, EngineError> {
        let mut rows: Vec<Vec<String>> = Vec::new();
        if depth > MAX_DEPTH {
            return Ok(rows);
        }
        for tr in table_parts(tbl, "w:tr") {
            let trpr = tr.child("w:trPr");
            if trpr.and_then(|t| t.child("w:del")).is_some() {
                continue;
            }
            let grid = |name: &str| {
                trpr.and_then(|t| t.child(name))
                    .and_then(|g| g.attr("w:val"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0)
                    .min(MAX_SPAN)
            };
            let (before, after) = (grid("w:gridBefore"), grid("w:gridAfter"));
            let mut row: Vec<String> = vec![String::new(); before];
            for tc in table_parts(tr, "w:tc") {
                let tcpr = tc.child("w:tcPr");
                let span = tcpr
                    .and_then(|p| p.child("w:gridSpan"))
                    .and_then(|g| g.attr("w:val"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(1)
                    .clamp(1, MAX_SPAN);
                let merge = |name: &str| {
                    tcpr.and_then(|p| p.child(name)).map(|m| m.attr("w:val").unwrap_or("continue") == "continue")
                };
                let text = if merge("w:vMerge") == Some(true) {
                    rows.last().and_then(|r| r.get(row.len())).cloned().unwrap_or_default()
                } else if merge("w:hMerge") == Some(true) {
                    row.last().cloned().unwrap_or_default()
                } else {
                    self.cell(tc, depth + 1)?
                };
                for _ in 0..span {
                    if row.len() < MAX_COLUMNS {
                        row.push(text.clone());
                    }
                }
            }
            for _ in 0..after {
                if row.len() < MAX_COLUMNS {
                    row.push(String::new());
                }
            }
            rows.push(row);
        }
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        self.slots = self.slots.saturating_add(width.saturating_mul(rows.len()));
        if self.slots > ooxml::MAX_TABLE_SLOTS {
            return Err(ooxml::too_many_cells(&self.field));
        }
        Ok(rows)
    }

    /// What a table cell holds, on one line: paragraphs, list items with their markers,
    /// nested tables cell by cell.
    fn cell(&mut self, tc: El, depth: usize) -> Result<String, EngineError> {
        let mut blocks = Vec::new();
        self.blocks(tc, &mut blocks, depth)?;
        Ok(ooxml::flatten(&blocks))
    }
}

/// Rows of a table or cells of a row, through content controls and custom XML.
fn table_parts<'d>(parent: El<'d>, name: &str) -> Vec<El<'d>> {
    let mut out = Vec::new();
    collect_parts(parent, name, &mut out, 0);
    out
}

fn collect_parts<'d>(parent: El<'d>, name: &str, out: &mut Vec<El<'d>>, level: usize) {
    for k in kids(parent) {
        if k.is(name) {
            out.push(k);
        } else if level < 8 && matches!(k.name(), "w:sdt" | "w:sdtContent" | "w:customXml" | "w:ins") {
            collect_parts(k, name, out, level + 1);
        }
    }
}

// ---------------------------------------------------------------------------------------
// OMML equations

// ---------------------------------------------------------------------------------------
// Shared with the PowerPoint reader

#[cfg(test)]
pub(super) mod tests {
    use std::io::{Cursor, Read as _};

    use super::*;
    use crate::markdown::render;

    const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture" xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math""#;
    const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

    /// A ZIP of `(name, text)` members.
    pub(in crate::markdown) fn zip(members: &[(impl AsRef<str>, impl AsRef<str>)]) -> Vec<u8> {
        let members: Vec<(&str, &[u8])> = members.iter().map(|(n, b)| (n.as_ref(), b.as_ref().as_bytes())).collect();
        crate::office::package::zip_of(&members)
    }

    type ReadFn = fn(&[u8], &str) -> Result<Document, EngineError>;

    /// Scores `read` on each docling ground-truth file of `docling/<format>` and fails when
    /// one falls below its floors (text, headings, tables, as measured when the reader was
    /// written; text and headings get a margin of 0.01).
    pub(in crate::markdown) fn assert_corpus_floors(format: &str, read: ReadFn, floors: &[(&str, f64, f64, f64)]) {
        let dir = paperchain_testkit::corpus::corpus().join("docling").join(format);
        let mut failures = Vec::new();
        for (name, text, headings, tables) in floors {
            let bytes = std::fs::read(dir.join("sources").join(name)).unwrap();
            let truth = std::fs::read_to_string(dir.join("groundtruth").join(format!("{name}.md"))).unwrap();
            let ours = render(&read(&bytes, "/file").unwrap());
            let s = paperchain_testkit::markdown_score::score(&ours, &truth);
            eprintln!("{name}: text {:.4} headings {:.4} tables {:.4}", s.text, s.headings, s.tables);
            if s.text < text - 0.01 || s.headings < headings - 0.01 || s.tables < *tables {
                failures.push(format!("{name}: {s:?}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Converts every file of `office/<format>` (all must read, and a file whose parts
    /// under `text_parts` hold text elements `text_tag` must give some Markdown); returns
    /// how many files there were.
    pub(in crate::markdown) fn convert_office_folder(
        format: &str,
        read: ReadFn,
        text_parts: &str,
        text_tag: &str,
    ) -> usize {
        let dir = paperchain_testkit::corpus::corpus().join("office").join(format);
        let mut count = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == format) {
                let bytes = std::fs::read(&path).unwrap();
                let doc = read(&bytes, "/file").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let markdown = render(&doc);
                let mut archive = zip::ZipArchive::new(Cursor::new(&bytes)).unwrap();
                let parts: Vec<String> = archive
                    .file_names()
                    .filter_map(Result::ok)
                    .filter(|n| n.starts_with(text_parts))
                    .map(|n| n.into_owned())
                    .collect();
                let has_text = parts.iter().any(|name| {
                    let mut xml = String::new();
                    archive.by_name(name).unwrap().read_to_string(&mut xml).unwrap();
                    xml.contains(text_tag)
                });
                assert!(
                    !has_text || !markdown.trim().is_empty(),
                    "{}: no Markdown from a file with text",
                    path.display()
                );
                count += 1;
            }
        }
        count
    }

    /// A minimal .docx: the body, optional styles and numbering, and document relationships.
    fn docx(body: &str, styles: &str, numbering: &str, extra_rels: &str) -> Vec<u8> {
        let mut members = vec![
            (
                "[Content_Types].xml",
                r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_string(),
            ),
            (
                "_rels/.rels",
                format!(
                    r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/></Relationships>"#
                ),
            ),
            ("word/document.xml", format!(r#"<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>"#)),
            (
                "word/_rels/document.xml.rels",
                format!(
                    r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdS" Type="{REL}/styles" Target="styles.xml"/><Relationship Id="rIdN" Type="{REL}/numbering" Target="/word/numbering.xml"/>{extra_rels}</Relationships>"#
                ),
            ),
        ];
        members.push(("word/styles.xml", format!(r#"<w:styles {W}>{styles}</w:styles>"#)));
        members.push(("word/numbering.xml", format!(r#"<w:numbering {W}>{numbering}</w:numbering>"#)));
        zip(&members)
    }

    fn p(style: &str, runs: &str) -> String {
        let ppr =
            if style.is_empty() { String::new() } else { format!(r#"<w:pPr><w:pStyle w:val="{style}"/></w:pPr>"#) };
        format!("<w:p>{ppr}{runs}</w:p>")
    }

    fn r(text: &str) -> String {
        format!(r#"<w:r><w:t xml:space="preserve">{text}</w:t></w:r>"#)
    }

    fn li(num: u32, level: u32, text: &str) -> String {
        format!(
            r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="{level}"/><w:numId w:val="{num}"/></w:numPr></w:pPr>{}</w:p>"#,
            r(text)
        )
    }

    fn markdown(bytes: &[u8]) -> String {
        render(&read(bytes, "/file").unwrap())
    }

    const HEADING_STYLES: &str = r#"<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style><w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="Kop2"><w:name w:val="Kop 2"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Emph"><w:name w:val="Emph"/><w:rPr><w:i/></w:rPr></w:style><w:style w:type="character" w:styleId="Strong"><w:name w:val="Strong"/><w:rPr><w:b/></w:rPr></w:style>"#;

    #[test]
    fn headings_come_from_styles_and_the_title_from_the_title_style() {
        let body = [
            p("Title", &r("The Title")),
            p("Heading1", &r("Intro")),
            p("Kop2", &r("Localised heading")),
            p("", &r("Body text.")),
        ]
        .concat();
        let doc = read(&docx(&body, HEADING_STYLES, "", ""), "/file").unwrap();
        assert_eq!(doc.title.as_deref(), Some("The Title"));
        assert_eq!(render(&doc), "# The Title\n\n## Intro\n\n### Localised heading\n\nBody text.\n");
    }

    #[test]
    fn bold_italic_and_strike_follow_runs_and_run_styles_and_val_zero_turns_them_off() {
        let runs = [
            r#"<w:r><w:rPr><w:b/></w:rPr><w:t>bold</w:t></w:r>"#,
            r#"<w:r><w:t xml:space="preserve"> and </w:t></w:r>"#,
            r#"<w:r><w:rPr><w:i w:val="true"/></w:rPr><w:t>italic</w:t></w:r>"#,
            r#"<w:r><w:rPr><w:b w:val="0"/></w:rPr><w:t xml:space="preserve"> not bold </w:t></w:r>"#,
            r#"<w:r><w:rPr><w:dstrike/></w:rPr><w:t>gone</w:t></w:r>"#,
            r#"<w:r><w:rPr><w:rStyle w:val="Strong"/></w:rPr><w:t xml:space="preserve"> strong</w:t></w:r>"#,
        ]
        .concat();
        let body = [
            p("", &runs),
            p(
                "Emph",
                &format!("{}{}", r("styled "), r#"<w:r><w:rPr><w:i w:val="0"/></w:rPr><w:t>upright</w:t></w:r>"#),
            ),
        ]
        .concat();
        assert_eq!(
            markdown(&docx(&body, HEADING_STYLES, "", "")),
            "**bold** and *italic* not bold ~~gone~~ **strong**\n\n*styled* upright\n"
        );
    }

    const LIST_NUMBERING: &str = r#"<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="2"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2."/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="3"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num><w:num w:numId="4"><w:abstractNumId w:val="2"/></w:num>"#;

    #[test]
    fn numbered_and_nested_bullet_lists_count_per_list_and_restart_with_overrides() {
        let body = [
            li(1, 0, "one"),
            li(1, 1, "sub a"),
            li(1, 1, "sub b"),
            p("", ""),
            li(1, 0, "two"),
            p("", &r("A paragraph between.")),
            li(1, 0, "three"),
            li(3, 0, "restarted"),
            li(2, 0, "bullet"),
            li(2, 1, "nested bullet"),
            li(4, 0, "Chapter"),
            li(4, 1, "Section"),
            li(4, 1, "Another"),
        ]
        .concat();
        assert_eq!(
            markdown(&docx(&body, "", LIST_NUMBERING, "")),
            "1. one\n    - sub a\n    - sub b\n2. two\n\nA paragraph between.\n\n3. three\n1. restarted\n- bullet\n    - nested bullet\n\
             1. Chapter\n    - 1.1. Section\n    - 1.2. Another\n"
        );
    }

    #[test]
    fn style_based_numbering_and_numbered_headings() {
        let styles = r#"<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="2"/></w:numPr></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:numPr><w:numId w:val="4"/></w:numPr><w:outlineLvl w:val="0"/></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="4"/></w:numPr><w:outlineLvl w:val="1"/></w:pPr></w:style>"#;
        let body = [
            p("Heading1", &r("Scope")),
            p("Heading2", &r("Terms")),
            p("ListBullet", &r("styled item")),
            r#"<w:p><w:pPr><w:pStyle w:val="ListBullet"/><w:numPr><w:ilvl w:val="1"/></w:numPr></w:pPr><w:r><w:t>deeper</w:t></w:r></w:p>"#.to_string(),
            r#"<w:p><w:pPr><w:pStyle w:val="ListBullet"/><w:numPr><w:numId w:val="0"/></w:numPr></w:pPr><w:r><w:t>not a list</w:t></w:r></w:p>"#.to_string(),
            p("Heading1", &r("Next")),
        ]
        .concat();
        assert_eq!(
            markdown(&docx(&body, styles, LIST_NUMBERING, "")),
            "## 1 Scope\n\n### 1.1 Terms\n\n- styled item\n    - deeper\n\nnot a list\n\n## 2 Next\n"
        );
    }

    #[test]
    fn merged_cells_repeat_their_text_and_cell_content_is_flattened() {
        let tc = |props: &str, text: &str| format!("<w:tc><w:tcPr>{props}</w:tcPr>{}</w:tc>", p("", &r(text)));
        let list_cell = format!("<w:tc>{}{}</w:tc>", li(2, 0, "first"), li(2, 0, "second"));
        let nested_cell =
            format!("<w:tc><w:tbl><w:tr>{}{}</w:tr></w:tbl>{}</w:tc>", tc("", "in"), tc("", "ner"), p("", ""));
        let body = format!(
            "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>\
             <w:tr>{}{}</w:tr><w:tr>{}{}{}</w:tr><w:tr>{}{list_cell}{nested_cell}</w:tr>\
             <w:tr><w:trPr><w:gridBefore w:val=\"1\"/></w:trPr>{}{}</w:tr></w:tbl>",
            tc(r#"<w:gridSpan w:val="2"/>"#, "Wide"),
            tc("", "C"),
            tc(r#"<w:vMerge w:val="restart"/>"#, "Tall"),
            tc("", "x"),
            tc("", "y"),
            tc("<w:vMerge/>", ""),
            tc("", "late"),
            tc("", "end"),
        );
        assert_eq!(
            markdown(&docx(&body, "", LIST_NUMBERING, "")),
            "| Wide | Wide             | C      |\n|------|------------------|--------|\n| Tall | x                | y      |\n\
             | Tall | - first - second | in ner |\n|      | late             | end    |\n"
        );
    }

    #[test]
    fn hyperlinks_resolve_through_relationships_and_anchors_stay_text() {
        let body = p(
            "",
            &[
                r("See ").as_str(),
                r#"<w:hyperlink r:id="rIdL"><w:r><w:t>the site</w:t></w:r></w:hyperlink>"#,
                r(", ").as_str(),
                r#"<w:hyperlink w:anchor="_Toc1"><w:r><w:t>a section</w:t></w:r></w:hyperlink>"#,
                r(" and ").as_str(),
                r#"<w:hyperlink r:id="rIdJ"><w:r><w:t>no script</w:t></w:r></w:hyperlink>"#,
                r(".").as_str(),
            ]
            .concat(),
        );
        let rels = format!(
            r#"<Relationship Id="rIdL" Type="{REL}/hyperlink" Target="https://example.com/a?b=1&amp;c=2" TargetMode="External"/><Relationship Id="rIdJ" Type="{REL}/hyperlink" Target="javascript:alert(1)" TargetMode="External"/>"#
        );
        assert_eq!(
            markdown(&docx(&body, "", "", &rels)),
            "See [the site](https://example.com/a?b=1&c=2), a section and no script.\n"
        );
    }

    #[test]
    fn pictures_keep_their_description_and_deleted_text_is_skipped() {
        let drawing = r#"<w:r><w:drawing><wp:inline><wp:docPr id="1" name="Picture 1" descr="A duck&#10;&#10;Description automatically generated"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="0" name="duck.png"/></pic:nvPicPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"#;
        let body = [
            p("", drawing),
            p(
                "",
                &[
                    r("Kept ").as_str(),
                    r#"<w:del><w:r><w:delText>removed </w:delText></w:r></w:del>"#,
                    r#"<w:ins><w:r><w:t>inserted</w:t></w:r></w:ins>"#,
                ]
                .concat(),
            ),
            p("", r#"<w:r><w:rPr><w:vanish/></w:rPr><w:t>hidden</w:t></w:r>"#),
        ]
        .concat();
        assert_eq!(markdown(&docx(&body, "", "", "")), "<!-- image: A duck -->\n\nKept inserted\n");
    }

    #[test]
    fn equations_become_latex() {
        let math = r#"<m:oMath><m:r><m:t>A=π</m:t></m:r><m:sSup><m:e><m:r><m:t>r</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath>"#;
        let fraction = r#"<m:oMathPara><m:oMath><m:f><m:num><m:r><m:t>a</m:t></m:r></m:num><m:den><m:r><m:t>b</m:t></m:r></m:den></m:f></m:oMath></m:oMathPara>"#;
        let body = [p("", &format!("{}{math}{}", r("Area "), r("."))), p("", fraction)].concat();
        let doc = read(&docx(&body, "", "", ""), "/file").unwrap();
        assert_eq!(
            doc.blocks,
            vec![Block::Paragraph("Area $A= \\\\pi r^{2}$.".into()), Block::Paragraph("$$\\\\frac{a}{b}$$".into())]
        );
    }

    #[test]
    fn broken_and_foreign_inputs_are_refused_with_codes() {
        let broken = zip(&[
            ("_rels/.rels", String::new()),
            ("word/document.xml", "<w:document><w:body><w:p></w:document>".to_string()),
        ]);
        let error = read(&broken, "/file").unwrap_err();
        assert_eq!(error.code, "damaged_office_file", "{}", error.message);
        let error = read(b"not a zip", "/file").unwrap_err();
        assert_eq!(error.code, "not_an_office_file");
        let deep = format!("{}x{}", "<w:p>".repeat(400), "</w:p>".repeat(400));
        let error = read(&docx(&deep, "", "", ""), "/file").unwrap_err();
        assert_eq!(error.code, "damaged_office_file", "{}", error.message);
    }

    #[test]
    fn tables_nested_to_the_depth_limit_are_read_on_a_test_thread_stack() {
        let depth = (MAX_DEPTH - 8) / 3;
        let body = format!(
            "{}{}{}",
            "<w:tbl><w:tr><w:tc>".repeat(depth),
            p("", &r("deep")),
            "</w:tc></w:tr></w:tbl>".repeat(depth)
        );
        assert_eq!(markdown(&docx(&body, "", "", "")), "| deep |\n|------|\n");
    }

    /// Each docling ground-truth file scores at least what it scored when this reader was
    /// written, less a small margin.
    #[test]
    fn corpus_scores_hold() {
        assert_corpus_floors(
            "docx",
            read,
            &[
                ("docx_lists.docx", 1.0, 1.0, 1.0),
                ("docx_rich_cells.docx", 0.971, 1.0, 1.0),
                ("equations.docx", 0.982, 1.0, 1.0),
                ("unit_test_formatting.docx", 1.0, 1.0, 1.0),
                ("unit_test_headers_numbered.docx", 1.0, 1.0, 1.0),
                ("word_sample.docx", 1.0, 1.0, 1.0),
                ("word_tables.docx", 1.0, 1.0, 1.0),
            ],
        );
    }

    #[test]
    fn every_office_corpus_document_converts() {
        assert_eq!(convert_office_folder("docx", read, "word/document.xml", "<w:t"), 11);
    }
}
