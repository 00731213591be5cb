//! `POST /v1/pdf/crop`: trim margins off pages, measured on the page as the reader sees it.

use lopdf::{Document, ObjectId};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pages::PageSelection;
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::pdf::{self, Rect};
use crate::price::Price;

/// Fields of `/v1/pdf/crop` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend(
    "if" = { "required": ["unit"], "properties": { "unit": { "const": "percent" } } },
    "then" = { "properties": { "margins": { "properties": {
        "top": { "maximum": 100 }, "right": { "maximum": 100 }, "bottom": { "maximum": 100 }, "left": { "maximum": 100 }
    } } } }
))]
pub struct CropOptions {
    /// How much to trim from each side of the page as displayed (after its rotation); at least one above 0.
    pub margins: Margins,
    /// Unit of the margins: `pt` (1/72 inch) or `percent` of the visible width (left, right) or height (top, bottom).
    #[serde(default)]
    pub unit: MarginUnit,
    /// Pages to crop (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
}

/// The four margins, as the reader sees the page; each 0 when omitted.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("anyOf" = [
    { "required": ["top"], "properties": { "top": { "exclusiveMinimum": 0 } } },
    { "required": ["right"], "properties": { "right": { "exclusiveMinimum": 0 } } },
    { "required": ["bottom"], "properties": { "bottom": { "exclusiveMinimum": 0 } } },
    { "required": ["left"], "properties": { "left": { "exclusiveMinimum": 0 } } }
]))]
pub struct Margins {
    /// Trimmed from the top edge.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub top: f64,
    /// Trimmed from the right edge.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub right: f64,
    /// Trimmed from the bottom edge.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub bottom: f64,
    /// Trimmed from the left edge.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub left: f64,
}

/// Unit of the margins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MarginUnit {
    /// PDF points (1/72 inch).
    #[default]
    Pt,
    /// Percent of the visible page's width (left, right) or height (top, bottom), 0 to 100.
    Percent,
}

/// The operation.
pub struct Crop;

/// The route.
pub type CropRoute = TransformRoute<Crop>;

impl Transform for Crop {
    type Options = CropOptions;
    type Plan = Vec<(ObjectId, Rect)>;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/crop",
        operation: "crop_pdf_pages",
        family: Family::Docs,
        summary: "Trim margins off pages",
        description: "Trims margins (in points or percent) off every page or a page selection by setting the page's \
            CropBox. Margins are measured on the page as displayed, so `top` is the top a reader sees even on a rotated \
            page. The content is kept, only hidden, so text stays selectable. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "cropped";

    fn check(options: &CropOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        check_margins(&options.margins, options.unit)?;
        PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?.resolve_set(pages, "/pages")?;
        Ok(pages)
    }

    fn plan(options: CropOptions, doc: &Document, _: &Limits) -> Result<Vec<(ObjectId, Rect)>, EngineError> {
        let selection = PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?;
        let mut boxes = Vec::new();
        for (number, id) in pdf::selected_pages(doc, &selection, "/pages")? {
            boxes.push((id, cropped_box(doc, id, number, &options.margins, options.unit)?));
        }
        Ok(boxes)
    }

    fn apply(boxes: Vec<(ObjectId, Rect)>, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        for (id, crop) in boxes {
            apply(&mut doc, id, crop)?;
        }
        Ok(Pdf::Doc(doc))
    }
}

/// The least width and height a cropped page keeps, in points.
const MIN_SIDE: f64 = 1.0;

fn check_margins(margins: &Margins, unit: MarginUnit) -> Result<(), EngineError> {
    for (name, value) in sides(margins) {
        let field = format!("/margins/{name}");
        if !value.is_finite() {
            return Err(EngineError::invalid(&field, format!("{field}: must be a finite number")));
        }
        if value < 0.0 {
            return Err(EngineError::invalid(&field, format!("{field}: must be 0 or more, not {value}")));
        }
        if unit == MarginUnit::Percent && value > 100.0 {
            return Err(EngineError::invalid(
                &field,
                format!("{field}: a percentage must be 100 or less, not {value}"),
            ));
        }
    }
    if sides(margins).iter().all(|(_, v)| *v == 0.0) {
        return Err(EngineError::invalid(
            "/margins",
            "/margins: give at least one of top, right, bottom, left above 0",
        ));
    }
    Ok(())
}

