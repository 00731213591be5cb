//! What a PDF's streams decode to, checked before a library written in C or C++ (pdfium,
//! qpdf) is given the file: those libraries inflate a stream whole when they need it,
//! with no limit we can set and outside the call's counted memory ([`crate::memory`]).
//!
//! Three limits, each refused with 413 `too_large` naming it:
//! - one stream may decode to at most [`Limits::max_stream_bytes`];
//! - all streams of the document together to at most [`Limits::max_decoded_bytes`] (a
//!   small file of many small bombs);
//! - for a renderer ([`For::Rendering`]), an image's pixels (width × height × components,
//!   what it allocates to draw the image, whatever its filter claims) must fit the room the
//!   call has left of its memory budget. qpdf copies images without decoding them: a
//!   document given to it is not refused for an image it never draws.
//!
//! Streams are decoded one at a time with lopdf's bounded decoders, never more than the
//! limit each, and dropped at once: the check holds at most one stream's worth.

use lopdf::{Document, Object, Stream};

use crate::context::Limits;
use crate::error::EngineError;

const MIB: u64 = 1 << 20;

/// Refuses the PDF in `bytes` (`doc`, as lopdf read it) if one of its streams, all of them
/// together, or one of its images needs more than its limit once decoded. Checked once per
/// call: the same bytes given again (to another library, or again to pdfium) pass at once.
pub fn check(bytes: &[u8], doc: &Document, limits: &Limits, purpose: For) -> Result<(), EngineError> {
    if !crate::cancel::first_time(digest(bytes, purpose)) {
        return Ok(());
    }
    check_document(doc, limits, purpose)
}

/// What the checked document is given to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum For {
    /// A renderer (pdfium): streams decoded, and images drawn at their full pixel size.
    Rendering,
    /// A rewriter (qpdf): streams it may decode; images copied as they are.
    Rewriting,
}

/// As [`check`], for bytes lopdf has not read yet in this call: read here, with the
/// per-stream limit while loading. A file lopdf cannot read is left to the library, whose
/// own reading of damaged files is what the caller asked for.
pub fn check_bytes(bytes: &[u8], password: Option<&str>, limits: &Limits, purpose: For) -> Result<(), EngineError> {
    if !crate::cancel::first_time(digest(bytes, purpose)) {
        return Ok(());
    }
    let options = lopdf::LoadOptions {
        password: password.map(str::to_string),
        max_decompressed_size: Some(limits.max_stream_bytes.min(crate::memory::room())),
        ..lopdf::LoadOptions::default()
    };
    match Document::load_mem_with_options(bytes, options) {
        Ok(doc) => check_document(&doc, limits, purpose),
        Err(lopdf::Error::Decompress(e)) => Err(EngineError::too_large(
            "file_too_large",
            None,
            format!("a stream of the PDF decompresses past the limit ({e}); refusing a possible decompression bomb"),
        )),
        Err(_) => Ok(()),
    }
}

fn digest(bytes: &[u8], purpose: For) -> [u8; 32] {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    hasher.update([purpose as u8]);
    hasher.update(bytes);
    hasher.finalize().into()
}

/// As [`check`], for a document held in memory (a pipeline's step, or one about to be
/// written through qpdf), checked each time.
pub fn check_document(doc: &Document, limits: &Limits, purpose: For) -> Result<(), EngineError> {
    let mut total: u64 = 0;
    for (id, object) in &doc.objects {
        let Object::Stream(stream) = object else { continue };
        crate::cancel::check()?;
        if purpose == For::Rendering
            && let Some(pixels) = image_bytes(doc, stream)
        {
            crate::memory::reserve(&format!("image {} {} of the PDF", id.0, id.1), pixels)?;
        }
        let decoded = decoded_size(stream, limits, limits.max_decoded_bytes.saturating_sub(total))?;
        total += decoded;
        if total > limits.max_decoded_bytes {
            return Err(EngineError::too_large(
                "file_too_large",
                None,
                format!(
                    "the PDF's streams decode to more than {} MiB in all (the limit of decoded bytes per \
                     document); refusing a possible decompression bomb",
                    limits.max_decoded_bytes / MIB
                ),
            ));
        }
    }
    Ok(())
}

