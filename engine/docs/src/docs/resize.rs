//! `POST /v1/pdf/resize`: scale pages to a paper size (fit, fill or stretch).

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pages::PageSelection;
use crate::pdf::content_refs;
use crate::pdf::paper::PageSize;
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::pdf::{self, Rect};
use crate::price::Price;

/// Fields of `/v1/pdf/resize` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResizeOptions {
    /// Target size as the reader sees the page: a paper name (`A4`, `Letter`…) or `{"width_pt": …, "height_pt": …}`.
    pub size: PageSize,
    /// `fit` scales uniformly to fit inside, centred, with blank margins; `fill` scales uniformly to cover, cropping the overflow; `stretch` scales each axis to match exactly.
    #[serde(default)]
    pub mode: ResizeMode,
    /// `auto` turns the target to each page's orientation (a landscape page gets A4 landscape); `portrait` or `landscape` force one; `as_given` uses width and height exactly as given.
    #[serde(default)]
    pub orientation: Orientation,
    /// Pages to resize (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
}

/// How a page's content is scaled to the target.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResizeMode {
    /// Uniform scale so the whole page fits, centred; blank margins where the shapes differ.
    #[default]
    Fit,
    /// Uniform scale so the target is covered, centred; what overflows is cut off.
    Fill,
    /// Each axis scaled on its own to match the target exactly.
    Stretch,
}

/// Which way the target size is turned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Orientation {
    /// Follow each page: landscape pages get the landscape target; square pages take it as given.
    #[default]
    Auto,
    /// The target's shorter side is the width.
    Portrait,
    /// The target's longer side is the width.
    Landscape,
    /// Width and height exactly as given.
    AsGiven,
}

/// One page's resize, worked out from the unchanged input.
pub struct PagePlan {
    id: ObjectId,
    /// The page's old visible box (CropBox clipped to MediaBox), unrotated.
    visible: Rect,
    /// The new MediaBox, unrotated.
    media: Rect,
    /// Takes the old visible box onto the new page.
    m: Affine,
}

/// The operation.
pub struct Resize;

/// The route.
pub type ResizeRoute = TransformRoute<Resize>;

impl Transform for Resize {
    type Options = ResizeOptions;
    type Plan = Vec<PagePlan>;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/resize",
        operation: "resize_pdf_pages",
        family: Family::Docs,
        summary: "Scale pages to a paper size",
        description: "Scales every page or a page selection to A4, Letter, Legal or a custom size in points: `fit` \
            keeps the proportions and centres the page with blank margins, `fill` keeps the proportions and cuts off \
            the overflow, `stretch` matches the size exactly. By default a landscape page gets the landscape target. \
            The content is scaled, not re-rendered, so text stays selectable; links and form fields move with it. \
            output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "resized";

    fn check(options: &ResizeOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        options.size.check("/size")?;
        PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?.resolve_set(pages, "/pages")?;
        Ok(pages)
    }

    fn plan(options: ResizeOptions, doc: &Document, _: &Limits) -> Result<Vec<PagePlan>, EngineError> {
        let selection = PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?;
        let target = (options.size.points(), options.mode, options.orientation);
        let mut plans = Vec::new();
        for (number, id) in pdf::selected_pages(doc, &selection, "/pages")? {
            plans.push(page_plan(doc, id, number, target)?);
        }
        Ok(plans)
    }

    fn apply(plans: Vec<PagePlan>, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        // One shared closing stream: it is the same `Q` for every page.
        let suffix = doc.add_object(Stream::new(Dictionary::new(), b"\nQ\n".to_vec()));
        let mut seen_annots = HashSet::new();
        for plan in plans {
            resize_page(&mut doc, plan, suffix, &mut seen_annots)?;
        }
        Ok(Pdf::Doc(doc))
    }
}

/// A scale-and-translate matrix `[a 0 0 d e f]`: all this route ever applies.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Affine {
    a: f64,
    d: f64,
    e: f64,
    f: f64,
}

impl Affine {
    fn point(&self, x: f64, y: f64) -> (f64, f64) {
        (self.a * x + self.e, self.d * y + self.f)
    }

    fn rect(&self, r: Rect) -> Rect {
        let (x0, y0) = self.point(r.x0, r.y0);
        let (x1, y1) = self.point(r.x1, r.y1);
        Rect { x0: x0.min(x1), y0: y0.min(y1), x1: x0.max(x1), y1: y0.max(y1) }
    }
}

