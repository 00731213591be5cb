//! The body of a Word document read into blocks: paragraphs classified by their style
//! and numbering, runs with their marks, fields (hyperlinks), pictures and text boxes,
//! equations, and tables with merged cells repeated.
//!
//! What this module must not do: nest deeper than the OOXML reader's depth limit.

use std::collections::HashMap;

use super::numbering::{Marker, Numbering, format_number, only_separators, placeholders};
use super::styles::{ParaKind, RunProps, Styles, heading_number, squeeze};
use crate::error::EngineError;
use crate::markdown::ooxml::{self, El, MAX_DEPTH, Package, Rels, clean_alt, kids, safe_link};
use crate::markdown::{Block, Inline, Style, omml, one_line};

/// Widest span a merged table cell may claim (Word's limit is 63 columns).
const MAX_SPAN: usize = 64;
/// Most columns a table row may have.
const MAX_COLUMNS: usize = 512;

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

pub(super) struct Reader<'a> {
    pub(super) pkg: Package<'a>,
    pub(super) rels: Rels,
    pub(super) styles: Styles,
    pub(super) numbering: Numbering,
    pub(super) counters: HashMap<String, [Option<i64>; 9]>,
    /// Table cells written so far, against [`ooxml::MAX_TABLE_SLOTS`].
    pub(super) slots: usize,
    pub(super) first_title: Option<String>,
    pub(super) field: String,
}

impl Reader<'_> {
    pub(super) fn blocks(&mut self, parent: El, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
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
