//! Mutations: of raw bytes, of a PDF's tokens, of one part inside an Office ZIP, and of a
//! JSON body's structure. Each iteration stacks one to a few of them.

use std::io::{Read, Write};

use serde_json::{Map, Value, json};

/// A small deterministic generator (xorshift64*): a run is repeated from its seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.bits() % n as u64) as usize }
    }

    /// True one time in `n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    /// One element of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Byte values and numbers that sit on boundaries parsers get wrong.
const INTERESTING_BYTES: &[u8] =
    &[0, 1, 0x7f, 0x80, 0xff, b'(', b')', b'<', b'>', b'[', b']', b'/', b'%', b'\\', b'\n'];
const INTERESTING_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "-0",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "18446744073709551616",
    "99999999999999999999",
    "1e308",
    "-1e308",
    "0.000001",
    "65535",
    "65536",
    "3.4e38",
    "NaN",
];

/// One to four byte-level changes: bits flipped, boundary bytes written, spans deleted,
/// repeated or copied from `donor`, or a cut.
pub fn bytes(rng: &mut Rng, data: &mut Vec<u8>, donor: &[u8]) {
    for _ in 0..1 + rng.below(4) {
        if data.is_empty() {
            data.extend_from_slice(&donor[..donor.len().min(64)]);
            continue;
        }
        let at = rng.below(data.len());
        match rng.below(8) {
            0 => data[at] ^= 1 << rng.below(8),
            1 => data[at] = *rng.pick(INTERESTING_BYTES),
            2 => {
                let len = 1 + rng.below((data.len() - at).min(4096));
                data.drain(at..at + len);
            }
            3 => {
                let len = 1 + rng.below(256.min(data.len() - at));
                let span = data[at..at + len].to_vec();
                let most = if rng.one_in(8) { 2000 } else { 4 };
                let times = 1 + rng.below(most);
                let insert_at = rng.below(data.len() + 1);
                data.splice(insert_at..insert_at, span.iter().copied().cycle().take(len * times));
            }
            4 if !donor.is_empty() => {
                let from = rng.below(donor.len());
                let len = 1 + rng.below(4096.min(donor.len() - from));
                data.splice(at..at, donor[from..from + len].iter().copied());
            }
            5 => data.truncate(at),
            6 => {
                let value = (rng.bits() as u32).to_le_bytes();
                let end = (at + 4).min(data.len());
                data[at..end].copy_from_slice(&value[..end - at]);
            }
            _ => {
                let other = rng.below(data.len());
                data.swap(at, other);
            }
        }
    }
}

/// A PDF change on the token level: a number replaced by a boundary one, a name or
/// keyword dropped or swapped, an object reference pointed elsewhere, a stream length lied
/// about. Falls back to [`bytes`] on input without tokens.
pub fn pdf(rng: &mut Rng, data: &mut Vec<u8>, donor: &[u8]) {
    let numbers = digit_runs(data);
    match rng.below(6) {
        0 | 1 if !numbers.is_empty() => {
            let (start, end) = *rng.pick(&numbers);
            data.splice(start..end, rng.pick(INTERESTING_NUMBERS).bytes());
        }
        2 => {
            const KEYWORDS: &[&[u8]] = &[
                b"/Length",
                b"/Kids",
                b"/Parent",
                b"/Count",
                b"/Filter",
                b"/FlateDecode",
                b"/DecodeParms",
                b"/Type",
                b"/Page",
                b"/Pages",
                b"/Resources",
                b"/Font",
                b"/XObject",
                b"/Encrypt",
                b"/Prev",
                b"/Root",
                b"endobj",
                b"stream",
                b"endstream",
                b"xref",
                b"trailer",
                b"startxref",
                b"/W",
                b"/Index",
                b"/First",
                b"/N",
                b"/BitsPerComponent",
                b"/Width",
                b"/Height",
                b"/ColorSpace",
                b"/Outlines",
                b"/AcroForm",
                b"/Annots",
            ];
            let word = *rng.pick(KEYWORDS);
            let found: Vec<usize> =
                data.windows(word.len()).enumerate().filter(|(_, w)| w == &word).map(|(i, _)| i).collect();
            if found.is_empty() {
                bytes(rng, data, donor);
            } else {
                let at = *rng.pick(&found);
                let other = *rng.pick(KEYWORDS);
                data.splice(at..at + word.len(), other.iter().copied());
            }
        }
        3 if !numbers.is_empty() => {
            // "N 0 R" pointed at another (maybe its own, maybe absent) object.
            let (start, end) = *rng.pick(&numbers);
            let other = numbers[rng.below(numbers.len())];
            let replacement = data[other.0..other.1].to_vec();
            data.splice(start..end, replacement);
        }
        4 => {
            // A nesting bomb: many arrays or dictionaries opened.
            let at = rng.below(data.len() + 1);
            let open: &[u8] = if rng.one_in(2) { b"[" } else { b"<<" };
            let depth = 100 + rng.below(20_000);
            data.splice(at..at, open.iter().copied().cycle().take(open.len() * depth));
        }
        _ => bytes(rng, data, donor),
    }
}

