//! libpdfium, the renderer of the rendering routes (to-images, rasterize): finding the
//! library at run time, binding it once per process, and rendering pages to RGB pixels.
//!
//! pdfium is not re-entrant. pdfium-render's `thread_safe` feature takes one process-wide
//! lock around every call into the library, so renders from several request threads
//! interleave call by call but never run inside pdfium at the same time; documents are
//! independent of each other in pdfium, so interleaving is safe. Encoding the pixels
//! (PNG, JPEG) happens outside the lock.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

use pdfium_render::prelude::{PdfBitmapFormat, PdfDocument, PdfRenderConfig, Pdfium, PdfiumError, PdfiumInternalError};

use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// The rendering price rule in words (`../shared/spec/routebook.md` §4).
pub const RENDERING_PRICE_RULE: &str = "$0.003 + $0.0005 a page rendered";

/// Rendering: $0.003 + $0.0005 a page rendered.
pub fn rendering_price(pages: u32) -> Price {
    Price::tiered(Price::micros(3_000), 0, Price::micros(500), pages as u64)
}

/// Lowest resolution a caller may ask for, in dots per inch.
pub const MIN_DPI: u32 = 36;
/// Highest resolution a caller may ask for.
pub const MAX_DPI: u32 = 600;
/// The resolution when none is given.
pub const DEFAULT_DPI: u32 = 150;

/// Most pixels one rendered page may have: 50 MP is an A4 page at 600 dpi (35 MP) with
/// room to spare, and bounds a page's bitmap to 150 MB (RGB) while it is encoded.
pub const MAX_PAGE_PIXELS: u64 = 50_000_000;

/// The environment variable naming libpdfium (the file, or the folder holding it).
pub const PDFIUM_ENV: &str = "PAPERCHAIN_PDFIUM";

/// Checks an optional `dpi` field: 36 to 600, [`DEFAULT_DPI`] when absent.
pub fn check_dpi(dpi: Option<i64>, field: &str) -> Result<u32, EngineError> {
    match dpi {
        None => Ok(DEFAULT_DPI),
        Some(d) if (MIN_DPI as i64..=MAX_DPI as i64).contains(&d) => Ok(d as u32),
        Some(d) => Err(EngineError::invalid(field, format!("{field}: must be from {MIN_DPI} to {MAX_DPI}, not {d}"))),
    }
}

/// Pixel size of a page of `width_pt` × `height_pt` points at `dpi` (at least 1×1).
pub fn pixel_size(width_pt: f64, height_pt: f64, dpi: u32) -> (u32, u32) {
    let px = |pt: f64| {
        let v = (pt / 72.0 * dpi as f64).round();
        // NaN and absurd sizes are clamped: the pixel cap refuses them afterwards.
        if v.is_nan() || v < 1.0 { 1 } else { v.min(u32::MAX as f64) as u32 }
    };
    (px(width_pt), px(height_pt))
}

/// A page to render: its number and visible size (crop box, rotation applied).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PagePlan {
    /// 1-based page number.
    pub number: u32,
    /// Visible width in points, as the page is seen (after /Rotate).
    pub width_pt: f64,
    /// Visible height in points.
    pub height_pt: f64,
}

/// Longest side of a rendered page, in pixels (JPEG's limit is 65,535).
pub const MAX_SIDE_PIXELS: u32 = 65_000;

/// Refuses a page whose bitmap at `dpi` would exceed [`MAX_PAGE_PIXELS`] or have a side
/// over [`MAX_SIDE_PIXELS`]; errors name `field`.
pub fn check_page_pixels(plan: &PagePlan, dpi: u32, field: &str) -> Result<(u32, u32), EngineError> {
    let (w, h) = pixel_size(plan.width_pt, plan.height_pt, dpi);
    // JPEG cannot hold a side over 65,535 pixels; a long strip can be under the area cap.
    if w.max(h) > MAX_SIDE_PIXELS {
        let longest = plan.width_pt.max(plan.height_pt);
        let fitting = ((MAX_SIDE_PIXELS as f64 - 1.0) * 72.0 / longest).floor();
        let advice = if fitting >= MIN_DPI as f64 {
            format!("ask for at most {fitting} dpi")
        } else {
            "the page is too long to render at any allowed dpi".to_string()
        };
        return Err(EngineError::too_large(
            "output_too_large",
            Some(field.to_string()),
            format!(
                "{field}: page {} would be {w} × {h} pixels at {dpi} dpi; a side may have at most {MAX_SIDE_PIXELS}                  pixels; {advice}",
                plan.number
            ),
        ));
    }
    if (w as u64) * (h as u64) <= MAX_PAGE_PIXELS {
        return Ok((w, h));
    }
    let area = plan.width_pt * plan.height_pt / (72.0 * 72.0);
    let mut fitting = (MAX_PAGE_PIXELS as f64 / area).sqrt().floor().min(MAX_DPI as f64);
    // Rounding each side up can tip the estimate over the cap: step down until it fits.
    while fitting >= MIN_DPI as f64 && {
        let (w, h) = pixel_size(plan.width_pt, plan.height_pt, fitting as u32);
        (w as u64) * (h as u64) > MAX_PAGE_PIXELS
    } {
        fitting -= 1.0;
    }
    let advice = if fitting >= MIN_DPI as f64 {
        format!("ask for at most {fitting} dpi")
    } else {
        "the page is too large to render at any allowed dpi".to_string()
    };
    Err(EngineError::too_large(
        "output_too_large",
        Some(field.to_string()),
        format!(
            "{field}: page {} ({:.0} × {:.0} pt) would be {w} × {h} pixels at {dpi} dpi, more than the limit of {} \
             megapixels a page; {advice}",
            plan.number,
            plan.width_pt,
            plan.height_pt,
            MAX_PAGE_PIXELS / 1_000_000
        ),
    ))
}

