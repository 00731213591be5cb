//! An image's pixels: raw and Flate samples decoded (PNG predictors undone), JPEGs
//! decoded after their header is checked, photos told from flat graphics, pixels resized
//! and encoded as JPEG.
//!
//! What this module must not do: decode more than the width, height and components it is
//! given, or decide what to write (the module above does).

use std::collections::HashMap;

use lopdf::{Dictionary, Document, Stream};

use super::{Encoding, MAX_IMAGE_DECODE_BYTES, decode_parms};
use crate::pdf;
use crate::pdf::flate::inflate;

/// Decoded 8-bit samples, 1 (gray) or 3 (RGB) per pixel.
pub(super) struct Pixels {
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) components: usize,
    pub(super) data: Vec<u8>,
}

pub(super) fn decode_samples(
    doc: &Document,
    dict: &Dictionary,
    stream: &Stream,
    encoding: Encoding,
    width: u32,
    height: u32,
    components: usize,
) -> Option<Pixels> {
    let row = width as usize * components;
    let size = row * height as usize;
    let (predictor, parms) = match decode_parms(doc, dict)? {
        None => (1, None),
        Some(parms) => (parms.get(b"Predictor").ok().map_or(Some(1.0), |o| pdf::number(doc, o))? as i64, Some(parms)),
    };
    if predictor > 1 {
        // The predictor's own idea of the row must be the image's.
        let parms = parms?;
        let param = |key: &[u8], default: f64| parms.get(key).ok().map_or(Some(default), |o| pdf::number(doc, o));
        if param(b"Colors", 1.0)? != components as f64
            || param(b"BitsPerComponent", 8.0)? != 8.0
            || param(b"Columns", 1.0)? != width as f64
        {
            return None;
        }
    }
    let png = predictor >= 10;
    let expected = if png { (row + 1) * height as usize } else { size };
    let mut data = match encoding {
        Encoding::Flate => inflate(&stream.content, expected + 4096)?,
        Encoding::Raw if predictor == 1 => stream.content.clone(),
        _ => return None,
    };
    if data.len() < expected {
        return None;
    }
    data.truncate(expected);
    let data = match predictor {
        1 => data,
        2 => {
            for line in data.chunks_exact_mut(row) {
                for i in components..line.len() {
                    line[i] = line[i].wrapping_add(line[i - components]);
                }
            }
            data
        }
        10..=15 => unpredict_png(&data, row, components)?,
        _ => return None,
    };
    Some(Pixels { width, height, components, data })
}

/// Undoes PNG row filters (one filter byte per row) for 8-bit samples.
fn unpredict_png(data: &[u8], row: usize, bpp: usize) -> Option<Vec<u8>> {
    let rows = data.len() / (row + 1);
    let mut out = vec![0u8; rows * row];
    for r in 0..rows {
        let src = data.get(r * (row + 1)..(r + 1) * (row + 1))?;
        let (filter, line) = src.split_first()?;
        let (done, rest) = out.split_at_mut(r * row);
        let prev = if r == 0 { None } else { done.get((r - 1) * row..) };
        let cur = rest.get_mut(..row)?;
        for i in 0..row {
            let a = if i >= bpp { cur[i - bpp] } else { 0 };
            let b = prev.map_or(0, |p| p[i]);
            let c = if i >= bpp { prev.map_or(0, |p| p[i - bpp]) } else { 0 };
            let x = line[i];
            cur[i] = match filter {
                0 => x,
                1 => x.wrapping_add(a),
                2 => x.wrapping_add(b),
                3 => x.wrapping_add(((a as u16 + b as u16) / 2) as u8),
                4 => x.wrapping_add(paeth(a, b, c)),
                _ => return None,
            };
        }
    }
    Some(out)
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = a as i16 + b as i16 - c as i16;
    let (pa, pb, pc) = ((p - a as i16).abs(), (p - b as i16).abs(), (p - c as i16).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// What a JPEG's frame header says.
struct JpegHeader {
    width: u32,
    height: u32,
    components: usize,
    precision: u8,
    /// The Adobe APP14 colour transform, when the marker is there.
    adobe_transform: Option<u8>,
}

fn jpeg_header(data: &[u8]) -> Option<JpegHeader> {
    if data.get(..2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut at = 2;
    let mut adobe_transform = None;
    while at + 4 <= data.len() {
        if data[at] != 0xFF {
            return None;
        }
        let marker = data[at + 1];
        if marker == 0xFF {
            at += 1;
            continue;
        }
        if marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
            at += 2;
            continue;
        }
        let length = u16::from_be_bytes([data[at + 2], data[at + 3]]) as usize;
        let segment = data.get(at + 4..at + 2 + length)?;
        match marker {
            0xEE if segment.starts_with(b"Adobe") => adobe_transform = segment.get(11).copied(),
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                return Some(JpegHeader {
                    precision: *segment.first()?,
                    height: u16::from_be_bytes([*segment.get(1)?, *segment.get(2)?]) as u32,
                    width: u16::from_be_bytes([*segment.get(3)?, *segment.get(4)?]) as u32,
                    components: *segment.get(5)? as usize,
                    adobe_transform,
                });
            }
            0xDA | 0xD9 => return None,
            _ => {}
        }
        at += 2 + length;
    }
    None
}

pub(super) fn decode_jpeg(data: &[u8], width: u32, height: u32, components: usize) -> Option<Pixels> {
    use image::ImageDecoder as _;
    let header = jpeg_header(data)?;
    if header.precision != 8 || header.components != components || (header.width, header.height) != (width, height) {
        return None;
    }
    // Three components the Adobe marker says are RGB, not YCbCr.
    if components == 3 && header.adobe_transform == Some(0) {
        return None;
    }
    let mut decoder = image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(data)).ok()?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(MAX_IMAGE_DECODE_BYTES);
    decoder.set_limits(limits).ok()?;
    let wanted = if components == 3 { image::ColorType::Rgb8 } else { image::ColorType::L8 };
    if decoder.dimensions() != (width, height) || decoder.color_type() != wanted {
        return None;
    }
    let mut buffer = vec![0u8; usize::try_from(decoder.total_bytes()).ok()?];
    decoder.read_image(&mut buffer).ok()?;
    Some(Pixels { width, height, components, data: buffer })
}