/// The spans of ASCII digits in `data` (at most 20,000 of them, spread over the file).
fn digit_runs(data: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < data.len() && runs.len() < 20_000 {
        if data[i].is_ascii_digit() {
            let start = i;
            while i < data.len() && data[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((start, i));
        } else {
            i += 1;
        }
    }
    runs
}

/// A change inside a ZIP (DOCX, XLSX, PPTX, EPUB, OpenDocument): one part's bytes mutated
/// ([`xml`] for XML parts), a part dropped or added twice, and the archive written again,
/// so the change reaches the reader past the ZIP's checksums. Input that is not a ZIP gets
/// [`bytes`].
pub fn zip(rng: &mut Rng, data: &mut Vec<u8>, donor: &[u8]) {
    let Some(mut parts) = unzip(data) else {
        bytes(rng, data, donor);
        return;
    };
    if parts.is_empty() {
        bytes(rng, data, donor);
        return;
    }
    let at = rng.below(parts.len());
    match rng.below(10) {
        0 => {
            parts.remove(at);
        }
        1 => {
            let copy = parts[at].clone();
            parts.push(copy);
        }
        2..=5 if looks_like_xml(&parts[at].1) => xml(rng, &mut parts[at].1),
        _ => bytes(rng, &mut parts[at].1, donor),
    }
    if let Some(zipped) = rezip(&parts) {
        *data = zipped;
    }
}

fn looks_like_xml(part: &[u8]) -> bool {
    part.iter().take(64).any(|&b| b == b'<')
}

/// An XML change: an element repeated many times, an attribute's number replaced by a
/// boundary one, a tag left open, or a document type declared.
pub fn xml(rng: &mut Rng, data: &mut Vec<u8>) {
    let opens: Vec<usize> = data
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] == b'<' && w[1].is_ascii_alphabetic())
        .map(|(i, _)| i)
        .take(50_000)
        .collect();
    match rng.below(5) {
        0 if !opens.is_empty() => {
            // The element starting here, up to its next '<': repeated.
            let start = *rng.pick(&opens);
            let end = data[start + 1..].iter().position(|&b| b == b'<').map_or(data.len(), |p| start + 1 + p);
            let span = data[start..end].to_vec();
            let most = if rng.one_in(4) { 5000 } else { 20 };
            let times = 2 + rng.below(most);
            data.splice(end..end, span.iter().copied().cycle().take(span.len() * times));
        }
        1 => {
            let numbers = digit_runs(data);
            if !numbers.is_empty() {
                let (start, end) = *rng.pick(&numbers);
                data.splice(start..end, rng.pick(INTERESTING_NUMBERS).bytes());
            }
        }
        2 if !opens.is_empty() => {
            let start = *rng.pick(&opens);
            data.truncate(start + 1 + rng.below(16).min(data.len() - start - 1));
        }
        3 => {
            let doctype = b"<!DOCTYPE r [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]>";
            let at = data.windows(2).position(|w| w == b"?>").map_or(0, |p| p + 2);
            data.splice(at..at, doctype.iter().copied());
        }
        _ => bytes(rng, data, &[]),
    }
}

type Parts = Vec<(String, Vec<u8>)>;

