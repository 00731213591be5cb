//! Imposition: pages of a document drawn, scaled and placed, onto new sheets. The shared
//! core of n-up, booklet and poster.
//!
//! Each page drawn becomes one form XObject holding its content as seen (its crop box,
//! turned upright by its /Rotate), drawn as often as the sheets need it. Before that,
//! form fields and annotations with an appearance are burned into their page (as
//! flatten does), so what a reader saw is what the sheet shows. Links move with their
//! page: their boxes are carried onto the sheet, and every destination in the file
//! (bookmarks, named destinations, links, the open action) points at the sheet where its
//! page is drawn first, at the same spot. What cannot follow a page onto a sheet is
//! dropped: the tag structure and page labels (they describe the old pages), annotations
//! without an appearance (counted in the report), and everything only the old pages used.

use std::collections::HashMap;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Limits;
use crate::error::EngineError;
use crate::pdf::paper::PageSize;
use crate::pdf::stamp::{self, num};
use crate::pdf::{self, Matrix, Rect, concat};

/// One page drawn on a sheet.
#[derive(Clone, Debug)]
pub struct Draw {
    /// The page (1-based).
    pub page: u32,
    /// Maps the page as seen (origin at its bottom left, upright) onto the sheet.
    pub at: Matrix,
    /// The part of the sheet it may cover (sheet coordinates); all of it when `None`.
    pub clip: Option<Rect>,
}

/// A new page of the result.
#[derive(Clone, Debug, Default)]
pub struct Sheet {
    /// Width and height in points.
    pub size: (f64, f64),
    /// What is drawn on it, in order.
    pub draws: Vec<Draw>,
    /// Content drawn over the pages (frames, marks); it may use the font `/Helv` and the
    /// graphics state `/Hl` (fills a third opaque, for highlights).
    pub marks: String,
}

/// The size of page `id` as a reader sees it: its crop box, turned by its /Rotate.
pub fn seen_size(doc: &Document, id: ObjectId) -> (f64, f64) {
    let crop = pdf::crop_box(doc, id);
    if pdf::rotation(doc, id).rem_euclid(180) == 90 {
        (crop.height(), crop.width())
    } else {
        (crop.width(), crop.height())
    }
}

/// The seen size of page `number`, refused when it is not a real page size (a hostile
/// or broken box would make every matrix meaningless).
pub fn page_size(doc: &Document, id: ObjectId, number: u32) -> Result<(f64, f64), EngineError> {
    let (w, h) = seen_size(doc, id);
    if (1.0..=1e6).contains(&w) && (1.0..=1e6).contains(&h) {
        return Ok((w, h));
    }
    Err(EngineError::invalid_with(
        "damaged_pdf",
        "/file",
        format!(
            "/file: page {number} has a visible area of {} x {} pt, which cannot be placed on a sheet",
            num(w),
            num(h)
        ),
    ))
}

/// The pages a `pages` field chooses of `count` (in the order written, repeats kept;
/// every page when it is absent), at most `limits.max_pages` of them; errors name `/pages`.
pub fn chosen(pages: Option<&str>, count: u32, limits: &Limits) -> Result<Vec<u32>, EngineError> {
    crate::pages::PageSelection::parse_or_all(pages, "/pages")?.resolve(count, limits.max_pages, "/pages")
}

/// A page number and its seen size (width, height).
pub type SizedPage = (u32, (f64, f64));

/// [`chosen`] pages of `doc`, each with its seen size ([`page_size`]).
pub fn chosen_sizes(doc: &Document, pages: Option<&str>, limits: &Limits) -> Result<Vec<SizedPage>, EngineError> {
    let ids: Vec<ObjectId> = doc.page_iter().collect();
    chosen(pages, ids.len() as u32, limits)?
        .into_iter()
        .map(|n| Ok((n, page_size(doc, ids[n as usize - 1], n)?)))
        .collect()
}

/// The document with its pages replaced by `sheets`, as a transform's result.
pub fn into_pdf(doc: Document, sheets: Vec<Sheet>, limits: &Limits) -> Result<crate::pdf::transform::Pdf, EngineError> {
    Ok(crate::pdf::transform::Pdf::Doc(impose(doc, sheets, limits)?))
}

