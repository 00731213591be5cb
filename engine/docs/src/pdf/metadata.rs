//! A PDF's document metadata, the Info dictionary and the catalog's XMP packet: read as
//! a report ([`read_report`]), edited ([`edit`]: the entries of a [`MetadataSet`] set or
//! removed, /ModDate stamped, the XMP packet rewritten to match) or stripped ([`strip`]:
//! Info, every XMP packet and /PieceInfo). The metadata route (`docs/metadata.rs`) does all
//! three; the text route and the conversions read the title.
//!
//! What this module must not do: read an XMP packet past `MAX_XMP_BYTES`, or use a route
//! file.

use std::collections::BTreeMap;

use lopdf::{Dictionary, Document, Object, Stream, StringFormat};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::EngineError;
use crate::pdf::dates::{parse_pdf_date, pdf_date, pdf_date_to_rfc3339};
use crate::pdf::{self, xmp};

/// Entries to change: a string sets the entry, null removes it, an absent key keeps it.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetadataSet {
    /// Document title (Info /Title, XMP dc:title).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>", transform = no_default)]
    pub title: Option<Option<String>>,
    /// Author (Info /Author, XMP dc:creator).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>", transform = no_default)]
    pub author: Option<Option<String>>,
    /// Subject (Info /Subject, XMP dc:description).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>", transform = no_default)]
    pub subject: Option<Option<String>>,
    /// Keywords (Info /Keywords, XMP pdf:Keywords).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>", transform = no_default)]
    pub keywords: Option<Option<String>>,
    /// The application that created the original document (Info /Creator, XMP xmp:CreatorTool).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>", transform = no_default)]
    pub creator: Option<Option<String>>,
    /// The application that produced the PDF (Info /Producer, XMP pdf:Producer).
    #[serde(default, deserialize_with = "present")]
    #[schemars(with = "Option<String>", transform = no_default)]
    pub producer: Option<Option<String>>,
}

/// Drops the `"default": null` serde's `default` implies: an absent key keeps the entry,
/// which is not what null does.
fn no_default(schema: &mut schemars::Schema) {
    schema.remove("default");
}

/// Tells a key given as null (`Some(None)`, remove) from an absent one (`None`, keep).
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

/// One entry of `set`: JSON name, Info key, value (absent, null or text).
pub(crate) type SetEntry<'a> = (&'static str, &'static [u8], &'a Option<Option<String>>);

impl MetadataSet {
    /// The entries in a fixed order: JSON name, Info key, value.
    pub(crate) fn entries(&self) -> [SetEntry<'_>; 6] {
        [
            ("title", b"Title", &self.title),
            ("author", b"Author", &self.author),
            ("subject", b"Subject", &self.subject),
            ("keywords", b"Keywords", &self.keywords),
            ("creator", b"Creator", &self.creator),
            ("producer", b"Producer", &self.producer),
        ]
    }

    /// Whether no entry is given.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries().iter().all(|(_, _, value)| value.is_none())
    }
}

/// The answer of `read`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MetadataReport {
    /// The Info dictionary.
    pub info: InfoReport,
    /// The document's XMP packet (the catalog's /Metadata stream).
    pub xmp: XmpReport,
    /// The PDF version of the file header.
    pub version: String,
    /// Number of pages.
    pub page_count: u32,
}

/// The Info dictionary's entries; null where absent. Values are text from the file.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct InfoReport {
    /// /Title.
    pub title: Option<String>,
    /// /Author.
    pub author: Option<String>,
    /// /Subject.
    pub subject: Option<String>,
    /// /Keywords.
    pub keywords: Option<String>,
    /// /Creator: the application that created the original document.
    pub creator: Option<String>,
    /// /Producer: the application that produced the PDF.
    pub producer: Option<String>,
    /// /CreationDate as RFC 3339 when it is a valid PDF date, else the raw text.
    pub creation_date: Option<String>,
    /// /ModDate as RFC 3339 when it is a valid PDF date, else the raw text.
    pub modification_date: Option<String>,
    /// /Trapped: `True`, `False` or `Unknown` as written.
    pub trapped: Option<String>,
    /// Every other entry whose value is text, a name, a number or a boolean.
    pub custom: BTreeMap<String, String>,
}

