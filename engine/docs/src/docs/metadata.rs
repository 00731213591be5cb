//! `POST /v1/pdf/metadata`: read, edit or strip a PDF's document metadata (the Info
//! dictionary and the XMP packet).

use std::collections::BTreeMap;

use lopdf::{Dictionary, Document, Object, Stream, StringFormat};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{OutputMode, Reply};
use crate::pdf::dates::{parse_pdf_date, pdf_date, pdf_date_to_rfc3339};
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Fields of `/v1/pdf/metadata` besides `file` and `output` (which `read` ignores: it answers JSON).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend(
    "if" = { "properties": { "action": { "const": "edit" } } },
    "then" = { "required": ["set"], "properties": { "set": { "type": "object", "minProperties": 1 } } },
    "else" = { "properties": { "set": { "type": "null" } } }
))]
pub struct MetadataOptions {
    /// `read` answers the metadata as JSON; `edit` changes entries given in `set`; `strip` removes all document metadata.
    pub action: MetadataAction,
    /// For `edit` only: the entries to change (a string sets, null removes, an absent key is kept).
    #[serde(default)]
    pub set: Option<MetadataSet>,
}

/// What to do with the metadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MetadataAction {
    /// Answer the Info dictionary and the XMP packet as JSON.
    Read,
    /// Change the entries named in `set`, keeping the XMP packet in step.
    Edit,
    /// Remove the Info dictionary, every XMP packet and /PieceInfo.
    Strip,
}

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

/// Longest value `set` takes, in characters: far above any real title, far below a
/// value that would only bloat the file.
const MAX_VALUE_CHARS: usize = 32_768;

/// One entry of `set`: JSON name, Info key, value (absent, null or text).
type SetEntry<'a> = (&'static str, &'static [u8], &'a Option<Option<String>>);

impl MetadataSet {
    /// The entries in a fixed order: JSON name, Info key, value.
    fn entries(&self) -> [SetEntry<'_>; 6] {
        [
            ("title", b"Title", &self.title),
            ("author", b"Author", &self.author),
            ("subject", b"Subject", &self.subject),
            ("keywords", b"Keywords", &self.keywords),
            ("creator", b"Creator", &self.creator),
            ("producer", b"Producer", &self.producer),
        ]
    }

    fn is_empty(&self) -> bool {
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

/// A checked metadata call.
pub struct MetadataCall {
    source: SourcePdf,
    action: MetadataAction,
    set: MetadataSet,
    output: OutputMode,
}

/// The route.
pub struct MetadataRoute;

impl Route for MetadataRoute {
    type Input = PdfJob<MetadataOptions>;
    type Prepared = MetadataCall;
    type Output = MetadataReport;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<MetadataOptions>, ctx: &Context) -> Result<MetadataCall, EngineError> {
        let action = input.options.action;
        let set = check_set(action, input.options.set)?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        Ok(MetadataCall { source, action, set, output: input.output })
    }

    fn quote(call: &MetadataCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: MetadataCall, _ctx: &Context) -> Result<Reply<MetadataReport>, EngineError> {
        blocking(move || {
            let MetadataCall { mut source, action, set, output } = call;
            match action {
                MetadataAction::Read => return Ok(Reply::Json(read_report(&source.doc, source.page_count))),
                MetadataAction::Edit => edit(&mut source.doc, &set, now())?,
                MetadataAction::Strip => strip(&mut source.doc),
            }
            source.into_reply("metadata", output)
        })
        .await
    }
}

/// The operation, as a pipeline step: `edit` and `strip` (a step must leave a PDF).
pub struct Metadata;

impl Transform for Metadata {
    type Options = MetadataOptions;
    type Plan = (MetadataAction, MetadataSet);

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "metadata";

    fn step_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = MetadataOptions::json_schema(generator);
        if let Some(action) = schema.get_mut("properties").and_then(|p| p.get_mut("action")) {
            *action = serde_json::json!({
                "enum": ["edit", "strip"],
                "description": "`edit` changes entries given in `set`; `strip` removes all document metadata (a step leaves a PDF: `read` is not one).",
            });
        }
        schema
    }

    fn check(options: &MetadataOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        if options.action == MetadataAction::Read {
            return Err(EngineError::invalid(
                "/action",
                "/action: `read` answers JSON; a pipeline step must leave a PDF (use edit or strip)",
            ));
        }
        check_set(options.action, options.set.clone())?;
        Ok(pages)
    }

    fn plan(options: MetadataOptions, _: &Document, _: &Limits) -> Result<Self::Plan, EngineError> {
        Ok((options.action, check_set(options.action, options.set)?))
    }

    fn apply((action, set): Self::Plan, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        match action {
            MetadataAction::Edit => edit(&mut doc, &set, now())?,
            MetadataAction::Strip => strip(&mut doc),
            MetadataAction::Read => {}
        }
        Ok(Pdf::Doc(doc))
    }
}

