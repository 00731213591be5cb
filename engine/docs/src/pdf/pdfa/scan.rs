//! One reading of everything the document draws, for the conversion's steps that depend on
//! it: the fonts drawn with and the codes each shows ([`super::fonts`]), and whether device
//! colour is painted (the output intent). The content is found from the pages' resources
//! down, so what nothing draws is not read.

use std::collections::{BTreeSet, HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId};

/// Deepest nesting of resources followed (forms in forms, patterns, Type 3 glyphs).
const MAX_DEPTH: usize = 32;
/// Most content bytes decoded, across the file.
const MAX_SCANNED_CONTENT: usize = 512 * 1024 * 1024;

/// What the content draws with.
#[derive(Default)]
pub struct Scan {
    /// Every font drawn with, by id, with the first page it is drawn on.
    pub fonts: Vec<(ObjectId, usize)>,
    /// The codes the text of each font shows.
    pub codes: HashMap<ObjectId, BTreeSet<u8>>,
    /// Whether every content stream was read (none past the budget or undecodable).
    pub complete: bool,
    /// Whether some content paints in device CMYK (operators, `cs` names, inline images).
    pub cmyk: bool,
    /// Whether some content paints in device RGB.
    pub rgb: bool,
}

/// Something that draws: its content streams and the resources they name.
struct Drawing {
    streams: Vec<ObjectId>,
    resources: Option<Object>,
    page: usize,
    depth: usize,
}

/// Reads every content drawn, from the pages' resources down (forms, patterns, annotation
/// appearances, Type 3 glyphs), once: the fonts and codes it shows, the device colour it paints.
pub fn scan(doc: &Document) -> Scan {
    let mut used = Scan { complete: true, ..Scan::default() };
    let mut seen_fonts = HashSet::new();
    let mut seen = HashSet::new();
    let mut budget = MAX_SCANNED_CONTENT;
    for (index, page_id) in doc.page_iter().enumerate() {
        let page = index + 1;
        let Ok(page_dict) = doc.get_dictionary(page_id) else { continue };
        let streams = crate::pdf::content_refs(doc, page_dict).iter().filter_map(|c| c.as_reference().ok()).collect();
        let resources = crate::pdf::inherited(doc, page_id, b"Resources").cloned();
        let mut todo = vec![Drawing { streams, resources, page, depth: 0 }];
        // Annotation appearances draw too.
        let annots = page_dict
            .get(b"Annots")
            .ok()
            .and_then(|a| doc.dereference(a).ok())
            .and_then(|(_, a)| a.as_array().ok().cloned())
            .unwrap_or_default();
        for annot in annots {
            let Some(ap) = doc
                .dereference(&annot)
                .ok()
                .and_then(|(_, a)| a.as_dict().ok())
                .and_then(|a| a.get(b"AP").ok())
                .and_then(|ap| doc.dereference(ap).ok())
                .and_then(|(_, ap)| ap.as_dict().ok())
            else {
                continue;
            };
            for (_, look) in ap.iter() {
                for id in appearance_streams(doc, look) {
                    let resources = doc
                        .get_object(id)
                        .ok()
                        .and_then(|s| s.as_stream().ok())
                        .and_then(|s| s.dict.get(b"Resources").ok())
                        .cloned();
                    todo.push(Drawing { streams: vec![id], resources, page, depth: 1 });
                }
            }
        }
        while let Some(drawing) = todo.pop() {
            if drawing.depth > MAX_DEPTH || drawing.streams.iter().any(|id| !seen.insert(*id)) && drawing.depth > 0 {
                continue;
            }
            let resources =
                drawing.resources.as_ref().and_then(|r| doc.dereference(r).ok()).and_then(|(_, r)| r.as_dict().ok());
            let fonts = resources
                .and_then(|r| r.get(b"Font").ok())
                .and_then(|f| doc.dereference(f).ok())
                .and_then(|(_, f)| f.as_dict().ok());
            for (_, font) in fonts.into_iter().flat_map(Dictionary::iter) {
                let Object::Reference(id) = font else { continue };
                if !seen_fonts.insert(*id) {
                    continue;
                }
                used.fonts.push((*id, drawing.page));
                // A Type 3 font's glyphs are drawings with resources of their own.
                if let Ok(dict) = doc.get_dictionary(*id)
                    && let Some(procs) = dict
                        .get(b"CharProcs")
                        .ok()
                        .and_then(|c| doc.dereference(c).ok())
                        .and_then(|(_, c)| c.as_dict().ok())
                {
                    let streams = procs.iter().filter_map(|(_, g)| g.as_reference().ok()).collect();
                    let resources = dict.get(b"Resources").ok().cloned();
                    todo.push(Drawing { streams, resources, page: drawing.page, depth: drawing.depth + 1 });
                }
            }
            used.complete &= read_content(doc, &drawing.streams, fonts, &mut budget, &mut used);
            let Some(resources) = resources else { continue };
            for key in [&b"XObject"[..], b"Pattern"] {
                let Some(items) =
                    resources.get(key).ok().and_then(|x| doc.dereference(x).ok()).and_then(|(_, x)| x.as_dict().ok())
                else {
                    continue;
                };
                for (_, item) in items.iter() {
                    let Object::Reference(id) = item else { continue };
                    let Ok(Object::Stream(stream)) = doc.get_object(*id) else { continue };
                    // A form without resources of its own uses the ones it is drawn with.
                    let inner = stream.dict.get(b"Resources").ok().cloned().or_else(|| drawing.resources.clone());
                    todo.push(Drawing {
                        streams: vec![*id],
                        resources: inner,
                        page: drawing.page,
                        depth: drawing.depth + 1,
                    });
                }
            }
        }
    }
    used
}

