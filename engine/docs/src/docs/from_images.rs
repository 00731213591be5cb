//! `POST /v1/pdf/from-images`: 1 to 30 PNG, JPEG or WebP images to one PDF, a page each.
//!
//! The format is told by [`crate::images`] and the JPEG and PNG headers are read by
//! [`crate::images::headers`]; this file checks, decodes and places the images.

use std::io::Cursor;

use image::{DynamicImage, ImageDecoder, ImageError, ImageFormat, ImageReader};
use lopdf::{Dictionary, Document, Object, Stream, dictionary};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::images::headers::{jpeg_info, png_density};
use crate::images::{Kind, sniff};
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::pdfium::{RENDERING_PRICE_RULE, rendering_price};
use crate::pdf::{self, MAX_OUTPUT_BYTES};
use crate::price::Price;

/// Most images one call takes.
pub const MAX_IMAGES: usize = 30;
/// Widest (and tallest) image accepted, in pixels.
pub const MAX_IMAGE_SIDE: u32 = 20_000;
/// Most memory one image may take to decode.
const MAX_DECODE_BYTES: u64 = 256 * 1024 * 1024;
/// Pixel density assumed when an image does not state one.
pub const DEFAULT_DPI: f64 = 96.0;
/// Largest margin accepted, in points.
const MAX_MARGIN_PT: f64 = 200.0;
/// Margin of A4 and Letter pages when none is given, in points (half an inch).
const DEFAULT_PAPER_MARGIN_PT: f64 = 36.0;
/// Largest page side PDF viewers draw (Acrobat's implementation limit, 200 inches).
const MAX_PAGE_SIDE_PT: f64 = 14_400.0;
/// The fallback file name of the first image, which tells a named first image from an unnamed one.
const FIRST_FALLBACK_NAME: &str = "image-1";

/// Request of `/v1/pdf/from-images`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FromImagesInput {
    /// The images, 1 to 30, PNG, JPEG or WebP, one page each in this order.
    #[schemars(length(min = 1, max = 30))]
    pub images: Vec<FileInput>,
    /// Page size: `image` (the image's own size at its stated pixel density, 96 dpi when it states none; the default), `A4` or `Letter` (turned landscape for landscape images).
    #[serde(default)]
    pub page_size: PageSize,
    /// White margin around each image, in points (0 to 200); 0 for `image` pages and 36 (half an inch) for A4 and Letter when omitted.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = MAX_MARGIN_PT))]
    pub margin_pt: Option<f64>,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// How big each page is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
pub enum PageSize {
    /// The image's size at its pixel density, plus the margins.
    #[default]
    #[serde(rename = "image", alias = "Image")]
    Image,
    /// 210 × 297 mm.
    #[serde(rename = "A4", alias = "a4")]
    A4,
    /// 8.5 × 11 inches.
    #[serde(rename = "Letter", alias = "letter")]
    Letter,
}

/// How an image's pixels go into the PDF.
enum Pixels {
    /// A JPEG's own bytes (DCTDecode), never re-encoded.
    Jpeg { bytes: Vec<u8>, components: u8, adobe: bool },
    /// Decoded pixels, Flate-compressed: 8-bit grey or RGB, and an 8-bit alpha mask when
    /// some pixel is not opaque.
    Raster { data: Box<Stream>, grey: bool, alpha: Option<Box<Stream>> },
}

/// One checked image.
struct Picture {
    /// Stored width and height in pixels (before the orientation is applied).
    width: u32,
    height: u32,
    /// EXIF orientation 1-8 still to apply when placing (JPEG only; decoded images are
    /// turned upright when decoded).
    orientation: u8,
    /// Horizontal and vertical pixel density of the stored pixels, in dots per inch.
    dpi: (f64, f64),
    pixels: Pixels,
}

/// A checked from-images call.
pub struct FromImages {
    pictures: Vec<Picture>,
    page_size: PageSize,
    margin: f64,
    filename: String,
    output: OutputMode,
}

/// The route.
pub struct FromImagesRoute;

