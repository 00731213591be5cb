//! `POST /v1/pdf/rasterize`: every page rendered to an image and the PDF rebuilt from the
//! images alone, so no text layer, form, link, script or metadata survives.

use lopdf::{Document, Object, Stream, dictionary};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, Progress, blocking};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::pdfium::{self, PagePlan, RENDERING_PRICE_RULE, RenderSource, RgbPage, rendering_price};
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::pdf::{self, Rect};
use crate::price::Price;

/// JPEG quality of the page images. Rendered pages are mostly flat colour and text, where
/// JPEG at 85 shows no visible ringing at 150 dpi, and it makes files 3 to 10 times
/// smaller than Flate-compressed RGB (scans and photos gain most); the output is an
/// image of the page, not an archival copy, so the small loss is the better trade.
pub const JPEG_QUALITY: u8 = 85;

/// Fields of `/v1/pdf/rasterize` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RasterizeOptions {
    /// Resolution of the page images in dots per inch, 36 to 600; 150 when omitted.
    #[serde(default)]
    #[schemars(range(min = 36, max = 600))]
    pub dpi: Option<i64>,
}

/// A checked rasterize call.
pub struct RasterizeCall {
    bytes: Vec<u8>,
    password: Option<String>,
    filename: String,
    pages: Vec<PagePlan>,
    dpi: u32,
    output: OutputMode,
}

/// The route.
pub struct RasterizeRoute;

impl Route for RasterizeRoute {
    const HEAVY: bool = true;
    type Input = PdfJob<RasterizeOptions>;
    type Prepared = RasterizeCall;
    type Output = NoJson;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<RasterizeOptions>, ctx: &Context) -> Result<RasterizeCall, EngineError> {
        let dpi = pdfium::check_dpi(input.options.dpi, "/dpi")?;
        // Found before the file is read, so a server without the renderer charges nothing.
        pdfium::ensure_library().await?;
        let RenderSource { pdf: source, bytes, password } = RenderSource::load(&input.file, "/file", ctx).await?;
        let pages = page_plans(&source.doc, dpi)?;
        Ok(RasterizeCall { bytes, password, filename: source.filename, pages, dpi, output: input.output })
    }

    fn quote(call: &RasterizeCall) -> Price {
        rendering_price(call.pages.len() as u32)
    }

    async fn run(call: RasterizeCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let bytes = rasterize(&call.bytes, call.password.as_deref(), &call.pages, call.dpi, &*progress)?;
            let name = derived_name(&call.filename, "rasterized", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), call.output)))
        })
        .await
    }
}

/// The operation, as a pipeline step (the document so far is written out for pdfium).
pub struct Rasterize;

impl Transform for Rasterize {
    type Options = RasterizeOptions;
    type Plan = (Vec<PagePlan>, u32);

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "rasterized";

    fn check(options: &RasterizeOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        pdfium::check_dpi(options.dpi, "/dpi")?;
        // Found before anything runs, so a server without the renderer charges nothing.
        pdfium::library()?;
        Ok(pages)
    }

    fn plan(options: RasterizeOptions, doc: &Document, _: &Limits) -> Result<Self::Plan, EngineError> {
        let dpi = pdfium::check_dpi(options.dpi, "/dpi")?;
        Ok((page_plans(doc, dpi)?, dpi))
    }

    fn apply((pages, dpi): Self::Plan, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        let bytes = pdf::save(&mut doc)?;
        Ok(Pdf::Bytes(rasterize(&bytes, None, &pages, dpi, &crate::context::NoProgress)?))
    }

    fn price(pages_in: u32, _: u32) -> Price {
        rendering_price(pages_in)
    }
}

/// Every page's size, each checked against the pixel caps at `dpi`.
fn page_plans(doc: &Document, dpi: u32) -> Result<Vec<PagePlan>, EngineError> {
    let numbers: Vec<u32> = (1..=pdf::page_count(doc)).collect();
    let pages = pdfium::plan_pages(doc, &numbers);
    for plan in &pages {
        pdfium::check_page_pixels(plan, dpi, "/dpi")?;
    }
    Ok(pages)
}

