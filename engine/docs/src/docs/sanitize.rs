//! `POST /v1/pdf/sanitize`: remove what can run, leave or leak from a PDF (JavaScript,
//! actions that open files or send data, embedded files, links, metadata), each optional,
//! with a report of what was removed.
//!
//! Every dictionary of the file is looked at, not only the places a reader starts from:
//! actions are found wherever they hang (the catalog's open action, `/AA` of the document,
//! pages, annotations and form fields, an annotation's or bookmark's `/A`, `/Next` chains).
//! What is removed is unlinked and then dropped from the file with every object only it
//! used, so the scripts and files are not left behind as unreferenced objects.
//!
//! What this module must not do: touch page content, or keep an object that only a
//! removed entry pointed to.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Deepest `/Next` chain or nesting followed.
const MAX_DEPTH: usize = 32;
/// Most removals listed one by one in the report (all are counted).
const MAX_LISTED: usize = 1_000;

/// Fields of `/v1/pdf/sanitize` besides `file` and `output`: what to remove.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SanitizeOptions {
    /// JavaScript: the document's scripts, script actions (on open, on page open, on a field's change or calculation, in links and bookmarks), XFA forms and their scripts. Default true.
    #[serde(default = "yes")]
    pub javascript: bool,
    /// Actions that reach outside the document: launching a program or file, submitting or importing form data, opening another PDF or an embedded one, playing media. Default true.
    #[serde(default = "yes")]
    pub actions: bool,
    /// Embedded files: the attachments list, file attachment annotations, files associated with the document or its parts. Default true.
    #[serde(default = "yes")]
    pub embedded_files: bool,
    /// Links to web addresses (URI actions) and link annotations that leave the document; links between pages stay. Default false.
    #[serde(default)]
    pub links: bool,
    /// Metadata: the document information (title, author, …), every XMP metadata stream and applications' private data (/PieceInfo). Default true.
    #[serde(default = "yes")]
    pub metadata: bool,
}

fn yes() -> bool {
    true
}

/// What sanitizing removed.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct SanitizeReport {
    /// JavaScript actions, named scripts and XFA forms removed.
    pub javascript: u64,
    /// Actions reaching outside the document removed.
    pub actions: u64,
    /// Embedded files and file attachment annotations removed.
    pub embedded_files: u64,
    /// Web links removed.
    pub links: u64,
    /// Metadata entries removed (the document information, XMP streams, private data).
    pub metadata: u64,
    /// Objects dropped from the file because only removed entries used them.
    pub objects_dropped: u64,
    /// The removals, where each was (the first 1,000).
    pub removed: Vec<Removal>,
}

/// One removal.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Removal {
    /// `javascript`, `actions`, `embedded_files`, `links` or `metadata`.
    pub kind: String,
    /// Where it was: `document`, `page 3`, `form field`, `bookmark`, `annotation on page 2`, …
    pub place: String,
    /// What it was: the action's type, the script's name, the file's name, the link's address.
    pub what: String,
}

/// The route's description, shared by the route and the pipeline step.
const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/sanitize",
    operation: "sanitize_pdf",
    family: Family::Docs,
    summary: "Remove scripts, risky actions, embedded files and metadata",
    description: "Removes from a PDF what can run, reach outside it or leak information, each part optional: JavaScript \
        (document scripts, script actions on open, on pages, links, bookmarks and form fields, XFA forms), actions that \
        launch programs, submit or import data, open other files or play media, embedded files (attachments and file \
        annotations), web links (off by default; links between pages stay) and metadata (document information, XMP, \
        private application data). Every place an action can hang is looked at, and what only removed entries used is \
        dropped from the file. Page content is unchanged. A report counts and lists what was removed \
        (Paperchain-Report header for output=file, `report` field for base64 and url). An encrypted file comes back \
        decrypted.",
    base_price: Price::micros(2_000),
    price_rule: PAGE_EDIT_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
    holds_secrets: false,
    accepts: crate::catalog::accepts::PDF,
};

/// A checked sanitize call.
pub struct SanitizeCall {
    source: SourcePdf,
    options: SanitizeOptions,
    output: OutputMode,
}

/// The route.
pub struct SanitizeRoute;

