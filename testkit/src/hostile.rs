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

// ---------------------------------------------------------------------------------------------
// PDF

/// What [`pdf_flate_bomb`] and [`pdf_chained_flate`] inflate to: 4 GiB of spaces.
const PAGE_BOMB_SIZE: u64 = 4 * GIB;
/// The pages of [`pdf_many_streams_bomb`], and what each page's content inflates to.
const MANY_PAGES: usize = 2_000;
const MANY_PAGES_CONTENT: u64 = 2 * MIB;
/// What the object stream of [`pdf_objstm_bomb`] inflates to.
const OBJSTM_SIZE: u64 = GIB;
/// What the image of [`pdf_image_bomb`] inflates to (it claims 60000 × 60000 × 3 bytes).
const IMAGE_DATA_SIZE: u64 = 2 * GIB;
/// The `q` operators of [`pdf_q_bomb`] (and as many `Q`).
const Q_COUNT: u64 = 2_000_000;
/// The depth of [`pdf_nested_arrays`] and [`json_nesting_bomb`].
const NESTING_DEPTH: u64 = 1_000_000;
/// What the LZW content of [`pdf_lzw_bomb`] decodes to.
const LZW_SIZE: u64 = GIB;
/// A US Letter page.
const LETTER: &str = "/MediaBox [0 0 612 792]";

/// Claims: a one-page PDF 1.7 whose page content is one `/FlateDecode` stream.
/// Really: the stream inflates to 4 GiB of spaces (white space to a content parser).
/// File about 4.2 MB; ratio about 1 : 1030, deflate's limit.
pub fn pdf_flate_bomb() -> Vec<u8> {
    let content = zlib(&[repeat(b" ", PAGE_BOMB_SIZE)]);
    one_page_pdf(
        &format!("{LETTER} /Resources << >> /Contents 4 0 R"),
        &[PdfObject::Stream("/Filter /FlateDecode", &content)],
    )
}

/// Claims: a PDF 1.7 of 2,000 pages, each with its own small `/FlateDecode` content stream.
/// Really: each stream inflates to 2 MiB of spaces, 3.9 GiB (4.2 GB) for the document.
/// File about 4.9 MB (2.4 kB per page, most of it compressed content); ratio about 1 : 860.
pub fn pdf_many_streams_bomb() -> Vec<u8> {
    let content = zlib(&[repeat(b" ", MANY_PAGES_CONTENT)]);
    let kids: Vec<String> = (0..MANY_PAGES).map(|i| format!("{} 0 R", 3 + 2 * i)).collect();
    let mut pdf = PdfWriter::new("1.7");
    pdf.object(1, b"<< /Type /Catalog /Pages 2 0 R >>");
    pdf.object(2, format!("<< /Type /Pages /Kids [{}] /Count {MANY_PAGES} >>", kids.join(" ")).as_bytes());
    for i in 0..MANY_PAGES {
        let page = format!("<< /Type /Page /Parent 2 0 R {LETTER} /Resources << >> /Contents {} 0 R >>", 4 + 2 * i);
        pdf.object(3 + 2 * i, page.as_bytes());
        pdf.stream(4 + 2 * i, "/Filter /FlateDecode", &content);
    }
    let xref = pdf.xref_table("");
    pdf.finish(xref)
}

/// Claims: a PDF 1.5 whose catalog, page tree and page sit in an object stream (`/Type /ObjStm`,
/// `/FlateDecode`), found through a cross-reference stream.
/// Really: the object stream inflates to 1 GiB: the three objects, then spaces.
/// File about 1.0 MB; ratio about 1 : 1030.
pub fn pdf_objstm_bomb() -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        format!("<< /Type /Page /Parent 2 0 R {LETTER} /Resources << >> >>"),
    ];
    let (mut index, mut body) = (String::new(), String::new());
    for (i, object) in objects.iter().enumerate() {
        index += &format!("{} {} ", i + 1, body.len());
        body += object;
        body.push('\n');
    }
    let first = index.len();
    let head = index + &body;
    let data = zlib(&filled(head.as_bytes(), b" ", b"", OBJSTM_SIZE));
    let mut pdf = PdfWriter::new("1.5");
    pdf.stream(4, &format!("/Type /ObjStm /N {} /First {first} /Filter /FlateDecode", objects.len()), &data);
    // The cross-reference stream (object 5): /W [1 4 2], entries for objects 0 to 5.
    let xref_at = pdf.len();
    let mut entries = Vec::new();
    let mut entry = |kind: u8, field: usize, index: u16| {
        entries.push(kind);
        entries.extend_from_slice(&u32::try_from(field).expect("a small file").to_be_bytes());
        entries.extend_from_slice(&index.to_be_bytes());
    };
    entry(0, 0, 0xFFFF);
    for i in 0..3 {
        entry(2, 4, i);
    }
    entry(1, pdf.offset(4), 0);
    entry(1, xref_at, 0);
    pdf.stream(5, "/Type /XRef /Size 6 /W [1 4 2] /Root 1 0 R", &entries);
    pdf.finish(xref_at)
}

/// Claims: a one-page PDF drawing an image XObject of 60000 × 60000 DeviceRGB pixels, 8 bits per
/// component, `/FlateDecode`: 10.8 GB of samples.
/// Really: the image stream inflates to 2 GiB of zeros (black), so a reader that trusts the
/// dimensions allocates 10.8 GB and one that trusts the data decodes 2 GiB.
/// File about 2.1 MB; ratio about 1 : 1030 (1 : 5200 against the claimed samples).
pub fn pdf_image_bomb() -> Vec<u8> {
    let image = zlib(&[repeat(&[0], IMAGE_DATA_SIZE)]);
    one_page_pdf(
        &format!("{LETTER} /Resources << /XObject << /Im0 5 0 R >> >> /Contents 4 0 R"),
        &[
            PdfObject::Stream("", b"q 612 0 0 792 0 0 cm /Im0 Do Q"),
            PdfObject::Stream(
                "/Type /XObject /Subtype /Image /Width 60000 /Height 60000 /ColorSpace /DeviceRGB \
                 /BitsPerComponent 8 /Filter /FlateDecode",
                &image,
            ),
        ],
    )
}