/// Checks a sheet's paper and margin; errors name `field` and `/margin_pt`.
pub fn check_paper(paper: Option<PageSize>, field: &str, margin: f64, most: f64) -> Result<(), EngineError> {
    if let Some(paper) = paper {
        paper.check(field)?;
    }
    stamp::check_range(margin, 0.0, most, "/margin_pt")?;
    Ok(())
}

/// Which way a sheet is turned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SheetOrientation {
    /// The way that shows the pages largest.
    #[default]
    Auto,
    /// The shorter side across.
    Portrait,
    /// The longer side across.
    Landscape,
}

/// A sheet divided into equal cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// The sheet's width and height.
    pub size: (f64, f64),
    /// Columns and rows.
    pub shape: (u32, u32),
    /// The cells, row by row from the top, each row from the left.
    pub cells: Vec<Rect>,
}

/// Of `paper` turned as `orientation` allows and the (columns, rows) `shapes` offered,
/// the grid showing a page of size `page` largest (the first offered on a tie); `None`
/// when the margin and gaps leave no room.
pub fn best_grid(
    paper: (f64, f64),
    orientation: SheetOrientation,
    shapes: &[(u32, u32)],
    page: (f64, f64),
    margin: f64,
    gap: f64,
) -> Option<Grid> {
    let sizes = match orientation {
        SheetOrientation::Auto if paper.0 == paper.1 => vec![paper],
        // The paper as given first: it wins a tie.
        SheetOrientation::Auto => vec![paper, (paper.1, paper.0)],
        SheetOrientation::Portrait => vec![crate::pdf::paper::turned(paper, false)],
        SheetOrientation::Landscape => vec![crate::pdf::paper::turned(paper, true)],
    };
    let mut best: Option<(f64, Grid)> = None;
    for size in sizes {
        for &shape in shapes {
            let Some(grid) = grid(size, shape, margin, gap) else { continue };
            let cell = grid.cells[0];
            let scale = (cell.width() / page.0).min(cell.height() / page.1);
            if best.as_ref().is_none_or(|(s, _)| scale > *s + 1e-9) {
                best = Some((scale, grid));
            }
        }
    }
    best.map(|(_, grid)| grid)
}

/// The error of a margin and spacing that leave no room on a sheet of `size` (the
/// document's own page size when no paper is named).
pub fn no_room(size: (f64, f64)) -> EngineError {
    EngineError::invalid_with(
        "margins_too_large",
        "/margin_pt",
        format!(
            "/margin_pt: the margins and the space between pages leave no room for them on a {} x {} pt sheet",
            num(size.0),
            num(size.1)
        ),
    )
}

/// `size` divided into `shape` (columns, rows) inside `margin`, `gap` between cells.
pub fn grid(size: (f64, f64), shape: (u32, u32), margin: f64, gap: f64) -> Option<Grid> {
    let (cols, rows) = shape;
    let w = (size.0 - 2.0 * margin - gap * (cols - 1) as f64) / cols as f64;
    let h = (size.1 - 2.0 * margin - gap * (rows - 1) as f64) / rows as f64;
    if w < 1.0 || h < 1.0 {
        return None;
    }
    let mut cells = Vec::with_capacity((cols * rows) as usize);
    for row in 0..rows {
        let y1 = size.1 - margin - row as f64 * (h + gap);
        for col in 0..cols {
            let x0 = margin + col as f64 * (w + gap);
            cells.push(Rect { x0, y0: y1 - h, x1: x0 + w, y1 });
        }
    }
    Some(Grid { size, shape, cells })
}

/// The matrix taking a page's own space onto the page as seen: its crop box turned
/// upright, with the seen bottom left at the origin.
pub fn upright(crop: Rect, rotate: i64) -> Matrix {
    // A quarter turn clockwise for display takes the page's left edge to the top:
    // seen X = y − y0, seen Y = x1 − x. The others follow the same way.
    match rotate.rem_euclid(360) {
        90 => [0.0, -1.0, 1.0, 0.0, -crop.y0, crop.x1],
        180 => [-1.0, 0.0, 0.0, -1.0, crop.x1, crop.y1],
        270 => [0.0, 1.0, -1.0, 0.0, crop.y1, -crop.x0],
        _ => [1.0, 0.0, 0.0, 1.0, -crop.x0, -crop.y0],
    }
}

