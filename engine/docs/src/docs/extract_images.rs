//! `POST /v1/pdf/extract-images`: every image drawn on the chosen pages as a file of its
//! own, with where it is drawn.
//!
//! pdfium finds the images (page content, form XObjects nested up to 16 deep, inline
//! images; not the appearances of annotations) and decodes the ones that are not passed
//! through. A JPEG (`DCTDecode` alone) or JPEG 2000
//! (`JPXDecode` alone) image is written with the file's own bytes, unchanged; every other
//! image (Flate, LZW, run-length, CCITT, JBIG2, any colour space and bit depth) is decoded
//! to 8-bit samples and written as PNG. An image drawn several times (a logo on every page)
//! is written once; `images.json` lists every place it is drawn. A passed-through JPEG is
//! the image as stored: a `/Decode` inversion or a soft mask the PDF applies to it is not.
//! An image that cannot be decoded is listed under `unreadable` and the others are written.
//!
//! What this module must not do: write an image twice, decode an image past
//! [`MAX_IMAGE_PIXELS`] or answer more than [`pdf::MAX_OUTPUT_BYTES`] of files.

use std::collections::{HashMap, HashSet};

use pdfium_render::prelude::{PdfBitmapFormat, PdfPage, PdfPageImageObject, PdfPageObject, PdfPageObjectsCommon};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::pdf::pdfium::{self, RENDERING_PRICE_RULE, RenderSource, rendering_price};
use crate::pdf::{self, IDENTITY, Matrix};
use crate::price::Price;

/// Most pixels one image may have to be decoded: 100 MP (400 MB as RGBA while encoded).
pub const MAX_IMAGE_PIXELS: u64 = 100_000_000;
/// Most distinct images one call writes.
const MAX_IMAGES: usize = 10_000;
/// Deepest nesting of form XObjects followed.
const MAX_FORM_DEPTH: usize = 16;
/// Most page objects looked at on one page, forms' contents included.
const MAX_OBJECTS_PER_PAGE: usize = 500_000;
/// Most stored image data read, over every time an image is drawn.
const MAX_HASHED_BYTES: u64 = 4 << 30;
/// Page objects looked at between two checks that the call still runs.
const CHECK_EVERY: usize = 1_000;
/// Most places listed for one image (the count goes on past it).
const MAX_PLACEMENTS: usize = 1_000;

/// Request of `/v1/pdf/extract-images`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractImagesInput {
    /// The PDF.
    pub file: FileInput,
    /// Pages to take images from (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// `original` keeps JPEG and JPEG 2000 images as they are in the file and writes the rest as PNG; `png` writes every image as PNG.
    #[serde(default)]
    pub format: ImagesFormat,
    /// Images narrower than this many pixels are left out (icons, rules, spacers).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub min_width: Option<u32>,
    /// Images shorter than this many pixels are left out.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100000))]
    pub min_height: Option<u32>,
    /// How to deliver the images: `file` is one ZIP (the images and `images.json`), `base64` and `url` a list.
    #[serde(default)]
    pub output: OutputMode,
}

/// How the images are written.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ImagesFormat {
    /// JPEG and JPEG 2000 as stored, the others as PNG.
    #[default]
    Original,
    /// Every image decoded and written as PNG.
    Png,
}

/// `images.json`: what was found and where.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ImagesManifest {
    /// The pages looked at.
    pub pages: Vec<u32>,
    /// Distinct images written.
    pub count: u64,
    /// Images left out for being smaller than `min_width` or `min_height` (each counted once).
    pub skipped_small: u64,
    /// The images, in the order first drawn.
    pub images: Vec<ImageEntry>,
    /// Images that could not be decoded or are too large to, where first drawn (the others are still written).
    pub unreadable: Vec<Unreadable>,
}

/// An image left out because it could not be decoded.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Unreadable {
    /// 1-based page number.
    pub page: u32,
    /// Width in pixels, as the PDF states it.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Why.
    pub reason: String,
}

/// One image written.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ImageEntry {
    /// Its file name in the result.
    pub file: String,
    /// `jpeg`, `jp2` or `png`.
    pub format: String,
    /// True when the file holds the PDF's own bytes of the image, unchanged.
    pub passed_through: bool,
    /// The PDF's filters on the image, in order (`["DCTDecode"]`, `["FlateDecode"]`, …).
    pub filters: Vec<String>,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Size of the file written, in bytes.
    pub bytes: u64,
    /// Lower-case hex SHA-256 of the file written.
    pub sha256: String,
    /// Times it is drawn on the pages looked at.
    pub drawn: u64,
    /// Where it is drawn (the first 1,000 places).
    pub placements: Vec<Placement>,
}