impl Route for SanitizeRoute {
    type Input = PdfJob<SanitizeOptions>;
    type Prepared = SanitizeCall;
    type Output = NoJson;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<SanitizeOptions>, ctx: &Context) -> Result<SanitizeCall, EngineError> {
        check(&input.options)?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        Ok(SanitizeCall { source, options: input.options, output: input.output })
    }

    fn quote(call: &SanitizeCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: SanitizeCall, _: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let SanitizeCall { mut source, options, output } = call;
            let report = sanitize(&mut source.doc, options);
            let bytes = pdf::save(&mut source.doc)?;
            let report = serde_json::to_value(&report).map_err(|e| EngineError::internal(format!("report: {e}")))?;
            let name = derived_name(&source.filename, "sanitized", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output).with_report(report)))
        })
        .await
    }
}

/// The operation, as a pipeline step.
pub struct Sanitize;

impl Transform for Sanitize {
    type Options = SanitizeOptions;
    type Plan = SanitizeOptions;

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "sanitized";

    fn check(options: &SanitizeOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        check(options)?;
        Ok(pages)
    }

    fn plan(options: SanitizeOptions, _: &Document, _: &Limits) -> Result<SanitizeOptions, EngineError> {
        Ok(options)
    }

    fn apply(options: SanitizeOptions, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        sanitize(&mut doc, options);
        Ok(Pdf::Doc(doc))
    }
}

fn check(options: &SanitizeOptions) -> Result<(), EngineError> {
    let SanitizeOptions { javascript, actions, embedded_files, links, metadata } = *options;
    if !(javascript || actions || embedded_files || links || metadata) {
        return Err(EngineError::invalid(
            "/javascript",
            "/javascript: every part is turned off, so nothing would be removed; leave at least one of javascript, \
             actions, embedded_files, links and metadata on",
        ));
    }
    Ok(())
}

/// What an action is, for deciding whether it goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Javascript,
    Actions,
    Links,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Javascript => "javascript",
            Kind::Actions => "actions",
            Kind::Links => "links",
        }
    }
}

/// Sanitizes `doc` as `options` say and answers what was removed.
pub fn sanitize(doc: &mut Document, options: SanitizeOptions) -> SanitizeReport {
    let mut s = Sanitizer {
        options,
        report: SanitizeReport::default(),
        seen_actions: HashSet::new(),
        removed_actions: HashSet::new(),
        seen_containers: HashSet::new(),
    };
    // Objects nothing reaches, and the file's own cross-reference and object streams, are
    // not counted as dropped: the file is written without them anyway.
    doc.prune_objects();
    let before = objects_written(doc);
    s.catalog(doc);
    s.pages(doc);
    // What only removed annotations and actions used goes before the sweep, so it is not
    // counted twice.
    doc.prune_objects();
    s.everything_else(doc);
    if options.metadata && doc.trailer.remove(b"Info").is_some() {
        s.removed("metadata", "document", "document information (title, author, dates, …)");
    }
    doc.prune_objects();
    s.report.objects_dropped = before.saturating_sub(objects_written(doc)) as u64;
    s.report
}

/// Objects [`pdf::save`] writes: all but cross-reference and object streams.
fn objects_written(doc: &Document) -> usize {
    doc.objects.values().filter(|o| !matches!(o.type_name(), Ok(b"XRef" | b"ObjStm" | b"Linearized"))).count()
}

struct Sanitizer {
    options: SanitizeOptions,
    report: SanitizeReport,
    /// Indirect actions and action lists already cleaned (one shared by several links is
    /// looked at once).
    seen_actions: HashSet<ObjectId>,
    /// Indirect actions removed (one shared by several links is counted once).
    removed_actions: HashSet<ObjectId>,
    /// Indirect /AA dictionaries and /Annots arrays already cleaned.
    seen_containers: HashSet<ObjectId>,
}

impl Sanitizer {
    fn removed(&mut self, kind: &str, place: &str, what: impl Into<String>) {
        match kind {
            "javascript" => self.report.javascript += 1,
            "actions" => self.report.actions += 1,
            "embedded_files" => self.report.embedded_files += 1,
            "links" => self.report.links += 1,
            _ => self.report.metadata += 1,
        }
        if self.report.removed.len() < MAX_LISTED {
            self.report.removed.push(Removal { kind: kind.into(), place: place.into(), what: what.into() });
        }
    }

