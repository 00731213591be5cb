//! Building a new PDF from pages of other PDFs: the shared core of merge, split,
//! extract-pages, remove-pages and reorder.
//!
//! Each appended page is copied with everything it references (content, resources,
//! annotations), each shared object once per source. Inherited attributes are written
//! onto the page. References that would drag in the rest of the source are cut:
//! the page tree and the catalog become null, links to pages that are not copied lose
//! their destination. Outlines are rebuilt from the kept pages; form fields whose
//! widgets are kept are listed in the new AcroForm, renamed when two sources clash.

use std::collections::{HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};

use crate::error::EngineError;
use crate::pdf::outline_tree::{self, OutlineItem};
use crate::pdf::{INHERITABLE, decode_text_string, inherited};

/// What to carry over from a source besides its pages.
#[derive(Clone, Copy, Debug)]
pub struct Carry {
    /// Its bookmarks that point to kept pages.
    pub outline: bool,
    /// Its document information (title, author…) if none was carried yet.
    pub info: bool,
}

/// A new document under construction.
pub struct Assembler {
    doc: Document,
    pages: Vec<ObjectId>,
    outline: Vec<OutlineItem>,
    fields: Vec<ObjectId>,
    field_names: HashSet<String>,
    acroform: Dictionary,
    catalog_extra: Dictionary,
    info: Option<Object>,
    sources: usize,
}

impl Default for Assembler {
    fn default() -> Self {
        Assembler::new()
    }
}

impl Assembler {
    /// An empty document.
    pub fn new() -> Assembler {
        Assembler {
            doc: Document::with_version("1.4"),
            pages: Vec::new(),
            outline: Vec::new(),
            fields: Vec::new(),
            field_names: HashSet::new(),
            acroform: Dictionary::new(),
            catalog_extra: Dictionary::new(),
            info: None,
            sources: 0,
        }
    }

    /// Number of pages so far.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Appends pages `numbers` (1-based, in this order, repeats allowed) of `source`;
    /// returns the source's bookmarks to kept pages, pointed at their copies.
    pub fn append(
        &mut self,
        source: &Document,
        numbers: &[u32],
        carry: Carry,
    ) -> Result<Vec<OutlineItem>, EngineError> {
        self.append_shared(source, numbers, carry, None)
    }

    /// [`Assembler::append`] of a source that is appended more than once: what an earlier
    /// append of it copied and no page reaches (content, fonts, images…) is shared, not
    /// copied again. Pages, annotations, fields and what leads to them are copied each time,
    /// so every copy keeps its own links, bookmarks and form fields.
    pub fn append_shared(
        &mut self,
        source: &Document,
        numbers: &[u32],
        carry: Carry,
        mut shared: Option<&mut SharedCopies>,
    ) -> Result<Vec<OutlineItem>, EngineError> {
        let src_pages: Vec<ObjectId> = source.page_iter().collect();
        let mut copier = Copier::new(source, &src_pages);
        if let Some(shared) = shared.as_deref_mut() {
            copier.earlier = std::mem::take(&mut shared.copies);
        }
        for &n in numbers {
            let id = page_at(&src_pages, n)?;
            if let std::collections::hash_map::Entry::Vacant(e) = copier.page_map.entry(id) {
                let target = self.doc.new_object_id();
                e.insert(target);
            }
        }
        let mut copied = HashSet::new();
        for &n in numbers {
            let src_id = page_at(&src_pages, n)?;
            let first = copied.insert(src_id);
            let target_id = if first { copier.page_map[&src_id] } else { self.doc.new_object_id() };
            let page = self.page_dict(&mut copier, src_id, target_id, first)?;
            self.doc.objects.insert(target_id, Object::Dictionary(page));
            copier.drain(&mut self.doc);
            self.pages.push(target_id);
        }
        let items = map_outline(&outline_tree::read(source), &copier.page_map);
        if carry.outline {
            self.outline.extend(items.iter().cloned());
        }
        if carry.info
            && self.info.is_none()
            && let Ok(info) = source.trailer.get(b"Info")
        {
            let mapped = copier.map_object(info.clone(), &mut self.doc, 0);
            copier.drain(&mut self.doc);
            if !matches!(mapped, Object::Null) {
                self.info = Some(mapped);
            }
        }
        self.carry_catalog(&mut copier, source);
        if let Some(shared) = shared {
            shared.copies = std::mem::take(&mut copier.earlier);
            shared.copies.extend(copier.map.iter().filter(|(id, _)| !shared.bound.contains(id)));
        }
        self.sources += 1;
        if self.doc.version.as_str() < source.version.as_str() && source.version.len() <= 4 {
            self.doc.version = source.version.clone();
        }
        Ok(items)
    }