/// Reads the content of `streams`: the codes its text operators show, per font (named
/// in `fonts`), and whether it paints in device colour; false when some content could not
/// be read.
fn read_content(
    doc: &Document,
    streams: &[ObjectId],
    fonts: Option<&Dictionary>,
    budget: &mut usize,
    scan: &mut Scan,
) -> bool {
    let mut content = Vec::new();
    for id in streams {
        let Ok(Object::Stream(stream)) = doc.get_object(*id) else { continue };
        let Ok(bytes) = stream.decompressed_content_with_limit(*budget) else { return false };
        *budget = budget.saturating_sub(bytes.len());
        content.extend_from_slice(&bytes);
        content.push(b'\n');
    }
    let Ok(content) = lopdf::content::Content::decode(&content) else { return false };
    let mut current: Option<ObjectId> = None;
    let codes = &mut scan.codes;
    let mut add = |font: Option<ObjectId>, text: &Object| {
        let (Some(font), Object::String(bytes, _)) = (font, text) else { return };
        codes.entry(font).or_default().extend(bytes.iter().copied());
    };
    let named = |op: &lopdf::content::Operation, names: [&[u8]; 2]| {
        op.operands.iter().any(|o| match o {
            Object::Name(n) => names.contains(&n.as_slice()),
            // An inline image's dictionary.
            Object::Stream(s) => {
                s.dict.iter().any(|(_, v)| matches!(v, Object::Name(n) if names.contains(&n.as_slice())))
            }
            _ => false,
        })
    };
    for op in &content.operations {
        match op.operator.as_str() {
            "Tf" => {
                current = op
                    .operands
                    .first()
                    .and_then(|n| n.as_name().ok())
                    .and_then(|n| fonts?.get(n).ok())
                    .and_then(|f| f.as_reference().ok());
            }
            "Tj" | "'" => op.operands.first().into_iter().for_each(|t| add(current, t)),
            "\"" => op.operands.get(2).into_iter().for_each(|t| add(current, t)),
            "TJ" => {
                if let Some(Object::Array(items)) = op.operands.first() {
                    items.iter().for_each(|t| add(current, t));
                }
            }
            "k" | "K" => scan.cmyk = true,
            "rg" | "RG" => scan.rgb = true,
            _ => {}
        }
        scan.cmyk |= named(op, [b"DeviceCMYK", b"CMYK"]);
        scan.rgb |= named(op, [b"DeviceRGB", b"RGB"]);
    }
    true
}

/// The streams of one appearance entry (a stream, or a dictionary of states).
fn appearance_streams(doc: &Document, look: &Object) -> Vec<ObjectId> {
    match look {
        Object::Reference(id) => match doc.get_object(*id) {
            Ok(Object::Stream(_)) => vec![*id],
            Ok(Object::Dictionary(states)) => states.iter().filter_map(|(_, s)| s.as_reference().ok()).collect(),
            _ => Vec::new(),
        },
        Object::Dictionary(states) => states.iter().filter_map(|(_, s)| s.as_reference().ok()).collect(),
        _ => Vec::new(),
    }
}