/// Renders `pages` of the PDF in `bytes` and builds the image-only PDF.
fn rasterize(
    bytes: &[u8],
    password: Option<&str>,
    pages: &[PagePlan],
    dpi: u32,
    progress: &dyn Progress,
) -> Result<Vec<u8>, EngineError> {
    let numbers: Vec<u32> = pages.iter().map(|p| p.number).collect();
    let total = numbers.len() as u64;
    let mut builder = ImagePdf::new();
    let mut written = 0usize;
    pdfium::render_pages(bytes, password, &numbers, dpi, "/file", "/dpi", |page| {
        let jpeg = jpeg(&page)?;
        written += jpeg.len();
        if written > pdf::MAX_OUTPUT_BYTES {
            return Err(pdf::output_too_large().at("/dpi"));
        }
        builder.add_page(&page, jpeg);
        progress.advance("pages", builder.pages.len() as u64, total);
        Ok(())
    })?;
    builder.finish()
}

/// The route's description, shared by the route and the pipeline step.
const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/rasterize",
    operation: "flatten_pdf_to_image_only",
    family: Family::Docs,
    summary: "Render pages to images and rebuild as one image-only PDF",
    description: "Renders every page as it is seen (crop box and rotation applied, annotations and form fields drawn) \
        at 36 to 600 dpi (150 by default) and rebuilds the PDF from those images alone: one JPEG per page, at the \
        page's visible size. No text layer, form, link, bookmark, attachment, script or metadata survives. \
        output=url gives a 24 h link.",
    base_price: Price::micros(3_000),
    price_rule: RENDERING_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
    holds_secrets: false,
    accepts: crate::catalog::accepts::PDF,
};

/// The rendered page as JPEG at [`JPEG_QUALITY`].
pub(crate) fn jpeg(page: &RgbPage) -> Result<Vec<u8>, EngineError> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
        .encode(&page.rgb, page.width, page.height, image::ExtendedColorType::Rgb8)
        .map_err(|e| EngineError::internal(format!("encoding page {}: {e}", page.number)))?;
    Ok(out)
}

/// A new PDF whose pages are each one image drawn over the whole page.
struct ImagePdf {
    doc: Document,
    pages_id: lopdf::ObjectId,
    pages: Vec<Object>,
}

impl ImagePdf {
    fn new() -> ImagePdf {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        ImagePdf { doc, pages_id, pages: Vec::new() }
    }

    /// A page of the rendered page's visible size showing `jpeg` (its pixels) full page.
    fn add_page(&mut self, page: &RgbPage, jpeg: Vec<u8>) {
        let drawn = image_page(&mut self.doc, page, jpeg);
        let page_id = self.doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => self.pages_id,
            "MediaBox" => drawn.media_box.to_object(),
            "Resources" => drawn.resources,
            "Contents" => drawn.contents,
        });
        self.pages.push(page_id.into());
    }

    fn finish(mut self) -> Result<Vec<u8>, EngineError> {
        let count = self.pages.len() as i64;
        self.doc.objects.insert(
            self.pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => self.pages, "Count" => count }),
        );
        let catalog = self.doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => self.pages_id });
        self.doc.trailer.set("Root", catalog);
        pdf::save(&mut self.doc)
    }
}

/// What a page showing one picture full page needs: added to `doc` by [`image_page`].
pub(crate) struct ImagePage {
    /// The page's resources (the picture as `/Im0`).
    pub resources: lopdf::Dictionary,
    /// Its content stream.
    pub contents: lopdf::ObjectId,
    /// Its media box: the rendered page's visible size, origin at (0, 0).
    pub media_box: Rect,
}

