//! `POST /v1/pdf/inspect`: what a PDF holds (page sizes, text layer or scan, forms,
//! attachments, JavaScript, bookmarks) without changing it.
//!
//! Every walk of the document's graph (name trees, outlines, form fields, action chains,
//! form XObjects) keeps a visited set and a depth or node cap: hostile files have cycles.

use std::collections::{BTreeSet, HashMap, HashSet};

use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::Reply;
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Request of `/v1/pdf/inspect`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectInput {
    /// The PDF.
    pub file: FileInput,
}

/// What the document holds.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct InspectReport {
    /// Number of pages.
    pub page_count: u32,
    /// Every page, in order.
    pub pages: Vec<PageReport>,
    /// Whether the input was encrypted (it opened with the password given, or an empty one).
    pub encrypted: bool,
    /// PDF version: the header's, or the catalog's /Version when that is later.
    pub version: String,
    /// Whether the file starts with a linearization dictionary ("fast web view").
    pub linearized: bool,
    /// Interactive form.
    pub forms: FormsReport,
    /// Embedded files.
    pub attachments: AttachmentsReport,
    /// JavaScript the document carries.
    pub javascript: JavaScriptReport,
    /// The outline (bookmarks).
    pub bookmarks: BookmarksReport,
    /// Info /Producer (text from the file).
    pub producer: Option<String>,
    /// Info /Title (text from the file).
    pub title: Option<String>,
    /// The encryption the input used; null when it was not encrypted.
    pub encryption: Option<EncryptionReport>,
    /// Parts of the file that could not be read fully (the report says what was read).
    pub warnings: Vec<String>,
}

/// One page.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PageReport {
    /// 1-based page number.
    pub number: u32,
    /// Visible width in points (crop box, as displayed after rotation).
    pub width_pt: f64,
    /// Visible height in points (crop box, as displayed after rotation).
    pub height_pt: f64,
    /// Clockwise rotation: 0, 90, 180 or 270.
    pub rotation: i64,
    /// Whether the page's content shows text (a text layer, visible or not).
    pub has_text: bool,
    /// Images drawn: image XObjects (in form XObjects too) and inline images.
    pub images: u64,
    /// `text`, `scan` (images and no text), `mixed` (both) or `empty` (neither).
    pub kind: PageKind,
}

/// What a page is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PageKind {
    /// Text and no images.
    Text,
    /// Images and no text: a scan without a text layer.
    Scan,
    /// Text and images.
    Mixed,
    /// Neither text nor images (blank, or vector drawing only).
    Empty,
}

/// The interactive form.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct FormsReport {
    /// Terminal fields (the ones that hold a value).
    pub fields: u64,
    /// Whether the catalog has an /AcroForm dictionary.
    pub acroform: bool,
    /// Whether the form carries an XFA form.
    pub xfa: bool,
    /// Signature fields, signed or not.
    pub signatures: u64,
}

/// Embedded files.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentsReport {
    /// Number of embedded files.
    pub count: u64,
    /// The files.
    pub files: Vec<AttachmentReport>,
}

/// One embedded file.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentReport {
    /// File name (text from the file).
    pub name: String,
    /// Size in bytes, when the file states it or it is stored uncompressed.
    pub bytes: Option<u64>,
    /// Description (text from the file).
    pub description: Option<String>,
    /// Where it is attached: the document's EmbeddedFiles list or a page's file attachment annotation.
    pub source: AttachmentSource,
    /// For an annotation: its page.
    pub page: Option<u32>,
}

/// Where an embedded file is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentSource {
    /// The catalog's EmbeddedFiles name tree.
    EmbeddedFiles,
    /// A FileAttachment annotation.
    Annotation,
}

/// JavaScript found.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct JavaScriptReport {
    /// Whether there is any.
    pub present: bool,
    /// Where it was found.
    pub locations: BTreeSet<JsLocation>,
}

/// Where JavaScript was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JsLocation {
    /// The catalog's /Names /JavaScript tree (runs when the document opens).
    NamesTree,
    /// The catalog's /OpenAction.
    OpenAction,
    /// Document or page additional actions (/AA: open, close, save, print…).
    AdditionalActions,
    /// An annotation's action (a link, for instance).
    Annotation,
    /// A form field's actions (keystroke, format, validate, calculate) or its widget's.
    FormField,
    /// A bookmark's action.
    Outline,
}

/// The outline.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct BookmarksReport {
    /// Outline items, at every level.
    pub count: u64,
    /// Levels: 0 without bookmarks, 1 when there are no nested ones.
    pub depth: u32,
}

/// How the input was encrypted. The document is decrypted when loaded, so this is what
/// the decryption kept.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EncryptionReport {
    /// Security handler (always `Standard`, the password handler: no other one opens).
    pub filter: String,
    /// /V: the algorithm version.
    pub v: i64,
    /// /R: the standard handler's revision.
    pub r: i64,
    /// Length of the file key in bits.
    pub key_bits: Option<u32>,
    /// Cipher of the streams: `RC4`, `AESV2` (AES-128), `AESV3` (AES-256) or `Identity`.
    pub method: Option<String>,
    /// Whether the XMP metadata was encrypted too.
    pub encrypt_metadata: bool,
}

/// A checked inspect call.
pub struct Inspect {
    source: SourcePdf,
}

/// The route.
pub struct InspectRoute;

impl Route for InspectRoute {
    type Input = InspectInput;
    type Prepared = Inspect;
    type Output = InspectReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/inspect",
        operation: "inspect_pdf_document",
        family: Family::Docs,
        summary: "Page sizes, text layer or scan, forms, attachments, JavaScript, bookmarks",
        description: "Reports what a PDF holds without changing it: each page's visible size, rotation, whether it has \
            text and how many images it draws (text, scan, mixed or empty), encryption, version, linearization, form \
            fields and signatures, embedded files, where JavaScript hides (document, pages, annotations, fields, \
            bookmarks) and the outline's size. Text in the answer comes from the file.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: InspectInput, ctx: &Context) -> Result<Inspect, EngineError> {
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        Ok(Inspect { source })
    }

    fn quote(call: &Inspect) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: Inspect, _ctx: &Context) -> Result<Reply<InspectReport>, EngineError> {
        blocking(move || Ok(Reply::Json(inspect(&call.source.doc)))).await
    }
}

