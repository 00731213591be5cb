//! The gate every Office Open XML input (DOCX, XLSX, PPTX) passes before a reader sees it.
//!
//! An OOXML file is a ZIP of XML parts. Its declared sizes can lie, so every member is
//! inflated once here, counting bytes as they come out, and the file is refused as soon as
//! a member or the whole expands past fixed sizes or ratios (a zip bomb), never after the
//! memory is spent. XML parts are scanned for a document type declaration: OOXML parts
//! have none, and one is how an entity-expansion bomb ("billion laughs") starts; and for
//! how deep their elements nest ([`MAX_XML_DEPTH`]), which no ratio catches. The
//! readers behind this gate (calamine's quick-xml among them) do not expand entities
//! either; the gate makes the refusal explicit and the same for every route.

use std::io::{Cursor, Read};

use crate::error::{EngineError, ErrorKind};

/// Most members a package may have: real ones have tens to a few thousand.
pub const MAX_MEMBERS: usize = 20_000;
/// Largest size one member may inflate to.
pub const MAX_MEMBER_BYTES: u64 = 512 * 1024 * 1024;
/// Largest size all members together may inflate to.
pub const MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;
/// Highest inflated/compressed ratio a member past [`RATIO_FLOOR`] bytes may have. XML
/// compresses well (20–60× for repetitive sheets), bombs go past 1,000×.
pub const MAX_RATIO: u64 = 200;
/// Below this inflated size a member's ratio is not judged (a few KiB of zeros is fine).
pub const RATIO_FLOOR: u64 = 4 * 1024 * 1024;
/// Deepest an XML part's elements may nest. Real documents stay under a hundred (tables in
/// tables in a text box); LibreOffice lays 50,000 nested tables out for minutes.
pub const MAX_XML_DEPTH: u32 = 512;

/// What kind of Office Open XML document a package is, by its main part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `xl/workbook.xml`: a workbook (.xlsx, .xlsm).
    Workbook,
    /// `word/document.xml`: a Word document (.docx).
    WordDocument,
    /// `ppt/presentation.xml`: a presentation (.pptx).
    Presentation,
}

impl Kind {
    /// What a person calls it.
    pub fn noun(self) -> &'static str {
        match self {
            Kind::Workbook => "an Excel workbook (.xlsx)",
            Kind::WordDocument => "a Word document (.docx)",
            Kind::Presentation => "a PowerPoint presentation (.pptx)",
        }
    }

    fn main_part(self) -> &'static str {
        match self {
            Kind::Workbook => "xl/workbook.xml",
            Kind::WordDocument => "word/document.xml",
            Kind::Presentation => "ppt/presentation.xml",
        }
    }
}

/// What the gate learned about a package that passed it.
#[derive(Debug)]
pub struct Checked {
    /// The kind of document.
    pub kind: Kind,
    /// The sizes of all members, inflated.
    pub inflated_bytes: u64,
    /// The members' names, in archive order.
    pub members: Vec<String>,
    /// Whether an XML part mentions merged cells (`mergeCell`): a workbook without it has
    /// none, and its reader need not look for them.
    pub merged_cells: bool,
}

/// What [`inflate_all`] learned.
#[derive(Debug)]
pub struct Inflated {
    /// The members' names, in archive order.
    pub members: Vec<String>,
    /// Their sizes, inflated, together.
    pub total: u64,
    /// Whether a scanned XML member mentions merged cells (`mergeCell`).
    pub merged_cells: bool,
}

/// Whether `bytes` are an OLE2 compound file: a legacy binary Office file (.doc, .xls,
/// .ppt) or a password-protected Office file.
pub fn is_ole2(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1])
}