/// The matrix drawing a page seen as `size` as large as fits in `cell`, centred.
pub fn fit(size: (f64, f64), cell: Rect) -> Matrix {
    let scale = (cell.width() / size.0).min(cell.height() / size.1);
    let x = cell.x0 + (cell.width() - scale * size.0) / 2.0;
    let y = cell.y0 + (cell.height() - scale * size.1) / 2.0;
    [scale, 0.0, 0.0, scale, x, y]
}

/// Where a point goes through `m`.
pub fn apply(m: &Matrix, x: f64, y: f64) -> (f64, f64) {
    (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5])
}

/// The bounds of `r` mapped through `m`.
pub fn map_rect(m: &Matrix, r: Rect) -> Rect {
    let corners = [apply(m, r.x0, r.y0), apply(m, r.x1, r.y0), apply(m, r.x0, r.y1), apply(m, r.x1, r.y1)];
    let xs = corners.map(|c| c.0);
    let ys = corners.map(|c| c.1);
    Rect {
        x0: xs.iter().copied().fold(f64::INFINITY, f64::min),
        y0: ys.iter().copied().fold(f64::INFINITY, f64::min),
        x1: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        y1: ys.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

/// A page turned into a form.
struct Form {
    id: ObjectId,
    /// The page's own space onto the page as seen.
    upright: Matrix,
    /// The page's seen height (for the top left of a destination without a spot).
    height: f64,
}

/// Where a destination to an old page now points.
struct Placed {
    sheet: ObjectId,
    /// The page's own space onto the sheet.
    m: Matrix,
    /// The page's seen top left on the sheet.
    top_left: (f64, f64),
}

/// Replaces the document's pages by `sheets`.
pub fn impose(mut doc: Document, sheets: Vec<Sheet>, limits: &Limits) -> Result<Document, EngineError> {
    // What a reader saw of fields and annotations becomes page content, so it is drawn
    // with the page; links, attachments and media stay annotations.
    crate::docs::flatten::flatten(&mut doc, true)?;
    let page_ids: Vec<ObjectId> = doc.page_iter().collect();

    let mut forms: HashMap<u32, Form> = HashMap::new();
    let mut links: HashMap<u32, Vec<Dictionary>> = HashMap::new();
    for draw in sheets.iter().flat_map(|s| &s.draws) {
        if forms.contains_key(&draw.page) {
            continue;
        }
        let id = *page_ids
            .get(draw.page as usize - 1)
            .ok_or_else(|| EngineError::internal(format!("imposing page {} of {}", draw.page, page_ids.len())))?;
        forms.insert(draw.page, page_form(&mut doc, id, draw.page, limits)?);
        links.insert(draw.page, page_links(&doc, id));
    }

    let root = doc.new_object_id();
    let mut kids = Vec::with_capacity(sheets.len());
    let mut placed: HashMap<ObjectId, Placed> = HashMap::new();
    let mut new_links = Vec::new();
    for sheet in sheets {
        let sheet_id = doc.new_object_id();
        let media = Rect { x0: 0.0, y0: 0.0, x1: sheet.size.0, y1: sheet.size.1 };
        let mut content = String::new();
        let mut xobjects = Dictionary::new();
        let mut annots = Vec::new();
        for draw in &sheet.draws {
            let form = &forms[&draw.page];
            let name = format!("P{}", draw.page);
            xobjects.set(name.as_bytes(), Object::Reference(form.id));
            content.push_str("q\n");
            if let Some(c) = draw.clip {
                content.push_str(&format!(
                    "{} {} {} {} re W n\n",
                    num(c.x0),
                    num(c.y0),
                    num(c.width()),
                    num(c.height())
                ));
            }
            let at = draw.at.map(num).join(" ");
            content.push_str(&format!("{at} cm /{name} Do\nQ\n"));

            let m = concat(&form.upright, &draw.at);
            placed.entry(page_ids[draw.page as usize - 1]).or_insert_with(|| Placed {
                sheet: sheet_id,
                m,
                top_left: apply(&draw.at, 0.0, form.height),
            });
            let bounds = draw.clip.and_then(|c| c.intersect(media)).unwrap_or(media);
            for link in &links[&draw.page] {
                if let Some(link) = moved_link(&doc, link, &m, bounds, sheet_id) {
                    let id = doc.add_object(link);
                    annots.push(Object::Reference(id));
                    new_links.push((sheet_id, id));
                }
            }
        }
        let mut resources = Dictionary::new();
        resources.set("XObject", xobjects);
        if !sheet.marks.is_empty() {
            content.push_str("q\n");
            content.push_str(&sheet.marks);
            content.push_str("\nQ\n");
            let mut fonts = Dictionary::new();
            fonts.set("Helv", stamp::helvetica());
            resources.set("Font", fonts);
            // A see-through fill, for highlights.
            let mut highlight = Dictionary::new();
            highlight.set("Type", Object::Name(b"ExtGState".to_vec()));
            highlight.set("ca", Object::Real(0.35));
            let mut states = Dictionary::new();
            states.set("Hl", highlight);
            resources.set("ExtGState", states);
        }
        let mut stream = Stream::new(Dictionary::new(), content.into_bytes());
        let _ = stream.compress();
        let contents = doc.add_object(stream);
        let mut page = Dictionary::new();
        page.set("Type", Object::Name(b"Page".to_vec()));
        page.set("Parent", Object::Reference(root));
        page.set("MediaBox", media.to_object());
        page.set("Resources", resources);
        page.set("Contents", Object::Reference(contents));
        if !annots.is_empty() {
            page.set("Annots", annots);
        }
        doc.objects.insert(sheet_id, Object::Dictionary(page));
        kids.push(Object::Reference(sheet_id));
    }
    let mut tree = Dictionary::new();
    tree.set("Type", Object::Name(b"Pages".to_vec()));
    tree.set("Count", Object::Integer(kids.len() as i64));
    tree.set("Kids", kids);
    doc.objects.insert(root, Object::Dictionary(tree));

    let catalog = doc.catalog_mut().map_err(|e| pdf::edit_error("imposing", e))?;
    catalog.set("Pages", Object::Reference(root));
    // They describe the old pages: tags point into their content, labels count them,
    // article threads and the form's fields sit on them.
    for key in [&b"StructTreeRoot"[..], b"MarkInfo", b"PageLabels", b"Threads", b"AcroForm"] {
        catalog.remove(key);
    }

    repoint(&mut doc, &page_ids, &placed);
    // A link whose page is not on any sheet goes nowhere: it goes.
    for (sheet, id) in new_links {
        if link_target_gone(&doc, id)
            && let Ok(Object::Array(annots)) = doc.get_dictionary_mut(sheet).and_then(|p| p.get_mut(b"Annots"))
        {
            annots.retain(|a| a.as_reference().ok() != Some(id));
        }
    }
    doc.prune_objects();
    Ok(doc)
}

/// Page `id` as a form XObject of its content, resources and transparency group.
fn page_form(doc: &mut Document, id: ObjectId, number: u32, limits: &Limits) -> Result<Form, EngineError> {
    let crop = pdf::crop_box(doc, id);
    let rotate = pdf::rotation(doc, id);
    let (_, height) = seen_size(doc, id);
    let resources = pdf::inherited(doc, id, b"Resources").cloned().unwrap_or(Object::Dictionary(Dictionary::new()));
    let group = doc.get_dictionary(id).ok().and_then(|p| p.get(b"Group").ok()).cloned();
    let streams = doc.get_page_contents(id);
    let single = match streams.as_slice() {
        [only] => doc.get_object(*only).ok().and_then(|o| o.as_stream().ok()).cloned(),
        _ => None,
    };
    // One content stream is used as it is stored, still compressed; several are joined.
    let mut stream = match single {
        Some(stream) => {
            let mut dict = Dictionary::new();
            for key in [&b"Filter"[..], b"DecodeParms"] {
                if let Ok(value) = stream.dict.get(key) {
                    dict.set(key, value.clone());
                }
            }
            Stream::new(dict, stream.content)
        }
        None => {
            let content = doc.get_page_content_with_limit(id, limits.max_stream_bytes).map_err(|_| {
                EngineError::too_large(
                    "too_complex",
                    Some("/file".into()),
                    format!(
                        "/file: page {number}'s content decodes to more than {} MiB",
                        limits.max_stream_bytes >> 20
                    ),
                )
            })?;
            let mut stream = Stream::new(Dictionary::new(), content);
            let _ = stream.compress();
            stream
        }
    };
    stream.dict.set("Type", Object::Name(b"XObject".to_vec()));
    stream.dict.set("Subtype", Object::Name(b"Form".to_vec()));
    stream.dict.set("BBox", crop.to_object());
    stream.dict.set("Matrix", Object::Array(upright(crop, rotate).iter().map(|&v| Object::Real(v as f32)).collect()));
    stream.dict.set("Resources", resources);
    if let Some(group) = group {
        stream.dict.set("Group", group);
    }
    Ok(Form { id: doc.add_object(stream), upright: upright(crop, rotate), height })
}

/// The link annotations of a page, as dictionaries.
fn page_links(doc: &Document, id: ObjectId) -> Vec<Dictionary> {
    let Ok(page) = doc.get_dictionary(id) else { return Vec::new() };
    let annots = match page.get(b"Annots").and_then(|a| doc.dereference(a)) {
        Ok((_, Object::Array(items))) => items.clone(),
        _ => return Vec::new(),
    };
    annots
        .iter()
        .filter_map(|entry| match doc.dereference(entry) {
            Ok((_, Object::Dictionary(annot)))
                if annot.get(b"Subtype").and_then(Object::as_name).ok() == Some(&b"Link"[..]) =>
            {
                Some(annot.clone())
            }
            _ => None,
        })
        .collect()
}

/// A link annotation moved through `m` onto `sheet`, cut to `bounds`; `None` when none
/// of it is left there.
fn moved_link(doc: &Document, link: &Dictionary, m: &Matrix, bounds: Rect, sheet: ObjectId) -> Option<Dictionary> {
    let rect = link.get(b"Rect").ok().and_then(|r| pdf::rect(doc, r))?;
    let rect = map_rect(m, rect).intersect(bounds)?;
    let mut out = Dictionary::new();
    for (key, value) in link.iter() {
        // The page, the structure and a popup belong to the old page.
        if !matches!(key.as_slice(), b"P" | b"StructParent" | b"Popup" | b"Parent" | b"Rect" | b"QuadPoints") {
            out.set(key.clone(), value.clone());
        }
    }
    out.set("Rect", rect.to_object());
    out.set("P", Object::Reference(sheet));
    if let Ok(Object::Array(points)) = link.get(b"QuadPoints").and_then(|q| doc.dereference(q)).map(|(_, o)| o) {
        let values: Option<Vec<f64>> = points.iter().map(|p| pdf::number(doc, p)).collect();
        if let Some(values) = values.filter(|v| v.len() % 8 == 0 && !v.is_empty()) {
            let moved: Vec<Object> = values
                .chunks_exact(2)
                .flat_map(|xy| {
                    let (x, y) = apply(m, xy[0], xy[1]);
                    [Object::Real(x as f32), Object::Real(y as f32)]
                })
                .collect();
            out.set("QuadPoints", moved);
        }
    }
    Some(out)
}

/// Nesting followed when rewriting references to pages.
const MAX_DEPTH: usize = 64;

/// Points every reference to an old page at the sheet where it is drawn first (null
/// when it is on none); a destination array keeps its spot on the page.
fn repoint(doc: &mut Document, pages: &[ObjectId], placed: &HashMap<ObjectId, Placed>) {
    let old: std::collections::HashSet<ObjectId> = pages.iter().copied().collect();
    let ids: Vec<ObjectId> = doc.objects.keys().copied().filter(|id| !old.contains(id)).collect();
    for id in ids {
        if let Some(mut object) = doc.objects.remove(&id) {
            rewrite(&mut object, &old, placed, 0);
            doc.objects.insert(id, object);
        }
    }
    let mut trailer = std::mem::take(&mut doc.trailer);
    for (_, value) in trailer.iter_mut() {
        rewrite(value, &old, placed, 0);
    }
    doc.trailer = trailer;
}

fn rewrite(
    object: &mut Object,
    old: &std::collections::HashSet<ObjectId>,
    placed: &HashMap<ObjectId, Placed>,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    match object {
        Object::Reference(id) if old.contains(id) => {
            *object = placed.get(id).map_or(Object::Null, |p| Object::Reference(p.sheet));
        }
        Object::Array(items) => {
            if let [Object::Reference(id), Object::Name(_), ..] = items.as_slice()
                && old.contains(id)
            {
                *object = placed.get(id).map_or(Object::Null, |p| destination(items, p));
                return;
            }
            for item in items {
                rewrite(item, old, placed, depth + 1);
            }
        }
        Object::Dictionary(dict) => {
            for (_, value) in dict.iter_mut() {
                rewrite(value, old, placed, depth + 1);
            }
        }
        Object::Stream(stream) => {
            for (_, value) in stream.dict.iter_mut() {
                rewrite(value, old, placed, depth + 1);
            }
        }
        _ => {}
    }
}

/// A destination on an old page as one on its sheet: `[sheet /XYZ x y null]`, at the
/// spot it named when it named one, else at the page's top left.
fn destination(items: &[Object], placed: &Placed) -> Object {
    let number = |o: Option<&Object>| match o {
        Some(Object::Integer(i)) => Some(*i as f64),
        Some(Object::Real(r)) => Some(*r as f64),
        _ => None,
    };
    let spot = match items.get(1) {
        Some(Object::Name(kind)) if kind == b"XYZ" => match (number(items.get(2)), number(items.get(3))) {
            (Some(left), Some(top)) => Some(apply(&placed.m, left, top)),
            _ => None,
        },
        _ => None,
    };
    let (x, y) = spot.unwrap_or(placed.top_left);
    Object::Array(vec![
        Object::Reference(placed.sheet),
        Object::Name(b"XYZ".to_vec()),
        Object::Real(x as f32),
        Object::Real(y as f32),
        Object::Null,
    ])
}

/// Whether link `id` points at a page no sheet shows.
fn link_target_gone(doc: &Document, id: ObjectId) -> bool {
    let Ok(link) = doc.get_dictionary(id) else { return true };
    if matches!(link.get(b"Dest"), Ok(Object::Null)) {
        return true;
    }
    match link.get(b"A").and_then(|a| doc.dereference(a)) {
        Ok((_, Object::Dictionary(action))) => {
            action.get(b"S").and_then(Object::as_name).ok() == Some(&b"GoTo"[..])
                && matches!(action.get(b"D"), Ok(Object::Null))
        }
        _ => false,
    }
}

/// A frame around `r`, in a thin gray line (for borders and cut marks).
pub fn frame(r: Rect) -> String {
    format!("0.5 w 0.5 G {} {} {} {} re S\n", num(r.x0), num(r.y0), num(r.width()), num(r.height()))
}

/// Text in Helvetica at `size`, its baseline starting at (x, y).
pub fn label(text: &str, x: f64, y: f64, size: f64) -> String {
    let bytes = stamp::win_ansi(text, "").unwrap_or_else(|_| text.bytes().filter(u8::is_ascii).collect());
    format!("BT 0.4 g /Helv {} Tf {} {} Td {} Tj ET\n", num(size), num(x), num(y), stamp::literal(&bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::graft::placement;

    #[test]
    fn upright_undoes_what_a_reader_turns() {
        // graft::placement takes a layer as seen onto the page's own space; upright must
        // take it back, for every turn and a crop box away from the origin.
        let crop = Rect { x0: 10.0, y0: 20.0, x1: 210.0, y1: 120.0 };
        for rotate in [0i64, 90, 180, 270, -90, 450] {
            let quarter = rotate.rem_euclid(180) == 90;
            let seen = if quarter { (100.0, 200.0) } else { (200.0, 100.0) };
            let layer = Rect { x0: 0.0, y0: 0.0, x1: seen.0, y1: seen.1 };
            let round = concat(&placement(layer, crop, rotate), &upright(crop, rotate));
            for (u, v) in [(0.0, 0.0), (seen.0, 0.0), (3.0, seen.1)] {
                let (x, y) = apply(&round, u, v);
                assert!((x - u).abs() < 1e-9 && (y - v).abs() < 1e-9, "rotate {rotate}: ({u}, {v}) -> ({x}, {y})");
            }
        }
    }

    #[test]
    fn fit_centres_the_page_in_its_cell() {
        let m = fit((100.0, 200.0), Rect { x0: 0.0, y0: 0.0, x1: 400.0, y1: 200.0 });
        assert_eq!(m, [1.0, 0.0, 0.0, 1.0, 150.0, 0.0]);
        let r = map_rect(&[0.0, -1.0, 1.0, 0.0, 0.0, 50.0], Rect { x0: 0.0, y0: 0.0, x1: 10.0, y1: 20.0 });
        assert_eq!(r, Rect { x0: 0.0, y0: 40.0, x1: 20.0, y1: 50.0 });
        assert_eq!(r.intersect(Rect { x0: 30.0, y0: 0.0, x1: 40.0, y1: 100.0 }), None);
    }
}