/// The XMP packet's common properties; null where absent. Values are text from the file.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct XmpReport {
    /// Whether the catalog has an XMP metadata stream.
    pub present: bool,
    /// Size of the packet in bytes (decoded; the stored size when it could not be decoded).
    pub bytes: u64,
    /// dc:title (the x-default alternative, else the first).
    pub title: Option<String>,
    /// dc:creator, in order.
    pub creator: Option<Vec<String>>,
    /// dc:description (the x-default alternative, else the first).
    pub description: Option<String>,
    /// pdf:Producer.
    pub producer: Option<String>,
    /// xmp:CreatorTool.
    pub creator_tool: Option<String>,
    /// xmp:CreateDate, as written.
    pub create_date: Option<String>,
    /// xmp:ModifyDate, as written.
    pub modify_date: Option<String>,
    /// xmp:MetadataDate, as written.
    pub metadata_date: Option<String>,
    /// pdf:Keywords.
    pub keywords: Option<String>,
}

/// The Info dictionary (trailer /Info), following a reference.
pub(crate) fn info_dict(doc: &Document) -> Option<&Dictionary> {
    pdf::dict_at(doc, &doc.trailer, b"Info")
}

/// The catalog's /Metadata stream.
pub(crate) fn xmp_stream(doc: &Document) -> Option<&Stream> {
    let catalog = doc.catalog().ok()?;
    doc.dereference(catalog.get(b"Metadata").ok()?).ok()?.1.as_stream().ok()
}

/// The whole `read` answer.
pub fn read_report(doc: &Document, page_count: u32) -> MetadataReport {
    MetadataReport { info: read_info(doc), xmp: read_xmp(doc), version: doc.version.clone(), page_count }
}

fn read_info(doc: &Document) -> InfoReport {
    let mut report = InfoReport::default();
    let Some(info) = info_dict(doc) else { return report };
    for (key, value) in info.iter() {
        let text = || loose_text(doc, value);
        match key.as_slice() {
            b"Title" => report.title = text(),
            b"Author" => report.author = text(),
            b"Subject" => report.subject = text(),
            b"Keywords" => report.keywords = text(),
            b"Creator" => report.creator = text(),
            b"Producer" => report.producer = text(),
            b"CreationDate" => report.creation_date = text().map(|t| pdf_date_to_rfc3339(&t)),
            b"ModDate" => report.modification_date = text().map(|t| pdf_date_to_rfc3339(&t)),
            b"Trapped" => report.trapped = text(),
            other => {
                if let Some(text) = text() {
                    report.custom.insert(String::from_utf8_lossy(other).into_owned(), text);
                }
            }
        }
    }
    report
}

