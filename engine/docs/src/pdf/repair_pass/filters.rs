//! The filters qpdf decodes when it checks a file, decoded here with a bound on the output,
//! as libqpdf's own decoders do (their errors are the same): first to measure a stream before
//! qpdf decodes it, then to keep what precedes the damage in one it cannot.

use flate2::{Decompress, FlushDecompress, Status};

use super::qpdf_handle::Level;

/// A filter.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Filter {
    Flate,
    Lzw {
        early: bool,
    },
    A85,
    AHx,
    RunLength,
    /// JPEG: only measured and, to salvage an image, decoded by a tolerant decoder.
    Dct,
}

/// Predictor parameters (/DecodeParms of Flate and LZW).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub columns: i64,
    pub colors: i64,
    pub bpc: i64,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Predictor {
    None,
    Tiff(Geometry),
    Png(Geometry),
}

/// One filter of a stream's chain.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layer {
    pub filter: Filter,
    pub predictor: Predictor,
    /// False when qpdf does not take the parameters (and so does not decode the stream).
    pub usable: bool,
}

impl Layer {
    /// Whether qpdf decodes this filter at `level`.
    pub(super) fn decoded_at(&self, level: Level) -> bool {
        self.usable
            && match self.filter {
                Filter::RunLength => matches!(level, Level::Specialized | Level::All),
                Filter::Dct => level == Level::All,
                _ => level != Level::None,
            }
    }
}

/// What decoding gave.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// All of it.
    Complete(Vec<u8>),
    /// What came before the damage, and why it stopped.
    Cut(Vec<u8>, &'static str),
    /// More than the limit.
    TooLarge,
}

/// Decodes `raw` through `layers`, never producing more than `cap` bytes at any step;
/// with `predict`, predictors are undone too (else the size is all that is wanted, and a
/// predictor never adds bytes).
pub(crate) fn run(raw: &[u8], layers: &[Layer], cap: usize, predict: bool) -> Outcome {
    let mut data = raw.to_vec();
    let mut cut: Option<&'static str> = None;
    for layer in layers {
        let outcome = match layer.filter {
            Filter::Flate => inflate(&data, cap),
            Filter::Lzw { early } => lzw(&data, early, cap),
            Filter::A85 => a85(&data),
            Filter::AHx => ahx(&data),
            Filter::RunLength => run_length(&data, cap),
            // JPEG data is measured apart (see `jpeg_info`); nothing after it is decoded.
            Filter::Dct => return Outcome::Cut(data, "its JPEG data is not decoded here"),
        };
        let (out, why) = match outcome {
            Outcome::TooLarge => return Outcome::TooLarge,
            Outcome::Complete(out) => (out, None),
            Outcome::Cut(out, why) => (out, Some(why)),
        };
        cut = cut.or(why);
        data = out;
        if predict {
            let (out, why) = unpredict(data, layer.predictor);
            data = out;
            cut = cut.or(why);
        }
    }
    match cut {
        Some(why) => Outcome::Cut(data, why),
        None => Outcome::Complete(data),
    }
}

fn inflate(data: &[u8], cap: usize) -> Outcome {
    let mut z = Decompress::new(true);
    let mut out: Vec<u8> =
        Vec::with_capacity(data.len().saturating_mul(2).clamp(64, 1 << 20).min(cap.saturating_add(1)));
    loop {
        if out.len() > cap {
            return Outcome::TooLarge;
        }
        if out.len() == out.capacity() {
            let more = out.len().clamp(1 << 16, 1 << 24).min(cap.saturating_add(1) - out.len());
            out.reserve(more);
        }
        let consumed = z.total_in() as usize;
        let produced = out.len();
        let input = data.get(consumed..).unwrap_or_default();
        match z.decompress_vec(input, &mut out, FlushDecompress::None) {
            Ok(Status::StreamEnd) => return Outcome::Complete(out),
            Ok(_) => {
                if z.total_in() as usize == consumed && out.len() == produced {
                    let why = if deflate_ends(data) { NO_CHECKSUM } else { "its compressed data ends early" };
                    return Outcome::Cut(out, why);
                }
            }
            Err(_) => return Outcome::Cut(out, "the compressed data is corrupt"),
        }
    }
}

/// What a JPEG's header says.
pub(crate) struct JpegInfo {
    width: u64,
    height: u64,
    components: u64,
    precision: u64,
    /// An Adobe marker says the three components are RGB, not YCbCr.
    rgb: bool,
}

impl JpegInfo {
    /// Bytes of the decoded image.
    pub(crate) fn size(&self) -> u64 {
        self.width * self.height * self.components * if self.precision > 8 { 2 } else { 1 }
    }
}