    /// Whether an action goes, and under which part: a script when JavaScript goes, an
    /// action reaching outside when those go, a web link when links go.
    fn verdict(&self, doc: &Document, action: &Dictionary) -> Option<Kind> {
        let kind = action.get(b"S").ok().and_then(|s| doc.dereference(s).ok()).and_then(|(_, s)| s.as_name().ok());
        // A rendition action may carry a script of its own.
        if self.options.javascript && (kind == Some(b"JavaScript") || action.has(b"JS")) {
            return Some(Kind::Javascript);
        }
        let external = matches!(
            kind,
            Some(
                b"Launch"
                    | b"SubmitForm"
                    | b"ImportData"
                    | b"GoToR"
                    | b"GoToE"
                    | b"Movie"
                    | b"Sound"
                    | b"Rendition"
                    | b"RichMediaExecute"
            )
        ) || (kind == Some(b"Thread") && action.has(b"F"));
        if self.options.actions && external {
            return Some(Kind::Actions);
        }
        (self.options.links && kind == Some(b"URI")).then_some(Kind::Links)
    }

    /// Cleans the action in `object` (direct or a reference): None when the action itself
    /// goes, else the action to keep (its `/Next` chain cleaned).
    fn clean_action(&mut self, doc: &mut Document, object: Object, place: &str, depth: usize) -> Option<Object> {
        if depth > MAX_DEPTH {
            // What a reader would still follow is not looked at: it goes, as a precaution.
            if self.options.javascript || self.options.actions {
                self.removed("actions", place, format!("the rest of an action chain longer than {MAX_DEPTH} steps"));
                return None;
            }
            return Some(object);
        }
        let (id, action) = match &object {
            Object::Reference(id) if self.removed_actions.contains(id) => return None,
            Object::Reference(id) => match doc.get_object(*id) {
                Ok(Object::Dictionary(dict)) => (Some(*id), dict.clone()),
                // A list of actions kept as an object of its own: walked, and written back.
                Ok(Object::Array(items)) => {
                    if !self.seen_actions.insert(*id) {
                        return Some(object);
                    }
                    let kept = self.clean_actions(doc, items.clone(), place, depth);
                    if let Ok(slot) = doc.get_object_mut(*id) {
                        *slot = Object::Array(kept.clone());
                    }
                    return (!kept.is_empty()).then_some(object);
                }
                // A dangling or odd reference is left as it is.
                _ => return Some(object),
            },
            Object::Dictionary(dict) => (None, dict.clone()),
            // A list of actions (/Next may hold one).
            Object::Array(items) => {
                let kept = self.clean_actions(doc, items.clone(), place, depth);
                return (!kept.is_empty()).then_some(Object::Array(kept));
            }
            _ => return Some(object),
        };
        if let Some(kind) = self.verdict(doc, &action) {
            let what = describe(doc, &action);
            self.removed(kind.name(), place, what);
            if let Some(id) = id {
                self.removed_actions.insert(id);
            }
            return None;
        }
        if let Some(id) = id
            && !self.seen_actions.insert(id)
        {
            return Some(object);
        }
        let Ok(next) = action.get(b"Next").cloned() else { return Some(object) };
        let cleaned = self.clean_action(doc, next, place, depth + 1);
        let mut action = action;
        match cleaned {
            Some(next) => action.set("Next", next),
            None => {
                action.remove(b"Next");
            }
        }
        match id {
            Some(id) => {
                if let Ok(slot) = doc.get_object_mut(id) {
                    *slot = Object::Dictionary(action);
                }
                Some(object)
            }
            None => Some(Object::Dictionary(action)),
        }
    }

    fn clean_actions(&mut self, doc: &mut Document, items: Vec<Object>, place: &str, depth: usize) -> Vec<Object> {
        items.into_iter().filter_map(|item| self.clean_action(doc, item, place, depth + 1)).collect()
    }