/// Most decompressed content scanned for one page, its form XObjects included.
const PAGE_CONTENT_LIMIT: usize = 32 * 1024 * 1024;
/// Most decompressed content scanned for the whole document.
const TOTAL_CONTENT_LIMIT: usize = 512 * 1024 * 1024;
/// Form XObjects nested deeper than this are not followed.
const MAX_FORM_DEPTH: usize = 12;
/// Name trees and field trees nested deeper than this are not followed.
const MAX_TREE_DEPTH: usize = 64;
/// Most nodes visited in one walk (a name tree, the outline, the fields, the annotations).
const MAX_NODES: usize = 500_000;
/// Most action dictionaries looked at in all.
const MAX_ACTIONS: usize = 1_000_000;
/// Most warnings listed.
const MAX_WARNINGS: usize = 20;

/// The report's warnings.
type Notes = crate::pdf::Warnings<MAX_WARNINGS>;

/// The whole report.
pub fn inspect(doc: &Document) -> InspectReport {
    let mut notes = Notes::default();
    let catalog = doc.catalog().ok();
    let page_ids: Vec<ObjectId> = doc.page_iter().collect();

    let mut scanner = Scanner::new(doc);
    let mut pages = Vec::with_capacity(page_ids.len());
    for (index, &page_id) in page_ids.iter().enumerate() {
        let number = index as u32 + 1;
        let crop = pdf::crop_box(doc, page_id);
        let rotation = pdf::rotation(doc, page_id);
        let (width, height) =
            if rotation % 180 == 90 { (crop.height(), crop.width()) } else { (crop.width(), crop.height()) };
        let drawn = scanner.scan_page(page_id, number, &mut notes);
        let kind = match (drawn.text, drawn.images > 0) {
            (true, false) => PageKind::Text,
            (false, true) => PageKind::Scan,
            (true, true) => PageKind::Mixed,
            (false, false) => PageKind::Empty,
        };
        pages.push(PageReport {
            number,
            width_pt: round2(width),
            height_pt: round2(height),
            rotation,
            has_text: drawn.text,
            images: drawn.images,
            kind,
        });
    }

    let mut actions = ActionFinder::new(doc);
    let mut js = BTreeSet::new();
    let mut attachments = Vec::new();
    let mut forms = FormsReport::default();
    let mut bookmarks = BookmarksReport::default();
    // File specifications already listed: one may sit both in the tree and in an annotation.
    let mut specs = HashSet::new();
    if let Some(catalog) = catalog {
        let names = pdf::dict_at(doc, catalog, b"Names");
        if let Some(tree) = names.and_then(|n| n.get(b"JavaScript").ok())
            && !name_tree(doc, tree, &mut notes).is_empty()
        {
            js.insert(JsLocation::NamesTree);
        }
        if let Some(open) = catalog.get(b"OpenAction").ok().filter(|o| is_dict(doc, o))
            && actions.runs_js(open)
        {
            js.insert(JsLocation::OpenAction);
        }
        if catalog.get(b"AA").is_ok_and(|aa| actions.any_runs_js(aa)) {
            js.insert(JsLocation::AdditionalActions);
        }
        if let Some(tree) = names.and_then(|n| n.get(b"EmbeddedFiles").ok()) {
            for (key, value) in name_tree(doc, tree, &mut notes) {
                if let Ok((Some(id), _)) = doc.dereference(value)
                    && !specs.insert(id)
                {
                    continue;
                }
                if let Some(file) = file_spec(doc, value, Some(key), AttachmentSource::EmbeddedFiles, None) {
                    attachments.push(file);
                }
            }
        }
        if let Some(acroform) = pdf::dict_at(doc, catalog, b"AcroForm") {
            forms = form_fields(doc, acroform, &mut actions, &mut js, &mut notes);
        }
        if let Some(outlines) = pdf::dict_at(doc, catalog, b"Outlines") {
            bookmarks = outline(doc, outlines, &mut actions, &mut js, &mut notes);
        }
    }
    annotations(doc, &page_ids, &mut actions, &mut js, &mut attachments, &mut specs, &mut notes);
    if actions.exhausted {
        notes.push(format!("more than {MAX_ACTIONS} actions; the rest were not checked for JavaScript"));
    }

    let info = pdf::dict_at(doc, &doc.trailer, b"Info");
    let info_text = |key: &[u8]| info.and_then(|i| i.get(key).ok()).and_then(|v| pdf::text_string(doc, v));
    InspectReport {
        page_count: page_ids.len() as u32,
        pages,
        encrypted: doc.was_encrypted(),
        version: version(doc, catalog),
        linearized: doc.linearization.is_some(),
        forms,
        attachments: AttachmentsReport { count: attachments.len() as u64, files: attachments },
        javascript: JavaScriptReport { present: !js.is_empty(), locations: js },
        bookmarks,
        producer: info_text(b"Producer"),
        title: info_text(b"Title"),
        encryption: encryption(doc),
        warnings: notes.finish(),
    }
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

fn is_dict(doc: &Document, object: &Object) -> bool {
    doc.dereference(object).is_ok_and(|(_, o)| o.as_dict().is_ok())
}

fn array_at<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Vec<Object>> {
    doc.dereference(dict.get(key).ok()?).ok()?.1.as_array().ok()
}

fn name_at<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a [u8]> {
    doc.dereference(dict.get(key).ok()?).ok()?.1.as_name().ok()
}

fn version(doc: &Document, catalog: Option<&Dictionary>) -> String {
    let parse = |v: &str| -> Option<(u32, u32)> {
        let (major, minor) = v.trim().split_once('.')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    };
    let header = doc.version.clone();
    let declared = catalog
        .and_then(|c| name_at(doc, c, b"Version"))
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .filter(|v| parse(v).is_some());
    match (declared, parse(&header)) {
        (Some(declared), Some(h)) if parse(&declared).is_some_and(|d| d > h) => declared,
        (Some(declared), None) => declared,
        _ => header,
    }
}

fn encryption(doc: &Document) -> Option<EncryptionReport> {
    let state = doc.encryption_state.as_ref()?;
    let key_bits = match state.file_encryption_key().len() {
        0 => state.key_length().and_then(|bits| u32::try_from(bits).ok()),
        bytes => u32::try_from(bytes * 8).ok(),
    };
    let method = if state.version() < 4 {
        Some("RC4".to_string())
    } else {
        let name = state.default_stream_filter();
        if name == b"Identity" {
            Some("Identity".to_string())
        } else {
            state.crypt_filters().get(name).map(|f| String::from_utf8_lossy(f.method()).into_owned())
        }
    };
    Some(EncryptionReport {
        filter: "Standard".to_string(),
        v: state.version(),
        r: state.revision(),
        key_bits,
        method,
        encrypt_metadata: state.encrypt_metadata(),
    })
}

// ---------------------------------------------------------------------------------------
// page content

/// What a content stream draws.
#[derive(Clone, Copy, Debug, Default)]
struct Drawn {
    text: bool,
    images: u64,
}

impl Drawn {
    fn add(&mut self, other: Drawn) {
        self.text |= other.text;
        self.images = self.images.saturating_add(other.images);
    }
}

/// Scans page content, remembering form XObjects and pages already scanned: many
/// pages share a letterhead form or the very same content.
struct Scanner<'a> {
    doc: &'a Document,
    total_left: usize,
    page_left: usize,
    page_number: u32,
    forms: HashMap<ObjectId, Drawn>,
    active: HashSet<ObjectId>,
    pages: HashMap<(Vec<ObjectId>, usize), Drawn>,
}