    fn page_dict(
        &mut self,
        copier: &mut Copier,
        src_id: ObjectId,
        target_id: ObjectId,
        first: bool,
    ) -> Result<Dictionary, EngineError> {
        let source = copier.src;
        let mut page = source
            .get_dictionary(src_id)
            .map_err(|e| EngineError::invalid_with("damaged_pdf", "", format!("a page object is unreadable ({e})")))?
            .clone();
        for key in INHERITABLE {
            if !page.has(key)
                && let Some(value) = inherited(source, src_id, key)
            {
                page.set(key, value.clone());
            }
        }
        // Keys tied to the source's page tree, structure tree or article threads.
        for key in [&b"Parent"[..], b"StructParents", b"B"] {
            page.remove(key);
        }
        let annots = page.remove(b"Annots");
        let mut mapped = match copier.map_object(Object::Dictionary(page), &mut self.doc, 0) {
            Object::Dictionary(d) => d,
            _ => Dictionary::new(),
        };
        if let Some(annots) = annots {
            let list = copier.annotations(annots, &mut self.doc, target_id, first);
            if !list.is_empty() {
                mapped.set("Annots", Object::Array(list));
            }
        }
        Ok(mapped)
    }

    fn carry_catalog(&mut self, copier: &mut Copier, source: &Document) {
        let Ok(catalog) = source.catalog() else { return };
        if let Ok(acro) = catalog.get(b"AcroForm").and_then(|o| source.dereference(o)).and_then(|(_, o)| o.as_dict()) {
            let fields = acro.get(b"Fields").and_then(|o| source.dereference(o)).and_then(|(_, o)| o.as_array());
            for field in fields.into_iter().flatten() {
                let Ok(src_field) = field.as_reference() else { continue };
                let Some(&target) = copier.map.get(&src_field) else { continue };
                self.claim_field_name(target);
                self.fields.push(target);
            }
            for key in [&b"DA"[..], b"Q", b"NeedAppearances"] {
                if !self.acroform.has(key)
                    && let Ok(value) = acro.get(key)
                {
                    let mapped = copier.map_object(value.clone(), &mut self.doc, 0);
                    self.acroform.set(key, mapped);
                }
            }
            // Default resources (the fonts fields are drawn with) of every source, so a
            // later file's fields keep their fonts when appearances are regenerated.
            if let Ok(value) = acro.get(b"DR") {
                let mapped = copier.map_object(value.clone(), &mut self.doc, 0);
                copier.drain(&mut self.doc);
                let merged = match self.acroform.get(b"DR") {
                    Ok(existing) => merge_resources(&self.doc, existing, &mapped),
                    Err(_) => mapped,
                };
                self.acroform.set("DR", merged);
            }
        }
        if self.sources == 0 {
            for key in [&b"Lang"[..], b"ViewerPreferences", b"PageLayout"] {
                if let Ok(value) = catalog.get(key) {
                    let mapped = copier.map_object(value.clone(), &mut self.doc, 0);
                    self.catalog_extra.set(key, mapped);
                }
            }
        }
        copier.drain(&mut self.doc);
    }

    /// Two sources may both have a field "name"; the later one becomes "name_2" so that
    /// filling one does not silently fill the other.
    fn claim_field_name(&mut self, field: ObjectId) {
        let Ok(dict) = self.doc.get_dictionary_mut(field) else { return };
        let Ok(Object::String(raw, _)) = dict.get(b"T") else { return };
        let name = decode_text_string(raw);
        if self.field_names.insert(name.clone()) {
            return;
        }
        let mut n = 2;
        let renamed = loop {
            let candidate = format!("{name}_{n}");
            if self.field_names.insert(candidate.clone()) {
                break candidate;
            }
            n += 1;
        };
        dict.set("T", crate::pdf::encode_text_string(&renamed));
    }

    /// Replaces the outline to be written (pages are this document's page objects, as
    /// returned by [`Assembler::page_ids`]).
    pub fn set_outline(&mut self, items: Vec<OutlineItem>) {
        self.outline = items;
    }

    /// The page objects so far, in order.
    pub fn page_ids(&self) -> &[ObjectId] {
        &self.pages
    }