/// The visible size of each selected page, from the lopdf document (crop box clipped to
/// the media box, width and height swapped for a quarter-turn /Rotate).
pub fn plan_pages(doc: &lopdf::Document, numbers: &[u32]) -> Vec<PagePlan> {
    let ids: Vec<lopdf::ObjectId> = doc.page_iter().collect();
    numbers
        .iter()
        .filter_map(|&n| ids.get(n as usize - 1).map(|&id| (n, id)))
        .map(|(number, id)| {
            let visible = pdf::crop_box(doc, id);
            let (width_pt, height_pt) = if pdf::rotation(doc, id) % 180 == 90 {
                (visible.height(), visible.width())
            } else {
                (visible.width(), visible.height())
            };
            PagePlan { number, width_pt, height_pt }
        })
        .collect()
}

/// An input PDF opened by lopdf (for the checks, page selection and sizes) whose original
/// bytes and password are kept for pdfium.
pub struct RenderSource {
    /// The checked document.
    pub pdf: SourcePdf,
    /// The file's bytes as given.
    pub bytes: Vec<u8>,
    /// The password given with the file.
    pub password: Option<String>,
}

impl RenderSource {
    /// Fetches or decodes `file` and opens it as [`SourcePdf::load`] does; errors name `field`.
    pub async fn load(file: &FileInput, field: &str, ctx: &Context) -> Result<RenderSource, EngineError> {
        let input = file.resolve(ctx, field, "document.pdf").await?;
        let limits = ctx.limits;
        let field = field.to_string();
        blocking(move || {
            let doc = pdf::open(&input.bytes, input.password.as_deref(), &limits).map_err(|e| e.under(&field))?;
            // pdfium inflates streams outside the call's counted memory: refused here first.
            pdf::decoded::check(&input.bytes, &doc, &limits, pdf::decoded::For::Rendering)
                .map_err(|e| e.under(&field))?;
            let page_count = doc.get_pages().len() as u32;
            let pdf = SourcePdf { doc, filename: input.filename, page_count, field };
            Ok(RenderSource { pdf, bytes: input.bytes, password: input.password })
        })
        .await
    }
}

/// A rendered page: packed RGB, 8 bits a channel, rows top to bottom.
pub struct RgbPage {
    /// 1-based page number.
    pub number: u32,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Visible width in points, as pdfium measured it.
    pub width_pt: f64,
    /// Visible height in points.
    pub height_pt: f64,
    /// `width × height × 3` bytes.
    pub rgb: Vec<u8>,
}

/// Renders `pages` (1-based) of the PDF in `bytes` at `dpi`, as seen on screen (crop box,
/// rotation, annotations and form fields drawn), handing each page to `each` in order.
/// Errors about the file name `field`; a page over the pixel cap names `dpi_field`.
pub fn render_pages(
    bytes: &[u8],
    password: Option<&str>,
    pages: &[u32],
    dpi: u32,
    field: &str,
    dpi_field: &str,
    mut each: impl FnMut(RgbPage) -> Result<(), EngineError>,
) -> Result<(), EngineError> {
    let pdfium = library()?;
    let doc = open(pdfium, bytes, password, field)?;
    let doc_pages = doc.pages();
    let count = doc_pages.len();
    for &number in pages {
        // A call stopped (timed out, its caller gone) renders no further page.
        crate::cancel::check()?;
        let unreadable = || {
            EngineError::invalid_with("damaged_pdf", field, format!("{field}: the renderer cannot read page {number}"))
        };
        let index = i32::try_from(number).ok().and_then(|n| n.checked_sub(1)).filter(|&i| i >= 0 && i < count);
        let page = doc_pages.get(index.ok_or_else(unreadable)?).map_err(|_| unreadable())?;
        let width_pt = page.width().value as f64;
        let height_pt = page.height().value as f64;
        // pdfium's own measure decides the bitmap, so the image is never stretched; it
        // is checked again in case it differs from lopdf's, which the caller checked.
        let plan = PagePlan { number, width_pt, height_pt };
        let (width, height) = check_page_pixels(&plan, dpi, dpi_field)?;
        let config = PdfRenderConfig::new()
            .set_fixed_size(width as i32, height as i32)
            .set_format(PdfBitmapFormat::BGR)
            // The channels are swapped below, while the row padding is removed anyway.
            .set_reverse_byte_order(false)
            .render_annotations(true)
            .render_form_data(true);
        let bitmap = page
            .render_with_config(&config)
            .map_err(|e| EngineError::internal(format!("pdfium could not render page {number}: {e:?}")))?;
        let raw = bitmap.as_raw_bytes();
        drop(bitmap);
        let rgb = bgr_rows_to_rgb(&raw, width as usize, height as usize)
            .ok_or_else(|| EngineError::internal(format!("pdfium returned a short bitmap for page {number}")))?;
        drop(raw);
        each(RgbPage { number, width, height, width_pt, height_pt, rgb })?;
    }
    Ok(())
}

