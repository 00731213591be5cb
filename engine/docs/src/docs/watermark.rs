//! `POST /v1/pdf/watermark`: stamp a line of text on pages.

use lopdf::ObjectId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pages::PageSelection;
use crate::pdf;
use crate::pdf::stamp::{self, HAlign, Stamper, Style, VAlign};
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::price::Price;
use lopdf::Document;

/// Fields of `/v1/pdf/watermark` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatermarkOptions {
    /// The text to stamp: 1 to 500 characters on one line, Windows-1252 (Western European) characters only.
    #[schemars(regex(pattern = stamp::text_pattern()), length(min = 1, max = MAX_TEXT_CHARS))]
    pub text: String,
    /// Font size in points (Helvetica), 4 to 400.
    #[serde(default = "default_font_size")]
    #[schemars(range(min = 4, max = 400))]
    pub font_size: f64,
    /// Text colour as `#rrggbb`.
    #[serde(default = "default_color")]
    #[schemars(regex(pattern = r"^#[0-9A-Fa-f]{6}$"))]
    pub color: String,
    /// Opacity from 0 (invisible) to 1 (opaque).
    #[serde(default = "default_opacity")]
    #[schemars(range(min = 0, max = 1))]
    pub opacity: f64,
    /// Counter-clockwise turn of the text around its centre in degrees, -360 to 360, as the reader sees the page (45 runs from lower left to upper right).
    #[serde(default = "default_angle")]
    #[schemars(range(min = -360, max = 360))]
    pub angle: f64,
    /// Where the text goes on the page as the reader sees it; edge positions keep the (turned) text 36 pt from the edges.
    #[serde(default)]
    pub position: WatermarkPosition,
    /// Pages to stamp (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
}

fn default_font_size() -> f64 {
    48.0
}

fn default_color() -> String {
    "#808080".into()
}

fn default_opacity() -> f64 {
    0.3
}

fn default_angle() -> f64 {
    45.0
}

/// Where the watermark goes on the visible page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WatermarkPosition {
    /// The middle of the page.
    #[default]
    Center,
    /// Centred along the top edge.
    Top,
    /// Centred along the bottom edge.
    Bottom,
    /// The upper left corner.
    TopLeft,
    /// The upper right corner.
    TopRight,
    /// The lower left corner.
    BottomLeft,
    /// The lower right corner.
    BottomRight,
}

impl WatermarkPosition {
    fn align(self) -> (HAlign, VAlign) {
        match self {
            WatermarkPosition::Center => (HAlign::Center, VAlign::Middle),
            WatermarkPosition::Top => (HAlign::Center, VAlign::Top),
            WatermarkPosition::Bottom => (HAlign::Center, VAlign::Bottom),
            WatermarkPosition::TopLeft => (HAlign::Left, VAlign::Top),
            WatermarkPosition::TopRight => (HAlign::Right, VAlign::Top),
            WatermarkPosition::BottomLeft => (HAlign::Left, VAlign::Bottom),
            WatermarkPosition::BottomRight => (HAlign::Right, VAlign::Bottom),
        }
    }
}

/// Distance of edge positions from the page edges, in points (half an inch).
const EDGE_MARGIN: f64 = 36.0;

/// Longest text, in characters.
const MAX_TEXT_CHARS: usize = 500;

/// The operation.
pub struct Watermark;

/// The route.
pub type WatermarkRoute = TransformRoute<Watermark>;

impl Transform for Watermark {
    type Options = WatermarkOptions;
    type Plan = (Vec<ObjectId>, Mark);

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/watermark",
        operation: "add_watermark_to_pdf",
        family: Family::Docs,
        summary: "Stamp text on pages",
        description: "Stamps a line of text (Helvetica, Windows-1252 characters) over every page or a page selection: \
            size, colour, opacity, angle and position (centre, an edge or a corner) as the reader sees the page, \
            whatever its rotation or crop box. The text is added as real text over the content, so it stays \
            selectable. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "watermarked";

    fn check(options: &WatermarkOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        mark(options)?;
        PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?.resolve_set(pages, "/pages")?;
        Ok(pages)
    }

