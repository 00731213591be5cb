//! `POST /v1/pdf/metadata`: read, edit or strip a PDF's document metadata (the Info
//! dictionary and the XMP packet).
//!
//! This file is the route and the pipeline step: their options and checks. Reading,
//! editing and stripping are [`crate::pdf::metadata`]'s, the XMP packets
//! [`crate::pdf::xmp`]'s.

use lopdf::Document;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{OutputMode, Reply};
use crate::pdf::SourcePdf;
use crate::pdf::metadata::{edit, read_report, strip};
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::price::Price;

pub use crate::pdf::metadata::{InfoReport, MetadataReport, MetadataSet, XmpReport};

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

/// Longest value `set` takes, in characters: far above any real title, far below a
/// value that would only bloat the file.
const MAX_VALUE_CHARS: usize = 32_768;

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
                MetadataAction::Edit => edit(&mut source.doc, &set, crate::pdf::dates::now())?,
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
            MetadataAction::Edit => edit(&mut doc, &set, crate::pdf::dates::now())?,
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
    holds_secrets: false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::parse_body;
    use crate::output::OutFile;
    use crate::pdf::metadata::{MAX_XMP_BYTES, info_dict, write_xmp, xmp_stream};
    use base64::Engine as _;
    use lopdf::content::{Content, Operation};
    use lopdf::dictionary;
    use lopdf::{Object, Stream};
    use time::OffsetDateTime;
    use time::format_description::well_known::Rfc3339;

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