    /// Cleans `/A` and `/AA` of the dictionary at `id` (or of `dict` when it is direct).
    fn clean_dict_actions(&mut self, doc: &mut Document, dict: &mut Dictionary, place: &str) {
        if let Ok(action) = dict.get(b"A").cloned() {
            match self.clean_action(doc, action, place, 0) {
                Some(kept) => dict.set("A", kept),
                None => {
                    dict.remove(b"A");
                }
            }
        }
        if let Ok(aa) = dict.get(b"AA").cloned() {
            let (aa_id, mut triggers) = match aa {
                Object::Reference(id) if !self.seen_containers.insert(id) => return,
                Object::Reference(id) => match doc.get_dictionary(id) {
                    Ok(d) => (Some(id), d.clone()),
                    Err(_) => return,
                },
                Object::Dictionary(d) => (None, d),
                _ => return,
            };
            let keys: Vec<Vec<u8>> = triggers.iter().map(|(k, _)| k.clone()).collect();
            for key in keys {
                let Ok(action) = triggers.get(&key).cloned() else { continue };
                match self.clean_action(doc, action, place, 0) {
                    Some(kept) => triggers.set(key, kept),
                    None => {
                        triggers.remove(&key);
                    }
                }
            }
            if triggers.is_empty() {
                dict.remove(b"AA");
            } else if let Some(id) = aa_id {
                if let Ok(slot) = doc.get_object_mut(id) {
                    *slot = Object::Dictionary(triggers);
                }
            } else {
                dict.set("AA", Object::Dictionary(triggers));
            }
        }
    }

    fn catalog(&mut self, doc: &mut Document) {
        let Ok(root_id) = doc.trailer.get(b"Root").and_then(Object::as_reference) else { return };
        let Ok(mut root) = doc.get_dictionary(root_id).cloned() else { return };
        if let Ok(open) = root.get(b"OpenAction").cloned() {
            // A destination (an array) is not an action and stays.
            if !matches!(doc.dereference(&open), Ok((_, Object::Array(_)))) {
                match self.clean_action(doc, open, "document (on open)", 0) {
                    Some(kept) => root.set("OpenAction", kept),
                    None => {
                        root.remove(b"OpenAction");
                    }
                }
            }
        }
        self.clean_dict_actions(doc, &mut root, "document");
        if let Some((names_id, mut names)) = dict_entry(doc, &root, b"Names") {
            if self.options.javascript && names.remove(b"JavaScript").is_some() {
                self.removed("javascript", "document", "document-level scripts (the JavaScript name tree)");
            }
            if self.options.embedded_files && names.remove(b"EmbeddedFiles").is_some() {
                self.removed("embedded_files", "document", "the attachments list (the EmbeddedFiles name tree)");
            }
            put_back(doc, &mut root, b"Names", names_id, names);
        }
        if let Some((form_id, mut form)) = dict_entry(doc, &root, b"AcroForm") {
            if self.options.javascript {
                if form.remove(b"XFA").is_some() {
                    self.removed("javascript", "form", "the XFA form and its scripts");
                }
                // The calculation order only serves calculation scripts; without XFA there
                // is nothing to render.
                form.remove(b"CO");
                form.remove(b"NeedsRendering");
            }
            put_back(doc, &mut root, b"AcroForm", form_id, form);
        }
        if self.options.embedded_files && root.remove(b"AF").is_some() {
            self.removed("embedded_files", "document", "files associated with the document");
        }
        if self.options.metadata {
            if root.remove(b"Metadata").is_some() {
                self.removed("metadata", "document", "XMP metadata");
            }
            if root.remove(b"PieceInfo").is_some() {
                self.removed("metadata", "document", "private application data (PieceInfo)");
            }
        }
        if let Ok(slot) = doc.get_object_mut(root_id) {
            *slot = Object::Dictionary(root);
        }
    }

    fn pages(&mut self, doc: &mut Document) {
        let pages: Vec<ObjectId> = doc.page_iter().collect();
        for (index, page_id) in pages.into_iter().enumerate() {
            let place = format!("page {}", index + 1);
            let Ok(mut page) = doc.get_dictionary(page_id).cloned() else { continue };
            self.clean_dict_actions(doc, &mut page, &place);
            if let Some((annots_id, annots)) = array_entry(doc, &page, b"Annots")
                && annots_id.is_none_or(|id| self.seen_containers.insert(id))
            {
                let mut kept = Vec::with_capacity(annots.len());
                for annot in annots {
                    if self.annotation_goes(doc, &annot, index + 1) {
                        continue;
                    }
                    kept.push(annot);
                }
                match annots_id {
                    Some(id) => {
                        if let Ok(slot) = doc.get_object_mut(id) {
                            *slot = Object::Array(kept);
                        }
                    }
                    None => page.set("Annots", Object::Array(kept)),
                }
            }
            if let Ok(slot) = doc.get_object_mut(page_id) {
                *slot = Object::Dictionary(page);
            }
        }
    }