impl Route for FromImagesRoute {
    const HEAVY: bool = true;
    type Input = FromImagesInput;
    type Prepared = FromImages;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/from-images",
        operation: "convert_images_to_pdf",
        family: Family::Docs,
        summary: "1-30 images to one PDF",
        description: "Puts 1 to 30 PNG, JPEG or WebP images into one PDF, one page per image, in order. \
            JPEGs are embedded as they are (no re-encoding, no quality loss) and their EXIF orientation is honoured; \
            PNG and WebP keep their transparency. Pages are the image's size at its stated pixel density (96 dpi when \
            it states none), or A4 or Letter with the image fitted inside the margins, centred. output=url gives a 24 h link.",
        base_price: Price::micros(3_000),
        price_rule: RENDERING_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::IMAGES,
    };

    async fn prepare(input: FromImagesInput, ctx: &Context) -> Result<FromImages, EngineError> {
        let count = input.images.len();
        if count == 0 || count > MAX_IMAGES {
            return Err(EngineError::invalid(
                "/images",
                format!("/images: give 1 to {MAX_IMAGES} images, not {count}"),
            ));
        }
        let margin = match input.margin_pt {
            Some(m) if !(0.0..=MAX_MARGIN_PT).contains(&m) => {
                return Err(EngineError::invalid(
                    "/margin_pt",
                    format!("/margin_pt: the margin must be 0 to {MAX_MARGIN_PT} points, not {m}"),
                ));
            }
            Some(m) => m,
            None if input.page_size == PageSize::Image => 0.0,
            None => DEFAULT_PAPER_MARGIN_PT,
        };
        let mut pictures = Vec::with_capacity(count);
        let mut filename = String::from("images.pdf");
        let mut total_bytes = 0usize;
        for (i, image) in input.images.iter().enumerate() {
            let field = format!("/images/{i}");
            let file = image.resolve(ctx, &field, &format!("image-{}", i + 1)).await?;
            if i == 0 && file.filename != FIRST_FALLBACK_NAME {
                filename = derived_name(&file.filename, "", "pdf");
            }
            let picture = blocking(move || load_picture(file.bytes, &field)).await?;
            total_bytes = total_bytes.saturating_add(picture.stored_len());
            if total_bytes > MAX_OUTPUT_BYTES {
                return Err(pdf::output_too_large());
            }
            pictures.push(picture);
        }
        Ok(FromImages { pictures, page_size: input.page_size, margin, filename, output: input.output })
    }

    fn quote(call: &FromImages) -> Price {
        rendering_price(call.pictures.len() as u32)
    }

    async fn run(call: FromImages, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let FromImages { pictures, page_size, margin, filename, output } = call;
            let bytes = build_pdf(pictures, page_size, margin)?;
            Ok(Reply::Files(FileSet::single(OutFile::pdf(filename, bytes), output)))
        })
        .await
    }
}

impl Picture {
    /// Bytes the picture will take in the PDF, near enough to refuse hopeless calls early.
    fn stored_len(&self) -> usize {
        match &self.pixels {
            Pixels::Jpeg { bytes, .. } => bytes.len(),
            Pixels::Raster { data, alpha, .. } => data.content.len() + alpha.as_ref().map_or(0, |a| a.content.len()),
        }
    }

    /// Width and height as seen, in points, at the image's pixel density.
    fn natural_size(&self) -> (f64, f64) {
        let w = f64::from(self.width) * 72.0 / self.dpi.0;
        let h = f64::from(self.height) * 72.0 / self.dpi.1;
        if self.orientation >= 5 { (h, w) } else { (w, h) }
    }
}

/// Checks and loads one image; errors name `field` (`/images/<i>`).
fn load_picture(bytes: Vec<u8>, field: &str) -> Result<Picture, EngineError> {
    let kind = sniff(&bytes).map_err(|what| {
        EngineError::invalid(field, format!("{field}: this is {what}, not a PNG, JPEG or WebP image"))
    })?;
    match kind {
        Kind::Jpeg => load_jpeg(bytes, field),
        Kind::Png | Kind::WebP => load_raster(&bytes, kind, field),
    }
}

fn corrupt(field: &str, what: &str, detail: impl std::fmt::Display) -> EngineError {
    EngineError::invalid(field, format!("{field}: the {what} image cannot be read ({detail})"))
}

fn too_big(field: &str, detail: impl std::fmt::Display) -> EngineError {
    EngineError::too_large(
        "file_too_large",
        Some(field.to_string()),
        format!(
            "{field}: the image is too large ({detail}); images may be at most {MAX_IMAGE_SIDE} pixels a side and take at most {} MiB decoded",
            MAX_DECODE_BYTES / (1024 * 1024)
        ),
    )
}

fn load_jpeg(bytes: Vec<u8>, field: &str) -> Result<Picture, EngineError> {
    let info = jpeg_info(&bytes).map_err(|e| corrupt(field, "JPEG", e))?;
    if info.width > MAX_IMAGE_SIDE || info.height > MAX_IMAGE_SIDE {
        return Err(too_big(field, format!("{} × {} pixels", info.width, info.height)));
    }
    let dpi = info.density.unwrap_or((DEFAULT_DPI, DEFAULT_DPI));
    Ok(Picture {
        width: info.width,
        height: info.height,
        orientation: info.orientation,
        dpi,
        pixels: Pixels::Jpeg { bytes, components: info.components, adobe: info.adobe },
    })
}