impl<'a> Scanner<'a> {
    fn new(doc: &'a Document) -> Scanner<'a> {
        Scanner {
            doc,
            total_left: TOTAL_CONTENT_LIMIT,
            page_left: 0,
            page_number: 0,
            forms: HashMap::new(),
            active: HashSet::new(),
            pages: HashMap::new(),
        }
    }

    fn scan_page(&mut self, page_id: ObjectId, number: u32, notes: &mut Notes) -> Drawn {
        let doc = self.doc;
        let resources = pdf::inherited(doc, page_id, b"Resources")
            .and_then(|r| doc.dereference(r).ok())
            .and_then(|(_, r)| r.as_dict().ok());
        let contents = doc.get_page_contents(page_id);
        // The same streams with the same resources draw the same thing.
        let key = (contents.clone(), resources.map_or(0, |r| r as *const Dictionary as usize));
        if let Some(drawn) = self.pages.get(&key) {
            return *drawn;
        }
        self.page_number = number;
        self.page_left = PAGE_CONTENT_LIMIT;
        let mut content = Vec::new();
        for id in contents {
            let Ok(stream) = doc.get_object(id).and_then(Object::as_stream) else { continue };
            match self.decode(stream, notes) {
                Some(bytes) => {
                    content.extend_from_slice(&bytes);
                    content.push(b'\n');
                }
                None if self.page_left == 0 => break,
                None => {}
            }
        }
        let drawn = self.scan_ops(&content, resources, 0, notes);
        self.pages.insert(key, drawn);
        drawn
    }

    /// A stream's decoded bytes, within what is left of the page's and the document's budget.
    fn decode(&mut self, stream: &Stream, notes: &mut Notes) -> Option<Vec<u8>> {
        // Out of budget: the warning was given when it ran out.
        if self.total_left == 0 || self.page_left == 0 {
            return None;
        }
        let allowed = self.page_left.min(self.total_left);
        match stream.get_plain_content_with_limit(allowed) {
            Ok(bytes) => {
                self.page_left -= bytes.len().min(self.page_left);
                self.total_left -= bytes.len().min(self.total_left);
                Some(bytes)
            }
            Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. })) => {
                if allowed == self.total_left {
                    notes.push(format!(
                        "page {}: the document's content is larger than {} MiB in all; from here on pages were not scanned",
                        self.page_number,
                        TOTAL_CONTENT_LIMIT >> 20
                    ));
                    self.total_left = 0;
                } else {
                    notes.push(format!(
                        "page {}: the content is larger than {} MiB; the part past the limit was not scanned",
                        self.page_number,
                        PAGE_CONTENT_LIMIT >> 20
                    ));
                }
                self.page_left = 0;
                None
            }
            Err(_) => {
                notes.push(format!("page {}: a content stream could not be decoded and was skipped", self.page_number));
                None
            }
        }
    }

    fn scan_ops(
        &mut self,
        content: &[u8],
        resources: Option<&'a Dictionary>,
        depth: usize,
        notes: &mut Notes,
    ) -> Drawn {
        let mut drawn = Drawn::default();
        for operation in Content::decode_iter(content) {
            let Ok(operation) = operation else {
                notes.push(format!(
                    "page {}: the content could not be parsed to its end; the rest was read as empty",
                    self.page_number
                ));
                break;
            };
            match operation.operator.as_str() {
                "Tj" | "TJ" | "'" | "\"" => drawn.text |= shows_text(&operation.operands),
                "BI" => drawn.images = drawn.images.saturating_add(1),
                "Do" => {
                    if let Some(name) = operation.operands.first().and_then(|o| o.as_name().ok()) {
                        drawn.add(self.draw(name, resources, depth, notes));
                    }
                }
                _ => {}
            }
        }
        drawn
    }

    /// What `Do name` draws.
    fn draw(&mut self, name: &[u8], resources: Option<&'a Dictionary>, depth: usize, notes: &mut Notes) -> Drawn {
        let doc = self.doc;
        let Some(xobjects) = resources.and_then(|r| pdf::dict_at(doc, r, b"XObject")) else { return Drawn::default() };
        let Some((id, stream)) = xobjects
            .get(name)
            .ok()
            .and_then(|o| doc.dereference(o).ok())
            .and_then(|(id, o)| Some((id, o.as_stream().ok()?)))
        else {
            return Drawn::default();
        };
        match name_at(doc, &stream.dict, b"Subtype") {
            Some(b"Image") => Drawn { text: false, images: 1 },
            Some(b"Form") if depth < MAX_FORM_DEPTH => {
                if let Some(id) = id {
                    if let Some(drawn) = self.forms.get(&id) {
                        return *drawn;
                    }
                    if !self.active.insert(id) {
                        return Drawn::default();
                    }
                }
                // A form without resources uses its parent's (older files rely on it).
                let own = pdf::dict_at(doc, &stream.dict, b"Resources").or(resources);
                let decoded = self.decode(stream, notes);
                let drawn = decoded.as_ref().map(|bytes| self.scan_ops(bytes, own, depth + 1, notes));
                if let Some(id) = id {
                    self.active.remove(&id);
                    // A form left unread for want of budget may still be read on a later page.
                    if let Some(drawn) = drawn {
                        self.forms.insert(id, drawn);
                    }
                }
                drawn.unwrap_or_default()
            }
            _ => Drawn::default(),
        }
    }
}

/// Whether a text-showing operation's operands hold a non-empty string.
fn shows_text(operands: &[Object]) -> bool {
    operands.iter().any(|o| match o {
        Object::String(bytes, _) => !bytes.is_empty(),
        Object::Array(items) => items.iter().any(|i| matches!(i, Object::String(b, _) if !b.is_empty())),
        _ => false,
    })
}

// ---------------------------------------------------------------------------------------
// document structure