    /// Builds the page tree and catalog and returns the document.
    pub fn finish(mut self) -> Result<Document, EngineError> {
        if self.pages.is_empty() {
            return Err(EngineError::internal("assembled a document without pages"));
        }
        let pages_id = self.doc.new_object_id();
        for &page in &self.pages {
            if let Ok(dict) = self.doc.get_dictionary_mut(page) {
                dict.set("Parent", Object::Reference(pages_id));
            }
        }
        let mut pages = Dictionary::new();
        pages.set("Type", Object::Name(b"Pages".to_vec()));
        pages.set("Kids", Object::Array(self.pages.iter().map(|&p| Object::Reference(p)).collect()));
        pages.set("Count", Object::Integer(self.pages.len() as i64));
        self.doc.objects.insert(pages_id, Object::Dictionary(pages));

        let mut catalog = self.catalog_extra;
        catalog.set("Type", Object::Name(b"Catalog".to_vec()));
        catalog.set("Pages", Object::Reference(pages_id));
        if !self.fields.is_empty() {
            let mut acroform = self.acroform;
            acroform.set("Fields", Object::Array(self.fields.iter().map(|&f| Object::Reference(f)).collect()));
            catalog.set("AcroForm", Object::Dictionary(acroform));
        }
        let catalog_id = self.doc.add_object(Object::Dictionary(catalog));
        self.doc.trailer = Dictionary::new();
        self.doc.trailer.set("Root", Object::Reference(catalog_id));
        if let Some(info) = self.info {
            self.doc.trailer.set("Info", info);
        }
        outline_tree::write(&mut self.doc, &self.outline)
            .map_err(|e| EngineError::internal(format!("writing the outline: {e}")))?;
        Ok(self.doc)
    }
}

/// A new PDF of `pages` (1-based, in order, repeats allowed) of `source`, with its
/// bookmarks to kept pages and its document information.
pub fn pages_of(source: &Document, pages: &[u32]) -> Result<Vec<u8>, EngineError> {
    crate::pdf::save(&mut pages_doc(source, pages)?)
}

/// [`pages_of`], kept in memory.
pub fn pages_doc(source: &Document, pages: &[u32]) -> Result<Document, EngineError> {
    let mut asm = Assembler::new();
    asm.append(source, pages, Carry { outline: true, info: true })?;
    asm.finish()
}

/// The answer of a route whose result is `pages` of `source` as one PDF named
/// `<input>-<suffix>.pdf` (extract, remove, reorder).
pub async fn pages_reply(
    source: crate::pdf::SourcePdf,
    pages: Vec<u32>,
    suffix: &'static str,
    output: crate::output::OutputMode,
) -> Result<crate::output::Reply<crate::output::NoJson>, EngineError> {
    use crate::output::{FileSet, OutFile, Reply, derived_name};
    crate::context::blocking(move || {
        let bytes = pages_of(&source.doc, &pages)?;
        let name = derived_name(&source.filename, suffix, "pdf");
        Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output)))
    })
    .await
}

/// A resource dictionary holding every entry of `existing` and the entries of `added`
/// whose names are new, category by category (`/Font`, `/XObject`, …).
fn merge_resources(doc: &Document, existing: &Object, added: &Object) -> Object {
    let as_dict = |o: &Object| doc.dereference(o).ok().and_then(|(_, o)| o.as_dict().ok()).cloned();
    let (Some(mut merged), Some(added)) = (as_dict(existing), as_dict(added)) else { return existing.clone() };
    for (category, entries) in added.iter() {
        match merged.get(category).ok().and_then(as_dict) {
            Some(mut have) => {
                if let Some(new) = as_dict(entries) {
                    for (name, value) in new.iter() {
                        if !have.has(name) {
                            have.set(name.clone(), value.clone());
                        }
                    }
                }
                merged.set(category.clone(), Object::Dictionary(have));
            }
            None => merged.set(category.clone(), entries.clone()),
        }
    }
    Object::Dictionary(merged)
}

fn page_at(pages: &[ObjectId], number: u32) -> Result<ObjectId, EngineError> {
    number
        .checked_sub(1)
        .and_then(|i| pages.get(i as usize))
        .copied()
        .ok_or_else(|| EngineError::internal(format!("page {number} was not checked against the page count")))
}

/// Keeps outline items whose page is kept; an item whose page is gone but has kept
/// children points to its first kept child's page.
fn map_outline(items: &[OutlineItem], page_map: &HashMap<ObjectId, ObjectId>) -> Vec<OutlineItem> {
    let mut kept = Vec::new();
    for item in items {
        let children = map_outline(&item.children, page_map);
        let page = item.page.and_then(|p| page_map.get(&p).copied());
        let had_target = item.page.is_some();
        if page.is_none() && children.is_empty() && (had_target || item.children.is_empty()) {
            continue;
        }
        let page = page.or_else(|| children.first().and_then(|c| c.page));
        kept.push(OutlineItem { title: item.title.clone(), page, children });
    }
    kept
}