fn load_raster(bytes: &[u8], kind: Kind, field: &str) -> Result<Picture, EngineError> {
    let (format, what) = match kind {
        Kind::WebP => (ImageFormat::WebP, "WebP"),
        _ => (ImageFormat::Png, "PNG"),
    };
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_IMAGE_SIDE);
    limits.max_image_height = Some(MAX_IMAGE_SIDE);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    let image_error = |e: ImageError| match e {
        ImageError::Limits(e) => too_big(field, e),
        other => corrupt(field, what, other),
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(image_error)?;
    // A broken orientation tag is not worth refusing the image for.
    let orientation = decoder.orientation().unwrap_or(image::metadata::Orientation::NoTransforms);
    // The decoder allocates the whole image at once without asking the limits: refuse
    // a decompression bomb here, before anything is inflated.
    if decoder.total_bytes() > MAX_DECODE_BYTES {
        let (w, h) = decoder.dimensions();
        return Err(too_big(field, format!("{w} × {h} pixels, {} MiB decoded", decoder.total_bytes() / (1024 * 1024))));
    }
    let mut picture = DynamicImage::from_decoder(decoder).map_err(image_error)?;
    picture.apply_orientation(orientation);
    let density = if kind == Kind::Png { png_density(bytes) } else { None };
    let (width, height) = (picture.width(), picture.height());
    let grey = !picture.color().has_color();
    let (samples, alpha) = samples_and_alpha(picture);
    let alpha = alpha.filter(|alpha| alpha.iter().any(|&a| a != 255));
    let flate = |content: Vec<u8>| -> Result<Box<Stream>, EngineError> {
        let mut stream = Stream::new(Dictionary::new(), content);
        stream.compress().map_err(|e| EngineError::internal(format!("compressing an image: {e}")))?;
        Ok(Box::new(stream))
    };
    let data = flate(samples)?;
    let alpha = alpha.map(flate).transpose()?;
    let mut dpi = density.unwrap_or((DEFAULT_DPI, DEFAULT_DPI));
    if matches!(
        orientation,
        image::metadata::Orientation::Rotate90
            | image::metadata::Orientation::Rotate270
            | image::metadata::Orientation::Rotate90FlipH
            | image::metadata::Orientation::Rotate270FlipH
    ) {
        dpi = (dpi.1, dpi.0);
    }
    Ok(Picture { width, height, orientation: 1, dpi, pixels: Pixels::Raster { data, grey, alpha } })
}

/// An image's samples as the PDF stores them (8-bit grey or RGB) and its alpha channel, if
/// it has one. 8-bit images are split in place: the decoded buffer becomes the samples, so
/// an image costs its decoded size and its alpha (a quarter or a half more), not a second
/// full copy. 16-bit and floating-point images are converted, a copy.
fn samples_and_alpha(picture: DynamicImage) -> (Vec<u8>, Option<Vec<u8>>) {
    match picture {
        DynamicImage::ImageRgba8(img) => split_alpha(img.into_raw(), 4),
        DynamicImage::ImageLumaA8(img) => split_alpha(img.into_raw(), 2),
        DynamicImage::ImageRgb8(img) => (img.into_raw(), None),
        DynamicImage::ImageLuma8(img) => (img.into_raw(), None),
        other => {
            let alpha = other.color().has_alpha().then(|| other.to_rgba8().pixels().map(|p| p.0[3]).collect());
            let samples =
                if other.color().has_color() { other.into_rgb8().into_raw() } else { other.into_luma8().into_raw() };
            (samples, alpha)
        }
    }
}

/// Moves the colour samples of `raw` (pixels of `channels` bytes, alpha last) to its front
/// and the alpha bytes to a buffer of their own.
fn split_alpha(mut raw: Vec<u8>, channels: usize) -> (Vec<u8>, Option<Vec<u8>>) {
    let colour = channels - 1;
    let pixels = raw.len() / channels;
    let mut alpha = Vec::with_capacity(pixels);
    for pixel in 0..pixels {
        let from = pixel * channels;
        alpha.push(raw[from + colour]);
        // Writing at `pixel * colour` never passes the reading point `from`.
        raw.copy_within(from..from + colour, pixel * colour);
    }
    raw.truncate(pixels * colour);
    (raw, Some(alpha))
}

/// Where one image goes on its page.
#[derive(Debug, PartialEq)]
struct Placement {
    /// Page width and height in points.
    page: (f64, f64),
    /// The `cm` matrix mapping the image's unit square onto the page, orientation applied.
    matrix: [f64; 6],
}