/// An Info value as text: strings and names as such, numbers and booleans written out;
/// anything else (arrays, dictionaries) is not metadata text.
fn loose_text(doc: &Document, value: &Object) -> Option<String> {
    match doc.dereference(value).ok()?.1 {
        Object::String(..) | Object::Name(_) => pdf::text_string(doc, value),
        Object::Integer(i) => Some(i.to_string()),
        Object::Real(r) if r.is_finite() => Some(r.to_string()),
        Object::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Largest XMP packet read; a larger one is reported present with its fields unread.
pub(crate) const MAX_XMP_BYTES: usize = 4 * 1024 * 1024;

fn read_xmp(doc: &Document) -> XmpReport {
    let Some(stream) = xmp_stream(doc) else { return XmpReport::default() };
    let packet = match stream.get_plain_content_with_limit(MAX_XMP_BYTES) {
        Ok(packet) => packet,
        Err(_) => return XmpReport { present: true, bytes: stream.content.len() as u64, ..XmpReport::default() },
    };
    let tree = xmp::parse(&xmp::decode_packet(&packet));
    XmpReport {
        present: true,
        bytes: packet.len() as u64,
        title: tree.text(xmp::DC, "title"),
        creator: tree.list(xmp::DC, "creator"),
        description: tree.text(xmp::DC, "description"),
        producer: tree.text(xmp::PDF, "Producer"),
        creator_tool: tree.text(xmp::XMP, "CreatorTool"),
        create_date: tree.text(xmp::XMP, "CreateDate"),
        modify_date: tree.text(xmp::XMP, "ModifyDate"),
        metadata_date: tree.text(xmp::XMP, "MetadataDate"),
        keywords: tree.text(xmp::PDF, "Keywords"),
    }
}

/// A UTC time as an XMP (ISO 8601) date.
fn xmp_date(at: OffsetDateTime) -> String {
    let at = at.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// Applies `set` to the Info dictionary, stamps /ModDate with `at`, and rewrites the XMP
/// packet (when the document has one) to carry the same values.
pub fn edit(doc: &mut Document, set: &MetadataSet, at: OffsetDateTime) -> Result<(), EngineError> {
    let mut info = info_dict(doc).cloned().unwrap_or_default();
    for (_, key, value) in set.entries() {
        match value {
            Some(Some(text)) => info.set(key, pdf::encode_text_string(text)),
            Some(None) => {
                info.remove(key);
            }
            None => {}
        }
    }
    info.set("ModDate", Object::String(pdf_date(at).into_bytes(), StringFormat::Literal));
    let packet = xmp_stream(doc).map(|stream| fresh_packet(doc, stream, &info, at));
    write_info(doc, info);
    if let Some(packet) = packet {
        write_xmp(doc, packet)?;
    }
    Ok(())
}

/// Puts `info` where the trailer's /Info points, or in a new object when it points nowhere usable.
fn write_info(doc: &mut Document, info: Dictionary) {
    match doc.trailer.get(b"Info") {
        Ok(Object::Reference(id)) if matches!(doc.objects.get(id), Some(Object::Dictionary(_))) => {
            let id = *id;
            doc.objects.insert(id, Object::Dictionary(info));
        }
        _ => {
            let id = doc.add_object(Object::Dictionary(info));
            doc.trailer.set("Info", Object::Reference(id));
        }
    }
}

/// Replaces the catalog's XMP stream with `packet`, in the same object when it is one.
pub(crate) fn write_xmp(doc: &mut Document, packet: Vec<u8>) -> Result<(), EngineError> {
    let mut dict = Dictionary::new();
    dict.set("Type", Object::Name(b"Metadata".to_vec()));
    dict.set("Subtype", Object::Name(b"XML".to_vec()));
    // XMP stays uncompressed so that tools which scan files for packets (and PDF/A) find it.
    let stream = Object::Stream(Stream::new(dict, packet).with_compression(false));
    let existing = doc.catalog().ok().and_then(|c| c.get(b"Metadata").ok()).and_then(|m| m.as_reference().ok());
    match existing {
        Some(id) => {
            doc.objects.insert(id, stream);
        }
        // A stream is always an object of its own, never written inside another.
        None => {
            let id = doc.add_object(stream);
            doc.catalog_mut().map_err(|e| pdf::edit_error("updating the XMP metadata", e))?.set("Metadata", id);
        }
    }
    Ok(())
}

/// Properties of the old packet carried into the new one: identification that a
/// standard (PDF/A, PDF/UA) or a document management system relies on.
const KEPT_PROPERTIES: [(&str, &str, &str); 6] = [
    (xmp::PDFAID, "pdfaid", "part"),
    (xmp::PDFAID, "pdfaid", "conformance"),
    (xmp::PDFAID, "pdfaid", "amd"),
    (xmp::PDFAID, "pdfaid", "rev"),
    (xmp::PDFUAID, "pdfuaid", "part"),
    (xmp::XMP_MM, "xmpMM", "DocumentID"),
];

/// A new XMP packet carrying the Info values of `info`.
fn fresh_packet(doc: &Document, old: &Stream, info: &Dictionary, at: OffsetDateTime) -> Vec<u8> {
    let old_tree = old.get_plain_content_with_limit(MAX_XMP_BYTES).ok().map(|p| xmp::parse(&xmp::decode_packet(&p)));
    let kept = KEPT_PROPERTIES
        .iter()
        .filter_map(|&(ns, prefix, local)| {
            let text = old_tree.as_ref()?.text(ns, local)?;
            Some(xmp::Simple { ns, prefix, local, value: text })
        })
        .collect();
    packet_for(doc, info, at, old_tree.as_ref(), kept, Vec::new())
}

/// An XMP packet saying what `info` says, with the `kept` properties and the `extra`
/// `rdf:Description` elements; the creation date comes from the old packet when the Info
/// dictionary has none.
pub(crate) fn packet_for(
    doc: &Document,
    info: &Dictionary,
    at: OffsetDateTime,
    old_tree: Option<&xmp::Tree>,
    kept: Vec<xmp::Simple>,
    extra: Vec<String>,
) -> Vec<u8> {
    let value = |key: &[u8]| info.get(key).ok().and_then(|v| loose_text(doc, v));
    let create_date = value(b"CreationDate")
        .and_then(|d| parse_pdf_date(&d))
        .and_then(|d| d.format(&Rfc3339).ok())
        .or_else(|| old_tree.and_then(|t| t.text(xmp::XMP, "CreateDate")));
    let modify_date = value(b"ModDate")
        .and_then(|d| parse_pdf_date(&d))
        .and_then(|d| d.format(&Rfc3339).ok())
        .unwrap_or_else(|| xmp_date(at));
    let fields = xmp::PacketFields {
        title: value(b"Title"),
        author: value(b"Author"),
        subject: value(b"Subject"),
        keywords: value(b"Keywords"),
        creator_tool: value(b"Creator"),
        producer: value(b"Producer"),
        create_date,
        modify_date,
        kept,
        extra,
    };
    xmp::write_packet(&fields).into_bytes()
}

// ---------------------------------------------------------------------------------------
// strip

/// Removes the Info dictionary, the document's and every object's /Metadata, and /PieceInfo,
/// then drops the objects nothing refers to any more so the old values leave the file.
pub fn strip(doc: &mut Document) {
    doc.trailer.remove(b"Info");
    for object in doc.objects.values_mut() {
        match object {
            Object::Dictionary(dict) => strip_dict(dict, 0),
            Object::Stream(stream) => strip_dict(&mut stream.dict, 0),
            Object::Array(items) => items.iter_mut().for_each(|item| strip_object(item, 1)),
            _ => {}
        }
    }
    doc.prune_objects();
}

/// Deep enough for any real nesting of direct dictionaries; the parser bounds it anyway.
const MAX_STRIP_DEPTH: usize = 64;

fn strip_dict(dict: &mut Dictionary, depth: usize) {
    dict.remove(b"Metadata");
    dict.remove(b"PieceInfo");
    for (_, value) in dict.iter_mut() {
        strip_object(value, depth + 1);
    }
}

fn strip_object(object: &mut Object, depth: usize) {
    if depth > MAX_STRIP_DEPTH {
        return;
    }
    match object {
        Object::Dictionary(dict) => strip_dict(dict, depth),
        Object::Array(items) => items.iter_mut().for_each(|item| strip_object(item, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_schema_tells_null_from_absent() {
        let schema = serde_json::to_value(schemars::schema_for!(MetadataSet)).unwrap();
        let title = &schema["properties"]["title"];
        assert_eq!(title["type"], serde_json::json!(["string", "null"]));
        assert!(title.get("default").is_none(), "{title}");
        assert_eq!(schema["additionalProperties"], false);
    }

    #[test]
    fn parses_pdf_dates() {
        let cases = [
            ("D:20220403180542+02'00'", "2022-04-03T18:05:42+02:00"),
            ("D:20220403180542+02'00", "2022-04-03T18:05:42+02:00"),
            ("D:20220403180542-05'30'", "2022-04-03T18:05:42-05:30"),
            ("D:20220403180542Z", "2022-04-03T18:05:42Z"),
            ("D:20220403180542Z00'00'", "2022-04-03T18:05:42Z"),
            ("D:2022", "2022-01-01T00:00:00Z"),
            ("20220403", "2022-04-03T00:00:00Z"),
            ("D:20221340", "D:20221340"),
            ("D:2022x", "D:2022x"),
            ("", ""),
            ("D:٢٠٢٢", "D:٢٠٢٢"),
        ];
        for (raw, want) in cases {
            assert_eq!(pdf_date_to_rfc3339(raw), want, "{raw}");
        }
        let at = OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap();
        assert_eq!(pdf_date(at), "D:20231114221320+00'00'");
        assert_eq!(pdf_date_to_rfc3339(&pdf_date(at)), "2023-11-14T22:13:20Z");
        assert_eq!(xmp_date(at), "2023-11-14T22:13:20Z");
    }
}