fn sides(m: &Margins) -> [(&'static str, f64); 4] {
    [("top", m.top), ("right", m.right), ("bottom", m.bottom), ("left", m.left)]
}

/// The page's new CropBox in its unrotated coordinates; errors name the margin at fault.
fn cropped_box(doc: &Document, id: ObjectId, number: u32, m: &Margins, unit: MarginUnit) -> Result<Rect, EngineError> {
    if doc.get_dictionary(id).is_err() {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "/file",
            format!("/file: page {number} cannot be read; the PDF's structure is damaged"),
        ));
    }
    let visible = pdf::crop_box(doc, id);
    let rotation = pdf::rotation(doc, id);
    let (width, height) =
        if rotation % 180 == 0 { (visible.width(), visible.height()) } else { (visible.height(), visible.width()) };
    let pt = |value: f64, along: f64| match unit {
        MarginUnit::Pt => value,
        MarginUnit::Percent => value / 100.0 * along,
    };
    let (top, right, bottom, left) = (pt(m.top, height), pt(m.right, width), pt(m.bottom, height), pt(m.left, width));
    check_span(number, "width", width, ("left", left), ("right", right))?;
    check_span(number, "height", height, ("top", top), ("bottom", bottom))?;
    // /Rotate turns the page clockwise for display, so each visible side is a different
    // side of the unrotated box: with 90, the unrotated left edge is shown at the top.
    let (dx0, dy0, dx1, dy1) = match rotation {
        90 => (top, left, bottom, right),
        180 => (right, top, left, bottom),
        270 => (bottom, right, top, left),
        _ => (left, bottom, right, top),
    };
    Ok(Rect { x0: visible.x0 + dx0, y0: visible.y0 + dy0, x1: visible.x1 - dx1, y1: visible.y1 - dy1 })
}

fn check_span(number: u32, what: &str, span: f64, a: (&str, f64), b: (&str, f64)) -> Result<(), EngineError> {
    let too_much = |field: String, taken: String| {
        EngineError::invalid_with(
            "margins_too_large",
            &field,
            format!(
                "{field}: on page {number} {taken} leave{} less than {MIN_SIDE} pt of the visible {what} of {} pt",
                if field == "/margins" { "" } else { "s" },
                short(span)
            ),
        )
    };
    for (name, value) in [a, b] {
        if span - value < MIN_SIDE {
            return Err(too_much(format!("/margins/{name}"), format!("the {name} margin ({} pt)", short(value))));
        }
    }
    if span - a.1 - b.1 < MIN_SIDE {
        let taken = format!("the {} and {} margins ({} pt + {} pt)", a.0, b.0, short(a.1), short(b.1));
        return Err(too_much("/margins".into(), taken));
    }
    Ok(())
}

