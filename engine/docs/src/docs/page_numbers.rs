//! `POST /v1/pdf/page-numbers`: add page numbers to pages.

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

/// Fields of `/v1/pdf/page-numbers` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageNumbersOptions {
    /// The label: `{n}` is the page's number, `{total}` the last number shown (start + numbered pages - 1); other text as is (Windows-1252 characters, up to 200).
    #[serde(default = "default_format")]
    #[schemars(regex(pattern = stamp::label_pattern()), length(min = 1, max = MAX_FORMAT_CHARS))]
    pub format: String,
    /// Where the number goes on the page as the reader sees it.
    #[serde(default)]
    pub position: NumberPosition,
    /// The number shown on the first numbered page, 0 to 1000000.
    #[serde(default = "default_start")]
    #[schemars(range(min = 0, max = 1_000_000))]
    pub start: u32,
    /// Pages that get a number (`"2-last"`), numbered in page order; every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// Font size in points (Helvetica), 4 to 400.
    #[serde(default = "default_font_size")]
    #[schemars(range(min = 4, max = 400))]
    pub font_size: f64,
    /// Text colour as `#rrggbb`.
    #[serde(default = "default_color")]
    #[schemars(regex(pattern = r"^#[0-9A-Fa-f]{6}$"))]
    pub color: String,
    /// Distance of the text from the page edges in points, 0 to 1000.
    #[serde(default = "default_margin")]
    #[schemars(range(min = 0, max = 1000))]
    pub margin_pt: f64,
}

fn default_format() -> String {
    "{n} / {total}".into()
}

fn default_start() -> u32 {
    1
}

fn default_font_size() -> f64 {
    10.0
}

fn default_color() -> String {
    "#000000".into()
}

fn default_margin() -> f64 {
    24.0
}

/// Where the page number goes on the visible page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NumberPosition {
    /// Upper left corner.
    TopLeft,
    /// Centred along the top edge.
    TopCenter,
    /// Upper right corner.
    TopRight,
    /// Lower left corner.
    BottomLeft,
    /// Centred along the bottom edge.
    #[default]
    BottomCenter,
    /// Lower right corner.
    BottomRight,
}

impl NumberPosition {
    fn align(self) -> (HAlign, VAlign) {
        match self {
            NumberPosition::TopLeft => (HAlign::Left, VAlign::Top),
            NumberPosition::TopCenter => (HAlign::Center, VAlign::Top),
            NumberPosition::TopRight => (HAlign::Right, VAlign::Top),
            NumberPosition::BottomLeft => (HAlign::Left, VAlign::Bottom),
            NumberPosition::BottomCenter => (HAlign::Center, VAlign::Bottom),
            NumberPosition::BottomRight => (HAlign::Right, VAlign::Bottom),
        }
    }
}

/// Longest format, in characters.
const MAX_FORMAT_CHARS: usize = 200;

/// Largest `start`.
const MAX_START: u32 = 1_000_000;

/// A piece of a parsed format.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    /// Literal text, WinAnsi-encoded.
    Text(Vec<u8>),
    /// `{n}`.
    Number,
    /// `{total}`.
    Total,
}

/// Parses a format: `{n}` and `{total}` are the placeholders; any other `{…}` is refused.
fn parse_format(format: &str) -> Result<Vec<Piece>, EngineError> {
    const FIELD: &str = "/format";
    let chars = format.chars().count();
    if format.trim().is_empty() {
        return Err(EngineError::invalid(FIELD, "/format: give a label such as `{n} / {total}` or `Page {n}`"));
    }
    if chars > MAX_FORMAT_CHARS {
        return Err(EngineError::invalid(
            FIELD,
            format!("/format: at most {MAX_FORMAT_CHARS} characters, not {chars}"),
        ));
    }
    let mut pieces = Vec::new();
    let mut rest = format;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            pieces.push(Piece::Text(stamp::win_ansi(&rest[..open], FIELD)?));
        }
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(EngineError::invalid(
                FIELD,
                "/format: a `{` is not closed; the placeholders are `{n}` and `{total}`",
            ));
        };
        match &after[..close] {
            "n" => pieces.push(Piece::Number),
            "total" => pieces.push(Piece::Total),
            other => {
                return Err(EngineError::invalid(
                    FIELD,
                    format!("/format: unknown placeholder `{{{other}}}`; the placeholders are `{{n}}` and `{{total}}`"),
                ));
            }
        }
        rest = &after[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(stamp::win_ansi(rest, FIELD)?));
    }
    Ok(pieces)
}