/// The parts of a ZIP, or None when it does not read (or holds more than 64 MiB).
fn unzip(data: &[u8]) -> Option<Parts> {
    let mut archive = ::zip::ZipArchive::new(std::io::Cursor::new(data)).ok()?;
    let mut parts = Vec::new();
    let mut total = 0u64;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).ok()?;
        let mut bytes = Vec::new();
        (&mut entry).take(64 << 20).read_to_end(&mut bytes).ok()?;
        total += bytes.len() as u64;
        if total > 64 << 20 {
            return None;
        }
        parts.push((entry.name().ok()?.into_owned(), bytes));
    }
    Some(parts)
}

fn rezip(parts: &[(String, Vec<u8>)]) -> Option<Vec<u8>> {
    let mut writer = ::zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = ::zip::write::SimpleFileOptions::default().compression_method(::zip::CompressionMethod::Deflated);
    for (name, bytes) in parts {
        // A part added twice: the writer refuses a repeated name, so the copy gets another.
        if writer.start_file(name.as_str(), options).is_err() {
            writer.start_file(format!("{name}.copy"), options).ok()?;
        }
        writer.write_all(bytes).ok()?;
    }
    writer.finish().ok().map(|cursor| cursor.into_inner())
}

/// Values of every type and size that break assumptions.
fn odd_value(rng: &mut Rng) -> Value {
    match rng.below(24) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(0),
        3 => json!(-1),
        4 => json!(u64::MAX),
        5 => json!(i64::MIN),
        6 => json!(1e308),
        7 => json!(0.5),
        8 => json!(""),
        9 => json!(" "),
        10 => Value::String("A".repeat(1 + rng.below(200_000))),
        11 => json!("\u{0}\u{202e}\u{feff}é\u{1F600}"),
        12 => json!("../../../../etc/passwd"),
        13 => json!(format!("0x{}", "f".repeat(1 + rng.below(200)))),
        14 => json!("-1"),
        15 => json!("1-"),
        16 => json!("last-1,0,99999999999"),
        17 => json!([]),
        18 => json!({}),
        19 => json!([Value::Null]),
        20 => json!("%s%n%x{}{{}}$1"),
        21 => json!("2026-02-30"),
        22 => json!("NaN"),
        _ => {
            let mut nested = json!(1);
            for _ in 0..1 + rng.below(200) {
                nested = json!([nested]);
            }
            nested
        }
    }
}

/// Whether `map` is a file input with its bytes inline: `{"data": base64, "filename": …}`.
pub fn is_file_input(map: &Map<String, Value>) -> bool {
    map.get("data").is_some_and(Value::is_string) && map.contains_key("filename")
}