/// Reads a JPEG's frame header (and Adobe marker) without decoding it.
pub(crate) fn jpeg_info(data: &[u8]) -> Option<JpegInfo> {
    if data.get(..2)? != [0xff, 0xd8] {
        return None;
    }
    let mut rgb = false;
    let mut i = 2;
    loop {
        while data.get(i)? != &0xff {
            i += 1;
        }
        while data.get(i)? == &0xff {
            i += 1;
        }
        let marker = *data.get(i)?;
        i += 1;
        if matches!(marker, 0x01 | 0xd0..=0xd8) {
            continue;
        }
        let len = usize::from(u16::from_be_bytes([*data.get(i)?, *data.get(i + 1)?]));
        let segment = data.get(i + 2..i + len.max(2))?;
        match marker {
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                let (precision, height, width, components) = (
                    u64::from(*segment.first()?),
                    u64::from(u16::from_be_bytes([*segment.get(1)?, *segment.get(2)?])),
                    u64::from(u16::from_be_bytes([*segment.get(3)?, *segment.get(4)?])),
                    u64::from(*segment.get(5)?),
                );
                return Some(JpegInfo { width, height, components, precision, rgb });
            }
            0xee if segment.starts_with(b"Adobe") => rgb = segment.get(11) == Some(&0),
            0xda | 0xd9 => return None,
            _ => {}
        }
        i += len;
    }
}

/// A JPEG's samples, as a tolerant decoder reads them (8-bit gray or RGB only; none when
/// it fails or the image would pass `cap`).
pub(crate) fn jpeg_pixels(data: &[u8], cap: usize) -> Option<Vec<u8>> {
    use image::ImageDecoder as _;
    let info = jpeg_info(data)?;
    if info.precision != 8 || !matches!(info.components, 1 | 3) || info.rgb || info.size() > cap as u64 {
        return None;
    }
    let mut decoder = image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(data)).ok()?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(cap as u64);
    decoder.set_limits(limits).ok()?;
    let wanted = if info.components == 3 { image::ColorType::Rgb8 } else { image::ColorType::L8 };
    if decoder.color_type() != wanted || u64::from(decoder.dimensions().0) != info.width {
        return None;
    }
    let mut pixels = vec![0u8; usize::try_from(decoder.total_bytes()).ok()?];
    decoder.read_image(&mut pixels).ok()?;
    Some(pixels)
}

/// Why a zlib stream whose deflate data is whole still fails: its checksum is missing.
pub(super) const NO_CHECKSUM: &str = "its compressed data lacks its final checksum";

/// Whether the deflate data inside a zlib stream reaches its last block (only the checksum
/// after it is missing). Output is discarded.
fn deflate_ends(data: &[u8]) -> bool {
    let Some(body) = data.get(2..) else { return false };
    let mut z = Decompress::new(false);
    let mut sink = vec![0u8; 1 << 16];
    loop {
        let (consumed, produced) = (z.total_in(), z.total_out());
        let input = body.get(z.total_in() as usize..).unwrap_or_default();
        match z.decompress(input, &mut sink, FlushDecompress::None) {
            Ok(Status::StreamEnd) => return true,
            Ok(_) if z.total_in() != consumed || z.total_out() != produced => {}
            _ => return false,
        }
    }
}

/// LZW as libqpdf's Pl_LZWDecoder decodes it (same table, same errors).
fn lzw(data: &[u8], early: bool, cap: usize) -> Outcome {
    let mut table: Vec<Vec<u8>> = Vec::new();
    let mut out = Vec::new();
    let mut code_size = 9u32;
    let mut last: u32 = 256;
    let mut bits: u32 = 0;
    let mut nbits = 0u32;
    let first_char = |table: &Vec<Vec<u8>>, code: u32| -> Option<u8> {
        if code < 256 {
            return Some(code as u8);
        }
        table.get(code.checked_sub(258)? as usize).and_then(|e| e.first().copied())
    };
    for &byte in data {
        bits = (bits << 8) | u32::from(byte);
        nbits += 8;
        if nbits < code_size {
            continue;
        }
        nbits -= code_size;
        let code = (bits >> nbits) & ((1 << code_size) - 1);
        bits &= (1 << nbits) - 1;
        match code {
            256 => {
                table.clear();
                code_size = 9;
            }
            257 => return Outcome::Complete(out),
            _ => {
                if last != 256 {
                    let next = if code < 256 {
                        Some(code as u8)
                    } else {
                        let index = (code - 258) as usize;
                        match index.cmp(&table.len()) {
                            std::cmp::Ordering::Greater => None,
                            std::cmp::Ordering::Equal => first_char(&table, last),
                            std::cmp::Ordering::Less => first_char(&table, code),
                        }
                    };
                    let Some(next) = next else { return Outcome::Cut(out, "the LZW data has a bad code") };
                    let new_index = 258 + table.len() as u32;
                    if new_index == 4096 {
                        return Outcome::Cut(out, "the LZW table is full");
                    }
                    let mut entry = if last < 256 {
                        vec![last as u8]
                    } else {
                        match table.get((last - 258) as usize) {
                            Some(e) => e.clone(),
                            None => return Outcome::Cut(out, "the LZW data has a bad code"),
                        }
                    };
                    entry.push(next);
                    table.push(entry);
                    if matches!(new_index + u32::from(early), 511 | 1023 | 2047) {
                        code_size += 1;
                    }
                }
                if code < 256 {
                    out.push(code as u8);
                } else {
                    match table.get((code - 258) as usize) {
                        Some(entry) => out.extend_from_slice(entry),
                        None => return Outcome::Cut(out, "the LZW data has a bad code"),
                    }
                }
                if out.len() > cap {
                    return Outcome::TooLarge;
                }
            }
        }
        last = code;
    }
    Outcome::Complete(out)
}