/// The bytes `stream` decodes to (its own length when lopdf has no decoder for its filter:
/// images in JPEG, JPEG 2000, JBIG2 or fax coding, whose pixels [`image_bytes`] counts),
/// decoding at most `left` bytes (then it is refused by the caller) or the per-stream limit.
fn decoded_size(stream: &Stream, limits: &Limits, left: u64) -> Result<u64, EngineError> {
    let Ok(filters) = stream.filters() else { return Ok(stream.content.len() as u64) };
    let decodable = |f: &[u8]| matches!(f, b"FlateDecode" | b"Fl" | b"LZWDecode" | b"LZW");
    if filters.is_empty() || !filters.iter().any(|f| decodable(f)) {
        return Ok(stream.content.len() as u64);
    }
    let cap = limits.max_stream_bytes.min(usize::try_from(left.saturating_add(1)).unwrap_or(usize::MAX));
    match stream.decompressed_content_with_limit(cap) {
        Ok(plain) => Ok(plain.len() as u64),
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. }))
            if cap < limits.max_stream_bytes =>
        {
            // Past what is left of the document's total: the caller names that limit.
            Ok(left.saturating_add(1))
        }
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. })) => {
            Err(EngineError::too_large(
                "file_too_large",
                None,
                format!(
                    "a stream of the PDF decodes to more than {} MiB (the limit of one stream); refusing a \
                     possible decompression bomb",
                    limits.max_stream_bytes as u64 / MIB
                ),
            ))
        }
        // A stream lopdf cannot decode (damaged data, a filter chain it does not know) is left
        // to the library, which skips it as damaged: what it holds is counted as given.
        Err(_) => Ok(stream.content.len() as u64),
    }
}

/// The bytes a renderer needs for the pixels of `stream` if it is an image: width × height
/// × components × bits, whatever its data holds.
fn image_bytes(doc: &Document, stream: &Stream) -> Option<u64> {
    let dict = &stream.dict;
    let is_image = matches!(dict.get(b"Subtype").ok()?, Object::Name(n) if n == b"Image");
    if !is_image {
        return None;
    }
    let number = |key: &[u8]| {
        let object = dict.get(key).ok()?;
        let object = match object {
            Object::Reference(id) => doc.get_object(*id).ok()?,
            other => other,
        };
        match object {
            Object::Integer(n) => u64::try_from(*n).ok(),
            Object::Real(r) if *r >= 0.0 => Some(*r as u64),
            _ => None,
        }
    };
    let (width, height) = (number(b"Width")?, number(b"Height")?);
    let mask = matches!(dict.get(b"ImageMask"), Ok(Object::Boolean(true)));
    let bits = if mask { 1 } else { number(b"BitsPerComponent").unwrap_or(8).clamp(1, 16) };
    let components = if mask { 1 } else { components(doc, dict.get(b"ColorSpace").ok()) };
    // A renderer expands every image to 8-bit channels (and usually adds alpha): counted as
    // four bytes a pixel at least, whatever the stored depth.
    let stored = width.saturating_mul(height).saturating_mul(components).saturating_mul(bits).div_ceil(8);
    Some(stored.max(width.saturating_mul(height).saturating_mul(4)))
}