/// The page size and image matrix for a picture `natural` points big (as seen), stored
/// with EXIF `orientation`.
fn place(natural: (f64, f64), orientation: u8, page_size: PageSize, margin: f64) -> Placement {
    let (w, h) = natural;
    let (page, (dw, dh)) = match page_size {
        PageSize::Image => {
            // Pages beyond what viewers draw are scaled down, shape kept.
            let fit = ((MAX_PAGE_SIDE_PT - 2.0 * margin) / w).min((MAX_PAGE_SIDE_PT - 2.0 * margin) / h).min(1.0);
            let (dw, dh) = (w * fit, h * fit);
            ((dw + 2.0 * margin, dh + 2.0 * margin), (dw, dh))
        }
        PageSize::A4 | PageSize::Letter => {
            let (short, long) = if page_size == PageSize::A4 { (595.28, 841.89) } else { (612.0, 792.0) };
            let page = if w > h { (long, short) } else { (short, long) };
            let scale = ((page.0 - 2.0 * margin) / w).min((page.1 - 2.0 * margin) / h);
            (page, (w * scale, h * scale))
        }
    };
    let (x, y) = ((page.0 - dw) / 2.0, (page.1 - dh) / 2.0);
    // How the seen picture's coordinates (p right, q up, both 0-1) follow from the
    // stored image's unit square (u right, v up): p = pu·u + pv·v + p0, q likewise.
    let ((pu, pv, p0), (qu, qv, q0)) = match orientation {
        2 => ((-1.0, 0.0, 1.0), (0.0, 1.0, 0.0)),
        3 => ((-1.0, 0.0, 1.0), (0.0, -1.0, 1.0)),
        4 => ((1.0, 0.0, 0.0), (0.0, -1.0, 1.0)),
        5 => ((0.0, -1.0, 1.0), (-1.0, 0.0, 1.0)),
        6 => ((0.0, 1.0, 0.0), (-1.0, 0.0, 1.0)),
        7 => ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
        8 => ((0.0, -1.0, 1.0), (1.0, 0.0, 0.0)),
        _ => ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)),
    };
    let matrix = [dw * pu, dh * qu, dw * pv, dh * qv, x + dw * p0, y + dh * q0].map(tidy);
    Placement { page: (tidy(page.0), tidy(page.1)), matrix }
}

/// A number rounded to 1/10000 point, without a negative zero.
fn tidy(n: f64) -> f64 {
    let r = (n * 10_000.0).round() / 10_000.0;
    if r == 0.0 { 0.0 } else { r }
}

