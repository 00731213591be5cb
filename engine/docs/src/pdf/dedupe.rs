//! Objects stored once: byte-identical streams (same dictionary apart from /Length, same
//! data) and identical font and graphics-state dictionaries are kept once, every reference
//! pointed at the one kept. A merge of one file with itself, or of files made by one tool
//! that embed the same fonts and images, then carries each of them once.
//!
//! Only objects that are values are shared: streams (content, images, fonts' programs,
//! forms), arrays (widths, color spaces), dictionaries of type Font, FontDescriptor,
//! ExtGState, Encoding and Pattern, and untyped dictionaries that are plainly values
//! (resources, shadings, functions). Pages, annotations, form fields, outline items and
//! structure elements have an identity (a page appears once in the tree, a field is one
//! field) and are never merged: nothing typed otherwise, and no dictionary with a parent,
//! a rectangle, a field type or name, kids or a page.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use lopdf::{Dictionary, Document, Object, ObjectId};

/// What [`share_identical`] merged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shared {
    /// Stream objects dropped for an identical one.
    pub streams: usize,
    /// Dictionaries and arrays dropped.
    pub dictionaries: usize,
}

/// Dictionary types that are values, safe to share.
const SHARED_TYPES: &[&[u8]] = &[b"Font", b"FontDescriptor", b"ExtGState", b"Encoding", b"Pattern"];

/// Keys of the dictionaries that have an identity (tree nodes, annotations, fields,
/// outline items, structure elements): an untyped dictionary with one is never shared.
const IDENTITY_KEYS: &[&[u8]] = &[b"Parent", b"Rect", b"FT", b"T", b"Kids", b"P", b"Subtype", b"First", b"Next"];

/// Stores identical streams and value dictionaries once. Repeated while merging makes more
/// objects identical (two fonts pointing at two copies of one font program become one).
pub fn share_identical(doc: &mut Document) -> Shared {
    let mut shared = Shared::default();
    for _ in 0..8 {
        let mut keepers: HashMap<u64, Vec<ObjectId>> = HashMap::new();
        let mut remap: HashMap<ObjectId, ObjectId> = HashMap::new();
        let (mut streams, mut dictionaries) = (0, 0);
        // In id order, so the object kept is the first one, whatever the map's order.
        let mut ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            let Some(key) = doc.objects.get(&id).and_then(sharing_key) else { continue };
            let group = keepers.entry(key).or_default();
            let same = group.iter().copied().find(|keeper| match (doc.objects.get(keeper), doc.objects.get(&id)) {
                (Some(a), Some(b)) => same_value(a, b),
                _ => false,
            });
            match same {
                Some(keeper) => {
                    remap.insert(id, keeper);
                    match doc.objects.get(&id) {
                        Some(Object::Stream(_)) => streams += 1,
                        _ => dictionaries += 1,
                    }
                }
                None => group.push(id),
            }
        }
        if remap.is_empty() {
            break;
        }
        for object in doc.objects.values_mut() {
            redirect(object, &remap);
        }
        for value in doc.trailer.iter_mut().map(|(_, v)| v) {
            redirect(value, &remap);
        }
        for id in remap.keys() {
            doc.objects.remove(id);
        }
        shared.streams += streams;
        shared.dictionaries += dictionaries;
    }
    shared
}

