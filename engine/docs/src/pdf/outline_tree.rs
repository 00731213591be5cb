//! Reading and writing the document outline (bookmarks) as a plain tree.
//!
//! Reading follows `/First`/`/Next` with a visited set and a depth cap, because damaged
//! and hostile files have cycles; destinations are resolved through `/Dest`, `/A`
//! GoTo actions and named destinations (the catalog's `/Dests` and the `/Names` tree).

use std::collections::{HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};

use crate::pdf::{dict_at, encode_text_string, text_string};

/// Deepest outline nesting read or written.
pub const MAX_DEPTH: usize = 32;
/// Most outline items read.
pub const MAX_ITEMS: usize = 20_000;

/// One bookmark: a title, the page it opens (a page object of its document), children.
#[derive(Clone, Debug, PartialEq)]
pub struct OutlineItem {
    /// The title shown to the reader (untrusted text).
    pub title: String,
    /// The page object the bookmark opens, if it resolves to a page.
    pub page: Option<ObjectId>,
    /// Child bookmarks.
    pub children: Vec<OutlineItem>,
}

/// Reads the outline tree of `doc`; an absent or unreadable outline is empty.
pub fn read(doc: &Document) -> Vec<OutlineItem> {
    let Ok(catalog) = doc.catalog() else { return Vec::new() };
    let Some(root) = dict_at(doc, catalog, b"Outlines") else { return Vec::new() };
    let pages: HashSet<ObjectId> = doc.page_iter().collect();
    let names = Names::new(doc);
    let mut walk = Walk { doc, pages: &pages, names: &names, seen: HashSet::new(), budget: MAX_ITEMS };
    walk.children(root, 0)
}

/// State of one outline read.
struct Walk<'a> {
    doc: &'a Document,
    pages: &'a HashSet<ObjectId>,
    names: &'a Names<'a>,
    seen: HashSet<ObjectId>,
    budget: usize,
}

impl Walk<'_> {
    fn children(&mut self, parent: &Dictionary, depth: usize) -> Vec<OutlineItem> {
        let mut items = Vec::new();
        if depth >= MAX_DEPTH {
            return items;
        }
        let mut next = parent.get(b"First").and_then(Object::as_reference).ok();
        while let Some(id) = next {
            if self.budget == 0 || !self.seen.insert(id) {
                break;
            }
            self.budget -= 1;
            let Ok(node) = self.doc.get_dictionary(id) else { break };
            let title = node.get(b"Title").ok().and_then(|t| text_string(self.doc, t)).unwrap_or_default();
            let page = destination_page(self.doc, node, self.pages, self.names);
            let children = self.children(node, depth + 1);
            items.push(OutlineItem { title, page, children });
            next = node.get(b"Next").and_then(Object::as_reference).ok();
        }
        items
    }
}

/// The page an outline item or link annotation opens: `/Dest`, or a GoTo `/A`.
pub fn destination_page(
    doc: &Document,
    node: &Dictionary,
    pages: &HashSet<ObjectId>,
    names: &Names,
) -> Option<ObjectId> {
    if let Ok(dest) = node.get(b"Dest") {
        return resolve_dest(doc, dest, pages, names, 0);
    }
    let action = dict_at(doc, node, b"A")?;
    let kind = action.get(b"S").and_then(Object::as_name).ok()?;
    if kind != b"GoTo" {
        return None;
    }
    resolve_dest(doc, action.get(b"D").ok()?, pages, names, 0)
}

/// Resolves a destination (explicit array, name, or string) to a page object.
pub fn resolve_dest(
    doc: &Document,
    dest: &Object,
    pages: &HashSet<ObjectId>,
    names: &Names,
    depth: usize,
) -> Option<ObjectId> {
    if depth > 4 {
        return None;
    }
    let (_, dest) = doc.dereference(dest).ok()?;
    match dest {
        Object::Array(items) => match items.first()? {
            Object::Reference(id) if pages.contains(id) => Some(*id),
            // A page index (remote-go-to style) in a local destination: readers accept it.
            Object::Integer(index) => doc.page_iter().nth(usize::try_from(*index).ok()?),
            _ => None,
        },
        Object::Dictionary(d) => resolve_dest(doc, d.get(b"D").ok()?, pages, names, depth + 1),
        Object::Name(name) | Object::String(name, _) => resolve_dest(doc, names.get(name)?, pages, names, depth + 1),
        _ => None,
    }
}

