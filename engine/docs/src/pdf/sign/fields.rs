//! The form fields signatures live in: signature fields found by walking the form's
//! field tree (names joined with dots, the field type inherited), with their widget,
//! page and value.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId};

use crate::pdf::{self, Rect};

/// A terminal signature field.
#[derive(Clone, Debug)]
pub struct SignatureField {
    /// The field's dictionary.
    pub id: ObjectId,
    /// Its full name (`parent.child`).
    pub name: String,
    /// Its widget (the field itself when they are merged, else its first kid).
    pub widget: ObjectId,
    /// The page showing the widget, if any lists it.
    pub page: Option<ObjectId>,
    /// The widget's rectangle.
    pub rect: Option<Rect>,
    /// Whether it has a value (a signature dictionary).
    pub signed: bool,
    /// The signature dictionary's object, when it is indirect.
    pub value: Option<ObjectId>,
}

/// Most levels of the field tree walked.
const MAX_DEPTH: usize = 32;

/// A terminal field met in the walk: its dictionary, full name and inherited type.
struct Terminal {
    id: ObjectId,
    name: String,
    kind: Option<Vec<u8>>,
}

/// Every terminal field of the document's form.
fn terminals(doc: &Document) -> Vec<Terminal> {
    let Some(form) = form(doc) else { return Vec::new() };
    let Ok(Object::Array(roots)) = form.get(b"Fields").and_then(|o| doc.dereference(o).map(|(_, o)| o)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<(ObjectId, String, Option<Vec<u8>>, usize)> =
        roots.iter().rev().filter_map(|o| o.as_reference().ok()).map(|id| (id, String::new(), None, 0)).collect();
    while let Some((id, parent, kind, depth)) = stack.pop() {
        if depth > MAX_DEPTH || !seen.insert(id) {
            continue;
        }
        let Ok(dict) = doc.get_dictionary(id) else { continue };
        let own = dict.get(b"T").ok().and_then(|t| pdf::text_string(doc, t));
        let name = match (&own, parent.is_empty()) {
            (Some(own), true) => own.clone(),
            (Some(own), false) => format!("{parent}.{own}"),
            (None, _) => parent.clone(),
        };
        let kind = dict.get(b"FT").ok().and_then(|o| o.as_name().ok()).map(<[u8]>::to_vec).or(kind);
        let kids: Vec<ObjectId> = match dict.get(b"Kids").and_then(|o| doc.dereference(o).map(|(_, o)| o)) {
            Ok(Object::Array(kids)) => kids.iter().filter_map(|o| o.as_reference().ok()).collect(),
            _ => Vec::new(),
        };
        // Kids that are fields have names; kids without are the field's widgets.
        let field_kids: Vec<ObjectId> = kids
            .iter()
            .copied()
            .filter(|k| doc.get_dictionary(*k).is_ok_and(|d| d.has(b"T") || d.has(b"Kids")))
            .collect();
        if field_kids.is_empty() {
            if own.is_some() || !parent.is_empty() {
                out.push(Terminal { id, name, kind });
            }
        } else {
            for kid in field_kids.into_iter().rev() {
                stack.push((kid, name.clone(), kind.clone(), depth + 1));
            }
        }
    }
    out
}

/// The form dictionary.
fn form(doc: &Document) -> Option<&Dictionary> {
    let catalog = doc.catalog().ok()?;
    pdf::dict_at(doc, catalog, b"AcroForm")
}

/// Every signature field of the form, in the form's order.
pub fn signature_fields(doc: &Document) -> Vec<SignatureField> {
    let pages: Vec<(ObjectId, Vec<ObjectId>)> = doc
        .page_iter()
        .map(|page| {
            let annots = doc
                .get_dictionary(page)
                .ok()
                .and_then(|d| d.get(b"Annots").ok())
                .and_then(|o| doc.dereference(o).ok())
                .and_then(|(_, o)| o.as_array().ok())
                .map(|a| a.iter().filter_map(|o| o.as_reference().ok()).collect())
                .unwrap_or_default();
            (page, annots)
        })
        .collect();
    terminals(doc)
        .into_iter()
        .filter(|t| t.kind.as_deref() == Some(b"Sig"))
        .filter_map(|t| {
            let dict = doc.get_dictionary(t.id).ok()?;
            let widget = if dict.get(b"Subtype").ok().and_then(|o| o.as_name().ok()) == Some(b"Widget") {
                t.id
            } else {
                match dict.get(b"Kids").and_then(|o| doc.dereference(o).map(|(_, o)| o)) {
                    Ok(Object::Array(kids)) => kids.first().and_then(|o| o.as_reference().ok()).unwrap_or(t.id),
                    _ => t.id,
                }
            };
            let widget_dict = doc.get_dictionary(widget).ok();
            let page = widget_dict
                .and_then(|w| w.get(b"P").ok())
                .and_then(|o| o.as_reference().ok())
                .filter(|p| pages.iter().any(|(id, _)| id == p))
                .or_else(|| pages.iter().find(|(_, annots)| annots.contains(&widget)).map(|(id, _)| *id));
            let rect = widget_dict.and_then(|w| w.get(b"Rect").ok()).and_then(|r| pdf::rect(doc, r));
            let value = dict.get(b"V").ok();
            let signed = value.is_some_and(|v| doc.dereference(v).is_ok_and(|(_, o)| o.as_dict().is_ok()));
            Some(SignatureField {
                id: t.id,
                name: t.name,
                widget,
                page,
                rect,
                signed,
                value: value.and_then(|v| v.as_reference().ok()),
            })
        })
        .collect()
}

/// The type of the form's field `name` when it is not a signature field (`text`,
/// `button`, `choice`), None when there is no such field or it is a signature field.
pub fn any_field_named(doc: &Document, name: &str) -> Option<&'static str> {
    terminals(doc).into_iter().find(|t| t.name == name).and_then(|t| match t.kind.as_deref() {
        Some(b"Sig") => None,
        Some(b"Tx") => Some("text"),
        Some(b"Btn") => Some("button"),
        Some(b"Ch") => Some("choice"),
        _ => Some("untyped"),
    })
}

/// `Signature1`, `Signature2`…: the first no field of the document has.
pub fn free_name(doc: &Document) -> String {
    let taken: HashSet<String> = terminals(doc).into_iter().map(|t| t.name).collect();
    (1..).map(|n| format!("Signature{n}")).find(|name| !taken.contains(name)).expect("a free name")
}
