//! What a page's content draws: whether it shows text and how many images it draws,
//! through form XObjects too, within a budget of decoded content per page and per
//! document. Pages and forms already scanned are remembered: many pages share a
//! letterhead form or the very same content.
//!
//! What this module must not do: decode past [`PAGE_CONTENT_LIMIT`] for a page or
//! [`TOTAL_CONTENT_LIMIT`] in all, follow forms deeper than [`MAX_FORM_DEPTH`], or use a
//! route file.

use std::collections::{HashMap, HashSet};

use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use super::{MAX_FORM_DEPTH, Notes, PAGE_CONTENT_LIMIT, TOTAL_CONTENT_LIMIT, name_at};
use crate::pdf;

/// What a content stream draws.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Drawn {
    pub(super) text: bool,
    pub(super) images: u64,
}

impl Drawn {
    fn add(&mut self, other: Drawn) {
        self.text |= other.text;
        self.images = self.images.saturating_add(other.images);
    }
}

/// Scans page content, remembering form XObjects and pages already scanned: many
/// pages share a letterhead form or the very same content.
pub(super) struct Scanner<'a> {
    doc: &'a Document,
    total_left: usize,
    page_left: usize,
    page_number: u32,
    forms: HashMap<ObjectId, Drawn>,
    active: HashSet<ObjectId>,
    pages: HashMap<(Vec<ObjectId>, usize), Drawn>,
}

impl<'a> Scanner<'a> {
    pub(super) fn new(doc: &'a Document) -> Scanner<'a> {
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

    pub(super) fn scan_page(&mut self, page_id: ObjectId, number: u32, notes: &mut Notes) -> Drawn {
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