/// Most named destinations indexed.
const MAX_NAMES: usize = 200_000;

/// The named destinations of a document (the catalog's `/Dests` and the `/Names`
/// `/Dests` tree), indexed on first use so each lookup is one hash probe.
pub struct Names<'a> {
    doc: &'a Document,
    index: std::cell::OnceCell<HashMap<Vec<u8>, Object>>,
}

impl<'a> Names<'a> {
    /// An index of `doc`'s names, built when first asked.
    pub fn new(doc: &'a Document) -> Names<'a> {
        Names { doc, index: std::cell::OnceCell::new() }
    }

    /// The destination named `name`.
    pub fn get(&self, name: &[u8]) -> Option<&Object> {
        self.index.get_or_init(|| index_names(self.doc)).get(name)
    }
}

fn index_names(doc: &Document) -> HashMap<Vec<u8>, Object> {
    let mut index = HashMap::new();
    let Ok(catalog) = doc.catalog() else { return index };
    if let Some(tree) = dict_at(doc, catalog, b"Names").and_then(|names| dict_at(doc, names, b"Dests")) {
        let mut seen = HashSet::new();
        index_tree(doc, tree, &mut index, &mut seen, 0);
    }
    // The older catalog /Dests dictionary wins over the tree, as readers look it up first.
    if let Some(dests) = dict_at(doc, catalog, b"Dests") {
        for (name, value) in dests.iter().take(MAX_NAMES) {
            index.insert(name.clone(), value.clone());
        }
    }
    index
}

fn index_tree(
    doc: &Document,
    node: &Dictionary,
    index: &mut HashMap<Vec<u8>, Object>,
    seen: &mut HashSet<*const Dictionary>,
    depth: usize,
) {
    if depth > MAX_DEPTH || index.len() >= MAX_NAMES || !seen.insert(node as *const Dictionary) {
        return;
    }
    if let Ok(names) = node.get(b"Names").and_then(|o| doc.dereference(o)).and_then(|(_, o)| o.as_array()) {
        for pair in names.chunks(2) {
            if let [Object::String(key, _), value] = pair {
                index.entry(key.clone()).or_insert_with(|| value.clone());
                if index.len() >= MAX_NAMES {
                    return;
                }
            }
        }
    }
    let Ok(kids) = node.get(b"Kids").and_then(|o| doc.dereference(o)).and_then(|(_, o)| o.as_array()) else { return };
    for kid in kids {
        if let Ok((_, Object::Dictionary(kid))) = doc.dereference(kid) {
            index_tree(doc, kid, index, seen, depth + 1);
        }
    }
}

/// Counts items of a tree.
pub fn count(items: &[OutlineItem]) -> usize {
    items.iter().map(|i| 1 + count(&i.children)).sum()
}

/// Replaces the outline of `doc` with `items` (pages are page objects of `doc`; an item
/// without a page gets no destination). An empty list removes the outline.
pub fn write(doc: &mut Document, items: &[OutlineItem]) -> Result<(), lopdf::Error> {
    let catalog_id = doc.trailer.get(b"Root")?.as_reference()?;
    if items.is_empty() {
        doc.get_dictionary_mut(catalog_id)?.remove(b"Outlines");
        return Ok(());
    }
    let root = doc.new_object_id();
    let (first, last, total) = write_level(doc, root, items, 0);
    let mut outlines = Dictionary::new();
    outlines.set("Type", Object::Name(b"Outlines".to_vec()));
    outlines.set("First", Object::Reference(first));
    outlines.set("Last", Object::Reference(last));
    outlines.set("Count", Object::Integer(total as i64));
    doc.objects.insert(root, Object::Dictionary(outlines));
    let catalog = doc.get_dictionary_mut(catalog_id)?;
    catalog.set("Outlines", Object::Reference(root));
    if !catalog.has(b"PageMode") {
        catalog.set("PageMode", Object::Name(b"UseOutlines".to_vec()));
    }
    Ok(())
}

/// Writes one level; returns its first and last item ids and the number of items below
/// `parent` that are visible when every item is open.
fn write_level(
    doc: &mut Document,
    parent: ObjectId,
    items: &[OutlineItem],
    depth: usize,
) -> (ObjectId, ObjectId, usize) {
    let ids: Vec<ObjectId> = items.iter().map(|_| doc.new_object_id()).collect();
    let mut total = 0;
    for (i, item) in items.iter().enumerate() {
        let mut node = Dictionary::new();
        node.set("Title", encode_text_string(&item.title));
        node.set("Parent", Object::Reference(parent));
        if i > 0 {
            node.set("Prev", Object::Reference(ids[i - 1]));
        }
        if i + 1 < ids.len() {
            node.set("Next", Object::Reference(ids[i + 1]));
        }
        if let Some(page) = item.page {
            node.set("Dest", Object::Array(vec![Object::Reference(page), Object::Name(b"Fit".to_vec())]));
        }
        total += 1;
        if !item.children.is_empty() && depth + 1 < MAX_DEPTH {
            let (first, last, below) = write_level(doc, ids[i], &item.children, depth + 1);
            node.set("First", Object::Reference(first));
            node.set("Last", Object::Reference(last));
            // Positive: open. Top-level items show their children.
            node.set("Count", Object::Integer(below as i64));
            total += below;
        }
        doc.objects.insert(ids[i], Object::Dictionary(node));
    }
    (ids[0], ids[ids.len() - 1], total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::dictionary;

    fn doc_with_pages(n: usize) -> (Document, Vec<ObjectId>) {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let ids: Vec<ObjectId> = (0..n)
            .map(|_| doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()] }))
            .collect();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => ids.iter().map(|&i| Object::Reference(i)).collect::<Vec<_>>(), "Count" => n as i64 }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        (doc, ids)
    }

    #[test]
    fn writes_and_reads_back_a_nested_tree() {
        let (mut doc, pages) = doc_with_pages(3);
        let tree = vec![
            OutlineItem {
                title: "Part Ü".into(),
                page: Some(pages[0]),
                children: vec![OutlineItem { title: "Child".into(), page: Some(pages[2]), children: vec![] }],
            },
            OutlineItem { title: "No page".into(), page: None, children: vec![] },
        ];
        write(&mut doc, &tree).unwrap();
        let mut bytes = Vec::new();
        doc.save_to(&mut bytes).unwrap();
        let reread = Document::load_mem(&bytes).unwrap();
        let pages2: Vec<ObjectId> = reread.page_iter().collect();
        let back = read(&reread);
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].title, "Part Ü");
        assert_eq!(back[0].page, Some(pages2[0]));
        assert_eq!(back[0].children[0].page, Some(pages2[2]));
        assert_eq!(back[1].page, None);
        assert_eq!(count(&back), 3);
    }

    #[test]
    fn survives_cycles() {
        let (mut doc, pages) = doc_with_pages(1);
        let a = doc.new_object_id();
        let b = doc.new_object_id();
        let root = doc.add_object(dictionary! { "First" => a });
        doc.objects.insert(a, Object::Dictionary(dictionary! { "Title" => Object::string_literal("A"), "Next" => b, "First" => a, "Dest" => vec![pages[0].into(), "Fit".into()] }));
        doc.objects.insert(b, Object::Dictionary(dictionary! { "Title" => Object::string_literal("B"), "Next" => a }));
        let catalog = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
        doc.get_dictionary_mut(catalog).unwrap().set("Outlines", root);
        let items = read(&doc);
        assert_eq!(items.len(), 2);
        assert!(items[0].children.is_empty());
        assert_eq!(items[0].page, Some(pages[0]));
    }

    #[test]
    fn resolves_named_destinations() {
        let (mut doc, pages) = doc_with_pages(2);
        let names = doc.add_object(dictionary! {
            "Dests" => dictionary! { "Names" => vec![Object::string_literal("chap2"), vec![pages[1].into(), "Fit".into()].into()] }
        });
        let catalog = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
        doc.get_dictionary_mut(catalog).unwrap().set("Names", names);
        let set: HashSet<ObjectId> = pages.iter().copied().collect();
        let node = dictionary! { "A" => dictionary! { "S" => "GoTo", "D" => Object::string_literal("chap2") } };
        assert_eq!(destination_page(&doc, &node, &set, &Names::new(&doc)), Some(pages[1]));
    }
}
