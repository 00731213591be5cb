//! The image part of `compress_pdf`: how large every image XObject is shown, then
//! downsampling the ones shown above a target resolution and re-encoding photos as JPEG.
//!
//! An image's effective resolution is its pixel size over the largest size it is drawn
//! at anywhere: page content, form XObjects, tiling patterns, soft-mask groups and
//! annotation appearances are walked with their transformation matrices. An image also
//! reachable from somewhere the walk does not size (a Type 3 glyph, a content stream
//! that does not parse) is left alone, as is every image never drawn.
//!
//! The walk that sizes every image is `walk`; decoding and encoding an image's pixels is
//! `pixels`; this module decides, image by image, what to write.
//!
//! What this module must not do: change an image it could not size, decode past
//! [`MAX_IMAGE_DECODE_BYTES`] for one image or `MAX_TOTAL_DECODE_BYTES` for all, or keep a
//! replacement that is not smaller.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use crate::context::Limits;
use crate::pdf::flate::{inflate, zlib_best};

mod pixels;
mod walk;

use self::pixels::{continuous_tone, decode_jpeg, decode_samples, encode_jpeg, resize};
use self::walk::{Usage, Walk};

/// Most memory one image may take decoded (as in from-images): a bigger one is skipped.
pub const MAX_IMAGE_DECODE_BYTES: u64 = 256 * 1024 * 1024;

/// Most pixel bytes decoded for all images together; images past it are left alone.
const MAX_TOTAL_DECODE_BYTES: u64 = 2 * 1024 * 1024 * 1024;
/// A re-encoded JPEG at the same pixel size must save this much to be worth a generation.
const JPEG_REENCODE_GAIN: f64 = 0.9;

/// How images are recompressed.
#[derive(Clone, Copy, Debug)]
pub struct ImageSettings {
    /// Images shown above this resolution are downsampled to it.
    pub target_dpi: f64,
    /// JPEG quality of photos, 1-100.
    pub jpeg_quality: u8,
}

/// What the image pass changed.
#[derive(Clone, Debug, Default)]
pub struct ImageOutcome {
    /// Images written at a smaller pixel size.
    pub downsampled: usize,
    /// Images written at their pixel size in a new encoding.
    pub reencoded: usize,
    /// The image streams replaced: their data is final.
    pub replaced: HashSet<ObjectId>,
    /// Why the pass changed nothing, when it gave up on the whole document.
    pub gave_up: Option<&'static str>,
}

/// Downsamples and re-encodes the document's images in place.
pub fn recompress_images(doc: &mut Document, settings: ImageSettings, limits: &Limits) -> ImageOutcome {
    let mut outcome = ImageOutcome::default();
    let usages = {
        let mut walk = Walk::new(doc, limits);
        walk.pages();
        if let Some(reason) = walk.gave_up {
            outcome.gave_up = Some(reason);
            return outcome;
        }
        walk.usages()
    };
    let mut budget = MAX_TOTAL_DECODE_BYTES;
    for (id, usage) in usages {
        if crate::cancel::is_stopped() {
            // The call was stopped: its caller checks and answers so.
            break;
        }
        let Some(Object::Stream(stream)) = doc.objects.get(&id) else { continue };
        let Some((replacement, downsampled)) = recompress(doc, stream, usage, settings, &mut budget) else {
            continue;
        };
        doc.objects.insert(id, Object::Stream(replacement));
        outcome.replaced.insert(id);
        if downsampled {
            outcome.downsampled += 1;
        } else {
            outcome.reencoded += 1;
        }
    }
    outcome
}

/// How an image's samples are stored, among the encodings handled.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Encoding {
    Raw,
    Flate,
    Dct,
}