/// The target size in the page's displayed orientation.
fn oriented(size: (f64, f64), orientation: Orientation, visible: (f64, f64)) -> (f64, f64) {
    let (w, h) = size;
    let (short, long) = (w.min(h), w.max(h));
    match orientation {
        Orientation::AsGiven => (w, h),
        Orientation::Portrait => (short, long),
        Orientation::Landscape => (long, short),
        Orientation::Auto if visible.0 > visible.1 => (long, short),
        Orientation::Auto if visible.0 < visible.1 => (short, long),
        Orientation::Auto => (w, h),
    }
}

/// The page's new MediaBox size (unrotated) and the matrix taking its old visible box onto it.
fn plan(
    visible: Rect,
    rotation: i64,
    size: (f64, f64),
    mode: ResizeMode,
    orientation: Orientation,
) -> (f64, f64, Affine) {
    let turned = rotation % 180 != 0;
    let shown = if turned { (visible.height(), visible.width()) } else { (visible.width(), visible.height()) };
    let (tw, th) = oriented(size, orientation, shown);
    // /Rotate turns the MediaBox for display, so a quarter-turned page needs the target
    // swapped to be seen at the requested size. Scaling commutes with the quarter turn,
    // so everything else is done in unrotated space.
    let (w, h) = if turned { (th, tw) } else { (tw, th) };
    let (sx, sy) = (w / visible.width(), h / visible.height());
    let (a, d) = match mode {
        ResizeMode::Stretch => (sx, sy),
        ResizeMode::Fit => (sx.min(sy), sx.min(sy)),
        ResizeMode::Fill => (sx.max(sy), sx.max(sy)),
    };
    let e = (w - a * visible.width()) / 2.0 - a * visible.x0;
    let f = (h - d * visible.height()) / 2.0 - d * visible.y0;
    (w, h, Affine { a, d, e, f })
}

/// The least and the most a page is scaled by: beyond them the old page box is not a
/// real page size (a hostile or broken MediaBox) and the matrix would be meaningless.
const SCALE_RANGE: std::ops::RangeInclusive<f64> = 1e-6..=1e6;

/// Works out one page's resize; refuses pages that cannot be read or scaled.
fn page_plan(
    doc: &Document,
    id: ObjectId,
    number: u32,
    (size, mode, orientation): ((f64, f64), ResizeMode, Orientation),
) -> Result<PagePlan, EngineError> {
    if doc.get_dictionary(id).is_err() {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "/file",
            format!("/file: page {number} cannot be read; the PDF's structure is damaged"),
        ));
    }
    let visible = pdf::crop_box(doc, id);
    let (w, h, m) = plan(visible, pdf::rotation(doc, id), size, mode, orientation);
    if !SCALE_RANGE.contains(&m.a) || !SCALE_RANGE.contains(&m.d) || !m.e.is_finite() || !m.f.is_finite() {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "/file",
            format!(
                "/file: page {number} has a visible area of {} x {} pt, which cannot be scaled to a page",
                num(visible.width()),
                num(visible.height())
            ),
        ));
    }
    Ok(PagePlan { id, visible, media: Rect { x0: 0.0, y0: 0.0, x1: w, y1: h }, m })
}

fn resize_page(
    doc: &mut Document,
    plan: PagePlan,
    suffix: ObjectId,
    seen_annots: &mut HashSet<ObjectId>,
) -> Result<(), EngineError> {
    let PagePlan { id, visible, media, m } = plan;
    let (w, h) = (media.x1, media.y1);

    // Content outside the old visible box was hidden; fit leaves room around the
    // scaled page where it would show, so it is clipped away there.
    let mapped = m.rect(visible);
    let tol = 1e-3;
    let needs_clip = mapped.x0 > tol || mapped.y0 > tol || mapped.x1 < w - tol || mapped.y1 < h - tol;
    let mut prefix = format!("q\n{} 0 0 {} {} {} cm\n", num(m.a), num(m.d), num(m.e), num(m.f));
    if needs_clip {
        let v = visible;
        prefix.push_str(&format!("{} {} {} {} re W n\n", num(v.x0), num(v.y0), num(v.width()), num(v.height())));
    }

    let page = doc.get_dictionary(id).map_err(|e| pdf::edit_error("resizing", e))?;
    let old_contents = content_refs(doc, page);
    let mut boxes = Vec::new();
    for key in [&b"BleedBox"[..], b"TrimBox", b"ArtBox"] {
        if let Ok(object) = page.get(key) {
            let moved = pdf::rect(doc, object).map(|r| m.rect(r)).and_then(|r| r.intersect(media));
            boxes.push((key, moved));
        }
    }
    let annot_updates = annotation_updates(doc, id, &m, seen_annots);

    let prefix_id = doc.add_object(Stream::new(Dictionary::new(), prefix.into_bytes()));
    let mut contents = Vec::with_capacity(old_contents.len() + 2);
    contents.push(Object::Reference(prefix_id));
    contents.extend(old_contents);
    contents.push(Object::Reference(suffix));

    let page = doc.get_dictionary_mut(id).map_err(|e| pdf::edit_error("resizing", e))?;
    page.set("MediaBox", media.to_object());
    page.remove(b"CropBox");
    page.set("Contents", contents);
    for (key, moved) in boxes {
        match moved {
            Some(r) => page.set(key, r.to_object()),
            None => {
                page.remove(key);
            }
        }
    }
    // A CropBox inherited from the page tree would still apply to the new MediaBox.
    if pdf::inherited(doc, id, b"CropBox").is_some()
        && let Ok(page) = doc.get_dictionary_mut(id)
    {
        page.set("CropBox", media.to_object());
    }
    apply_annotation_updates(doc, annot_updates);
    Ok(())
}