/// What the appends of one source share. An object is *bound* when it is a page, an
/// annotation, a form field, a page-tree node, the catalog or the outline root, or refers
/// (directly or not) to one of them: such an object means something else in every copy
/// (a link to this copy's page, a field of its own), so it is copied each time. Every
/// other object copied once is shared by later appends.
pub struct SharedCopies {
    bound: HashSet<ObjectId>,
    copies: HashMap<ObjectId, ObjectId>,
}

impl SharedCopies {
    /// Finds the bound objects of `source`.
    pub fn new(source: &Document) -> SharedCopies {
        let mut seeds: Vec<ObjectId> = Vec::new();
        if let Ok(root) = source.trailer.get(b"Root").and_then(Object::as_reference) {
            seeds.push(root);
        }
        for page in source.page_iter() {
            seeds.push(page);
            let Ok(dict) = source.get_dictionary(page) else { continue };
            if let Ok(parent) = dict.get(b"Parent").and_then(Object::as_reference) {
                seeds.push(parent);
            }
            if let Ok(annots) = dict.get(b"Annots") {
                if let Ok(id) = annots.as_reference() {
                    seeds.push(id);
                }
                if let Ok((_, Object::Array(list))) = source.dereference(annots) {
                    seeds.extend(list.iter().filter_map(|a| a.as_reference().ok()));
                }
            }
        }
        if let Ok(catalog) = source.catalog() {
            for key in [&b"Outlines"[..], b"AcroForm", b"Pages"] {
                if let Ok(id) = catalog.get(key).and_then(Object::as_reference) {
                    seeds.push(id);
                }
            }
            let acro = catalog.get(b"AcroForm").and_then(|o| source.dereference(o)).and_then(|(_, o)| o.as_dict());
            let fields = acro.and_then(|a| a.get(b"Fields")).and_then(|o| source.dereference(o));
            if let Ok((_, Object::Array(list))) = fields {
                seeds.extend(list.iter().filter_map(|f| f.as_reference().ok()));
            }
        }
        // Who refers to whom, backwards; then everything that reaches a seed.
        let mut referrers: HashMap<ObjectId, Vec<ObjectId>> = HashMap::new();
        for (&id, object) in &source.objects {
            each_reference(object, 0, &mut |to| referrers.entry(to).or_default().push(id));
        }
        let mut bound: HashSet<ObjectId> = HashSet::new();
        while let Some(id) = seeds.pop() {
            if bound.insert(id) {
                seeds.extend(referrers.get(&id).into_iter().flatten().copied());
                // A field's kids are fields or widgets too.
                if let Ok(dict) = source.get_dictionary(id)
                    && !dict.has_type(b"Pages")
                    && let Ok(kids) = dict.get(b"Kids").and_then(Object::as_array)
                {
                    seeds.extend(kids.iter().filter_map(|k| k.as_reference().ok()));
                }
            }
        }
        SharedCopies { bound, copies: HashMap::new() }
    }
}

/// Calls `each` with every reference inside `object` (not following them).
fn each_reference(object: &Object, depth: usize, each: &mut impl FnMut(ObjectId)) {
    if depth > MAX_NESTING {
        return;
    }
    match object {
        Object::Reference(id) => each(*id),
        Object::Array(items) => items.iter().for_each(|o| each_reference(o, depth + 1, each)),
        Object::Dictionary(dict) => dict.iter().for_each(|(_, o)| each_reference(o, depth + 1, each)),
        Object::Stream(stream) => stream.dict.iter().for_each(|(_, o)| each_reference(o, depth + 1, each)),
        _ => {}
    }
}

/// Copies objects of one source into the target, each once.
struct Copier<'a> {
    src: &'a Document,
    /// The source's named destinations, indexed once.
    names: outline_tree::Names<'a>,
    /// Source object → target object, for everything but pages.
    map: HashMap<ObjectId, ObjectId>,
    /// Copies an earlier append of the same source made that may be shared (see
    /// [`SharedCopies`]).
    earlier: HashMap<ObjectId, ObjectId>,
    /// Source page → its (first) copy in the target.
    page_map: HashMap<ObjectId, ObjectId>,
    pages: HashSet<ObjectId>,
    /// Page-tree nodes, the catalog and the outline root: never copied.
    cut: HashSet<ObjectId>,
    queue: Vec<ObjectId>,
}

/// Nesting of direct objects handled; deeper structures are cut (the parser allows 100).
const MAX_NESTING: usize = 128;