/// The replacement stream for an image and whether it was downsampled, when the image is
/// one handled and the new stream is smaller.
fn recompress(
    doc: &Document,
    stream: &Stream,
    usage: Usage,
    settings: ImageSettings,
    budget: &mut u64,
) -> Option<(Stream, bool)> {
    let dict = &stream.dict;
    if dict.get(b"Subtype").and_then(Object::as_name).ok() != Some(b"Image")
        || dict.get(b"ImageMask").and_then(Object::as_bool).unwrap_or(false)
        || dict.has(b"Decode")
        // A colour-key mask needs exact colours, which JPEG does not keep; with a soft
        // mask beside it, readers ignore the colour key (ISO 32000-1, 11.6.5.2).
        || (matches!(dict.get(b"Mask"), Ok(Object::Array(_))) && !dict.has(b"SMask"))
        || int(doc, dict, b"BitsPerComponent")? != 8
    {
        return None;
    }
    let width = u32::try_from(int(doc, dict, b"Width")?).ok().filter(|w| *w > 0)?;
    let height = u32::try_from(int(doc, dict, b"Height")?).ok().filter(|h| *h > 0)?;
    let components = components(doc, dict.get(b"ColorSpace").ok()?)?;
    if usage.mask && components != 1 {
        return None;
    }
    let decoded_bytes = width as u64 * height as u64 * components as u64;
    if decoded_bytes > MAX_IMAGE_DECODE_BYTES || decoded_bytes > *budget {
        return None;
    }
    let (encoding, flate_over_jpeg) = image_filters(doc, dict)?;
    if !(usage.width > 0.0 && usage.height > 0.0) {
        return None;
    }
    let target = |inches: f64, pixels: u32| -> u32 {
        let wanted = (inches * settings.target_dpi).ceil();
        if wanted.is_finite() && wanted >= 1.0 && wanted < pixels as f64 { wanted as u32 } else { pixels }
    };
    let new_width = target(usage.width / 72.0, width);
    let new_height = target(usage.height / 72.0, height);
    let downsample = new_width < width || new_height < height;
    // A mask is never stored as JPEG: at its own size there is nothing to do.
    if !downsample && usage.mask {
        return None;
    }
    *budget -= decoded_bytes;
    let pixels = match encoding {
        Encoding::Dct if flate_over_jpeg => {
            let jpeg = inflate(&stream.content, MAX_IMAGE_DECODE_BYTES as usize)?;
            decode_jpeg(&jpeg, width, height, components)?
        }
        Encoding::Dct => decode_jpeg(&stream.content, width, height, components)?,
        Encoding::Raw | Encoding::Flate => decode_samples(doc, dict, stream, encoding, width, height, components)?,
    };
    let photo = !usage.mask && (encoding == Encoding::Dct || continuous_tone(&pixels));
    if !downsample && !photo {
        return None;
    }
    let pixels = if downsample { resize(pixels, new_width, new_height)? } else { pixels };
    let (content, filter) = if photo {
        (encode_jpeg(&pixels, settings.jpeg_quality)?, "DCTDecode")
    } else {
        (zlib_best(&pixels.data), "FlateDecode")
    };
    let limit = if !downsample && encoding == Encoding::Dct {
        (stream.content.len() as f64 * JPEG_REENCODE_GAIN) as usize
    } else {
        stream.content.len()
    };
    if content.len() >= limit {
        return None;
    }
    let mut new_dict = dict.clone();
    new_dict.set("Width", pixels.width as i64);
    new_dict.set("Height", pixels.height as i64);
    new_dict.set("BitsPerComponent", 8);
    new_dict.set("Filter", Object::Name(filter.as_bytes().to_vec()));
    new_dict.remove(b"DecodeParms");
    if new_dict.has(b"SMask") {
        new_dict.remove(b"Mask");
    }
    Some((Stream::new(new_dict, content), downsample))
}