/// Whether the samples look like a photo (many colours, none dominant) rather than line
/// art, text or flat graphics, which JPEG would blur.
pub(super) fn continuous_tone(pixels: &Pixels) -> bool {
    let count = pixels.width as usize * pixels.height as usize;
    if count < 64 {
        return false;
    }
    let step = (count / 40_000).max(1);
    let mut colours: HashMap<u32, u32> = HashMap::new();
    let mut sampled = 0u32;
    for chunk in pixels.data.chunks_exact(pixels.components).step_by(step) {
        let key = chunk.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32);
        *colours.entry(key).or_insert(0) += 1;
        sampled += 1;
    }
    let enough = if pixels.components == 1 { 64 } else { 256 };
    if colours.len() < enough {
        return false;
    }
    let mut counts: Vec<u32> = colours.into_values().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let dominant: u32 = counts.iter().take(16).sum();
    (dominant as f64) < 0.5 * sampled as f64
}

pub(super) fn resize(pixels: Pixels, width: u32, height: u32) -> Option<Pixels> {
    use image::imageops::FilterType;
    let components = pixels.components;
    let image = if components == 3 {
        image::DynamicImage::ImageRgb8(image::RgbImage::from_raw(pixels.width, pixels.height, pixels.data)?)
    } else {
        image::DynamicImage::ImageLuma8(image::GrayImage::from_raw(pixels.width, pixels.height, pixels.data)?)
    };
    let resized = image.resize_exact(width, height, FilterType::Triangle);
    Some(Pixels { width, height, components, data: resized.into_bytes() })
}

pub(super) fn encode_jpeg(pixels: &Pixels, quality: u8) -> Option<Vec<u8>> {
    let colour = if pixels.components == 3 { image::ExtendedColorType::Rgb8 } else { image::ExtendedColorType::L8 };
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode(&pixels.data, pixels.width, pixels.height, colour)
        .ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_rows_are_unfiltered() {
        // Two rows of 3 gray pixels: Sub then Up.
        let data = [1, 10, 5, 5, 2, 1, 1, 1];
        assert_eq!(unpredict_png(&data, 3, 1).unwrap(), vec![10, 15, 20, 11, 16, 21]);
        assert!(unpredict_png(&[9, 0, 0, 0], 3, 1).is_none());
    }

    #[test]
    fn reads_jpeg_headers() {
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80)
            .encode(&[0u8; 5 * 7 * 3], 5, 7, image::ExtendedColorType::Rgb8)
            .unwrap();
        let header = jpeg_header(&out).unwrap();
        assert_eq!((header.width, header.height, header.components, header.precision), (5, 7, 3, 8));
        assert!(jpeg_header(b"not a jpeg").is_none());
    }

    #[test]
    fn tells_photos_from_flat_graphics() {
        let noise: Vec<u8> = (0..200u32 * 200 * 3).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        assert!(continuous_tone(&Pixels { width: 200, height: 200, components: 3, data: noise }));
        let flat: Vec<u8> = (0..200u32 * 200).map(|i| if i % 7 == 0 { 0 } else { 255 }).collect();
        assert!(!continuous_tone(&Pixels { width: 200, height: 200, components: 1, data: flat }));
    }
}