/// The label for page number `n` of `total`, WinAnsi-encoded.
fn label(pieces: &[Piece], n: u64, total: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Text(bytes) => out.extend_from_slice(bytes),
            Piece::Number => out.extend_from_slice(n.to_string().as_bytes()),
            Piece::Total => out.extend_from_slice(total.to_string().as_bytes()),
        }
    }
    out
}

/// The operation.
pub struct PageNumbers;

/// The route.
pub type PageNumbersRoute = TransformRoute<PageNumbers>;

impl Transform for PageNumbers {
    type Options = PageNumbersOptions;
    type Plan = (Vec<ObjectId>, Numbering);

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/page-numbers",
        operation: "add_pdf_page_numbers",
        family: Family::Docs,
        summary: "Add page numbers",
        description: "Adds a page number to every page or a page selection, in a corner or centred along the top or \
            bottom edge as the reader sees the page, whatever its rotation or crop box. The label is a format such \
            as `{n} / {total}` or `Page {n}`: the selected pages are numbered in page order from `start`, and \
            `{total}` is the last number shown. The number is real text (Helvetica), so it stays selectable. \
            output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "numbered";

    fn check(options: &PageNumbersOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        numbering(options)?;
        PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?.resolve_set(pages, "/pages")?;
        Ok(pages)
    }

    fn plan(options: PageNumbersOptions, doc: &Document, _: &Limits) -> Result<Self::Plan, EngineError> {
        let numbering = numbering(&options)?;
        let selection = PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?;
        let pages = pdf::selected_pages(doc, &selection, "/pages")?.into_iter().map(|(_, id)| id).collect();
        Ok((pages, numbering))
    }

    fn apply((pages, numbering): Self::Plan, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        let Numbering { format, start, style } = numbering;
        let stamper = Stamper::new(&mut doc, None);
        let total = (start + pages.len() as u64).saturating_sub(1);
        for (i, id) in pages.into_iter().enumerate() {
            let text = label(&format, start + i as u64, total);
            stamper.stamp(&mut doc, id, &text, &style)?;
        }
        Ok(Pdf::Doc(doc))
    }
}

/// The checked format and look of the numbers.
pub struct Numbering {
    format: Vec<Piece>,
    start: u64,
    style: Style,
}

