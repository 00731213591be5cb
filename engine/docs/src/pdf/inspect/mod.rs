//! What a PDF holds, read without changing it: each page's visible size, rotation, text
//! layer and images (`content`), the version, linearization and encryption, and the
//! document's structure (`structure`): form fields and signatures, embedded files and
//! file attachment annotations, where JavaScript hides, the outline's size. The inspect
//! route (`docs/inspect.rs`) answers this report; the attachments route names where a file
//! is attached with [`AttachmentSource`].
//!
//! Every walk of the document's graph (name trees, outlines, form fields, action chains,
//! form XObjects) keeps a visited set and a depth or node cap: hostile files have cycles.
//!
//! What this module must not do: change the document, decode past its content budgets, or
//! use a route file.

use std::collections::{BTreeSet, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::pdf;

mod content;
mod structure;

use self::content::Scanner;
use self::structure::{ActionFinder, annotations, file_spec, form_fields, name_tree, outline};

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
/// Most decompressed content scanned for one page, its form XObjects included.
pub(crate) const PAGE_CONTENT_LIMIT: usize = 32 * 1024 * 1024;
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
