//! What the pass reads from and writes into libqpdf's objects: names with a stray `#`
//! rewritten, objects as qpdf's JSON, a stream's filters and their parameters, the size and
//! blank sample of an image.

use serde_json::{Value, json};

use super::content_tokens;
use super::filters;
use super::qpdf_handle::{Doc, Kind, Obj};

/// A copy of `obj` (looked through if indirect) whose names with a stray `#` are written
/// properly; keys with one are dropped (their values cannot be read through the C API).
/// Indirect objects inside stay references.
pub(super) fn fixed_copy<'d>(doc: &'d Doc, obj: &Obj<'d>, notes: &mut Vec<String>, depth: usize) -> Obj<'d> {
    if depth > 0 && obj.indirect().is_some() {
        return obj.dup();
    }
    match obj.kind() {
        Kind::Name => {
            let name = obj.name();
            if name.contains(&0) {
                let fixed: Vec<u8> = name.iter().map(|&b| if b == 0 { b'#' } else { b }).collect();
                notes.push(format!("wrote the name {} properly (it had a stray #)", show_name(&fixed)));
                doc.name(&fixed)
            } else {
                obj.dup()
            }
        }
        Kind::Array if depth < 500 => {
            let copy = doc.array();
            for i in 0..obj.len() {
                copy.push(&fixed_copy(doc, &obj.item(i), notes, depth + 1));
            }
            copy
        }
        Kind::Dict if depth < 500 => {
            let copy = doc.dictionary();
            for key in obj.keys() {
                if obj.has(&key) {
                    copy.set(&key, &fixed_copy(doc, &obj.get(&key), notes, depth + 1));
                } else {
                    let mut shown = key.clone();
                    shown.extend_from_slice(b"...");
                    notes.push(format!(
                        "dropped the key {}, whose name is malformed (a # not followed by two hex digits)",
                        show_name(&shown)
                    ));
                }
            }
            copy
        }
        _ => obj.dup(),
    }
}

/// An object in qpdf's JSON (version 2), for `qpdf_update_from_json_data`.
pub(super) fn to_json(obj: &Obj<'_>, depth: usize) -> Value {
    if depth > 0
        && let Some((id, generation)) = obj.indirect()
    {
        return Value::String(format!("{id} {generation} R"));
    }
    if depth > 500 {
        return Value::Null;
    }
    match obj.kind() {
        Kind::Bool => Value::Bool(obj.boolean()),
        Kind::Int => json!(obj.integer()),
        Kind::Real => {
            let text = obj.real();
            let number: f64 = text.trim_end_matches('.').parse().unwrap_or(0.0);
            serde_json::Number::from_f64(number).map_or(json!(0), Value::Number)
        }
        Kind::Str => {
            let hex: String = obj.string().iter().map(|b| format!("{b:02x}")).collect();
            Value::String(format!("b:{hex}"))
        }
        Kind::Name => Value::String(json_name(&obj.name())),
        Kind::Array => Value::Array((0..obj.len()).map(|i| to_json(&obj.item(i), depth + 1)).collect()),
        Kind::Dict => {
            let mut map = serde_json::Map::new();
            for key in obj.keys() {
                if obj.has(&key) {
                    map.insert(json_name(&key), to_json(&obj.get(&key), depth + 1));
                }
            }
            Value::Object(map)
        }
        _ => Value::Null,
    }
}

/// A name in qpdf's JSON: as it is when plain, else `n:` and its PDF syntax.
fn json_name(name: &[u8]) -> String {
    let body = name.strip_prefix(b"/").unwrap_or(name);
    if body.iter().all(|&b| content_tokens::is_regular(b) && b != b'#' && b.is_ascii_graphic()) {
        return format!("/{}", String::from_utf8_lossy(body));
    }
    format!("n:{}", pdf_name(body))
}

/// A name's PDF syntax (`/` and its bytes, `#xx` where needed).
fn pdf_name(body: &[u8]) -> String {
    let mut out = String::from("/");
    for &b in body {
        if b.is_ascii_graphic() && content_tokens::is_regular(b) && b != b'#' {
            out.push(b as char);
        } else {
            out.push_str(&format!("#{b:02X}"));
        }
    }
    out
}