fn numbering(options: &PageNumbersOptions) -> Result<Numbering, EngineError> {
    let format = parse_format(&options.format)?;
    if options.start > MAX_START {
        return Err(EngineError::invalid("/start", format!("/start: must be 0 to {MAX_START}, not {}", options.start)));
    }
    let font_size = stamp::check_range(options.font_size, 4.0, 400.0, "/font_size")?;
    let color = stamp::parse_color(&options.color, "/color")?;
    let margin = stamp::check_range(options.margin_pt, 0.0, 1000.0, "/margin_pt")?;
    let (h, v) = options.position.align();
    Ok(Numbering { format, start: options.start as u64, style: Style { font_size, color, angle: 0.0, h, v, margin } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::stamp::tests::{
        build, close, operands, page_letters, page_text, page_words, qpdf_check, rect, run, stamp_ops,
    };
    use lopdf::{Document, Object};
    use serde_json::{Value, json};

    async fn number(pdf: &[u8], body: Value) -> Result<(String, Vec<u8>, Document), EngineError> {
        let (name, bytes) = run::<PageNumbersRoute>(pdf, "thesis.pdf", body).await?;
        let doc = Document::load_mem(&bytes).expect("the output opens");
        Ok((name, bytes, doc))
    }

    fn shown(doc: &Document, n: u32) -> Vec<u8> {
        match &stamp_ops(doc, n).iter().find(|(op, _)| op == "Tj").unwrap().1[0] {
            Object::String(s, _) => s.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn numbers_every_page_with_the_default_label() {
        let pdf = build(vec![vec![], vec![], vec![]]);
        let (name, bytes, doc) = number(&pdf, json!({})).await.unwrap();
        assert_eq!(name, "thesis-numbered.pdf");
        qpdf_check(&bytes);
        for n in 1..=3 {
            assert_eq!(shown(&doc, n), format!("{n} / 3").into_bytes());
            // Poppler joins the narrow Helvetica spaces at 10 pt: compare without white space.
            assert!(page_letters(&bytes, n).contains(&format!("{n}/3")), "{}", page_text(&bytes, n));
            let ops: Vec<String> = stamp_ops(&doc, n).into_iter().map(|(op, _)| op).collect();
            assert_eq!(ops, ["Q", "q", "cm", "rg", "BT", "Tf", "Tm", "Tj", "ET", "Q"], "no opacity state");
            close(&operands(&doc, n, "rg"), &[0.0, 0.0, 0.0]);
            close(&operands(&doc, n, "Tf"), &[10.0]);
        }
        // Bottom centre: the box (descender to cap height) sits 24 pt above the bottom edge.
        let w = stamp::text_width(b"1 / 3", 10.0);
        close(&operands(&doc, 1, "Tm"), &[1.0, 0.0, 0.0, 1.0, 306.0 - w / 2.0, 24.0 + 2.07]);
    }

    #[tokio::test]
    async fn numbers_a_selection_from_start_and_leaves_other_pages_alone() {
        let pdf = build(vec![vec![], vec![], vec![], vec![]]);
        let before = Document::load_mem(&pdf).unwrap();
        let body =
            json!({ "pages": "2-last", "start": 5, "format": "Page {n} of {total} (draft)", "color": "#0000ff" });
        let (_, bytes, doc) = number(&pdf, body).await.unwrap();
        qpdf_check(&bytes);
        let old = before.get_dictionary(before.get_pages()[&1]).unwrap();
        let new = doc.get_dictionary(doc.get_pages()[&1]).unwrap();
        assert_eq!(old.get(b"Contents").unwrap(), new.get(b"Contents").unwrap());
        assert_eq!(old.get(b"Resources").unwrap(), new.get(b"Resources").unwrap());
        assert!(!page_text(&bytes, 1).contains("Page"));
        for (n, label) in [(2, "Page 5 of 7 (draft)"), (3, "Page 6 of 7 (draft)"), (4, "Page 7 of 7 (draft)")] {
            assert_eq!(shown(&doc, n), label.as_bytes());
            assert!(page_text(&bytes, n).contains(label), "{}", page_text(&bytes, n));
            close(&operands(&doc, n, "rg"), &[0.0, 0.0, 1.0]);
        }
    }

    #[tokio::test]
    async fn bottom_center_is_at_the_bottom_the_reader_sees() {
        let pdf = build(vec![
            vec![],
            vec![("Rotate", Object::Integer(90))],
            vec![("Rotate", Object::Integer(180))],
            vec![("Rotate", Object::Integer(270))],
            vec![("MediaBox", rect([0.0, 0.0, 812.0, 992.0])), ("CropBox", rect([100.0, 100.0, 712.0, 892.0]))],
            vec![
                ("MediaBox", rect([0.0, 0.0, 812.0, 992.0])),
                ("CropBox", rect([100.0, 100.0, 712.0, 892.0])),
                ("Rotate", Object::Integer(270)),
            ],
        ]);
        let (_, bytes, doc) = number(&pdf, json!({ "format": "p{n}", "font_size": 12 })).await.unwrap();
        qpdf_check(&bytes);
        let matrices = [
            [1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            [0.0, 1.0, -1.0, 0.0, 612.0, 0.0],
            [-1.0, 0.0, 0.0, -1.0, 612.0, 792.0],
            [0.0, -1.0, 1.0, 0.0, 0.0, 792.0],
            [1.0, 0.0, 0.0, 1.0, 100.0, 100.0],
            [0.0, -1.0, 1.0, 0.0, 100.0, 892.0],
        ];
        // Visible size, and where poppler's coordinates (turned media box) put the crop box.
        let frames = [
            ((612.0, 792.0), (0.0, 0.0)),
            ((792.0, 612.0), (0.0, 0.0)),
            ((612.0, 792.0), (0.0, 0.0)),
            ((792.0, 612.0), (0.0, 0.0)),
            ((612.0, 792.0), (100.0, 100.0)),
            ((792.0, 612.0), (100.0, 100.0)),
        ];
        for n in 1..=6u32 {
            let i = n as usize - 1;
            close(&operands(&doc, n, "cm"), &matrices[i]);
            let word = format!("p{n}");
            assert!(page_text(&bytes, n).contains(&word), "page {n}: {}", page_text(&bytes, n));
            let ((w, h), (ox, oy)) = frames[i];
            let words = page_words(&bytes, n);
            let (x0, _, x1, y1, _) = words.iter().find(|w| w.4 == word).unwrap().clone();
            let (x0, x1, y1) = (x0 - ox, x1 - ox, y1 - oy);
            assert!(((x0 + x1) / 2.0 - w / 2.0).abs() < 2.0, "page {n}: centred? {x0}..{x1} of {w}");
            // The box bottom is 24 pt up; poppler's box reaches a little below the descender.
            assert!((h - y1 - 24.0).abs() < 4.0, "page {n}: 24 pt from the bottom? {y1} of {h}");
        }
    }

    #[tokio::test]
    async fn corners_and_margins() {
        let pdf = build(vec![vec![("Rotate", Object::Integer(90))]]);
        for (position, left, top) in [
            ("top-left", Some(true), true),
            ("top-center", None, true),
            ("top-right", Some(false), true),
            ("bottom-left", Some(true), false),
            ("bottom-right", Some(false), false),
        ] {
            let body = json!({ "position": position, "margin_pt": 50, "format": "{n}" });
            let (_, bytes, _) = number(&pdf, body).await.unwrap();
            let (w, h) = (792.0, 612.0);
            let (x0, y0, x1, y1, _) = page_words(&bytes, 1).into_iter().find(|w| w.4 == "1").unwrap();
            let near = |a: f64, b: f64| (a - b).abs() < 4.0;
            match left {
                Some(true) => assert!(near(x0, 50.0), "{position}: {x0}"),
                Some(false) => assert!(near(x1, w - 50.0), "{position}: {x1}"),
                None => assert!(near((x0 + x1) / 2.0, w / 2.0), "{position}: {x0}..{x1}"),
            }
            if top {
                assert!(y0 > 50.0 - 4.0 && y0 < 50.0 + 4.0, "{position}: {y0}");
            } else {
                assert!(near(y1, h - 50.0), "{position}: {y1}");
            }
        }
    }

    #[test]
    fn the_published_label_pattern_accepts_exactly_what_the_parser_accepts() {
        let validator = crate::patterns::validator(&stamp::label_pattern());
        let parts = ["{n}", "{total}", "{", "}", "{x}", "{N}", " ", "\u{a0}", "\t", "Page ", "é", "€", "₽", "\n", "-"];
        for a in parts {
            for b in parts {
                for c in parts {
                    let text = format!("{a}{b}{c}");
                    assert_eq!(validator.is_valid(&json!(text)), parse_format(&text).is_ok(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn formats_parse_placeholders_and_refuse_others() {
        assert_eq!(
            parse_format("Seite {n}/{total}").unwrap(),
            vec![Piece::Text(b"Seite ".to_vec()), Piece::Number, Piece::Text(b"/".to_vec()), Piece::Total]
        );
        assert_eq!(label(&parse_format("{n}}").unwrap(), 3, 9), b"3}");
        for bad in ["{x}", "Page {N}", "{n", "{}", "", "  ", "Page {n} – ✓"] {
            let e = parse_format(bad).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("/format"), "{bad}");
        }
        assert!(parse_format("{page}").unwrap_err().message.contains("{page}"));
    }

    #[tokio::test]
    async fn refuses_bad_input_naming_the_field() {
        let pdf = build(vec![vec![]]);
        let cases = [
            (json!({ "format": "{x}" }), "/format"),
            (json!({ "format": "x".repeat(201) }), "/format"),
            (json!({ "position": "middle" }), "/position"),
            (json!({ "position": "bottom" }), "/position"),
            (json!({ "start": -1 }), "/start"),
            (json!({ "start": 1_000_001 }), "/start"),
            (json!({ "font_size": 0 }), "/font_size"),
            (json!({ "color": "black" }), "/color"),
            (json!({ "margin_pt": -1 }), "/margin_pt"),
            (json!({ "pages": "2" }), "/pages"),
        ];
        for (body, field) in cases {
            let e = match number(&pdf, body.clone()).await {
                Ok(_) => panic!("{body} was accepted"),
                Err(e) => e,
            };
            assert_eq!(e.field.as_deref(), Some(field), "{body}: {}", e.message);
            assert!(e.message.starts_with(field), "{body}: {}", e.message);
        }
    }

    #[test]
    fn schema_shows_the_defaults() {
        let schema = schemars::SchemaGenerator::default()
            .into_root_schema_for::<crate::pdf::transform::PdfJob<PageNumbersOptions>>();
        let text = serde_json::to_string(&schema).unwrap();
        for part in [r#""default":"{n} / {total}""#, r#""default":"bottom-center""#, r#""default":24.0"#, "top-right"] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }
}