/// The entries of a name tree, keys decoded as text.
fn name_tree<'a>(doc: &'a Document, root: &'a Object, notes: &mut Notes) -> Vec<(String, &'a Object)> {
    let mut entries = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(root, 0usize)];
    let mut visited = 0usize;
    while let Some((node, depth)) = stack.pop() {
        visited += 1;
        if visited > MAX_NODES || entries.len() >= MAX_NODES {
            notes.push(format!("a name tree has more than {MAX_NODES} nodes; the rest was not read"));
            break;
        }
        let Ok((id, object)) = doc.dereference(node) else { continue };
        if id.is_some_and(|id| !seen.insert(id)) {
            continue;
        }
        let Ok(dict) = object.as_dict() else { continue };
        if let Some(names) = array_at(doc, dict, b"Names") {
            for pair in names.chunks_exact(2) {
                if let [key, value] = pair {
                    entries.push((pdf::text_string(doc, key).unwrap_or_default(), value));
                }
            }
        }
        if depth < MAX_TREE_DEPTH
            && let Some(kids) = array_at(doc, dict, b"Kids")
        {
            stack.extend(kids.iter().rev().map(|kid| (kid, depth + 1)));
        }
    }
    entries
}

/// An attachment from a file specification (a dictionary, or a plain file name string).
fn file_spec(
    doc: &Document,
    spec: &Object,
    fallback_name: Option<String>,
    source: AttachmentSource,
    page: Option<u32>,
) -> Option<AttachmentReport> {
    match doc.dereference(spec).ok()?.1 {
        Object::String(..) => Some(AttachmentReport {
            name: pdf::text_string(doc, spec).unwrap_or_default(),
            bytes: None,
            description: None,
            source,
            page,
        }),
        Object::Dictionary(dict) => {
            let text = |key: &[u8]| dict.get(key).ok().and_then(|v| pdf::text_string(doc, v)).filter(|t| !t.is_empty());
            let name = text(b"UF")
                .or_else(|| text(b"F"))
                .or_else(|| text(b"Unix"))
                .or_else(|| text(b"Mac"))
                .or_else(|| text(b"DOS"))
                .or(fallback_name)
                .unwrap_or_default();
            let stream = pdf::dict_at(doc, dict, b"EF").and_then(|ef| {
                let file = ef.get(b"UF").or_else(|_| ef.get(b"F")).ok()?;
                doc.dereference(file).ok()?.1.as_stream().ok()
            });
            Some(AttachmentReport {
                name,
                bytes: stream.and_then(|s| file_size(doc, s)),
                description: text(b"Desc"),
                source,
                page,
            })
        }
        _ => None,
    }
}

/// An embedded file's size: /Params /Size, /DL, or the stored length when unfiltered.
fn file_size(doc: &Document, stream: &Stream) -> Option<u64> {
    let int = |dict: &Dictionary, key: &[u8]| {
        dict.get(key)
            .ok()
            .and_then(|v| doc.dereference(v).ok())
            .and_then(|(_, v)| v.as_i64().ok())
            .and_then(|n| u64::try_from(n).ok())
    };
    pdf::dict_at(doc, &stream.dict, b"Params")
        .and_then(|p| int(p, b"Size"))
        .or_else(|| int(&stream.dict, b"DL"))
        .or_else(|| (!stream.dict.has(b"Filter")).then_some(stream.content.len() as u64))
}

/// Finds JavaScript in actions, following /Next chains; remembers each action object's answer.
struct ActionFinder<'a> {
    doc: &'a Document,
    known: HashMap<ObjectId, bool>,
    steps: usize,
    exhausted: bool,
}

impl<'a> ActionFinder<'a> {
    fn new(doc: &'a Document) -> ActionFinder<'a> {
        ActionFinder { doc, known: HashMap::new(), steps: 0, exhausted: false }
    }

    /// Whether the action (or one it chains to) runs JavaScript.
    fn runs_js(&mut self, action: &Object) -> bool {
        self.action(action, 0)
    }

    /// Whether any action of an additional-actions dictionary (/AA) runs JavaScript.
    fn any_runs_js(&mut self, aa: &Object) -> bool {
        let doc = self.doc;
        let Some(dict) = doc.dereference(aa).ok().and_then(|(_, o)| o.as_dict().ok()) else { return false };
        dict.iter().fold(false, |found, (_, action)| self.action(action, 0) || found)
    }

    fn action(&mut self, object: &Object, depth: usize) -> bool {
        if depth > MAX_TREE_DEPTH || self.steps >= MAX_ACTIONS {
            self.exhausted |= self.steps >= MAX_ACTIONS;
            return false;
        }
        self.steps += 1;
        let doc = self.doc;
        let Ok((id, target)) = doc.dereference(object) else { return false };
        if let Some(id) = id {
            if let Some(&known) = self.known.get(&id) {
                return known;
            }
            // In progress: a cycle back here finds nothing new.
            self.known.insert(id, false);
        }
        let found = match target {
            Object::Dictionary(dict) => {
                is_js_action(doc, dict) || dict.get(b"Next").is_ok_and(|next| self.action(next, depth + 1))
            }
            // /Next may be an array of actions.
            Object::Array(items) => items.iter().any(|item| self.action(item, depth + 1)),
            _ => false,
        };
        if let Some(id) = id {
            self.known.insert(id, found);
        }
        found
    }
}

/// A JavaScript action, an action carrying a /JS script (renditions), or a `javascript:` URI.
fn is_js_action(doc: &Document, action: &Dictionary) -> bool {
    let kind = name_at(doc, action, b"S");
    if kind == Some(b"JavaScript") || action.has(b"JS") {
        return true;
    }
    kind == Some(b"URI")
        && action
            .get(b"URI")
            .ok()
            .and_then(|uri| pdf::text_string(doc, uri))
            .is_some_and(|uri| uri.trim_start().to_ascii_lowercase().starts_with("javascript:"))
}

/// Counts terminal and signature fields, looking for field JavaScript on the way.
fn form_fields(
    doc: &Document,
    acroform: &Dictionary,
    actions: &mut ActionFinder,
    js: &mut BTreeSet<JsLocation>,
    notes: &mut Notes,
) -> FormsReport {
    let mut report = FormsReport {
        acroform: true,
        xfa: acroform.get(b"XFA").is_ok_and(|x| !matches!(doc.dereference(x), Ok((_, Object::Null)) | Err(_))),
        ..FormsReport::default()
    };
    let Some(roots) = array_at(doc, acroform, b"Fields") else { return report };
    let mut seen = HashSet::new();
    let mut stack: Vec<(&Object, usize, Option<&[u8]>)> = roots.iter().rev().map(|f| (f, 0, None)).collect();
    let mut visited = 0usize;
    while let Some((node, depth, inherited_type)) = stack.pop() {
        visited += 1;
        if visited > MAX_NODES {
            notes.push(format!("the form has more than {MAX_NODES} fields; the rest were not counted"));
            break;
        }
        let Ok((id, object)) = doc.dereference(node) else { continue };
        if id.is_some_and(|id| !seen.insert(id)) {
            continue;
        }
        let Ok(field) = object.as_dict() else { continue };
        let field_type = name_at(doc, field, b"FT").or(inherited_type);
        if has_js(field, actions) {
            js.insert(JsLocation::FormField);
        }
        let mut children = Vec::new();
        for kid in array_at(doc, field, b"Kids").map(Vec::as_slice).unwrap_or_default() {
            let Ok((kid_id, kid_object)) = doc.dereference(kid) else { continue };
            // A kid already met is a cycle back up the tree, not a child.
            if kid_id.is_some_and(|id| seen.contains(&id)) {
                continue;
            }
            let Ok(kid_dict) = kid_object.as_dict() else { continue };
            // A kid with a name (or kids of its own) is a field; one without is its widget.
            if kid_dict.has(b"T") || kid_dict.has(b"Kids") {
                children.push(kid);
            } else if has_js(kid_dict, actions) {
                js.insert(JsLocation::FormField);
            }
        }
        if children.is_empty() {
            report.fields += 1;
            if field_type == Some(b"Sig") {
                report.signatures += 1;
            }
        } else if depth < MAX_TREE_DEPTH {
            stack.extend(children.into_iter().rev().map(|kid| (kid, depth + 1, field_type)));
        }
    }
    report
}

/// Whether a dictionary's /A or /AA runs JavaScript.
fn has_js(dict: &Dictionary, actions: &mut ActionFinder) -> bool {
    let action = dict.get(b"A").is_ok_and(|a| actions.runs_js(a));
    let additional = dict.get(b"AA").is_ok_and(|aa| actions.any_runs_js(aa));
    action || additional
}

/// Counts outline items and levels, looking for bookmark JavaScript on the way.
fn outline(
    doc: &Document,
    outlines: &Dictionary,
    actions: &mut ActionFinder,
    js: &mut BTreeSet<JsLocation>,
    notes: &mut Notes,
) -> BookmarksReport {
    let mut report = BookmarksReport::default();
    let mut seen = HashSet::new();
    let mut stack: Vec<(&Object, u32)> = outlines.get(b"First").ok().map(|first| (first, 1)).into_iter().collect();
    'levels: while let Some((first, level)) = stack.pop() {
        let mut current = Some(first);
        while let Some(node) = current {
            if report.count >= MAX_NODES as u64 {
                notes.push(format!("the outline has more than {MAX_NODES} items; the rest were not counted"));
                break 'levels;
            }
            let Ok((id, object)) = doc.dereference(node) else { break };
            if id.is_some_and(|id| !seen.insert(id)) {
                break;
            }
            let Ok(item) = object.as_dict() else { break };
            report.count += 1;
            report.depth = report.depth.max(level);
            if item.get(b"A").is_ok_and(|a| actions.runs_js(a)) {
                js.insert(JsLocation::Outline);
            }
            if let Ok(child) = item.get(b"First") {
                stack.push((child, level.saturating_add(1)));
            }
            current = item.get(b"Next").ok();
        }
    }
    report
}

