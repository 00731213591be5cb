//! A PDF's embedded files: found in the catalog's `/Names /EmbeddedFiles` name tree and
//! in FileAttachment annotations on the pages (a file specification reachable both ways
//! is one attachment, listed under a unique name), and attached anew by rewriting that
//! tree. Also the media type of a file name, for what is attached and extracted. The
//! attachments route (`docs/attachments.rs`) lists, extracts and adds with these.
//!
//! What this module must not do: decode more than the budget it is given, look at more
//! than `MAX_ANNOTATIONS` annotations, or use a route file.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream, dictionary};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::EngineError;
use crate::pdf::dates::{pdf_date_to_rfc3339, pdf_date_utc};
use crate::pdf::inspect::AttachmentSource;
use crate::pdf::{self, name_tree};

/// One attachment. Names and descriptions are text from the file.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentInfo {
    /// Unique name: the EmbeddedFiles key, or for an annotation its file name; what `names` selects.
    pub name: String,
    /// The file name the PDF gives (/UF, else /F).
    pub filename: Option<String>,
    /// The description (/Desc; for an annotation without one, its /Contents).
    pub description: Option<String>,
    /// Size in bytes when known (/Params /Size, else the decoded length).
    pub bytes: Option<u64>,
    /// Media type the PDF states (the embedded file's /Subtype).
    pub media_type: Option<String>,
    /// Creation date (/Params /CreationDate), RFC 3339 when it is a valid PDF date, else as written.
    pub created: Option<String>,
    /// Modification date (/Params /ModDate), RFC 3339 when it is a valid PDF date, else as written.
    pub modified: Option<String>,
    /// `embedded_files` (the document's attachment list) or `annotation` (a file attachment annotation on a page).
    pub source: AttachmentSource,
    /// For an annotation: its 1-based page.
    pub page: Option<u32>,
}

/// An attachment found in the document: what is reported and where its bytes are.
#[derive(Clone, Debug)]
pub(crate) struct Found {
    pub(crate) info: AttachmentInfo,
    pub(crate) stream: ObjectId,
}

/// Most annotations looked at for file attachments.
const MAX_ANNOTATIONS: usize = 500_000;

/// A file to attach, checked.
pub(crate) struct Addition {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    pub(crate) bytes: Vec<u8>,
    /// The file's media type (the embedded file's /Subtype).
    pub(crate) media_type: &'static str,
    /// How the file relates to the document (/AFRelationship: Unspecified, Data, Alternative, Source…).
    pub(crate) relationship: &'static str,
}

/// Every embedded attachment: the EmbeddedFiles tree, then FileAttachment annotations.
/// File specifications without an embedded file (references to outside files) are not
/// attachments and are left out. Up to `decode_budget` bytes are decoded in all to learn
/// sizes the file does not state.
pub(crate) fn collect(doc: &Document, decode_budget: usize) -> Vec<Found> {
    let mut found = Vec::new();
    let mut specs = HashSet::new();
    let mut used = HashSet::new();
    let mut budget = decode_budget;
    if let Some(root) = embedded_files_root(doc) {
        for (key, value) in name_tree::read(doc, root).entries {
            if let Ok((Some(id), _)) = doc.dereference(&value)
                && !specs.insert(id)
            {
                continue;
            }
            let key = pdf::decode_text_string(&key);
            if let Some(mut item) = attachment(doc, &value, AttachmentSource::EmbeddedFiles, None, &mut budget) {
                item.info.name = unique(&key, &mut used);
                found.push(item);
            }
        }
    }
    let mut seen = HashSet::new();
    let mut visited = 0usize;
    'pages: for (index, page_id) in doc.page_iter().enumerate() {
        let Ok(page) = doc.get_dictionary(page_id) else { continue };
        let Some((list_id, list)) = page.get(b"Annots").ok().and_then(|a| doc.dereference(a).ok()) else { continue };
        // Pages sharing one /Annots array are read once.
        if list_id.is_some_and(|id| !seen.insert(id)) {
            continue;
        }
        let Ok(list) = list.as_array() else { continue };
        for annotation in list {
            visited += 1;
            if visited > MAX_ANNOTATIONS {
                break 'pages;
            }
            let Ok((id, object)) = doc.dereference(annotation) else { continue };
            if id.is_some_and(|id| !seen.insert(id)) {
                continue;
            }
            let Ok(dict) = object.as_dict() else { continue };
            if name_at(doc, dict, b"Subtype") != Some(b"FileAttachment") {
                continue;
            }
            let Ok(spec) = dict.get(b"FS") else { continue };
            if let Ok((Some(spec_id), _)) = doc.dereference(spec)
                && !specs.insert(spec_id)
            {
                continue;
            }
            let page = Some(index as u32 + 1);
            if let Some(mut item) = attachment(doc, spec, AttachmentSource::Annotation, page, &mut budget) {
                if item.info.description.is_none() {
                    item.info.description = text(doc, dict, b"Contents");
                }
                let base = item.info.filename.clone().unwrap_or_else(|| "attachment".to_string());
                item.info.name = unique(&base, &mut used);
                found.push(item);
            }
        }
    }
    found
}

