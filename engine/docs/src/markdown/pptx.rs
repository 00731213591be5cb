//! PPTX to Markdown: the slides in presentation order (`p:sldIdLst`), each slide's shapes
//! top to bottom and left to right (docling's reading order), read from the package's
//! parts after the Office gate (`office::package::check`).
//!
//! A title placeholder becomes a level-1 heading; other text bodies give paragraphs and
//! list items, a paragraph's bullet resolved through the paragraph, the shape's list
//! style, the layout's and master's placeholders and the master's text styles (so body
//! placeholders bullet by default); `a:buAutoNum` numbers. Tables repeat a merged cell's
//! text in every cell it covers; pictures become [`Block::Image`] with their description;
//! charts give a picture named by the chart type and their data as a table; SmartArt its
//! texts as a list; group shapes are walked. Slide comments follow each slide as
//! `[author: Name (initials), time: …]: text`. Speaker notes are left out (as docling does).

use std::collections::HashMap;
use std::rc::Rc;

use crate::error::EngineError;
use crate::markdown::omml;
use crate::markdown::ooxml::{self, Dom, El, Package, Rels, clean_alt, kids, safe_link};
use crate::markdown::{Block, Document, Inline, Style, one_line};
use crate::office::package::Kind;

/// Shapes whose tops are this close (EMU, 0.05 inch) read as one row, left to right.
const ROW_TOLERANCE: i64 = 45_720;
/// Deepest group shape nesting walked.
const MAX_GROUPS: usize = 32;
/// Most cells a table row may have.
const MAX_COLUMNS: usize = 512;

/// Reads a PPTX file.
pub fn read(bytes: &[u8], field: &str) -> Result<Document, EngineError> {
    let mut pkg = Package::open(bytes, Kind::Presentation, field)?;
    let root = pkg.rels("")?;
    let main = root
        .first("officeDocument")
        .filter(|r| !r.external)
        .map(|r| r.target.clone())
        .unwrap_or_else(|| "ppt/presentation.xml".to_string());
    let presentation = pkg.xml(&main)?.ok_or_else(|| ooxml::missing(field, &main))?;
    let rels = pkg.rels(&main)?;
    let core_title = pkg.core_title(&root)?;
    let slides: Vec<String> = presentation
        .root()
        .child("p:presentation")
        .and_then(|p| p.child("p:sldIdLst"))
        .map(|list| {
            list.children()
                .filter(|s| s.is("p:sldId"))
                .filter_map(|s| s.attr("r:id"))
                .filter_map(|id| rels.get(id))
                .filter(|r| !r.external && r.kind == "slide")
                .map(|r| r.target.clone())
                .collect()
        })
        .unwrap_or_default();
    let authors = authors(&mut pkg, &rels)?;
    let mut reader = Reader { pkg, authors, templates: HashMap::new(), first_title: None, slots: 0 };
    let mut blocks = Vec::new();
    for part in &slides {
        reader.slide(part, &mut blocks)?;
    }
    ooxml::normalise_list_levels(&mut blocks);
    let mut doc = Document { title: core_title.or(reader.first_title), blocks: Vec::new() };
    for block in blocks {
        doc.push(block);
    }
    Ok(doc)
}

/// Comment authors by id: (name, initials), from the legacy and the modern lists.
fn authors(pkg: &mut Package, rels: &Rels) -> Result<HashMap<String, (String, String)>, EngineError> {
    let mut out = HashMap::new();
    let parts: Vec<String> = rels
        .0
        .iter()
        .filter(|r| !r.external && (r.kind == "commentAuthors" || r.kind == "authors"))
        .map(|r| r.target.clone())
        .collect();
    for part in parts {
        let Some(dom) = pkg.xml(&part)? else { continue };
        let Some(list) = dom.root().children().next() else { continue };
        for author in list.children().filter(|a| a.is("p:cmAuthor") || a.is("p188:author")) {
            if let Some(id) = author.attr("id") {
                let name = author.attr("name").unwrap_or_default().to_string();
                let initials = author.attr("initials").unwrap_or_default().to_string();
                out.insert(id.to_string(), (name, initials));
            }
        }
    }
    Ok(out)
}

/// A slide's layout and that layout's master.
struct Template {
    layout: Option<Dom>,
    master: Option<Dom>,
}