/// Where an image is drawn.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Placement {
    /// 1-based page number.
    pub page: u32,
    /// The drawn image's bounding box in the page's own coordinates (points, as the PDF
    /// states them; the media box's lower left is usually 0, 0): `[x0, y0, x1, y1]`.
    pub box_pt: [f64; 4],
    /// Resolution as drawn along the image's width: its pixels per inch.
    pub dpi_x: f64,
    /// Resolution as drawn along the image's height.
    pub dpi_y: f64,
}

/// A checked extract-images call.
pub struct ExtractImages {
    bytes: Vec<u8>,
    password: Option<String>,
    filename: String,
    page_count: u32,
    pages: Vec<u32>,
    format: ImagesFormat,
    min: (u32, u32),
    output: OutputMode,
}

/// The route.
pub struct ExtractImagesRoute;

impl Route for ExtractImagesRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::ZIP];
    const HEAVY: bool = true;
    type Input = ExtractImagesInput;
    type Prepared = ExtractImages;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/extract-images",
        operation: "extract_pdf_images",
        family: Family::Docs,
        summary: "Every image of a PDF as a file of its own",
        description: "Writes every image drawn on the chosen pages (forms and inline images included) as a file: \
            JPEG and JPEG 2000 images with the PDF's own bytes, unchanged, the others as PNG (`format: \"png\"` writes all as PNG). \
            An image drawn several times is written once. `images.json` lists each image's pixel size, filters and every \
            place it is drawn (page, box in points, resolution). output=file answers one ZIP; base64 and url answer a JSON list \
            (url: 24 h links).",
        base_price: Price::micros(3_000),
        price_rule: RENDERING_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Files,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: ExtractImagesInput, ctx: &Context) -> Result<ExtractImages, EngineError> {
        let min_width = check_min(input.min_width, "/min_width")?;
        let min_height = check_min(input.min_height, "/min_height")?;
        let selection = PageSelection::parse_or_all(input.pages.as_deref(), "/pages")?;
        // Found before the file is read, so a server without the decoder charges nothing.
        pdfium::ensure_library().await?;
        let RenderSource { pdf: source, bytes, password } = RenderSource::load(&input.file, "/file", ctx).await?;
        let pages = selection.resolve_set(source.page_count, "/pages")?;
        Ok(ExtractImages {
            bytes,
            password,
            filename: source.filename,
            page_count: source.page_count,
            pages,
            format: input.format,
            min: (min_width, min_height),
            output: input.output,
        })
    }

    fn quote(call: &ExtractImages) -> Price {
        rendering_price(call.pages.len() as u32)
    }

    async fn run(call: ExtractImages, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let pdfium = pdfium::library()?;
            let doc = pdfium::open(pdfium, &call.bytes, call.password.as_deref(), "/file")?;
            let mut found = Found::new(&call);
            let total = call.pages.len() as u64;
            for (done, &number) in call.pages.iter().enumerate() {
                // A call stopped (timed out, its caller gone) reads no further page.
                crate::cancel::check()?;
                let unreadable = || {
                    EngineError::invalid_with(
                        "damaged_pdf",
                        "/file",
                        format!("/file: the renderer cannot read page {number}"),
                    )
                };
                let index = i32::try_from(number - 1).map_err(|_| unreadable())?;
                let page = doc.pages().get(index).map_err(|_| unreadable())?;
                found.page(&page, number)?;
                progress.advance("pages", done as u64 + 1, total);
            }
            found.finish()
        })
        .await
    }
}

fn check_min(value: Option<u32>, field: &str) -> Result<u32, EngineError> {
    match value {
        None => Ok(0),
        Some(v) if (1..=100_000).contains(&v) => Ok(v),
        Some(v) => Err(EngineError::invalid(field, format!("{field}: must be from 1 to 100000 pixels, not {v}"))),
    }
}

fn matrix_of(object: &PdfPageObject) -> Matrix {
    match object.matrix() {
        Ok(m) => [m.a(), m.b(), m.c(), m.d(), m.e(), m.f()].map(f64::from),
        Err(_) => IDENTITY,
    }
}