/// A hash of what makes `object` a shareable value, or `None` when it is not one.
fn sharing_key(object: &Object) -> Option<u64> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match object {
        Object::Stream(stream) => {
            if matches!(stream.dict.get(b"Type").and_then(Object::as_name), Ok(b"XRef" | b"ObjStm")) {
                return None;
            }
            0u8.hash(&mut hasher);
            stream.content.hash(&mut hasher);
            stream.dict.len().hash(&mut hasher);
        }
        Object::Dictionary(dict) => {
            let value = match dict.get(b"Type") {
                Ok(kind) => kind.as_name().is_ok_and(|kind| SHARED_TYPES.contains(&kind)),
                Err(_) => !dict.iter().any(|(key, _)| IDENTITY_KEYS.contains(&key.as_slice())),
            };
            if !value || dict.is_empty() {
                return None;
            }
            1u8.hash(&mut hasher);
            dict.len().hash(&mut hasher);
            for (key, value) in dict.iter() {
                key.hash(&mut hasher);
                // The values' text is enough to tell most apart; equality decides.
                format!("{value:?}").hash(&mut hasher);
            }
        }
        Object::Array(items) => {
            2u8.hash(&mut hasher);
            format!("{items:?}").hash(&mut hasher);
        }
        _ => return None,
    }
    Some(hasher.finish())
}

fn same_value(a: &Object, b: &Object) -> bool {
    match (a, b) {
        (Object::Stream(a), Object::Stream(b)) => a.content == b.content && same_except_length(&a.dict, &b.dict),
        (Object::Dictionary(a), Object::Dictionary(b)) => a == b,
        (Object::Array(a), Object::Array(b)) => a == b,
        _ => false,
    }
}

fn same_except_length(a: &Dictionary, b: &Dictionary) -> bool {
    let count = |d: &Dictionary| d.iter().filter(|(k, _)| k.as_slice() != b"Length").count();
    count(a) == count(b) && a.iter().filter(|(k, _)| k.as_slice() != b"Length").all(|(k, v)| b.get(k).ok() == Some(v))
}

fn redirect(object: &mut Object, remap: &HashMap<ObjectId, ObjectId>) {
    match object {
        Object::Reference(id) => {
            if let Some(kept) = remap.get(id) {
                *id = *kept;
            }
        }
        Object::Array(items) => items.iter_mut().for_each(|i| redirect(i, remap)),
        Object::Dictionary(dict) => dict.iter_mut().for_each(|(_, v)| redirect(v, remap)),
        Object::Stream(stream) => stream.dict.iter_mut().for_each(|(_, v)| redirect(v, remap)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use lopdf::{Stream, dictionary};

    use super::*;

    #[test]
    fn identical_streams_and_fonts_are_kept_once_and_pages_never() {
        let mut doc = Document::with_version("1.7");
        let program = |doc: &mut Document| doc.add_object(Stream::new(dictionary! { "Length1" => 3 }, b"abc".to_vec()));
        let (p1, p2) = (program(&mut doc), program(&mut doc));
        let font = |doc: &mut Document, file| {
            let descriptor = doc.add_object(dictionary! { "Type" => "FontDescriptor", "FontFile2" => file });
            doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "TrueType", "FontDescriptor" => descriptor })
        };
        let (f1, f2) = (font(&mut doc, p1), font(&mut doc, p2));
        let other = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let page = |doc: &mut Document, f| {
            doc.add_object(
                dictionary! { "Type" => "Page", "Resources" => dictionary! { "Font" => dictionary! { "F1" => f } } },
            )
        };
        let (page1, page2) = (page(&mut doc, f1), page(&mut doc, f2));
        let before = doc.objects.len();

        let shared = share_identical(&mut doc);
        assert_eq!(shared, Shared { streams: 1, dictionaries: 2 });
        assert_eq!(doc.objects.len(), before - 3);
        let font_of = |doc: &Document, page| {
            let dict = doc.get_dictionary(page).unwrap();
            let resources = dict.get(b"Resources").unwrap().as_dict().unwrap();
            resources.get(b"Font").unwrap().as_dict().unwrap().get(b"F1").unwrap().as_reference().unwrap()
        };
        // Both pages draw with the one font left; the pages stay two, and so does a font
        // that only looks alike.
        assert_eq!(font_of(&doc, page1), f1);
        assert_eq!(font_of(&doc, page2), f1);
        assert!(doc.objects.contains_key(&page2) && doc.objects.contains_key(&other));
        assert_eq!(share_identical(&mut doc), Shared::default(), "nothing left to share");
    }
}