/// A number for a message: at most two decimals, no trailing zeros.
fn short(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn apply(doc: &mut Document, id: ObjectId, crop: Rect) -> Result<(), EngineError> {
    // Without a usable MediaBox readers assume Letter, as the crop box was computed;
    // writing it down keeps every reader on the same page.
    let media_usable = pdf::inherited(doc, id, b"MediaBox")
        .and_then(|o| pdf::rect(doc, o))
        .is_some_and(|r| r.width() > 0.0 && r.height() > 0.0);
    let mut clipped = Vec::new();
    if let Ok(page) = doc.get_dictionary(id) {
        for key in [&b"TrimBox"[..], b"ArtBox", b"BleedBox"] {
            if let Some(inside) = page.get(key).ok().and_then(|o| pdf::rect(doc, o)).and_then(|r| clip_to(r, crop)) {
                clipped.push((key, inside));
            }
        }
    }
    let page = doc.get_dictionary_mut(id).map_err(|e| pdf::edit_error("cropping", e))?;
    if !media_usable {
        page.set("MediaBox", pdf::LETTER.to_object());
    }
    page.set("CropBox", crop.to_object());
    for (key, r) in clipped {
        page.set(key, r.to_object());
    }
    Ok(())
}

/// `r` cut down to `crop`, or None when it already lies inside. A box wholly outside
/// becomes the crop box itself: an empty box would be invalid.
fn clip_to(r: Rect, crop: Rect) -> Option<Rect> {
    if r.x0 >= crop.x0 && r.y0 >= crop.y0 && r.x1 <= crop.x1 && r.y1 <= crop.y1 {
        return None;
    }
    let cut = Rect { x0: r.x0.max(crop.x0), y0: r.y0.max(crop.y0), x1: r.x1.min(crop.x1), y1: r.y1.min(crop.y1) };
    Some(if cut.width() > 0.0 && cut.height() > 0.0 { cut } else { crop })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{Dictionary, Object, Stream};
    use serde_json::{Value, json};

    /// A PDF whose pages carry the given extra entries (MediaBox defaults to 600 x 800).
    fn build(pages: Vec<Dictionary>) -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let mut kids = Vec::new();
        for extra in pages {
            let content = doc.add_object(Stream::new(Dictionary::new(), b"0 0 m 100 100 l S".to_vec()));
            let mut page = Dictionary::new();
            page.set("Type", "Page");
            page.set("Parent", pages_id);
            page.set("MediaBox", vec![0.into(), 0.into(), 600.into(), 800.into()]);
            page.set("Contents", content);
            for (k, v) in extra.iter() {
                page.set(k.clone(), v.clone());
            }
            kids.push(Object::Reference(doc.add_object(page)));
        }
        let count = kids.len() as i64;
        let mut node = Dictionary::new();
        node.set("Type", "Pages");
        node.set("Kids", kids);
        node.set("Count", count);
        doc.objects.insert(pages_id, Object::Dictionary(node));
        let catalog = doc.add_object(lopdf::dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    fn page(entries: &[(&str, Object)]) -> Dictionary {
        let mut d = Dictionary::new();
        for (k, v) in entries {
            d.set(*k, v.clone());
        }
        d
    }

    fn arr(v: [f64; 4]) -> Object {
        Rect { x0: v[0], y0: v[1], x1: v[2], y1: v[3] }.to_object()
    }

    async fn crop(pdf: &[u8], body: Value) -> Result<(String, Document), EngineError> {
        crate::pdf::testing::single_pdf::<CropRoute>(pdf, "scan.pdf", body).await
    }

    fn boxed(doc: &Document, number: u32, key: &[u8]) -> Option<Rect> {
        let id = doc.get_pages()[&number];
        doc.get_dictionary(id).unwrap().get(key).ok().and_then(|o| pdf::rect(doc, o))
    }

    fn assert_rect(actual: Option<Rect>, expected: [f64; 4]) {
        let r = actual.expect("box missing");
        let got = [r.x0, r.y0, r.x1, r.y1];
        for (g, e) in got.iter().zip(expected) {
            assert!((g - e).abs() < 0.01, "got {got:?}, expected {expected:?}");
        }
    }

    #[tokio::test]
    async fn crops_each_side_as_displayed_for_every_rotation() {
        let pdf = build([0, 90, 180, 270, -90].iter().map(|&r| page(&[("Rotate", Object::Integer(r))])).collect());
        let margins = json!({ "margins": { "top": 10, "right": 20, "bottom": 30, "left": 40 } });
        let (name, doc) = crop(&pdf, margins).await.unwrap();
        assert_eq!(name, "scan-cropped.pdf");
        assert_eq!(doc.get_pages().len(), 5);
        // MediaBox [0 0 600 800]; the side shown at the top differs with /Rotate.
        assert_rect(boxed(&doc, 1, b"CropBox"), [40.0, 30.0, 580.0, 790.0]);
        assert_rect(boxed(&doc, 2, b"CropBox"), [10.0, 40.0, 570.0, 780.0]);
        assert_rect(boxed(&doc, 3, b"CropBox"), [20.0, 10.0, 560.0, 770.0]);
        assert_rect(boxed(&doc, 4, b"CropBox"), [30.0, 20.0, 590.0, 760.0]);
        assert_rect(boxed(&doc, 5, b"CropBox"), [30.0, 20.0, 590.0, 760.0]);
    }

    #[tokio::test]
    async fn percent_is_of_the_visible_width_and_height() {
        let pdf = build(vec![page(&[]), page(&[("Rotate", Object::Integer(90))])]);
        let body = json!({ "margins": { "top": 10, "left": 5 }, "unit": "percent" });
        let (_, doc) = crop(&pdf, body).await.unwrap();
        // Upright: 10% of 800 off the top, 5% of 600 off the left.
        assert_rect(boxed(&doc, 1, b"CropBox"), [30.0, 0.0, 600.0, 720.0]);
        // Turned 90: visible width is 800, height 600; top is the unrotated left edge.
        assert_rect(boxed(&doc, 2, b"CropBox"), [60.0, 40.0, 600.0, 800.0]);
    }

    #[tokio::test]
    async fn starts_from_the_existing_crop_box_clipped_to_the_media_box() {
        let pdf = build(vec![
            page(&[("CropBox", arr([50.0, 50.0, 550.0, 750.0]))]),
            page(&[("CropBox", arr([-100.0, -100.0, 500.0, 900.0]))]),
        ]);
        let (_, doc) = crop(&pdf, json!({ "margins": { "left": 10, "top": 10 } })).await.unwrap();
        assert_rect(boxed(&doc, 1, b"CropBox"), [60.0, 50.0, 550.0, 740.0]);
        assert_rect(boxed(&doc, 2, b"CropBox"), [10.0, 0.0, 500.0, 790.0]);
    }

    #[tokio::test]
    async fn clips_larger_trim_art_and_bleed_boxes() {
        let pdf = build(vec![page(&[
            ("TrimBox", arr([0.0, 0.0, 600.0, 800.0])),
            ("ArtBox", arr([200.0, 200.0, 300.0, 300.0])),
            ("BleedBox", arr([0.0, 0.0, 50.0, 50.0])),
        ])]);
        let (_, doc) =
            crop(&pdf, json!({ "margins": { "top": 100, "right": 100, "bottom": 100, "left": 100 } })).await.unwrap();
        assert_rect(boxed(&doc, 1, b"CropBox"), [100.0, 100.0, 500.0, 700.0]);
        assert_rect(boxed(&doc, 1, b"TrimBox"), [100.0, 100.0, 500.0, 700.0]);
        assert_rect(boxed(&doc, 1, b"ArtBox"), [200.0, 200.0, 300.0, 300.0]);
        // Wholly outside the new crop box: replaced by it rather than left empty.
        assert_rect(boxed(&doc, 1, b"BleedBox"), [100.0, 100.0, 500.0, 700.0]);
        assert_rect(boxed(&doc, 1, b"MediaBox"), [0.0, 0.0, 600.0, 800.0]);
    }

    #[tokio::test]
    async fn crops_only_the_selected_pages() {
        let pdf = build(vec![page(&[]), page(&[]), page(&[])]);
        let (_, doc) = crop(&pdf, json!({ "margins": { "bottom": 5 }, "pages": "2-last" })).await.unwrap();
        assert!(boxed(&doc, 1, b"CropBox").is_none());
        assert_rect(boxed(&doc, 2, b"CropBox"), [0.0, 5.0, 600.0, 800.0]);
        assert_rect(boxed(&doc, 3, b"CropBox"), [0.0, 5.0, 600.0, 800.0]);
    }

    #[tokio::test]
    async fn writes_down_the_assumed_media_box() {
        let pdf = build(vec![page(&[("MediaBox", Object::Null)])]);
        let (_, doc) = crop(&pdf, json!({ "margins": { "top": 2 } })).await.unwrap();
        assert_rect(boxed(&doc, 1, b"MediaBox"), [0.0, 0.0, 612.0, 792.0]);
        assert_rect(boxed(&doc, 1, b"CropBox"), [0.0, 0.0, 612.0, 790.0]);
    }

    async fn error(body: Value) -> EngineError {
        let pdf = build(vec![page(&[]), page(&[("Rotate", Object::Integer(90))])]);
        match crop(&pdf, body).await {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    }

    #[tokio::test]
    async fn refuses_bad_margins_naming_the_field() {
        let cases = [
            (json!({ "margins": { "left": -1 } }), "/margins/left"),
            (json!({ "margins": { "top": 101 }, "unit": "percent" }), "/margins/top"),
            (json!({ "margins": {} }), "/margins"),
            (json!({ "margins": { "top": 0, "left": 0 } }), "/margins"),
            (json!({ "margins": { "left": 300, "right": 300 } }), "/margins"),
            (json!({ "margins": { "right": 600 } }), "/margins/right"),
            (json!({ "margins": { "top": 50, "bottom": 50 }, "unit": "percent" }), "/margins"),
            (json!({ "margins": { "bottom": 100 }, "unit": "percent" }), "/margins/bottom"),
            (json!({ "margins": { "top": "1" } }), "/margins/top"),
            (json!({ "margins": { "middle": 1 } }), "/margins/middle"),
            (json!({ "margins": { "top": 1 }, "unit": "mm" }), "/unit"),
            (json!({ "margins": { "top": 1 }, "pages": "3" }), "/pages"),
            (json!({ "unit": "pt" }), "/margins"),
        ];
        for (body, field) in cases {
            let e = error(body.clone()).await;
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {}", e.message);
            assert!(e.message.starts_with(field), "{body}: {}", e.message);
        }
        let e = error(json!({ "margins": { "middle": 1 } })).await;
        assert_eq!(e.code, "unknown_field");
    }

    #[tokio::test]
    async fn refuses_margins_too_large_for_a_rotated_page() {
        // 700 pt fits the upright page's 800 pt height but not the turned page's 600 pt.
        let e = error(json!({ "margins": { "top": 700 } })).await;
        assert_eq!(e.field.as_deref(), Some("/margins/top"));
        assert!(e.message.contains("page 2"), "{}", e.message);
    }

    #[tokio::test]
    async fn refuses_a_missing_page_object_before_running() {
        let mut doc = Document::load_mem(&build(vec![page(&[])])).unwrap();
        let pages_id = doc.catalog().unwrap().get(b"Pages").unwrap().as_reference().unwrap();
        let node = doc.get_dictionary_mut(pages_id).unwrap();
        let first = node.get(b"Kids").unwrap().as_array().unwrap()[0].clone();
        node.set("Kids", vec![first, Object::Reference((997, 0))]);
        node.set("Count", 2);
        let mut pdf = Vec::new();
        doc.save_to(&mut pdf).unwrap();
        let e = crop(&pdf, json!({ "margins": { "top": 1 } })).await.expect_err("a missing page cannot be cropped");
        assert_eq!(e.code, "damaged_pdf", "{}", e.message);
        assert_eq!(e.field.as_deref(), Some("/file"));
        assert!(e.message.contains("page 2"), "{}", e.message);
    }

    #[test]
    fn refuses_non_finite_margins() {
        for value in [f64::NAN, f64::INFINITY] {
            let margins = Margins { left: value, ..Margins::default() };
            let e = check_margins(&margins, MarginUnit::Pt).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("/margins/left"));
        }
    }
}
