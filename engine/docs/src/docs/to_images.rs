//! `POST /v1/pdf/to-images`: one PNG or JPEG per page, rendered by pdfium.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, ZipBuilder, derived_name};
use crate::pages::PageSelection;
use crate::pdf;
use crate::pdf::pdfium::{self, PagePlan, RENDERING_PRICE_RULE, RenderSource, RgbPage, rendering_price};
use crate::price::Price;

/// JPEG quality when none is given: small files without visible blocking around text.
pub const DEFAULT_QUALITY: u8 = 85;

/// Request of `/v1/pdf/to-images`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend(
    "if" = { "required": ["format"], "properties": { "format": { "const": "png" } } },
    "then" = { "properties": { "quality": { "type": "null" } } }
))]
pub struct ToImagesInput {
    /// The PDF.
    pub file: FileInput,
    /// Image format: `png` (lossless, best for text and line art) or `jpeg` (smaller, for photos and scans).
    pub format: ImageFormat,
    /// Resolution in dots per inch, 36 to 600; 150 when omitted. A page may have at most 50 megapixels.
    #[serde(default)]
    #[schemars(range(min = 36, max = 600))]
    pub dpi: Option<i64>,
    /// Pages to render (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// JPEG quality, 1 (smallest) to 100 (best); 85 when omitted. Only with `format: "jpeg"`.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub quality: Option<i64>,
    /// How to deliver the result: `file` is one ZIP of the images, `base64` and `url` a list.
    #[serde(default)]
    pub output: OutputMode,
}

/// The image format of the pages.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    /// PNG, lossless RGB.
    Png,
    /// JPEG (baseline), RGB.
    Jpeg,
}