/// Packed RGB from pdfium's BGR rows, which are padded to a multiple of 4 bytes.
fn bgr_rows_to_rgb(raw: &[u8], width: usize, height: usize) -> Option<Vec<u8>> {
    let row = width * 3;
    let stride = raw.len().checked_div(height)?;
    if stride < row {
        return None;
    }
    let mut rgb = Vec::with_capacity(row * height);
    for line in raw.chunks_exact(stride).take(height) {
        for px in line[..row].chunks_exact(3) {
            rgb.extend_from_slice(&[px[2], px[1], px[0]]);
        }
    }
    (rgb.len() == row * height).then_some(rgb)
}

/// The text of every page, in pdfium's reading of each page's text objects (lines end in
/// `\n`); errors name `field`. At most `max_pages` pages are read.
pub fn page_texts(bytes: &[u8], password: Option<&str>, field: &str) -> Result<Vec<String>, EngineError> {
    let pdfium = library()?;
    let doc = open(pdfium, bytes, password, field)?;
    let mut texts = Vec::with_capacity(doc.pages().len() as usize);
    for (index, page) in doc.pages().iter().enumerate() {
        let text = page.text().map_err(|e| {
            EngineError::invalid_with(
                "damaged_pdf",
                field,
                format!("{field}: the text of page {} cannot be read ({e:?})", index + 1),
            )
        })?;
        texts.push(tidy_text(&text.all()));
    }
    Ok(texts)
}

/// How many pages pdfium reads in the PDF; errors name `field`.
pub fn page_count(bytes: &[u8], password: Option<&str>, field: &str) -> Result<u32, EngineError> {
    let pdfium = library()?;
    let doc = open(pdfium, bytes, password, field)?;
    Ok(doc.pages().len().max(0) as u32)
}

/// The error of a page whose text pdfium cannot read.
fn unreadable_text(number: u32, field: &str) -> EngineError {
    EngineError::invalid_with("damaged_pdf", field, format!("{field}: the text of page {number} cannot be read"))
}

/// Page `number` (1-based) of `pages`, for reading its text; errors name `field`.
fn text_page<'a>(
    pages: &'a pdfium_render::prelude::PdfPages<'a>,
    number: u32,
    field: &str,
) -> Result<pdfium_render::prelude::PdfPage<'a>, EngineError> {
    let count = pages.len();
    let index = i32::try_from(number).ok().and_then(|n| n.checked_sub(1)).filter(|&i| i >= 0 && i < count);
    let index = index.ok_or_else(|| unreadable_text(number, field))?;
    pages.get(index).map_err(|_| unreadable_text(number, field))
}

/// Which of `pages` (1-based) have text: at least one character that is not white space,
/// drawn or invisible (an earlier OCR layer counts); errors name `field`.
pub fn pages_with_text(
    bytes: &[u8],
    password: Option<&str>,
    pages: &[u32],
    field: &str,
) -> Result<Vec<bool>, EngineError> {
    let pdfium = library()?;
    let doc = open(pdfium, bytes, password, field)?;
    let doc_pages = doc.pages();
    pages
        .iter()
        .map(|&number| {
            let page = text_page(doc_pages, number, field)?;
            let text = page.text().map_err(|_| unreadable_text(number, field))?;
            Ok(text.chars().iter().any(|c| c.unicode_char().is_some_and(|c| !c.is_whitespace())))
        })
        .collect()
}

/// A character on a page as pdfium reads it, in top-down page coordinates (points from the
/// top-left corner of the visible page, y growing downwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Glyph {
    /// The character (pdfium's Unicode mapping; U+FFFD when the font has none).
    pub ch: char,
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
    /// Font size in points, the text matrix's scale applied.
    pub size: f32,
    /// The font is bold (weight 600 or more, or a bold name).
    pub bold: bool,
    /// The font is italic or oblique.
    pub italic: bool,
    /// The font has fixed-pitch glyphs (code).
    pub mono: bool,
    /// pdfium added the character (a space between words, a line break), it is not drawn.
    pub generated: bool,
    /// Its font: an index into [`PageLayout::fonts`].
    pub font: u16,
}

/// A rectangle on a page, top-down coordinates as [`Glyph`]'s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    /// Left edge.
    pub x0: f32,
    /// Top edge.
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
}

