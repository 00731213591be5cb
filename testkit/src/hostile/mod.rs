//! Hostile files and request bodies, made at test time in seconds: decompression bombs (flate,
//! LZW, ZIP parts), nesting bombs (PDF arrays, Word tables, HTML elements, JSON arrays), huge
//! declared sizes (pages, images) and traps in a file's structure (a cycle in a PDF's page tree,
//! a loop of cross-reference sections). An integration test posts each [`Case`] to every route
//! that takes a file and checks that the server answers in time and within its memory budget.
//!
//! Everything here is deterministic and uses std and `flate2` only. No bomb is made by
//! compressing gigabytes: the deflate streams are written by hand (one dynamic Huffman block in
//! which a 258-byte copy of the last bytes costs two bits), their checksums (Adler-32, CRC-32)
//! are worked out by combining the checksum of one repeated piece with itself, and the LZW codes
//! are laid out directly. Every file is at most 16 MiB.
//!
//! Sizes in the documentation: KiB, MiB and GiB are powers of 1024; kB and MB, of 1000.

use std::io::Write;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One hostile input: a name for reports, the bytes, and what kind of file it claims to be.
pub struct Case {
    /// The name of the function that made it, e.g. `pdf_flate_bomb`.
    pub name: &'static str,
    /// What kind of file the bytes claim to be.
    pub kind: Kind,
    /// The file (or, for [`Kind::Json`], the request body).
    pub bytes: Vec<u8>,
}

/// What kind of file a [`Case`] claims to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Pdf,
    Png,
    Jpeg,
    Docx,
    Xlsx,
    Pptx,
    Odt,
    Epub,
    Html,
    Csv,
    /// A JSON request body rather than a file.
    Json,
}

impl Kind {
    /// The file name extension, without the dot.
    pub fn extension(&self) -> &'static str {
        match self {
            Kind::Pdf => "pdf",
            Kind::Png => "png",
            Kind::Jpeg => "jpg",
            Kind::Docx => "docx",
            Kind::Xlsx => "xlsx",
            Kind::Pptx => "pptx",
            Kind::Odt => "odt",
            Kind::Epub => "epub",
            Kind::Html => "html",
            Kind::Csv => "csv",
            Kind::Json => "json",
        }
    }

    /// The media type (for a `Content-Type` header).
    pub fn media_type(&self) -> &'static str {
        match self {
            Kind::Pdf => "application/pdf",
            Kind::Png => "image/png",
            Kind::Jpeg => "image/jpeg",
            Kind::Docx => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            Kind::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            Kind::Pptx => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            Kind::Odt => "application/vnd.oasis.opendocument.text",
            Kind::Epub => "application/epub+zip",
            Kind::Html => "text/html",
            Kind::Csv => "text/csv",
            Kind::Json => "application/json",
        }
    }
}

/// A function making the bytes of a case.
type Maker = fn() -> Vec<u8>;

