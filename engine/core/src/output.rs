//! What operations answer: JSON, or files to be delivered per the input's `output` field.
//!
//! A [`Reply`] is JSON or a [`FileSet`]; how a file set reaches the caller is the front
//! door's, in the [`OutputMode`] the input chose: the bytes themselves (several files as
//! one ZIP, [`zip_files`]), JSON with base64 ([`FileBase64`]), or 24-hour links
//! ([`FileLink`]). A one-file result may carry a report (sizes before and after, what was
//! repaired), sent as the `Paperchain-Report` header beside the bytes or as a `report`
//! field in JSON. The engine writes no link itself: the HTTP server's file store does, and
//! the hosted paywall has it store the files before it settles, so a result that cannot be
//! kept is not charged.

use std::io::Write;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::EngineError;

/// How a file result is delivered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    /// The bytes themselves (a ZIP when there are several files).
    #[default]
    File,
    /// JSON with the bytes in base64.
    Base64,
    /// JSON with a link valid for 24 hours.
    Url,
}

/// One produced file.
#[derive(Clone)]
pub struct OutFile {
    /// File name offered to the user.
    pub filename: String,
    /// Media type, e.g. `application/pdf`.
    pub media_type: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

impl OutFile {
    /// A PDF named `filename`.
    pub fn pdf(filename: impl Into<String>, bytes: Vec<u8>) -> OutFile {
        OutFile { filename: filename.into(), media_type: "application/pdf".into(), bytes }
    }

    /// A JSON file named `filename` (a manifest beside the files of a result).
    pub fn json(filename: &str, value: &impl serde::Serialize) -> Result<OutFile, crate::error::EngineError> {
        let bytes = serde_json::to_vec_pretty(value)
            .map_err(|e| crate::error::EngineError::internal(format!("{filename}: {e}")))?;
        Ok(OutFile { filename: filename.into(), media_type: "application/json".into(), bytes })
    }

    /// Lower-case hex SHA-256 of the bytes.
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(&self.bytes))
    }

    /// The JSON form for `output: "base64"`.
    pub fn to_base64(&self) -> FileBase64 {
        use base64::Engine as _;
        FileBase64 {
            filename: self.filename.clone(),
            media_type: self.media_type.clone(),
            bytes: self.bytes.len() as u64,
            sha256: self.sha256(),
            data: base64::engine::general_purpose::STANDARD.encode(&self.bytes),
            report: None,
        }
    }
}

impl std::fmt::Debug for OutFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutFile")
            .field("filename", &self.filename)
            .field("media_type", &self.media_type)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// The files of one result and how to deliver them.
#[derive(Debug, Clone)]
pub struct FileSet {
    /// The files, in order.
    pub files: Vec<OutFile>,
    /// How the caller asked to receive them.
    pub mode: OutputMode,
    /// For routes that produce several files: the ZIP's name for `output: "file"`, and
    /// the sign that base64/url answers are a list even for one file.
    pub bundle: Option<String>,
    /// What the operation has to say about a one-file result (e.g. sizes before and
    /// after): a `Paperchain-Report` header beside the bytes, a `report` field in JSON.
    pub report: Option<serde_json::Value>,
    /// For `output: "url"`, the links once the files are stored (then `files` is empty):
    /// the hosted service stores them before it settles a payment, so a call whose files
    /// cannot be kept is not charged.
    pub links: Option<Vec<FileLink>>,
}

impl FileSet {
    /// One file.
    pub fn single(file: OutFile, mode: OutputMode) -> FileSet {
        FileSet { files: vec![file], mode, bundle: None, report: None, links: None }
    }

    /// Several files, bundled as `zip_name` for `output: "file"`.
    pub fn several(files: Vec<OutFile>, mode: OutputMode, zip_name: impl Into<String>) -> FileSet {
        FileSet { files, mode, bundle: Some(zip_name.into()), report: None, links: None }
    }

    /// The same files with a report about them.
    pub fn with_report(mut self, report: serde_json::Value) -> FileSet {
        self.report = Some(report);
        self
    }

    /// The one file to send for `output: "file"`: the file itself, or a ZIP of them all.
    pub fn into_single_file(self) -> Result<OutFile, EngineError> {
        match self.bundle {
            None if self.files.len() == 1 => {
                Ok(self.files.into_iter().next().ok_or_else(|| EngineError::internal("no file"))?)
            }
            None => Err(EngineError::internal("several files without a bundle name")),
            Some(name) => {
                Ok(OutFile { filename: name, media_type: "application/zip".into(), bytes: zip_files(&self.files)? })
            }
        }
    }
}

/// A ZIP archive of `files`; repeated names get ` (2)`, ` (3)`… before the extension.
pub fn zip_files(files: &[OutFile]) -> Result<Vec<u8>, EngineError> {
    let mut zip = ZipBuilder::new();
    for file in files {
        zip.add(&file.filename, &file.media_type, &file.bytes)?;
    }
    zip.finish()
}

/// A ZIP archive written one file at a time, so a route that makes many files (pages as
/// images) holds the archive and the file at hand, never every file beside the archive.
/// Repeated names get ` (2)`, ` (3)`… before the extension.
pub struct ZipBuilder {
    writer: zip::ZipWriter<std::io::Cursor<Vec<u8>>>,
    used: std::collections::HashSet<String>,
}