/// The catalog's `/Names /EmbeddedFiles` tree root.
pub(crate) fn embedded_files_root(doc: &Document) -> Option<&Object> {
    let catalog = doc.catalog().ok()?;
    pdf::dict_at(doc, catalog, b"Names")?.get(b"EmbeddedFiles").ok()
}

/// An attachment from a file specification dictionary with an embedded file; its name
/// is left for the caller to choose.
fn attachment(
    doc: &Document,
    spec: &Object,
    source: AttachmentSource,
    page: Option<u32>,
    budget: &mut usize,
) -> Option<Found> {
    let spec = doc.dereference(spec).ok()?.1.as_dict().ok()?;
    let ef = pdf::dict_at(doc, spec, b"EF")?;
    let (stream_id, stream) = [&b"UF"[..], b"F", b"Unix", b"Mac", b"DOS"].iter().find_map(|key| {
        let id = ef.get(key).ok()?.as_reference().ok()?;
        Some((id, doc.get_object(id).ok()?.as_stream().ok()?))
    })?;
    let filename = [&b"UF"[..], b"F", b"Unix", b"Mac", b"DOS"].iter().find_map(|key| text(doc, spec, key));
    let params = pdf::dict_at(doc, &stream.dict, b"Params");
    let date = |key: &[u8]| params.and_then(|p| text(doc, p, key)).map(|d| pdf_date_to_rfc3339(&d));
    let info = AttachmentInfo {
        name: String::new(),
        filename,
        description: text(doc, spec, b"Desc"),
        bytes: size(doc, stream, budget),
        media_type: name_at(doc, &stream.dict, b"Subtype").map(|s| String::from_utf8_lossy(s).into_owned()),
        created: date(b"CreationDate"),
        modified: date(b"ModDate"),
        source,
        page,
    };
    Some(Found { info, stream: stream_id })
}

/// A non-empty text string at `key`.
fn text(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<String> {
    dict.get(key).ok().and_then(|v| pdf::text_string(doc, v)).filter(|t| !t.is_empty())
}

fn name_at<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a [u8]> {
    doc.dereference(dict.get(key).ok()?).ok()?.1.as_name().ok()
}

pub(crate) fn int_at(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<u64> {
    let value = doc.dereference(dict.get(key).ok()?).ok()?.1.as_i64().ok()?;
    u64::try_from(value).ok()
}

/// The stated size (/Params /Size), else the stored length of an unfiltered stream, else
/// the decoded length while the budget lasts.
fn size(doc: &Document, stream: &Stream, budget: &mut usize) -> Option<u64> {
    if let Some(size) = pdf::dict_at(doc, &stream.dict, b"Params").and_then(|p| int_at(doc, p, b"Size")) {
        return Some(size);
    }
    if !stream.dict.has(b"Filter") {
        return Some(stream.content.len() as u64);
    }
    let decoded = stream.get_plain_content_with_limit(*budget).ok()?;
    *budget -= decoded.len();
    Some(decoded.len() as u64)
}

/// `base`, or `base (2)`, `base (3)`… (before the extension) if already used.
pub(crate) fn unique(base: &str, used: &mut HashSet<String>) -> String {
    let (stem, ext) = match base.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem, format!(".{ext}")),
        _ => (base, String::new()),
    };
    let mut candidate = base.to_string();
    let mut n = 2;
    while !used.insert(candidate.clone()) {
        candidate = format!("{stem} ({n}){ext}");
        n += 1;
    }
    candidate
}

/// Whether `text` looks like `type/subtype` (so it is safe in a Content-Type header).
pub(crate) fn is_media_type(text: &str) -> bool {
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    text.len() <= 127 && text.split_once('/').is_some_and(|(t, s)| token(t) && token(s))
}

/// The media type for a file name's extension; `application/octet-stream` if unknown.
pub(crate) fn media_type_for(filename: &str) -> &'static str {
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "txt" | "text" | "log" => "text/plain",
        "csv" => "text/csv",
        "md" => "text/markdown",
        "htm" | "html" => "text/html",
        "xml" => "application/xml",
        "json" => "application/json",
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "tif" | "tiff" => "image/tiff",
        "zip" => "application/zip",
        "doc" => "application/msword",
        "xls" => "application/vnd.ms-excel",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt" => "application/vnd.oasis.opendocument.text",
        "ods" => "application/vnd.oasis.opendocument.spreadsheet",
        "mp3" => "audio/mpeg",
        "mp4" => "video/mp4",
        _ => "application/octet-stream",
    }
}

/// The keys of the EmbeddedFiles tree, decoded; refuses a tree too large or deep to
/// read whole, since rewriting it would drop what was not read.
pub(crate) fn existing_keys(doc: &Document) -> Result<HashSet<String>, EngineError> {
    let Some(root) = embedded_files_root(doc) else { return Ok(HashSet::new()) };
    let tree = name_tree::read(doc, root);
    if !tree.complete {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "/file",
            "/file: the PDF's attachment list is too large or too deeply nested to update",
        ));
    }
    Ok(tree.entries.iter().map(|(key, _)| pdf::decode_text_string(key)).collect())
}

