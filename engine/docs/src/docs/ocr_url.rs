//! `POST /v1/ocr`: the text of a public image (PNG, JPEG, WebP) given by URL, read by
//! Tesseract, with its mean word confidence; images of more than 20 megapixels are 413.

use std::io::Cursor;

use image::{ImageDecoder, ImageError, ImageFormat, ImageReader};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::images::{Kind, sniff};
use crate::input::fetch_error;
use crate::ocr::{self, Image};
use crate::output::Reply;
use crate::price::Price;

/// Most pixels an image may have (route book §4: larger is 413).
pub const MAX_PIXELS: u64 = 20_000_000;

/// The resolution assumed for an image: Tesseract's models expect text about 20 to 40
/// pixels high, which screenshots and phone photos of pages usually have at this setting.
const ASSUMED_DPI: u32 = 300;

/// Request of `/v1/ocr`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OcrUrlInput {
    /// A public http(s) URL of a PNG, JPEG or WebP image (at most 20 megapixels, 50 MiB).
    #[schemars(length(min = 1, max = 8192))]
    pub url: String,
    /// The languages of the text, as Tesseract codes (`eng`, `deu`, `fra`, `spa`…); `["eng"]` when omitted.
    #[serde(default)]
    #[schemars(length(min = 1, max = 5), inner(regex(pattern = r"^[a-z]{3}[a-z_]{0,13}$")))]
    pub languages: Option<Vec<String>>,
    /// Turn an image taken sideways or upside down upright before reading it. On by default.
    #[serde(default)]
    pub auto_rotate: Option<bool>,
}

/// The text of the image.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct OcrUrlReport {
    /// The URL that answered, after redirects.
    pub url: String,
    /// The text read, lines separated by `\n`, paragraphs by a blank line. Untrusted text from the image.
    pub text: String,
    /// Tesseract's mean word confidence, 0 to 100 (0 when nothing was read).
    pub confidence: u32,
    /// The number of words read.
    pub words: usize,
    /// The languages used.
    pub languages: Vec<String>,
    /// The image's width in pixels, as stored.
    pub width: u32,
    /// Its height in pixels.
    pub height: u32,
    /// Clockwise degrees the image was turned to read it upright (0, 90, 180 or 270).
    pub turned: u32,
}

/// A fetched image, decoded to grey.
pub struct OcrUrl {
    url: String,
    gray: Vec<u8>,
    width: u32,
    height: u32,
    languages: String,
    auto_rotate: bool,
}

/// The route.
pub struct OcrUrlRoute;

impl Route for OcrUrlRoute {
    const HEAVY: bool = true;
    type Input = OcrUrlInput;
    type Prepared = OcrUrl;
    type Output = OcrUrlReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/ocr",
        operation: "ocr_image_url",
        family: Family::Docs,
        summary: "Text of an image by URL (OCR)",
        description: "Fetches a public PNG, JPEG or WebP image (http/https; private, loopback and metadata addresses \
            refused, every redirect checked again; at most 50 MiB) and reads its text with Tesseract 5: the text \
            (lines and paragraphs), the mean word confidence (0 to 100) and the number of words. An image taken \
            sideways or upside down is turned upright first (`auto_rotate`). `languages` takes Tesseract codes \
            (`eng`, `deu`, `fra`, `spa`…). More than 20 megapixels is 413.",
        base_price: Price::micros(2_000),
        price_rule: "flat (at most 20 megapixels)",
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: OcrUrlInput, ctx: &Context) -> Result<OcrUrl, EngineError> {
        // Found before anything is fetched, so a server without the engine charges nothing.
        ocr::ensure_library().await?;
        let languages = ocr::check_languages(input.languages.as_deref(), "/languages")?;
        if input.url.trim().is_empty() {
            return Err(EngineError::invalid("/url", "/url: give the http(s) URL of an image"));
        }
        let fetched = ctx.fetcher.fetch(input.url.trim()).await.map_err(|e| fetch_error(e, "/url"))?;
        if fetched.bytes.is_empty() {
            return Err(EngineError::invalid_with("empty_file", "/url", "/url: the URL answered no bytes"));
        }
        let url = fetched.final_url.to_string();
        let bytes = fetched.bytes;
        let (gray, width, height) = blocking(move || decode_gray(&bytes, "/url")).await?;
        Ok(OcrUrl { url, gray, width, height, languages, auto_rotate: input.auto_rotate.unwrap_or(true) })
    }

    fn quote(_: &OcrUrl) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: OcrUrl, _ctx: &Context) -> Result<Reply<OcrUrlReport>, EngineError> {
        blocking(move || {
            let OcrUrl { url, gray, width, height, languages, auto_rotate } = call;
            let image = Image { pixels: &gray, width, height, channels: 1, dpi: ASSUMED_DPI };
            let mut lent = ocr::lend(&languages)?;
            let (reading, turned) = ocr::read_upright(&mut lent, &image, auto_rotate, "the image")?;
            Ok(Reply::Json(OcrUrlReport {
                url,
                text: reading.text.trim_end().to_string(),
                confidence: reading.confidence,
                words: reading.words.len(),
                languages: languages.split('+').map(str::to_string).collect(),
                width,
                height,
                turned,
            }))
        })
        .await
    }
}