/// The box the unit square takes under `m`: `[x0, y0, x1, y1]`, rounded to 0.01 pt.
fn unit_box(m: &Matrix) -> [f64; 4] {
    let corners = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
        .map(|(x, y)| (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]));
    let round = |v: f64| (v * 100.0).round() / 100.0;
    let xs = corners.map(|c| c.0);
    let ys = corners.map(|c| c.1);
    [
        round(xs.iter().copied().fold(f64::INFINITY, f64::min)),
        round(ys.iter().copied().fold(f64::INFINITY, f64::min)),
        round(xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        round(ys.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
    ]
}

/// What identifies an image across pages: its stored bytes, filters, colour space and
/// bits a pixel, and size.
type Key = ([u8; 32], Vec<String>, String, u32, u32);

/// The images found so far.
struct Found<'c> {
    call: &'c ExtractImages,
    width: usize,
    index: HashMap<Key, usize>,
    small: HashSet<Key>,
    /// Images that could not be decoded (tried once).
    failed: HashSet<Key>,
    entries: Vec<ImageEntry>,
    unreadable: Vec<Unreadable>,
    files: Vec<OutFile>,
    written: usize,
    hashed: u64,
    /// Images drawn whose data pdfium did not hand over, each its own.
    blind: u64,
    /// Images first drawn on each page so far, for their file names.
    first_drawn: HashMap<u32, usize>,
}