/// Components of a colour space (4, the most, when it cannot be told).
fn components(doc: &Document, space: Option<&Object>) -> u64 {
    let space = match space {
        Some(Object::Reference(id)) => doc.get_object(*id).ok(),
        other => other,
    };
    match space {
        Some(Object::Name(name)) => match name.as_slice() {
            b"DeviceGray" | b"CalGray" | b"G" | b"Indexed" | b"I" | b"Separation" | b"Pattern" => 1,
            b"DeviceRGB" | b"CalRGB" | b"Lab" | b"RGB" => 3,
            _ => 4,
        },
        Some(Object::Array(parts)) => match parts.first() {
            Some(Object::Name(name)) => match name.as_slice() {
                b"Indexed" | b"I" | b"Separation" => 1,
                b"CalRGB" | b"Lab" => 3,
                b"CalGray" => 1,
                b"ICCBased" => parts
                    .get(1)
                    .and_then(|p| match p {
                        Object::Reference(id) => doc.get_object(*id).ok(),
                        other => Some(other),
                    })
                    .and_then(|p| p.as_stream().ok())
                    .and_then(|s| s.dict.get(b"N").ok().and_then(|n| n.as_i64().ok()))
                    .map_or(4, |n| n.clamp(1, 4) as u64),
                b"DeviceN" => match parts.get(1) {
                    Some(Object::Array(names)) => names.len().clamp(1, 32) as u64,
                    _ => 4,
                },
                _ => 4,
            },
            _ => 4,
        },
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use lopdf::{Dictionary, Stream, dictionary};

    use super::*;

    fn flate(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn doc_with(streams: Vec<Stream>) -> Document {
        let mut doc = Document::with_version("1.7");
        for stream in streams {
            doc.add_object(stream);
        }
        doc
    }

    fn flate_stream(decoded: &[u8]) -> Stream {
        Stream::new(dictionary! { "Filter" => "FlateDecode" }, flate(decoded))
    }

    #[test]
    fn streams_within_the_limits_pass() {
        let doc = doc_with(vec![flate_stream(&vec![b' '; 1 << 20]), Stream::new(Dictionary::new(), b"q Q".to_vec())]);
        check_document(&doc, &Limits::default(), For::Rendering).unwrap();
    }

    #[test]
    fn one_stream_past_its_limit_is_refused_naming_it() {
        let limits = Limits { max_stream_bytes: 1 << 20, ..Limits::default() };
        let error =
            check_document(&doc_with(vec![flate_stream(&vec![0; 2 << 20])]), &limits, For::Rendering).unwrap_err();
        assert_eq!((error.code.as_ref(), error.kind), ("file_too_large", crate::error::ErrorKind::TooLarge));
        assert!(error.message.contains("the limit of one stream"), "{}", error.message);
    }

    #[test]
    fn many_streams_past_the_documents_limit_are_refused_naming_it() {
        let limits = Limits { max_decoded_bytes: 5 << 20, ..Limits::default() };
        let streams = (0..6).map(|_| flate_stream(&vec![0; 1 << 20])).collect();
        let error = check_document(&doc_with(streams), &limits, For::Rendering).unwrap_err();
        assert_eq!(error.code, "file_too_large");
        assert!(error.message.contains("decoded bytes per document"), "{}", error.message);
    }

    #[test]
    fn an_image_is_counted_by_its_pixels_not_its_data() {
        let image = |width: i64, space: &str| {
            Stream::new(
                dictionary! {
                    "Subtype" => "Image", "Width" => width, "Height" => width, "ColorSpace" => space,
                    "BitsPerComponent" => 8, "Filter" => "DCTDecode",
                },
                vec![0xFF, 0xD8],
            )
        };
        let doc = doc_with(vec![image(100, "DeviceRGB")]);
        assert_eq!(image_bytes(&doc, doc.objects.values().next().unwrap().as_stream().unwrap()), Some(40_000));
        // 60000 × 60000 RGB claims 10.8 GB: more than any budget has room for, refused
        // inside a call's scope; outside one (no budget) nothing is counted.
        let doc = doc_with(vec![image(60_000, "DeviceRGB")]);
        assert_eq!(
            image_bytes(&doc, doc.objects.values().next().unwrap().as_stream().unwrap()),
            Some(60_000 * 60_000 * 4)
        );
    }
}
