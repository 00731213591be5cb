//! The document's structure as the inspection reads it: name trees, file specifications
//! (embedded files and file attachment annotations), actions and the JavaScript they run,
//! form fields and signatures, the outline. Each walk keeps a visited set and stops at
//! [`MAX_NODES`] nodes or [`MAX_TREE_DEPTH`] levels, and actions at [`MAX_ACTIONS`].
//!
//! What this module must not do: change the document or use a route file.

use std::collections::{BTreeSet, HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use super::{
    AttachmentReport, AttachmentSource, BookmarksReport, FormsReport, JsLocation, MAX_ACTIONS, MAX_NODES,
    MAX_TREE_DEPTH, Notes, array_at, name_at,
};
use crate::pdf;

/// The entries of a name tree, keys decoded as text.
pub(super) fn name_tree<'a>(doc: &'a Document, root: &'a Object, notes: &mut Notes) -> Vec<(String, &'a Object)> {
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
pub(super) fn file_spec(
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
pub(super) struct ActionFinder<'a> {
    doc: &'a Document,
    known: HashMap<ObjectId, bool>,
    steps: usize,
    pub(super) exhausted: bool,
}

impl<'a> ActionFinder<'a> {
    pub(super) fn new(doc: &'a Document) -> ActionFinder<'a> {
        ActionFinder { doc, known: HashMap::new(), steps: 0, exhausted: false }
    }

    /// Whether the action (or one it chains to) runs JavaScript.
    pub(super) fn runs_js(&mut self, action: &Object) -> bool {
        self.action(action, 0)
    }

    /// Whether any action of an additional-actions dictionary (/AA) runs JavaScript.
    pub(super) fn any_runs_js(&mut self, aa: &Object) -> bool {
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
pub(super) fn form_fields(
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
pub(super) fn outline(
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
pub(super) fn annotations(
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