/// A ZIP of `(name, bytes)` members, deflated: the packages the readers' unit tests build.
#[cfg(test)]
pub(crate) fn zip_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    use std::io::Write;
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, body) in members {
        writer.start_file(*name, options).unwrap();
        writer.write_all(body).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// Checks `bytes` as an OOXML package that must be `want`; errors name `field`.
pub fn check(bytes: &[u8], want: Kind, field: &str) -> Result<Checked, EngineError> {
    if is_ole2(bytes) {
        return Err(EngineError::invalid_with(
            "not_an_office_file",
            field,
            format!(
                "{field}: this is an OLE2 compound file: a legacy binary file (.xls, .doc, .ppt) or a password-protected \
                 Office file; save it unprotected in the Office Open XML format ({})",
                want.noun()
            ),
        ));
    }
    if !bytes.starts_with(b"PK") {
        return Err(not_ooxml(field, want));
    }
    let Inflated { members, total, merged_cells } = inflate_all(bytes, field, is_xml_part)?;
    match kind_of(&members) {
        Some(kind) if kind == want => Ok(Checked { kind, inflated_bytes: total, members, merged_cells }),
        Some(other) => Err(EngineError::invalid_with(
            "not_an_office_file",
            field,
            format!("{field}: this is {}, and this route takes {}", other.noun(), want.noun()),
        )),
        None => Err(not_ooxml(field, want)),
    }
}

/// The kind of OOXML package whose members are `members`, by its main part.
pub fn kind_of(members: &[String]) -> Option<Kind> {
    [Kind::Workbook, Kind::WordDocument, Kind::Presentation]
        .into_iter()
        .find(|kind| members.iter().any(|m| m == kind.main_part()))
}

/// Inflates every member of the ZIP `bytes` once, counting, and refuses the file as soon as
/// a member or the whole expands past the fixed sizes or ratios; members for which
/// `no_doctype` holds must not declare a document type.
pub fn inflate_all(bytes: &[u8], field: &str, no_doctype: fn(&str) -> bool) -> Result<Inflated, EngineError> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| damaged(field, &e.to_string()))?;
    if archive.len() > MAX_MEMBERS {
        return Err(bomb(field, format!("it has {} members, more than the {MAX_MEMBERS} allowed", archive.len())));
    }
    let mut members = Vec::with_capacity(archive.len());
    let mut total = 0u64;
    let mut merged_cells = false;
    let doctype = memchr::memmem::Finder::new(DOCTYPE);
    let merge = memchr::memmem::Finder::new(MERGE_CELL);
    let mut buffer = vec![0u8; 64 * 1024];
    for index in 0..archive.len() {
        let mut member = archive.by_index(index).map_err(|e| damaged(field, &e.to_string()))?;
        let name = member.name().map_err(|e| damaged(field, &e.to_string()))?.into_owned();
        if member.is_dir() {
            members.push(name);
            continue;
        }
        let compressed = member.compressed_size().max(1);
        let scan_xml = no_doctype(&name);
        // The last bytes of the previous chunk and the first of this one, so a word split
        // across chunks is seen.
        let mut seam: Vec<u8> = Vec::with_capacity(2 * SEAM);
        let mut depth = Depth::default();
        let mut inflated = 0u64;
        loop {
            let read = match member.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => return Err(damaged(field, &format!("member {name}: {e}"))),
            };
            inflated += read as u64;
            total += read as u64;
            if inflated > MAX_MEMBER_BYTES {
                return Err(bomb(field, format!("member {name} inflates past {} MiB", MAX_MEMBER_BYTES >> 20)));
            }
            if total > MAX_TOTAL_BYTES {
                return Err(bomb(field, format!("its members inflate past {} MiB together", MAX_TOTAL_BYTES >> 20)));
            }
            if inflated > RATIO_FLOOR && inflated / compressed > MAX_RATIO {
                return Err(bomb(
                    field,
                    format!("member {name} inflates more than {MAX_RATIO} times its stored size of {compressed} bytes"),
                ));
            }
            if scan_xml {
                let chunk = &buffer[..read];
                seam.extend_from_slice(&chunk[..read.min(SEAM)]);
                let found =
                    |finder: &memchr::memmem::Finder| finder.find(&seam).or_else(|| finder.find(chunk)).is_some();
                merged_cells = merged_cells || found(&merge);
                if found(&doctype) {
                    return Err(EngineError::invalid_with(
                        "xml_doctype",
                        field,
                        format!(
                            "{field}: part {name} declares a document type (<!DOCTYPE>); the format's parts have \
                             none, and entity declarations there are how XML entity bombs work"
                        ),
                    ));
                }
                seam.clear();
                seam.extend_from_slice(&chunk[read.saturating_sub(SEAM)..]);
                if depth.scan(chunk) > MAX_XML_DEPTH {
                    return Err(EngineError::too_large(
                        "file_too_large",
                        Some(field.to_string()),
                        format!("{field}: part {name} nests its elements more than {MAX_XML_DEPTH} deep"),
                    ));
                }
            }
        }
        members.push(name);
    }
    Ok(Inflated { members, total, merged_cells })
}

/// How deep the elements of an XML text nest, read a chunk at a time: `<name …>` opens,
/// `</name>` and `/>` close; comments (to `-->`), CDATA (to `]]>`), processing
/// instructions and declarations count for nothing, and quoted attribute values are skipped.
#[derive(Default)]
struct Depth {
    state: Lexing,
    depth: u32,
    deepest: u32,
}

#[derive(Clone, Copy, Default, PartialEq)]
enum Lexing {
    #[default]
    Text,
    /// Just after `<`.
    Open,
    /// In a start tag; the quote of the attribute value it is in, and whether the last
    /// byte was `/`.
    StartTag { quote: Option<u8>, slash: bool },
    /// In an end tag.
    EndTag,
    /// Just after `<!`: a comment, CDATA or a declaration follows.
    Bang,
    /// In a comment, CDATA, a declaration or a processing instruction, until `>` preceded
    /// by what ends it (`--`, `]]` or anything); the last two bytes read.
    Other { ends: Option<u8>, last: [u8; 2] },
}