impl<'c> Found<'c> {
    fn new(call: &'c ExtractImages) -> Found<'c> {
        Found {
            call,
            width: call.page_count.to_string().len(),
            index: HashMap::new(),
            small: HashSet::new(),
            failed: HashSet::new(),
            entries: Vec::new(),
            unreadable: Vec::new(),
            files: Vec::new(),
            written: 0,
            hashed: 0,
            blind: 0,
            first_drawn: HashMap::new(),
        }
    }

    /// Every image drawn on `page`.
    fn page(&mut self, page: &PdfPage, number: u32) -> Result<(), EngineError> {
        let mut seen = 0usize;
        for object in page.objects().iter() {
            self.object(&object, &IDENTITY, 0, number, &mut seen)?;
        }
        Ok(())
    }

    /// `object`, drawn inside forms that map to the page by `outer`, and what it holds.
    fn object(
        &mut self,
        object: &PdfPageObject,
        outer: &Matrix,
        depth: usize,
        page: u32,
        seen: &mut usize,
    ) -> Result<(), EngineError> {
        *seen += 1;
        if seen.is_multiple_of(CHECK_EVERY) {
            crate::cancel::check()?;
        }
        if *seen > MAX_OBJECTS_PER_PAGE {
            return Err(EngineError::too_large(
                "too_complex",
                Some("/file".into()),
                format!("/file: page {page} draws more than {MAX_OBJECTS_PER_PAGE} objects"),
            ));
        }
        let matrix = pdf::concat(&matrix_of(object), outer);
        if let Some(form) = object.as_x_object_form_object() {
            if depth < MAX_FORM_DEPTH {
                for child in form.iter() {
                    self.object(&child, &matrix, depth + 1, page, seen)?;
                }
            }
        } else if let Some(image) = object.as_image_object() {
            self.image(image, &matrix, page)?;
        }
        Ok(())
    }

    fn image(&mut self, image: &PdfPageImageObject, matrix: &Matrix, page: u32) -> Result<(), EngineError> {
        let (Ok(width), Ok(height)) = (image.width(), image.height()) else { return Ok(()) };
        let (width, height) = (width.max(0) as u32, height.max(0) as u32);
        if width == 0 || height == 0 {
            return Ok(());
        }
        let raw = image.get_raw_image_data().unwrap_or_default();
        self.hashed += raw.len() as u64;
        if self.hashed > MAX_HASHED_BYTES {
            return Err(EngineError::too_large(
                "too_complex",
                Some("/pages".into()),
                format!(
                    "/pages: the pages draw more than {} GiB of image data in all; choose fewer pages",
                    MAX_HASHED_BYTES >> 30
                ),
            ));
        }
        let filters: Vec<String> = image.filters().iter().map(|f| f.name().to_string()).collect();
        let colour = format!("{:?}/{}", image.color_space(), image.bits_per_pixel().unwrap_or(0));
        // Image data pdfium cannot hand over is never taken for another image's.
        let digest: [u8; 32] = if raw.is_empty() {
            let mut unique = [0u8; 32];
            self.blind += 1;
            unique[..8].copy_from_slice(&self.blind.to_le_bytes());
            unique[31] = 1;
            unique
        } else {
            Sha256::digest(&raw).into()
        };
        let key: Key = (digest, filters.clone(), colour, width, height);
        let box_pt = unit_box(matrix);
        // The resolution along the image's own axes, so a turned image reads right too.
        let dpi = |pixels: u32, dx: f64, dy: f64| {
            let inches = dx.hypot(dy) / 72.0;
            if inches > 0.0 { (pixels as f64 / inches * 10.0).round() / 10.0 } else { 0.0 }
        };
        let placement = Placement {
            page,
            box_pt,
            dpi_x: dpi(width, matrix[0], matrix[1]),
            dpi_y: dpi(height, matrix[2], matrix[3]),
        };
        if let Some(&i) = self.index.get(&key) {
            let entry = &mut self.entries[i];
            entry.drawn += 1;
            if entry.placements.len() < MAX_PLACEMENTS {
                entry.placements.push(placement);
            }
            return Ok(());
        }
        if self.failed.contains(&key) {
            return Ok(());
        }
        if width < self.call.min.0 || height < self.call.min.1 {
            self.small.insert(key);
            return Ok(());
        }
        if self.entries.len() >= MAX_IMAGES {
            return Err(EngineError::too_large(
                "too_many_images",
                Some("/pages".into()),
                format!("/pages: the pages draw more than {MAX_IMAGES} distinct images; choose fewer pages"),
            ));
        }
        let kept = match self.call.format {
            ImagesFormat::Original => stored_image(&raw, &filters),
            ImagesFormat::Png => None,
        };
        drop(raw);
        let (bytes, ext, format, media_type, passed_through) = match kept {
            Some((bytes, Stored::Jpeg)) => (bytes, "jpg", "jpeg", "image/jpeg", true),
            Some((bytes, Stored::Jp2)) => (bytes, "jp2", "jp2", "image/jp2", true),
            Some((bytes, Stored::Codestream)) => (bytes, "j2c", "j2c", "image/j2c", true),
            None => match png(image, width, height) {
                Ok(bytes) => (bytes, "png", "png", "image/png", false),
                // One image that cannot be decoded does not cost the others.
                Err(reason) => {
                    self.failed.insert(key);
                    self.unreadable.push(Unreadable { page, width, height, reason });
                    return Ok(());
                }
            },
        };
        self.written += bytes.len();
        if self.written > pdf::MAX_OUTPUT_BYTES {
            return Err(EngineError::too_large(
                "output_too_large",
                Some("/pages".into()),
                format!(
                    "/pages: the images are larger than {} MiB together; choose fewer pages",
                    pdf::MAX_OUTPUT_BYTES / (1024 * 1024)
                ),
            ));
        }
        let on_page = self.first_drawn.entry(page).or_insert(0);
        *on_page += 1;
        let suffix = format!("page-{:0w$}-image-{}", page, on_page, w = self.width);
        let file =
            OutFile { filename: derived_name(&self.call.filename, &suffix, ext), media_type: media_type.into(), bytes };
        self.index.insert(key, self.entries.len());
        self.entries.push(ImageEntry {
            file: file.filename.clone(),
            format: format.into(),
            passed_through,
            filters,
            width,
            height,
            bytes: file.bytes.len() as u64,
            sha256: file.sha256(),
            drawn: 1,
            placements: vec![placement],
        });
        self.files.push(file);
        Ok(())
    }

    fn finish(self) -> Result<Reply<NoJson>, EngineError> {
        let manifest = ImagesManifest {
            pages: self.call.pages.clone(),
            count: self.entries.len() as u64,
            skipped_small: self.small.len() as u64,
            images: self.entries,
            unreadable: self.unreadable,
        };
        let mut files = self.files;
        files.push(OutFile::json("images.json", &manifest)?);
        let zip = derived_name(&self.call.filename, "images", "zip");
        Ok(Reply::Files(FileSet::several(files, self.call.output, zip)))
    }
}

/// An image format a file can hold as the PDF stores it.
enum Stored {
    Jpeg,
    /// A JPEG 2000 file (JP2).
    Jp2,
    /// A bare JPEG 2000 codestream.
    Codestream,
}

/// A filter's full name (inline images use abbreviations).
fn full_name(filter: &str) -> &str {
    match filter {
        "AHx" => "ASCIIHexDecode",
        "A85" => "ASCII85Decode",
        "Fl" => "FlateDecode",
        "LZW" => "LZWDecode",
        "RL" => "RunLengthDecode",
        "DCT" => "DCTDecode",
        other => other,
    }
}

/// The image's JPEG or JPEG 2000 bytes as stored, when its last filter is `DCTDecode` or
/// `JPXDecode` and the ones before it (ASCII, Flate, LZW, run-length: a text or compression
/// layer around the image) decode; None otherwise.
fn stored_image(raw: &[u8], filters: &[String]) -> Option<(Vec<u8>, Stored)> {
    let (last, layers) = filters.split_last()?;
    let jpeg = match full_name(last) {
        "DCTDecode" => true,
        "JPXDecode" => false,
        _ => return None,
    };
    let mut data = raw.to_vec();
    for layer in layers {
        let name = full_name(layer);
        if !matches!(name, "ASCIIHexDecode" | "ASCII85Decode" | "FlateDecode" | "LZWDecode" | "RunLengthDecode") {
            return None;
        }
        let stream = lopdf::Stream::new(lopdf::dictionary! { "Filter" => lopdf::Object::Name(name.into()) }, data);
        data = stream.decompressed_content_with_limit(pdf::MAX_OUTPUT_BYTES).ok()?;
    }
    let kind = if jpeg {
        data.starts_with(&[0xFF, 0xD8]).then_some(Stored::Jpeg)?
    } else if data.starts_with(&[0, 0, 0, 0x0C, b'j', b'P']) {
        Stored::Jp2
    } else {
        data.starts_with(&[0xFF, 0x4F]).then_some(Stored::Codestream)?
    };
    Some((data, kind))
}

/// The image decoded by pdfium (filters undone, colour converted to gray or RGB, with
/// alpha where pdfium gives it) as PNG; why not, when it cannot be.
fn png(image: &PdfPageImageObject, width: u32, height: u32) -> Result<Vec<u8>, String> {
    use image::ImageEncoder as _;
    let too_large = |w: u64, h: u64| format!("{w} × {h} pixels, more than {MAX_IMAGE_PIXELS} can be decoded");
    if width as u64 * height as u64 > MAX_IMAGE_PIXELS {
        return Err(too_large(width as u64, height as u64));
    }
    let bitmap = image.get_raw_bitmap().map_err(|e| format!("pdfium cannot decode it ({e:?})"))?;
    let (w, h) = (bitmap.width().max(0) as usize, bitmap.height().max(0) as usize);
    // The image data may say another size than the dictionary did.
    if w as u64 * h as u64 > MAX_IMAGE_PIXELS {
        return Err(too_large(w as u64, h as u64));
    }
    let format = bitmap.format().map_err(|e| format!("pdfium cannot decode it ({e:?})"))?;
    let raw = bitmap.as_raw_bytes();
    drop(bitmap);
    if w == 0 || h == 0 || raw.len() < h {
        return Err("pdfium decodes it to nothing".into());
    }
    let stride = raw.len() / h;
    let (channels, color) = match format {
        PdfBitmapFormat::Gray => (1, image::ExtendedColorType::L8),
        PdfBitmapFormat::BGR => (3, image::ExtendedColorType::Rgb8),
        PdfBitmapFormat::BGRx => (3, image::ExtendedColorType::Rgb8),
        PdfBitmapFormat::BGRA => (4, image::ExtendedColorType::Rgba8),
    };
    let source_channels = match format {
        PdfBitmapFormat::Gray => 1,
        PdfBitmapFormat::BGR => 3,
        PdfBitmapFormat::BGRx | PdfBitmapFormat::BGRA => 4,
    };
    if stride < w * source_channels {
        return Err("pdfium decodes it to a short bitmap".into());
    }
    let mut samples = Vec::with_capacity(w * h * channels);
    for row in raw.chunks_exact(stride).take(h) {
        for px in row[..w * source_channels].chunks_exact(source_channels) {
            match channels {
                1 => samples.push(px[0]),
                3 => samples.extend_from_slice(&[px[2], px[1], px[0]]),
                _ => samples.extend_from_slice(&[px[2], px[1], px[0], px[3]]),
            }
        }
    }
    drop(raw);
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut out,
        image::codecs::png::CompressionType::Default,
        image::codecs::png::FilterType::Adaptive,
    )
    .write_image(&samples, w as u32, h as u32, color)
    .map_err(|e| format!("it cannot be written as PNG ({e})"))?;
    Ok(out)
}