/// The route's description, shared by the route and the pipeline step.
const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/metadata",
    operation: "edit_pdf_metadata",
    family: Family::Docs,
    summary: "Read, edit or strip PDF metadata",
    description: "action=read answers the Info dictionary (title, author, subject, keywords, creator, producer, dates, \
        custom entries) and the XMP packet's common properties as JSON. action=edit sets or removes the entries given \
        in `set` (null removes), stamps the modification date and rewrites the XMP packet to match. action=strip removes \
        the Info dictionary, every XMP packet (document, page and object level) and /PieceInfo. Edits answer the PDF; \
        output=url gives a 24 h link.",
    base_price: Price::micros(2_000),
    price_rule: PAGE_EDIT_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::JsonOrFile,
    open_world: false,
    accepts: crate::catalog::accepts::PDF,
};

/// Checks that `set` goes with `edit` only and that its values are usable.
fn check_set(action: MetadataAction, set: Option<MetadataSet>) -> Result<MetadataSet, EngineError> {
    match (action, set) {
        (MetadataAction::Read | MetadataAction::Strip, Some(_)) => Err(EngineError::invalid(
            "/set",
            "/set: `set` is only taken by action `edit`; remove it, or use action `edit`",
        )),
        (MetadataAction::Read | MetadataAction::Strip, None) => Ok(MetadataSet::default()),
        (MetadataAction::Edit, None) => Err(EngineError::invalid(
            "/set",
            "/set: action `edit` needs `set` with at least one of title, author, subject, keywords, creator, producer",
        )),
        (MetadataAction::Edit, Some(set)) if set.is_empty() => Err(EngineError::invalid(
            "/set",
            "/set: `set` is empty; give at least one of title, author, subject, keywords, creator, producer",
        )),
        (MetadataAction::Edit, Some(set)) => {
            for (name, _, value) in set.entries() {
                if let Some(Some(text)) = value
                    && text.chars().count() > MAX_VALUE_CHARS
                {
                    return Err(EngineError::invalid(
                        format!("/set/{name}"),
                        format!("/set/{name}: at most {MAX_VALUE_CHARS} characters"),
                    ));
                }
            }
            Ok(set)
        }
    }
}

/// The current time, to the second, in UTC.
fn now() -> OffsetDateTime {
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(0).unwrap_or(now)
}

// ---------------------------------------------------------------------------------------
// read

/// The Info dictionary (trailer /Info), following a reference.
fn info_dict(doc: &Document) -> Option<&Dictionary> {
    pdf::dict_at(doc, &doc.trailer, b"Info")
}