impl Template {
    fn layout_tree(&self) -> Option<El<'_>> {
        self.layout.as_ref()?.root().child("p:sldLayout")?.child("p:cSld")?.child("p:spTree")
    }

    fn master_root(&self) -> Option<El<'_>> {
        self.master.as_ref()?.root().child("p:sldMaster")
    }

    fn master_tree(&self) -> Option<El<'_>> {
        self.master_root()?.child("p:cSld")?.child("p:spTree")
    }
}

/// A placeholder: its type (`obj` when not given) and index.
#[derive(Clone, Debug)]
struct Ph {
    kind: String,
    idx: Option<String>,
}

impl Ph {
    fn of(shape: El) -> Option<Ph> {
        let nv = shape.children().find(|c| c.name().starts_with("p:nv"))?;
        let ph = nv.child("p:nvPr")?.child("p:ph")?;
        Some(Ph {
            kind: ph.attr("type").unwrap_or("obj").to_string(),
            idx: ph.attr("idx").map(|i| i.trim().to_string()),
        })
    }

    fn is_title(&self) -> bool {
        matches!(self.kind.as_str(), "title" | "ctrTitle")
    }

    fn is_furniture(&self) -> bool {
        matches!(self.kind.as_str(), "dt" | "ftr" | "sldNum" | "hdr")
    }

    /// The kind a layout's placeholder of the same role has.
    fn class(&self) -> &str {
        match self.kind.as_str() {
            "title" | "ctrTitle" => "title",
            "body" | "obj" => "body",
            other => other,
        }
    }

    /// The master placeholder (and text style) the placeholder inherits from.
    fn master_class(&self) -> &str {
        match self.kind.as_str() {
            "title" | "ctrTitle" => "title",
            "dt" | "ftr" | "sldNum" | "hdr" => self.kind.as_str(),
            _ => "body",
        }
    }
}

/// The placeholder in `tree` the placeholder `ph` inherits from: same index, else same role.
fn find_placeholder<'d>(tree: El<'d>, ph: &Ph, master: bool) -> Option<El<'d>> {
    let shapes: Vec<(El, Ph)> = tree.children().filter_map(|s| Ph::of(s).map(|p| (s, p))).collect();
    if !master
        && let Some(idx) = &ph.idx
        && let Some((s, _)) = shapes.iter().find(|(_, p)| p.idx.as_ref() == Some(idx))
    {
        return Some(*s);
    }
    let want = if master { ph.master_class() } else { ph.class() };
    shapes.iter().find(|(_, p)| if master { p.master_class() == want } else { p.class() == want }).map(|(s, _)| *s)
}

/// The top-left corner of a shape (x, y in EMU) as its own transform gives it.
fn offset(shape: El) -> Option<(i64, i64)> {
    let xfrm = match shape.name() {
        "p:graphicFrame" => shape.child("p:xfrm"),
        "p:grpSp" => shape.child("p:grpSpPr").and_then(|s| s.child("a:xfrm")),
        _ => shape.child("p:spPr").and_then(|s| s.child("a:xfrm")),
    }?;
    let off = xfrm.child("a:off")?;
    Some((off.attr("x")?.trim().parse().ok()?, off.attr("y")?.trim().parse().ok()?))
}

/// How a paragraph is marked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bullet {
    None,
    Char,
    /// Automatic numbering from this number.
    Auto(u64),
}

fn bullet_of(props: Option<El>) -> Option<Bullet> {
    for c in props?.children() {
        match c.name() {
            "a:buNone" => return Some(Bullet::None),
            "a:buChar" | "a:buBlip" => return Some(Bullet::Char),
            "a:buAutoNum" => {
                let start = c.attr("startAt").and_then(|s| s.trim().parse::<u64>().ok()).unwrap_or(1);
                return Some(Bullet::Auto(start));
            }
            _ => {}
        }
    }
    None
}

fn level_props<'d>(list_style: Option<El<'d>>, level: u8) -> Option<El<'d>> {
    let name = format!("a:lvl{}pPr", level + 1);
    list_style?.child(&name)
}

fn truthy(value: Option<&str>) -> bool {
    matches!(value.map(str::trim), Some("1" | "true" | "on"))
}

/// What the slide being read refers to.
struct Slide {
    rels: Rels,
    template: Rc<Template>,
}