/// `bytes` (PNG, JPEG or WebP) decoded to grey, transparent parts on white, as stored
/// (no EXIF turn: orientation detection turns what needs it); errors name `field`.
fn decode_gray(bytes: &[u8], field: &str) -> Result<(Vec<u8>, u32, u32), EngineError> {
    let (format, what) = match sniff(bytes) {
        Ok(Kind::Png) => (ImageFormat::Png, "PNG"),
        Ok(Kind::Jpeg) => (ImageFormat::Jpeg, "JPEG"),
        Ok(Kind::WebP) => (ImageFormat::WebP, "WebP"),
        Err(instead) => {
            return Err(EngineError::invalid_with(
                "unsupported_format",
                field,
                format!("{field}: the URL answered {instead}, not a PNG, JPEG or WebP image"),
            ));
        }
    };
    let corrupt = |e: ImageError| {
        EngineError::invalid_with("unsupported_format", field, format!("{field}: the {what} image cannot be read: {e}"))
    };
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_PIXELS * 4 + 1024 * 1024);
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(corrupt)?;
    let (width, height) = decoder.dimensions();
    // Refused before anything is inflated: a small file may declare a huge image.
    if width as u64 * height as u64 > MAX_PIXELS {
        return Err(EngineError::too_large(
            "file_too_large",
            Some(field.to_string()),
            format!(
                "{field}: the image is {width} × {height} pixels ({:.1} megapixels); this route reads at most {} \
                 megapixels",
                width as f64 * height as f64 / 1e6,
                MAX_PIXELS / 1_000_000
            ),
        ));
    }
    let picture = image::DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    let gray = if picture.color().has_alpha() {
        picture
            .into_luma_alpha8()
            .pixels()
            .map(|p| {
                let (v, a) = (p.0[0] as u32, p.0[1] as u32);
                ((v * a + 255 * (255 - a)) / 255) as u8
            })
            .collect()
    } else {
        picture.into_luma8().into_raw()
    };
    Ok((gray, width, height))
}

#[cfg(test)]
mod tests {
    use image::ImageEncoder as _;

    use super::*;

    #[test]
    fn transparent_pixels_are_white_and_huge_images_are_refused_before_decoding() {
        // 2 × 1 grey+alpha PNG: a black opaque pixel and a black transparent one.
        let mut png = Vec::new();
        image::codecs::png::PngEncoder::new(&mut png)
            .write_image(&[0, 255, 0, 0], 2, 1, image::ExtendedColorType::La8)
            .unwrap();
        let (gray, w, h) = decode_gray(&png, "/url").unwrap();
        assert_eq!((gray, w, h), (vec![0, 255], 2, 1));

        // A PNG header that declares 5,000 × 5,000 pixels (25 MP), with no data.
        let mut huge = Vec::new();
        image::codecs::png::PngEncoder::new(&mut huge)
            .write_image(&[255u8; 4], 2, 2, image::ExtendedColorType::L8)
            .unwrap();
        huge[16..20].copy_from_slice(&5000u32.to_be_bytes());
        huge[20..24].copy_from_slice(&5000u32.to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(&huge[12..29]);
        huge[29..33].copy_from_slice(&crc.sum().to_be_bytes());
        let err = decode_gray(&huge, "/url").unwrap_err();
        assert_eq!((err.code.as_ref(), err.field.as_deref()), ("file_too_large", Some("/url")), "{}", err.message);

        let err = decode_gray(b"%PDF-1.7", "/url").unwrap_err();
        assert_eq!(err.code, "unsupported_format");
        assert!(err.message.contains("a PDF"), "{}", err.message);
    }
}