/// Adds the files to the EmbeddedFiles tree, which is rewritten sorted (its old nodes
/// are left unreferenced); creates /Names and /EmbeddedFiles when absent. Answers the new
/// file specifications.
pub(crate) fn add(
    doc: &mut Document,
    additions: Vec<Addition>,
    at: OffsetDateTime,
) -> Result<Vec<ObjectId>, EngineError> {
    let edit = |e| pdf::edit_error("adding attachments", e);
    let mut entries = match embedded_files_root(doc) {
        Some(root) => name_tree::read(doc, root).entries,
        None => Vec::new(),
    };
    let date = Object::string_literal(pdf_date_utc(at, "Z"));
    let mut specs = Vec::new();
    for addition in additions {
        let mut stream = Stream::new(
            dictionary! {
                "Type" => "EmbeddedFile",
                "Subtype" => Object::Name(addition.media_type.as_bytes().to_vec()),
                "Params" => dictionary! {
                    "Size" => Object::Integer(addition.bytes.len() as i64),
                    "CreationDate" => date.clone(),
                    "ModDate" => date.clone(),
                },
            },
            addition.bytes,
        );
        // Deflated when that makes it smaller (already-compressed files are kept as they are).
        stream.compress().map_err(edit)?;
        let stream_id = doc.add_object(stream);
        let name = pdf::encode_text_string(&addition.name);
        let mut spec = dictionary! {
            "Type" => "Filespec",
            "F" => name.clone(),
            "UF" => name.clone(),
            "EF" => dictionary! { "F" => stream_id, "UF" => stream_id },
            "AFRelationship" => addition.relationship,
        };
        if let Some(description) = &addition.description {
            spec.set("Desc", pdf::encode_text_string(description));
        }
        let spec_id = doc.add_object(spec);
        specs.push(spec_id);
        let Object::String(key, _) = name else { return Err(EngineError::internal("a text string is not a string")) };
        entries.push((key, Object::Reference(spec_id)));
    }
    let root = name_tree::write(doc, entries);
    put_tree(doc, Object::Reference(root))?;
    Ok(specs)
}

/// Makes `root` the catalog's EmbeddedFiles tree, creating /Names when absent.
fn put_tree(doc: &mut Document, root: Object) -> Result<(), EngineError> {
    let edit = |e| pdf::edit_error("updating the attachments", e);
    let catalog_id = doc.trailer.get(b"Root").and_then(Object::as_reference).map_err(edit)?;
    let names_id = doc.get_dictionary(catalog_id).map_err(edit)?.get(b"Names").and_then(Object::as_reference).ok();
    match names_id.filter(|&id| doc.get_dictionary(id).is_ok()) {
        Some(id) => doc.get_dictionary_mut(id).map_err(edit)?.set("EmbeddedFiles", root),
        None => {
            let catalog = doc.get_dictionary_mut(catalog_id).map_err(edit)?;
            let mut names = catalog.get(b"Names").and_then(Object::as_dict).cloned().unwrap_or_default();
            names.set("EmbeddedFiles", root);
            catalog.set("Names", names);
        }
    }
    Ok(())
}

/// Removes the attachments listed under `names` from the EmbeddedFiles tree (rewritten
/// without them); answers the names removed.
pub(crate) fn remove_named(doc: &mut Document, names: &[&str]) -> Result<Vec<String>, EngineError> {
    let Some(root) = embedded_files_root(doc) else { return Ok(Vec::new()) };
    let tree = name_tree::read(doc, root);
    let (gone, kept): (Vec<_>, Vec<_>) =
        tree.entries.into_iter().partition(|(key, _)| names.contains(&pdf::decode_text_string(key).as_str()));
    if gone.is_empty() {
        return Ok(Vec::new());
    }
    if !tree.complete {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "/file",
            "/file: the PDF's attachment list is too large or too deeply nested to update",
        ));
    }
    let root = name_tree::write(doc, kept);
    put_tree(doc, Object::Reference(root))?;
    Ok(gone.iter().map(|(key, _)| pdf::decode_text_string(key)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_media_types() {
        assert!(is_media_type("text/plain"));
        assert!(is_media_type("application/vnd.openxmlformats-officedocument.wordprocessingml.document"));
        assert!(!is_media_type("text/plain\r\nX-Evil: 1"));
        assert!(!is_media_type("text"));
        assert_eq!(media_type_for("A.JPG"), "image/jpeg");
        assert_eq!(media_type_for("noext"), "application/octet-stream");
        let mut used = HashSet::new();
        assert_eq!(unique("a.txt", &mut used), "a.txt");
        assert_eq!(unique("a.txt", &mut used), "a (2).txt");
        assert_eq!(unique("a.txt", &mut used), "a (3).txt");
    }
}