/// Every JSON pointer in `value`, except inside file inputs' `data` (their bytes are
/// mutated apart).
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "data" && is_file_input(map) {
                    continue;
                }
                pointers(child, format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Field names routes take, for keys added where they do not belong.
const KEYS: &[&str] = &[
    "file",
    "files",
    "pages",
    "url",
    "data",
    "password",
    "output",
    "format",
    "chain",
    "address",
    "signature",
    "args",
    "set",
    "add",
    "names",
    "steps",
    "op",
    "level",
    "children",
    "page",
    "filename",
    "type",
    "rows",
];

/// A structural change to a JSON body: a value replaced by one of another type or size, a
/// key removed or added, an array's item repeated or dropped, a string or number edited.
pub fn json(rng: &mut Rng, body: &mut Value) {
    let mut all = Vec::new();
    pointers(body, String::new(), &mut all);
    // The whole body replaced is one mutation in twenty: it only ever draws the same answer.
    let at = if all.len() > 1 && !rng.one_in(20) { all[1 + rng.below(all.len() - 1)].clone() } else { String::new() };
    let Some(target) = body.pointer_mut(&at) else { return };
    match rng.below(8) {
        0 | 1 => *target = odd_value(rng),
        2 => match target {
            Value::Object(map) if !map.is_empty() => {
                let key = map.keys().nth(rng.below(map.len())).cloned().unwrap_or_default();
                map.remove(&key);
            }
            Value::Array(items) if !items.is_empty() => {
                items.remove(rng.below(items.len()));
            }
            _ => *target = odd_value(rng),
        },
        3 => match target {
            Value::Object(map) => {
                map.insert((*rng.pick(KEYS)).to_owned(), odd_value(rng));
            }
            Value::Array(items) if !items.is_empty() => {
                let item = items[rng.below(items.len())].clone();
                let most = if rng.one_in(6) { 3000 } else { 5 };
                let times = 1 + rng.below(most);
                items.extend(std::iter::repeat_n(item, times));
            }
            _ => *target = odd_value(rng),
        },
        4 => {
            if let Value::String(text) = target {
                let mut raw = std::mem::take(text).into_bytes();
                bytes(rng, &mut raw, b"0123456789abcdefx-,/:.() ");
                *text = String::from_utf8_lossy(&raw).into_owned();
            } else {
                *target = odd_value(rng);
            }
        }
        5 => {
            if let Some(n) = target.as_f64() {
                let edits = [n + 1.0, n - 1.0, -n, n * 1e6, n / 3.0, n.trunc() + 0.5];
                *target = json!(*rng.pick(&edits));
            } else {
                *target = odd_value(rng);
            }
        }
        6 => {
            // The value wrapped, or a container emptied.
            *target = match target.take() {
                Value::Array(_) => Value::Array(Vec::new()),
                Value::Object(_) => Value::Object(Map::new()),
                other => json!([other]),
            };
        }
        _ => *target = odd_value(rng),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_repeats_from_its_seed_and_spreads() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let first: Vec<u64> = (0..100).map(|_| a.bits()).collect();
        assert_eq!(first, (0..100).map(|_| b.bits()).collect::<Vec<_>>());
        let mut c = Rng::new(0);
        let mut seen = [0usize; 10];
        for _ in 0..10_000 {
            seen[c.below(10)] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }

    #[test]
    fn byte_mutations_change_the_input_and_never_panic() {
        let mut rng = Rng::new(1);
        let seed =
            b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF".to_vec();
        let mut changed = 0;
        for _ in 0..5_000 {
            let mut data = seed.clone();
            pdf(&mut rng, &mut data, &seed);
            bytes(&mut rng, &mut data, b"");
            changed += usize::from(data != seed);
        }
        assert!(changed > 4_500, "only {changed} of 5000 mutations changed the input");
    }

    #[test]
    fn a_zip_part_is_changed_and_the_archive_still_opens() {
        let parts = vec![
            (
                "[Content_Types].xml".to_owned(),
                b"<?xml version=\"1.0\"?><Types><Default Extension=\"xml\"/></Types>".to_vec(),
            ),
            (
                "word/document.xml".to_owned(),
                b"<w:document><w:body><w:p><w:r><w:t>Hi 12</w:t></w:r></w:p></w:body></w:document>".to_vec(),
            ),
        ];
        let seed = rezip(&parts).unwrap();
        let mut rng = Rng::new(3);
        let mut reopened = 0;
        let mut differ = 0;
        for _ in 0..500 {
            let mut data = seed.clone();
            zip(&mut rng, &mut data, &seed);
            if let Some(after) = unzip(&data) {
                reopened += 1;
                differ += usize::from(after != parts);
            }
        }
        // Most changes are made inside the parts, so the archive still opens.
        assert!(reopened > 400, "{reopened}");
        assert!(differ > 350, "{differ}");
    }

    #[test]
    fn json_mutations_reach_nested_fields_but_not_file_bytes() {
        let seed = json!({ "file": { "data": "JVBERi0=", "filename": "a.pdf" }, "steps": [{ "op": "rotate", "degrees": 90 }] });
        let mut rng = Rng::new(5);
        let mut nested = 0;
        for _ in 0..2_000 {
            let mut body = seed.clone();
            json(&mut rng, &mut body);
            nested += usize::from(body.pointer("/steps/0") != seed.pointer("/steps/0"));
        }
        assert!(nested > 100, "{nested}");
        // The file's data is never picked as a target of its own.
        let mut all = Vec::new();
        pointers(&seed, String::new(), &mut all);
        assert!(!all.contains(&"/file/data".to_owned()), "{all:?}");
    }
}