/// A name for the report: its PDF syntax, bounded.
pub(super) fn show_name(name: &[u8]) -> String {
    let body = name.strip_prefix(b"/").unwrap_or(name);
    let text: String =
        body.iter().take(60).map(|&b| if b.is_ascii_graphic() && b != b'\\' { b as char } else { '?' }).collect();
    format!("/{text}")
}

/// A filter named by a string: its name, when it is one qpdf knows.
pub(super) fn known_filter(value: &[u8]) -> Option<Vec<u8>> {
    const KNOWN: [&[u8]; 17] = [
        b"FlateDecode",
        b"Fl",
        b"LZWDecode",
        b"LZW",
        b"ASCII85Decode",
        b"A85",
        b"ASCIIHexDecode",
        b"AHx",
        b"RunLengthDecode",
        b"RL",
        b"DCTDecode",
        b"DCT",
        b"CCITTFaxDecode",
        b"CCF",
        b"JBIG2Decode",
        b"JPXDecode",
        b"Crypt",
    ];
    let value = value.strip_prefix(b"/").unwrap_or(value);
    KNOWN.contains(&value).then(|| [b"/", value].concat())
}

/// The decoding step for a filter name with its parameters; `None` for a filter this pass does
/// not decode (qpdf may decode DCT, but only at a level `qpdf --check` does not use).
pub(super) fn layer(name: &[u8], parms: Option<&Obj<'_>>) -> Option<filters::Layer> {
    use filters::{Filter, Layer, Predictor};
    let filter = match name {
        b"/FlateDecode" | b"/Fl" => Filter::Flate,
        b"/LZWDecode" | b"/LZW" => Filter::Lzw { early: true },
        b"/ASCII85Decode" | b"/A85" => Filter::A85,
        b"/ASCIIHexDecode" | b"/AHx" => Filter::AHx,
        b"/RunLengthDecode" | b"/RL" => Filter::RunLength,
        b"/DCTDecode" | b"/DCT" => Filter::Dct,
        _ => return None,
    };
    let mut layer = Layer { filter, predictor: Predictor::None, usable: true };
    let Some(parms) = parms else { return Some(layer) };
    if !matches!(layer.filter, Filter::Flate | Filter::Lzw { .. }) {
        return Some(layer);
    }
    match parms.kind() {
        Kind::Null => return Some(layer),
        Kind::Dict => {}
        _ => {
            layer.usable = false;
            return Some(layer);
        }
    }
    // As qpdf's SF_FlateLzwDecode::setDecodeParms: anything it does not take makes the stream
    // one qpdf does not decode.
    let int = |key: &[u8]| -> Result<Option<i64>, ()> {
        if !parms.has(key) {
            return Ok(None);
        }
        let value = parms.get(key);
        match value.kind() {
            Kind::Int => Ok(Some(value.integer())),
            Kind::Null => Ok(None),
            _ => Err(()),
        }
    };
    let (Ok(predictor), Ok(columns), Ok(colors), Ok(bpc), Ok(early)) =
        (int(b"/Predictor"), int(b"/Columns"), int(b"/Colors"), int(b"/BitsPerComponent"), int(b"/EarlyChange"))
    else {
        layer.usable = false;
        return Some(layer);
    };
    if let Filter::Lzw { early: e } = &mut layer.filter {
        *e = early.unwrap_or(1) == 1;
    }
    let predictor = predictor.unwrap_or(1);
    let geometry =
        filters::Geometry { columns: columns.unwrap_or(1), colors: colors.unwrap_or(1), bpc: bpc.unwrap_or(8) };
    layer.predictor = match predictor {
        1 => Predictor::None,
        2 => Predictor::Tiff(geometry),
        10..=15 => Predictor::Png(geometry),
        _ => {
            layer.usable = false;
            Predictor::None
        }
    };
    Some(layer)
}