fn number(n: f64) -> String {
    let text = format!("{n:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" { "0".into() } else { text.into() }
}

fn real(n: f64) -> Object {
    if n.fract() == 0.0 && n.abs() < 1e9 { Object::Integer(n as i64) } else { Object::Real(n as f32) }
}

fn build_pdf(pictures: Vec<Picture>, page_size: PageSize, margin: f64) -> Result<Vec<u8>, EngineError> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let mut kids = Vec::with_capacity(pictures.len());
    for picture in pictures {
        let placement = place(picture.natural_size(), picture.orientation, page_size, margin);
        let mut image = dictionary! {
            "Type" => "XObject",
            "Subtype" => "Image",
            "Width" => i64::from(picture.width),
            "Height" => i64::from(picture.height),
            "BitsPerComponent" => 8,
        };
        let stream = match picture.pixels {
            Pixels::Jpeg { bytes, components, adobe } => {
                let space = match components {
                    1 => "DeviceGray",
                    3 => "DeviceRGB",
                    _ => "DeviceCMYK",
                };
                image.set("ColorSpace", space);
                image.set("Filter", "DCTDecode");
                if components == 4 && adobe {
                    image.set("Decode", (0..8).map(|i| Object::Integer(1 - i % 2)).collect::<Vec<_>>());
                }
                Stream::new(image, bytes).with_compression(false)
            }
            Pixels::Raster { data, grey, alpha } => {
                image.set("ColorSpace", if grey { "DeviceGray" } else { "DeviceRGB" });
                if let Some(mut alpha) = alpha {
                    let mut mask = dictionary! {
                        "Type" => "XObject",
                        "Subtype" => "Image",
                        "Width" => i64::from(picture.width),
                        "Height" => i64::from(picture.height),
                        "BitsPerComponent" => 8,
                        "ColorSpace" => "DeviceGray",
                    };
                    mask.extend(&alpha.dict);
                    alpha.dict = mask;
                    let mask_id = doc.add_object((*alpha).with_compression(false));
                    image.set("SMask", mask_id);
                }
                image.extend(&data.dict);
                Stream { dict: image, ..*data }.with_compression(false)
            }
        };
        let image_id = doc.add_object(stream);
        let content = format!("q {} cm /Im0 Do Q\n", placement.matrix.map(number).join(" "));
        let content_id = doc.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
        let page = dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => vec![0.into(), 0.into(), real(placement.page.0), real(placement.page.1)],
            "Resources" => dictionary! { "XObject" => dictionary! { "Im0" => image_id } },
            "Contents" => content_id,
        };
        kids.push(Object::Reference(doc.add_object(page)));
    }
    let count = kids.len() as i64;
    doc.objects
        .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }));
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    pdf::save(&mut doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use crate::pdf::testing::call;
    use base64::Engine as _;
    use image::{GrayImage, RgbImage, RgbaImage};
    use serde_json::{Value, json};

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn encode(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).expect("encodes");
        out.into_inner()
    }

    fn rgb_png(w: u32, h: u32) -> Vec<u8> {
        encode(
            DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 90]))),
            ImageFormat::Png,
        )
    }

    fn rgb_jpeg(w: u32, h: u32) -> Vec<u8> {
        encode(
            DynamicImage::ImageRgb8(RgbImage::from_fn(w, h, |x, y| image::Rgb([x as u8, y as u8, 90]))),
            ImageFormat::Jpeg,
        )
    }

    /// `jpeg` with an APP1 Exif segment (big-endian TIFF, orientation tag only) after SOI.
    fn with_orientation(jpeg: &[u8], orientation: u16) -> Vec<u8> {
        let mut tiff = b"MM\0*\0\0\0\x08".to_vec();
        tiff.extend_from_slice(&1u16.to_be_bytes());
        tiff.extend_from_slice(&[0x01, 0x12, 0, 3, 0, 0, 0, 1]);
        tiff.extend_from_slice(&orientation.to_be_bytes());
        tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        let mut segment = b"Exif\0\0".to_vec();
        segment.extend_from_slice(&tiff);
        let mut out = jpeg[..2].to_vec();
        out.extend_from_slice(&[0xFF, 0xE1]);
        out.extend_from_slice(&((segment.len() + 2) as u16).to_be_bytes());
        out.extend_from_slice(&segment);
        out.extend_from_slice(&jpeg[2..]);
        out
    }

    fn body(images: &[(&[u8], &str)], extra: Value) -> Value {
        let mut body = json!({
            "images": images.iter().map(|(bytes, name)| json!({ "data": b64(bytes), "filename": name })).collect::<Vec<_>>()
        });
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        body
    }

    /// Runs the route; returns the output's name, bytes and document, after `qpdf --check`.
    async fn convert(body: Value) -> Result<(String, Vec<u8>, Document), EngineError> {
        match call::<FromImagesRoute>(&body).await? {
            Reply::Files(set) => {
                let file = set.into_single_file()?;
                qpdf_check(&file.bytes);
                let doc = Document::load_mem(&file.bytes).expect("the output opens");
                Ok((file.filename, file.bytes, doc))
            }
            Reply::Json(_) => panic!("JSON where a file was expected"),
        }
    }

    fn qpdf_check(bytes: &[u8]) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("out.pdf");
        std::fs::write(&path, bytes).expect("written");
        let out = std::process::Command::new("qpdf").arg("--check").arg(&path).output().expect("qpdf runs");
        assert!(
            out.status.success(),
            "qpdf --check: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stderr.is_empty(), "qpdf warnings: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn media_boxes(doc: &Document) -> Vec<(f64, f64)> {
        doc.get_pages()
            .values()
            .map(|&id| {
                let r = pdf::media_box(doc, id);
                (r.width(), r.height())
            })
            .collect()
    }

    fn page_image(doc: &Document, page: u32) -> (&Stream, String) {
        let id = doc.get_pages()[&page];
        let page = doc.get_dictionary(id).unwrap();
        let resources = page.get(b"Resources").unwrap().as_dict().unwrap();
        let xobjects = resources.get(b"XObject").unwrap().as_dict().unwrap();
        let image_id = xobjects.get(b"Im0").unwrap().as_reference().unwrap();
        let image = doc.get_object(image_id).unwrap().as_stream().unwrap();
        let content_id = page.get(b"Contents").unwrap().as_reference().unwrap();
        let content = doc.get_object(content_id).unwrap().as_stream().unwrap().decompressed_content().unwrap();
        (image, String::from_utf8(content).unwrap())
    }

    fn name<'a>(dict: &'a Dictionary, key: &[u8]) -> &'a [u8] {
        dict.get(key).unwrap().as_name().unwrap()
    }

    fn assert_size(actual: (f64, f64), expected: (f64, f64)) {
        assert!(
            (actual.0 - expected.0).abs() < 0.01 && (actual.1 - expected.1).abs() < 0.01,
            "{actual:?} != {expected:?}"
        );
    }

    #[tokio::test]
    async fn pngs_become_pages_of_their_size_at_96_dpi() {
        let rgb = rgb_png(96, 48);
        let rgba = encode(
            DynamicImage::ImageRgba8(RgbaImage::from_fn(20, 40, |x, _| {
                image::Rgba([200, 10, 10, if x < 10 { 0 } else { 255 }])
            })),
            ImageFormat::Png,
        );
        let grey = encode(
            DynamicImage::ImageLuma8(GrayImage::from_fn(30, 30, |x, _| image::Luma([x as u8 * 8]))),
            ImageFormat::Png,
        );
        let (filename, _, doc) =
            convert(body(&[(&rgb, "scan.png"), (&rgba, "b.png"), (&grey, "c.png")], json!({}))).await.unwrap();
        assert_eq!(filename, "scan.pdf");
        let sizes = media_boxes(&doc);
        assert_eq!(sizes.len(), 3);
        assert_size(sizes[0], (72.0, 36.0));
        assert_size(sizes[1], (15.0, 30.0));
        assert_size(sizes[2], (22.5, 22.5));

        let (image, content) = page_image(&doc, 1);
        assert_eq!(name(&image.dict, b"ColorSpace"), b"DeviceRGB");
        assert_eq!(name(&image.dict, b"Filter"), b"FlateDecode");
        assert!(image.dict.get(b"SMask").is_err(), "an opaque image has no mask");
        assert_eq!(image.decompressed_content().unwrap().len(), 96 * 48 * 3);
        assert_eq!(content.trim(), "q 72 0 0 36 0 0 cm /Im0 Do Q");

        let (image, _) = page_image(&doc, 2);
        assert_eq!(name(&image.dict, b"ColorSpace"), b"DeviceRGB");
        let mask_id = image.dict.get(b"SMask").unwrap().as_reference().unwrap();
        let mask = doc.get_object(mask_id).unwrap().as_stream().unwrap();
        assert_eq!(name(&mask.dict, b"ColorSpace"), b"DeviceGray");
        let alpha = mask.decompressed_content().unwrap();
        assert_eq!(alpha.len(), 20 * 40);
        assert_eq!((alpha[0], alpha[19]), (0, 255));

        let (image, _) = page_image(&doc, 3);
        assert_eq!(name(&image.dict, b"ColorSpace"), b"DeviceGray");
        assert_eq!(image.decompressed_content().unwrap().len(), 30 * 30);
    }

    #[tokio::test]
    async fn png_density_sets_the_page_size() {
        // 300 dpi is 11811 pixels a metre.
        let png = rgb_png(300, 150);
        let mut with_phys = png[..33].to_vec(); // signature + IHDR
        let mut chunk = 9u32.to_be_bytes().to_vec();
        chunk.extend_from_slice(b"pHYs");
        chunk.extend_from_slice(&11811u32.to_be_bytes());
        chunk.extend_from_slice(&11811u32.to_be_bytes());
        chunk.push(1);
        let crc = crc32(&chunk[4..]);
        chunk.extend_from_slice(&crc.to_be_bytes());
        with_phys.extend_from_slice(&chunk);
        with_phys.extend_from_slice(&png[33..]);
        let (_, _, doc) = convert(body(&[(&with_phys, "a.png")], json!({}))).await.unwrap();
        assert_size(media_boxes(&doc)[0], (72.0, 36.0));
    }

    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = 0xFFFF_FFFFu32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
            }
        }
        !crc
    }

    #[tokio::test]
    async fn jpeg_is_embedded_byte_for_byte() {
        let jpeg = rgb_jpeg(64, 32);
        let grey = encode(
            DynamicImage::ImageLuma8(GrayImage::from_fn(16, 16, |x, _| image::Luma([x as u8 * 16]))),
            ImageFormat::Jpeg,
        );
        let (filename, _, doc) = convert(body(&[(&jpeg, "photo.jpg"), (&grey, "g.jpg")], json!({}))).await.unwrap();
        assert_eq!(filename, "photo.pdf");
        assert_size(media_boxes(&doc)[0], (48.0, 24.0));
        let (image, content) = page_image(&doc, 1);
        assert_eq!(image.content, jpeg, "the JPEG is not re-encoded");
        assert_eq!(name(&image.dict, b"Filter"), b"DCTDecode");
        assert_eq!(name(&image.dict, b"ColorSpace"), b"DeviceRGB");
        assert_eq!(image.dict.get(b"BitsPerComponent").unwrap().as_i64().unwrap(), 8);
        assert_eq!(content.trim(), "q 48 0 0 24 0 0 cm /Im0 Do Q");
        let (image, _) = page_image(&doc, 2);
        assert_eq!(image.content, grey);
        assert_eq!(name(&image.dict, b"ColorSpace"), b"DeviceGray");
    }

    #[tokio::test]
    async fn exif_orientation_6_turns_the_placement_not_the_bytes() {
        // Stored 64 × 32, seen 32 wide and 64 high (turned a quarter clockwise).
        let jpeg = with_orientation(&rgb_jpeg(64, 32), 6);
        assert_eq!(jpeg_info(&jpeg).unwrap().orientation, 6);
        let (filename, _, doc) = convert(body(&[(&jpeg, "")], json!({}))).await.unwrap();
        assert_eq!(filename, "images.pdf");
        assert_size(media_boxes(&doc)[0], (24.0, 48.0));
        let (image, content) = page_image(&doc, 1);
        assert_eq!(image.content, jpeg);
        assert_eq!(image.dict.get(b"Width").unwrap().as_i64().unwrap(), 64);
        // The stored top row (v = 1) lands on the right edge, its left end at the top.
        assert_eq!(content.trim(), "q 0 -48 24 0 0 48 cm /Im0 Do Q");

        // On A4 the seen shape (portrait) decides the orientation; fitted and centred.
        let (_, _, doc) = convert(body(&[(&jpeg, "p.jpg")], json!({ "page_size": "A4" }))).await.unwrap();
        assert_size(media_boxes(&doc)[0], (595.28, 841.89));
        let (_, content) = page_image(&doc, 1);
        // Inside 36 pt margins: 523.28 wide limits, seen height 1046.56 limits more: 769.89 high, 384.945 wide.
        assert_eq!(content.trim(), "q 0 -769.89 384.945 0 105.1675 805.89 cm /Im0 Do Q");
    }

    #[test]
    fn every_orientation_maps_the_unit_square_onto_the_box() {
        for orientation in 1..=8u8 {
            let p = place((40.0, 20.0), orientation, PageSize::Image, 5.0);
            assert_eq!(p.page, (50.0, 30.0));
            let [a, b, c, d, e, f] = p.matrix;
            let corners: Vec<(f64, f64)> = [(0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)]
                .iter()
                .map(|&(u, v)| (a * u + c * v + e, b * u + d * v + f))
                .collect();
            let xs: Vec<f64> = corners.iter().map(|c| c.0).collect();
            let ys: Vec<f64> = corners.iter().map(|c| c.1).collect();
            assert_eq!(xs.iter().cloned().fold(f64::MAX, f64::min), 5.0, "orientation {orientation}");
            assert_eq!(xs.iter().cloned().fold(f64::MIN, f64::max), 45.0);
            assert_eq!(ys.iter().cloned().fold(f64::MAX, f64::min), 5.0);
            assert_eq!(ys.iter().cloned().fold(f64::MIN, f64::max), 25.0);
        }
        // Orientation 8: the stored top-left pixel corner (u 0, v 1) is seen bottom-left.
        let [a, b, c, d, e, f] = place((40.0, 20.0), 8, PageSize::Image, 0.0).matrix;
        assert_eq!((a * 0.0 + c + e, b * 0.0 + d + f), (0.0, 0.0));
    }

    #[tokio::test]
    async fn letter_pages_follow_the_image_orientation() {
        let wide = rgb_png(200, 100);
        let (_, _, doc) =
            convert(body(&[(&wide, "w.png")], json!({ "page_size": "Letter", "margin_pt": 0 }))).await.unwrap();
        assert_size(media_boxes(&doc)[0], (792.0, 612.0));
        let (_, content) = page_image(&doc, 1);
        // 792 wide limits: 792 × 396, centred vertically.
        assert_eq!(content.trim(), "q 792 0 0 396 0 108 cm /Im0 Do Q");
    }

    #[test]
    fn samples_split_in_place_equal_the_converted_ones() {
        use image::{GrayAlphaImage, Rgba, RgbaImage};
        let rgba = RgbaImage::from_fn(37, 11, |x, y| Rgba([x as u8, y as u8, (x * y) as u8, (x + y) as u8]));
        let expected_rgb = DynamicImage::ImageRgba8(rgba.clone()).into_rgb8().into_raw();
        let expected_alpha: Vec<u8> = rgba.pixels().map(|p| p.0[3]).collect();
        let (samples, alpha) = samples_and_alpha(DynamicImage::ImageRgba8(rgba));
        assert_eq!(samples, expected_rgb);
        assert_eq!(alpha, Some(expected_alpha));

        let grey = GrayAlphaImage::from_fn(5, 3, |x, y| image::LumaA([(x * 40) as u8, (y * 50) as u8]));
        let expected_grey = DynamicImage::ImageLumaA8(grey.clone()).into_luma8().into_raw();
        let (samples, alpha) = samples_and_alpha(DynamicImage::ImageLumaA8(grey.clone()));
        assert_eq!(samples, expected_grey);
        assert_eq!(alpha, Some(grey.pixels().map(|p| p.0[1]).collect::<Vec<u8>>()));

        // 16-bit images are converted as before.
        let wide = DynamicImage::ImageRgba16(image::ImageBuffer::from_pixel(2, 2, Rgba([65535u16, 0, 257, 32896])));
        let (samples, alpha) = samples_and_alpha(wide);
        assert_eq!(samples, [255, 0, 1].repeat(4));
        assert_eq!(alpha, Some(vec![128; 4]));
    }

    #[tokio::test]
    async fn webp_is_decoded() {
        let image = DynamicImage::ImageRgba8(RgbaImage::from_fn(10, 20, |x, _| {
            image::Rgba([1, 2, 3, if x == 0 { 0 } else { 255 }])
        }));
        let mut out = Cursor::new(Vec::new());
        image::codecs::webp::WebPEncoder::new_lossless(&mut out)
            .encode(image.as_bytes(), 10, 20, image::ExtendedColorType::Rgba8)
            .unwrap();
        let webp = out.into_inner();
        let (_, _, doc) = convert(body(&[(&webp, "w.webp")], json!({}))).await.unwrap();
        assert_size(media_boxes(&doc)[0], (7.5, 15.0));
        let (image, _) = page_image(&doc, 1);
        assert!(image.dict.get(b"SMask").is_ok());
    }

    async fn error(body: Value) -> EngineError {
        match convert(body).await {
            Ok(_) => panic!("expected an error"),
            Err(e) => e,
        }
    }

    #[tokio::test]
    async fn errors_name_their_field() {
        let png = rgb_png(4, 4);
        let e = error(json!({ "images": [] })).await;
        assert_eq!(e.field.as_deref(), Some("/images"));
        let many: Vec<(&[u8], &str)> = (0..31).map(|_| (&png[..], "a.png")).collect();
        let e = error(body(&many, json!({}))).await;
        assert_eq!(e.field.as_deref(), Some("/images"));
        assert!(e.message.contains("31"), "{}", e.message);

        let e = error(body(&[(&png, "a.png"), (b"hello, world\n", "notes.txt")], json!({}))).await;
        assert_eq!((e.field.as_deref(), e.kind), (Some("/images/1"), ErrorKind::InvalidInput));
        assert!(e.message.contains("a text file"), "{}", e.message);

        let e = error(body(&[(&png[..png.len() - 20], "t.png")], json!({}))).await;
        assert_eq!((e.field.as_deref(), e.kind), (Some("/images/0"), ErrorKind::InvalidInput));

        let jpeg = rgb_jpeg(8, 8);
        let e = error(body(&[(&jpeg[..20], "t.jpg")], json!({}))).await;
        assert_eq!((e.field.as_deref(), e.kind), (Some("/images/0"), ErrorKind::InvalidInput));

        let e = error(body(&[(&png, "a.png")], json!({ "margin_pt": 500 }))).await;
        assert_eq!(e.field.as_deref(), Some("/margin_pt"));
        let e = error(body(&[(&png, "a.png")], json!({ "margin_pt": -1 }))).await;
        assert_eq!(e.field.as_deref(), Some("/margin_pt"));
        let e = error(body(&[(&png, "a.png")], json!({ "page_size": "A5" }))).await;
        assert_eq!(e.field.as_deref(), Some("/page_size"));
        let e = error(body(&[(&png, "a.png")], json!({ "dpi": 300 }))).await;
        assert_eq!(e.code, "unknown_field");
    }

    #[tokio::test]
    async fn a_decompression_bomb_is_refused_as_too_large() {
        // 20001 × 1 pixels is past the side limit.
        let wide = encode(DynamicImage::ImageLuma8(GrayImage::new(20_001, 1)), ImageFormat::Png);
        let e = error(body(&[(&wide, "w.png")], json!({}))).await;
        assert_eq!((e.field.as_deref(), e.kind), (Some("/images/0"), ErrorKind::TooLarge));

        // 12000 × 12000 RGBA is 576 MB decoded, from a few dozen bytes: refused before
        // any pixel is inflated.
        let mut ihdr = 12_000u32.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&12_000u32.to_be_bytes());
        ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
        let mut bomb = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in
            [(&b"IHDR"[..], &ihdr[..]), (b"IDAT", &[0x78, 0x01, 0x01, 0, 0, 0xFF, 0xFF, 0, 0, 0, 1]), (b"IEND", &[])]
        {
            bomb.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let mut typed = kind.to_vec();
            typed.extend_from_slice(data);
            bomb.extend_from_slice(&typed);
            bomb.extend_from_slice(&crc32(&typed).to_be_bytes());
        }
        let e = error(body(&[(&bomb, "bomb.png")], json!({}))).await;
        assert_eq!((e.field.as_deref(), e.kind), (Some("/images/0"), ErrorKind::TooLarge), "{}", e.message);
    }

    #[test]
    fn jpeg_headers_are_read() {
        let jpeg = rgb_jpeg(8, 4);
        let info = jpeg_info(&jpeg).unwrap();
        assert_eq!((info.width, info.height, info.components, info.orientation), (8, 4, 3, 1));
        // Cut anywhere in the header: an error, never a panic.
        for cut in 0..jpeg.len().min(700) {
            let _ = jpeg_info(&jpeg[..cut]);
        }
        // A JFIF header at 300 dpi.
        let mut dense = jpeg.clone();
        if let Some(at) = dense.windows(5).position(|w| w == b"JFIF\0") {
            dense[at + 7] = 1;
            dense[at + 8..at + 12].copy_from_slice(&[1, 44, 1, 44]);
        }
        assert_eq!(jpeg_info(&dense).unwrap().density, Some((300.0, 300.0)));
        // Garbage in the EXIF block is ignored, not fatal.
        let mut broken = with_orientation(&jpeg, 6);
        broken[14..22].copy_from_slice(&[0xFF; 8]);
        assert_eq!(jpeg_info(&broken).unwrap().orientation, 1);
    }
}