fn int(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<i64> {
    match doc.dereference(dict.get(key).ok()?).ok()?.1 {
        Object::Integer(i) => Some(*i),
        _ => None,
    }
}

/// Components per pixel of the colour spaces handled: DeviceGray, DeviceRGB, and
/// ICCBased with 1 or 3 components.
fn components(doc: &Document, space: &Object) -> Option<usize> {
    match doc.dereference(space).ok()?.1 {
        Object::Name(name) if name == b"DeviceRGB" => Some(3),
        Object::Name(name) if name == b"DeviceGray" => Some(1),
        Object::Array(items) if items.len() == 2 && items.first()?.as_name().ok()? == b"ICCBased" => {
            let profile = doc.dereference(items.get(1)?).ok()?.1.as_stream().ok()?;
            match int(doc, &profile.dict, b"N")? {
                1 => Some(1),
                3 => Some(3),
                _ => None,
            }
        }
        _ => None,
    }
}

/// How the image's samples are stored, and whether a Flate layer wraps a JPEG; None for
/// other filters and chains.
fn image_filters(doc: &Document, dict: &Dictionary) -> Option<(Encoding, bool)> {
    let names: Vec<&[u8]> = match dict.get(b"Filter") {
        Err(_) => Vec::new(),
        Ok(filter) => match doc.dereference(filter).ok()?.1 {
            Object::Name(name) => vec![name.as_slice()],
            Object::Array(items) => items.iter().map(|i| i.as_name().ok()).collect::<Option<_>>()?,
            _ => return None,
        },
    };
    // ColorTransform overrides what the JPEG says; the decoder would not know. Other
    // entries (some producers note a /Quality) change nothing.
    let plain_jpeg = |parms: Option<&Object>| match parms.map(|p| doc.dereference(p).map(|(_, o)| o)) {
        None | Some(Ok(Object::Null)) => true,
        Some(Ok(Object::Dictionary(d))) => !d.has(b"ColorTransform"),
        Some(_) => false,
    };
    let parms = dict.get(b"DecodeParms").ok();
    match names.as_slice() {
        [] => Some((Encoding::Raw, false)),
        [b"FlateDecode"] => Some((Encoding::Flate, false)),
        [b"DCTDecode"] => {
            let single = match parms.map(|p| doc.dereference(p).map(|(_, o)| o)) {
                Some(Ok(Object::Array(items))) if items.len() == 1 => items.first(),
                _ => parms,
            };
            plain_jpeg(single).then_some((Encoding::Dct, false))
        }
        // Some producers deflate their JPEGs: a plain Flate layer over one.
        [b"FlateDecode", b"DCTDecode"] => {
            let (flate, jpeg) = match parms.map(|p| doc.dereference(p).map(|(_, o)| o)) {
                None | Some(Ok(Object::Null)) => (None, None),
                Some(Ok(Object::Array(items))) if items.len() == 2 => (items.first(), items.get(1)),
                _ => return None,
            };
            let plain_flate = match flate.map(|p| doc.dereference(p).map(|(_, o)| o)) {
                None | Some(Ok(Object::Null)) => true,
                Some(Ok(Object::Dictionary(d))) => !d.has(b"Predictor"),
                Some(_) => false,
            };
            (plain_flate && plain_jpeg(jpeg)).then_some((Encoding::Dct, true))
        }
        _ => None,
    }
}

/// The decode parameters of a single-filter stream (a one-element array unwrapped).
fn decode_parms<'d>(doc: &'d Document, dict: &'d Dictionary) -> Option<Option<&'d Dictionary>> {
    let Ok(parms) = dict.get(b"DecodeParms") else { return Some(None) };
    match doc.dereference(parms).ok()?.1 {
        Object::Null => Some(None),
        Object::Dictionary(d) => Some(Some(d)),
        Object::Array(items) if items.len() <= 1 => match items.first() {
            None => Some(None),
            Some(item) => match doc.dereference(item).ok()?.1 {
                Object::Null => Some(None),
                Object::Dictionary(d) => Some(Some(d)),
                _ => None,
            },
        },
        _ => None,
    }
}