/// Walks every page's additional actions and annotations: file attachments, and
/// JavaScript in annotation and widget actions.
fn annotations(
    doc: &Document,
    page_ids: &[ObjectId],
    actions: &mut ActionFinder,
    js: &mut BTreeSet<JsLocation>,
    attachments: &mut Vec<AttachmentReport>,
    specs: &mut HashSet<ObjectId>,
    notes: &mut Notes,
) {
    let mut seen = HashSet::new();
    let mut visited = 0usize;
    for (index, &page_id) in page_ids.iter().enumerate() {
        let Ok(page) = doc.get_dictionary(page_id) else { continue };
        if page.get(b"AA").is_ok_and(|aa| actions.any_runs_js(aa)) {
            js.insert(JsLocation::AdditionalActions);
        }
        let Some(list) = page.get(b"Annots").ok().and_then(|a| doc.dereference(a).ok()) else { continue };
        // Pages sharing one /Annots array are read once.
        if list.0.is_some_and(|id| !seen.insert(id)) {
            continue;
        }
        let Ok(list) = list.1.as_array() else { continue };
        for annotation in list {
            visited += 1;
            if visited > MAX_NODES {
                notes.push(format!("the document has more than {MAX_NODES} annotations; the rest were not read"));
                return;
            }
            let Ok((id, object)) = doc.dereference(annotation) else { continue };
            if id.is_some_and(|id| !seen.insert(id)) {
                continue;
            }
            let Ok(dict) = object.as_dict() else { continue };
            let subtype = name_at(doc, dict, b"Subtype");
            if has_js(dict, actions) {
                js.insert(if subtype == Some(b"Widget") { JsLocation::FormField } else { JsLocation::Annotation });
            }
            if subtype == Some(b"FileAttachment") {
                let spec = dict.get(b"FS").ok();
                let file = spec.and_then(|fs| {
                    if let Ok((Some(spec_id), _)) = doc.dereference(fs)
                        && !specs.insert(spec_id)
                    {
                        return None;
                    }
                    file_spec(doc, fs, None, AttachmentSource::Annotation, Some(index as u32 + 1))
                });
                if let Some(mut file) = file {
                    if file.description.is_none() {
                        file.description = dict.get(b"Contents").ok().and_then(|c| pdf::text_string(doc, c));
                    }
                    attachments.push(file);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::parse_body;
    use base64::Engine as _;
    use lopdf::content::Operation;
    use lopdf::{StringFormat, dictionary};

    fn text_content(text: &str) -> Vec<u8> {
        Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Tj", vec![Object::string_literal(text)]),
                Operation::new("ET", vec![]),
            ],
        }
        .encode()
        .unwrap()
    }

    fn js_action(doc: &mut Document, script: &str) -> ObjectId {
        doc.add_object(dictionary! { "S" => "JavaScript", "JS" => Object::string_literal(script) })
    }

    /// Four pages: text (rotated 90, cropped), image only, text drawn through a form
    /// XObject with an image (and a form that draws itself), and a blank page. Plus an
    /// embedded file, a file attachment annotation, JavaScript in the OpenAction and a
    /// field, an outline with children (and a cycle), and an AcroForm.
    fn sample() -> Document {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let image = doc.add_object(Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 1, "Height" => 1,
            "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8 },
            vec![0x80],
        ));
        let form_id = doc.new_object_id();
        let form_content = b"q /Im1 Do Q BT /F1 10 Tf (in a form) Tj ET /Fm1 Do".to_vec();
        doc.objects.insert(
            form_id,
            Object::Stream(Stream::new(
                dictionary! { "Type" => "XObject", "Subtype" => "Form", "BBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
                    "Resources" => dictionary! { "Font" => dictionary! { "F1" => font },
                        "XObject" => dictionary! { "Im1" => image, "Fm1" => form_id } } },
                form_content,
            )),
        );
        let resources = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font },
            "XObject" => dictionary! { "Im1" => image, "Fm1" => form_id },
        });
        let contents = [
            text_content("Hello"),
            b"q 100 0 0 100 0 0 cm /Im1 Do Q BI /W 1 /H 1 /BPC 8 /CS /G ID \x80 EI".to_vec(),
            b"/Fm1 Do /Missing Do".to_vec(),
            b"BT () Tj ET".to_vec(),
        ];
        let js_field = js_action(&mut doc, "app.alert(1)");
        let notes = doc.add_object(Stream::new(dictionary! { "Type" => "EmbeddedFile" }, b"hello world".to_vec()));
        let spec = doc.add_object(dictionary! {
            "Type" => "Filespec",
            "F" => Object::string_literal("notes.txt"),
            "UF" => Object::string_literal("notes.txt"),
            "Desc" => Object::string_literal("Some notes"),
            "EF" => dictionary! { "F" => notes },
        });
        let packed = doc.add_object(Stream::new(
            dictionary! { "Params" => dictionary! { "Size" => 42 }, "Filter" => "FlateDecode" },
            vec![1, 2],
        ));
        let annot_spec = doc.add_object(dictionary! {
            "Type" => "Filespec",
            "UF" => Object::String(vec![0xFE, 0xFF, 0x00, 0xE9, 0x00, b'.', 0x00, b'c'], StringFormat::Hexadecimal),
            "EF" => dictionary! { "F" => packed },
        });
        let attach_annot = doc.add_object(dictionary! {
            "Type" => "Annot", "Subtype" => "FileAttachment", "FS" => annot_spec,
            "Contents" => Object::string_literal("from an annotation"),
            "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()],
        });
        let sig_widget = doc.new_object_id();
        let text_field = doc.new_object_id();
        let mut kids: Vec<Object> = Vec::new();
        for (i, content) in contents.into_iter().enumerate() {
            let content_id = doc.add_object(Stream::new(dictionary! {}, content));
            let mut page = dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content_id,
                "Resources" => resources,
            };
            match i {
                0 => {
                    page.set("Rotate", 90);
                    page.set("CropBox", vec![10.into(), 20.into(), 310.5.into(), 420.into()]);
                    page.set("Annots", vec![attach_annot.into(), text_field.into()]);
                }
                1 => page.set("Annots", vec![sig_widget.into()]),
                _ => {}
            }
            kids.push(doc.add_object(page).into());
        }
        let first_page = kids[0].clone();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids, "Count" => 4,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        // Fields: a text field merged with its widget (JavaScript on keystroke), a
        // signature field, and a radio group with two widgets.
        doc.objects.insert(
            text_field,
            Object::Dictionary(dictionary! {
                "FT" => "Tx", "T" => Object::string_literal("name"), "Subtype" => "Widget",
                "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()],
                "AA" => dictionary! { "K" => js_field },
            }),
        );
        doc.objects.insert(
            sig_widget,
            Object::Dictionary(dictionary! {
                "FT" => "Sig", "T" => Object::string_literal("sig"), "Subtype" => "Widget",
                "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()],
            }),
        );
        let radio = doc.new_object_id();
        let w1 = doc.add_object(dictionary! { "Subtype" => "Widget", "Parent" => radio });
        let w2 = doc.add_object(dictionary! { "Subtype" => "Widget", "Parent" => radio });
        doc.objects.insert(
            radio,
            Object::Dictionary(dictionary! { "FT" => "Btn", "T" => Object::string_literal("choice"), "Kids" => vec![w1.into(), w2.into()] }),
        );
        let group = doc.new_object_id();
        let child = doc.add_object(dictionary! { "T" => Object::string_literal("child"), "Parent" => group });
        // The group lists itself among its kids: a cycle.
        doc.objects.insert(
            group,
            Object::Dictionary(dictionary! { "FT" => "Sig", "T" => Object::string_literal("group"), "Kids" => vec![child.into(), group.into()] }),
        );
        let acroform =
            dictionary! { "Fields" => vec![text_field.into(), sig_widget.into(), radio.into(), group.into()] };

        // Outline: A (children A1, A2 (child A2a)), B; B's /Next points back at A.
        let outlines = doc.new_object_id();
        let ids: Vec<ObjectId> = (0..5).map(|_| doc.new_object_id()).collect();
        let [a, a1, a2, a2a, b] = [ids[0], ids[1], ids[2], ids[3], ids[4]];
        let item = |title: &str, extra: Dictionary| {
            let mut d = dictionary! { "Title" => Object::string_literal(title), "Parent" => outlines };
            d.extend(&extra);
            Object::Dictionary(d)
        };
        doc.objects.insert(a, item("A", dictionary! { "First" => a1, "Last" => a2, "Next" => b }));
        doc.objects.insert(a1, item("A1", dictionary! { "Next" => a2 }));
        doc.objects.insert(a2, item("A2", dictionary! { "First" => a2a, "Prev" => a1 }));
        doc.objects.insert(a2a, item("A2a", dictionary! {}));
        doc.objects.insert(b, item("B", dictionary! { "Next" => a, "Prev" => a }));
        doc.objects
            .insert(outlines, Object::Dictionary(dictionary! { "Type" => "Outlines", "First" => a, "Last" => b }));

        let open = js_action(&mut doc, "this.print()");
        let open_chain = doc.add_object(
            dictionary! { "S" => "GoTo", "D" => vec![first_page, "Fit".into()], "Next" => vec![open.into()] },
        );
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog",
            "Pages" => pages_id,
            "AcroForm" => acroform,
            "Outlines" => outlines,
            "OpenAction" => open_chain,
            "Names" => dictionary! {
                "EmbeddedFiles" => dictionary! { "Kids" => vec![Object::Dictionary(dictionary! {
                    "Names" => vec![Object::string_literal("notes.txt"), spec.into()] })] },
            },
        });
        doc.trailer.set("Root", catalog);
        let info = doc.add_object(dictionary! {
            "Producer" => Object::string_literal("Test producer"),
            "Title" => Object::string_literal("Test title"),
        });
        doc.trailer.set("Info", info);
        doc
    }

    fn encode(doc: &mut Document) -> Vec<u8> {
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    async fn call(pdf: &[u8], password: Option<&str>) -> Result<InspectReport, EngineError> {
        let data = base64::engine::general_purpose::STANDARD.encode(pdf);
        let password = password.map(|p| format!(r#", "password": "{p}""#)).unwrap_or_default();
        let body = format!(r#"{{"file": {{"data": "{data}"{password}}}}}"#);
        let input: InspectInput = parse_body(body.as_bytes())?;
        let ctx = Context::new();
        let prepared = InspectRoute::prepare(input, &ctx).await?;
        match InspectRoute::run(prepared, &ctx).await? {
            Reply::Json(report) => Ok(report),
            Reply::Files(_) => panic!("inspect answered a file"),
        }
    }

    #[tokio::test]
    async fn reports_pages_forms_attachments_javascript_and_bookmarks() {
        let report = call(&encode(&mut sample()), None).await.unwrap();
        assert_eq!(report.page_count, 4);
        assert_eq!(report.version, "1.5");
        assert!(!report.encrypted);
        assert!(report.encryption.is_none());
        assert!(!report.linearized);
        assert_eq!(report.producer.as_deref(), Some("Test producer"));
        assert_eq!(report.title.as_deref(), Some("Test title"));

        let p = &report.pages;
        assert_eq!((p[0].number, p[0].rotation), (1, 90));
        // Crop box 300.5 x 400, shown rotated.
        assert_eq!((p[0].width_pt, p[0].height_pt), (400.0, 300.5));
        assert_eq!((p[0].has_text, p[0].images, p[0].kind), (true, 0, PageKind::Text));
        assert_eq!((p[1].width_pt, p[1].height_pt), (612.0, 792.0));
        assert_eq!((p[1].has_text, p[1].images, p[1].kind), (false, 2, PageKind::Scan));
        assert_eq!((p[2].has_text, p[2].images, p[2].kind), (true, 1, PageKind::Mixed));
        assert_eq!((p[3].has_text, p[3].images, p[3].kind), (false, 0, PageKind::Empty));

        assert_eq!(report.forms.fields, 4, "{:?}", report.forms);
        assert!(report.forms.acroform);
        assert!(!report.forms.xfa);
        assert_eq!(report.forms.signatures, 2);

        assert_eq!(report.attachments.count, 2);
        let files = &report.attachments.files;
        assert_eq!(files[0].name, "notes.txt");
        assert_eq!(files[0].bytes, Some(11));
        assert_eq!(files[0].description.as_deref(), Some("Some notes"));
        assert_eq!(files[0].source, AttachmentSource::EmbeddedFiles);
        assert_eq!(files[1].name, "é.c");
        assert_eq!(files[1].bytes, Some(42));
        assert_eq!(files[1].description.as_deref(), Some("from an annotation"));
        assert_eq!((files[1].source, files[1].page), (AttachmentSource::Annotation, Some(1)));

        assert!(report.javascript.present);
        let locations: Vec<JsLocation> = report.javascript.locations.iter().copied().collect();
        assert_eq!(locations, vec![JsLocation::OpenAction, JsLocation::FormField]);

        assert_eq!((report.bookmarks.count, report.bookmarks.depth), (5, 3));
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);

        let json = serde_json::to_value(&report).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "page_count",
                "pages",
                "encrypted",
                "version",
                "linearized",
                "forms",
                "attachments",
                "javascript",
                "bookmarks",
                "producer",
                "title",
                "encryption",
                "warnings"
            ]
        );
        assert_eq!(json["javascript"]["locations"], serde_json::json!(["open_action", "form_field"]));
        assert_eq!(json["pages"][1]["kind"], "scan");
    }

    #[tokio::test]
    async fn finds_javascript_everywhere() {
        let mut doc = sample();
        let catalog_id = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
        let names_js = js_action(&mut doc, "1");
        let doc_aa = js_action(&mut doc, "2");
        let page_aa = js_action(&mut doc, "3");
        let outline_js =
            doc.add_object(dictionary! { "S" => "URI", "URI" => Object::string_literal(" JavaScript:alert(1)") });
        let link = doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Link",
        "A" => dictionary! { "S" => "Rendition", "JS" => Object::string_literal("4") } });
        {
            let catalog = doc.get_dictionary_mut(catalog_id).unwrap();
            catalog.set("AA", dictionary! { "WC" => doc_aa });
            let names = catalog.get_mut(b"Names").unwrap().as_dict_mut().unwrap();
            names.set("JavaScript", dictionary! { "Names" => vec![Object::string_literal("init"), names_js.into()] });
        }
        let last_page = doc.page_iter().nth(3).unwrap();
        let page = doc.get_dictionary_mut(last_page).unwrap();
        page.set("AA", dictionary! { "O" => page_aa });
        page.set("Annots", vec![link.into()]);
        let outline_a = doc.get_dictionary(catalog_id).unwrap().get(b"Outlines").unwrap().as_reference().unwrap();
        let first = doc.get_dictionary(outline_a).unwrap().get(b"First").unwrap().as_reference().unwrap();
        doc.get_dictionary_mut(first).unwrap().set("A", outline_js);
        let report = call(&encode(&mut doc), None).await.unwrap();
        let locations: Vec<JsLocation> = report.javascript.locations.iter().copied().collect();
        assert_eq!(
            locations,
            vec![
                JsLocation::NamesTree,
                JsLocation::OpenAction,
                JsLocation::AdditionalActions,
                JsLocation::Annotation,
                JsLocation::FormField,
                JsLocation::Outline
            ]
        );
    }

    #[tokio::test]
    async fn plain_document_has_nothing_to_report() {
        let mut doc = Document::with_version("1.4");
        let pages_id = doc.new_object_id();
        let content = doc.add_object(Stream::new(dictionary! {}, b"0 0 m 10 10 l S".to_vec()));
        let page = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 595.276.into(), 841.89.into()], "Rotate" => -90 });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id, "Version" => "1.7" });
        doc.trailer.set("Root", catalog);
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert_eq!(report.version, "1.7");
        assert_eq!(
            (report.pages[0].width_pt, report.pages[0].height_pt, report.pages[0].rotation),
            (841.89, 595.28, 270)
        );
        assert_eq!(report.pages[0].kind, PageKind::Empty);
        assert!(!report.forms.acroform);
        assert_eq!(report.attachments.count, 0);
        assert!(!report.javascript.present);
        assert_eq!((report.bookmarks.count, report.bookmarks.depth), (0, 0));
        assert_eq!((report.producer, report.title), (None, None));
    }

    #[tokio::test]
    async fn undecodable_content_reads_as_no_text() {
        let mut doc = sample();
        let first = doc.page_iter().next().unwrap();
        let content = doc.get_page_contents(first)[0];
        let stream = doc.get_object_mut(content).unwrap().as_stream_mut().unwrap();
        // A filter lopdf cannot decode.
        stream.dict.set("Filter", "JBIG2Decode");
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert!(!report.pages[0].has_text);
        assert!(report.pages[1].images > 0);
        assert!(report.warnings.iter().any(|w| w.starts_with("page 1:")), "{:?}", report.warnings);
    }

    /// Cycles and wrong types everywhere: the walks end and report what they could read.
    #[tokio::test]
    async fn survives_cycles_and_wrong_types() {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        // A chain of 40 nested forms with text at the bottom, and a form that draws itself.
        let mut inner = doc.add_object(Stream::new(
            dictionary! { "Subtype" => "Form", "Resources" => dictionary! {} },
            b"BT (deep) Tj ET".to_vec(),
        ));
        for _ in 0..40 {
            inner = doc.add_object(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "X" => inner } } },
                b"/X Do".to_vec(),
            ));
        }
        let looping = doc.new_object_id();
        doc.objects.insert(
            looping,
            Object::Stream(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "L" => looping } } },
                b"/L Do /L Do".to_vec(),
            )),
        );
        let content = doc.add_object(Stream::new(dictionary! {}, b"/Deep Do /Loop Do BT (x".to_vec()));
        let annots = doc.new_object_id();
        let self_next = doc.new_object_id();
        doc.objects.insert(self_next, Object::Dictionary(dictionary! { "S" => "GoTo", "Next" => self_next }));
        let annot = doc.add_object(dictionary! { "Subtype" => "Link", "A" => self_next, "AA" => 5 });
        doc.objects.insert(annots, Object::Array(vec![annot.into(), annot.into(), Object::Integer(3)]));
        let mut kids = Vec::new();
        for _ in 0..3 {
            kids.push(Object::from(doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content, "Annots" => annots,
                "MediaBox" => vec![0.into(), 0.into(), Object::Name(b"NaN".to_vec()), 100.into()], "Rotate" => 45,
                "Resources" => dictionary! { "XObject" => dictionary! { "Deep" => inner, "Loop" => looping } },
            })));
        }
        doc.objects
            .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => 3 }));
        let tree = doc.new_object_id();
        doc.objects.insert(
            tree,
            Object::Dictionary(dictionary! { "Kids" => vec![tree.into(), Object::Integer(1)], "Names" => vec![Object::string_literal("odd")] }),
        );
        let item = doc.new_object_id();
        doc.objects
            .insert(item, Object::Dictionary(dictionary! { "Title" => "loop", "First" => item, "Next" => item }));
        let field = doc.new_object_id();
        doc.objects.insert(field, Object::Dictionary(dictionary! { "T" => "f", "Kids" => vec![field.into()] }));
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog", "Pages" => pages_id, "OpenAction" => self_next,
            "Names" => dictionary! { "EmbeddedFiles" => tree, "JavaScript" => "bogus" },
            "Outlines" => dictionary! { "First" => item },
            "AcroForm" => dictionary! { "Fields" => vec![field.into(), Object::Null], "XFA" => Object::Null },
            "AA" => vec![Object::Integer(1)],
        });
        doc.trailer.set("Root", catalog);
        doc.trailer.set("Info", Object::Integer(7));
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert_eq!(report.page_count, 3);
        for page in &report.pages {
            // The box with a name for a number falls back to Letter; 45 degrees reads as 0; the text 40 forms deep is
            // past the depth cap and the unterminated string is no text.
            assert_eq!((page.width_pt, page.height_pt, page.rotation), (612.0, 792.0, 0));
            assert_eq!((page.has_text, page.kind), (false, PageKind::Empty));
        }
        assert_eq!(report.attachments.count, 0);
        assert!(!report.javascript.present);
        assert_eq!((report.bookmarks.count, report.bookmarks.depth), (1, 1));
        // The self-referencing field has no child field besides itself: it reads as one terminal field.
        assert_eq!((report.forms.fields, report.forms.acroform, report.forms.xfa), (1, true, false));
        assert_eq!((report.producer, report.title), (None, None));
    }

    #[tokio::test]
    async fn content_past_the_page_limit_is_not_scanned() {
        let mut doc = sample();
        let first = doc.page_iter().next().unwrap();
        let content = doc.get_page_contents(first)[0];
        let mut bomb = vec![b' '; PAGE_CONTENT_LIMIT + 1];
        bomb.extend_from_slice(b"BT (late) Tj ET");
        let mut stream = Stream::new(dictionary! {}, bomb);
        stream.compress().unwrap();
        assert!(stream.content.len() < 1024 * 1024);
        doc.objects.insert(content, Object::Stream(stream));
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert!(!report.pages[0].has_text);
        assert!(report.pages[2].has_text);
        assert!(
            report.warnings.iter().any(|w| w.starts_with("page 1: the content is larger")),
            "{:?}",
            report.warnings
        );
    }

    #[tokio::test]
    async fn refuses_bad_input() {
        let e = call(b"hello", None).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_pdf", Some("/file")));
        let e = parse_body::<InspectInput>(br#"{"file": {"data": "aGVsbG8="}, "pages": "1"}"#).unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("unknown_field", Some("/pages")));
        let e = parse_body::<InspectInput>(br#"{}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/file"));
    }

    const CORPUS: &str = "/work/shared/corpus/pdf";

    fn corpus_password(name: &str) -> Option<&'static str> {
        match name {
            "enc-XI-R6,V5,U=view,O=master.pdf" => Some("view"),
            "libreoffice-writer-password.pdf" => Some("openpassword"),
            "20-pages.pdf" => Some("user"),
            _ => None,
        }
    }

    /// Known corpus files read as their makers describe them.
    #[tokio::test]
    async fn corpus_samples() {
        let read = |name: &str| std::fs::read(format!("{CORPUS}/{name}")).ok();
        let Some(attachment) = read("sample-files/with-attachment.pdf") else { return };
        let report = call(&attachment, None).await.unwrap();
        assert!(report.attachments.count >= 1, "{:?}", report.attachments);
        if let Some(bytes) = read("sample-files/pdflatex-outline.pdf") {
            let report = call(&bytes, None).await.unwrap();
            assert!(report.bookmarks.count > 0);
        }
        if let Some(bytes) = read("qpdf/enc-XI-R6,V5,U=view,O=master.pdf") {
            let report = call(&bytes, corpus_password("enc-XI-R6,V5,U=view,O=master.pdf")).await.unwrap();
            assert!(report.encrypted);
            let encryption = report.encryption.unwrap();
            assert_eq!((encryption.v, encryption.r, encryption.key_bits), (5, 6, Some(256)));
            assert_eq!(encryption.method.as_deref(), Some("AESV3"));
        }
        if let Some(bytes) = read("qpdf/c-linearized.pdf") {
            assert!(call(&bytes, None).await.unwrap().linearized);
        }
    }
}