impl Default for ZipBuilder {
    fn default() -> Self {
        ZipBuilder::new()
    }
}

impl ZipBuilder {
    /// An empty archive.
    pub fn new() -> ZipBuilder {
        ZipBuilder { writer: zip::ZipWriter::new(std::io::Cursor::new(Vec::new())), used: Default::default() }
    }

    /// Adds one file. PDF streams and images are compressed already: deflating them again
    /// costs more time than it saves bytes, so they are stored; other files are deflated.
    pub fn add(&mut self, filename: &str, media_type: &str, bytes: &[u8]) -> Result<(), EngineError> {
        let name = unique_name(filename, &mut self.used);
        let method = if is_compressed_media(media_type) {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        let large = bytes.len() as u64 >= u32::MAX as u64;
        let options = zip::write::SimpleFileOptions::default().compression_method(method).large_file(large);
        self.writer.start_file(name, options).map_err(|e| zip_error(&e))?;
        self.writer.write_all(bytes).map_err(|e| zip_error(&e))
    }

    /// The finished archive.
    pub fn finish(self) -> Result<Vec<u8>, EngineError> {
        Ok(self.writer.finish().map_err(|e| zip_error(&e))?.into_inner())
    }
}

fn zip_error(e: &dyn std::fmt::Display) -> EngineError {
    EngineError::internal(format!("writing the ZIP: {e}"))
}

fn is_compressed_media(media_type: &str) -> bool {
    matches!(media_type, "application/pdf" | "image/png" | "image/jpeg" | "image/webp" | "application/zip")
        || media_type.starts_with("application/vnd.openxmlformats-officedocument.")
}

/// `name`, or `name (2)`, `name (3)`… before the extension when `used` has it already; the
/// name returned is added to `used`.
pub fn unique_name(name: &str, used: &mut std::collections::HashSet<String>) -> String {
    let mut candidate = name.to_string();
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (name.to_string(), String::new()),
    };
    let mut n = 2;
    while !used.insert(candidate.clone()) {
        candidate = format!("{stem} ({n}){ext}");
        n += 1;
    }
    candidate
}

/// An operation's answer.
#[derive(Debug)]
pub enum Reply<T> {
    /// A JSON document.
    Json(T),
    /// Files.
    Files(FileSet),
}

/// A file delivered inline (`output: "base64"`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FileBase64 {
    /// File name.
    pub filename: String,
    /// Media type.
    pub media_type: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lower-case hex SHA-256 of the bytes.
    pub sha256: String,
    /// The bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// What the operation reports about the file (e.g. sizes before and after), when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<serde_json::Value>,
}

/// A file delivered as a link valid for 24 hours (`output: "url"`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct FileLink {
    /// Where to download the file (GET).
    pub url: String,
    /// When the link stops working and the file is deleted (RFC 3339, UTC).
    pub expires_at: String,
    /// File name.
    pub filename: String,
    /// Media type.
    pub media_type: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Lower-case hex SHA-256 of the bytes.
    pub sha256: String,
    /// What the operation reports about the file (e.g. sizes before and after), when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<serde_json::Value>,
}

/// The JSON answer of routes that only produce files (there is none besides the files).
#[derive(Debug, Serialize, JsonSchema)]
pub enum NoJson {}

/// The file name a building route was given, or `<default_stem>.<ext>`: cleaned as input
/// file names are, `.<ext>` added when missing. A name that leaves nothing once cleaned
/// (blank, only dots, a folder path) gets the default: the name only labels the file.
pub fn chosen_name(given: Option<&str>, default_stem: &str, ext: &str) -> String {
    let name = given.map(crate::input::sanitize_filename).filter(|name| !name.is_empty());
    match name {
        None => format!("{default_stem}.{ext}"),
        Some(name) if name.to_ascii_lowercase().ends_with(&format!(".{ext}")) => name,
        Some(name) => format!("{name}.{ext}"),
    }
}

/// Output file name: the input's stem, a suffix, an extension (`report.pdf` →
/// `report-rotated.pdf`).
pub fn derived_name(input_name: &str, suffix: &str, ext: &str) -> String {
    let stem = match input_name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => input_name,
    };
    let stem = if stem.is_empty() { "document" } else { stem };
    if suffix.is_empty() { format!("{stem}.{ext}") } else { format!("{stem}-{suffix}.{ext}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zip_keeps_every_file_under_a_unique_name() {
        let files = vec![OutFile::pdf("a.pdf", b"one".to_vec()), OutFile::pdf("a.pdf", b"two".to_vec())];
        let zip = zip_files(&files).unwrap();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
        let names: Vec<String> = archive.file_names().map(|n| n.unwrap().into_owned()).collect();
        assert_eq!(names, vec!["a.pdf", "a (2).pdf"]);
        let mut body = String::new();
        std::io::Read::read_to_string(&mut archive.by_name("a (2).pdf").unwrap(), &mut body).unwrap();
        assert_eq!(body, "two");
    }

    #[test]
    fn derives_names() {
        assert_eq!(derived_name("report.pdf", "rotated", "pdf"), "report-rotated.pdf");
        assert_eq!(derived_name("noext", "part-1", "pdf"), "noext-part-1.pdf");
        assert_eq!(derived_name("", "x", "zip"), "document-x.zip");
    }
}