/// What layout analysis needs of one page: its size, characters, pictures and drawn lines.
#[derive(Clone, Debug, Default)]
pub struct PageLayout {
    /// 1-based page number.
    pub number: u32,
    /// Visible width in points.
    pub width: f32,
    /// Visible height in points.
    pub height: f32,
    /// The characters in pdfium's order (content order, with the spaces and line breaks it
    /// infers marked `generated`).
    pub glyphs: Vec<Glyph>,
    /// The names of the fonts the characters use (as the PDF names them, subset prefix
    /// removed); at most [`MAX_FONTS`], the rest counted as the last.
    pub fonts: Vec<String>,
    /// Pictures drawn on the page.
    pub images: Vec<Area>,
    /// Straight horizontal and vertical lines drawn on the page: the pieces of stroked paths
    /// (rules, cell borders, the edges of boxes) and thin filled boxes (rules drawn as
    /// boxes), each a zero-thickness [`Area`], at most [`MAX_RULES`]. White lines and
    /// filled backgrounds are not rules.
    pub rules: Vec<Area>,
}

impl PageLayout {
    /// Whether the page has any drawn character (a scan has none).
    pub fn has_text(&self) -> bool {
        self.glyphs.iter().any(|g| !g.generated && !g.ch.is_whitespace())
    }
}

/// Most font names kept for a page.
pub const MAX_FONTS: usize = 1_000;

/// Most rules kept for a page: a drawing of a million strokes is not a table.
pub const MAX_RULES: usize = 50_000;