/// Every case of this module, made now (about 97 MB in all, in well under a second).
pub fn all() -> Vec<Case> {
    let makers: [(&'static str, Kind, Maker); 29] = [
        ("pdf_flate_bomb", Kind::Pdf, pdf_flate_bomb),
        ("pdf_many_streams_bomb", Kind::Pdf, pdf_many_streams_bomb),
        ("pdf_objstm_bomb", Kind::Pdf, pdf_objstm_bomb),
        ("pdf_image_bomb", Kind::Pdf, pdf_image_bomb),
        ("pdf_huge_page", Kind::Pdf, pdf_huge_page),
        ("pdf_q_bomb", Kind::Pdf, pdf_q_bomb),
        ("pdf_nested_arrays", Kind::Pdf, pdf_nested_arrays),
        ("pdf_pages_cycle", Kind::Pdf, pdf_pages_cycle),
        ("pdf_xref_loop", Kind::Pdf, pdf_xref_loop),
        ("pdf_lzw_bomb", Kind::Pdf, pdf_lzw_bomb),
        ("pdf_chained_flate", Kind::Pdf, pdf_chained_flate),
        ("png_bomb", Kind::Png, png_bomb),
        ("png_dimensions_only", Kind::Png, png_dimensions_only),
        ("jpeg_huge_dimensions", Kind::Jpeg, jpeg_huge_dimensions),
        ("xlsx_shared_strings_bomb", Kind::Xlsx, xlsx_shared_strings_bomb),
        ("docx_document_bomb", Kind::Docx, docx_document_bomb),
        ("docx_nesting_bomb", Kind::Docx, docx_nesting_bomb),
        ("docx_deep_nesting", Kind::Docx, docx_deep_nesting),
        ("xml_entity_bomb_docx", Kind::Docx, xml_entity_bomb_docx),
        ("pptx_bomb", Kind::Pptx, pptx_bomb),
        ("zip_many_entries", Kind::Docx, zip_many_entries),
        ("epub_bomb", Kind::Epub, epub_bomb),
        ("odt_bomb", Kind::Odt, odt_bomb),
        ("html_colspan_bomb", Kind::Html, html_colspan_bomb),
        ("html_nesting_bomb", Kind::Html, html_nesting_bomb),
        ("csv_wide", Kind::Csv, csv_wide),
        ("csv_long_field", Kind::Csv, csv_long_field),
        ("json_nesting_bomb", Kind::Json, json_nesting_bomb),
        ("json_many_keys", Kind::Json, json_many_keys),
    ];
    makers.into_iter().map(|(name, kind, make)| Case { name, kind, bytes: make() }).collect()
}

mod encode;
mod images;
mod office;
mod pdf;
mod text;

use encode::*;
pub use images::*;
pub use office::*;
pub use pdf::*;
pub use text::*;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, HashSet};
    use std::io::Read;

    /// How much of the cut-off PNG bomb is decoded.
    const PREFIX: u64 = 64 * MIB;

    // --- Helpers ---------------------------------------------------------------------------

    fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
        haystack.windows(needle.len()).position(|window| window == needle)
    }

    fn u16_at(bytes: &[u8], at: usize) -> u16 {
        u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
    }

    fn u32_at(bytes: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
    }

    fn u64_at(bytes: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
    }

    /// Compares bytes, as they are decoded, with the content `runs` describe.
    struct Expected<'a> {
        runs: Vec<Run<'a>>,
        run: usize,
        offset: u64,
        /// The current run's pattern repeated to at least 64 KiB, to compare against at once.
        tiles: Vec<u8>,
        seen: u64,
    }

    impl<'a> Expected<'a> {
        fn new(runs: &[Run<'a>]) -> Self {
            Expected { runs: runs.to_vec(), run: 0, offset: 0, tiles: Vec::new(), seen: 0 }
        }

        fn check(&mut self, mut chunk: &[u8]) {
            while !chunk.is_empty() {
                let run = *self.runs.get(self.run).unwrap_or_else(|| panic!("more than {} bytes", self.seen));
                let run_len = run.pattern.len() as u64 * run.count;
                if self.offset == run_len {
                    (self.run, self.offset) = (self.run + 1, 0);
                    self.tiles.clear();
                    continue;
                }
                if self.tiles.is_empty() {
                    self.tiles = run.pattern.repeat(64 * 1024 / run.pattern.len() + 2);
                }
                let phase = (self.offset % run.pattern.len() as u64) as usize;
                let n = chunk.len().min((run_len - self.offset) as usize).min(self.tiles.len() - phase);
                assert!(chunk[..n] == self.tiles[phase..phase + n], "unexpected bytes after {} bytes", self.seen);
                chunk = &chunk[n..];
                self.offset += n as u64;
                self.seen += n as u64;
            }
        }
    }

    /// Reads `decoder` to its end, or to `limit` bytes, checking what it gives against `runs`;
    /// returns how many bytes it gave. Any decoding error (a bad Adler-32 included) panics.
    fn inflate(mut decoder: impl Read, runs: &[Run], limit: u64) -> u64 {
        let mut expected = Expected::new(runs);
        let mut buffer = vec![0; 1 << 16];
        while expected.seen < limit {
            let want = buffer.len().min((limit - expected.seen) as usize);
            let n = decoder.read(&mut buffer[..want]).expect("inflates without error");
            if n == 0 {
                break;
            }
            expected.check(&buffer[..n]);
        }
        expected.seen
    }

    /// Inflates zlib `data` completely, checking it against `runs` and its end.
    fn inflate_all(data: &[u8], runs: &[Run]) {
        assert_eq!(inflate(flate2::read::ZlibDecoder::new(data), runs, u64::MAX), decoded_len(runs));
    }

    /// A PDF's objects (number → offset) read from its classic cross-reference tables, newest
    /// first along `/Prev`; and whether the `/Prev` chain loops. Checks every table's entries.
    fn classic_xref(pdf: &[u8]) -> (BTreeMap<usize, usize>, bool) {
        let tail = String::from_utf8_lossy(&pdf[pdf.len() - 40..]).into_owned();
        let start: usize = tail.rsplit("startxref\n").next().unwrap().lines().next().unwrap().parse().unwrap();
        let (mut objects, mut seen, mut next) = (BTreeMap::new(), HashSet::new(), Some(start));
        while let Some(at) = next {
            if !seen.insert(at) {
                return (objects, true);
            }
            assert!(pdf[at..].starts_with(b"xref\n"), "startxref or /Prev points at {at}, not a table");
            let mut pos = at + 5;
            loop {
                let end = pos + pdf[pos..].iter().position(|&b| b == b'\n').unwrap();
                let line = std::str::from_utf8(&pdf[pos..end]).unwrap();
                if line == "trailer" {
                    pos = end + 1;
                    break;
                }
                let (first, count) = line.split_once(' ').unwrap();
                let (first, count): (usize, usize) = (first.parse().unwrap(), count.parse().unwrap());
                pos = end + 1;
                for number in first..first + count {
                    let entry = std::str::from_utf8(&pdf[pos..pos + 20]).unwrap();
                    assert!(entry.ends_with(" \n") || entry.ends_with("\r\n"), "entries are 20 bytes");
                    let offset: usize = entry[..10].parse().unwrap();
                    if &entry[17..18] == "n" {
                        objects.entry(number).or_insert(offset);
                    }
                    pos += 20;
                }
            }
            let trailer_end = pos + find(&pdf[pos..], b">>\n").unwrap();
            let trailer = std::str::from_utf8(&pdf[pos..trailer_end]).unwrap();
            let size: usize = trailer.split("/Size ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
            assert!(objects.keys().all(|&number| number < size), "/Size covers every object");
            assert!(trailer.contains("/Root 1 0 R"));
            next = trailer.split("/Prev ").nth(1).map(|rest| rest.split(' ').next().unwrap().parse().unwrap());
        }
        for (number, offset) in &objects {
            assert!(pdf[*offset..].starts_with(format!("{number} 0 obj\n").as_bytes()), "object {number} at {offset}");
        }
        (objects, false)
    }

    /// The dictionary and data of the stream object at `offset` (None for another object),
    /// checking that `/Length` ends the data at `endstream`.
    fn stream_at(pdf: &[u8], offset: usize) -> Option<(String, &[u8])> {
        let window = &pdf[offset..pdf.len().min(offset + 4096)];
        let start = find(window, b">>\nstream\n")?;
        let dict = String::from_utf8_lossy(&window[..start + 2]).into_owned();
        let length: usize = dict.rsplit("/Length ").next().unwrap().split(' ').next().unwrap().parse().unwrap();
        let data_at = offset + start + 10;
        assert!(pdf[data_at + length..].starts_with(b"\nendstream\nendobj\n"), "/Length ends the stream");
        Some((dict, &pdf[data_at..data_at + length]))
    }

    /// The stream of object `number` of a PDF with classic cross-reference tables.
    fn pdf_stream(pdf: &[u8], number: usize) -> (String, &[u8]) {
        let (objects, _) = classic_xref(pdf);
        stream_at(pdf, objects[&number]).unwrap()
    }

    /// An entry of a ZIP archive, as its central directory and local header agree it is.
    struct ZipEntry<'a> {
        name: String,
        method: u16,
        crc: u32,
        size: u64,
        data: &'a [u8],
    }

    /// The entries of a ZIP archive, checking the end record (ZIP64's too), that each central
    /// directory entry matches its local header, and that the entries fill the file in order.
    fn read_zip(zip: &[u8]) -> Vec<ZipEntry<'_>> {
        let end = zip.len() - 22;
        assert_eq!(u32_at(zip, end), 0x0605_4B50);
        let mut count = u64::from(u16_at(zip, end + 10));
        let (mut directory_len, mut directory_at) =
            (u64::from(u32_at(zip, end + 12)), u64::from(u32_at(zip, end + 16)));
        let mut directory_end = end as u64;
        if count == 0xFFFF {
            let locator = end - 20;
            assert_eq!(u32_at(zip, locator), 0x0706_4B50);
            let record = u64_at(zip, locator + 8) as usize;
            assert_eq!(u32_at(zip, record), 0x0606_4B50);
            assert_eq!(u64_at(zip, record + 4), 44);
            assert_eq!(u64_at(zip, record + 24), u64_at(zip, record + 32));
            (count, directory_len, directory_at) =
                (u64_at(zip, record + 32), u64_at(zip, record + 40), u64_at(zip, record + 48));
            directory_end = record as u64;
        }
        assert_eq!(directory_at + directory_len, directory_end);
        let (mut entries, mut at, mut next_local) = (Vec::new(), directory_at as usize, 0);
        for _ in 0..count {
            assert_eq!(u32_at(zip, at), 0x0201_4B50);
            let (method, crc) = (u16_at(zip, at + 10), u32_at(zip, at + 16));
            let (compressed, size) = (u32_at(zip, at + 20) as usize, u64::from(u32_at(zip, at + 24)));
            let name_len = usize::from(u16_at(zip, at + 28));
            let skip = usize::from(u16_at(zip, at + 30)) + usize::from(u16_at(zip, at + 32));
            let local = u32_at(zip, at + 42) as usize;
            let name = &zip[at + 46..at + 46 + name_len];
            assert_eq!(local, next_local, "entries follow one another");
            assert_eq!(u32_at(zip, local), 0x0403_4B50);
            assert_eq!(u16_at(zip, local + 8), method);
            assert_eq!(u32_at(zip, local + 14), crc);
            assert_eq!(u32_at(zip, local + 18) as usize, compressed);
            assert_eq!(u64::from(u32_at(zip, local + 22)), size);
            assert_eq!(usize::from(u16_at(zip, local + 26)), name_len);
            assert_eq!(u16_at(zip, local + 28), 0);
            assert_eq!(&zip[local + 30..local + 30 + name_len], name);
            let data_at = local + 30 + name_len;
            next_local = data_at + compressed;
            let name = String::from_utf8(name.to_vec()).unwrap();
            entries.push(ZipEntry { name, method, crc, size, data: &zip[data_at..next_local] });
            at += 46 + name_len + skip;
        }
        assert_eq!(next_local as u64, directory_at);
        assert_eq!(at as u64, directory_end);
        entries
    }

    /// Decodes a ZIP entry completely, checking its size and CRC-32 (with flate2's CRC, which
    /// this module's does not share); returns its content when it is small.
    fn unzip(entry: &ZipEntry) -> Option<Vec<u8>> {
        let mut reader: Box<dyn Read> = match entry.method {
            0 => Box::new(entry.data),
            8 => Box::new(flate2::read::DeflateDecoder::new(entry.data)),
            method => panic!("{}: method {method}", entry.name),
        };
        let (mut crc, mut small, mut buffer) = (flate2::Crc::new(), Vec::new(), vec![0; 1 << 16]);
        loop {
            let n = reader.read(&mut buffer).expect("inflates without error");
            if n == 0 {
                break;
            }
            crc.update(&buffer[..n]);
            if small.len() < 1 << 20 {
                small.extend_from_slice(&buffer[..n]);
            }
        }
        assert_eq!(u64::from(crc.amount()), entry.size & 0xFFFF_FFFF, "{}: size", entry.name);
        assert_eq!(crc.sum(), entry.crc, "{}: CRC-32", entry.name);
        (entry.size < 1 << 20).then_some(small)
    }

    /// The chunks of a PNG (type, data), checking the signature and every CRC.
    fn png_chunks(png: &[u8]) -> Vec<([u8; 4], &[u8])> {
        assert!(png.starts_with(b"\x89PNG\r\n\x1A\n"));
        let (mut chunks, mut at) = (Vec::new(), 8);
        while at < png.len() {
            let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
            let kind: [u8; 4] = png[at + 4..at + 8].try_into().unwrap();
            let mut crc = flate2::Crc::new();
            crc.update(&png[at + 4..at + 8 + len]);
            assert_eq!(crc.sum().to_be_bytes(), png[at + 8 + len..at + 12 + len], "CRC of a PNG chunk");
            chunks.push((kind, &png[at + 8..at + 8 + len]));
            at += 12 + len;
        }
        assert_eq!(at, png.len());
        chunks
    }

    /// A PDF LZW decoder (early change), written from the specification for these tests: calls
    /// `out` with each code's bytes.
    fn lzw_decode(data: &[u8], mut out: impl FnMut(&[u8])) {
        let (mut bit, mut table, mut previous): (usize, Vec<Vec<u8>>, Option<Vec<u8>>) = (0, Vec::new(), None);
        loop {
            let next = 258 + table.len();
            let width = match next + 1 {
                ..512 => 9,
                512..1024 => 10,
                1024..2048 => 11,
                _ => 12,
            };
            assert!(bit + width <= data.len() * 8, "LZW data ends without an end-of-data code");
            let code = (0..width).fold(0, |code, i| {
                let at = bit + i;
                code << 1 | usize::from(data[at / 8] >> (7 - at % 8) & 1)
            });
            bit += width;
            match code {
                256 => (table, previous) = (Vec::new(), None),
                257 => break,
                _ => {
                    let entry = if code < 256 {
                        vec![code as u8]
                    } else if code < next {
                        table[code - 258].clone()
                    } else {
                        assert_eq!(code, next, "an LZW code beyond the table");
                        let previous = previous.as_ref().expect("a first code within the table");
                        [previous.as_slice(), &previous[..1]].concat()
                    };
                    if let Some(previous) = previous {
                        table.push([previous.as_slice(), &entry[..1]].concat());
                        assert!(258 + table.len() <= 4096, "the LZW table overflows");
                    }
                    out(&entry);
                    previous = Some(entry);
                }
            }
        }
        assert!(data.len() * 8 - bit < 8, "nothing after the end-of-data code but padding");
    }

    // --- Building blocks -------------------------------------------------------------------

    #[test]
    fn deflate_round_trips_awkward_runs() {
        let all_bytes: Vec<u8> = (0..=255).collect();
        let long: Vec<u8> = (0..32_768u32).map(|i| (i * 7 % 251) as u8).collect();
        let patterns: [&[u8]; 9] =
            [b"a", b"ab", b"abc", b"abcde", &[0; 31], &all_bytes[..32], &all_bytes[..33], &all_bytes, &long[..1000]];
        let mut cases: Vec<Vec<Run>> = vec![vec![], vec![once(b"")], vec![once(b"x")], vec![once(&all_bytes)]];
        for pattern in patterns {
            // Counts around the 258-byte copies and the sixteen written one by one, after
            // literals that leave each of the eight bit positions.
            for count in [1, 2, 3, 16, 17, 18, 24, 25, 130, 259, 1_000, 10_007] {
                for literals in 0..8 {
                    cases.push(vec![once(&all_bytes[..literals]), repeat(pattern, count), once(b"end")]);
                }
            }
        }
        cases.push(vec![repeat(&long, 3)]);
        cases.push(patterns.iter().map(|pattern| repeat(pattern, 300)).collect());
        for runs in &cases {
            let compressed = zlib(runs);
            let content = materialize(runs);
            let mut inflated = Vec::new();
            flate2::read::ZlibDecoder::new(&compressed[..]).read_to_end(&mut inflated).unwrap();
            assert!(inflated == content, "{} bytes of {} runs", content.len(), runs.len());
            assert_eq!(adler32_runs(runs), adler32(&content));
            let mut crc = flate2::Crc::new();
            crc.update(&content);
            assert_eq!(crc32_runs(runs), crc.sum());
            assert_eq!(crc32(&content), crc.sum());
        }
    }

    #[test]
    fn zlib_decoder_checks_adler32() {
        // The bombs' checksums are checked by inflating them: make sure a bad one is noticed.
        let mut compressed = zlib(&[repeat(b"abc", 1_000)]);
        *compressed.last_mut().unwrap() ^= 1;
        assert!(flate2::read::ZlibDecoder::new(&compressed[..]).read_to_end(&mut Vec::new()).is_err());
    }

    #[test]
    fn checksums_of_gigabytes_match_direct_ones() {
        // 3 GiB + 5 of a 7-byte pattern: against flate2's CRC over the bytes in memory, 1 MiB at
        // a time (a multiple of the pattern, so every chunk is the same).
        let pattern = b"q Q\nBT ";
        let chunk = pattern.repeat(149_796); // 1,048,572 bytes
        let chunks = 3 * 1024 + 3;
        let runs = [repeat(pattern, 149_796 * chunks), once(b"tail")];
        let mut crc = flate2::Crc::new();
        let (mut a, mut b) = (1u64, 0u64);
        for _ in 0..chunks {
            crc.update(&chunk);
        }
        crc.update(b"tail");
        assert_eq!(crc32_runs(&runs), crc.sum());
        // Adler-32 over the same content, by the formula for one repeated chunk.
        let unit = adler32(&chunk);
        for _ in 0..chunks {
            let n = chunk.len() as u64 % ADLER_MOD;
            let (ua, ub) = (u64::from(unit & 0xFFFF), u64::from(unit >> 16));
            b = (b + ub + n * a + ADLER_MOD * 2 - n) % ADLER_MOD;
            a = (a + ua + ADLER_MOD - 1) % ADLER_MOD;
        }
        let tail = adler32_concat((b << 16 | a) as u32, adler32(b"tail"), 4);
        assert_eq!(adler32_runs(&runs), tail);
    }

    #[test]
    fn lzw_round_trips() {
        let per_table = LZW_CODES_PER_TABLE * (LZW_CODES_PER_TABLE + 1) / 2;
        for len in [0, 1, 2, 3, 10, 255, 131_000, per_table - 1, per_table, per_table + 1, 2 * per_table + 12_345] {
            let mut decoded = 0;
            lzw_decode(&lzw_run(b'x', len), |bytes| {
                assert!(bytes.iter().all(|&b| b == b'x'));
                decoded += bytes.len() as u64;
            });
            assert_eq!(decoded, len);
        }
    }

    // --- PDF -------------------------------------------------------------------------------

    #[test]
    fn pdf_cross_references_point_at_their_objects() {
        for case in all().iter().filter(|case| case.kind == Kind::Pdf && case.name != "pdf_objstm_bomb") {
            assert!(case.bytes.starts_with(b"%PDF-1.7\n"), "{}", case.name);
            let (objects, looped) = classic_xref(&case.bytes);
            assert_eq!(looped, case.name == "pdf_xref_loop", "{}", case.name);
            assert_eq!(objects.keys().copied().collect::<Vec<_>>(), (1..=objects.len()).collect::<Vec<_>>());
            for offset in objects.values() {
                stream_at(&case.bytes, *offset);
            }
        }
    }

    #[test]
    fn pdf_flate_bomb_inflates_to_4_gib() {
        let pdf = pdf_flate_bomb();
        let (dict, data) = pdf_stream(&pdf, 4);
        assert!(dict.contains("/Filter /FlateDecode"));
        // All of it (about 0.7 s): a prefix would not show the claimed size.
        inflate_all(data, &[repeat(b" ", PAGE_BOMB_SIZE)]);
    }

    #[test]
    fn pdf_many_streams_bomb_has_2000_pages_of_2_mib() {
        let pdf = pdf_many_streams_bomb();
        let (objects, _) = classic_xref(&pdf);
        assert_eq!(objects.len(), 2 + 2 * MANY_PAGES);
        let first = stream_at(&pdf, objects[&4]).unwrap().1;
        inflate_all(first, &[repeat(b" ", MANY_PAGES_CONTENT)]);
        for page in 0..MANY_PAGES {
            assert!(
                pdf[objects[&(3 + 2 * page)]..]
                    .starts_with(format!("{} 0 obj\n<< /Type /Page ", 3 + 2 * page).as_bytes())
            );
            assert!(stream_at(&pdf, objects[&(4 + 2 * page)]).unwrap().1 == first);
        }
        assert!(String::from_utf8_lossy(&pdf[objects[&2]..]).contains("/Count 2000 >>"));
    }

    #[test]
    fn pdf_objstm_bomb_has_its_objects_then_1_gib() {
        let pdf = pdf_objstm_bomb();
        assert!(pdf.starts_with(b"%PDF-1.5\n"));
        let tail = String::from_utf8_lossy(&pdf[pdf.len() - 30..]).into_owned();
        let xref_at: usize = tail.rsplit("startxref\n").next().unwrap().lines().next().unwrap().parse().unwrap();
        assert!(pdf[xref_at..].starts_with(b"5 0 obj\n"));
        let (dict, entries) = stream_at(&pdf, xref_at).unwrap();
        assert!(dict.contains("/Type /XRef /Size 6 /W [1 4 2] /Root 1 0 R"));
        assert_eq!(entries.len(), 6 * 7);
        let entry = |n: usize| {
            let e = &entries[7 * n..7 * n + 7];
            (e[0], u32::from_be_bytes(e[1..5].try_into().unwrap()) as usize, u16::from_be_bytes([e[5], e[6]]))
        };
        assert_eq!(entry(0), (0, 0, 0xFFFF));
        for n in 1..=3 {
            assert_eq!(entry(n), (2, 4, n as u16 - 1));
        }
        for n in 4..=5 {
            let (kind, offset, _) = entry(n);
            assert_eq!(kind, 1);
            assert!(pdf[offset..].starts_with(format!("{n} 0 obj\n").as_bytes()));
        }
        let (dict, data) = stream_at(&pdf, entry(4).1).unwrap();
        let first: usize = dict.split("/First ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        // The index and objects, then spaces to 1 GiB.
        let mut head = vec![0; 400];
        flate2::read::ZlibDecoder::new(data).read_exact(&mut head).unwrap();
        let head_len = head.iter().rposition(|&b| b == b'\n').unwrap() + 1;
        let head = String::from_utf8(head[..head_len].to_vec()).unwrap();
        let index: Vec<usize> = head[..first].split_whitespace().map(|n| n.parse().unwrap()).collect();
        assert_eq!(index[..5], [1, 0, 2, index[3], 3]);
        assert!(head[first..].starts_with("<< /Type /Catalog /Pages 2 0 R >>"));
        assert!(head[first + index[3]..].starts_with("<< /Type /Pages "));
        assert!(head[first + index[5]..].starts_with("<< /Type /Page "));
        inflate_all(data, &[once(head.as_bytes()), repeat(b" ", OBJSTM_SIZE - head_len as u64)]);
    }

    #[test]
    fn pdf_image_bomb_claims_60000_square_and_holds_2_gib() {
        let pdf = pdf_image_bomb();
        let (dict, data) = pdf_stream(&pdf, 5);
        assert!(dict.contains("/Width 60000 /Height 60000 /ColorSpace /DeviceRGB /BitsPerComponent 8"));
        inflate_all(data, &[repeat(&[0], IMAGE_DATA_SIZE)]);
    }

    #[test]
    fn pdf_q_bomb_and_huge_page() {
        let pdf = pdf_q_bomb();
        let (_, data) = pdf_stream(&pdf, 4);
        inflate_all(data, &[repeat(b"q ", Q_COUNT), repeat(b"Q ", Q_COUNT)]);
        let page = pdf_huge_page();
        assert!(find(&page, b"/MediaBox [0 0 14400 14400]").is_some());
        assert!(pdf_stream(&page, 4).1.starts_with(b"BT /F1 48 Tf"));
    }

    #[test]
    fn pdf_nested_arrays_and_cycles() {
        let pdf = pdf_nested_arrays();
        let (objects, _) = classic_xref(&pdf);
        let at = objects[&4] + "4 0 obj\n".len();
        let depth = NESTING_DEPTH as usize;
        assert!(pdf[at..at + depth].iter().all(|&b| b == b'['));
        assert!(pdf[at + depth..at + 2 * depth].iter().all(|&b| b == b']'));
        assert!(pdf[at + 2 * depth..].starts_with(b"\nendobj\n"));
        let pdf = pdf_pages_cycle();
        let (objects, _) = classic_xref(&pdf);
        assert!(pdf[objects[&3]..].starts_with(b"3 0 obj\n<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 4 0 R]"));
    }

    #[test]
    fn pdf_lzw_bomb_decodes_to_1_gib() {
        let pdf = pdf_lzw_bomb();
        let (dict, data) = pdf_stream(&pdf, 4);
        assert!(dict.contains("/Filter /LZWDecode"));
        let mut expected = Expected::new(&[repeat(b" ", LZW_SIZE)]);
        lzw_decode(data, |bytes| expected.check(bytes));
        assert_eq!(expected.seen, LZW_SIZE);
    }

    #[test]
    fn pdf_chained_flate_is_the_flate_bomb_compressed_again() {
        let pdf = pdf_chained_flate();
        let (dict, data) = pdf_stream(&pdf, 4);
        assert!(dict.contains("/Filter [/FlateDecode /FlateDecode]"));
        let mut inner = Vec::new();
        flate2::read::ZlibDecoder::new(data).read_to_end(&mut inner).unwrap();
        inflate_all(&inner, &[repeat(b" ", PAGE_BOMB_SIZE)]);
    }

    // --- Images ----------------------------------------------------------------------------

    #[test]
    fn png_chunks_and_pixel_data() {
        for (png, side, idat_len) in
            [(png_bomb(), PNG_BOMB_SIDE, Some(PNG_BOMB_KEPT as usize)), (png_dimensions_only(), u32::MAX >> 1, None)]
        {
            let chunks = png_chunks(&png);
            let (kinds, header) = (chunks.iter().map(|(kind, _)| *kind).collect::<Vec<_>>(), chunks[0].1);
            assert_eq!(kinds.first(), Some(b"IHDR"));
            assert_eq!(kinds.last(), Some(b"IEND"));
            assert_eq!(header[..8], [side.to_be_bytes(), side.to_be_bytes()].concat());
            assert_eq!(header[8..], [8, 6, 0, 0, 0]);
            let data: Vec<u8> =
                chunks.iter().filter(|(kind, _)| kind == b"IDAT").flat_map(|(_, data)| data.to_vec()).collect();
            match idat_len {
                // Cut off: the first 64 MiB are zero rows; the rest is missing, not wrong.
                Some(len) => {
                    assert_eq!(data.len(), len);
                    let runs = [repeat(&[0], u64::MAX / 2)];
                    assert_eq!(inflate(flate2::read::ZlibDecoder::new(&data[..]), &runs, PREFIX), PREFIX);
                }
                None => inflate_all(&data, &[repeat(&[0], KIB)]),
            }
        }
    }

    #[test]
    fn jpeg_header_is_well_formed() {
        let jpeg = jpeg_huge_dimensions();
        assert!(jpeg.starts_with(&[0xFF, 0xD8]) && jpeg.ends_with(&[0xFF, 0xD9]));
        let (mut at, mut markers) = (2, Vec::new());
        while jpeg[at + 1] != 0xDA {
            assert_eq!(jpeg[at], 0xFF);
            markers.push(jpeg[at + 1]);
            let len = usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
            if jpeg[at + 1] == 0xC0 {
                assert_eq!(jpeg[at + 4..at + 10], [8, 0xFF, 0xDC, 0xFF, 0xDC, 3]);
            }
            at += 2 + len;
        }
        assert_eq!(markers, [0xDB, 0xC0, 0xC4]);
        let scan = at + 2 + usize::from(u16::from_be_bytes([jpeg[at + 2], jpeg[at + 3]]));
        assert!(jpeg[scan..jpeg.len() - 2].iter().all(|&b| b == 0), "scan data of zero blocks only");
    }

    // --- ZIP packages ----------------------------------------------------------------------

    #[test]
    fn zip_packages_hold_what_they_claim() {
        let spreadsheet = ["[Content_Types].xml", "_rels/.rels", "xl/workbook.xml", "xl/_rels/workbook.xml.rels"];
        let word = ["[Content_Types].xml", "_rels/.rels", "word/document.xml", "word/_rels/document.xml.rels"];
        /// Label, maker, parts, the big part, its least and greatest size.
        type Package<'a> = (&'a str, Maker, &'a [&'a str], &'a str, (u64, u64));
        let near = |size: u64| (size - 100, size);
        let cases: [Package; 8] = [
            ("xlsx", xlsx_shared_strings_bomb, &spreadsheet, "xl/sharedStrings.xml", near(SHARED_STRINGS_SIZE)),
            ("docx", docx_document_bomb, &word, "word/document.xml", near(PART_BOMB_SIZE)),
            ("docx nesting", docx_nesting_bomb, &word, "word/document.xml", (100 * TABLE_DEPTH, 110 * TABLE_DEPTH)),
            ("entities", xml_entity_bomb_docx, &word, "word/document.xml", (500, 2_000)),
            (
                "pptx",
                pptx_bomb,
                &["ppt/presentation.xml", "ppt/theme/theme1.xml"],
                "ppt/slides/slide1.xml",
                near(PART_BOMB_SIZE),
            ),
            ("many entries", zip_many_entries, &word, "word/document.xml", (100, 1_000)),
            ("epub", epub_bomb, &["mimetype", "META-INF/container.xml"], "OEBPS/chapter1.xhtml", near(PART_BOMB_SIZE)),
            ("odt", odt_bomb, &["mimetype", "META-INF/manifest.xml"], "content.xml", near(PART_BOMB_SIZE)),
        ];
        for (label, make, parts, big, (least, most)) in cases {
            let zip = make();
            let entries = read_zip(&zip);
            let names: HashSet<&str> = entries.iter().map(|entry| entry.name.as_str()).collect();
            assert_eq!(names.len(), entries.len(), "{label}: distinct names");
            for part in parts.iter().chain([&big]) {
                assert!(names.contains(part), "{label}: {part}");
            }
            for entry in &entries {
                let content = unzip(entry);
                if entry.name == big {
                    assert!((least..=most).contains(&entry.size), "{label}: {} bytes", entry.size);
                    println!("{label}: {big} inflates to {} bytes", entry.size);
                } else if entry.name.ends_with(".xml") || entry.name.ends_with(".rels") {
                    assert!(content.unwrap().starts_with(b"<?xml"), "{label}: {}", entry.name);
                }
            }
            if let Some(mimetype) = entries.first().filter(|entry| entry.name == "mimetype") {
                assert_eq!(mimetype.method, 0, "{label}: the media type comes first, stored");
                assert!(mimetype.data.starts_with(b"application/"));
            }
            if label == "many entries" {
                assert_eq!(entries.len(), 4 + MANY_ENTRIES);
            }
        }
    }

    #[test]
    fn docx_nesting_and_entities() {
        let zip = docx_nesting_bomb();
        let entries = read_zip(&zip);
        let document = entries.iter().find(|entry| entry.name == "word/document.xml").unwrap();
        let mut xml = Vec::new();
        flate2::read::DeflateDecoder::new(document.data).read_to_end(&mut xml).unwrap();
        let xml = String::from_utf8(xml).unwrap();
        assert_eq!(xml.matches("<w:tbl>").count() as u64, TABLE_DEPTH);
        let innermost = xml.find("<w:p/>").unwrap();
        assert_eq!(xml[..innermost].matches("<w:tc>").count() as u64, TABLE_DEPTH);
        let zip = xml_entity_bomb_docx();
        let entries = read_zip(&zip);
        let document = entries.iter().find(|entry| entry.name == "word/document.xml").unwrap();
        let xml = String::from_utf8(unzip(document).unwrap()).unwrap();
        assert!(xml.contains("<!ENTITY lol0 \"lol\">"));
        assert!(xml.contains(&format!("<!ENTITY lol9 \"{}\">", "&lol8;".repeat(10))));
        assert!(xml.contains("<w:t>&lol9;</w:t>"));
    }

    // --- Text ------------------------------------------------------------------------------

    #[test]
    fn text_cases_have_their_shapes() {
        let html = String::from_utf8(html_colspan_bomb()).unwrap();
        assert_eq!(html.matches(r#"<td colspan="1000000" rowspan="65534">"#).count(), 1_000);
        let html = html_nesting_bomb();
        let depth = HTML_DEPTH as usize;
        let start = find(&html, b"<div>").unwrap();
        assert!(html[start..start + 5 * depth] == b"<div>".repeat(depth));
        assert!(html[start + 5 * depth..].starts_with(b"deep</div>"));
        let csv = csv_wide();
        assert_eq!(csv.iter().filter(|&&b| b == b',').count() as u64, CSV_FIELDS - 1);
        assert_eq!(csv.iter().position(|&b| b == b'\n'), Some(csv.len() - 1));
        let csv = csv_long_field();
        let field = &csv[b"id,text\n1,\"".len()..csv.len() - 2];
        assert_eq!(field.len() as u64, CSV_FIELD_LEN);
        assert!(!field.contains(&b'"') && !field.contains(&b'\n'));
        let json = json_nesting_bomb();
        assert!(json.starts_with(b"{\"a\":[[[") && json.ends_with(b"]]]}"));
        assert_eq!(json.len() as u64, 2 * NESTING_DEPTH + 6);
        let json = String::from_utf8(json_many_keys()).unwrap();
        let keys: HashSet<&str> =
            json[1..json.len() - 1].split(',').map(|pair| pair.strip_suffix(":0").unwrap()).collect();
        assert_eq!(keys.len(), JSON_KEYS);
        assert!(keys.iter().all(|key| key.len() == 6 && key.starts_with('"') && key.ends_with('"')));
    }

    // --- All -------------------------------------------------------------------------------

    #[test]
    fn all_cases_are_made_in_seconds() {
        let start = std::time::Instant::now();
        let cases = all();
        let elapsed = start.elapsed();
        println!("all(): {} cases in {elapsed:.2?}", cases.len());
        let mut names = HashSet::new();
        for case in &cases {
            println!("{:26} {:5} {:>10} bytes", case.name, case.kind.extension(), case.bytes.len());
            assert!(names.insert(case.name), "{} twice", case.name);
            assert!(case.bytes.len() as u64 <= 16 * MIB, "{} is over 16 MiB", case.name);
            assert!(!case.kind.media_type().is_empty());
        }
    }
}
