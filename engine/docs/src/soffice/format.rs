//! What kind of Office file an input is, from its bytes (a file's name can lie): the
//! Office Open XML and OpenDocument packages (checked by the ZIP gate first), the legacy
//! binary files (OLE2 compound files) and RTF.

use crate::error::EngineError;
use crate::office::package::{self, Kind};

/// An Office format LibreOffice converts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Word (.docx, .docm, .dotx).
    Docx { macros: bool },
    /// Excel (.xlsx, .xlsm).
    Xlsx { macros: bool },
    /// PowerPoint (.pptx, .pptm, .ppsx).
    Pptx { macros: bool },
    /// OpenDocument text (.odt).
    Odt,
    /// OpenDocument spreadsheet (.ods).
    Ods,
    /// OpenDocument presentation (.odp).
    Odp,
    /// OpenDocument drawing (.odg).
    Odg,
    /// Rich Text Format (.rtf).
    Rtf,
    /// Word 97–2003 (.doc).
    Doc,
    /// Excel 97–2003 (.xls).
    Xls,
    /// PowerPoint 97–2003 (.ppt).
    Ppt,
}

/// The formats, as a person lists them.
pub const ACCEPTED: &str = "DOCX, XLSX, PPTX (and their macro-enabled forms, whose macros never run), ODT, ODS, \
                            ODP, ODG, RTF, DOC, XLS or PPT";

impl Format {
    /// The file name extension LibreOffice is given, so its type detection starts right.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Docx { macros: false } => "docx",
            Format::Docx { macros: true } => "docm",
            Format::Xlsx { macros: false } => "xlsx",
            Format::Xlsx { macros: true } => "xlsm",
            Format::Pptx { macros: false } => "pptx",
            Format::Pptx { macros: true } => "pptm",
            Format::Odt => "odt",
            Format::Ods => "ods",
            Format::Odp => "odp",
            Format::Odg => "odg",
            Format::Rtf => "rtf",
            Format::Doc => "doc",
            Format::Xls => "xls",
            Format::Ppt => "ppt",
        }
    }

    /// What a person calls it.
    pub fn noun(self) -> &'static str {
        match self {
            Format::Docx { .. } => "a Word document",
            Format::Xlsx { .. } => "an Excel workbook",
            Format::Pptx { .. } => "a PowerPoint presentation",
            Format::Odt => "an OpenDocument text",
            Format::Ods => "an OpenDocument spreadsheet",
            Format::Odp => "an OpenDocument presentation",
            Format::Odg => "an OpenDocument drawing",
            Format::Rtf => "an RTF document",
            Format::Doc => "a Word 97-2003 document",
            Format::Xls => "an Excel 97-2003 workbook",
            Format::Ppt => "a PowerPoint 97-2003 presentation",
        }
    }
}

/// The format of `bytes`; errors name `field`. A package is inflated once here and refused
/// if it is a bomb, before LibreOffice sees it.
pub fn sniff(bytes: &[u8], field: &str) -> Result<Format, EngineError> {
    if bytes.starts_with(b"%PDF") {
        return Err(EngineError::invalid_with(
            "not_an_office_file",
            field,
            format!("{field}: this is already a PDF; the route takes {ACCEPTED}"),
        ));
    }
    if bytes.starts_with(b"PK\x03\x04") {
        return package_format(bytes, field);
    }
    if package::is_ole2(bytes) {
        return compound_format(bytes, field);
    }
    if bytes.starts_with(b"{\\rtf") {
        return Ok(Format::Rtf);
    }
    Err(unsupported(field, "it is not an Office file"))
}

fn unsupported(field: &str, why: &str) -> EngineError {
    EngineError::invalid_with("unsupported_format", field, format!("{field}: {why}; the route takes {ACCEPTED}"))
}