/// The characters, pictures and paths of `pages` (1-based) of the PDF in `bytes`, each
/// page reported to `progress` as it is read; errors name `field`.
pub fn page_layouts(
    bytes: &[u8],
    password: Option<&str>,
    pages: &[u32],
    field: &str,
    progress: &dyn crate::context::Progress,
) -> Result<Vec<PageLayout>, EngineError> {
    use pdfium_render::prelude::{
        PdfColor, PdfFontWeight, PdfPageObjectCommon, PdfPageObjectType, PdfPageObjectsCommon, PdfPathFillMode,
        PdfPathSegmentType, PdfPathSegments,
    };

    let pdfium = library()?;
    let doc = open(pdfium, bytes, password, field)?;
    let doc_pages = doc.pages();
    let mut layouts = Vec::with_capacity(pages.len());
    for &number in pages {
        crate::cancel::check()?;
        let unreadable = || unreadable_text(number, field);
        let page = text_page(doc_pages, number, field)?;
        let height = page.height().value;
        let width = page.width().value;
        let area = |left: f32, top: f32, right: f32, bottom: f32| Area {
            x0: left.min(right),
            y0: height - top.max(bottom),
            x1: left.max(right),
            y1: height - top.min(bottom),
        };
        let text = page.text().map_err(|_| unreadable())?;
        let chars = text.chars();
        let mut glyphs = Vec::with_capacity(chars.len());
        // Every eighth drawn character's angle: a page whose text runs sideways is turned.
        let mut angles: Vec<f32> = Vec::new();
        // The font of the previous character, reused while the text object does not change.
        let mut font_key: Option<(String, f32)> = None;
        let mut font_style = (false, false, false);
        let mut fonts: Vec<String> = Vec::new();
        let mut font_index = 0u16;
        for ch in chars.iter() {
            let Some(c) = ch.unicode_char() else { continue };
            let generated = ch.is_generated().unwrap_or(false);
            // Loose boxes span the advance width and the font's height: the gaps between them are
            // the gaps a reader sees (tight boxes make a gap beside every period and quote).
            let bounds = ch.loose_bounds().or_else(|_| ch.tight_bounds());
            let Ok(bounds) = bounds else { continue };
            let size = ch.scaled_font_size().value;
            if !generated {
                let name = ch.font_name();
                if font_key.as_ref().is_none_or(|(n, s)| *n != name || *s != size) {
                    let lower = name.to_ascii_lowercase();
                    let heavy = matches!(
                        ch.font_weight(),
                        Some(
                            PdfFontWeight::Weight600
                                | PdfFontWeight::Weight700Bold
                                | PdfFontWeight::Weight800
                                | PdfFontWeight::Weight900
                        )
                    ) || matches!(ch.font_weight(), Some(PdfFontWeight::Custom(w)) if w >= 600);
                    let bold = heavy
                        || ["bold", "black", "heavy", "semibold", "demi"].iter().any(|w| lower.contains(w))
                        // TeX's Computer Modern and EC fonts: CMBX10, SFBX1000 are bold.
                        || ["cmbx", "sfbx", "ecbx", "lmbx", "cmb10"].iter().any(|w| lower.contains(w))
                        // Nimbus and URW fonts name their bold cut "Medi" (NimbusRomNo9L-Medi).
                        || lower.ends_with("-medi")
                        || lower.ends_with("-mediital")
                        || ch.font_is_bold_reenforced();
                    let italic = ch.font_is_italic()
                        || ["italic", "oblique", "cmti", "cmsl", "sfti", "sfsl", "ecti"]
                            .iter()
                            .any(|w| lower.contains(w));
                    let mono = ch.font_is_fixed_pitch()
                        || ["mono", "courier", "consol", "code"].iter().any(|w| lower.contains(w));
                    font_style = (bold, italic, mono);
                    let plain = match name.split_once('+') {
                        Some((tag, rest)) if tag.len() == 6 && tag.bytes().all(|b| b.is_ascii_uppercase()) => rest,
                        _ => name.as_str(),
                    };
                    font_index = match fonts.iter().position(|f| f == plain) {
                        Some(i) => i as u16,
                        None if fonts.len() < MAX_FONTS => {
                            fonts.push(plain.to_string());
                            (fonts.len() - 1) as u16
                        }
                        None => (fonts.len() - 1) as u16,
                    };
                    font_key = Some((name, size));
                }
            }
            let (bold, italic, mono) = if generated { (false, false, false) } else { font_style };
            let a = area(bounds.left().value, bounds.top().value, bounds.right().value, bounds.bottom().value);
            if !generated && glyphs.len() % 8 == 0 {
                angles.extend(ch.angle_degrees().ok());
            }
            let font = if generated { 0 } else { font_index };
            glyphs.push(Glyph {
                ch: c,
                x0: a.x0,
                y0: a.y0,
                x1: a.x1,
                y1: a.y1,
                size,
                bold,
                italic,
                mono,
                generated,
                font,
            });
        }
        let mut images = Vec::new();
        let mut rules = Vec::new();
        for object in page.objects().iter() {
            match object.object_type() {
                PdfPageObjectType::Image => {
                    let Ok(b) = object.bounds() else { continue };
                    images.push(area(b.left().value, b.top().value, b.right().value, b.bottom().value));
                }
                PdfPageObjectType::Path => {
                    let Some(path) = object.as_path_object() else { continue };
                    let visible = |color: Result<PdfColor, _>| {
                        color.is_ok_and(|c| c.alpha() > 0 && (c.red() < 240 || c.green() < 240 || c.blue() < 240))
                    };
                    let stroked = path.is_stroked().unwrap_or(false) && visible(object.stroke_color());
                    let filled =
                        !matches!(path.fill_mode(), Ok(PdfPathFillMode::None) | Err(_)) && visible(object.fill_color());
                    if !stroked && !filled {
                        continue;
                    }
                    let Ok(matrix) = path.matrix() else { continue };
                    // The path's subpaths on the page (y up): a move starts one, a close
                    // returns to its start.
                    let mut subpaths: Vec<(Vec<(f32, f32)>, bool)> = Vec::new();
                    for segment in path.segments().transform(matrix).iter().take(MAX_RULES * 4) {
                        let point = (segment.x().value, segment.y().value);
                        match (segment.segment_type(), subpaths.last_mut()) {
                            (PdfPathSegmentType::MoveTo, _) | (_, None) => subpaths.push((vec![point], false)),
                            (PdfPathSegmentType::LineTo, Some(last)) => last.0.push(point),
                            // A curve is not a rule: it breaks the straight pieces.
                            (_, Some(_)) => subpaths.push((vec![point], false)),
                        }
                        if segment.is_close()
                            && let Some(last) = subpaths.last_mut()
                        {
                            last.1 = true;
                        }
                    }
                    for (points, closed) in subpaths {
                        if rules.len() >= MAX_RULES {
                            break;
                        }
                        if stroked {
                            for pair in points.windows(2) {
                                push_rule(&mut rules, pair[0], pair[1], height);
                            }
                            if closed && points.len() > 2 {
                                push_rule(&mut rules, points[points.len() - 1], points[0], height);
                            }
                        } else {
                            // A filled shape is a rule when it is thin (a line drawn as a box); a
                            // larger one is a background, which says nothing of cells.
                            let xs = points.iter().map(|p| p.0);
                            let ys = points.iter().map(|p| p.1);
                            let (x0, x1) = (xs.clone().fold(f32::MAX, f32::min), xs.fold(f32::MIN, f32::max));
                            let (y0, y1) = (ys.clone().fold(f32::MAX, f32::min), ys.fold(f32::MIN, f32::max));
                            let (w, h) = (x1 - x0, y1 - y0);
                            if w.min(h) <= 3.0 && w.max(h) >= 3.0 {
                                let (ym, xm) = ((y0 + y1) / 2.0, (x0 + x1) / 2.0);
                                if w >= h {
                                    push_rule(&mut rules, (x0, ym), (x1, ym), height);
                                } else {
                                    push_rule(&mut rules, (xm, y0), (xm, y1), height);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        let mut layout = PageLayout { number, width, height, glyphs, fonts, images, rules };
        let sideways =
            |target: f32| angles.iter().filter(|a| (*a - target).abs() < 10.0).count() * 5 > angles.len() * 3;
        // pdfium measures the angle clockwise: 270° runs up the page.
        if sideways(270.0) {
            turn(&mut layout, false);
        } else if sideways(90.0) {
            turn(&mut layout, true);
        }
        layouts.push(layout);
        progress.advance("pages", layouts.len() as u64, pages.len() as u64);
    }
    Ok(layouts)
}

/// Turns a page whose text runs sideways so that it reads left to right: `down` when the
/// text runs down the page, else up. Boxes, pictures and
/// rules turn with it, and the page's width and height swap.
fn turn(layout: &mut PageLayout, down: bool) {
    let (w, h) = (layout.width, layout.height);
    let map = |x0: f32, y0: f32, x1: f32, y1: f32| -> (f32, f32, f32, f32) {
        if down {
            // (x, y) -> (y, w - x)
            (y0, w - x1, y1, w - x0)
        } else {
            // (x, y) -> (h - y, x)
            (h - y1, x0, h - y0, x1)
        }
    };
    for g in &mut layout.glyphs {
        (g.x0, g.y0, g.x1, g.y1) = map(g.x0, g.y0, g.x1, g.y1);
    }
    for a in layout.images.iter_mut().chain(layout.rules.iter_mut()) {
        (a.x0, a.y0, a.x1, a.y1) = map(a.x0, a.y0, a.x1, a.y1);
    }
    (layout.width, layout.height) = (h, w);
}

/// Keeps the piece from `a` to `b` (page space, y up) when it is horizontal or vertical,
/// as a zero-thickness area in top-down coordinates on a page `height` points high.
fn push_rule(rules: &mut Vec<Area>, a: (f32, f32), b: (f32, f32), height: f32) {
    let (dx, dy) = ((a.0 - b.0).abs(), (a.1 - b.1).abs());
    let finite = [a.0, a.1, b.0, b.1].iter().all(|v| v.is_finite());
    if !finite || (dx < 1.0 && dy < 1.0) || (dx > 0.5 && dy > 0.5) {
        return;
    }
    let (x0, x1) = if dx <= 0.5 { ((a.0 + b.0) / 2.0, (a.0 + b.0) / 2.0) } else { (a.0.min(b.0), a.0.max(b.0)) };
    let (y0, y1) = if dy <= 0.5 { ((a.1 + b.1) / 2.0, (a.1 + b.1) / 2.0) } else { (a.1.min(b.1), a.1.max(b.1)) };
    rules.push(Area { x0, y0: height - y1, x1, y1: height - y0 });
}

/// pdfium's page text in one convention: `\n` line ends (it writes CR LF), no NULs or
/// trailing blanks, at most one empty line in a row (glyphs a font cannot map to Unicode
/// come out as blanks), no empty lines around the page.
fn tidy_text(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut blank_run = 0;
    for line in raw.replace("\r\n", "\n").replace('\r', "\n").replace('\0', "").lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(line);
    }
    out
}

/// Opens `bytes` in pdfium once its streams are checked ([`crate::pdf::decoded`]: pdfium
/// inflates them outside the call's counted memory, with no limit of its own).
/// Opens `bytes` in pdfium, after the stream bounds are checked; errors name `field`.
pub(crate) fn open<'a>(
    pdfium: &'a Pdfium,
    bytes: &'a [u8],
    password: Option<&str>,
    field: &str,
) -> Result<PdfDocument<'a>, EngineError> {
    crate::pdf::decoded::check_bytes(
        bytes,
        password,
        &crate::context::Limits::default(),
        crate::pdf::decoded::For::Rendering,
    )
    .map_err(|e| e.under(field))?;
    pdfium.load_pdf_from_byte_slice(bytes, password).map_err(|e| open_error(&e, field, password))
}

fn open_error(e: &PdfiumError, field: &str, password: Option<&str>) -> EngineError {
    match e {
        PdfiumError::PdfiumLibraryInternalError(PdfiumInternalError::PasswordError) => match password {
            None | Some("") => EngineError::invalid_with(
                "password_required",
                format!("{field}/password"),
                format!("{field}: the PDF is encrypted: give its password in `password` beside the file's data"),
            ),
            Some(_) => EngineError::invalid_with(
                "wrong_password",
                format!("{field}/password"),
                format!("{field}: the password does not open this PDF"),
            ),
        },
        other => EngineError::invalid_with(
            "damaged_pdf",
            field,
            format!("{field}: the renderer cannot read this PDF ({other:?})"),
        ),
    }
}

/// Where libpdfium is to be loaded from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LibrarySource {
    /// This file.
    File(PathBuf),
    /// The system's library search path (`libpdfium.so` via the dynamic loader).
    System,
}

/// The library's file name on this platform (`libpdfium.so` on Linux).
fn library_file_name() -> OsString {
    Pdfium::pdfium_platform_library_name()
}

/// Finds libpdfium: `PAPERCHAIN_PDFIUM` (the file or its folder), else
/// `$PAPERCHAIN_TOOLS/pdfium/`, else `$HOME/.cache/paperchain/tools/pdfium/`, else
/// `../lib/paperchain/` beside the program (where the app's packages put it), else the
/// system library. `var` reads the environment (a parameter so tests need not touch it).
/// A `PAPERCHAIN_PDFIUM` that names nothing is an error rather than a silent fallback.
pub fn locate(var: impl Fn(&str) -> Option<OsString>) -> Result<LibrarySource, String> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(given) = set(PDFIUM_ENV) {
        let file = if given.is_dir() { given.join(library_file_name()) } else { given.clone() };
        return if file.is_file() {
            Ok(LibrarySource::File(file))
        } else {
            Err(format!("{PDFIUM_ENV} is {} but there is no {} there", given.display(), library_file_name().display()))
        };
    }
    let tools = set("PAPERCHAIN_TOOLS").into_iter().chain(set("HOME").map(|h| h.join(".cache/paperchain/tools")));
    let packaged = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(|prefix| prefix.join("lib/paperchain").join(library_file_name())));
    Ok(tools
        .map(|dir| dir.join("pdfium").join(library_file_name()))
        .chain(packaged)
        .find(|file| file.is_file())
        .map_or(LibrarySource::System, LibrarySource::File))
}

/// Loads the library from `source`. Only [`library`] keeps the result: pdfium-render
/// binds one library per process.
pub fn bind(source: &LibrarySource) -> Result<Pdfium, String> {
    let bindings = match source {
        LibrarySource::File(path) => Pdfium::bind_to_library(path).map_err(|e| format!("{}: {e:?}", path.display())),
        LibrarySource::System => Pdfium::bind_to_system_library()
            .map_err(|e| format!("no {} on the system library path ({e:?})", library_file_name().display())),
    }?;
    Ok(Pdfium::new(bindings))
}

/// The process's pdfium, bound on first use; a 503 `unavailable` when it is missing.
pub fn library() -> Result<&'static Pdfium, EngineError> {
    static PDFIUM: OnceLock<Result<Pdfium, String>> = OnceLock::new();
    let load = || locate(|name| std::env::var_os(name)).and_then(|source| bind(&source));
    crate::native::load_once(&PDFIUM, load, "libpdfium could not be loaded; rendering routes answer 503", unavailable)
}