/// How a blank image of the stream's size is made.
pub(super) struct ImageLayout {
    /// Bytes of the whole image.
    pub(super) len: usize,
    /// Bytes of one row.
    pub(super) row: usize,
    /// The byte that draws nothing (white, no ink, or masked out).
    pub(super) blank: u8,
}

/// An image's size and blank sample, when its dictionary tells them (and it fits the limit).
pub(super) fn image_layout(dict: &Obj<'_>, cap: usize) -> Option<ImageLayout> {
    let int = |key: &[u8]| -> Option<i64> {
        if !dict.has(key) {
            return None;
        }
        let value = dict.get(key);
        (value.kind() == Kind::Int).then(|| value.integer())
    };
    let width = int(b"/Width").filter(|w| *w > 0)?;
    let height = int(b"/Height").filter(|h| *h > 0)?;
    let mask = dict.has(b"/ImageMask") && {
        let value = dict.get(b"/ImageMask");
        value.kind() == Kind::Bool && value.boolean()
    };
    // A /Decode that starts high-to-low inverts the samples.
    let inverted = dict.has(b"/Decode") && {
        let decode = dict.get(b"/Decode");
        let number = |o: Obj<'_>| match o.kind() {
            Kind::Int => Some(o.integer() as f64),
            Kind::Real => o.real().trim_end_matches('.').parse().ok(),
            _ => None,
        };
        decode.kind() == Kind::Array
            && decode.len() >= 2
            && matches!((number(decode.item(0)), number(decode.item(1))), (Some(a), Some(b)) if a > b)
    };
    let (components, bpc, blank) = if mask {
        // Sample 1 is masked out.
        (1, 1, 0xff)
    } else {
        let bpc = int(b"/BitsPerComponent").filter(|b| [1, 2, 4, 8, 16].contains(b))?;
        if !dict.has(b"/ColorSpace") {
            return None;
        }
        let (components, blank) = color_space(&dict.get(b"/ColorSpace"))?;
        (components, bpc, blank)
    };
    let bits = (width as u128) * (components as u128) * (bpc as u128);
    let row = bits.div_ceil(8);
    let len = row.checked_mul(height as u128)?;
    if len > cap as u128 {
        return None;
    }
    Some(ImageLayout { len: len as usize, row: row as usize, blank: if inverted { !blank } else { blank } })
}

/// Components and blank sample (white, or no ink) of a colour space.
fn color_space(cs: &Obj<'_>) -> Option<(i64, u8)> {
    match cs.kind() {
        Kind::Name => match cs.name().as_slice() {
            b"/DeviceGray" | b"/G" | b"/CalGray" => Some((1, 0xff)),
            b"/DeviceRGB" | b"/RGB" | b"/CalRGB" => Some((3, 0xff)),
            b"/DeviceCMYK" | b"/CMYK" => Some((4, 0x00)),
            _ => None,
        },
        Kind::Array if cs.len() >= 1 => {
            let family = cs.item(0);
            if family.kind() != Kind::Name {
                return None;
            }
            match family.name().as_slice() {
                b"/CalGray" => Some((1, 0xff)),
                b"/CalRGB" | b"/Lab" => Some((3, 0xff)),
                b"/Indexed" | b"/I" | b"/Separation" => Some((1, 0x00)),
                b"/DeviceN" if cs.len() >= 2 => {
                    let names = cs.item(1);
                    (names.kind() == Kind::Array && names.len() >= 1).then(|| (names.len() as i64, 0x00))
                }
                b"/ICCBased" if cs.len() >= 2 => {
                    let profile = cs.item(1);
                    if profile.kind() != Kind::Stream {
                        return None;
                    }
                    let dict = profile.stream_dict();
                    if !dict.has(b"/N") {
                        return None;
                    }
                    let n = dict.get(b"/N");
                    match (n.kind() == Kind::Int).then(|| n.integer()) {
                        Some(1) => Some((1, 0xff)),
                        Some(3) => Some((3, 0xff)),
                        Some(4) => Some((4, 0x00)),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}