/// Where an annotation dictionary lives: its own object, or inline in a `/Annots` array.
enum AnnotSlot {
    Object(ObjectId),
    /// Index in the `/Annots` array of the page object itself or of an array object.
    Inline(ObjectId, usize),
}

/// New values of an annotation's coordinate entries.
type AnnotUpdate = (AnnotSlot, Vec<(&'static [u8], Object)>);

/// Annotation keys holding flat lists of x y pairs in page space.
const POINT_LISTS: [&[u8]; 4] = [b"QuadPoints", b"Vertices", b"L", b"CL"];

/// The new coordinate entries of every annotation of the page, read before any change.
fn annotation_updates(doc: &Document, page_id: ObjectId, m: &Affine, seen: &mut HashSet<ObjectId>) -> Vec<AnnotUpdate> {
    let Ok(page) = doc.get_dictionary(page_id) else { return Vec::new() };
    let (holder, entries) = match page.get(b"Annots") {
        Ok(Object::Reference(id)) => {
            // An /Annots array shared by several pages is moved once.
            if !seen.insert(*id) {
                return Vec::new();
            }
            match doc.get_object(*id) {
                Ok(Object::Array(items)) => (*id, items),
                _ => return Vec::new(),
            }
        }
        Ok(Object::Array(items)) => (page_id, items),
        _ => return Vec::new(),
    };
    let mut updates = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let (slot, annot) = match entry {
            Object::Reference(id) => {
                if !seen.insert(*id) {
                    continue;
                }
                match doc.get_dictionary(*id) {
                    Ok(d) => (AnnotSlot::Object(*id), d),
                    Err(_) => continue,
                }
            }
            Object::Dictionary(d) => (AnnotSlot::Inline(holder, index), d),
            _ => continue,
        };
        let mut changes: Vec<(&'static [u8], Object)> = Vec::new();
        if let Some(r) = annot.get(b"Rect").ok().and_then(|o| pdf::rect(doc, o)) {
            changes.push((b"Rect", m.rect(r).to_object()));
        }
        for key in POINT_LISTS {
            if let Some(list) = annot.get(key).ok().and_then(|o| moved_points(doc, o, m)) {
                changes.push((key, list));
            }
        }
        if let Some(strokes) =
            annot.get(b"InkList").ok().and_then(|o| doc.dereference(o).ok()).and_then(|(_, o)| o.as_array().ok())
        {
            let moved: Option<Vec<Object>> = strokes.iter().map(|s| moved_points(doc, s, m)).collect();
            if let Some(moved) = moved {
                changes.push((b"InkList", Object::Array(moved)));
            }
        }
        if !changes.is_empty() {
            updates.push((slot, changes));
        }
    }
    updates
}

/// A flat x y list moved by `m`, or None when it is not a list of finite number pairs.
fn moved_points(doc: &Document, object: &Object, m: &Affine) -> Option<Object> {
    let items = doc.dereference(object).ok()?.1.as_array().ok()?;
    if items.len() % 2 != 0 {
        return None;
    }
    let numbers: Option<Vec<f64>> = items.iter().map(|o| pdf::number(doc, o).filter(|n| n.is_finite())).collect();
    let numbers = numbers?;
    let mut out = Vec::with_capacity(numbers.len());
    for pair in numbers.chunks_exact(2) {
        let (x, y) = m.point(pair[0], pair[1]);
        out.push(real(x));
        out.push(real(y));
    }
    Some(Object::Array(out))
}

fn apply_annotation_updates(doc: &mut Document, updates: Vec<AnnotUpdate>) {
    for (slot, changes) in updates {
        let target = match slot {
            AnnotSlot::Object(id) => doc.get_dictionary_mut(id).ok(),
            AnnotSlot::Inline(holder, index) => {
                let array = match doc.get_object_mut(holder) {
                    Ok(Object::Array(items)) => Some(items),
                    Ok(Object::Dictionary(page)) => page.get_mut(b"Annots").ok().and_then(|o| o.as_array_mut().ok()),
                    _ => None,
                };
                array.and_then(|a| a.get_mut(index)).and_then(|o| o.as_dict_mut().ok())
            }
        };
        if let Some(annot) = target {
            for (key, value) in changes {
                annot.set(key, value);
            }
        }
    }
}

fn real(value: f64) -> Object {
    if value.fract() == 0.0 && value.abs() < 1e9 { Object::Integer(value as i64) } else { Object::Real(value as f32) }
}

/// A number for a content stream: plain decimal notation (PDF has no exponents),
/// trailing zeros dropped.
fn num(value: f64) -> String {
    let text = format!("{value:.6}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    if text == "-0" { "0".into() } else { text.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::content::Content;
    use lopdf::dictionary;
    use serde_json::{Value, json};

    const A4: (f64, f64) = (595.276, 841.89);

    /// A PDF of pages with the given extra entries (MediaBox defaults to Letter); every
    /// page has its own content stream unless `Contents` is among the entries.
    fn build(pages: Vec<Vec<(&str, Object)>>) -> Vec<u8> {
        build_with(pages, |_, _| {})
    }

    fn build_with(pages: Vec<Vec<(&str, Object)>>, tweak: impl FnOnce(&mut Document, ObjectId)) -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let mut kids = Vec::new();
        for extra in pages {
            let content = doc.add_object(Stream::new(Dictionary::new(), b"0 0 m 100 100 l S".to_vec()));
            let mut page = Dictionary::new();
            page.set("Type", "Page");
            page.set("Parent", pages_id);
            page.set("MediaBox", rect([0.0, 0.0, 612.0, 792.0]));
            page.set("Contents", content);
            for (k, v) in extra {
                page.set(k, v);
            }
            kids.push(Object::Reference(doc.add_object(page)));
        }
        let count = kids.len() as i64;
        let node = dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count };
        doc.objects.insert(pages_id, Object::Dictionary(node));
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        tweak(&mut doc, pages_id);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    fn rect(v: [f64; 4]) -> Object {
        Rect { x0: v[0], y0: v[1], x1: v[2], y1: v[3] }.to_object()
    }

    async fn resize(pdf: &[u8], body: Value) -> Result<(String, Document), EngineError> {
        crate::pdf::testing::single_pdf::<ResizeRoute>(pdf, "deck.pdf", body).await
    }

    fn page_dict(doc: &Document, number: u32) -> &Dictionary {
        doc.get_dictionary(doc.get_pages()[&number]).unwrap()
    }

    fn page_box(doc: &Document, number: u32, key: &[u8]) -> Option<Rect> {
        page_dict(doc, number).get(key).ok().and_then(|o| pdf::rect(doc, o))
    }

    fn close(actual: &[f64], expected: &[f64]) {
        assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
        for (a, e) in actual.iter().zip(expected) {
            assert!((a - e).abs() < 0.01, "got {actual:?}, expected {expected:?}");
        }
    }

    fn close_rect(actual: Option<Rect>, expected: [f64; 4]) {
        let r = actual.expect("box missing");
        close(&[r.x0, r.y0, r.x1, r.y1], &expected);
    }

    fn contents(doc: &Document, number: u32) -> Vec<ObjectId> {
        let array = page_dict(doc, number).get(b"Contents").unwrap().as_array().unwrap();
        array.iter().map(|o| o.as_reference().unwrap()).collect()
    }

    /// The operations of the page's first (prefix) content stream.
    fn prefix_ops(doc: &Document, number: u32) -> Vec<(String, Vec<f64>)> {
        let id = contents(doc, number)[0];
        let stream = doc.get_object(id).unwrap().as_stream().unwrap();
        let content = Content::decode(&stream.content).unwrap();
        content
            .operations
            .iter()
            .map(|op| (op.operator.clone(), op.operands.iter().map(|o| pdf::number(doc, o).unwrap()).collect()))
            .collect()
    }

    fn matrix(doc: &Document, number: u32) -> Vec<f64> {
        let ops = prefix_ops(doc, number);
        assert_eq!(ops[0].0, "q");
        assert_eq!(ops[1].0, "cm");
        ops[1].1.clone()
    }

    fn clip(doc: &Document, number: u32) -> Option<Vec<f64>> {
        prefix_ops(doc, number).into_iter().find(|(op, _)| op == "re").map(|(_, v)| v)
    }

    #[tokio::test]
    async fn fit_letterboxes_and_centres() {
        let pdf = build(vec![vec![]]);
        let (name, doc) = resize(&pdf, json!({ "size": "A4" })).await.unwrap();
        assert_eq!(name, "deck-resized.pdf");
        close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, A4.0, A4.1]);
        let s = A4.0 / 612.0;
        let f = (A4.1 - s * 792.0) / 2.0;
        close(&matrix(&doc, 1), &[s, 0.0, 0.0, s, 0.0, f]);
        close(&clip(&doc, 1).expect("fit with margins clips"), &[0.0, 0.0, 612.0, 792.0]);
        // The suffix closes the state the prefix saved.
        let last = *contents(&doc, 1).last().unwrap();
        let suffix = doc.get_object(last).unwrap().as_stream().unwrap();
        assert_eq!(String::from_utf8_lossy(&suffix.content).trim(), "Q");
    }

    #[tokio::test]
    async fn fill_covers_and_crops_the_overflow() {
        let pdf = build(vec![vec![]]);
        let (_, doc) = resize(&pdf, json!({ "size": "A4", "mode": "fill" })).await.unwrap();
        let s = A4.1 / 792.0;
        let e = (A4.0 - s * 612.0) / 2.0;
        assert!(e < 0.0);
        close(&matrix(&doc, 1), &[s, 0.0, 0.0, s, e, 0.0]);
        assert!(clip(&doc, 1).is_none(), "the MediaBox already cuts the overflow");
    }

    #[tokio::test]
    async fn stretch_scales_each_axis() {
        let pdf = build(vec![vec![("MediaBox", rect([0.0, 0.0, 100.0, 200.0]))]]);
        let (_, doc) =
            resize(&pdf, json!({ "size": { "width_pt": 300, "height_pt": 400 }, "mode": "stretch" })).await.unwrap();
        close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, 300.0, 400.0]);
        close(&matrix(&doc, 1), &[3.0, 0.0, 0.0, 2.0, 0.0, 0.0]);
        assert!(clip(&doc, 1).is_none());
    }

    #[tokio::test]
    async fn starts_from_the_visible_box_not_the_media_box() {
        let pdf = build(vec![vec![("CropBox", rect([100.0, 200.0, 400.0, 600.0]))]]);
        let (_, doc) = resize(&pdf, json!({ "size": { "width_pt": 600, "height_pt": 800 } })).await.unwrap();
        // 300 x 400 visible, scaled 2x onto 600 x 800 from its lower-left corner.
        close(&matrix(&doc, 1), &[2.0, 0.0, 0.0, 2.0, -200.0, -400.0]);
        assert!(page_box(&doc, 1, b"CropBox").is_none());
        close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, 600.0, 800.0]);
    }

    #[tokio::test]
    async fn auto_orientation_follows_the_visible_page() {
        let pdf = build(vec![
            vec![("MediaBox", rect([0.0, 0.0, 842.0, 595.0]))],
            vec![("Rotate", Object::Integer(90))],
            vec![("Rotate", Object::Integer(270)), ("MediaBox", rect([0.0, 0.0, 842.0, 595.0]))],
            vec![("MediaBox", rect([0.0, 0.0, 500.0, 500.0]))],
        ]);
        let (_, doc) = resize(&pdf, json!({ "size": "A4" })).await.unwrap();
        // Landscape page: A4 landscape.
        close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, A4.1, A4.0]);
        // Letter turned 90 is seen landscape: A4 landscape seen, so portrait unrotated.
        close_rect(page_box(&doc, 2, b"MediaBox"), [0.0, 0.0, A4.0, A4.1]);
        let s = (A4.0 / 612.0).min(A4.1 / 792.0);
        close(&matrix(&doc, 2)[..4], &[s, 0.0, 0.0, s]);
        // Landscape MediaBox turned 270 is seen portrait: A4 portrait seen.
        close_rect(page_box(&doc, 3, b"MediaBox"), [0.0, 0.0, A4.1, A4.0]);
        // Square: as given.
        close_rect(page_box(&doc, 4, b"MediaBox"), [0.0, 0.0, A4.0, A4.1]);
        for n in 1..=4 {
            assert_eq!(pdf::rotation(&doc, doc.get_pages()[&n]), [0, 90, 270, 0][n as usize - 1]);
        }
    }

    #[tokio::test]
    async fn explicit_orientations() {
        let pdf = build(vec![vec![("Rotate", Object::Integer(90))]]);
        let size = json!({ "width_pt": 800, "height_pt": 500 });
        let cases = [
            ("as_given", [500.0, 800.0]),
            ("portrait", [800.0, 500.0]),
            ("landscape", [500.0, 800.0]),
            ("auto", [500.0, 800.0]),
        ];
        for (orientation, unrotated) in cases {
            let body = json!({ "size": size, "orientation": orientation, "mode": "stretch" });
            let (_, doc) = resize(&pdf, body).await.unwrap();
            close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, unrotated[0], unrotated[1]]);
        }
        let upright = build(vec![vec![]]);
        let body = json!({ "size": size, "orientation": "as_given" });
        let (_, doc) = resize(&upright, body).await.unwrap();
        close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, 800.0, 500.0]);
    }

    #[tokio::test]
    async fn moves_annotations_with_the_content() {
        let pdf = build_with(vec![vec![("MediaBox", rect([0.0, 0.0, 100.0, 200.0]))]], |doc, pages_id| {
            let link = doc.add_object(dictionary! {
                "Type" => "Annot", "Subtype" => "Link",
                "Rect" => rect([10.0, 20.0, 30.0, 40.0]),
                "QuadPoints" => vec![10.into(), 40.into(), 30.into(), 40.into(), 10.into(), 20.into(), 30.into(), 20.into()],
            });
            let inline =
                dictionary! { "Type" => "Annot", "Subtype" => "Square", "Rect" => rect([0.0, 0.0, 50.0, 50.0]) };
            let ink = dictionary! {
                "Type" => "Annot", "Subtype" => "Ink", "Rect" => rect([0.0, 0.0, 10.0, 10.0]),
                "InkList" => vec![Object::Array(vec![1.into(), 2.into(), 3.into(), 4.into()])],
            };
            let page_id = doc.get_dictionary(pages_id).unwrap().get(b"Kids").unwrap().as_array().unwrap()[0]
                .as_reference()
                .unwrap();
            let page = doc.get_dictionary_mut(page_id).unwrap();
            page.set("Annots", vec![Object::Reference(link), Object::Dictionary(inline), Object::Dictionary(ink)]);
        });
        let body = json!({ "size": { "width_pt": 300, "height_pt": 400 }, "mode": "stretch" });
        let (_, doc) = resize(&pdf, body).await.unwrap();
        let annots = doc.get_page_annotations(doc.get_pages()[&1]).unwrap();
        let read = |d: &Dictionary, key: &[u8]| -> Vec<f64> {
            d.get(key).unwrap().as_array().unwrap().iter().map(|o| pdf::number(&doc, o).unwrap()).collect()
        };
        close(&read(annots[0], b"Rect"), &[30.0, 40.0, 90.0, 80.0]);
        close(&read(annots[0], b"QuadPoints"), &[30.0, 80.0, 90.0, 80.0, 30.0, 40.0, 90.0, 40.0]);
        close(&read(annots[1], b"Rect"), &[0.0, 0.0, 150.0, 100.0]);
        let strokes = annots[2].get(b"InkList").unwrap().as_array().unwrap();
        let stroke: Vec<f64> = strokes[0].as_array().unwrap().iter().map(|o| pdf::number(&doc, o).unwrap()).collect();
        close(&stroke, &[3.0, 4.0, 9.0, 8.0]);
    }

    #[tokio::test]
    async fn shared_content_is_wrapped_per_page_and_left_untouched() {
        let pdf = build_with(vec![vec![], vec![]], |doc, pages_id| {
            let shared = doc.add_object(Stream::new(Dictionary::new(), b"1 0 0 RG 0 0 m 612 792 l S".to_vec()));
            let kids = doc.get_dictionary(pages_id).unwrap().get(b"Kids").unwrap().as_array().unwrap().clone();
            let array = doc.add_object(vec![Object::Reference(shared)]);
            for (i, kid) in kids.iter().enumerate() {
                let page = doc.get_dictionary_mut(kid.as_reference().unwrap()).unwrap();
                // One page points at the stream, the other at an array object holding it.
                let contents = if i == 0 { Object::Reference(shared) } else { Object::Reference(array) };
                page.set("Contents", contents);
            }
        });
        let (_, doc) = resize(&pdf, json!({ "size": "Letter", "mode": "stretch" })).await.unwrap();
        let (one, two) = (contents(&doc, 1), contents(&doc, 2));
        assert_eq!(one.len(), 3);
        assert_eq!(two.len(), 3);
        assert_eq!(one[1], two[1], "the shared stream stays shared");
        assert_ne!(one[0], two[0], "each page has its own prefix");
        let shared = doc.get_object(one[1]).unwrap().as_stream().unwrap();
        assert_eq!(shared.decompressed_content().unwrap_or(shared.content.clone()), b"1 0 0 RG 0 0 m 612 792 l S");
        close(&matrix(&doc, 1), &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    }

    #[tokio::test]
    async fn page_boxes_end_up_inside_the_new_media_box() {
        let pdf = build_with(
            vec![vec![
                ("MediaBox", rect([0.0, 0.0, 100.0, 200.0])),
                ("TrimBox", rect([10.0, 10.0, 90.0, 190.0])),
                ("BleedBox", rect([-10.0, -10.0, 110.0, 210.0])),
                ("ArtBox", rect([200.0, 200.0, 300.0, 300.0])),
            ]],
            |doc, pages_id| {
                // A CropBox inherited from the page tree must not cut the new page.
                doc.get_dictionary_mut(pages_id).unwrap().set("CropBox", rect([0.0, 0.0, 50.0, 50.0]));
            },
        );
        let (_, doc) =
            resize(&pdf, json!({ "size": { "width_pt": 200, "height_pt": 400 }, "mode": "stretch" })).await.unwrap();
        // The inherited CropBox made the visible box 50 x 50: scaled 4 x 8.
        close(&matrix(&doc, 1), &[4.0, 0.0, 0.0, 8.0, 0.0, 0.0]);
        close_rect(page_box(&doc, 1, b"CropBox"), [0.0, 0.0, 200.0, 400.0]);
        close_rect(page_box(&doc, 1, b"TrimBox"), [40.0, 80.0, 200.0, 400.0]);
        close_rect(page_box(&doc, 1, b"BleedBox"), [0.0, 0.0, 200.0, 400.0]);
        assert!(page_box(&doc, 1, b"ArtBox").is_none(), "a box wholly outside is dropped");
    }

    #[tokio::test]
    async fn shared_and_broken_annotations_are_moved_once_or_left_alone() {
        let pdf = build_with(vec![vec![], vec![]], |doc, pages_id| {
            let link = doc.add_object(dictionary! { "Subtype" => "Link", "Rect" => rect([10.0, 10.0, 20.0, 20.0]) });
            let odd = dictionary! {
                "Subtype" => "Highlight", "Rect" => Object::string_literal("wide"),
                "QuadPoints" => vec![1.into(), 2.into(), 3.into()],
            };
            let shared = doc.add_object(vec![
                Object::Reference(link),
                Object::Dictionary(odd),
                Object::Reference((999, 0)),
                Object::Integer(7),
            ]);
            let kids = doc.get_dictionary(pages_id).unwrap().get(b"Kids").unwrap().as_array().unwrap().clone();
            for kid in kids {
                let page = doc.get_dictionary_mut(kid.as_reference().unwrap()).unwrap();
                page.set("Annots", Object::Reference(shared));
                // A dangling content reference and an inherited rotation.
                page.set("Contents", vec![Object::Reference((998, 0))]);
            }
            doc.get_dictionary_mut(pages_id).unwrap().set("Rotate", 90);
        });
        let (_, doc) =
            resize(&pdf, json!({ "size": { "width_pt": 1224, "height_pt": 1584 }, "mode": "stretch" })).await.unwrap();
        // Seen landscape (inherited /Rotate 90), so the 2x target is turned: still 2x each way.
        close(&matrix(&doc, 1), &[2.0, 0.0, 0.0, 2.0, 0.0, 0.0]);
        assert_eq!(contents(&doc, 1).len(), 2, "the dangling stream is dropped");
        let annots = doc.get_page_annotations(doc.get_pages()[&1]).unwrap();
        let rect: Vec<f64> =
            annots[0].get(b"Rect").unwrap().as_array().unwrap().iter().map(|o| pdf::number(&doc, o).unwrap()).collect();
        close(&rect, &[20.0, 20.0, 40.0, 40.0]);
        assert_eq!(annots[1].get(b"QuadPoints").unwrap().as_array().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn refuses_a_missing_page_object_before_running() {
        let pdf = build_with(vec![vec![]], |doc, pages_id| {
            let node = doc.get_dictionary_mut(pages_id).unwrap();
            node.set(
                "Kids",
                vec![node.get(b"Kids").unwrap().as_array().unwrap()[0].clone(), Object::Reference((997, 0))],
            );
            node.set("Count", 2);
        });
        let e = resize(&pdf, json!({ "size": "A4" })).await.expect_err("a page that is not there cannot be resized");
        assert_eq!(e.code, "damaged_pdf", "{}", e.message);
        assert_eq!(e.field.as_deref(), Some("/file"));
        assert!(e.message.contains("page 2"), "{}", e.message);
    }

    #[tokio::test]
    async fn resizes_only_the_selected_pages() {
        let pdf = build(vec![vec![], vec![], vec![]]);
        let (_, doc) = resize(&pdf, json!({ "size": "Legal", "pages": "2" })).await.unwrap();
        assert_eq!(doc.get_pages().len(), 3);
        close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, 612.0, 792.0]);
        close_rect(page_box(&doc, 2, b"MediaBox"), [0.0, 0.0, 612.0, 1008.0]);
        assert!(page_dict(&doc, 1).get(b"Contents").unwrap().as_reference().is_ok());
        close(&matrix(&doc, 2), &[1.0, 0.0, 0.0, 1.0, 0.0, 108.0]);
    }

    #[tokio::test]
    async fn accepts_size_names_in_any_case() {
        let pdf = build(vec![vec![]]);
        let (_, doc) = resize(&pdf, json!({ "size": "a4" })).await.unwrap();
        close_rect(page_box(&doc, 1, b"MediaBox"), [0.0, 0.0, A4.0, A4.1]);
    }

    #[tokio::test]
    async fn refuses_bad_input_naming_the_field() {
        let pdf = build(vec![vec![]]);
        let cases = [
            (json!({ "size": "B5" }), "/size", "invalid_input"),
            (json!({ "size": 5 }), "/size", "invalid_input"),
            (json!({ "size": { "width_pt": 0, "height_pt": 100 } }), "/size/width_pt", "invalid_input"),
            (json!({ "size": { "width_pt": 100, "height_pt": 14401 } }), "/size/height_pt", "invalid_input"),
            (json!({ "size": { "width_pt": 100 } }), "/size/height_pt", "invalid_input"),
            (json!({ "size": { "width_pt": 100, "height_pt": 100, "depth": 1 } }), "/size/depth", "unknown_field"),
            (json!({ "size": { "width_pt": "wide", "height_pt": 100 } }), "/size/width_pt", "invalid_input"),
            (json!({ "size": "A4", "mode": "zoom" }), "/mode", "invalid_input"),
            (json!({ "size": "A4", "orientation": "sideways" }), "/orientation", "invalid_input"),
            (json!({ "size": "A4", "pages": "4" }), "/pages", "page_out_of_range"),
            (json!({ "mode": "fit" }), "/size", "invalid_input"),
        ];
        for (body, field, code) in cases {
            let e = match resize(&pdf, body.clone()).await {
                Ok(_) => panic!("{body} was accepted"),
                Err(e) => e,
            };
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {}", e.message);
            assert_eq!(e.code, code, "{body}: {}", e.message);
            assert!(e.message.starts_with(field), "{body}: {}", e.message);
        }
        let e = resize(&pdf, json!({ "size": "B5" })).await.err().unwrap();
        assert!(
            e.message.contains("A4") && e.message.contains("Legal") && e.message.contains("width_pt"),
            "{}",
            e.message
        );
    }

    #[test]
    fn schema_lists_the_names_and_the_object_form() {
        let schema =
            schemars::SchemaGenerator::default().into_root_schema_for::<crate::pdf::transform::PdfJob<ResizeOptions>>();
        let text = serde_json::to_string(&schema).unwrap();
        assert!(text.contains(r#""enum":["A0","A1","A2","A3","A4","A5","Letter","Legal","Tabloid"]"#), "{text}");
        assert!(text.contains("width_pt") && text.contains(r#""maximum":14400"#), "{text}");
        assert!(text.contains(r#""additionalProperties":false"#), "{text}");
        for word in ["fit", "fill", "stretch", "as_given"] {
            assert!(text.contains(&format!("\"{word}\"")), "{word}: {text}");
        }
    }

    #[test]
    fn numbers_for_content_streams_are_plain() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(-0.0000001), "0");
        assert_eq!(num(0.972673), "0.972673");
        assert_eq!(num(-108.5), "-108.5");
        assert_eq!(num(1e-7 + 2.0), "2");
    }
}