/// ASCII85 as libqpdf decodes it (output is shorter than input).
fn a85(data: &[u8]) -> Outcome {
    let mut out = Vec::with_capacity(data.len());
    let mut group = [b'u'; 5];
    let mut pos = 0;
    let mut tilde = false;
    let flush = |group: &mut [u8; 5], pos: &mut usize, out: &mut Vec<u8>| {
        if *pos == 0 {
            return;
        }
        let value = group.iter().fold(0u64, |v, &c| v * 85 + u64::from(c - 33));
        let bytes = (value as u32).to_be_bytes();
        out.extend_from_slice(&bytes[..*pos - 1]);
        *pos = 0;
        *group = [b'u'; 5];
    };
    for &c in data {
        if matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c) {
            continue;
        }
        if tilde {
            if c != b'>' {
                return Outcome::Cut(out, "the ASCII85 data ends badly");
            }
            flush(&mut group, &mut pos, &mut out);
            return Outcome::Complete(out);
        }
        match c {
            b'~' => tilde = true,
            b'z' if pos == 0 => out.extend_from_slice(&[0; 4]),
            b'z' => return Outcome::Cut(out, "the ASCII85 data has a misplaced z"),
            33..=117 => {
                group[pos] = c;
                pos += 1;
                if pos == 5 {
                    flush(&mut group, &mut pos, &mut out);
                }
            }
            _ => return Outcome::Cut(out, "the ASCII85 data has a character out of range"),
        }
    }
    flush(&mut group, &mut pos, &mut out);
    Outcome::Complete(out)
}

/// ASCIIHex as libqpdf decodes it.
fn ahx(data: &[u8]) -> Outcome {
    let mut out = Vec::with_capacity(data.len() / 2 + 1);
    let mut high: Option<u8> = None;
    for &c in data {
        let nibble = match c.to_ascii_uppercase() {
            b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c => continue,
            b'>' => break,
            d @ b'0'..=b'9' => d - b'0',
            d @ b'A'..=b'F' => d - b'A' + 10,
            _ => {
                if let Some(h) = high {
                    out.push(h << 4);
                }
                return Outcome::Cut(out, "the ASCIIHex data has a character out of range");
            }
        };
        match high.take() {
            Some(h) => out.push((h << 4) | nibble),
            None => high = Some(nibble),
        }
    }
    if let Some(h) = high {
        out.push(h << 4);
    }
    Outcome::Complete(out)
}

/// Run-length as libqpdf decodes it (it reads on past the end-of-data byte).
fn run_length(data: &[u8], cap: usize) -> Outcome {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&len) = data.get(i) {
        i += 1;
        match len {
            0..=127 => {
                let end = (i + usize::from(len) + 1).min(data.len());
                out.extend_from_slice(&data[i..end]);
                i = end;
            }
            128 => {}
            _ => {
                if let Some(&b) = data.get(i) {
                    out.resize(out.len() + 257 - usize::from(len), b);
                    i += 1;
                }
            }
        }
        if out.len() > cap {
            return Outcome::TooLarge;
        }
    }
    Outcome::Complete(out)
}