impl Depth {
    /// Reads `chunk` and answers the deepest nesting seen so far.
    fn scan(&mut self, chunk: &[u8]) -> u32 {
        for &byte in chunk {
            self.state = match (self.state, byte) {
                (Lexing::Text, b'<') => Lexing::Open,
                (Lexing::Text, _) => Lexing::Text,
                (Lexing::Open, b'/') => Lexing::EndTag,
                (Lexing::Open, b'!') => Lexing::Bang,
                (Lexing::Open, b'?') => Lexing::Other { ends: None, last: [0; 2] },
                (Lexing::Bang, b'-') => Lexing::Other { ends: Some(b'-'), last: [0, b'-'] },
                (Lexing::Bang, b'[') => Lexing::Other { ends: Some(b']'), last: [0, b'['] },
                (Lexing::Bang, b'>') => Lexing::Text,
                (Lexing::Bang, _) => Lexing::Other { ends: None, last: [0, byte] },
                (Lexing::Open, _) => {
                    self.depth += 1;
                    self.deepest = self.deepest.max(self.depth);
                    Lexing::StartTag { quote: None, slash: false }
                }
                (Lexing::StartTag { quote: Some(q), .. }, b) if b == q => {
                    Lexing::StartTag { quote: None, slash: false }
                }
                (state @ Lexing::StartTag { quote: Some(_), .. }, _) => state,
                (Lexing::StartTag { .. }, b'"' | b'\'') => Lexing::StartTag { quote: Some(byte), slash: false },
                (Lexing::StartTag { slash, .. }, b'>') => {
                    if slash {
                        self.depth = self.depth.saturating_sub(1);
                    }
                    Lexing::Text
                }
                (Lexing::StartTag { .. }, _) => Lexing::StartTag { quote: None, slash: byte == b'/' },
                (Lexing::EndTag, b'>') => {
                    self.depth = self.depth.saturating_sub(1);
                    Lexing::Text
                }
                (Lexing::EndTag, _) => Lexing::EndTag,
                (Lexing::Other { ends, last }, b'>') if ends.is_none_or(|e| last == [e, e]) => Lexing::Text,
                (Lexing::Other { ends, last }, _) => Lexing::Other { ends, last: [last[1], byte] },
            };
        }
        self.deepest
    }
}

/// Reads one member of a ZIP that passed [`inflate_all`], at most `limit` bytes of it.
pub fn read_member(bytes: &[u8], name: &str, limit: u64) -> Option<Vec<u8>> {
    let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
    let member = archive.by_name(name).ok()?;
    let mut out = Vec::new();
    member.take(limit).read_to_end(&mut out).ok()?;
    Some(out)
}

const DOCTYPE: &[u8] = b"<!DOCTYPE";
/// How a worksheet lists its merged areas (`<mergeCells><mergeCell ref=…/>`), with or
/// without a namespace prefix.
const MERGE_CELL: &[u8] = b"mergeCell";
/// Bytes kept from either side of a chunk boundary: one less than the longest word looked for.
const SEAM: usize = 8;
const _: () = assert!(DOCTYPE.len() - 1 <= SEAM && MERGE_CELL.len() - 1 <= SEAM);

/// Whether an OOXML member is XML (every one of them must be free of document types).
pub fn is_xml_part(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".xml") || lower.ends_with(".rels") || lower.ends_with(".vml")
}

fn not_ooxml(field: &str, want: Kind) -> EngineError {
    EngineError::invalid_with(
        "not_an_office_file",
        field,
        format!("{field}: this is not {} (an Office Open XML package)", want.noun()),
    )
}

fn damaged(field: &str, why: &str) -> EngineError {
    EngineError::invalid_with(
        "damaged_office_file",
        field,
        format!("{field}: the file's ZIP structure is damaged: {why}"),
    )
}