impl ImageFormat {
    fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
        }
    }

    fn media_type(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// A checked to-images call.
pub struct ToImages {
    bytes: Vec<u8>,
    password: Option<String>,
    filename: String,
    page_count: u32,
    pages: Vec<PagePlan>,
    dpi: u32,
    format: ImageFormat,
    quality: u8,
    output: OutputMode,
}

/// The route.
pub struct ToImagesRoute;

impl Route for ToImagesRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::ZIP];
    const HEAVY: bool = true;
    type Input = ToImagesInput;
    type Prepared = ToImages;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/to-images",
        operation: "convert_pdf_to_images",
        family: Family::Docs,
        summary: "One PNG or JPEG per page",
        description: "Renders every page, or a page selection, to a PNG or JPEG image at 36 to 600 dpi (150 by default), \
            as the page is seen: crop box and rotation applied, annotations and form fields drawn. Images are named \
            `<name>-page-<n>.png` (or .jpg). output=file answers one ZIP; base64 and url answer a JSON list (url: 24 h links).",
        base_price: Price::micros(3_000),
        price_rule: RENDERING_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Files,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: ToImagesInput, ctx: &Context) -> Result<ToImages, EngineError> {
        let dpi = pdfium::check_dpi(input.dpi, "/dpi")?;
        let quality = match (input.format, input.quality) {
            (ImageFormat::Png, Some(_)) => {
                return Err(EngineError::invalid_with(
                    "option_not_applicable",
                    "/quality",
                    "/quality: applies to JPEG only; PNG is lossless (drop `quality` or use `format: \"jpeg\"`)",
                ));
            }
            (ImageFormat::Jpeg, Some(q)) if !(1..=100).contains(&q) => {
                return Err(EngineError::invalid("/quality", format!("/quality: must be from 1 to 100, not {q}")));
            }
            (_, Some(q)) => q as u8,
            (_, None) => DEFAULT_QUALITY,
        };
        let selection = PageSelection::parse_or_all(input.pages.as_deref(), "/pages")?;
        // Found before the file is read, so a server without the renderer charges nothing.
        pdfium::ensure_library().await?;
        let RenderSource { pdf: source, bytes, password } = RenderSource::load(&input.file, "/file", ctx).await?;
        let numbers: Vec<u32> = source.selected_pages(&selection, "/pages")?.into_iter().map(|(n, _)| n).collect();
        let pages = pdfium::plan_pages(&source.doc, &numbers);
        for plan in &pages {
            pdfium::check_page_pixels(plan, dpi, "/dpi")?;
        }
        Ok(ToImages {
            bytes,
            password,
            filename: source.filename,
            page_count: source.page_count,
            pages,
            dpi,
            format: input.format,
            quality,
            output: input.output,
        })
    }

    fn quote(call: &ToImages) -> Price {
        rendering_price(call.pages.len() as u32)
    }

    async fn run(call: ToImages, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let numbers: Vec<u32> = call.pages.iter().map(|p| p.number).collect();
            let total = numbers.len() as u64;
            let width = call.page_count.to_string().len();
            let zip_name = derived_name(&call.filename, "images", "zip");
            // One ZIP (`output: "file"`) is written as the pages render: each image goes
            // into it and is dropped, so the archive and one page are all that is held.
            let mut sink = match call.output {
                OutputMode::File => Pages::Zip(Box::default()),
                _ => Pages::List(Vec::with_capacity(numbers.len())),
            };
            let (mut written, mut done) = (0usize, 0u64);
            pdfium::render_pages(&call.bytes, call.password.as_deref(), &numbers, call.dpi, "/file", "/dpi", |page| {
                let (bytes, page_number) = (encode(&page, call.format, call.quality)?, page.number);
                drop(page);
                written += bytes.len();
                if written > pdf::MAX_OUTPUT_BYTES {
                    return Err(too_much_output());
                }
                let filename =
                    derived_name(&call.filename, &format!("page-{:0width$}", page_number), call.format.extension());
                let media_type = call.format.media_type();
                match &mut sink {
                    Pages::Zip(zip) => zip.add(&filename, media_type, &bytes)?,
                    Pages::List(files) => files.push(OutFile { filename, media_type: media_type.into(), bytes }),
                }
                done += 1;
                progress.advance("pages", done, total);
                Ok(())
            })?;
            Ok(Reply::Files(match sink {
                Pages::Zip(zip) => FileSet::single(
                    OutFile { filename: zip_name, media_type: media::ZIP.into(), bytes: zip.finish()? },
                    OutputMode::File,
                ),
                Pages::List(files) => FileSet::several(files, call.output, zip_name),
            }))
        })
        .await
    }
}

/// Where rendered pages go: into one ZIP as they come, or a list of files.
enum Pages {
    Zip(Box<ZipBuilder>),
    List(Vec<OutFile>),
}

fn too_much_output() -> EngineError {
    EngineError::too_large(
        "output_too_large",
        Some("/dpi".into()),
        format!(
            "/dpi: the images would be larger than {} MiB together; ask for fewer pages, a lower dpi or JPEG",
            pdf::MAX_OUTPUT_BYTES / (1024 * 1024)
        ),
    )
}