/// Claims: a one-page PDF with a line of Helvetica text.
/// Really: the page is 14400 × 14400 points (200 × 200 in, the largest PDF allows), so rendering
/// it at 300 dpi means 60000 × 60000 pixels (10.8 GB as RGB). File under 1 kB.
pub fn pdf_huge_page() -> Vec<u8> {
    one_page_pdf(
        "/MediaBox [0 0 14400 14400] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R",
        &[
            PdfObject::Stream("", b"BT /F1 48 Tf 72 14256 Td (A page of 200 by 200 inches) Tj ET"),
            PdfObject::Plain(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
        ],
    )
}

/// Claims: a one-page PDF with a small compressed content stream.
/// Really: the content saves the graphics state 2,000,000 times (`q`), then restores it as often
/// (`Q`): 8 MB of operators and a graphics-state stack 2,000,000 deep. File under 10 kB.
pub fn pdf_q_bomb() -> Vec<u8> {
    let content = zlib(&[repeat(b"q ", Q_COUNT), repeat(b"Q ", Q_COUNT)]);
    one_page_pdf(
        &format!("{LETTER} /Resources << >> /Contents 4 0 R"),
        &[PdfObject::Stream("/Filter /FlateDecode", &content)],
    )
}

/// Claims: a one-page PDF whose page has an `/Annots` array.
/// Really: that array (object 4, uncompressed) is nested 1,000,000 deep (`[[[…]]]`), which a
/// recursive parser meets while loading the file. File about 2 MB.
pub fn pdf_nested_arrays() -> Vec<u8> {
    let nested = materialize(&[repeat(b"[", NESTING_DEPTH), repeat(b"]", NESTING_DEPTH)]);
    one_page_pdf(&format!("{LETTER} /Resources << >> /Annots 4 0 R"), &[PdfObject::Plain(&nested)])
}

/// Claims: a PDF of 1,000,000,000 pages (`/Count` of the page tree's root).
/// Really: one page; the root's only kid is a page-tree node whose `/Kids` lists the root again
/// (a cycle) before the page. File under 1 kB.
pub fn pdf_pages_cycle() -> Vec<u8> {
    let mut pdf = PdfWriter::new("1.7");
    pdf.object(1, b"<< /Type /Catalog /Pages 2 0 R >>");
    pdf.object(2, b"<< /Type /Pages /Kids [3 0 R] /Count 1000000000 >>");
    pdf.object(3, b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 4 0 R] /Count 1000000000 >>");
    pdf.object(4, format!("<< /Type /Page /Parent 3 0 R {LETTER} /Resources << >> >>").as_bytes());
    let xref = pdf.xref_table("");
    pdf.finish(xref)
}

/// Claims: a one-page PDF updated once (two cross-reference sections linked by `/Prev`).
/// Really: each section's `/Prev` points at the other, so following the chain never ends.
/// File under 1 kB.
pub fn pdf_xref_loop() -> Vec<u8> {
    let mut pdf = PdfWriter::new("1.7");
    pdf.object(1, b"<< /Type /Catalog /Pages 2 0 R >>");
    pdf.object(2, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>");
    pdf.object(3, format!("<< /Type /Page /Parent 2 0 R {LETTER} /Resources << >> >>").as_bytes());
    // The first section's /Prev names the second, which follows it: the number is padded to a
    // fixed width so that the first section's length does not depend on it.
    let prev = |at: usize| format!(" /Prev {at:<10}");
    let first_at = pdf.len();
    let second_at = first_at + pdf.xref_table_text(&prev(0)).len();
    let first = pdf.xref_table_text(&prev(second_at));
    pdf.push(&first);
    let size = pdf.object_count() + 1;
    pdf.push(
        format!("xref\n0 1\n0000000000 65535 f \ntrailer\n<< /Size {size} /Root 1 0 R{} >>\n", prev(first_at))
            .as_bytes(),
    );
    pdf.finish(second_at)
}

/// Claims: a one-page PDF whose content is an `/LZWDecode` stream (PDF's default early change).
/// Really: it decodes to 1 GiB of spaces. LZW cannot do better than one code per run that is one
/// byte longer than the last, and the table is cleared every 3,837 codes.
/// File about 0.8 MB; ratio about 1 : 1360.
pub fn pdf_lzw_bomb() -> Vec<u8> {
    let content = lzw_run(b' ', LZW_SIZE);
    one_page_pdf(
        &format!("{LETTER} /Resources << >> /Contents 4 0 R"),
        &[PdfObject::Stream("/Filter /LZWDecode", &content)],
    )
}

/// Claims: a one-page PDF whose content stream goes through `/FlateDecode` twice.
/// Really: the first pass gives the 4.2 MB stream of [`pdf_flate_bomb`], the second 4 GiB of
/// spaces. File about 4.6 kB; ratio about 1 : 940,000 after both passes.
pub fn pdf_chained_flate() -> Vec<u8> {
    let inner = zlib(&[repeat(b" ", PAGE_BOMB_SIZE)]);
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&inner).expect("compressing into memory");
    let outer = encoder.finish().expect("compressing into memory");
    one_page_pdf(
        &format!("{LETTER} /Resources << >> /Contents 4 0 R"),
        &[PdfObject::Stream("/Filter [/FlateDecode /FlateDecode]", &outer)],
    )
}

/// An object of [`one_page_pdf`]: a plain object, or a stream (its dictionary's entries other
/// than `/Length`, and its data).
enum PdfObject<'a> {
    Plain(&'a [u8]),
    Stream(&'a str, &'a [u8]),
}

/// A PDF 1.7 of one page: catalog 1, page tree 2, page 3 (`page`: the page dictionary's entries
/// besides `/Type` and `/Parent`), then `objects` numbered from 4; a classic xref table.
fn one_page_pdf(page: &str, objects: &[PdfObject]) -> Vec<u8> {
    let mut pdf = PdfWriter::new("1.7");
    pdf.object(1, b"<< /Type /Catalog /Pages 2 0 R >>");
    pdf.object(2, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>");
    pdf.object(3, format!("<< /Type /Page /Parent 2 0 R {page} >>").as_bytes());
    for (i, object) in objects.iter().enumerate() {
        match object {
            PdfObject::Plain(body) => pdf.object(4 + i, body),
            PdfObject::Stream(dict, data) => pdf.stream(4 + i, dict, data),
        }
    }
    let xref = pdf.xref_table("");
    pdf.finish(xref)
}

/// A PDF written front to back, remembering where each object starts.
struct PdfWriter {
    out: Vec<u8>,
    /// `offsets[n]`: where object `n` starts; 0 for an object not written at top level.
    offsets: Vec<usize>,
}

impl PdfWriter {
    /// The header of a PDF of `version` (e.g. "1.7"), with the customary binary comment.
    fn new(version: &str) -> Self {
        let mut out = format!("%PDF-{version}\n").into_bytes();
        out.extend_from_slice(b"%\xE2\xE3\xCF\xD3\n");
        PdfWriter { out, offsets: vec![0] }
    }

    fn len(&self) -> usize {
        self.out.len()
    }

    fn push(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// The highest object number written or skipped so far.
    fn object_count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Where object `number` starts.
    fn offset(&self, number: usize) -> usize {
        self.offsets[number]
    }

    /// Writes object `number` (higher than any written before) with `body`.
    fn object(&mut self, number: usize, body: &[u8]) {
        self.start(number);
        self.out.extend_from_slice(body);
        self.out.extend_from_slice(b"\nendobj\n");
    }

    /// Writes stream object `number`: `dict` (the entries besides `/Length`) and `data`.
    fn stream(&mut self, number: usize, dict: &str, data: &[u8]) {
        self.start(number);
        let dict = if dict.is_empty() { String::new() } else { format!("{dict} ") };
        self.out.extend_from_slice(format!("<< {dict}/Length {} >>\nstream\n", data.len()).as_bytes());
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\nendstream\nendobj\n");
    }

    fn start(&mut self, number: usize) {
        assert!(number >= self.offsets.len(), "PDF objects are written in increasing numbers");
        self.offsets.resize(number + 1, 0);
        self.offsets[number] = self.out.len();
        self.out.extend_from_slice(format!("{number} 0 obj\n").as_bytes());
    }

    /// The text of a cross-reference table of every object written, and its trailer
    /// (`/Size`, `/Root 1 0 R` and `trailer_extra`).
    fn xref_table_text(&self, trailer_extra: &str) -> Vec<u8> {
        let size = self.offsets.len();
        let mut text = format!("xref\n0 {size}\n0000000000 65535 f \n");
        for offset in &self.offsets[1..] {
            assert!(*offset > 0, "a classic xref table lists every object");
            text += &format!("{offset:010} 00000 n \n");
        }
        text += &format!("trailer\n<< /Size {size} /Root 1 0 R{trailer_extra} >>\n");
        text.into_bytes()
    }

    /// Writes [`Self::xref_table_text`]; returns where it starts.
    fn xref_table(&mut self, trailer_extra: &str) -> usize {
        let at = self.len();
        let text = self.xref_table_text(trailer_extra);
        self.push(&text);
        at
    }

    /// Ends the file, pointing `startxref` at `xref`.
    fn finish(mut self, xref: usize) -> Vec<u8> {
        self.out.extend_from_slice(format!("startxref\n{xref}\n%%EOF\n").as_bytes());
        self.out
    }
}

// ---------------------------------------------------------------------------------------------
// Images

/// The dimensions of [`png_bomb`], and how much of its compressed pixel data it keeps.
const PNG_BOMB_SIDE: u32 = 100_000;
const PNG_BOMB_KEPT: u64 = 4 * MIB;
/// The width and height of [`jpeg_huge_dimensions`].
const JPEG_SIDE: u16 = 65_500;

/// Claims: a PNG of 100000 × 100000 RGBA pixels, 8 bits per sample (40 GB of pixels).
/// Really: the pixel data (zero rows, each with filter byte 0) is a valid zlib stream cut off
/// after 4 MiB of compressed data (in four 1 MiB IDAT chunks, correct CRCs), which is 4.3 GB
/// (about 10,800 rows) decoded before it runs out. File 4 MiB; ratio about 1 : 1030.
pub fn png_bomb() -> Vec<u8> {
    // Compress a little more than the kept part holds, then cut.
    let mut data = zlib(&[repeat(&[0], (PNG_BOMB_KEPT + 64 * KIB) * RUN_BYTES_PER_DEFLATE_BYTE)]);
    data.truncate(usize::try_from(PNG_BOMB_KEPT).expect("4 MiB"));
    png(PNG_BOMB_SIDE, PNG_BOMB_SIDE, &data)
}

/// Claims: a PNG of 2147483647 × 2147483647 RGBA pixels (the largest PNG allows; 18 EB).
/// Really: one IDAT of 162 bytes, a complete zlib stream of 1 KiB of zeros. File 219 bytes.
pub fn png_dimensions_only() -> Vec<u8> {
    let side = u32::MAX >> 1;
    png(side, side, &zlib(&[repeat(&[0], KIB)]))
}

/// Claims: a baseline JPEG of 65500 × 65500 pixels, three components (12.9 GB decoded).
/// Really: a valid header (DQT, SOF0, DHT, SOS) and 4 KiB of scan data, 16,384 blocks of zero
/// coefficients (part of the first row of blocks), then EOI. File about 4.2 kB.
pub fn jpeg_huge_dimensions() -> Vec<u8> {
    let mut out = vec![0xFF, 0xD8];
    // One quantisation table, all ones.
    let mut dqt = vec![0x00];
    dqt.extend_from_slice(&[1; 64]);
    jpeg_segment(&mut out, 0xDB, &dqt);
    // Baseline frame: 8-bit samples, height, width, three components (1×1 sampling, table 0).
    let mut sof = vec![8];
    sof.extend_from_slice(&JPEG_SIDE.to_be_bytes());
    sof.extend_from_slice(&JPEG_SIDE.to_be_bytes());
    sof.push(3);
    for component in 1..=3 {
        sof.extend_from_slice(&[component, 0x11, 0]);
    }
    jpeg_segment(&mut out, 0xC0, &sof);
    // Huffman tables: DC table 0 and AC table 0 each hold one code, "0", for value 0 (a DC
    // difference of 0; end of block), so a block of zero coefficients costs two bits.
    let mut dht = Vec::new();
    for class in [0x00, 0x10] {
        dht.push(class);
        let mut counts = [0u8; 16];
        counts[0] = 1;
        dht.extend_from_slice(&counts);
        dht.push(0);
    }
    jpeg_segment(&mut out, 0xC4, &dht);
    // Scan of the three components (tables 0 and 0), spectral selection 0–63.
    jpeg_segment(&mut out, 0xDA, &[3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 63, 0]);
    out.extend_from_slice(&[0; 4096]);
    out.extend_from_slice(&[0xFF, 0xD9]);
    out
}

/// A PNG of `width` × `height` RGBA pixels, 8 bits per sample, with `data` in IDAT chunks of at
/// most 1 MiB.
fn png(width: u32, height: u32, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1A\n".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    // Bit depth 8, colour type 6 (RGBA), deflate, adaptive filtering, no interlace.
    header.extend_from_slice(&[8, 6, 0, 0, 0]);
    png_chunk(&mut out, b"IHDR", &header);
    for part in data.chunks(MIB as usize) {
        png_chunk(&mut out, b"IDAT", part);
    }
    png_chunk(&mut out, b"IEND", &[]);
    out
}

/// Appends a PNG chunk: length, type, data, CRC-32 of type and data.
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&u32::try_from(data.len()).expect("a PNG chunk under 4 GiB").to_be_bytes());
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32_concat(crc32(kind), crc32(data), data.len() as u64);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// Appends a JPEG marker segment: 0xFF, `marker`, length (including itself), `data`.
fn jpeg_segment(out: &mut Vec<u8>, marker: u8, data: &[u8]) {
    out.extend_from_slice(&[0xFF, marker]);
    out.extend_from_slice(&u16::try_from(data.len() + 2).expect("a short JPEG segment").to_be_bytes());
    out.extend_from_slice(data);
}

// ---------------------------------------------------------------------------------------------
// Office documents and other ZIP packages

/// What the shared strings of [`xlsx_shared_strings_bomb`] inflate to (at most).
const SHARED_STRINGS_SIZE: u64 = 500 * MIB;
/// What the big part of each other Office or EPUB bomb inflates to (at most).
const PART_BOMB_SIZE: u64 = GIB;
/// The depth of the nested tables of [`docx_nesting_bomb`].
const TABLE_DEPTH: u64 = 100_000;
/// The extra entries of [`zip_many_entries`].
const MANY_ENTRIES: usize = 200_000;

const W_NS: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const S_NS: &str = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
const P_NS: &str = "http://schemas.openxmlformats.org/presentationml/2006/main";
const A_NS: &str = "http://schemas.openxmlformats.org/drawingml/2006/main";
const R_NS: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const XML_DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;

/// Claims: a one-sheet workbook whose cell A1 is shared string 0.
/// Really: `xl/sharedStrings.xml` inflates to 500 MiB, that one string being "lol " repeated
/// (a single 524 MB cell text). File about 0.5 MB; ratio about 1 : 1025.
pub fn xlsx_shared_strings_bomb() -> Vec<u8> {
    let head = format!(r#"{XML_DECLARATION}<sst xmlns="{S_NS}" count="1" uniqueCount="1"><si><t>"#);
    let strings = filled(head.as_bytes(), b"lol ", b"</t></si></sst>", SHARED_STRINGS_SIZE);
    let workbook = format!(
        r#"{XML_DECLARATION}<workbook xmlns="{S_NS}" xmlns:r="{R_NS}"><sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>"#
    );
    let sheet = format!(
        r#"{XML_DECLARATION}<worksheet xmlns="{S_NS}"><sheetData><row r="1"><c r="A1" t="s"><v>0</v></c></row></sheetData></worksheet>"#
    );
    let spreadsheet = "application/vnd.openxmlformats-officedocument.spreadsheetml";
    let mut zip = ZipWriter::default();
    zip.deflated(
        "[Content_Types].xml",
        &[once(
            content_types(&[
                ("/xl/workbook.xml", &format!("{spreadsheet}.sheet.main+xml")),
                ("/xl/worksheets/sheet1.xml", &format!("{spreadsheet}.worksheet+xml")),
                ("/xl/sharedStrings.xml", &format!("{spreadsheet}.sharedStrings+xml")),
            ])
            .as_bytes(),
        )],
    );
    zip.deflated("_rels/.rels", &[once(relationships(&[("officeDocument", "xl/workbook.xml")]).as_bytes())]);
    zip.deflated("xl/workbook.xml", &[once(workbook.as_bytes())]);
    zip.deflated(
        "xl/_rels/workbook.xml.rels",
        &[once(
            relationships(&[("worksheet", "worksheets/sheet1.xml"), ("sharedStrings", "sharedStrings.xml")]).as_bytes(),
        )],
    );
    zip.deflated("xl/worksheets/sheet1.xml", &[once(sheet.as_bytes())]);
    zip.deflated("xl/sharedStrings.xml", &strings);
    zip.finish()
}

/// Claims: a Word document of one paragraph.
/// Really: `word/document.xml` inflates to 1 GiB, the paragraph holding 23 million runs of
/// "lol ". File about 3.1 MB; ratio about 1 : 340.
pub fn docx_document_bomb() -> Vec<u8> {
    let (head, tail) = document_xml("", "<w:p>", "</w:p>");
    let run = br#"<w:r><w:t xml:space="preserve">lol </w:t></w:r>"#;
    docx(&filled(head.as_bytes(), run, tail.as_bytes(), PART_BOMB_SIZE)).finish()
}

/// Claims: a Word document with a table.
/// Really: tables nested 100,000 deep (each in the single cell of the one above), 10.2 MB of
/// `word/document.xml`. File about 34 kB; ratio about 1 : 300.
pub fn docx_nesting_bomb() -> Vec<u8> {
    let (head, tail) = document_xml("", "", "<w:sectPr/>");
    let open = br#"<w:tbl><w:tblPr/><w:tblGrid><w:gridCol w:w="100"/></w:tblGrid><w:tr><w:tc>"#;
    let close = b"</w:tc></w:tr></w:tbl><w:p/>";
    docx(&[
        once(head.as_bytes()),
        repeat(open, TABLE_DEPTH),
        once(b"<w:p/>"),
        repeat(close, TABLE_DEPTH),
        once(tail.as_bytes()),
    ])
    .finish()
}

/// Claims: a Word document with a table.
/// Really: tables nested 50,000 deep as in [`docx_nesting_bomb`], each row with its own
/// revision id, so the part does not compress (about 4 MB stored, no ratio to catch): only
/// its depth gives it away. LibreOffice lays it out for minutes.
pub fn docx_deep_nesting() -> Vec<u8> {
    let (head, tail) = document_xml("", "", "<w:sectPr/>");
    let mut part = head.into_bytes();
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..DEEP_NESTING {
        // xorshift64: a different id for every row, the same file every time.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        part.extend_from_slice(format!(r#"<w:tbl><w:tr w:rsidR="{:016X}"><w:tc>"#, state).as_bytes());
    }
    part.extend_from_slice(b"<w:p/>");
    for _ in 0..DEEP_NESTING {
        part.extend_from_slice(b"</w:tc></w:tr></w:tbl><w:p/>");
    }
    part.extend_from_slice(tail.as_bytes());
    docx(&[once(&part)]).finish()
}

/// The depth of the nested tables of [`docx_deep_nesting`].
const DEEP_NESTING: usize = 50_000;

/// Claims: a Word document of one paragraph.
/// Really: `word/document.xml` has a DOCTYPE declaring entities nested ten deep, each ten of the
/// one below ("billion laughs"), and the paragraph's text is the top one: 3 × 10⁹ bytes (3 GB)
/// once expanded (the part itself is 956 bytes). File about 2.7 kB.
pub fn xml_entity_bomb_docx() -> Vec<u8> {
    let mut doctype = String::from("<!DOCTYPE w:document [\n<!ENTITY lol0 \"lol\">\n");
    for level in 1..=9 {
        doctype += &format!("<!ENTITY lol{level} \"{}\">\n", format!("&lol{};", level - 1).repeat(10));
    }
    doctype += "]>";
    let (head, tail) = document_xml(&doctype, "<w:p><w:r><w:t>", "</w:t></w:r></w:p>");
    docx(&[once(head.as_bytes()), once(b"&lol9;"), once(tail.as_bytes())]).finish()
}

/// Claims: a presentation of one slide with one text box.
/// Really: `ppt/slides/slide1.xml` inflates to 1 GiB, the text box's paragraph holding
/// 41 million runs of "lol ". A minimal slide master, layout and theme make the package complete.
/// File about 2.6 MB; ratio about 1 : 410.
pub fn pptx_bomb() -> Vec<u8> {
    let namespaces = format!(r#"xmlns:a="{A_NS}" xmlns:r="{R_NS}" xmlns:p="{P_NS}""#);
    let empty_tree = r#"<p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/></p:spTree></p:cSld>"#;
    let presentation = format!(
        r#"{XML_DECLARATION}<p:presentation {namespaces}><p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst><p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst><p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>"#
    );
    let master = format!(
        r#"{XML_DECLARATION}<p:sldMaster {namespaces}>{empty_tree}<p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/><p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/></p:sldLayoutIdLst></p:sldMaster>"#
    );
    let layout = format!(
        r#"{XML_DECLARATION}<p:sldLayout {namespaces} type="blank">{empty_tree}<p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"#
    );
    let slide_head = format!(
        r#"{XML_DECLARATION}<p:sld {namespaces}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/><p:sp><p:nvSpPr><p:cNvPr id="2" name="Text"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="9144000" cy="6858000"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr><p:txBody><a:bodyPr/><a:lstStyle/><a:p>"#
    );
    let slide_tail =
        r#"</a:p></p:txBody></p:sp></p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>"#;
    let slide = filled(slide_head.as_bytes(), b"<a:r><a:t>lol </a:t></a:r>", slide_tail.as_bytes(), PART_BOMB_SIZE);
    let presentationml = "application/vnd.openxmlformats-officedocument.presentationml";
    let mut zip = ZipWriter::default();
    zip.deflated(
        "[Content_Types].xml",
        &[once(
            content_types(&[
                ("/ppt/presentation.xml", &format!("{presentationml}.presentation.main+xml")),
                ("/ppt/slideMasters/slideMaster1.xml", &format!("{presentationml}.slideMaster+xml")),
                ("/ppt/slideLayouts/slideLayout1.xml", &format!("{presentationml}.slideLayout+xml")),
                ("/ppt/slides/slide1.xml", &format!("{presentationml}.slide+xml")),
                ("/ppt/theme/theme1.xml", "application/vnd.openxmlformats-officedocument.theme+xml"),
            ])
            .as_bytes(),
        )],
    );
    zip.deflated("_rels/.rels", &[once(relationships(&[("officeDocument", "ppt/presentation.xml")]).as_bytes())]);
    zip.deflated("ppt/presentation.xml", &[once(presentation.as_bytes())]);
    zip.deflated(
        "ppt/_rels/presentation.xml.rels",
        &[once(
            relationships(&[
                ("slideMaster", "slideMasters/slideMaster1.xml"),
                ("slide", "slides/slide1.xml"),
                ("theme", "theme/theme1.xml"),
            ])
            .as_bytes(),
        )],
    );
    zip.deflated("ppt/slideMasters/slideMaster1.xml", &[once(master.as_bytes())]);
    zip.deflated(
        "ppt/slideMasters/_rels/slideMaster1.xml.rels",
        &[once(
            relationships(&[("slideLayout", "../slideLayouts/slideLayout1.xml"), ("theme", "../theme/theme1.xml")])
                .as_bytes(),
        )],
    );
    zip.deflated("ppt/slideLayouts/slideLayout1.xml", &[once(layout.as_bytes())]);
    zip.deflated(
        "ppt/slideLayouts/_rels/slideLayout1.xml.rels",
        &[once(relationships(&[("slideMaster", "../slideMasters/slideMaster1.xml")]).as_bytes())],
    );
    zip.deflated("ppt/theme/theme1.xml", &[once(theme_xml().as_bytes())]);
    zip.deflated("ppt/slides/slide1.xml", &slide);
    zip.deflated(
        "ppt/slides/_rels/slide1.xml.rels",
        &[once(relationships(&[("slideLayout", "../slideLayouts/slideLayout1.xml")]).as_bytes())],
    );
    zip.finish()
}

/// Claims: a Word document of one paragraph.
/// Really: besides its four parts the package has 200,000 empty stored entries (names of three
/// characters), so the central directory lists 200,004 entries and needs ZIP64's end record.
/// File about 15.6 MiB.
pub fn zip_many_entries() -> Vec<u8> {
    const NAME_CHARS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    let (head, tail) = document_xml("", "<w:p><w:r><w:t>", "</w:t></w:r></w:p>");
    let mut zip = docx(&[once(head.as_bytes()), once(b"Two hundred thousand entries."), once(tail.as_bytes())]);
    for i in 0..MANY_ENTRIES {
        let name = [NAME_CHARS[i / 4096], NAME_CHARS[i / 64 % 64], NAME_CHARS[i % 64]];
        zip.stored(std::str::from_utf8(&name).expect("ASCII"), b"");
    }
    zip.finish()
}

/// Claims: an EPUB 3 book of one chapter.
/// Really: the chapter (`OEBPS/chapter1.xhtml`) inflates to 1 GiB, 21 million paragraphs.
/// File about 3.1 MB; ratio about 1 : 340.
pub fn epub_bomb() -> Vec<u8> {
    let container = r#"<?xml version="1.0" encoding="UTF-8"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#;
    let package = r#"<?xml version="1.0" encoding="UTF-8"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:uuid:0b5e6c1e-6d0e-4c43-9d47-2f1f3c0a7e11</dc:identifier><dc:title>Hostile</dc:title><dc:language>en</dc:language><meta property="dcterms:modified">2024-01-01T00:00:00Z</meta></metadata><manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/><item id="chapter1" href="chapter1.xhtml" media-type="application/xhtml+xml"/></manifest><spine><itemref idref="chapter1"/></spine></package>"#;
    let nav = r#"<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head><body><nav epub:type="toc"><ol><li><a href="chapter1.xhtml">Chapter 1</a></li></ol></nav></body></html>"#;
    let head = r#"<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><title>Chapter 1</title></head><body>"#;
    let chapter = filled(
        head.as_bytes(),
        b"<p>All work and no play makes Jack a dull boy.</p>\n",
        b"</body></html>",
        PART_BOMB_SIZE,
    );
    let mut zip = ZipWriter::default();
    zip.stored("mimetype", b"application/epub+zip");
    zip.deflated("META-INF/container.xml", &[once(container.as_bytes())]);
    zip.deflated("OEBPS/content.opf", &[once(package.as_bytes())]);
    zip.deflated("OEBPS/nav.xhtml", &[once(nav.as_bytes())]);
    zip.deflated("OEBPS/chapter1.xhtml", &chapter);
    zip.finish()
}

/// Claims: an OpenDocument text.
/// Really: `content.xml` inflates to 1 GiB, 38 million paragraphs. File about 2.6 MB;
/// ratio about 1 : 410.
pub fn odt_bomb() -> Vec<u8> {
    let manifest = r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:version="1.2" manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#;
    let head = r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"><office:body><office:text>"#;
    let content = filled(
        head.as_bytes(),
        b"<text:p>lol lol lol</text:p>",
        b"</office:text></office:body></office:document-content>",
        PART_BOMB_SIZE,
    );
    let mut zip = ZipWriter::default();
    zip.stored("mimetype", b"application/vnd.oasis.opendocument.text");
    zip.deflated("META-INF/manifest.xml", &[once(manifest.as_bytes())]);
    zip.deflated("content.xml", &content);
    zip.finish()
}

/// The start and end of a `word/document.xml`: declaration, `doctype`, `<w:document><w:body>`,
/// `open`; then `close`, `</w:body></w:document>`.
fn document_xml(doctype: &str, open: &str, close: &str) -> (String, String) {
    (
        format!("{XML_DECLARATION}\n{doctype}<w:document xmlns:w=\"{W_NS}\"><w:body>{open}"),
        format!("{close}</w:body></w:document>"),
    )
}

/// A minimal Word package whose `word/document.xml` is `document` (deflated), left open for
/// more entries.
fn docx(document: &[Run]) -> ZipWriter {
    let mut zip = ZipWriter::default();
    zip.deflated(
        "[Content_Types].xml",
        &[once(
            content_types(&[(
                "/word/document.xml",
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
            )])
            .as_bytes(),
        )],
    );
    zip.deflated("_rels/.rels", &[once(relationships(&[("officeDocument", "word/document.xml")]).as_bytes())]);
    zip.deflated("word/document.xml", document);
    zip.deflated("word/_rels/document.xml.rels", &[once(relationships(&[]).as_bytes())]);
    zip
}

/// `[Content_Types].xml`: defaults for `.rels` and `.xml`, and `overrides` (part name, type).
fn content_types(overrides: &[(&str, &str)]) -> String {
    let mut xml = format!(
        r#"{XML_DECLARATION}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>"#
    );
    for (part, kind) in overrides {
        xml += &format!(r#"<Override PartName="{part}" ContentType="{kind}"/>"#);
    }
    xml + "</Types>"
}

/// A relationships part: `rId1`, `rId2`… of the Office document relationship types `rels`
/// (type name, target).
fn relationships(rels: &[(&str, &str)]) -> String {
    let mut xml = format!(
        r#"{XML_DECLARATION}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#
    );
    for (i, (kind, target)) in rels.iter().enumerate() {
        xml += &format!(r#"<Relationship Id="rId{}" Type="{R_NS}/{kind}" Target="{target}"/>"#, i + 1);
    }
    xml + "</Relationships>"
}

/// A minimal DrawingML theme: twelve colours, Arial, three of each formatting style.
fn theme_xml() -> String {
    let colors: String = [
        ("dk1", "000000"),
        ("lt1", "FFFFFF"),
        ("dk2", "1F497D"),
        ("lt2", "EEECE1"),
        ("accent1", "4F81BD"),
        ("accent2", "C0504D"),
        ("accent3", "9BBB59"),
        ("accent4", "8064A2"),
        ("accent5", "4BACC6"),
        ("accent6", "F79646"),
        ("hlink", "0000FF"),
        ("folHlink", "800080"),
    ]
    .iter()
    .map(|(name, rgb)| format!(r#"<a:{name}><a:srgbClr val="{rgb}"/></a:{name}>"#))
    .collect();
    let font = r#"<a:latin typeface="Arial"/><a:ea typeface=""/><a:cs typeface=""/>"#;
    let fill = r#"<a:solidFill><a:schemeClr val="phClr"/></a:solidFill>"#;
    let fills = fill.repeat(3);
    let lines = format!(r#"<a:ln w="9525">{fill}</a:ln>"#).repeat(3);
    let effects = "<a:effectStyle><a:effectLst/></a:effectStyle>".repeat(3);
    format!(
        r#"{XML_DECLARATION}<a:theme xmlns:a="{A_NS}" name="Hostile"><a:themeElements><a:clrScheme name="Hostile">{colors}</a:clrScheme><a:fontScheme name="Hostile"><a:majorFont>{font}</a:majorFont><a:minorFont>{font}</a:minorFont></a:fontScheme><a:fmtScheme name="Hostile"><a:fillStyleLst>{fills}</a:fillStyleLst><a:lnStyleLst>{lines}</a:lnStyleLst><a:effectStyleLst>{effects}</a:effectStyleLst><a:bgFillStyleLst>{fills}</a:bgFillStyleLst></a:fmtScheme></a:themeElements></a:theme>"#
    )
}

/// A ZIP archive written front to back: local headers and data, then the central directory.
#[derive(Default)]
struct ZipWriter {
    out: Vec<u8>,
    central: Vec<u8>,
    entries: u64,
}

impl ZipWriter {
    /// Adds `name` holding `data` uncompressed.
    fn stored(&mut self, name: &str, data: &[u8]) {
        self.entry(name, 0, crc32(data), data, data.len() as u64);
    }

    /// Adds `name` holding `content`, deflated.
    fn deflated(&mut self, name: &str, content: &[Run]) {
        self.entry(name, 8, crc32_runs(content), &deflate(content), decoded_len(content));
    }

    fn entry(&mut self, name: &str, method: u16, crc: u32, data: &[u8], size: u64) {
        let offset = u32::try_from(self.out.len()).expect("a ZIP under 4 GiB");
        let compressed = u32::try_from(data.len()).expect("an entry under 4 GiB");
        let size = u32::try_from(size).expect("an entry under 4 GiB inflated");
        let name_len = u16::try_from(name.len()).expect("a short name");
        // Version 2.0 needed, no flags, 1980-01-01 00:00.
        let common = |header: &mut Vec<u8>| {
            for field in [20, 0, method, 0, 0x21] {
                header.extend_from_slice(&u16::to_le_bytes(field));
            }
            for field in [crc, compressed, size] {
                header.extend_from_slice(&field.to_le_bytes());
            }
            header.extend_from_slice(&name_len.to_le_bytes());
            header.extend_from_slice(&[0, 0]); // no extra field
        };
        self.out.extend_from_slice(&0x0403_4B50u32.to_le_bytes());
        common(&mut self.out);
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(data);
        self.central.extend_from_slice(&0x0201_4B50u32.to_le_bytes());
        self.central.extend_from_slice(&20u16.to_le_bytes()); // made by: MS-DOS, version 2.0
        common(&mut self.central);
        // No comment, disk 0, no attributes.
        self.central.extend_from_slice(&[0; 10]);
        self.central.extend_from_slice(&offset.to_le_bytes());
        self.central.extend_from_slice(name.as_bytes());
        self.entries += 1;
    }

    /// The archive: entries, central directory, and the end records (ZIP64's too when there are
    /// more than 65,535 entries).
    fn finish(mut self) -> Vec<u8> {
        let directory_at = self.out.len() as u64;
        let directory_len = self.central.len() as u64;
        self.out.append(&mut self.central);
        if self.entries > 0xFFFF {
            let record_at = self.out.len() as u64;
            self.out.extend_from_slice(&0x0606_4B50u32.to_le_bytes());
            self.out.extend_from_slice(&44u64.to_le_bytes()); // the size of the rest of the record
            self.out.extend_from_slice(&45u16.to_le_bytes()); // made by: version 4.5
            self.out.extend_from_slice(&45u16.to_le_bytes()); // needed: version 4.5
            self.out.extend_from_slice(&[0; 8]); // disk 0, directory on disk 0
            for field in [self.entries, self.entries, directory_len, directory_at] {
                self.out.extend_from_slice(&field.to_le_bytes());
            }
            self.out.extend_from_slice(&0x0706_4B50u32.to_le_bytes());
            self.out.extend_from_slice(&0u32.to_le_bytes()); // the record is on disk 0
            self.out.extend_from_slice(&record_at.to_le_bytes());
            self.out.extend_from_slice(&1u32.to_le_bytes()); // one disk
        }
        let entries = u16::try_from(self.entries).unwrap_or(0xFFFF);
        self.out.extend_from_slice(&0x0605_4B50u32.to_le_bytes());
        self.out.extend_from_slice(&[0; 4]); // disk 0, directory on disk 0
        self.out.extend_from_slice(&entries.to_le_bytes());
        self.out.extend_from_slice(&entries.to_le_bytes());
        self.out.extend_from_slice(&u32::try_from(directory_len).expect("a ZIP under 4 GiB").to_le_bytes());
        self.out.extend_from_slice(&u32::try_from(directory_at).expect("a ZIP under 4 GiB").to_le_bytes());
        self.out.extend_from_slice(&[0, 0]); // no comment
        self.out
    }
}

// ---------------------------------------------------------------------------------------------
// Text: HTML, CSV, JSON

/// The depth of [`html_nesting_bomb`].
const HTML_DEPTH: u64 = 1_000_000;
/// The fields of [`csv_wide`].
const CSV_FIELDS: u64 = 5_000_000;
/// The length of the field of [`csv_long_field`].
const CSV_FIELD_LEN: u64 = 15 * MIB;
/// The keys of [`json_many_keys`] (2,000,000 keys of four characters would pass 16 MiB).
const JSON_KEYS: usize = 1_000_000;

/// Claims: an HTML table of 1,000 rows.
/// Really: each row's one cell spans 1,000,000 columns (browsers clamp this to 1,000) and
/// 65,534 rows (the most HTML allows), a grid of 10⁹ columns × 66 million rows for a naive
/// table model. File about 54 kB.
pub fn html_colspan_bomb() -> Vec<u8> {
    materialize(&[
        once(b"<!DOCTYPE html><html><head><title>colspan</title></head><body><table>\n"),
        repeat(b"<tr><td colspan=\"1000000\" rowspan=\"65534\">x</td></tr>\n", 1_000),
        once(b"</table></body></html>\n"),
    ])
}

/// Claims: an HTML page with a line of text.
/// Really: the text sits in 1,000,000 nested `<div>` elements. File about 11 MB.
pub fn html_nesting_bomb() -> Vec<u8> {
    materialize(&[
        once(b"<!DOCTYPE html><html><head><title>nesting</title></head><body>"),
        repeat(b"<div>", HTML_DEPTH),
        once(b"deep"),
        repeat(b"</div>", HTML_DEPTH),
        once(b"</body></html>\n"),
    ])
}

/// Claims: a CSV file.
/// Really: one row of 5,000,000 fields ("1,1,1,…"). File 10 MB.
pub fn csv_wide() -> Vec<u8> {
    materialize(&[repeat(b"1,", CSV_FIELDS - 1), once(b"1\n")])
}

/// Claims: a CSV file with a header and one row.
/// Really: the row's second field is one quoted field of 15 MiB (text with commas). File 15 MiB
/// and a few bytes.
pub fn csv_long_field() -> Vec<u8> {
    let text = b"All work and no play, makes Jack a dull boy. ";
    let whole = CSV_FIELD_LEN / text.len() as u64;
    let rest = (CSV_FIELD_LEN % text.len() as u64) as usize;
    materialize(&[once(b"id,text\n1,\""), repeat(text, whole), once(&text[..rest]), once(b"\"\n")])
}

/// Claims: a JSON request body, an object with one key.
/// Really: the key's value is an array nested 1,000,000 deep. 2 MB.
pub fn json_nesting_bomb() -> Vec<u8> {
    materialize(&[once(b"{\"a\":"), repeat(b"[", NESTING_DEPTH), repeat(b"]", NESTING_DEPTH), once(b"}")])
}

/// Claims: a JSON request body, an object.
/// Really: the object has 1,000,000 distinct keys of four characters, each with the value 0.
/// 9 MB.
pub fn json_many_keys() -> Vec<u8> {
    const KEY_CHARS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = Vec::with_capacity(JSON_KEYS * 9 + 1);
    out.push(b'{');
    for i in 0..JSON_KEYS {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        for place in [62 * 62 * 62, 62 * 62, 62, 1] {
            out.push(KEY_CHARS[i / place % 62]);
        }
        out.extend_from_slice(b"\":0");
    }
    out.push(b'}');
    out
}

// ---------------------------------------------------------------------------------------------
// Content described by repetition

/// A stretch of content: `pattern` written `count` times in a row. A file part is a slice of
/// runs, which is how gigabytes are described (and compressed, and checksummed) without being
/// written out.
#[derive(Clone, Copy)]
struct Run<'a> {
    pattern: &'a [u8],
    count: u64,
}

/// `bytes`, once.
fn once(bytes: &[u8]) -> Run<'_> {
    Run { pattern: bytes, count: 1 }
}

/// `pattern`, `count` times.
fn repeat(pattern: &[u8], count: u64) -> Run<'_> {
    Run { pattern, count }
}

/// `head`, then `pattern` as many times as fits with `tail` in `total` bytes, then `tail`.
fn filled<'a>(head: &'a [u8], pattern: &'a [u8], tail: &'a [u8], total: u64) -> [Run<'a>; 3] {
    let room = total - (head.len() + tail.len()) as u64;
    [once(head), repeat(pattern, room / pattern.len() as u64), once(tail)]
}

/// The length of the content `runs` describe.
fn decoded_len(runs: &[Run]) -> u64 {
    runs.iter().map(|run| run.pattern.len() as u64 * run.count).sum()
}

/// The content `runs` describe, written out.
fn materialize(runs: &[Run]) -> Vec<u8> {
    let mut out = Vec::with_capacity(usize::try_from(decoded_len(runs)).expect("content that fits in memory"));
    for run in runs {
        out.extend_from_slice(&run.pattern.repeat(usize::try_from(run.count).expect("a count that fits in memory")));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Deflate (RFC 1951) and zlib (RFC 1950), written by hand

/// Deflate's length codes 257–285: the least length of each, and its extra bits.
const LENGTH_BASE: [u32; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA: [u32; 29] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
/// Deflate's distance codes 0–29: the least distance of each, and its extra bits.
const DISTANCE_BASE: [u32; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA: [u32; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// The order in which a dynamic block lists the code lengths of the code-length alphabet.
const CODE_LENGTH_ORDER: [usize; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
const END_OF_BLOCK: usize = 256;
/// The longest match, whose length symbol (285) has no extra bits.
const MAX_MATCH: u32 = 258;
const MAX_DISTANCE: usize = 32_768;
/// The bytes of a one-byte run that a byte of its deflate data holds: four 258-byte copies of two
/// bits each.
const RUN_BYTES_PER_DEFLATE_BYTE: u64 = 4 * MAX_MATCH as u64;

/// `runs` as a zlib stream: header (32 KiB window, no dictionary), deflate data, Adler-32.
fn zlib(runs: &[Run]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    out.extend_from_slice(&deflate(runs));
    out.extend_from_slice(&adler32_runs(runs).to_be_bytes());
    out
}

/// `runs` as raw deflate data: one final block with dynamic Huffman codes. Each run's pattern is
/// written once as literals; its repetitions are copies of the pattern's length back, 258 bytes
/// at a time, and the symbol for a 258-byte copy gets a one-bit code. A run of one repeated byte
/// therefore costs two bits per 258 bytes (1 : 1032), a 32-byte pattern five bits.
fn deflate(runs: &[Run]) -> Vec<u8> {
    let runs: Vec<&Run> = runs.iter().filter(|run| run.count > 0 && !run.pattern.is_empty()).collect();
    // The symbols used.
    let mut literal_used = [false; 286];
    literal_used[END_OF_BLOCK] = true;
    let mut distance_used = [false; 30];
    for run in &runs {
        for &byte in run.pattern {
            literal_used[usize::from(byte)] = true;
        }
        if let Some(copies) = Copies::of(run) {
            distance_used[distance_code(copies.distance).0] = true;
            if copies.tail >= 3 {
                literal_used[length_code(copies.tail).0] = true;
            }
        }
    }
    // Complete prefix codes (inflaters refuse incomplete ones): symbol 285 takes one bit and the
    // other used literal/length symbols share the other half of the code space; the used
    // distance symbols (at least two) share all of theirs.
    let mut literal_lengths = [0; 286];
    let others: Vec<usize> = (0..285).filter(|&symbol| literal_used[symbol]).collect();
    for (&symbol, length) in others.iter().zip(complete_code(others.len())) {
        literal_lengths[symbol] = length + 1;
    }
    literal_lengths[285] = 1;
    let mut distances: Vec<usize> = (0..30).filter(|&symbol| distance_used[symbol]).collect();
    let mut spare = (0..30).filter(|&symbol| !distance_used[symbol]);
    while distances.len() < 2 {
        distances.push(spare.next().expect("30 distance symbols"));
    }
    distances.sort_unstable();
    let mut distance_lengths = vec![0; distances[distances.len() - 1] + 1];
    for (&symbol, length) in distances.iter().zip(complete_code(distances.len())) {
        distance_lengths[symbol] = length;
    }

    // Block header: final, dynamic; 286 literal/length and n distance code lengths, each written
    // with a code-length code in which the lengths 0–15 all have four-bit codes (the code of
    // length l is l itself) and 16–18 are unused.
    let mut writer = LsbWriter::default();
    writer.put(1, 1);
    writer.put(2, 2);
    writer.put(286 - 257, 5);
    writer.put(distance_lengths.len() as u32 - 1, 5);
    writer.put(19 - 4, 4);
    for symbol in CODE_LENGTH_ORDER {
        writer.put(if symbol < 16 { 4 } else { 0 }, 3);
    }
    for &length in literal_lengths.iter().chain(&distance_lengths) {
        writer.put(reverse_bits(length, 4), 4);
    }
    let mut block = Block {
        writer,
        literal_codes: canonical_codes(&literal_lengths),
        distance_codes: canonical_codes(&distance_lengths),
    };
    for run in &runs {
        for &byte in run.pattern {
            block.literal(byte);
        }
        if let Some(copies) = Copies::of(run) {
            block.copies(MAX_MATCH, copies.distance, copies.full);
            if copies.tail >= 3 {
                block.copies(copies.tail, copies.distance, 1);
            } else {
                let done = copies.full * u64::from(MAX_MATCH);
                for i in 0..u64::from(copies.tail) {
                    block.literal(run.pattern[((done + i) % run.pattern.len() as u64) as usize]);
                }
            }
        }
    }
    let end = block.literal_codes[END_OF_BLOCK];
    block.writer.code(end);
    block.writer.finish()
}

/// How a run's repetitions are copied: `full` copies of 258 bytes, then `tail` bytes (copied if
/// three or more, else written as literals), all from `distance` back.
struct Copies {
    distance: u32,
    full: u64,
    tail: u32,
}

impl Copies {
    /// None for a run written once.
    fn of(run: &Run) -> Option<Copies> {
        if run.count < 2 {
            return None;
        }
        let distance = run.pattern.len();
        assert!(distance <= MAX_DISTANCE, "a repeated pattern fits in deflate's 32 KiB window");
        let copied = (run.count - 1) * distance as u64;
        Some(Copies {
            distance: distance as u32,
            full: copied / u64::from(MAX_MATCH),
            tail: (copied % u64::from(MAX_MATCH)) as u32,
        })
    }
}

/// A Huffman code ready to write: its bits reversed (deflate writes codes from their first bit
/// into the low end of each byte) and its length.
#[derive(Clone, Copy, Default)]
struct Code {
    bits: u32,
    len: u32,
}

/// The body of a dynamic block being written.
struct Block {
    writer: LsbWriter,
    literal_codes: Vec<Code>,
    distance_codes: Vec<Code>,
}

impl Block {
    fn literal(&mut self, byte: u8) {
        self.writer.code(self.literal_codes[usize::from(byte)]);
    }

    /// Writes `count` copies of `length` bytes from `distance` back. Every copy has the same
    /// bits, so eight copies fill a whole number of bytes: past the first sixteen, the bytes
    /// the second eight produced are repeated rather than written bit by bit.
    fn copies(&mut self, length: u32, distance: u32, count: u64) {
        let (length_symbol, length_extra_bits, length_extra) = length_code(length);
        let (distance_symbol, distance_extra_bits, distance_extra) = distance_code(distance);
        let (length_code, distance_code) = (self.literal_codes[length_symbol], self.distance_codes[distance_symbol]);
        let one = |writer: &mut LsbWriter| {
            writer.code(length_code);
            writer.put(length_extra, length_extra_bits);
            writer.code(distance_code);
            writer.put(distance_extra, distance_extra_bits);
        };
        if count <= 16 {
            (0..count).for_each(|_| one(&mut self.writer));
            return;
        }
        // The first eight leave the pending bits as every later group of eight will.
        (0..8).for_each(|_| one(&mut self.writer));
        let start = self.writer.out.len();
        (0..8).for_each(|_| one(&mut self.writer));
        let group = self.writer.out[start..].to_vec();
        let rest = count - 16;
        self.writer.out.extend_from_slice(&group.repeat(usize::try_from(rest / 8).expect("fits in memory")));
        (0..rest % 8).for_each(|_| one(&mut self.writer));
    }
}

/// The symbol of a copy of `length` (3–258) bytes, and its extra bits: (symbol, bit count, value).
fn length_code(length: u32) -> (usize, u32, u32) {
    let index = if length == MAX_MATCH {
        28
    } else {
        LENGTH_BASE[..28].iter().rposition(|&base| base <= length).expect("a copy of at least three bytes")
    };
    (257 + index, LENGTH_EXTRA[index], length - LENGTH_BASE[index])
}

/// The symbol of a copy from `distance` (1–32768) back, and its extra bits.
fn distance_code(distance: u32) -> (usize, u32, u32) {
    let index = DISTANCE_BASE.iter().rposition(|&base| base <= distance).expect("a distance of at least one");
    (index, DISTANCE_EXTRA[index], distance - DISTANCE_BASE[index])
}

/// Code lengths making a complete prefix code of `count` symbols: all of depth ⌈log₂ count⌉,
/// except the first few one shorter when `count` is not a power of two.
fn complete_code(count: usize) -> Vec<u32> {
    let leaves = count.next_power_of_two();
    let depth = leaves.trailing_zeros();
    let shorter = leaves - count;
    (0..count).map(|i| if i < shorter { depth - 1 } else { depth }).collect()
}

/// The canonical Huffman codes of `lengths` (RFC 1951, 3.2.2), reversed for writing.
fn canonical_codes(lengths: &[u32]) -> Vec<Code> {
    let mut per_length = [0u32; 16];
    for &length in lengths.iter().filter(|&&length| length > 0) {
        per_length[length as usize] += 1;
    }
    let mut next = [0u32; 16];
    let mut code = 0;
    for bits in 1..16 {
        code = (code + per_length[bits - 1]) << 1;
        next[bits] = code;
    }
    lengths
        .iter()
        .map(|&len| {
            if len == 0 {
                return Code::default();
            }
            let code = next[len as usize];
            next[len as usize] += 1;
            Code { bits: reverse_bits(code, len), len }
        })
        .collect()
}

/// The low `len` bits of `value` in reverse order.
fn reverse_bits(value: u32, len: u32) -> u32 {
    value.reverse_bits() >> (32 - len)
}

/// Bits packed from the low end of each byte up, as deflate packs them.
#[derive(Default)]
struct LsbWriter {
    out: Vec<u8>,
    pending: u64,
    pending_len: u32,
}

impl LsbWriter {
    /// Writes the low `len` bits of `value`, lowest first.
    fn put(&mut self, value: u32, len: u32) {
        self.pending |= u64::from(value) << self.pending_len;
        self.pending_len += len;
        while self.pending_len >= 8 {
            self.out.push(self.pending as u8);
            self.pending >>= 8;
            self.pending_len -= 8;
        }
    }

    fn code(&mut self, code: Code) {
        self.put(code.bits, code.len);
    }

    /// The bytes, the last one padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        if self.pending_len > 0 {
            self.out.push(self.pending as u8);
        }
        self.out
    }
}

// ---------------------------------------------------------------------------------------------
// Checksums of repeated content

const ADLER_MOD: u64 = 65_521;
const CRC_POLYNOMIAL: u32 = 0xEDB8_8320;
/// CRC-32 of each byte value (the reflected IEEE polynomial), for the byte-at-a-time CRC.
const CRC_TABLE: [u32; 256] = {
    let mut table = [0; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ CRC_POLYNOMIAL } else { crc >> 1 };
            bit += 1;
        }
        table[i] = crc;
        i += 1;
    }
    table
};

/// The Adler-32 of `bytes` (zlib's checksum).
fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1, 0);
    for &byte in bytes {
        a = (a + u64::from(byte)) % ADLER_MOD;
        b = (b + a) % ADLER_MOD;
    }
    (b << 16 | a) as u32
}

/// The Adler-32 of `first` followed by `second` (of `second_len` bytes), from theirs. With
/// a = 1 + Σ xᵢ and b = Σ (n − i + 1) xᵢ + n over n bytes: a = a₁ + a₂ − 1 and
/// b = b₁ + b₂ + n₂ (a₁ − 1).
fn adler32_concat(first: u32, second: u32, second_len: u64) -> u32 {
    let (a1, b1) = (u64::from(first & 0xFFFF), u64::from(first >> 16));
    let (a2, b2) = (u64::from(second & 0xFFFF), u64::from(second >> 16));
    let a = (a1 + a2 + ADLER_MOD - 1) % ADLER_MOD;
    let b = (b1 + b2 + second_len % ADLER_MOD * ((a1 + ADLER_MOD - 1) % ADLER_MOD)) % ADLER_MOD;
    (b << 16 | a) as u32
}

/// The Adler-32 of the content of `runs`.
fn adler32_runs(runs: &[Run]) -> u32 {
    checksum_runs(runs, 1, adler32, adler32_concat)
}

/// The CRC-32 of `bytes` (ZIP's and PNG's checksum), a table lookup per byte.
fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0, |crc, &byte| CRC_TABLE[usize::from(crc as u8 ^ byte)] ^ (crc >> 8))
}

/// The CRC-32 of `first` followed by `second` (of `second_len` bytes), from theirs: the CRC of a
/// concatenation is the first CRC carried through `second_len` zero bytes, which is multiplying
/// it by x^(8 · second_len) modulo the polynomial, plus the second CRC.
fn crc32_concat(first: u32, second: u32, second_len: u64) -> u32 {
    let mut shift = 1 << 31; // the polynomial 1, in the reflected order of the CRC's bits
    let mut square = 1 << (31 - 8); // x^8
    let mut n = second_len;
    while n > 0 {
        if n & 1 == 1 {
            shift = multiply_mod_crc(shift, square);
        }
        square = multiply_mod_crc(square, square);
        n >>= 1;
    }
    multiply_mod_crc(first, shift) ^ second
}

/// a · b modulo the CRC-32 polynomial, polynomials over GF(2) with x⁰ in the top bit.
fn multiply_mod_crc(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    for power in 0..32 {
        if a & (1 << (31 - power)) != 0 {
            product ^= b;
        }
        // b · x: shift towards the low bit; x³² folds back as the polynomial's other terms.
        b = if b & 1 == 1 { (b >> 1) ^ CRC_POLYNOMIAL } else { b >> 1 };
    }
    product
}

/// The CRC-32 of the content of `runs`.
fn crc32_runs(runs: &[Run]) -> u32 {
    checksum_runs(runs, 0, crc32, crc32_concat)
}

/// A checksum of the content of `runs` without writing it out: each run's pattern is checksummed
/// once and combined with itself by doubling (`concat(first, second, second_len)` being the
/// checksum of a concatenation; `empty` that of no bytes).
fn checksum_runs(runs: &[Run], empty: u32, of: fn(&[u8]) -> u32, concat: fn(u32, u32, u64) -> u32) -> u32 {
    runs.iter().fold(empty, |total, run| {
        let (mut repeated, mut power, mut power_len, mut count) =
            (empty, of(run.pattern), run.pattern.len() as u64, run.count);
        while count > 0 {
            if count & 1 == 1 {
                repeated = concat(repeated, power, power_len);
            }
            power = concat(power, power, power_len);
            power_len *= 2;
            count >>= 1;
        }
        concat(total, repeated, run.pattern.len() as u64 * run.count)
    })
}

// ---------------------------------------------------------------------------------------------
// LZW, as PDF's LZWDecode reads it

/// Codes written between two clear-table codes: entries 258 to 4093 are added, so that the table
/// stays below 4,096 entries and the codes within 12 bits.
const LZW_CODES_PER_TABLE: u64 = 3_837;
const LZW_CLEAR: u32 = 256;
const LZW_END: u32 = 257;

/// `len` copies of `byte` as PDF LZW data (`/EarlyChange 1`, the default): a clear-table code,
/// then codes for runs of 1, 2, 3… bytes, each code the entry the decoder is about to add (the
/// run one byte longer is the last run plus its first byte), the table cleared every
/// [`LZW_CODES_PER_TABLE`] codes; then the end-of-data code. Codes are 9 to 12 bits, most
/// significant bit first.
fn lzw_run(byte: u8, len: u64) -> Vec<u8> {
    // The width of the next code, k codes after a clear: the decoder's next entry is 258 for the
    // first two, then one more each code, and with early change it widens one entry early.
    let width = |k: u64| match 258 + k.saturating_sub(1) + 1 {
        ..512 => 9,
        512..1024 => 10,
        1024..2048 => 11,
        _ => 12,
    };
    let mut writer = MsbWriter::default();
    writer.put(LZW_CLEAR, 9);
    let (mut left, mut k) = (len, 0);
    while left > 0 {
        if k == LZW_CODES_PER_TABLE {
            writer.put(LZW_CLEAR, width(k));
            k = 0;
        }
        let run = left.min(k + 1);
        let code = if run == 1 { u32::from(byte) } else { 256 + run as u32 };
        writer.put(code, width(k));
        k += 1;
        left -= run;
    }
    writer.put(LZW_END, width(k));
    writer.finish()
}

/// Bits packed from the high end of each byte down, as LZW in PDF packs them.
#[derive(Default)]
struct MsbWriter {
    out: Vec<u8>,
    pending: u64,
    pending_len: u32,
}

impl MsbWriter {
    /// Writes the low `len` bits of `value`, highest first.
    fn put(&mut self, value: u32, len: u32) {
        self.pending = self.pending << len | u64::from(value);
        self.pending_len += len;
        while self.pending_len >= 8 {
            self.pending_len -= 8;
            self.out.push((self.pending >> self.pending_len) as u8);
        }
        self.pending &= (1 << self.pending_len) - 1;
    }

    /// The bytes, the last one padded with zero bits.
    fn finish(mut self) -> Vec<u8> {
        if self.pending_len > 0 {
            self.out.push((self.pending << (8 - self.pending_len)) as u8);
        }
        self.out
    }
}

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