/// Checks that libpdfium is there, loading it off the async threads the first time.
pub async fn ensure_library() -> Result<(), EngineError> {
    crate::native::ensure(library).await
}

/// The error of a rendering route when libpdfium cannot be loaded.
pub fn unavailable(why: &str) -> EngineError {
    crate::native::unavailable(format!(
        "the PDF renderer (libpdfium) is not available on this server ({why}); the operator must run `cargo xtask \
         setup` or set {PDFIUM_ENV} to the library's path, then restart the server"
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::error::ErrorKind;

    /// A fake environment with only these variables.
    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let vars: Vec<(String, OsString)> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    #[test]
    fn page_text_is_tidied_to_one_line_convention() {
        assert_eq!(
            tidy_text("\r\n  \r\nTitle  \r\nline\0 two\r\n \r\n\r\n \r\nnext\r\n\r\n"),
            "Title\nline two\n\nnext"
        );
        assert_eq!(tidy_text(" \n \n"), "");
    }

    #[test]
    fn a_missing_library_named_by_the_variable_is_a_clear_503() {
        let why = locate(env(&[(PDFIUM_ENV, "/nonexistent/libpdfium.so")])).unwrap_err();
        assert!(why.contains("/nonexistent/libpdfium.so"), "{why}");
        // Binding a file that is not there fails without binding anything process-wide.
        let missing = LibrarySource::File(PathBuf::from("/nonexistent/libpdfium.so"));
        assert!(bind(&missing).is_err());
        let e = unavailable(&why);
        assert_eq!(e.code, "unavailable");
        assert!(matches!(e.kind, ErrorKind::Unavailable { .. }));
        assert!(e.message.contains("cargo xtask setup") && e.message.contains(PDFIUM_ENV), "{}", e.message);
    }

    #[test]
    fn the_finder_looks_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools");
        let home = dir.path().join("home");
        let in_home = home.join(".cache/paperchain/tools/pdfium");
        std::fs::create_dir_all(&in_home).unwrap();
        std::fs::write(in_home.join(library_file_name()), b"").unwrap();
        let (tools_s, home_s) = (tools.to_str().unwrap(), home.to_str().unwrap());
        // Nothing under the tools folder: the home folder's copy.
        assert_eq!(
            locate(env(&[("PAPERCHAIN_TOOLS", tools_s), ("HOME", home_s)])).unwrap(),
            LibrarySource::File(in_home.join(library_file_name()))
        );
        std::fs::create_dir_all(tools.join("pdfium")).unwrap();
        std::fs::write(tools.join("pdfium").join(library_file_name()), b"").unwrap();
        assert_eq!(
            locate(env(&[("PAPERCHAIN_TOOLS", tools_s), ("HOME", home_s)])).unwrap(),
            LibrarySource::File(tools.join("pdfium").join(library_file_name()))
        );
        // The variable may name the folder.
        assert_eq!(
            locate(env(&[(PDFIUM_ENV, in_home.to_str().unwrap()), ("PAPERCHAIN_TOOLS", tools_s)])).unwrap(),
            LibrarySource::File(in_home.join(library_file_name()))
        );
        assert_eq!(locate(env(&[("HOME", "/nonexistent")])).unwrap(), LibrarySource::System);
    }

    #[test]
    fn a_long_strip_is_refused_by_its_side() {
        // 14,400 × 110 pt at 400 dpi: 80,000 × 612 px, under the area cap but too long.
        let plan = PagePlan { number: 1, width_pt: 14_400.0, height_pt: 110.0 };
        let e = check_page_pixels(&plan, 400, "/dpi").unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("output_too_large", Some("/dpi")));
        assert!(e.message.contains("at most 324 dpi"), "{}", e.message);
        assert!(check_page_pixels(&plan, 324, "/dpi").is_ok());
    }

    #[test]
    fn dpi_is_checked_and_pixel_sizes_round() {
        assert_eq!(check_dpi(None, "/dpi").unwrap(), 150);
        assert_eq!(check_dpi(Some(36), "/dpi").unwrap(), 36);
        for bad in [20, 700, 0, -5] {
            let e = check_dpi(Some(bad), "/dpi").unwrap_err();
            assert_eq!(e.field.as_deref(), Some("/dpi"));
            assert_eq!(e.code, "invalid_input");
        }
        assert_eq!(pixel_size(612.0, 792.0, 150), (1275, 1650));
        assert_eq!(pixel_size(595.276, 841.89, 72), (595, 842));
        assert_eq!(pixel_size(0.1, f64::NAN, 36), (1, 1));
        let huge = PagePlan { number: 2, width_pt: 14_400.0, height_pt: 14_400.0 };
        let e = check_page_pixels(&huge, 36, "/dpi").unwrap_err();
        assert_eq!(
            (e.kind, e.code.as_ref(), e.field.as_deref()),
            (ErrorKind::TooLarge, "output_too_large", Some("/dpi"))
        );
        assert!(e.message.contains("page 2") && e.message.contains("any allowed dpi"), "{}", e.message);
        let a3 = PagePlan { number: 1, width_pt: 842.0, height_pt: 1191.0 };
        let e = check_page_pixels(&a3, 600, "/dpi").unwrap_err();
        assert!(e.message.contains("at most 508 dpi"), "{}", e.message);
        assert!(check_page_pixels(&a3, 508, "/dpi").is_ok());
        assert!(check_page_pixels(&a3, 509, "/dpi").is_err());
    }

    #[test]
    fn prices_follow_the_rendering_rule() {
        assert_eq!(rendering_price(1).units(), 3_500);
        assert_eq!(rendering_price(10).units(), 8_000);
    }

    #[test]
    fn bgr_rows_lose_their_padding() {
        // 2×2 pixels, rows padded from 6 to 8 bytes.
        let raw = [1, 2, 3, 4, 5, 6, 0, 0, 7, 8, 9, 10, 11, 12, 0, 0];
        assert_eq!(bgr_rows_to_rgb(&raw, 2, 2).unwrap(), vec![3, 2, 1, 6, 5, 4, 9, 8, 7, 12, 11, 10]);
        assert!(bgr_rows_to_rgb(&raw[..4], 2, 2).is_none());
    }

    /// Rendered pages: the pixel size follows the visible size and the dpi; colours are RGB.
    #[test]
    fn renders_a_page_at_the_size_its_dpi_gives() {
        let bytes = sample_pdf(&[(612.0, 792.0, 0), (842.0, 595.0, 90)]);
        let mut seen = Vec::new();
        render_pages(&bytes, None, &[1, 2], 100, "/file", "/dpi", |page| {
            // Page 1's red square is at the lower left: the bottom-left pixel is red.
            if page.number == 1 {
                let at = ((page.height as usize - 1) * page.width as usize) * 3;
                assert_eq!(&page.rgb[at..at + 3], &[255, 0, 0]);
            }
            seen.push((page.number, page.width, page.height, page.rgb.len()));
            Ok(())
        })
        .unwrap();
        // Page 2 is turned a quarter: seen 595 wide and 842 high.
        assert_eq!(seen, vec![(1, 850, 1100, 850 * 1100 * 3), (2, 826, 1169, 826 * 1169 * 3)]);
    }

    /// A corpus page with /Rotate 90: rendered as seen, width = round(width_pt / 72 × dpi).
    #[test]
    fn renders_a_corpus_page_as_seen() {
        let bytes = std::fs::read("/work/shared/corpus/pdf/sample-files/habibi-rotated.pdf").unwrap();
        for dpi in [72, 150] {
            let mut sizes = Vec::new();
            render_pages(&bytes, None, &[1], dpi, "/file", "/dpi", |page| {
                sizes.push((page.width, page.height, page.width_pt.round(), page.height_pt.round()));
                Ok(())
            })
            .unwrap();
            let (w, h) = pixel_size(841.89, 595.276, dpi);
            assert_eq!(sizes, vec![(w, h, 842.0, 595.0)]);
        }
    }

    /// A PDF whose pages have these (width, height, rotate), each with a red square at
    /// its lower left and the text `Page N`.
    pub(crate) fn sample_pdf(pages: &[(f64, f64, i64)]) -> Vec<u8> {
        use lopdf::{Document, Object, Stream, dictionary};
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let mut kids = Vec::new();
        for (i, &(w, h, rotate)) in pages.iter().enumerate() {
            let content = format!("1 0 0 rg 0 0 100 100 re f BT /F1 24 Tf 150 150 Td (Page {}) Tj ET", i + 1);
            let contents = doc.add_object(Stream::new(dictionary! {}, content.into_bytes()));
            let page = doc.add_object(dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "MediaBox" => vec![0.into(), 0.into(), Object::Real(w as f32), Object::Real(h as f32)],
                "Rotate" => rotate,
                "Contents" => contents,
                "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
            });
            kids.push(page.into());
        }
        let count = kids.len() as i64;
        doc.objects
            .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }));
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }
}
