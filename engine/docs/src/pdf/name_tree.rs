//! Reading and writing name trees (ISO 32000-1, 7.9.6): the sorted string-keyed maps
//! behind `/EmbeddedFiles`, `/Dests`, `/JavaScript` and the like.
//!
//! Reading keeps a visited set and caps depth and size, as hostile files have cycles and
//! very deep trees; the result says whether the whole tree was read, so a writer never
//! rewrites a tree it saw only part of.

use std::collections::HashSet;

use lopdf::{Dictionary, Document, Object, ObjectId};

/// Deepest node read.
pub const MAX_DEPTH: usize = 32;
/// Most nodes (intermediate and leaf) visited.
pub const MAX_NODES: usize = 100_000;
/// Most entries read.
pub const MAX_ENTRIES: usize = 200_000;
/// Most entries a written leaf holds (readers search leaves linearly).
const LEAF_SIZE: usize = 64;

/// The entries of a name tree, in tree order.
#[derive(Debug, Default)]
pub struct NameTree {
    /// Keys (raw string bytes, as stored) and values (references kept as references).
    pub entries: Vec<(Vec<u8>, Object)>,
    /// False when a cap stopped the walk: some entries were not read.
    pub complete: bool,
}

/// Reads the name tree rooted at `root` (a dictionary or a reference to one). Entries
/// whose key is not a string are skipped, as readers do.
pub fn read(doc: &Document, root: &Object) -> NameTree {
    let mut tree = NameTree { entries: Vec::new(), complete: true };
    let mut seen: HashSet<ObjectId> = HashSet::new();
    let mut stack = vec![(root, 0usize)];
    let mut visited = 0usize;
    while let Some((node, depth)) = stack.pop() {
        visited += 1;
        if visited > MAX_NODES || tree.entries.len() >= MAX_ENTRIES {
            tree.complete = false;
            break;
        }
        let Ok((id, object)) = doc.dereference(node) else { continue };
        // A node met again is a cycle (or a shared subtree): its entries are in already.
        if id.is_some_and(|id| !seen.insert(id)) {
            continue;
        }
        let Ok(dict) = object.as_dict() else { continue };
        if let Some(names) = array_at(doc, dict, b"Names") {
            for pair in names.chunks_exact(2) {
                if let [key, value] = pair
                    && let Ok((_, Object::String(key, _))) = doc.dereference(key)
                {
                    tree.entries.push((key.clone(), value.clone()));
                }
            }
        }
        if let Some(kids) = array_at(doc, dict, b"Kids") {
            if depth >= MAX_DEPTH {
                tree.complete = false;
                continue;
            }
            stack.extend(kids.iter().rev().map(|kid| (kid, depth + 1)));
        }
    }
    tree
}

fn array_at<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Vec<Object>> {
    doc.dereference(dict.get(key).ok()?).ok()?.1.as_array().ok()
}

/// Writes `entries` as a new name tree, sorted by key bytes as the standard requires
/// (entries with equal keys keep their order); returns the root's object id. Up to
/// 64 entries go in the root itself; more are split into leaves under it.
pub fn write(doc: &mut Document, mut entries: Vec<(Vec<u8>, Object)>) -> ObjectId {
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut root = Dictionary::new();
    if entries.len() <= LEAF_SIZE {
        root.set("Names", flatten(entries));
    } else {
        let mut kids = Vec::new();
        let mut rest = entries.into_iter().peekable();
        while rest.peek().is_some() {
            let chunk: Vec<(Vec<u8>, Object)> = rest.by_ref().take(LEAF_SIZE).collect();
            let limits = limits(&chunk);
            let mut leaf = Dictionary::new();
            leaf.set("Limits", limits);
            leaf.set("Names", flatten(chunk));
            kids.push(Object::Reference(doc.add_object(leaf)));
        }
        root.set("Kids", kids);
    }
    doc.add_object(root)
}

fn limits(chunk: &[(Vec<u8>, Object)]) -> Object {
    let key = |entry: Option<&(Vec<u8>, Object)>| {
        Object::String(entry.map(|(k, _)| k.clone()).unwrap_or_default(), lopdf::StringFormat::Literal)
    };
    Object::Array(vec![key(chunk.first()), key(chunk.last())])
}

fn flatten(entries: Vec<(Vec<u8>, Object)>) -> Object {
    let mut names = Vec::with_capacity(entries.len() * 2);
    for (key, value) in entries {
        names.push(Object::String(key, lopdf::StringFormat::Literal));
        names.push(value);
    }
    Object::Array(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::dictionary;

    fn key(text: &str) -> Object {
        Object::string_literal(text)
    }

    #[test]
    fn reads_nested_trees_and_survives_cycles() {
        let mut doc = Document::with_version("1.7");
        let leaf_b = doc.new_object_id();
        let leaf_a = doc.add_object(dictionary! { "Names" => vec![key("a"), 1.into(), key("b"), 2.into()] });
        // The second leaf points back at the root: a cycle.
        let root = doc.new_object_id();
        doc.objects.insert(
            leaf_b,
            Object::Dictionary(dictionary! { "Names" => vec![key("c"), 3.into()], "Kids" => vec![root.into()] }),
        );
        doc.objects.insert(root, Object::Dictionary(dictionary! { "Kids" => vec![leaf_a.into(), leaf_b.into()] }));
        let tree = read(&doc, &Object::Reference(root));
        assert!(tree.complete);
        let keys: Vec<&[u8]> = tree.entries.iter().map(|(k, _)| k.as_slice()).collect();
        assert_eq!(keys, vec![&b"a"[..], b"b", b"c"]);
    }

    #[test]
    fn writes_sorted_trees_that_read_back() {
        let mut doc = Document::with_version("1.7");
        let entries: Vec<(Vec<u8>, Object)> =
            (0..150).rev().map(|i| (format!("k{i:03}").into_bytes(), Object::Integer(i))).collect();
        let root = write(&mut doc, entries);
        let root_dict = doc.get_dictionary(root).unwrap();
        assert_eq!(root_dict.get(b"Kids").unwrap().as_array().unwrap().len(), 3);
        let tree = read(&doc, &Object::Reference(root));
        assert_eq!(tree.entries.len(), 150);
        assert!(tree.entries.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(tree.entries[0], (b"k000".to_vec(), Object::Integer(0)));
        let small = write(&mut doc, vec![(b"z".to_vec(), Object::Null), (b"a".to_vec(), Object::Null)]);
        let tree = read(&doc, &Object::Reference(small));
        assert_eq!(tree.entries[0].0, b"a");
    }

    #[test]
    fn a_too_deep_tree_is_incomplete() {
        let mut doc = Document::with_version("1.7");
        let mut node = doc.add_object(dictionary! { "Names" => vec![key("deep"), 1.into()] });
        for _ in 0..(MAX_DEPTH + 2) {
            node = doc.add_object(dictionary! { "Kids" => vec![node.into()] });
        }
        let tree = read(&doc, &Object::Reference(node));
        assert!(!tree.complete);
        assert!(tree.entries.is_empty());
    }
}