/// The catalog's /Metadata stream.
fn xmp_stream(doc: &Document) -> Option<&Stream> {
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
const MAX_XMP_BYTES: usize = 4 * 1024 * 1024;

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

// ---------------------------------------------------------------------------------------
// edit

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
fn write_xmp(doc: &mut Document, packet: Vec<u8>) -> Result<(), EngineError> {
    let mut dict = Dictionary::new();
    dict.set("Type", Object::Name(b"Metadata".to_vec()));
    dict.set("Subtype", Object::Name(b"XML".to_vec()));
    // XMP stays uncompressed so that tools which scan files for packets (and PDF/A) find it.
    let stream = Object::Stream(Stream::new(dict, packet).with_compression(false));
    let catalog = doc.catalog_mut().map_err(|e| pdf::edit_error("updating the XMP metadata", e))?;
    match catalog.get(b"Metadata") {
        Ok(Object::Reference(id)) => {
            let id = *id;
            doc.objects.insert(id, stream);
        }
        _ => catalog.set("Metadata", stream),
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
    let value = |key: &[u8]| info.get(key).ok().and_then(|v| loose_text(doc, v));
    let create_date = value(b"CreationDate")
        .and_then(|d| parse_pdf_date(&d))
        .and_then(|d| d.format(&Rfc3339).ok())
        .or_else(|| old_tree.as_ref().and_then(|t| t.text(xmp::XMP, "CreateDate")));
    let kept = KEPT_PROPERTIES
        .iter()
        .filter_map(|&(ns, prefix, local)| {
            let text = old_tree.as_ref()?.text(ns, local)?;
            Some(xmp::Simple { ns, prefix, local, value: text })
        })
        .collect();
    let fields = xmp::PacketFields {
        title: value(b"Title"),
        author: value(b"Author"),
        subject: value(b"Subject"),
        keywords: value(b"Keywords"),
        creator_tool: value(b"Creator"),
        producer: value(b"Producer"),
        create_date,
        modify_date: xmp_date(at),
        kept,
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

// ---------------------------------------------------------------------------------------

/// Reading and writing XMP packets: a small XML reader that resolves namespaces, knows
/// the five predefined entities and character references, and nothing else. It never
/// reads a DTD or expands a declared entity, so external entities and entity bombs have
/// nothing to act on; depth and element counts are capped.
mod xmp {
    use crate::xml::escape;

    pub const RDF: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
    pub const DC: &str = "http://purl.org/dc/elements/1.1/";
    pub const XMP: &str = "http://ns.adobe.com/xap/1.0/";
    pub const PDF: &str = "http://ns.adobe.com/pdf/1.3/";
    pub const XMP_MM: &str = "http://ns.adobe.com/xap/1.0/mm/";
    pub const PDFAID: &str = "http://www.aiim.org/pdfa/ns/id/";
    pub const PDFUAID: &str = "http://www.aiim.org/pdfua/ns/id/";
    const XML: &str = "http://www.w3.org/XML/1998/namespace";

    const MAX_DEPTH: usize = 128;
    const MAX_ELEMENTS: usize = 100_000;

    /// The packet bytes as text: UTF-16 with a byte order mark, else UTF-8 (lossy).
    pub fn decode_packet(bytes: &[u8]) -> String {
        if let Some(text) = crate::pdf::decode_utf16_with_bom(bytes) {
            return text;
        }
        let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
        String::from_utf8_lossy(bytes).into_owned()
    }

    #[derive(Debug, Default)]
    struct Element {
        ns: String,
        local: String,
        attrs: Vec<Attr>,
        children: Vec<usize>,
        text: String,
    }

    #[derive(Debug)]
    struct Attr {
        ns: String,
        local: String,
        value: String,
    }

    /// A parsed packet; element 0 is the document itself.
    #[derive(Debug)]
    pub struct Tree {
        elements: Vec<Element>,
    }

    struct Open {
        element: usize,
        qname: String,
        scope_len: usize,
    }

    /// Parses leniently: what precedes a syntax error is kept, the rest dropped.
    pub fn parse(text: &str) -> Tree {
        let mut tree = Tree { elements: vec![Element::default()] };
        let mut open = vec![Open { element: 0, qname: String::new(), scope_len: 1 }];
        let mut scopes: Vec<(String, String)> = vec![("xml".into(), XML.into())];
        let mut i = 0;
        while i < text.len() {
            let rest = &text[i..];
            if !rest.starts_with('<') {
                let end = rest.find('<').unwrap_or(rest.len());
                if let Some(top) = open.last() {
                    tree.elements[top.element].text.push_str(&unescape(&rest[..end]));
                }
                i += end;
                continue;
            }
            let skip_past = |marker: &str, from: usize| rest[from..].find(marker).map(|p| from + p + marker.len());
            if rest.starts_with("<!--") {
                i += skip_past("-->", 4).unwrap_or(rest.len());
            } else if let Some(cdata) = rest.strip_prefix("<![CDATA[") {
                let end = cdata.find("]]>").unwrap_or(cdata.len());
                if let Some(top) = open.last() {
                    tree.elements[top.element].text.push_str(&cdata[..end]);
                }
                i += (9 + end + 3).min(rest.len());
            } else if rest.starts_with("<!") {
                i += skip_declaration(rest);
            } else if rest.starts_with("<?") {
                i += skip_past("?>", 2).unwrap_or(rest.len());
            } else if let Some(after) = rest.strip_prefix("</") {
                let Some(end) = after.find('>') else { break };
                let name = after[..end].trim();
                if let Some(at) = open.iter().rposition(|o| o.qname == name)
                    && at > 0
                {
                    scopes.truncate(open[at].scope_len);
                    open.truncate(at);
                }
                i += 2 + end + 1;
            } else {
                let Some((tag, used)) = start_tag(rest) else { break };
                i += used;
                if open.len() > MAX_DEPTH || tree.elements.len() >= MAX_ELEMENTS {
                    break;
                }
                let scope_len = scopes.len();
                for (name, value) in &tag.attrs {
                    if name == "xmlns" {
                        scopes.push((String::new(), value.clone()));
                    } else if let Some(prefix) = name.strip_prefix("xmlns:") {
                        scopes.push((prefix.to_string(), value.clone()));
                    }
                }
                let resolve = |qname: &str, default_ns: bool| -> (String, String) {
                    let (prefix, local) = match qname.split_once(':') {
                        Some((p, l)) => (p, l),
                        None if default_ns => ("", qname),
                        None => return (String::new(), qname.to_string()),
                    };
                    let ns = scopes.iter().rev().find(|(p, _)| p == prefix).map(|(_, u)| u.clone()).unwrap_or_default();
                    (ns, local.to_string())
                };
                let (ns, local) = resolve(&tag.name, true);
                let attrs = tag
                    .attrs
                    .iter()
                    .filter(|(name, _)| name != "xmlns" && !name.starts_with("xmlns:"))
                    .map(|(name, value)| {
                        let (ns, local) = resolve(name, false);
                        Attr { ns, local, value: value.clone() }
                    })
                    .collect();
                let index = tree.elements.len();
                tree.elements.push(Element { ns, local, attrs, children: Vec::new(), text: String::new() });
                if let Some(top) = open.last() {
                    tree.elements[top.element].children.push(index);
                }
                if tag.empty {
                    scopes.truncate(scope_len);
                } else {
                    open.push(Open { element: index, qname: tag.name, scope_len });
                }
            }
        }
        tree
    }

    struct StartTag {
        name: String,
        attrs: Vec<(String, String)>,
        empty: bool,
    }

    /// Reads `<name a="v" …>` or `<name …/>` at the start of `s`; the bytes it used.
    fn start_tag(s: &str) -> Option<(StartTag, usize)> {
        let bytes = s.as_bytes();
        let name_end = 1 + s[1..].find(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')?;
        let name = s[1..name_end].to_string();
        if name.is_empty() {
            return None;
        }
        let mut attrs = Vec::new();
        let mut i = name_end;
        loop {
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            match bytes.get(i)? {
                b'>' => return Some((StartTag { name, attrs, empty: false }, i + 1)),
                b'/' if bytes.get(i + 1) == Some(&b'>') => return Some((StartTag { name, attrs, empty: true }, i + 2)),
                _ => {}
            }
            let key_len = s[i..].find(|c: char| c.is_ascii_whitespace() || c == '=' || c == '>' || c == '/')?;
            if key_len == 0 {
                return None;
            }
            let key = s[i..i + key_len].to_string();
            i += key_len;
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            if bytes.get(i) != Some(&b'=') {
                return None;
            }
            i += 1;
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            let quote = *bytes.get(i)?;
            if quote != b'"' && quote != b'\'' {
                return None;
            }
            let value_len = s[i + 1..].find(quote as char)?;
            attrs.push((key, unescape(&s[i + 1..i + 1 + value_len])));
            i += value_len + 2;
        }
    }

    /// Skips `<!DOCTYPE …>` or another declaration, internal subset and quoted text included.
    fn skip_declaration(s: &str) -> usize {
        let mut brackets = 0usize;
        let mut quote: Option<u8> = None;
        for (i, &b) in s.as_bytes().iter().enumerate().skip(2) {
            match (quote, b) {
                (Some(q), _) if b == q => quote = None,
                (Some(_), _) => {}
                (None, b'"' | b'\'') => quote = Some(b),
                (None, b'[') => brackets += 1,
                (None, b']') => brackets = brackets.saturating_sub(1),
                (None, b'>') if brackets == 0 => return i + 1,
                _ => {}
            }
        }
        s.len()
    }

    /// Replaces the predefined entities and character references; leaves anything else as written.
    fn unescape(s: &str) -> String {
        if !s.contains('&') {
            return s.to_string();
        }
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(p) = rest.find('&') {
            out.push_str(&rest[..p]);
            let after = &rest[p + 1..];
            let decoded = after.find(';').filter(|&e| e <= 12).and_then(|e| Some((entity(&after[..e])?, e)));
            match decoded {
                Some((c, e)) => {
                    out.push(c);
                    rest = &after[e + 1..];
                }
                None => {
                    out.push('&');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }

    fn entity(name: &str) -> Option<char> {
        match name {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => {
                let number = name.strip_prefix('#')?;
                let code = match number.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                    None => number.parse().ok()?,
                };
                char::from_u32(code)
            }
        }
    }

    impl Tree {
        fn find(&self, ns: &str, local: &str) -> Option<&Element> {
            self.elements.iter().skip(1).find(|e| e.ns == ns && e.local == local)
        }

        fn attribute(&self, ns: &str, local: &str) -> Option<&str> {
            self.elements
                .iter()
                .flat_map(|e| &e.attrs)
                .find(|a| a.ns == ns && a.local == local)
                .map(|a| a.value.as_str())
        }

        fn child<'a>(&'a self, parent: &'a Element, ns: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
            parent.children.iter().filter_map(|&i| self.elements.get(i)).filter(move |e| e.ns == ns)
        }

        /// The `rdf:li` items of an `rdf:Alt`, `rdf:Seq` or `rdf:Bag` under `element`.
        fn items<'a>(&'a self, element: &'a Element) -> Option<Vec<&'a Element>> {
            let container = self.child(element, RDF).find(|e| matches!(e.local.as_str(), "Alt" | "Seq" | "Bag"))?;
            Some(self.child(container, RDF).filter(|e| e.local == "li").collect())
        }

        /// A property as one text: the x-default (else first) item of a container, or its text.
        pub fn text(&self, ns: &str, local: &str) -> Option<String> {
            let Some(element) = self.find(ns, local) else {
                return self.attribute(ns, local).map(str::to_string);
            };
            match self.items(element) {
                Some(items) => {
                    let default = items.iter().find(|li| {
                        li.attrs
                            .iter()
                            .any(|a| a.ns == XML && a.local == "lang" && a.value.eq_ignore_ascii_case("x-default"))
                    });
                    default.or(items.first()).map(|li| li.text.clone())
                }
                None => Some(element.text.clone()),
            }
        }

        /// A property as a list: the items of a container, or its text as one item.
        pub fn list(&self, ns: &str, local: &str) -> Option<Vec<String>> {
            let Some(element) = self.find(ns, local) else {
                return self.attribute(ns, local).map(|v| vec![v.to_string()]);
            };
            match self.items(element) {
                Some(items) => Some(items.iter().map(|li| li.text.clone()).collect()),
                None => Some(vec![element.text.clone()]),
            }
        }
    }

    /// A simple property carried over from an old packet.
    pub struct Simple {
        pub ns: &'static str,
        pub prefix: &'static str,
        pub local: &'static str,
        pub value: String,
    }

    /// What a fresh packet says.
    pub struct PacketFields {
        pub title: Option<String>,
        pub author: Option<String>,
        pub subject: Option<String>,
        pub keywords: Option<String>,
        pub creator_tool: Option<String>,
        pub producer: Option<String>,
        pub create_date: Option<String>,
        pub modify_date: String,
        pub kept: Vec<Simple>,
    }

    /// Serialises a packet with the properties of `fields`.
    pub fn write_packet(fields: &PacketFields) -> String {
        let mut body = String::new();
        let mut simple = |qname: &str, value: &Option<String>| {
            if let Some(v) = value {
                body.push_str(&format!("   <{qname}>{}</{qname}>\n", escape(v)));
            }
        };
        simple("pdf:Producer", &fields.producer);
        simple("pdf:Keywords", &fields.keywords);
        simple("xmp:CreatorTool", &fields.creator_tool);
        simple("xmp:CreateDate", &fields.create_date);
        simple("xmp:ModifyDate", &Some(fields.modify_date.clone()));
        simple("xmp:MetadataDate", &Some(fields.modify_date.clone()));
        let alt = |qname: &str, value: &Option<String>| {
            value.as_ref().map(|v| {
                format!(
                    "   <{qname}><rdf:Alt><rdf:li xml:lang=\"x-default\">{}</rdf:li></rdf:Alt></{qname}>\n",
                    escape(v)
                )
            })
        };
        body.extend(alt("dc:title", &fields.title));
        body.extend(alt("dc:description", &fields.subject));
        if let Some(author) = &fields.author {
            body.push_str(&format!(
                "   <dc:creator><rdf:Seq><rdf:li>{}</rdf:li></rdf:Seq></dc:creator>\n",
                escape(author)
            ));
        }
        let mut namespaces = format!(" xmlns:dc=\"{DC}\"\n    xmlns:xmp=\"{XMP}\"\n    xmlns:pdf=\"{PDF}\"");
        let mut declared: Vec<&str> = Vec::new();
        for kept in &fields.kept {
            if !declared.contains(&kept.prefix) {
                declared.push(kept.prefix);
                namespaces.push_str(&format!("\n    xmlns:{}=\"{}\"", kept.prefix, kept.ns));
            }
            body.push_str(&format!("   <{0}:{1}>{2}</{0}:{1}>\n", kept.prefix, kept.local, escape(&kept.value)));
        }
        format!(
            "<?xpacket begin=\"\u{FEFF}\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n\
             <x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n \
             <rdf:RDF xmlns:rdf=\"{RDF}\">\n  \
             <rdf:Description rdf:about=\"\"{namespaces}>\n\
             {body}  \
             </rdf:Description>\n \
             </rdf:RDF>\n\
             </x:xmpmeta>\n\
             <?xpacket end=\"w\"?>"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::parse_body;
    use crate::output::OutFile;
    use base64::Engine as _;
    use lopdf::content::{Content, Operation};
    use lopdf::dictionary;

    const XMP_SAMPLE: &str = r#"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>
<!DOCTYPE x [ <!ENTITY boom "boom"> ]>
<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:xap="http://ns.adobe.com/xap/1.0/" xap:CreatorTool="Writer &amp; Co"
     xmlns:pdf="http://ns.adobe.com/pdf/1.3/">
   <pdf:Producer>Old &lt;Producer&gt; &boom;</pdf:Producer>
   <xap:CreateDate>2020-01-02T03:04:05+01:00</xap:CreateDate>
  </rdf:Description>
  <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"
     xmlns:pdfaid="http://www.aiim.org/pdfa/ns/id/" pdfaid:part="1" pdfaid:conformance="B">
   <dc:title><rdf:Alt><rdf:li xml:lang="de">Alt</rdf:li><rdf:li xml:lang="x-default">Old title</rdf:li></rdf:Alt></dc:title>
   <dc:creator><rdf:Seq><rdf:li>Ann</rdf:li><rdf:li>Bob</rdf:li></rdf:Seq></dc:creator>
   <!-- a comment <dc:description> -->
   <dc:description><rdf:Alt><rdf:li xml:lang="x-default"><![CDATA[Desc <raw>]]></rdf:li></rdf:Alt></dc:description>
  </rdf:Description>
 </rdf:RDF>
</x:xmpmeta>
<?xpacket end="w"?>"#;

    /// A two-page document with an Info dictionary, an XMP packet, page-level metadata
    /// and /PieceInfo.
    fn sample_pdf(with_xmp: bool) -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
        let content = Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Td", vec![72.into(), 720.into()]),
                Operation::new("Tj", vec![Object::string_literal("Hello")]),
                Operation::new("ET", vec![]),
            ],
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_xmp = doc.add_object(Stream::new(
            dictionary! { "Type" => "Metadata", "Subtype" => "XML" },
            b"<x:xmpmeta xmlns:x='adobe:ns:meta/'>page secret</x:xmpmeta>".to_vec(),
        ));
        let mut kids = Vec::new();
        for i in 0..2 {
            let mut page = dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content_id,
                "Resources" => resources,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            };
            if i == 0 {
                page.set("Metadata", page_xmp);
                page.set("PieceInfo", dictionary! { "App" => dictionary! { "Private" => "secret" } });
            }
            kids.push(doc.add_object(page).into());
        }
        doc.objects
            .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => 2 }));
        let mut catalog = dictionary! { "Type" => "Catalog", "Pages" => pages_id };
        if with_xmp {
            let xmp = doc.add_object(Stream::new(
                dictionary! { "Type" => "Metadata", "Subtype" => "XML" },
                XMP_SAMPLE.as_bytes().to_vec(),
            ));
            catalog.set("Metadata", xmp);
        }
        catalog.set("PieceInfo", dictionary! { "App" => dictionary! { "LastModified" => "D:2020" } });
        let catalog_id = doc.add_object(catalog);
        doc.trailer.set("Root", catalog_id);
        let info = doc.add_object(dictionary! {
            "Title" => Object::string_literal("Old title"),
            "Author" => Object::string_literal("Ann"),
            "Producer" => Object::string_literal("Old producer"),
            "CreationDate" => Object::string_literal("D:20200102030405+01'00'"),
            "ModDate" => Object::string_literal("yesterday"),
            "Trapped" => Object::Name(b"False".to_vec()),
            "Department" => Object::string_literal("Sales"),
            "Revision" => 3,
        });
        doc.trailer.set("Info", info);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    fn body(pdf: &[u8], rest: &str) -> Vec<u8> {
        let data = base64::engine::general_purpose::STANDARD.encode(pdf);
        format!(r#"{{"file": {{"data": "{data}", "filename": "report.pdf"}}, {rest}}}"#).into_bytes()
    }

    async fn call(body: &[u8]) -> Result<Reply<MetadataReport>, EngineError> {
        let input: PdfJob<MetadataOptions> = parse_body(body)?;
        let ctx = Context::new();
        let prepared = MetadataRoute::prepare(input, &ctx).await?;
        MetadataRoute::run(prepared, &ctx).await
    }

    async fn read(pdf: &[u8]) -> MetadataReport {
        match call(&body(pdf, r#""action": "read""#)).await.unwrap() {
            Reply::Json(report) => report,
            Reply::Files(_) => panic!("read answered a file"),
        }
    }

    async fn file(body: &[u8]) -> OutFile {
        match call(body).await.unwrap() {
            Reply::Files(set) => set.files.into_iter().next().unwrap(),
            Reply::Json(_) => panic!("an edit answered JSON"),
        }
    }

    fn qpdf_check(bytes: &[u8]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.pdf");
        std::fs::write(&path, bytes).unwrap();
        let out = std::process::Command::new("qpdf").arg("--check").arg(&path).output().unwrap();
        assert!(out.status.success(), "qpdf --check: {}", String::from_utf8_lossy(&out.stdout));
    }

    #[tokio::test]
    async fn reads_info_and_xmp() {
        let report = read(&sample_pdf(true)).await;
        assert_eq!(report.page_count, 2);
        assert_eq!(report.version, "1.7");
        let info = &report.info;
        assert_eq!(info.title.as_deref(), Some("Old title"));
        assert_eq!(info.author.as_deref(), Some("Ann"));
        assert_eq!(info.subject, None);
        assert_eq!(info.creation_date.as_deref(), Some("2020-01-02T03:04:05+01:00"));
        assert_eq!(info.modification_date.as_deref(), Some("yesterday"));
        assert_eq!(info.trapped.as_deref(), Some("False"));
        assert_eq!(info.custom.get("Department").map(String::as_str), Some("Sales"));
        assert_eq!(info.custom.get("Revision").map(String::as_str), Some("3"));
        let xmp = &report.xmp;
        assert!(xmp.present);
        assert_eq!(xmp.bytes, XMP_SAMPLE.len() as u64);
        assert_eq!(xmp.title.as_deref(), Some("Old title"));
        assert_eq!(xmp.creator, Some(vec!["Ann".to_string(), "Bob".to_string()]));
        assert_eq!(xmp.description.as_deref(), Some("Desc <raw>"));
        // Declared entities are never expanded.
        assert_eq!(xmp.producer.as_deref(), Some("Old <Producer> &boom;"));
        assert_eq!(xmp.creator_tool.as_deref(), Some("Writer & Co"));
        assert_eq!(xmp.create_date.as_deref(), Some("2020-01-02T03:04:05+01:00"));
        assert_eq!(xmp.modify_date, None);
        assert_eq!(xmp.metadata_date, None);
    }

    #[tokio::test]
    async fn reads_a_document_without_metadata() {
        let mut doc = Document::load_mem(&sample_pdf(false)).unwrap();
        doc.trailer.remove(b"Info");
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        let report = read(&bytes).await;
        assert_eq!(report.info.title, None);
        assert!(report.info.custom.is_empty());
        assert!(!report.xmp.present);
        assert_eq!(report.xmp.bytes, 0);
    }

    #[tokio::test]
    async fn edit_round_trips_unicode_and_keeps_xmp_in_step() {
        let edit = r#""action": "edit", "set": {"title": "Überblick 第一章", "author": "Zoë <z@x> & co", "subject": "S",
            "keywords": "a, b", "creator": "Writer", "producer": null}"#;
        let out = file(&body(&sample_pdf(true), edit)).await;
        assert_eq!(out.filename, "report-metadata.pdf");
        qpdf_check(&out.bytes);
        let report = read(&out.bytes).await;
        let info = &report.info;
        assert_eq!(info.title.as_deref(), Some("Überblick 第一章"));
        assert_eq!(info.author.as_deref(), Some("Zoë <z@x> & co"));
        assert_eq!(info.subject.as_deref(), Some("S"));
        assert_eq!(info.keywords.as_deref(), Some("a, b"));
        assert_eq!(info.creator.as_deref(), Some("Writer"));
        assert_eq!(info.producer, None);
        assert_eq!(info.creation_date.as_deref(), Some("2020-01-02T03:04:05+01:00"));
        assert_eq!(info.custom.get("Department").map(String::as_str), Some("Sales"));
        let modified = info.modification_date.as_deref().unwrap();
        let modified = OffsetDateTime::parse(modified, &Rfc3339).unwrap();
        assert!((OffsetDateTime::now_utc() - modified).whole_seconds().abs() < 120);
        // The title is stored as UTF-16BE with a byte order mark.
        let doc = Document::load_mem(&out.bytes).unwrap();
        let title = info_dict(&doc).unwrap().get(b"Title").unwrap().as_str().unwrap().to_vec();
        assert!(title.starts_with(&[0xFE, 0xFF]));

        let xmp = &report.xmp;
        assert!(xmp.present);
        assert_eq!(xmp.title.as_deref(), Some("Überblick 第一章"));
        assert_eq!(xmp.creator, Some(vec!["Zoë <z@x> & co".to_string()]));
        assert_eq!(xmp.description.as_deref(), Some("S"));
        assert_eq!(xmp.keywords.as_deref(), Some("a, b"));
        assert_eq!(xmp.creator_tool.as_deref(), Some("Writer"));
        assert_eq!(xmp.producer, None);
        assert_eq!(xmp.create_date.as_deref(), Some("2020-01-02T03:04:05+01:00"));
        assert!(xmp.modify_date.is_some());
        assert_eq!(xmp.modify_date, xmp.metadata_date);
        // PDF/A identification is carried over.
        let packet = String::from_utf8(xmp_stream(&doc).unwrap().content.clone()).unwrap();
        assert!(packet.contains("<pdfaid:part>1</pdfaid:part>"), "{packet}");
        assert!(packet.contains("&lt;z@x&gt; &amp; co"), "{packet}");
    }

    #[tokio::test]
    async fn edit_without_xmp_adds_none_and_creates_info() {
        let mut doc = Document::load_mem(&sample_pdf(false)).unwrap();
        doc.trailer.remove(b"Info");
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        let out = file(&body(&bytes, r#""action": "edit", "set": {"title": "New"}, "output": "base64""#)).await;
        qpdf_check(&out.bytes);
        let report = read(&out.bytes).await;
        assert_eq!(report.info.title.as_deref(), Some("New"));
        assert!(report.info.modification_date.is_some());
        assert!(!report.xmp.present);
    }

    #[tokio::test]
    async fn strip_removes_everything() {
        let out = file(&body(&sample_pdf(true), r#""action": "strip""#)).await;
        qpdf_check(&out.bytes);
        let report = read(&out.bytes).await;
        assert_eq!(report.page_count, 2);
        let info = serde_json::to_value(&report.info).unwrap();
        for (key, value) in info.as_object().unwrap() {
            if key == "custom" {
                assert_eq!(value, &serde_json::json!({}));
            } else {
                assert!(value.is_null(), "{key} = {value}");
            }
        }
        assert!(!report.xmp.present);
        assert_eq!(report.xmp.title, None);
        let doc = Document::load_mem(&out.bytes).unwrap();
        for object in doc.objects.values() {
            let dict = match object {
                Object::Dictionary(d) => d,
                Object::Stream(s) => &s.dict,
                _ => continue,
            };
            assert!(!dict.has(b"Metadata") && !dict.has(b"PieceInfo"));
            assert!(!dict.has_type(b"Metadata"));
        }
        // The old values are gone from the bytes, not only unreferenced.
        let text = String::from_utf8_lossy(&out.bytes);
        for secret in ["Old title", "page secret", "Sales", "secret"] {
            assert!(!text.contains(secret), "{secret} is still in the file");
        }
    }

    #[tokio::test]
    async fn refuses_set_outside_edit() {
        let pdf = sample_pdf(false);
        for action in ["read", "strip"] {
            let e = call(&body(&pdf, &format!(r#""action": "{action}", "set": {{"title": "x"}}"#))).await.unwrap_err();
            assert_eq!(e.field.as_deref(), Some("/set"));
            assert_eq!(e.code, "invalid_input");
            assert_eq!(e.kind, crate::error::ErrorKind::InvalidInput);
        }
    }

    #[tokio::test]
    async fn edit_needs_a_non_empty_set() {
        let pdf = sample_pdf(false);
        for rest in [r#""action": "edit""#, r#""action": "edit", "set": {}"#, r#""action": "edit", "set": null"#] {
            let e = call(&body(&pdf, rest)).await.unwrap_err();
            assert_eq!(e.field.as_deref(), Some("/set"), "{rest}");
        }
    }

    #[tokio::test]
    async fn names_bad_fields() {
        let pdf = sample_pdf(false);
        let e = call(&body(&pdf, r#""action": "edit", "set": {"color": "red"}"#)).await.unwrap_err();
        assert_eq!(e.code, "unknown_field");
        assert_eq!(e.field.as_deref(), Some("/set/color"));
        let e = call(&body(&pdf, r#""action": "edit", "set": {"title": 5}"#)).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/set/title"));
        let e = call(&body(&pdf, r#""action": "delete""#)).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/action"));
        let e = call(br#"{"file": {"data": "aGVsbG8="}}"#).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/action"));
        let long = "x".repeat(MAX_VALUE_CHARS + 1);
        let e = call(&body(&pdf, &format!(r#""action": "edit", "set": {{"keywords": "{long}"}}"#))).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/set/keywords"));
        let e = call(&body(b"not a pdf", r#""action": "read""#)).await.unwrap_err();
        assert_eq!(e.code, "not_a_pdf");
        assert_eq!(e.field.as_deref(), Some("/file"));
    }

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

    #[test]
    fn xml_reader_survives_hostile_packets() {
        let deep = "<a>".repeat(100_000);
        let tree = xmp::parse(&deep);
        assert_eq!(tree.text(xmp::DC, "title"), None);
        for junk in
            ["<", "<a", "<a b", "<a b=", "<a b='", "</", "<!", "<![CDATA[", "<?", "&", "&#xFFFFFFFF;", "<a/><b>"]
        {
            let _ = xmp::parse(junk);
        }
        let tree = xmp::parse(
            "<r xmlns:dc='http://purl.org/dc/elements/1.1/'><dc:title>&#x4E2D;&#20013;&bogus;</dc:title></r>",
        );
        assert_eq!(tree.text(xmp::DC, "title").as_deref(), Some("中中&bogus;"));
        assert_eq!(xmp::decode_packet(&[0xFE, 0xFF, 0, b'<', 0, b'a']), "<a");
    }

    #[tokio::test]
    async fn oversize_xmp_is_present_but_unread() {
        let mut doc = Document::load_mem(&sample_pdf(true)).unwrap();
        let big = format!("{}{}", XMP_SAMPLE, " ".repeat(MAX_XMP_BYTES));
        write_xmp(&mut doc, big.into_bytes()).unwrap();
        let report = read_report(&doc, 2);
        assert!(report.xmp.present);
        assert_eq!(report.xmp.title, None);
        assert!(report.xmp.bytes > MAX_XMP_BYTES as u64);
    }

    /// The corpus files that carry metadata read as expected, and edit and strip of every
    /// one that opens pass `qpdf --check`.
    #[tokio::test]
    async fn corpus_metadata_reads() {
        let path = std::path::Path::new("/work/shared/corpus/pdf/sample-files/crazyones-pdfa.pdf");
        let Ok(bytes) = std::fs::read(path) else { return };
        let report = read(&bytes).await;
        assert!(report.xmp.present);
        let out = file(&body(&bytes, r#""action": "edit", "set": {"title": "Crazy"}"#)).await;
        qpdf_check(&out.bytes);
        let after = read(&out.bytes).await;
        assert_eq!(after.xmp.title.as_deref(), Some("Crazy"));
        assert_eq!(after.info.title.as_deref(), Some("Crazy"));
    }
}