/// Encodes a rendered page as PNG or JPEG.
pub fn encode(page: &RgbPage, format: ImageFormat, quality: u8) -> Result<Vec<u8>, EngineError> {
    use image::ImageEncoder as _;
    let mut out = Vec::new();
    let failed = |e: image::ImageError| EngineError::internal(format!("encoding page {}: {e}", page.number));
    match format {
        ImageFormat::Png => image::codecs::png::PngEncoder::new_with_quality(
            &mut out,
            image::codecs::png::CompressionType::Default,
            image::codecs::png::FilterType::Adaptive,
        )
        .write_image(&page.rgb, page.width, page.height, image::ExtendedColorType::Rgb8)
        .map_err(failed)?,
        ImageFormat::Jpeg => image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
            .encode(&page.rgb, page.width, page.height, image::ExtendedColorType::Rgb8)
            .map_err(failed)?,
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use serde_json::{Value, json};

    use super::*;
    use crate::error::ErrorKind;
    use crate::pdf::pdfium::tests::sample_pdf;
    use crate::pdf::testing::call;

    fn file(pdf: &[u8], name: &str) -> Value {
        json!({ "data": base64::engine::general_purpose::STANDARD.encode(pdf), "filename": name })
    }

    /// The images as a list (`output: "base64"`), checked against the one ZIP that
    /// `output: "file"` writes as the pages render: the same names and bytes, in order.
    async fn images(body: Value) -> Result<Vec<OutFile>, EngineError> {
        let mut listed = body.clone();
        listed["output"] = json!("base64");
        let files = match call::<ToImagesRoute>(&listed).await? {
            Reply::Files(set) => {
                assert_eq!(set.bundle.as_deref().map(|b| b.ends_with("-images.zip")), Some(true));
                set.files
            }
            Reply::Json(_) => panic!("to-images answered JSON"),
        };
        let Reply::Files(set) = call::<ToImagesRoute>(&body).await?;
        let zip = set.into_single_file().unwrap();
        assert!(zip.filename.ends_with("-images.zip"), "{}", zip.filename);
        assert_eq!(zip.media_type, "application/zip");
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip.bytes)).unwrap();
        assert_eq!(archive.len(), files.len());
        for (i, file) in files.iter().enumerate() {
            let mut entry = archive.by_index(i).unwrap();
            assert_eq!(entry.name().unwrap(), file.filename);
            assert_eq!(entry.compression(), zip::CompressionMethod::Stored, "images are stored, not deflated again");
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
            assert!(bytes == file.bytes, "{} differs in the ZIP", file.filename);
        }
        Ok(files)
    }

    fn decoded(file: &OutFile, format: image::ImageFormat) -> image::DynamicImage {
        image::load_from_memory_with_format(&file.bytes, format).expect("the image decodes")
    }

    #[tokio::test]
    async fn renders_selected_pages_as_named_pngs() {
        let pages: Vec<(f64, f64, i64)> =
            (0..12).map(|i| if i == 10 { (842.0, 595.0, 90) } else { (612.0, 792.0, 0) }).collect();
        let pdf = sample_pdf(&pages);
        let files = images(json!({ "file": file(&pdf, "report.pdf"), "format": "png", "pages": "11,2", "dpi": 72 }))
            .await
            .unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.filename.as_str()).collect();
        // Ascending, padded to the width of the page count (12 pages: two digits).
        assert_eq!(names, vec!["report-page-02.png", "report-page-11.png"]);
        assert!(files.iter().all(|f| f.media_type == "image/png"));
        let first = decoded(&files[0], image::ImageFormat::Png);
        assert_eq!((first.width(), first.height()), (612, 792));
        let rotated = decoded(&files[1], image::ImageFormat::Png);
        assert_eq!((rotated.width(), rotated.height()), (595, 842));
        let red = first.to_rgb8().get_pixel(2, 789).0;
        assert_eq!(red, [255, 0, 0]);
    }

    #[tokio::test]
    async fn renders_jpeg_at_the_default_dpi_and_quality_changes_size() {
        let pdf = std::fs::read("/work/shared/corpus/pdf/sample-files/pdflatex-4-pages.pdf").unwrap();
        let body = |quality: i64| json!({ "file": file(&pdf, "paper.pdf"), "format": "jpeg", "pages": "1", "quality": quality });
        let low = images(body(10)).await.unwrap();
        let high = images(body(95)).await.unwrap();
        assert_eq!(low[0].filename, "paper-page-1.jpg");
        assert_eq!(low[0].media_type, "image/jpeg");
        let image = decoded(&low[0], image::ImageFormat::Jpeg);
        // A4 at 150 dpi.
        assert_eq!((image.width(), image.height()), pdfium::pixel_size(595.276, 841.89, 150));
        assert!(low[0].bytes.len() < high[0].bytes.len());
        let every = images(json!({ "file": file(&pdf, "paper.pdf"), "format": "jpeg", "dpi": 36 })).await.unwrap();
        assert_eq!(every.len(), 4);
    }

    #[tokio::test]
    async fn every_mistake_names_its_field() {
        let pdf = sample_pdf(&[(612.0, 792.0, 0), (612.0, 792.0, 0)]);
        let f = file(&pdf, "a.pdf");
        let cases = [
            (json!({ "file": f, "format": "png", "dpi": 20 }), "/dpi", "invalid_input"),
            (json!({ "file": f, "format": "png", "dpi": 700 }), "/dpi", "invalid_input"),
            (json!({ "file": f, "format": "png", "quality": 80 }), "/quality", "option_not_applicable"),
            (json!({ "file": f, "format": "jpeg", "quality": 0 }), "/quality", "invalid_input"),
            (json!({ "file": f, "format": "jpeg", "quality": 101 }), "/quality", "invalid_input"),
            (json!({ "file": f, "format": "gif" }), "/format", "invalid_input"),
            (json!({ "file": f }), "/format", "invalid_input"),
            (json!({ "file": f, "format": "png", "pages": "3" }), "/pages", "page_out_of_range"),
            (json!({ "file": f, "format": "png", "pages": "x" }), "/pages", "invalid_pages"),
            (json!({ "file": f, "format": "png", "colour": "red" }), "/colour", "unknown_field"),
            (json!({ "file": { "data": "aGVsbG8=" }, "format": "png" }), "/file", "not_a_pdf"),
        ];
        for (body, field, code) in cases {
            let e = images(body.clone()).await.err().unwrap_or_else(|| panic!("{body} was accepted"));
            assert_eq!((e.field.as_deref(), e.code.as_ref()), (Some(field), code), "{body}: {}", e.message);
        }
    }

    #[tokio::test]
    async fn a_page_too_large_for_the_dpi_is_refused_at_dpi() {
        let pdf = sample_pdf(&[(612.0, 792.0, 0), (5000.0, 5000.0, 0)]);
        let e = images(json!({ "file": file(&pdf, "a.pdf"), "format": "png", "dpi": 600 })).await.unwrap_err();
        assert_eq!(
            (e.kind, e.code.as_ref(), e.field.as_deref()),
            (ErrorKind::TooLarge, "output_too_large", Some("/dpi"))
        );
        assert!(e.message.contains("page 2"), "{}", e.message);
        // Page 1 alone is fine at that dpi.
        let ok = images(json!({ "file": file(&pdf, "a.pdf"), "format": "png", "dpi": 600, "pages": "1" })).await;
        assert_eq!(ok.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn quotes_the_pages_selected() {
        let pdf = sample_pdf(&[(612.0, 792.0, 0); 5]);
        let input: ToImagesInput = crate::catalog::parse_body(
            &serde_json::to_vec(&json!({ "file": file(&pdf, "a.pdf"), "format": "png", "pages": "2-4" })).unwrap(),
        )
        .unwrap();
        let prepared = ToImagesRoute::prepare(input, &Context::new()).await.unwrap();
        assert_eq!(ToImagesRoute::quote(&prepared).units(), 3_000 + 3 * 500);
    }

    #[tokio::test]
    async fn opens_encrypted_files_with_their_password() {
        let pdf = std::fs::read("/work/shared/corpus/pdf/qpdf/enc-XI-R6,V5,U=view,O=master.pdf").unwrap();
        let mut f = file(&pdf, "secret.pdf");
        let e = images(json!({ "file": f, "format": "png", "pages": "1" })).await.unwrap_err();
        assert_eq!(e.code, "password_required");
        f["password"] = json!("view");
        let files = images(json!({ "file": f, "format": "png", "pages": "1", "dpi": 36 })).await.unwrap();
        assert_eq!(files.len(), 1);
        decoded(&files[0], image::ImageFormat::Png);
    }
}