/// OOXML or OpenDocument, by the package's own declarations.
fn package_format(bytes: &[u8], field: &str) -> Result<Format, EngineError> {
    let members = package::inflate_all(bytes, field, no_doctype)?.members;
    if members.iter().any(|m| m == "mimetype") {
        // A password-protected OpenDocument file lists how each part is encrypted.
        let manifest = package::read_member(bytes, "META-INF/manifest.xml", 4 << 20).unwrap_or_default();
        if String::from_utf8_lossy(&manifest).contains("encryption-data") {
            return Err(password_required(field));
        }
        let mimetype = package::read_member(bytes, "mimetype", 200).unwrap_or_default();
        return match String::from_utf8_lossy(&mimetype).trim() {
            "application/vnd.oasis.opendocument.text" => Ok(Format::Odt),
            "application/vnd.oasis.opendocument.spreadsheet" => Ok(Format::Ods),
            "application/vnd.oasis.opendocument.presentation" => Ok(Format::Odp),
            "application/vnd.oasis.opendocument.graphics" => Ok(Format::Odg),
            other => Err(unsupported(field, &format!("its package type is {other:?}"))),
        };
    }
    let Some(kind) = package::kind_of(&members) else {
        return Err(unsupported(field, "it is a ZIP archive, not an Office package"));
    };
    // Macro-enabled files declare their main part with a macroEnabled content type.
    let types = package::read_member(bytes, "[Content_Types].xml", 1 << 20).unwrap_or_default();
    let macros = String::from_utf8_lossy(&types).contains("macroEnabled");
    Ok(match kind {
        Kind::WordDocument => Format::Docx { macros },
        Kind::Workbook => Format::Xlsx { macros },
        Kind::Presentation => Format::Pptx { macros },
    })
}

fn password_required(field: &str) -> EngineError {
    EngineError::invalid_with(
        "password_required",
        field,
        format!("{field}: the Office file is password-protected; save it without a password and send it again"),
    )
}

/// Which members must not declare a document type: every OOXML part, and the OpenDocument
/// main parts (its Basic modules and old manifests do declare one, and are left alone).
fn no_doctype(name: &str) -> bool {
    package::is_xml_part(name)
        && !name.starts_with("Basic/")
        && !name.starts_with("META-INF/")
        && !name.starts_with("Dialogs/")
}

/// A legacy binary file or an encrypted OOXML file, by the names of the compound file's
/// top streams.
fn compound_format(bytes: &[u8], field: &str) -> Result<Format, EngineError> {
    let names = compound_stream_names(bytes);
    let has = |wanted: &str| names.iter().any(|n| n == wanted);
    if has("EncryptedPackage") || has("EncryptionInfo") {
        return Err(password_required(field));
    }
    if has("WordDocument") {
        Ok(Format::Doc)
    } else if has("Workbook") || has("Book") {
        Ok(Format::Xls)
    } else if has("PowerPoint Document") {
        Ok(Format::Ppt)
    } else {
        Err(unsupported(field, "it is an OLE2 compound file, but not a Word, Excel or PowerPoint one"))
    }
}