fn bomb(field: &str, why: String) -> EngineError {
    EngineError::new(ErrorKind::TooLarge, "decompression_bomb", format!("{field}: refused, {why}")).at(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::zip_of as package;

    #[test]
    fn a_workbook_passes_and_other_kinds_are_named() {
        let book = package(&[("[Content_Types].xml", b"<Types/>"), ("xl/workbook.xml", b"<workbook/>")]);
        let checked = check(&book, Kind::Workbook, "/file").unwrap();
        assert_eq!(checked.kind, Kind::Workbook);
        assert_eq!(checked.inflated_bytes, 19);
        let doc = package(&[("word/document.xml", b"<document/>")]);
        let error = check(&doc, Kind::Workbook, "/file").unwrap_err();
        assert_eq!(error.code, "not_an_office_file");
        assert!(error.message.contains("Word document"), "{}", error.message);
        let error = check(b"%PDF-1.7", Kind::Workbook, "/file").unwrap_err();
        assert_eq!((error.code.as_ref(), error.field.as_deref()), ("not_an_office_file", Some("/file")));
    }

    #[test]
    fn nesting_is_counted_across_chunks_and_past_the_limit_refused() {
        let xml = br#"<?xml version="1.0"?><w:document a="x>y" b='/>'><!-- <c> > <d> --><w:body><w:p/><w:p><w:t>a</w:t></w:p><![CDATA[<d><e>]]></w:body></w:document>"#;
        let mut depth = Depth::default();
        for piece in xml.chunks(3) {
            depth.scan(piece);
        }
        assert_eq!((depth.deepest, depth.depth), (4, 0), "document > body > p > t, and closed");

        let deep = format!("{}{}", "<w:tbl><w:tr><w:tc>".repeat(200), "</w:tc></w:tr></w:tbl>".repeat(200));
        let bytes = zip_of(&[("[Content_Types].xml", b"<Types/>"), ("word/document.xml", deep.as_bytes())]);
        let error = inflate_all(&bytes, "/file", is_xml_part).unwrap_err();
        assert_eq!((error.code.as_ref(), error.field.as_deref()), ("file_too_large", Some("/file")));
        assert!(error.message.contains("word/document.xml nests its elements more than 512 deep"), "{}", error.message);
        let shallow = "<w:tbl><w:tr><w:tc>".repeat(100) + &"</w:tc></w:tr></w:tbl>".repeat(100);
        let bytes = zip_of(&[("[Content_Types].xml", b"<Types/>"), ("word/document.xml", shallow.as_bytes())]);
        assert!(inflate_all(&bytes, "/file", is_xml_part).is_ok(), "300 deep is read");
    }

    #[test]
    fn a_doctype_split_across_chunks_is_found() {
        // Every way the word can straddle the first 64 KiB chunk's end.
        for before in 64 * 1024 - DOCTYPE.len()..=64 * 1024 {
            let mut body = vec![b' '; before];
            body.extend_from_slice(b"<!DOCTYPE lolz [<!ENTITY lol \"lol\">]>");
            let book = package(&[("xl/workbook.xml", b"<workbook/>"), ("xl/sharedStrings.xml", &body)]);
            let error = check(&book, Kind::Workbook, "/file").unwrap_err();
            assert_eq!(error.code, "xml_doctype", "{before}");
            assert!(error.message.contains("xl/sharedStrings.xml"), "{}", error.message);
        }
    }

    #[test]
    fn merged_cells_are_noticed_wherever_they_stand() {
        let plain = package(&[("xl/workbook.xml", b"<workbook/>"), ("xl/worksheets/sheet1.xml", b"<worksheet/>")]);
        assert!(!check(&plain, Kind::Workbook, "/file").unwrap().merged_cells);
        for before in [0, 64 * 1024 - MERGE_CELL.len(), 64 * 1024 - 4, 64 * 1024] {
            let mut sheet = vec![b' '; before];
            sheet.extend_from_slice(b"<x:mergeCells count=\"1\"><x:mergeCell ref=\"A1:B2\"/></x:mergeCells>");
            let book = package(&[("xl/workbook.xml", b"<workbook/>"), ("xl/worksheets/sheet1.xml", &sheet)]);
            assert!(check(&book, Kind::Workbook, "/file").unwrap().merged_cells, "{before}");
        }
    }

    #[test]
    fn a_member_inflating_far_past_its_size_is_refused_as_it_inflates() {
        let zeros = vec![0u8; 64 * 1024 * 1024];
        let book = package(&[("xl/workbook.xml", b"<workbook/>"), ("xl/worksheets/sheet1.xml", &zeros)]);
        assert!(book.len() < 200 * 1024, "{} bytes", book.len());
        let error = check(&book, Kind::Workbook, "/file").unwrap_err();
        assert_eq!((error.kind, error.code.as_ref()), (ErrorKind::TooLarge, "decompression_bomb"));
        assert!(error.message.contains("sheet1.xml"), "{}", error.message);
    }

    #[test]
    fn legacy_and_encrypted_files_are_told_apart_from_garbage() {
        let mut ole = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
        ole.extend_from_slice(&[0; 512]);
        let error = check(&ole, Kind::Workbook, "/file").unwrap_err();
        assert!(error.message.contains("password-protected"), "{}", error.message);
        let error = check(b"PK\x03\x04 not really", Kind::Workbook, "/file").unwrap_err();
        assert_eq!(error.code, "damaged_office_file");
    }
}