    fn plan(options: WatermarkOptions, doc: &Document, _: &Limits) -> Result<Self::Plan, EngineError> {
        let mark = mark(&options)?;
        let selection = PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?;
        let pages = pdf::selected_pages(doc, &selection, "/pages")?.into_iter().map(|(_, id)| id).collect();
        Ok((pages, mark))
    }

    fn apply((pages, mark): Self::Plan, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        let stamper = Stamper::new(&mut doc, Some(mark.opacity));
        for id in pages {
            stamper.stamp(&mut doc, id, &mark.text, &mark.style)?;
        }
        Ok(Pdf::Doc(doc))
    }
}

/// The checked text and look of a watermark.
pub struct Mark {
    text: Vec<u8>,
    style: Style,
    opacity: f64,
}

fn mark(options: &WatermarkOptions) -> Result<Mark, EngineError> {
    let chars = options.text.chars().count();
    if chars == 0 || options.text.trim().is_empty() {
        return Err(EngineError::invalid("/text", "/text: give the text to stamp (1 to 500 characters)"));
    }
    if chars > MAX_TEXT_CHARS {
        return Err(EngineError::invalid("/text", format!("/text: at most {MAX_TEXT_CHARS} characters, not {chars}")));
    }
    let text = stamp::win_ansi(&options.text, "/text")?;
    let font_size = stamp::check_range(options.font_size, 4.0, 400.0, "/font_size")?;
    let color = stamp::parse_color(&options.color, "/color")?;
    let opacity = stamp::check_range(options.opacity, 0.0, 1.0, "/opacity")?;
    let angle = stamp::check_range(options.angle, -360.0, 360.0, "/angle")?;
    let (h, v) = options.position.align();
    Ok(Mark { text, style: Style { font_size, color, angle, h, v, margin: EDGE_MARGIN }, opacity })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf;
    use crate::pdf::stamp::tests::{
        build, close, operands, page_letters, page_text, page_words, qpdf_check, rect, run, stamp_ops,
    };
    use lopdf::{Document, Object, dictionary};
    use serde_json::{Value, json};

    async fn watermark(pdf: &[u8], body: Value) -> Result<(String, Vec<u8>, Document), EngineError> {
        let (name, bytes) = run::<WatermarkRoute>(pdf, "report.pdf", body).await?;
        let doc = Document::load_mem(&bytes).expect("the output opens");
        Ok((name, bytes, doc))
    }

    fn resources(doc: &Document, n: u32) -> lopdf::Dictionary {
        let page = doc.get_dictionary(doc.get_pages()[&n]).unwrap();
        doc.dereference(page.get(b"Resources").unwrap()).unwrap().1.as_dict().unwrap().clone()
    }

    fn sub(doc: &Document, res: &lopdf::Dictionary, key: &[u8]) -> lopdf::Dictionary {
        doc.dereference(res.get(key).unwrap()).unwrap().1.as_dict().unwrap().clone()
    }

    #[tokio::test]
    async fn stamps_the_text_with_its_style_and_keeps_existing_resources() {
        let pdf = build(vec![vec![]]);
        let body = json!({ "text": "CONFIDENTIAL (draft) \\ v2", "color": "#ff0000", "opacity": 0.5, "font_size": 60 });
        let (name, bytes, doc) = watermark(&pdf, body).await.unwrap();
        assert_eq!(name, "report-watermarked.pdf");
        qpdf_check(&bytes);

        let ops = stamp_ops(&doc, 1);
        let names: Vec<&str> = ops.iter().map(|(op, _)| op.as_str()).collect();
        assert_eq!(names, ["Q", "q", "cm", "gs", "rg", "BT", "Tf", "Tm", "Tj", "ET", "Q"]);
        close(&operands(&doc, 1, "cm"), &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
        close(&operands(&doc, 1, "rg"), &[1.0, 0.0, 0.0]);
        let tf = &ops[6].1;
        assert_eq!(tf[0].as_name().unwrap(), b"PcF1");
        assert_eq!(pdf::number(&doc, &tf[1]), Some(60.0));
        assert_eq!(ops[3].1[0].as_name().unwrap(), b"PcGS1");
        match &ops[8].1[0] {
            Object::String(bytes, _) => assert_eq!(bytes, b"CONFIDENTIAL (draft) \\ v2"),
            other => panic!("{other:?}"),
        }
        // 45 degrees, centred on the page.
        let tm = operands(&doc, 1, "Tm");
        let c = std::f64::consts::FRAC_1_SQRT_2;
        close(&tm[..4], &[c, c, -c, c]);
        let w = stamp::text_width(b"CONFIDENTIAL (draft) \\ v2", 60.0);
        let (dx, dy) = (-w / 2.0, -0.2555 * 60.0);
        close(&tm[4..], &[306.0 + c * dx - c * dy, 396.0 + c * dx + c * dy]);

        let res = resources(&doc, 1);
        let fonts = sub(&doc, &res, b"Font");
        assert!(fonts.has(b"F1"), "the page's own font stays");
        let font = doc.get_dictionary(fonts.get(b"PcF1").unwrap().as_reference().unwrap()).unwrap();
        assert_eq!(font.get(b"BaseFont").unwrap().as_name().unwrap(), b"Helvetica");
        assert_eq!(font.get(b"Encoding").unwrap().as_name().unwrap(), b"WinAnsiEncoding");
        let states = sub(&doc, &res, b"ExtGState");
        assert!(states.has(b"GS1"));
        let gs = doc.get_dictionary(states.get(b"PcGS1").unwrap().as_reference().unwrap()).unwrap();
        assert_eq!(pdf::number(&doc, gs.get(b"ca").unwrap()), Some(0.5));
        assert_eq!(pdf::number(&doc, gs.get(b"CA").unwrap()), Some(0.5));

        // The page's own content is wrapped: q first, then the original stream.
        let contents = doc.get_dictionary(doc.get_pages()[&1]).unwrap().get(b"Contents").unwrap().as_array().unwrap();
        assert_eq!(contents.len(), 3);
        let first = doc.get_object(contents[0].as_reference().unwrap()).unwrap().as_stream().unwrap();
        assert_eq!(String::from_utf8_lossy(&first.content).trim(), "q");
        assert!(page_letters(&bytes, 1).contains("CONFIDENTIAL(draft)\\v2"), "{}", page_letters(&bytes, 1));
    }

    #[tokio::test]
    async fn picks_resource_names_that_are_free() {
        let pdf = build(vec![vec![(
            "Resources",
            Object::Dictionary(dictionary! {
                "Font" => dictionary! { "PcF1" => dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier" } },
                "ExtGState" => dictionary! { "PcGS1" => dictionary! { "CA" => 1 }, "PcGS2" => dictionary! { "ca" => 1 } },
            }),
        )]]);
        let (_, bytes, doc) = watermark(&pdf, json!({ "text": "X" })).await.unwrap();
        qpdf_check(&bytes);
        let ops = stamp_ops(&doc, 1);
        assert_eq!(ops[6].1[0].as_name().unwrap(), b"PcF2");
        assert_eq!(ops[3].1[0].as_name().unwrap(), b"PcGS3");
        let res = resources(&doc, 1);
        let fonts = sub(&doc, &res, b"Font");
        let courier = fonts.get(b"PcF1").unwrap().as_dict().unwrap();
        assert_eq!(courier.get(b"BaseFont").unwrap().as_name().unwrap(), b"Courier");
    }

    #[tokio::test]
    async fn other_pages_and_shared_resources_are_untouched() {
        let pdf = build(vec![vec![], vec![], vec![]]);
        let before = Document::load_mem(&pdf).unwrap();
        let (_, bytes, doc) = watermark(&pdf, json!({ "text": "SECRET", "pages": "2" })).await.unwrap();
        qpdf_check(&bytes);
        for n in [1, 3] {
            let old = before.get_dictionary(before.get_pages()[&n]).unwrap();
            let new = doc.get_dictionary(doc.get_pages()[&n]).unwrap();
            assert_eq!(old.get(b"Contents").unwrap(), new.get(b"Contents").unwrap(), "page {n}");
            assert_eq!(old.get(b"Resources").unwrap(), new.get(b"Resources").unwrap(), "page {n}");
            let shared = sub(&doc, &resources(&doc, n), b"Font");
            assert_eq!(shared.len(), 1, "the shared resources gained nothing");
            assert!(!page_letters(&bytes, n).contains("SECRET"));
        }
        assert!(page_letters(&bytes, 2).contains("SECRET"));
        assert!(sub(&doc, &resources(&doc, 2), b"Font").has(b"PcF1"));
    }

    #[tokio::test]
    async fn reads_upright_on_rotated_and_offset_pages() {
        let pdf = build(vec![
            vec![],
            vec![("Rotate", Object::Integer(90))],
            vec![("Rotate", Object::Integer(180))],
            vec![("Rotate", Object::Integer(270))],
            vec![
                ("MediaBox", rect([0.0, 0.0, 812.0, 992.0])),
                ("CropBox", rect([100.0, 100.0, 712.0, 892.0])),
                ("Rotate", Object::Integer(90)),
            ],
        ]);
        let body = json!({ "text": "Internal use", "angle": 0, "position": "bottom", "font_size": 20 });
        let (_, bytes, doc) = watermark(&pdf, body).await.unwrap();
        qpdf_check(&bytes);
        let matrices = [
            [1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            [0.0, 1.0, -1.0, 0.0, 612.0, 0.0],
            [-1.0, 0.0, 0.0, -1.0, 612.0, 792.0],
            [0.0, -1.0, 1.0, 0.0, 0.0, 792.0],
            [0.0, 1.0, -1.0, 0.0, 712.0, 100.0],
        ];
        for (i, matrix) in matrices.iter().enumerate() {
            let n = i as u32 + 1;
            close(&operands(&doc, n, "cm"), matrix);
            let text = page_text(&bytes, n);
            assert!(text.contains("Internal use"), "page {n}: {text}");
            let (w, h) = if n == 1 || n == 3 { (612.0, 792.0) } else { (792.0, 612.0) };
            // Poppler's boxes are in the turned media box; page 5's crop box starts 100 pt in.
            let (ox, oy) = if n == 5 { (100.0, 100.0) } else { (0.0, 0.0) };
            let words = page_words(&bytes, n);
            let (x0, _, _, y1, _) = words.iter().find(|w| w.4 == "Internal").unwrap().clone();
            let (_, _, x1, _, _) = words.iter().find(|w| w.4 == "use").unwrap().clone();
            let (x0, x1, y1) = (x0 - ox, x1 - ox, y1 - oy);
            assert!(((x0 + x1) / 2.0 - w / 2.0).abs() < 3.0, "page {n}: centred? {x0}..{x1} of {w}");
            assert!(y1 > h - 60.0 && y1 < h - 30.0, "page {n}: near the bottom? {y1} of {h}");
        }
    }

    #[tokio::test]
    async fn corners_sit_inside_the_margins() {
        let pdf = build(vec![vec![("Rotate", Object::Integer(270))]]);
        for (position, left, top) in [
            ("top-left", true, true),
            ("top-right", false, true),
            ("bottom-left", true, false),
            ("bottom-right", false, false),
        ] {
            let body = json!({ "text": "Copy", "angle": 0, "position": position, "font_size": 30 });
            let (_, bytes, _) = watermark(&pdf, body).await.unwrap();
            let (w, h) = (792.0, 612.0);
            let words = page_words(&bytes, 1);
            let (x0, y0, x1, y1, _) = words.iter().find(|w| w.4 == "Copy").unwrap().clone();
            let near = |a: f64, b: f64| (a - b).abs() < 12.0;
            if left {
                assert!(near(x0, 36.0), "{position}: {x0}")
            } else {
                assert!(near(x1, w - 36.0), "{position}: {x1}")
            }
            if top {
                assert!(near(y0, 36.0), "{position}: {y0}")
            } else {
                assert!(near(y1, h - 36.0), "{position}: {y1}")
            }
        }
    }

    #[tokio::test]
    async fn a_diagonal_watermark_is_extracted() {
        let pdf = build(vec![vec![("Rotate", Object::Integer(90))]]);
        let (_, bytes, _) = watermark(&pdf, json!({ "text": "DRAFT" })).await.unwrap();
        qpdf_check(&bytes);
        assert!(page_letters(&bytes, 1).contains("DRAFT"), "{}", page_letters(&bytes, 1));
        // Poppler gives the diagonal letters one box each, upright boxes around the turned
        // glyphs (so their union is only roughly centred): the baseline runs from the bottom
        // of the first letter's box to the top of the last one's.
        let words = page_words(&bytes, 1);
        let x0 = words.iter().map(|w| w.0).fold(f64::MAX, f64::min);
        let x1 = words.iter().map(|w| w.2).fold(f64::MIN, f64::max);
        assert!(((x0 + x1) / 2.0 - 396.0).abs() < 20.0, "{words:?}");
        let first = words.iter().find(|w| w.4.starts_with('D')).unwrap();
        let last = words.iter().find(|w| w.4.ends_with('T')).unwrap();
        // Rising to the right as the reader sees it: the first letter is the lowest.
        assert!(first.0 < last.0 && first.1 > last.1, "{words:?}");
        // The baseline's middle is below the box centre (306 from the top) by the turned
        // distance from the baseline to the middle of the box.
        let middle = (first.3 + last.1) / 2.0;
        let expected = 306.0 + 0.2555 * 48.0 * std::f64::consts::FRAC_1_SQRT_2;
        assert!((middle - expected).abs() < 1.0, "{middle} vs {expected}: {words:?}");
    }

    #[tokio::test]
    async fn latin_characters_are_drawn_with_win_ansi_codes() {
        let pdf = build(vec![vec![]]);
        let (_, bytes, doc) = watermark(&pdf, json!({ "text": "Entwurf – Größe 5 €", "angle": 0 })).await.unwrap();
        match &stamp_ops(&doc, 1)[8].1[0] {
            Object::String(s, _) => assert_eq!(s, &stamp::win_ansi("Entwurf – Größe 5 €", "/text").unwrap()),
            other => panic!("{other:?}"),
        }
        let text = page_text(&bytes, 1);
        assert!(text.contains("Entwurf – Größe 5 €"), "{text}");
    }

    #[tokio::test]
    async fn refuses_bad_input_naming_the_field() {
        let pdf = build(vec![vec![]]);
        let long = "x".repeat(501);
        let cases = [
            (json!({ "text": "" }), "/text"),
            (json!({ "text": "   " }), "/text"),
            (json!({ "text": long }), "/text"),
            (json!({ "text": "日本" }), "/text"),
            (json!({}), "/text"),
            (json!({ "text": "a", "color": "grey" }), "/color"),
            (json!({ "text": "a", "color": "#12345" }), "/color"),
            (json!({ "text": "a", "opacity": 2 }), "/opacity"),
            (json!({ "text": "a", "opacity": -0.1 }), "/opacity"),
            (json!({ "text": "a", "font_size": 3 }), "/font_size"),
            (json!({ "text": "a", "font_size": 401 }), "/font_size"),
            (json!({ "text": "a", "angle": 361 }), "/angle"),
            (json!({ "text": "a", "position": "middle" }), "/position"),
            (json!({ "text": "a", "pages": "9" }), "/pages"),
        ];
        for (body, field) in cases {
            let e = match watermark(&pdf, body.clone()).await {
                Ok(_) => panic!("{body} was accepted"),
                Err(e) => e,
            };
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {}", e.message);
            assert!(e.message.starts_with(field), "{body}: {}", e.message);
        }
        let e = watermark(&pdf, json!({ "text": "Preis 5 ₹" })).await.err().unwrap();
        assert!(e.message.contains("'₹'"), "{}", e.message);
    }

    #[test]
    fn schema_shows_the_defaults() {
        let schema = schemars::SchemaGenerator::default()
            .into_root_schema_for::<crate::pdf::transform::PdfJob<WatermarkOptions>>();
        let text = serde_json::to_string(&schema).unwrap();
        for part in [
            r##""default":"#808080""##,
            r#""default":0.3"#,
            r#""default":45.0"#,
            r#""default":"center""#,
            "bottom-right",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }
}