/// Adds `jpeg` (the pixels of `page`) and a content stream drawing it over a page of the
/// rendered page's visible size.
pub(crate) fn image_page(doc: &mut Document, page: &RgbPage, jpeg: Vec<u8>) -> ImagePage {
    let image = Stream::new(
        dictionary! {
            "Type" => "XObject",
            "Subtype" => "Image",
            "Width" => page.width as i64,
            "Height" => page.height as i64,
            "ColorSpace" => "DeviceRGB",
            "BitsPerComponent" => 8,
            "Filter" => "DCTDecode",
        },
        jpeg,
    )
    .with_compression(false);
    let image_id = doc.add_object(image);
    let (w, h) = (page.width_pt, page.height_pt);
    // The page's origin is (0, 0) and its size the visible size, so the image maps to it exactly.
    let content = format!("q {} 0 0 {} 0 0 cm /Im0 Do Q", number(w), number(h));
    let contents = doc.add_object(Stream::new(dictionary! {}, content.into_bytes()));
    ImagePage {
        resources: dictionary! { "XObject" => dictionary! { "Im0" => image_id } },
        contents,
        media_box: Rect { x0: 0.0, y0: 0.0, x1: w, y1: h },
    }
}

/// A number for a content stream: as few digits as exact to 1/1000 pt needs.
fn number(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use base64::Engine as _;
    use serde_json::{Value, json};

    use super::*;
    use crate::pdf::pdfium::tests::sample_pdf;
    use crate::pdf::testing::call;

    fn file(pdf: &[u8], name: &str) -> Value {
        json!({ "data": base64::engine::general_purpose::STANDARD.encode(pdf), "filename": name })
    }

    async fn rasterize(body: Value) -> Result<OutFile, EngineError> {
        match call::<RasterizeRoute>(&body).await? {
            Reply::Files(set) => set.into_single_file(),
            Reply::Json(_) => panic!("rasterize answered JSON"),
        }
    }

    /// Runs a poppler or qpdf tool on `pdf`; its standard output, and whether it succeeded.
    fn tool(program: &str, args: &[&str], pdf: &[u8]) -> (String, bool) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.pdf");
        std::fs::write(&path, pdf).unwrap();
        let out = Command::new(program)
            .args(args)
            .arg(&path)
            .args(if program == "pdftotext" { &["-"][..] } else { &[] })
            .output()
            .unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.success())
    }

    /// Page sizes as pdfinfo prints them: (width, height) with /Rotate applied.
    fn visible_sizes(pdf: &[u8], pages: u32) -> Vec<(f64, f64)> {
        let (info, ok) = tool("pdfinfo", &["-f", "1", "-l", &pages.to_string()], pdf);
        assert!(ok, "{info}");
        let mut sizes = Vec::new();
        let mut rotations = Vec::new();
        for line in info.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["Page", _, "size:", w, "x", h, ..] = words[..] {
                sizes.push((w.parse::<f64>().unwrap(), h.parse::<f64>().unwrap()));
            }
            if let ["Page", _, "rot:", r] = words[..] {
                rotations.push(r.parse::<i64>().unwrap());
            }
        }
        sizes.iter().zip(rotations).map(|(&(w, h), r)| if r % 180 == 90 { (h, w) } else { (w, h) }).collect()
    }

    fn check_image_only(input: &[u8], out: &[u8], pages: u32) {
        let (text, ok) = tool("pdftotext", &[], out);
        assert!(ok);
        assert!(text.trim().is_empty(), "text survived: {text:?}");
        let (check, ok) = tool("qpdf", &["--check"], out);
        assert!(ok, "{check}");
        let doc = Document::load_mem(out).unwrap();
        assert_eq!(doc.get_pages().len() as u32, pages);
        let (want, got) = (visible_sizes(input, pages), visible_sizes(out, pages));
        assert_eq!(want.len(), got.len());
        for (w, g) in want.iter().zip(&got) {
            assert!((w.0 - g.0).abs() < 0.01 && (w.1 - g.1).abs() < 0.01, "{want:?} != {got:?}");
        }
        // Nothing but pages and their images: no outline, forms, names, metadata or annotations.
        let catalog = doc.catalog().unwrap();
        assert_eq!(
            catalog.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            vec![b"Type".to_vec(), b"Pages".to_vec()]
        );
        assert!(doc.trailer.get(b"Info").is_err());
        for id in doc.page_iter() {
            let page = doc.get_dictionary(id).unwrap();
            assert!(page.get(b"Annots").is_err() && page.get(b"Rotate").is_err());
        }
    }

    #[tokio::test]
    async fn rebuilds_pages_as_images_only() {
        let input = sample_pdf(&[(612.0, 792.0, 0), (842.0, 595.0, 90), (300.5, 200.25, 180)]);
        let out = rasterize(json!({ "file": file(&input, "deck.pdf"), "dpi": 72 })).await.unwrap();
        assert_eq!(out.filename, "deck-rasterized.pdf");
        assert_eq!(out.media_type, "application/pdf");
        check_image_only(&input, &out.bytes, 3);
        // Each page draws one DCT image of the pixel size the dpi gives.
        let doc = Document::load_mem(&out.bytes).unwrap();
        let images: Vec<(i64, i64)> = doc
            .objects
            .values()
            .filter_map(|o| o.as_stream().ok())
            .filter(|s| s.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image"))
            .map(|s| {
                assert_eq!(s.dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
                (s.dict.get(b"Width").unwrap().as_i64().unwrap(), s.dict.get(b"Height").unwrap().as_i64().unwrap())
            })
            .collect();
        let mut images = images;
        images.sort();
        assert_eq!(images, vec![(301, 200), (595, 842), (612, 792)]);
    }

    /// A corpus file with text, a crop box, links, a form, an outline: none of them survive.
    #[tokio::test]
    async fn corpus_files_lose_text_forms_and_links() {
        for name in [
            "sample-files/libreoffice-form.pdf",
            "sample-files/pdflatex-outline.pdf",
            "sample-files/habibi-rotated.pdf",
        ] {
            let input = std::fs::read(format!("/work/shared/corpus/pdf/{name}")).unwrap();
            let pages = Document::load_mem(&input).unwrap().get_pages().len() as u32;
            let (text, _) = tool("pdftotext", &[], &input);
            assert!(!text.trim().is_empty(), "{name} has text to lose");
            let out = rasterize(json!({ "file": file(&input, name), "dpi": 50 })).await.unwrap();
            check_image_only(&input, &out.bytes, pages);
        }
    }

    #[tokio::test]
    async fn every_mistake_names_its_field() {
        let pdf = sample_pdf(&[(612.0, 792.0, 0)]);
        let f = file(&pdf, "a.pdf");
        let cases = [
            (json!({ "file": f, "dpi": 20 }), "/dpi", "invalid_input"),
            (json!({ "file": f, "dpi": 700 }), "/dpi", "invalid_input"),
            (json!({ "file": f, "dpi": "high" }), "/dpi", "invalid_input"),
            (json!({ "file": f, "pages": "1" }), "/pages", "unknown_field"),
            (json!({ "file": { "data": "aGVsbG8=" } }), "/file", "not_a_pdf"),
            (json!({}), "/file", "invalid_input"),
        ];
        for (body, field, code) in cases {
            let e = rasterize(body.clone()).await.err().unwrap_or_else(|| panic!("{body} was accepted"));
            assert_eq!((e.field.as_deref(), e.code.as_ref()), (Some(field), code), "{body}: {}", e.message);
        }
        let huge = sample_pdf(&[(612.0, 792.0, 0), (14_400.0, 14_400.0, 0)]);
        let e = rasterize(json!({ "file": file(&huge, "a.pdf"), "dpi": 36 })).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("output_too_large", Some("/dpi")));
    }

    #[tokio::test]
    async fn quotes_every_page() {
        let pdf = sample_pdf(&[(612.0, 792.0, 0); 4]);
        let input: PdfJob<RasterizeOptions> =
            crate::catalog::parse_body(&serde_json::to_vec(&json!({ "file": file(&pdf, "a.pdf") })).unwrap()).unwrap();
        let prepared = RasterizeRoute::prepare(input, &Context::new()).await.unwrap();
        assert_eq!(RasterizeRoute::quote(&prepared).units(), 3_000 + 4 * 500);
    }

    #[test]
    fn numbers_are_short_and_exact() {
        assert_eq!(number(612.0), "612");
        assert_eq!(number(595.2760009765625), "595.276");
        assert_eq!(number(200.25), "200.25");
    }
}