    /// Cleans one annotation; true when the whole annotation goes.
    fn annotation_goes(&mut self, doc: &mut Document, annot: &Object, page: usize) -> bool {
        let (id, mut dict) = match annot {
            Object::Reference(id) => match doc.get_dictionary(*id) {
                Ok(d) => (Some(*id), d.clone()),
                Err(_) => return false,
            },
            Object::Dictionary(d) => (None, d.clone()),
            _ => return false,
        };
        let place = match place_of(doc, &dict) {
            field if field.starts_with("form field") => format!("{field} (page {page})"),
            _ => format!("annotation on page {page}"),
        };
        let subtype = dict
            .get(b"Subtype")
            .ok()
            .and_then(|s| doc.dereference(s).ok())
            .and_then(|(_, s)| s.as_name().ok())
            .map(<[u8]>::to_vec);
        if self.options.embedded_files && subtype.as_deref() == Some(b"FileAttachment") {
            let name = dict.get(b"FS").ok().map(|fs| file_name(doc, fs)).unwrap_or_default();
            self.removed("embedded_files", &place, format!("file attachment annotation {name}").trim_end().to_string());
            return true;
        }
        // 3D and rich media annotations carry scripts and files of their own.
        if (self.options.javascript || self.options.embedded_files)
            && matches!(subtype.as_deref(), Some(b"3D" | b"RichMedia"))
        {
            let kind = if self.options.javascript { "javascript" } else { "embedded_files" };
            let what = format!(
                "{} annotation with its scripts and files",
                String::from_utf8_lossy(subtype.as_deref().unwrap_or_default())
            );
            self.removed(kind, &place, what);
            return true;
        }
        let had_action = dict.has(b"A");
        self.clean_dict_actions(doc, &mut dict, &place);
        // A link whose action went and that has no destination of its own leads nowhere.
        if subtype.as_deref() == Some(b"Link") && had_action && !dict.has(b"A") && !dict.has(b"Dest") {
            return true;
        }
        if let Some(id) = id
            && let Ok(slot) = doc.get_object_mut(id)
        {
            *slot = Object::Dictionary(dict);
        }
        false
    }

    /// Form fields, bookmarks and every other dictionary: actions, associated files, metadata.
    fn everything_else(&mut self, doc: &mut Document) {
        let ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
        for id in ids {
            let mut dict = match doc.objects.get(&id) {
                Some(Object::Dictionary(d)) => d.clone(),
                Some(Object::Stream(s)) => s.dict.clone(),
                _ => continue,
            };
            let before = dict.clone();
            let place = place_of(doc, &dict);
            if dict.has(b"A") || dict.has(b"AA") {
                self.clean_dict_actions(doc, &mut dict, &place);
            }
            if self.options.embedded_files {
                if dict.remove(b"AF").is_some() {
                    self.removed("embedded_files", &place, "associated files");
                }
                // A file specification kept (by a link, an action left in place) loses
                // the file it embeds.
                if dict.remove(b"EF").is_some() | dict.remove(b"RF").is_some() {
                    let name = file_name(doc, &Object::Dictionary(dict.clone()));
                    self.removed("embedded_files", &place, format!("embedded file {name}").trim_end().to_string());
                }
            }
            if self.options.metadata {
                if dict.remove(b"Metadata").is_some() {
                    self.removed("metadata", &place, "XMP metadata");
                }
                if dict.remove(b"PieceInfo").is_some() {
                    self.removed("metadata", &place, "private application data (PieceInfo)");
                }
            }
            if dict == before {
                continue;
            }
            match doc.objects.get_mut(&id) {
                Some(Object::Dictionary(d)) => *d = dict,
                Some(Object::Stream(s)) => s.dict = dict,
                _ => {}
            }
        }
    }
}

