//! Hostile PDFs: flate, LZW and object-stream bombs, huge pages and images, nesting, cycles.

use super::*;

/// What [`pdf_flate_bomb`] and [`pdf_chained_flate`] inflate to: 4 GiB of spaces.
pub(super) const PAGE_BOMB_SIZE: u64 = 4 * GIB;
/// The pages of [`pdf_many_streams_bomb`], and what each page's content inflates to.
pub(super) const MANY_PAGES: usize = 2_000;
pub(super) const MANY_PAGES_CONTENT: u64 = 2 * MIB;
/// What the object stream of [`pdf_objstm_bomb`] inflates to.
pub(super) const OBJSTM_SIZE: u64 = GIB;
/// What the image of [`pdf_image_bomb`] inflates to (it claims 60000 × 60000 × 3 bytes).
pub(super) const IMAGE_DATA_SIZE: u64 = 2 * GIB;
/// The `q` operators of [`pdf_q_bomb`] (and as many `Q`).
pub(super) const Q_COUNT: u64 = 2_000_000;
/// The depth of [`pdf_nested_arrays`] and [`json_nesting_bomb`].
pub(super) const NESTING_DEPTH: u64 = 1_000_000;
/// What the LZW content of [`pdf_lzw_bomb`] decodes to.
pub(super) const LZW_SIZE: u64 = GIB;
/// A US Letter page.
pub(super) const LETTER: &str = "/MediaBox [0 0 612 792]";

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
pub(super) enum PdfObject<'a> {
    Plain(&'a [u8]),
    Stream(&'a str, &'a [u8]),
}

/// A PDF 1.7 of one page: catalog 1, page tree 2, page 3 (`page`: the page dictionary's entries
/// besides `/Type` and `/Parent`), then `objects` numbered from 4; a classic xref table.
pub(super) fn one_page_pdf(page: &str, objects: &[PdfObject]) -> Vec<u8> {
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
pub(super) struct PdfWriter {
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