/// Undoes a predictor; keeps whole rows only. A predictor this cannot undo leaves nothing
/// usable.
fn unpredict(data: Vec<u8>, predictor: Predictor) -> (Vec<u8>, Option<&'static str>) {
    let geometry = match predictor {
        Predictor::None => return (data, None),
        Predictor::Tiff(g) | Predictor::Png(g) => g,
    };
    let bits = geometry.columns.checked_mul(geometry.colors).and_then(|v| v.checked_mul(geometry.bpc));
    let Some(row) = bits.filter(|b| *b > 0 && *b <= (1 << 34)).map(|b| ((b + 7) / 8) as usize) else {
        return (Vec::new(), Some("its predictor parameters are invalid"));
    };
    if !(1..=16).contains(&geometry.bpc) || geometry.colors < 1 || row >= data.len() {
        return (Vec::new(), Some("its predictor parameters are invalid"));
    }
    let pixel = ((geometry.colors * geometry.bpc) as usize).div_ceil(8).max(1);
    match predictor {
        Predictor::Png(_) => {
            let mut out = Vec::with_capacity(data.len());
            let mut previous = vec![0u8; row];
            let mut why = None;
            for chunk in data.chunks(row + 1) {
                if chunk.len() < row + 1 {
                    why = Some("the data ends in the middle of a row");
                    break;
                }
                let mut current = chunk[1..].to_vec();
                for i in 0..row {
                    let left = if i >= pixel { current[i - pixel] } else { 0 };
                    let up = previous[i];
                    let up_left = if i >= pixel { previous[i - pixel] } else { 0 };
                    let add = match chunk[0] {
                        0 => 0,
                        1 => left,
                        2 => up,
                        3 => ((u16::from(left) + u16::from(up)) / 2) as u8,
                        4 => paeth(left, up, up_left),
                        _ => {
                            why = Some("a row has an unknown predictor");
                            break;
                        }
                    };
                    current[i] = current[i].wrapping_add(add);
                }
                if why.is_some() {
                    break;
                }
                out.extend_from_slice(&current);
                previous = current;
            }
            (out, why)
        }
        _ if geometry.bpc == 8 => {
            let mut out = data;
            let whole = out.len() / row * row;
            out.truncate(whole);
            let colors = geometry.colors as usize;
            for line in out.chunks_mut(row) {
                for i in colors..line.len() {
                    line[i] = line[i].wrapping_add(line[i - colors]);
                }
            }
            (out, None)
        }
        _ => (Vec::new(), Some("its predictor is not supported here")),
    }
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(filter: Filter) -> Layer {
        Layer { filter, predictor: Predictor::None, usable: true }
    }

    #[test]
    fn decoders_keep_what_precedes_the_damage() {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&b"0123456789".repeat(1000)).unwrap();
        let full = z.finish().unwrap();
        match run(&full, &[layer(Filter::Flate)], 1 << 20, true) {
            Outcome::Complete(data) => assert_eq!(data.len(), 10_000),
            other => panic!("{other:?}"),
        }
        match run(&full[..full.len() / 2], &[layer(Filter::Flate)], 1 << 20, true) {
            Outcome::Cut(data, why) => {
                assert!(!data.is_empty() && data.len() < 10_000);
                assert!(why.contains("ends early"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(run(&full, &[layer(Filter::Flate)], 5_000, false), Outcome::TooLarge));

        // "-----A---B" from the PDF reference's LZW example, with EarlyChange.
        let lzw = [0x80, 0x0B, 0x60, 0x50, 0x22, 0x0C, 0x0C, 0x85, 0x01];
        match run(&lzw, &[layer(Filter::Lzw { early: true })], 1 << 20, true) {
            Outcome::Complete(data) => assert_eq!(data, b"-----A---B"),
            other => panic!("{other:?}"),
        }
        match run(&[0x80, 0x0B, 0x7F, 0xFF, 0xFF], &[layer(Filter::Lzw { early: true })], 1 << 20, true) {
            Outcome::Cut(data, why) => {
                assert_eq!(data, b"-");
                assert!(why.contains("bad code"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        match run(b"87cURD]i,\"Ebo80~>", &[layer(Filter::A85)], 100, true) {
            Outcome::Complete(data) => assert_eq!(data, b"Hello World!"),
            other => panic!("{other:?}"),
        }
        match run(b"48656C6C6F7>", &[layer(Filter::AHx)], 100, true) {
            Outcome::Complete(data) => assert_eq!(data, b"Hellop"),
            other => panic!("{other:?}"),
        }
        match run(&[2, b'a', b'b', b'c', 254, b'x', 128], &[layer(Filter::RunLength)], 100, true) {
            Outcome::Complete(data) => assert_eq!(data, b"abcxxx"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(run(&[129, b'x', 129, b'x'], &[layer(Filter::RunLength)], 200, true), Outcome::TooLarge));
    }
}