impl<'a> Copier<'a> {
    fn new(src: &'a Document, pages: &[ObjectId]) -> Copier<'a> {
        let mut cut = HashSet::new();
        if let Ok(root) = src.trailer.get(b"Root").and_then(Object::as_reference) {
            cut.insert(root);
        }
        for &page in pages {
            let mut node = src.get_dictionary(page).ok();
            for _ in 0..64 {
                let Some(parent) = node.and_then(|d| d.get(b"Parent").and_then(Object::as_reference).ok()) else {
                    break;
                };
                if !cut.insert(parent) {
                    break;
                }
                node = src.get_dictionary(parent).ok();
            }
        }
        if let Ok(catalog) = src.catalog()
            && let Ok(outlines) = catalog.get(b"Outlines").and_then(Object::as_reference)
        {
            cut.insert(outlines);
        }
        Copier {
            src,
            names: outline_tree::Names::new(src),
            map: HashMap::new(),
            earlier: HashMap::new(),
            page_map: HashMap::new(),
            pages: pages.iter().copied().collect(),
            cut,
            queue: Vec::new(),
        }
    }

    fn map_ref(&mut self, id: ObjectId, target: &mut Document) -> Object {
        if self.pages.contains(&id) {
            return self.page_map.get(&id).map_or(Object::Null, |&t| Object::Reference(t));
        }
        if self.cut.contains(&id) || !self.src.objects.contains_key(&id) {
            return Object::Null;
        }
        if let Some(&t) = self.map.get(&id) {
            return Object::Reference(t);
        }
        if let Some(&t) = self.earlier.get(&id) {
            self.map.insert(id, t);
            return Object::Reference(t);
        }
        let t = target.new_object_id();
        self.map.insert(id, t);
        self.queue.push(id);
        Object::Reference(t)
    }

    fn drain(&mut self, target: &mut Document) {
        while let Some(src_id) = self.queue.pop() {
            let Some(object) = self.src.objects.get(&src_id).cloned() else { continue };
            let mapped = self.map_object(object, target, 0);
            if let Some(&t) = self.map.get(&src_id) {
                target.objects.insert(t, mapped);
            }
        }
    }

    fn is_dropped_page(&self, object: &Object) -> bool {
        matches!(object, Object::Reference(id) if self.pages.contains(id) && !self.page_map.contains_key(id))
    }

    fn map_object(&mut self, object: Object, target: &mut Document, depth: usize) -> Object {
        if depth > MAX_NESTING {
            return Object::Null;
        }
        match object {
            Object::Reference(id) => self.map_ref(id, target),
            Object::Array(items) => {
                // A destination to a page that is not copied is meaningless.
                if items.first().is_some_and(|first| self.is_dropped_page(first)) {
                    return Object::Null;
                }
                Object::Array(items.into_iter().map(|o| self.map_object(o, target, depth + 1)).collect())
            }
            Object::Dictionary(dict) => Object::Dictionary(self.map_dict(dict, target, depth)),
            Object::Stream(mut stream) => {
                let dict = std::mem::take(&mut stream.dict);
                stream.dict = self.map_dict(dict, target, depth);
                Object::Stream(stream)
            }
            other => other,
        }
    }

    fn map_dict(&mut self, mut dict: Dictionary, target: &mut Document, depth: usize) -> Dictionary {
        self.inline_named_destinations(&mut dict);
        // A form field's widgets on pages that are not copied stay behind.
        if dict.has(b"Kids")
            && !dict.has_type(b"Pages")
            && let Ok(Object::Array(kids)) = dict.get(b"Kids")
        {
            let kept: Vec<Object> = kids.iter().filter(|kid| !self.widget_on_dropped_page(kid)).cloned().collect();
            dict.set("Kids", Object::Array(kept));
        }
        let mut out = Dictionary::new();
        for (key, value) in dict.into_iter() {
            let mapped = self.map_object(value, target, depth + 1);
            out.set(key, mapped);
        }
        out
    }

    fn widget_on_dropped_page(&self, kid: &Object) -> bool {
        let Ok((_, Object::Dictionary(d))) = self.src.dereference(kid) else { return false };
        d.get(b"P").is_ok_and(|p| self.is_dropped_page(p))
    }

    /// Named destinations point into the source's name tree, which is not copied:
    /// write the destination itself instead, wherever a dictionary names one (a link's
    /// `/Dest`, a GoTo action's `/D`, direct or not, and along `/Next` chains, which
    /// reach this through the recursive copy).
    fn inline_named_destinations(&self, dict: &mut Dictionary) {
        let explicit = |value: &Object| match value {
            Object::Name(name) | Object::String(name, _) => {
                self.names.get(name).map(|found| destination_array(self.src, found.clone()))
            }
            _ => None,
        };
        if let Some(dest) = dict.get(b"Dest").ok().and_then(explicit) {
            dict.set("Dest", dest);
        }
        let goto = dict.get(b"S").and_then(Object::as_name).is_ok_and(|s| s == b"GoTo");
        if goto && let Some(dest) = dict.get(b"D").ok().and_then(explicit) {
            dict.set("D", dest);
        }
    }

    /// The page's annotations. A repeated page gets its own copies (an annotation
    /// belongs to one page), without form widgets (a field's widget cannot be twice).
    fn annotations(&mut self, annots: Object, target: &mut Document, page: ObjectId, first: bool) -> Vec<Object> {
        let list = match self.src.dereference(&annots) {
            Ok((_, Object::Array(list))) => list.clone(),
            _ => return Vec::new(),
        };
        let mut out = Vec::new();
        for annot in list {
            if first {
                match self.map_object(annot, target, 0) {
                    Object::Null => {}
                    mapped => out.push(mapped),
                }
                continue;
            }
            let Ok((_, Object::Dictionary(dict))) = self.src.dereference(&annot) else { continue };
            if dict.get(b"Subtype").and_then(Object::as_name).is_ok_and(|s| s == b"Widget") {
                continue;
            }
            let mut copy = self.map_dict(dict.clone(), target, 0);
            copy.set("P", Object::Reference(page));
            copy.remove(b"Popup");
            out.push(Object::Reference(target.add_object(Object::Dictionary(copy))));
        }
        self.drain(target);
        out
    }
}

/// A named destination's value is an array or a dictionary holding it under /D.
fn destination_array(doc: &Document, value: Object) -> Object {
    match doc.dereference(&value) {
        Ok((_, Object::Dictionary(d))) => d.get(b"D").cloned().unwrap_or(Object::Null),
        Ok((_, other)) => other.clone(),
        Err(_) => Object::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{Stream, dictionary};

    /// A document with `n` pages, each with its own content stream saying its number,
    /// sharing one font resource inherited from the page tree.
    pub(crate) fn numbered(n: usize) -> Document {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let mut kids = Vec::new();
        for i in 1..=n {
            let content = doc.add_object(Stream::new(
                dictionary! {},
                format!("BT /F1 12 Tf 72 720 Td (page {i}) Tj ET").into_bytes(),
            ));
            kids.push(Object::Reference(
                doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => content }),
            ));
        }
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids, "Count" => n as i64,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
                "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
            }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        doc
    }

    pub(crate) fn page_texts(doc: &Document) -> Vec<String> {
        doc.page_iter()
            .map(|p| {
                let content = String::from_utf8_lossy(&doc.get_page_content(p)).into_owned();
                content.split('(').nth(1).and_then(|s| s.split(')').next()).unwrap_or("").to_string()
            })
            .collect()
    }

    fn roundtrip(doc: &mut Document) -> Document {
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        Document::load_mem(&bytes).unwrap()
    }

    const ALL: Carry = Carry { outline: true, info: true };

    /// The names of the document's form fields, in the AcroForm's order.
    fn field_names(doc: &Document) -> Vec<String> {
        let acro = doc.catalog().unwrap().get(b"AcroForm").unwrap().as_dict().unwrap();
        let fields = acro.get(b"Fields").unwrap().as_array().unwrap();
        fields
            .iter()
            .map(|f| {
                let field = doc.get_dictionary(f.as_reference().unwrap()).unwrap();
                decode_text_string(field.get(b"T").unwrap().as_str().unwrap())
            })
            .collect()
    }

    #[test]
    fn copies_pages_in_order_with_repeats_and_inherited_attributes() {
        let src = numbered(5);
        let mut asm = Assembler::new();
        asm.append(&src, &[3, 1, 3], ALL).unwrap();
        let mut out = asm.finish().unwrap();
        let out = roundtrip(&mut out);
        assert_eq!(page_texts(&out), vec!["page 3", "page 1", "page 3"]);
        for page in out.page_iter() {
            let dict = out.get_dictionary(page).unwrap();
            assert!(dict.has(b"MediaBox") && dict.has(b"Resources"), "inherited attributes written on the page");
        }
        // Pages 2, 4, 5 and their content are not in the output.
        let streams: Vec<_> = out
            .objects
            .values()
            .filter_map(|o| o.as_stream().ok())
            .filter(|s| !s.dict.has_type(b"XRef"))
            .map(|s| String::from_utf8_lossy(&s.content).into_owned())
            .collect();
        assert_eq!(streams.len(), 2, "{streams:?}");
    }

    #[test]
    fn merges_sources_and_shares_resources_once_per_source() {
        let a = numbered(2);
        let b = numbered(3);
        let mut asm = Assembler::new();
        asm.append(&a, &[1, 2], ALL).unwrap();
        asm.append(&b, &[2], ALL).unwrap();
        let mut out = asm.finish().unwrap();
        let out = roundtrip(&mut out);
        assert_eq!(page_texts(&out), vec!["page 1", "page 2", "page 2"]);
        let fonts = out.objects.values().filter(|o| o.as_dict().is_ok_and(|d| d.has_type(b"Font"))).count();
        assert_eq!(fonts, 2);
    }

    #[test]
    fn keeps_outline_items_of_kept_pages_and_links_lose_dropped_targets() {
        let mut src = numbered(3);
        let pages: Vec<ObjectId> = src.page_iter().collect();
        let items = vec![
            OutlineItem { title: "One".into(), page: Some(pages[0]), children: vec![] },
            OutlineItem { title: "Two".into(), page: Some(pages[1]), children: vec![] },
            OutlineItem { title: "Three".into(), page: Some(pages[2]), children: vec![] },
        ];
        outline_tree::write(&mut src, &items).unwrap();
        let link_to_2 = src.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Link", "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()], "Dest" => vec![pages[1].into(), "Fit".into()] });
        let link_to_3 = src.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Link", "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()], "Dest" => vec![pages[2].into(), "Fit".into()] });
        src.get_dictionary_mut(pages[0]).unwrap().set("Annots", vec![link_to_2.into(), link_to_3.into()]);
        let mut asm = Assembler::new();
        asm.append(&src, &[1, 3], ALL).unwrap();
        let mut out = asm.finish().unwrap();
        let out = roundtrip(&mut out);
        let titles: Vec<String> = outline_tree::read(&out).into_iter().map(|i| i.title).collect();
        assert_eq!(titles, vec!["One", "Three"]);
        let out_pages: Vec<ObjectId> = out.page_iter().collect();
        let annots = out.get_page_annotations(out_pages[0]).unwrap();
        assert_eq!(annots.len(), 2);
        assert!(matches!(annots[0].get(b"Dest").unwrap(), Object::Null));
        let dest = annots[1].get(b"Dest").unwrap().as_array().unwrap();
        assert_eq!(dest[0].as_reference().unwrap(), out_pages[1]);
    }

    #[test]
    fn named_destinations_are_written_out_in_direct_and_indirect_actions() {
        let mut src = numbered(3);
        let pages: Vec<ObjectId> = src.page_iter().collect();
        let names = src.add_object(dictionary! {
            "Dests" => dictionary! { "Names" => vec![Object::string_literal("chap2"), vec![pages[1].into(), "Fit".into()].into()] }
        });
        let catalog = src.trailer.get(b"Root").unwrap().as_reference().unwrap();
        src.get_dictionary_mut(catalog).unwrap().set("Names", names);
        let rect = || -> Object { vec![0.into(), 0.into(), 10.into(), 10.into()].into() };
        let action = src.add_object(dictionary! { "S" => "GoTo", "D" => Object::string_literal("chap2") });
        let indirect =
            src.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Link", "Rect" => rect(), "A" => action });
        let direct = src.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Link", "Rect" => rect(), "Dest" => Object::Name(b"chap2".to_vec()) });
        src.get_dictionary_mut(pages[0]).unwrap().set("Annots", vec![indirect.into(), direct.into()]);

        let mut asm = Assembler::new();
        asm.append(&src, &[1, 2], ALL).unwrap();
        let mut out = asm.finish().unwrap();
        let out = roundtrip(&mut out);
        let out_pages: Vec<ObjectId> = out.page_iter().collect();
        let annots = out.get_page_annotations(out_pages[0]).unwrap();
        let action = out.dereference(annots[0].get(b"A").unwrap()).unwrap().1.as_dict().unwrap();
        let target = action.get(b"D").unwrap().as_array().unwrap();
        assert_eq!(target[0].as_reference().unwrap(), out_pages[1]);
        let target = annots[1].get(b"Dest").unwrap().as_array().unwrap();
        assert_eq!(target[0].as_reference().unwrap(), out_pages[1]);
    }

    #[test]
    fn renames_clashing_form_fields() {
        fn with_field(name: &str) -> Document {
            let mut doc = numbered(1);
            let page = doc.page_iter().next().unwrap();
            let field = doc.add_object(dictionary! { "FT" => "Tx", "T" => Object::string_literal(name), "Subtype" => "Widget", "Type" => "Annot", "Rect" => vec![0.into(), 0.into(), 100.into(), 20.into()], "P" => page });
            doc.get_dictionary_mut(page).unwrap().set("Annots", vec![field.into()]);
            let catalog = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
            let font =
                doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => name.to_string() });
            let dr = dictionary! { "Font" => dictionary! { name.to_string() => font } };
            doc.get_dictionary_mut(catalog)
                .unwrap()
                .set("AcroForm", dictionary! { "Fields" => vec![field.into()], "DR" => dr });
            doc
        }
        let mut asm = Assembler::new();
        asm.append(&with_field("name"), &[1], ALL).unwrap();
        asm.append(&with_field("name"), &[1], ALL).unwrap();
        asm.append(&with_field("other"), &[1], ALL).unwrap();
        let mut out = asm.finish().unwrap();
        let out = roundtrip(&mut out);
        assert_eq!(field_names(&out), ["name", "name_2", "other"]);
        let acro = out.catalog().unwrap().get(b"AcroForm").unwrap().as_dict().unwrap();
        let fonts = acro.get(b"DR").unwrap().as_dict().unwrap().get(b"Font").unwrap().as_dict().unwrap();
        assert!(fonts.has(b"name") && fonts.has(b"other"), "default resources of every file are kept");
    }

    #[test]
    fn a_source_appended_again_shares_content_and_keeps_its_own_pages_links_bookmarks_and_fields() {
        let mut src = numbered(2);
        let pages: Vec<ObjectId> = src.page_iter().collect();
        let items = vec![OutlineItem { title: "Two".into(), page: Some(pages[1]), children: vec![] }];
        outline_tree::write(&mut src, &items).unwrap();
        let rect = || -> Object { vec![0.into(), 0.into(), 10.into(), 10.into()].into() };
        let link = src.add_object(
            dictionary! { "Type" => "Annot", "Subtype" => "Link", "Rect" => rect(), "Dest" => vec![pages[1].into(), "Fit".into()] },
        );
        let field = src.add_object(dictionary! { "FT" => "Tx", "T" => Object::string_literal("name"), "Subtype" => "Widget", "Type" => "Annot", "Rect" => rect(), "P" => pages[0] });
        src.get_dictionary_mut(pages[0]).unwrap().set("Annots", vec![link.into(), field.into()]);
        let catalog = src.trailer.get(b"Root").unwrap().as_reference().unwrap();
        src.get_dictionary_mut(catalog).unwrap().set("AcroForm", dictionary! { "Fields" => vec![field.into()] });

        let mut shared = SharedCopies::new(&src);
        let mut asm = Assembler::new();
        let mut outline = Vec::new();
        for _ in 0..3 {
            outline.extend(asm.append_shared(&src, &[1, 2], ALL, Some(&mut shared)).unwrap());
        }
        asm.set_outline(outline);
        let mut out = asm.finish().unwrap();
        let out = roundtrip(&mut out);
        assert_eq!(page_texts(&out), ["page 1", "page 2"].repeat(3));
        let out_pages: Vec<ObjectId> = out.page_iter().collect();
        // Content streams and the font are there once, shared by the three copies.
        let contents: HashSet<ObjectId> = out_pages
            .iter()
            .map(|&p| out.get_dictionary(p).unwrap().get(b"Contents").unwrap().as_reference().unwrap())
            .collect();
        assert_eq!(contents.len(), 2);
        let fonts = out.objects.values().filter(|o| o.as_dict().is_ok_and(|d| d.has_type(b"Font"))).count();
        assert_eq!(fonts, 1);
        for copy in 0..3 {
            let (first, second) = (out_pages[2 * copy], out_pages[2 * copy + 1]);
            let annots = out.get_page_annotations(first).unwrap();
            assert_eq!(annots.len(), 2, "copy {copy}");
            // The link goes to this copy's second page, and the widget sits on this copy's first.
            let dest = annots[0].get(b"Dest").unwrap().as_array().unwrap();
            assert_eq!(dest[0].as_reference().unwrap(), second, "copy {copy}");
            assert_eq!(annots[1].get(b"P").unwrap().as_reference().unwrap(), first, "copy {copy}");
        }
        let bookmarks: Vec<Option<ObjectId>> = outline_tree::read(&out).into_iter().map(|i| i.page).collect();
        assert_eq!(bookmarks, [1, 3, 5].map(|i| Some(out_pages[i])));
        assert_eq!(field_names(&out), ["name", "name_2", "name_3"]);
    }
}