/// Where a dictionary is, in words, for the report.
fn place_of(doc: &Document, dict: &Dictionary) -> String {
    let name =
        |key: &[u8]| dict.get(key).ok().and_then(|o| doc.dereference(o).ok()).and_then(|(_, o)| o.as_name().ok());
    if dict.has(b"FT") || (dict.has(b"Parent") && dict.has(b"T") && !dict.has(b"Title")) {
        let title = dict.get(b"T").ok().and_then(|t| pdf::text_string(doc, t)).unwrap_or_default();
        return format!("form field {title}").trim_end().to_string();
    }
    if dict.has(b"Title") && (dict.has(b"Parent") || dict.has(b"Dest") || dict.has(b"A")) {
        return "bookmark".into();
    }
    match name(b"Type").or(name(b"Subtype")) {
        Some(b"Annot") | Some(b"Link" | b"Widget" | b"Screen") => "annotation".into(),
        Some(b"Page") => "page".into(),
        Some(other) => String::from_utf8_lossy(other).to_lowercase(),
        None => "object".into(),
    }
}

/// An action in words: its type, and the script's first characters, the address or the file.
fn describe(doc: &Document, action: &Dictionary) -> String {
    let kind = action
        .get(b"S")
        .ok()
        .and_then(|s| doc.dereference(s).ok())
        .and_then(|(_, s)| s.as_name().ok())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .unwrap_or_else(|| "action".into());
    let text = |key: &[u8]| -> Option<String> {
        let (_, value) = doc.dereference(action.get(key).ok()?).ok()?;
        match value {
            Object::String(..) => pdf::text_string(doc, value),
            Object::Stream(stream) => {
                let bytes = stream
                    .decompressed_content_with_limit(4096)
                    .unwrap_or_else(|_| stream.content[..stream.content.len().min(4096)].to_vec());
                Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            Object::Dictionary(_) => Some(file_name(doc, value)),
            _ => None,
        }
    };
    let detail = text(b"URI").or_else(|| text(b"JS")).or_else(|| text(b"F"));
    match detail {
        Some(detail) => {
            let short: String = detail.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect();
            format!("{kind}: {short}")
        }
        None => kind,
    }
}

/// A file specification's name.
fn file_name(doc: &Document, spec: &Object) -> String {
    let Ok((_, spec)) = doc.dereference(spec) else { return String::new() };
    match spec {
        Object::String(..) => pdf::text_string(doc, spec).unwrap_or_default(),
        Object::Dictionary(d) => [b"UF".as_slice(), b"F"]
            .iter()
            .find_map(|k| d.get(k).ok().and_then(|v| pdf::text_string(doc, v)))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The dictionary under `key` of `dict`: its id when it is a reference, and a copy.
fn dict_entry(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<(Option<ObjectId>, Dictionary)> {
    match dict.get(key).ok()? {
        Object::Reference(id) => Some((Some(*id), doc.get_dictionary(*id).ok()?.clone())),
        Object::Dictionary(d) => Some((None, d.clone())),
        _ => None,
    }
}

/// The array under `key` of `dict`: its id when it is a reference, and a copy.
fn array_entry(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<(Option<ObjectId>, Vec<Object>)> {
    match dict.get(key).ok()? {
        Object::Reference(id) => Some((Some(*id), doc.get_object(*id).ok()?.as_array().ok()?.clone())),
        Object::Array(a) => Some((None, a.clone())),
        _ => None,
    }
}

/// Writes an edited dictionary back where [`dict_entry`] found it.
fn put_back(doc: &mut Document, parent: &mut Dictionary, key: &[u8], id: Option<ObjectId>, value: Dictionary) {
    match id {
        Some(id) => {
            if let Ok(slot) = doc.get_object_mut(id) {
                *slot = Object::Dictionary(value);
            }
        }
        None => parent.set(key.to_vec(), Object::Dictionary(value)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{Stream, dictionary};

    fn options(javascript: bool, actions: bool) -> SanitizeOptions {
        SanitizeOptions { javascript, actions, embedded_files: true, links: false, metadata: true }
    }

    /// A one-page document; `build` adds objects and answers the catalog's and the page's
    /// extra entries.
    fn document(
        build: impl FnOnce(&mut Document) -> (Vec<(&'static str, Object)>, Vec<(&'static str, Object)>),
    ) -> Document {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let content = doc.add_object(Stream::new(Dictionary::new(), b"0 0 m 10 10 l S".to_vec()));
        let (catalog_extra, page_extra) = build(&mut doc);
        let mut page = dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()] };
        for (k, v) in page_extra {
            page.set(k, v);
        }
        let page = doc.add_object(page);
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
        );
        let mut catalog = dictionary! { "Type" => "Catalog", "Pages" => pages_id };
        for (k, v) in catalog_extra {
            catalog.set(k, v);
        }
        let catalog = doc.add_object(catalog);
        doc.trailer.set("Root", catalog);
        doc
    }

    fn script(doc: &mut Document, code: &str) -> ObjectId {
        doc.add_object(dictionary! { "S" => "JavaScript", "JS" => Object::string_literal(code) })
    }

    /// The saved file, for a search of its bytes (nothing is compressed here).
    fn saved(doc: &mut Document) -> String {
        String::from_utf8_lossy(&pdf::save(doc).unwrap()).into_owned()
    }

    #[test]
    fn a_cycle_of_actions_ends_and_is_kept() {
        let mut doc = document(|doc| {
            let a = doc.new_object_id();
            let b = doc
                .add_object(dictionary! { "S" => "GoTo", "D" => vec![Object::Integer(0), "Fit".into()], "Next" => a });
            doc.objects.insert(
                a,
                Object::Dictionary(
                    dictionary! { "S" => "GoTo", "D" => vec![Object::Integer(0), "Fit".into()], "Next" => b },
                ),
            );
            (vec![("OpenAction", a.into())], vec![])
        });
        let report = sanitize(&mut doc, options(true, true));
        assert_eq!((report.javascript, report.actions), (0, 0));
        assert!(saved(&mut doc).contains("/OpenAction"));
    }

    #[test]
    fn a_script_behind_a_list_object_or_a_long_chain_goes() {
        let mut doc = document(|doc| {
            let hidden = script(doc, "HIDDEN-IN-A-LIST");
            let list = doc.add_object(Object::Array(vec![hidden.into()]));
            let jump = dictionary! { "S" => "GoTo", "D" => vec![Object::Integer(0), "Fit".into()], "Next" => list };
            let link = doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Link",
            "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()], "A" => jump });
            // 40 jumps, then a script.
            let mut next = script(doc, "AT-THE-END-OF-A-LONG-CHAIN");
            for _ in 0..40 {
                next = doc.add_object(
                    dictionary! { "S" => "GoTo", "D" => vec![Object::Integer(0), "Fit".into()], "Next" => next },
                );
            }
            (vec![("OpenAction", next.into())], vec![("Annots", vec![link.into()].into())])
        });
        let report = sanitize(&mut doc, options(true, true));
        let text = saved(&mut doc);
        assert!(!text.contains("HIDDEN-IN-A-LIST") && !text.contains("AT-THE-END-OF-A-LONG-CHAIN"), "{text}");
        assert_eq!(report.javascript, 1, "{report:?}");
        assert!(report.removed.iter().any(|r| r.what.contains("longer than 32 steps")), "{report:?}");
        // The link to a page stays, without its script.
        assert!(text.contains("/Link"));
    }

    #[test]
    fn a_launch_carrying_a_script_goes_with_the_actions_when_scripts_stay() {
        let mut doc = document(|doc| {
            let launch = doc.add_object(dictionary! { "S" => "Launch", "F" => Object::string_literal("RUN-ME.exe"),
            "JS" => Object::string_literal("KEPT-SCRIPT") });
            let keep = script(doc, "A-SCRIPT-THAT-STAYS");
            (vec![("OpenAction", launch.into())], vec![("AA", dictionary! { "O" => keep }.into())])
        });
        let report = sanitize(&mut doc, options(false, true));
        let text = saved(&mut doc);
        assert!(!text.contains("RUN-ME.exe") && text.contains("A-SCRIPT-THAT-STAYS"), "{text}");
        assert_eq!((report.actions, report.javascript), (1, 0));
    }
}