/// The names in the first sector of a compound file's directory, where the streams of the
/// root storage are in Office files. Empty when the header is damaged.
fn compound_stream_names(bytes: &[u8]) -> Vec<String> {
    let u16_at = |at: usize| bytes.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let (Some(shift), Some(first)) = (u16_at(0x1E), u32_at(0x30)) else { return Vec::new() };
    if !(7..=16).contains(&shift) {
        return Vec::new();
    }
    let size = 1usize << shift;
    let start = (first as usize + 1).saturating_mul(size);
    let Some(sector) = bytes.get(start..start.saturating_add(size)) else { return Vec::new() };
    sector
        .chunks_exact(128)
        .filter_map(|entry| {
            let length = usize::from(u16::from_le_bytes([entry[64], entry[65]]));
            if !(2..=64).contains(&length) {
                return None;
            }
            let units: Vec<u16> =
                entry[..length - 2].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
            Some(String::from_utf16_lossy(&units))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::office::package::zip_of;

    #[test]
    fn packages_are_told_apart_by_their_declarations() {
        let word = zip_of(&[("[Content_Types].xml", b"<Types/>"), ("word/document.xml", b"<w:document/>")]);
        assert_eq!(sniff(&word, "/file").unwrap(), Format::Docx { macros: false });
        let macro_book = zip_of(&[
            (
                "[Content_Types].xml",
                b"<Types><Override ContentType=\"application/vnd.ms-excel.sheet.macroEnabled.main+xml\"/></Types>",
            ),
            ("xl/workbook.xml", b"<workbook/>"),
        ]);
        assert_eq!(sniff(&macro_book, "/file").unwrap(), Format::Xlsx { macros: true });
        let odp = zip_of(&[("mimetype", b"application/vnd.oasis.opendocument.presentation"), ("content.xml", b"<x/>")]);
        assert_eq!(sniff(&odp, "/file").unwrap(), Format::Odp);
        let odf_with_basic = zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.text"),
            (
                "Basic/Standard/Module1.xml",
                b"<!DOCTYPE script:module PUBLIC \"-//OpenOffice.org//DTD OfficeDocument 1.0//EN\" \"module.dtd\"><m/>",
            ),
        ]);
        assert_eq!(
            sniff(&odf_with_basic, "/file").unwrap(),
            Format::Odt,
            "a Basic module's DOCTYPE is its normal form"
        );
        let odf_bomb = zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.text"),
            ("content.xml", b"<!DOCTYPE x [<!ENTITY a \"b\">]><x/>"),
        ]);
        assert_eq!(sniff(&odf_bomb, "/file").unwrap_err().code, "xml_doctype");
        let locked_odt = zip_of(&[
            ("mimetype", b"application/vnd.oasis.opendocument.text"),
            ("META-INF/manifest.xml", b"<manifest:manifest><manifest:file-entry manifest:full-path=\"content.xml\"><manifest:encryption-data/></manifest:file-entry></manifest:manifest>"),
            ("content.xml", b"\x8f\x11 encrypted bytes"),
        ]);
        assert_eq!(sniff(&locked_odt, "/file").unwrap_err().code, "password_required");
        let plain_zip = zip_of(&[("notes.txt", b"hello")]);
        let refused = sniff(&plain_zip, "/file").unwrap_err();
        assert_eq!((refused.code.as_ref(), refused.field.as_deref()), ("unsupported_format", Some("/file")));
    }

    #[test]
    fn other_files_are_refused_naming_the_field() {
        assert_eq!(sniff(b"{\\rtf1\\ansi hello}", "/file").unwrap(), Format::Rtf);
        let pdf = sniff(b"%PDF-1.7\n", "/template").unwrap_err();
        assert_eq!((pdf.code.as_ref(), pdf.field.as_deref()), ("not_an_office_file", Some("/template")));
        assert!(pdf.message.contains("already a PDF"), "{}", pdf.message);
        assert_eq!(sniff(b"GIF89a....", "/file").unwrap_err().code, "unsupported_format");
    }

    /// A compound file of one 512-byte directory sector holding `names`.
    fn compound(names: &[&str]) -> Vec<u8> {
        let mut file = vec![0u8; 512 * 2];
        file[..8].copy_from_slice(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]);
        file[0x1E..0x20].copy_from_slice(&9u16.to_le_bytes());
        file[0x30..0x34].copy_from_slice(&0u32.to_le_bytes());
        for (i, name) in names.iter().enumerate() {
            let entry = 512 + i * 128;
            let units: Vec<u16> = name.encode_utf16().collect();
            for (j, unit) in units.iter().enumerate() {
                file[entry + 2 * j..entry + 2 * j + 2].copy_from_slice(&unit.to_le_bytes());
            }
            file[entry + 64..entry + 66].copy_from_slice(&((units.len() as u16 + 1) * 2).to_le_bytes());
        }
        file
    }

    #[test]
    fn compound_files_by_their_streams() {
        assert_eq!(sniff(&compound(&["Root Entry", "WordDocument", "1Table"]), "/file").unwrap(), Format::Doc);
        assert_eq!(sniff(&compound(&["Root Entry", "Workbook"]), "/file").unwrap(), Format::Xls);
        assert_eq!(sniff(&compound(&["Root Entry", "PowerPoint Document"]), "/file").unwrap(), Format::Ppt);
        let locked = sniff(&compound(&["Root Entry", "EncryptionInfo", "EncryptedPackage"]), "/file").unwrap_err();
        assert_eq!(locked.code, "password_required");
        assert_eq!(sniff(&compound(&["Root Entry", "Something"]), "/file").unwrap_err().code, "unsupported_format");
    }
}