struct Reader<'a> {
    pkg: Package<'a>,
    authors: HashMap<String, (String, String)>,
    templates: HashMap<String, Rc<Template>>,
    first_title: Option<String>,
    /// Table cells written so far, against [`ooxml::MAX_TABLE_SLOTS`].
    slots: usize,
}

impl Reader<'_> {
    fn template(&mut self, layout: Option<String>) -> Result<Rc<Template>, EngineError> {
        let key = layout.clone().unwrap_or_default();
        if let Some(t) = self.templates.get(&key) {
            return Ok(t.clone());
        }
        let mut template = Template { layout: None, master: None };
        if let Some(layout) = layout {
            template.layout = self.pkg.xml(&layout)?;
            let rels = self.pkg.rels(&layout)?;
            if let Some(master) = rels.first("slideMaster").filter(|r| !r.external).map(|r| r.target.clone()) {
                template.master = self.pkg.xml(&master)?;
            }
        }
        let template = Rc::new(template);
        self.templates.insert(key, template.clone());
        Ok(template)
    }

    fn slide(&mut self, part: &str, out: &mut Vec<Block>) -> Result<(), EngineError> {
        let Some(dom) = self.pkg.xml(part)? else { return Ok(()) };
        let rels = self.pkg.rels(part)?;
        let layout = rels.first("slideLayout").filter(|r| !r.external).map(|r| r.target.clone());
        let template = self.template(layout)?;
        let slide = Slide { rels, template };
        if let Some(tree) = dom.root().child("p:sld").and_then(|s| s.child("p:cSld")).and_then(|c| c.child("p:spTree"))
        {
            self.shapes(tree, &slide, out, 0)?;
        }
        self.comments(&slide.rels, out)
    }

    /// Where a shape sits, inherited from its layout or master placeholder when it does
    /// not say.
    fn position(&self, shape: El, slide: &Slide) -> Option<(i64, i64)> {
        if let Some(own) = offset(shape) {
            return Some(own);
        }
        let ph = Ph::of(shape)?;
        let template = &slide.template;
        let inherited = template
            .layout_tree()
            .and_then(|t| find_placeholder(t, &ph, false))
            .and_then(offset)
            .or_else(|| template.master_tree().and_then(|t| find_placeholder(t, &ph, true)).and_then(offset));
        match inherited {
            Some(p) => Some(p),
            // A title with no position anywhere still opens its slide.
            None if ph.is_title() => Some((i64::MIN, i64::MIN)),
            None => None,
        }
    }

    /// The shapes of a tree or group, in reading order: by top, shapes whose tops are
    /// within [`ROW_TOLERANCE`] of the previous one forming a row read left to right;
    /// shapes without a position last, in document order.
    fn shapes(&mut self, parent: El, slide: &Slide, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
        let mut entries: Vec<(i64, i64, usize, El)> = kids(parent)
            .into_iter()
            .filter(|s| matches!(s.name(), "p:sp" | "p:grpSp" | "p:graphicFrame" | "p:pic"))
            .enumerate()
            .map(|(i, s)| {
                let (x, y) = self.position(s, slide).unwrap_or((i64::MAX, i64::MAX));
                (y, x, i, s)
            })
            .collect();
        entries.sort_by_key(|e| (e.0, e.2));
        let mut rows: Vec<Vec<(i64, i64, usize, El)>> = Vec::new();
        let mut previous_top: Option<i64> = None;
        for entry in entries {
            match (rows.last_mut(), previous_top) {
                (Some(row), Some(top)) if entry.0.saturating_sub(top) <= ROW_TOLERANCE => row.push(entry),
                _ => rows.push(vec![entry]),
            }
            previous_top = Some(entry.0);
        }
        for mut row in rows {
            row.sort_by_key(|e| (e.1, e.2));
            for (_, _, _, shape) in row {
                self.shape(shape, slide, out, depth)?;
            }
        }
        Ok(())
    }

    fn shape(&mut self, shape: El, slide: &Slide, out: &mut Vec<Block>, depth: usize) -> Result<(), EngineError> {
        match shape.name() {
            "p:sp" => self.text_shape(shape, slide, out),
            "p:grpSp" if depth < MAX_GROUPS => self.shapes(shape, slide, out, depth + 1),
            "p:graphicFrame" => self.frame(shape, slide, out),
            "p:pic" => {
                let alt = shape
                    .child("p:nvPicPr")
                    .and_then(|n| n.child("p:cNvPr"))
                    .and_then(|c| c.attr("descr").filter(|d| !d.trim().is_empty()).or_else(|| c.attr("title")))
                    .map(clean_alt)
                    .unwrap_or_default();
                out.push(Block::Image { alt });
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn text_shape(&mut self, shape: El, slide: &Slide, out: &mut Vec<Block>) -> Result<(), EngineError> {
        let ph = Ph::of(shape);
        if ph.as_ref().is_some_and(Ph::is_furniture) {
            return Ok(());
        }
        let Some(body) = shape.child("p:txBody") else { return Ok(()) };
        if ph.as_ref().is_some_and(Ph::is_title) {
            let mut inline = Inline::new();
            for p in body.children().filter(|p| p.is("a:p")) {
                self.runs(p, &slide.rels, false, &mut inline);
                inline.text(" ");
            }
            if !inline.is_blank() {
                if self.first_title.is_none() {
                    self.first_title = Some(one_line(&inline.plain()));
                }
                out.push(Block::Heading { level: 1, text: inline.finish() });
            }
            return Ok(());
        }
        let mut counters: [Option<u64>; 9] = [None; 9];
        for p in body.children().filter(|p| p.is("a:p")) {
            let mut inline = Inline::new();
            self.runs(p, &slide.rels, true, &mut inline);
            if inline.is_blank() {
                continue;
            }
            let ppr = p.child("a:pPr");
            let level = ppr.and_then(|p| p.attr("lvl")).and_then(|l| l.trim().parse::<u8>().ok()).unwrap_or(0).min(8);
            let l = level as usize;
            let text = inline.finish();
            match self.bullet(ppr, body, ph.as_ref(), level, slide) {
                Bullet::Auto(start) => {
                    let n = counters[l].map_or(start, |n| n.saturating_add(1));
                    counters[l] = Some(n);
                    counters.iter_mut().skip(l + 1).for_each(|c| *c = None);
                    out.push(Block::ListItem { level, ordered: Some(n), text });
                }
                Bullet::Char => {
                    counters.iter_mut().skip(l).for_each(|c| *c = None);
                    out.push(Block::ListItem { level, ordered: None, text });
                }
                Bullet::None => {
                    counters.iter_mut().skip(l).for_each(|c| *c = None);
                    out.push(Block::Paragraph(text));
                }
            }
        }
        Ok(())
    }

    /// A paragraph's bullet: its own properties, the shape's list style, then for a
    /// placeholder the layout's and master's placeholders and the master's text style.
    fn bullet(&self, ppr: Option<El>, body: El, ph: Option<&Ph>, level: u8, slide: &Slide) -> Bullet {
        if let Some(b) = bullet_of(ppr).or_else(|| bullet_of(level_props(body.child("a:lstStyle"), level))) {
            return b;
        }
        let Some(ph) = ph else { return Bullet::None };
        let template = &slide.template;
        let list_style = |shape: El| -> Option<Bullet> {
            bullet_of(level_props(shape.child("p:txBody").and_then(|b| b.child("a:lstStyle")), level))
        };
        if let Some(b) = template.layout_tree().and_then(|t| find_placeholder(t, ph, false)).and_then(list_style) {
            return b;
        }
        if let Some(b) = template.master_tree().and_then(|t| find_placeholder(t, ph, true)).and_then(list_style) {
            return b;
        }
        let style = match ph.master_class() {
            "title" => "p:titleStyle",
            "body" => "p:bodyStyle",
            _ => "p:otherStyle",
        };
        template
            .master_root()
            .and_then(|m| m.child("p:txStyles"))
            .and_then(|t| t.child(style))
            .and_then(|s| bullet_of(level_props(Some(s), level)))
            .unwrap_or(Bullet::None)
    }

    /// The runs of a paragraph: text with bold, italic, strike and links (when `styled`),
    /// line breaks as spaces, equations as LaTeX.
    fn runs(&self, p: El, rels: &Rels, styled: bool, inline: &mut Inline) {
        for k in kids(p) {
            match k.name() {
                "a:r" | "a:fld" => {
                    let rpr = k.child("a:rPr");
                    let style = match rpr {
                        Some(rpr) if styled => Style {
                            bold: truthy(rpr.attr("b")),
                            italic: truthy(rpr.attr("i")),
                            strike: rpr.attr("strike").is_some_and(|s| s != "noStrike"),
                            code: false,
                        },
                        _ => Style::default(),
                    };
                    let link = rpr
                        .and_then(|r| r.child("a:hlinkClick"))
                        .and_then(|h| h.attr("r:id"))
                        .and_then(|id| rels.get(id))
                        .filter(|r| r.external)
                        .and_then(|r| safe_link(&r.target));
                    let text = k.child("a:t").map(|t| t.text()).unwrap_or_default();
                    inline.push(&text, style, if styled { link.as_deref() } else { None });
                }
                "a:br" => inline.text(" "),
                "a14:m" => {
                    for math in k.descendants().filter(|d| d.is("m:oMath")) {
                        let latex = omml::latex(math);
                        if !latex.is_empty() {
                            inline.text(&format!("${latex}$"));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A graphic frame: a table, a chart or SmartArt.
    fn frame(&mut self, frame: El, slide: &Slide, out: &mut Vec<Block>) -> Result<(), EngineError> {
        let Some(data) = frame.child("a:graphic").and_then(|g| g.child("a:graphicData")) else { return Ok(()) };
        for el in kids(data) {
            match el.name() {
                "a:tbl" => {
                    let rows = self.table(el, &slide.rels)?;
                    if !rows.is_empty() {
                        out.push(Block::Table(rows));
                    }
                }
                "c:chart" => {
                    let part = el.attr("r:id").and_then(|id| slide.rels.get(id)).filter(|r| !r.external);
                    if let Some(part) = part.map(|r| r.target.clone()) {
                        out.extend(ooxml::chart(&mut self.pkg, &part)?);
                    }
                }
                "dgm:relIds" => {
                    let part = el.attr("r:dm").and_then(|id| slide.rels.get(id)).filter(|r| !r.external);
                    if let Some(part) = part.map(|r| r.target.clone()) {
                        self.smart_art(&part, out)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn table(&mut self, tbl: El, rels: &Rels) -> Result<Vec<Vec<String>>, EngineError> {
        let mut rows: Vec<Vec<String>> = Vec::new();
        for tr in tbl.children().filter(|r| r.is("a:tr")) {
            let mut row: Vec<String> = Vec::new();
            for tc in tr.children().filter(|c| c.is("a:tc")) {
                if row.len() >= MAX_COLUMNS {
                    break;
                }
                let text = if truthy(tc.attr("hMerge")) {
                    row.last().cloned().unwrap_or_default()
                } else if truthy(tc.attr("vMerge")) {
                    rows.last().and_then(|r| r.get(row.len())).cloned().unwrap_or_default()
                } else {
                    let mut parts = Vec::new();
                    if let Some(body) = tc.child("a:txBody") {
                        for p in body.children().filter(|p| p.is("a:p")) {
                            let mut inline = Inline::new();
                            self.runs(p, rels, true, &mut inline);
                            if !inline.is_blank() {
                                parts.push(inline.finish());
                            }
                        }
                    }
                    parts.join(" ")
                };
                row.push(text);
            }
            rows.push(row);
        }
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        self.slots = self.slots.saturating_add(width.saturating_mul(rows.len()));
        if self.slots > ooxml::MAX_TABLE_SLOTS {
            return Err(ooxml::too_many_cells(&self.pkg.field));
        }
        Ok(rows)
    }

    /// The texts of a SmartArt diagram's nodes, as a list.
    fn smart_art(&mut self, part: &str, out: &mut Vec<Block>) -> Result<(), EngineError> {
        let Some(dom) = self.pkg.xml(part)? else { return Ok(()) };
        let Some(points) = dom.root().child("dgm:dataModel").and_then(|d| d.child("dgm:ptLst")) else { return Ok(()) };
        for pt in points.children().filter(|p| p.is("dgm:pt")) {
            if !matches!(pt.attr("type"), None | Some("node")) {
                continue;
            }
            let Some(t) = pt.child("dgm:t") else { continue };
            let paragraphs: Vec<String> = t.children().filter(|p| p.is("a:p")).map(|p| one_line(&p.text())).collect();
            let text = one_line(&paragraphs.join(" "));
            if !text.is_empty() {
                let mut inline = Inline::new();
                inline.text(&text);
                out.push(Block::ListItem { level: 0, ordered: None, text: inline.finish() });
            }
        }
        Ok(())
    }

    /// The comments on a slide (legacy and modern), each as
    /// `[author: Name (initials), time: …]: text`.
    fn comments(&mut self, rels: &Rels, out: &mut Vec<Block>) -> Result<(), EngineError> {
        let parts: Vec<String> = rels.all("comments").filter(|r| !r.external).map(|r| r.target.clone()).collect();
        for part in parts {
            let Some(dom) = self.pkg.xml(&part)? else { continue };
            let Some(list) = dom.root().children().next() else { continue };
            let mut found: Vec<(Option<String>, Option<String>, String)> = Vec::new();
            if list.is("p:cmLst") {
                for cm in list.children().filter(|c| c.is("p:cm")) {
                    let text = cm.child("p:text").map(|t| t.text()).unwrap_or_default();
                    found.push((cm.attr("authorId").map(str::to_string), cm.attr("dt").map(str::to_string), text));
                }
            } else if list.is("p188:cmLst") {
                for cm in list.children().filter(|c| c.is("p188:cm")) {
                    let replies =
                        cm.child("p188:replyLst").map(|r| r.children().filter(|c| c.is("p188:reply")).collect());
                    for c in std::iter::once(cm).chain(replies.unwrap_or_else(Vec::new)) {
                        let text = c
                            .child("p188:txBody")
                            .map(|b| {
                                b.children().filter(|p| p.is("a:p")).map(|p| p.text()).collect::<Vec<_>>().join(" ")
                            })
                            .unwrap_or_default();
                        found.push((
                            c.attr("authorId").map(str::to_string),
                            c.attr("created").map(str::to_string),
                            text,
                        ));
                    }
                }
            }
            for (author, time, text) in found {
                let text = one_line(&text);
                if text.is_empty() {
                    continue;
                }
                let mut meta = Vec::new();
                if let Some((name, initials)) = author.and_then(|a| self.authors.get(&a)).filter(|(n, _)| !n.is_empty())
                {
                    meta.push(if initials.is_empty() {
                        format!("author: {name}")
                    } else {
                        format!("author: {name} ({initials})")
                    });
                }
                if let Some(time) = time.filter(|t| !t.trim().is_empty()) {
                    meta.push(format!("time: {}", time.trim()));
                }
                let line = if meta.is_empty() { text } else { format!("[{}]: {text}", meta.join(", ")) };
                let mut inline = Inline::new();
                inline.text(&line);
                out.push(Block::Paragraph(inline.finish()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::docx::tests::{assert_corpus_floors, convert_office_folder, zip};
    use crate::markdown::render;

    const NS: &str = r#"xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main""#;
    const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

    fn rels(inner: &str) -> String {
        format!(
            r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{inner}</Relationships>"#
        )
    }

    /// A deck whose slides are listed in `order` (file numbers) and hold `slides[i]`
    /// shapes; slide files use a layout on a master whose body style bullets.
    fn deck(slides: &[&str], order: &[usize], slide_rels: &str) -> Vec<u8> {
        let mut members: Vec<(String, String)> = vec![
            (
                "[Content_Types].xml".to_string(),
                r#"<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>"#.to_string(),
            ),
            (
                "_rels/.rels".to_string(),
                rels(&format!(
                    r#"<Relationship Id="rId1" Type="{REL}/officeDocument" Target="ppt/presentation.xml"/>"#
                )),
            ),
        ];
        let ids: String = order.iter().map(|n| format!(r#"<p:sldId id="{}" r:id="rIdS{n}"/>"#, 255 + n)).collect();
        members.push((
            "ppt/presentation.xml".to_string(),
            format!(r#"<p:presentation {NS}><p:sldIdLst>{ids}</p:sldIdLst></p:presentation>"#),
        ));
        let slide_list: String = (1..=slides.len())
            .map(|n| format!(r#"<Relationship Id="rIdS{n}" Type="{REL}/slide" Target="slides/slide{n}.xml"/>"#))
            .collect();
        members.push(("ppt/_rels/presentation.xml.rels".to_string(), rels(&slide_list)));
        for (i, shapes) in slides.iter().enumerate() {
            let n = i + 1;
            members.push((
                format!("ppt/slides/slide{n}.xml"),
                format!(
                    r#"<p:sld {NS}><p:cSld><p:spTree><p:nvGrpSpPr/><p:grpSpPr/>{shapes}</p:spTree></p:cSld></p:sld>"#
                ),
            ));
            members.push((
                format!("ppt/slides/_rels/slide{n}.xml.rels"),
                rels(&format!(
                    r#"<Relationship Id="rIdL" Type="{REL}/slideLayout" Target="../slideLayouts/slideLayout1.xml"/>{slide_rels}"#
                )),
            ));
        }
        members.push((
            "ppt/slideLayouts/slideLayout1.xml".to_string(),
            format!(
                r#"<p:sldLayout {NS}><p:cSld><p:spTree><p:sp><p:nvSpPr><p:cNvPr id="2" name="Title"/><p:cNvSpPr/><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="100" y="100"/></a:xfrm></p:spPr></p:sp></p:spTree></p:cSld></p:sldLayout>"#
            ),
        ));
        members.push((
            "ppt/slideLayouts/_rels/slideLayout1.xml.rels".to_string(),
            rels(&format!(
                r#"<Relationship Id="rId1" Type="{REL}/slideMaster" Target="../slideMasters/slideMaster1.xml"/>"#
            )),
        ));
        members.push((
            "ppt/slideMasters/slideMaster1.xml".to_string(),
            format!(
                r#"<p:sldMaster {NS}><p:cSld><p:spTree/></p:cSld><p:txStyles><p:titleStyle><a:lvl1pPr/></p:titleStyle><p:bodyStyle><a:lvl1pPr><a:buChar char="•"/></a:lvl1pPr><a:lvl2pPr><a:buChar char="–"/></a:lvl2pPr></p:bodyStyle><p:otherStyle><a:lvl1pPr/></p:otherStyle></p:txStyles></p:sldMaster>"#
            ),
        ));
        zip(&members)
    }

    fn title(text: &str) -> String {
        format!(
            r#"<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr/><p:nvPr><p:ph type="title"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:txBody></p:sp>"#
        )
    }

    fn text_box(y: i64, x: i64, paragraphs: &str, placeholder: bool) -> String {
        let ph = if placeholder { r#"<p:ph idx="1"/>"# } else { "" };
        format!(
            r#"<p:sp><p:nvSpPr><p:cNvPr id="3" name="Box"/><p:cNvSpPr/><p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="10" cy="10"/></a:xfrm></p:spPr><p:txBody><a:bodyPr/>{paragraphs}</p:txBody></p:sp>"#
        )
    }

    fn para(ppr: &str, text: &str) -> String {
        format!("<a:p>{ppr}<a:r><a:rPr lang=\"en-US\"/><a:t>{text}</a:t></a:r></a:p>")
    }

    fn markdown(bytes: &[u8]) -> String {
        render(&read(bytes, "/file").unwrap())
    }

    #[test]
    fn slides_follow_the_slide_id_list_and_titles_become_headings() {
        let bytes = deck(&[&title("Written first"), &title("Shown first")], &[2, 1], "");
        let doc = read(&bytes, "/file").unwrap();
        assert_eq!(doc.title.as_deref(), Some("Shown first"));
        assert_eq!(render(&doc), "# Shown first\n\n# Written first\n");
    }

    #[test]
    fn body_placeholders_bullet_by_default_with_levels_and_numbering() {
        let body = [
            para(r#"<a:pPr><a:buNone/></a:pPr>"#, "Intro"),
            para("", "First"),
            para(r#"<a:pPr lvl="1"/>"#, "Nested"),
            para(r#"<a:pPr lvl="1"><a:buAutoNum type="arabicPeriod"/></a:pPr>"#, "Step"),
            para(r#"<a:pPr lvl="1"><a:buAutoNum type="arabicPeriod"/></a:pPr>"#, "Step"),
            para("", "Second"),
        ]
        .concat();
        let plain = [
            para("", "Plain text box"),
            para(r#"<a:pPr><a:buAutoNum type="arabicPeriod" startAt="3"/></a:pPr>"#, "three"),
        ]
        .concat();
        let shapes =
            [text_box(2_000_000, 0, &body, true), title("Agenda"), text_box(5_000_000, 0, &plain, false)].concat();
        assert_eq!(
            markdown(&deck(&[&shapes], &[1], "")),
            "# Agenda\n\nIntro\n\n- First\n    - Nested\n    1. Step\n    2. Step\n- Second\n\nPlain text box\n\n3. three\n"
        );
    }

    #[test]
    fn shapes_read_top_to_bottom_then_left_to_right() {
        let shapes = [
            text_box(3_000_000, 0, &para("", "bottom"), false),
            text_box(1_000_000, 5_000_000, &para("", "top right"), false),
            text_box(1_010_000, 0, &para("", "top left"), false),
        ]
        .concat();
        assert_eq!(markdown(&deck(&[&shapes], &[1], "")), "top left\n\ntop right\n\nbottom\n");
    }

    #[test]
    fn table_merges_repeat_text_and_runs_keep_style_and_links() {
        let tc = |attrs: &str, text: &str| {
            format!(r#"<a:tc {attrs}><a:txBody><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></a:txBody></a:tc>"#)
        };
        let table = format!(
            r#"<p:graphicFrame><p:nvGraphicFramePr><p:cNvPr id="4" name="Table"/><p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm><a:off x="0" y="500000"/></p:xfrm><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/table"><a:tbl><a:tr>{}{}{}</a:tr><a:tr>{}{}{}</a:tr><a:tr>{}{}{}</a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>"#,
            tc("", ""),
            tc(r#"gridSpan="2""#, "Group"),
            tc(r#"hMerge="1""#, ""),
            tc(r#"rowSpan="2""#, "Row"),
            tc("", "a"),
            tc("", "b"),
            tc(r#"vMerge="1""#, ""),
            tc("", "c"),
            tc("", "d"),
        );
        let runs = r#"<a:p><a:r><a:rPr b="1"/><a:t>Bold</a:t></a:r><a:r><a:rPr/><a:t xml:space="preserve"> and </a:t></a:r><a:r><a:rPr i="1"><a:hlinkClick r:id="rIdH"/></a:rPr><a:t>a link</a:t></a:r><a:br/><a:r><a:rPr strike="sngStrike"/><a:t>old</a:t></a:r></a:p>"#;
        let picture = r#"<p:pic><p:nvPicPr><p:cNvPr id="5" name="Picture 1" descr="A chart of ducks"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr><p:spPr><a:xfrm><a:off x="0" y="9000000"/></a:xfrm></p:spPr></p:pic>"#;
        let shapes = [table, text_box(8_000_000, 0, runs, false), picture.to_string()].concat();
        let link = format!(
            r#"<Relationship Id="rIdH" Type="{REL}/hyperlink" Target="https://example.com/" TargetMode="External"/>"#
        );
        assert_eq!(
            markdown(&deck(&[&shapes], &[1], &link)),
            "|     | Group | Group |\n|-----|-------|-------|\n| Row | a     | b     |\n| Row | c     | d     |\n\n\
             **Bold** and [*a link*](https://example.com/) ~~old~~\n\n<!-- image: A chart of ducks -->\n"
        );
    }

    #[test]
    fn broken_and_foreign_inputs_are_refused_with_codes() {
        let bytes = zip(&[("ppt/presentation.xml", "<p:presentation><p:sldIdLst>")]);
        let error = read(&bytes, "/file").unwrap_err();
        assert_eq!(error.code, "damaged_office_file", "{}", error.message);
        let docx = zip(&[("word/document.xml", "<w:document/>")]);
        assert_eq!(read(&docx, "/file").unwrap_err().code, "not_an_office_file");
    }

    /// Each docling ground-truth file scores at least what it scored when this reader was
    /// written, less a small margin.
    #[test]
    fn corpus_scores_hold() {
        assert_corpus_floors(
            "pptx",
            read,
            &[
                ("powerpoint_comments.pptx", 0.97, 1.0, 1.0),
                ("powerpoint_sample.pptx", 1.0, 1.0, 1.0),
                ("powerpoint_with_image.pptx", 1.0, 1.0, 1.0),
                ("pptx_chart.pptx", 0.825, 1.0, 0.5),
            ],
        );
    }

    #[test]
    fn every_office_corpus_presentation_converts() {
        assert_eq!(convert_office_folder("pptx", read, "ppt/slides/slide", "<a:t"), 7);
    }
}
