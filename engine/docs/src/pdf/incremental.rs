//! Incremental updates: objects appended after a file's last byte with a cross-reference
//! section of their own, so every earlier revision (and every signature over it) stays
//! byte for byte what it was.

use std::collections::BTreeMap;

use lopdf::xref::XrefType;
use lopdf::{Document, Object, ObjectId, Writer};

use crate::error::EngineError;

/// An update being put together over `base`.
pub struct Update<'a> {
    base: &'a [u8],
    doc: &'a Document,
    objects: BTreeMap<ObjectId, Object>,
    next: u32,
}

/// The written file and where each object of the update starts and ends in it.
pub struct Written {
    /// The whole file: the base, then the update.
    pub bytes: Vec<u8>,
    /// Object id → byte range of `N G obj … endobj`.
    pub spans: BTreeMap<ObjectId, std::ops::Range<usize>>,
}

impl<'a> Update<'a> {
    /// An update to the file `base`, which `doc` was read from (as written: its
    /// cross-reference data was not repaired).
    pub fn new(base: &'a [u8], doc: &'a Document) -> Update<'a> {
        let highest = doc.max_id.max(doc.reference_table.size.saturating_sub(1));
        Update { base, doc, objects: BTreeMap::new(), next: highest + 1 }
    }

    /// Adds a new object; its id.
    pub fn add(&mut self, object: Object) -> ObjectId {
        let id = (self.next, 0);
        self.next += 1;
        self.objects.insert(id, object);
        id
    }

    /// Writes a new version of object `id`.
    pub fn replace(&mut self, id: ObjectId, object: Object) {
        self.objects.insert(id, object);
    }

    /// The object as the update leaves it: its new version, else the document's.
    pub fn current(&self, id: ObjectId) -> Option<&Object> {
        self.objects.get(&id).or_else(|| self.doc.objects.get(&id))
    }

    /// The file with the update appended.
    pub fn write(self) -> Result<Written, EngineError> {
        let failed = |e: std::io::Error| EngineError::internal(format!("writing the update: {e}"));
        let mut out = Vec::with_capacity(self.base.len() + 16 * 1024);
        out.extend_from_slice(self.base);
        if !out.ends_with(b"\n") && !out.ends_with(b"\r") {
            out.push(b'\n');
        }
        let mut spans = BTreeMap::new();
        for (&(number, generation), object) in &self.objects {
            let start = out.len();
            out.extend_from_slice(format!("{number} {generation} obj\n").as_bytes());
            Writer::write_object(&mut out, object)
                .map_err(|e| EngineError::internal(format!("writing the update: {e}")))?;
            out.extend_from_slice(b"\nendobj\n");
            spans.insert((number, generation), start..out.len());
        }
        let mut trailer = lopdf::Dictionary::new();
        let mut size = self.next;
        for key in [&b"Root"[..], b"Info"] {
            if let Ok(value) = self.doc.trailer.get(key) {
                trailer.set(key, value.clone());
            }
        }
        trailer.set("ID", file_id(self.doc, &out));
        trailer.set("Prev", Object::Integer(self.doc.xref_start as i64));
        let entries: Vec<Entry> = spans.iter().map(|(id, span)| (id.0, id.1, span.start)).collect();
        let xref_at = out.len();
        match self.doc.reference_table.cross_reference_type {
            XrefType::CrossReferenceTable => {
                use std::io::Write as _;
                out.extend_from_slice(b"xref\n");
                for run in runs(&entries) {
                    writeln!(out, "{} {}", run[0].0, run.len()).map_err(failed)?;
                    for (_, generation, offset) in run {
                        write!(out, "{offset:010} {generation:05} n\r\n").map_err(failed)?;
                    }
                }
                trailer.set("Size", Object::Integer(size as i64));
                out.extend_from_slice(b"trailer\n");
                Writer::write_object(&mut out, &Object::Dictionary(trailer))
                    .map_err(|e| EngineError::internal(format!("writing the update: {e}")))?;
                out.push(b'\n');
            }
            XrefType::CrossReferenceStream => {
                // The stream is an object of its own, listed in itself.
                let own = size;
                size += 1;
                let mut all = entries.clone();
                all.push((own, 0, xref_at));
                let mut index = Vec::new();
                let mut data = Vec::new();
                for run in runs(&all) {
                    index.push(Object::Integer(run[0].0 as i64));
                    index.push(Object::Integer(run.len() as i64));
                    for (_, generation, offset) in run {
                        data.push(1);
                        data.extend_from_slice(&(*offset as u64).to_be_bytes()[3..]);
                        data.extend_from_slice(&generation.to_be_bytes());
                    }
                }
                trailer.set("Type", Object::Name(b"XRef".to_vec()));
                trailer.set("Size", Object::Integer(size as i64));
                trailer.set("Index", Object::Array(index));
                trailer.set("W", Object::Array(vec![1.into(), 5.into(), 2.into()]));
                trailer.set("Length", Object::Integer(data.len() as i64));
                out.extend_from_slice(format!("{own} 0 obj\n").as_bytes());
                Writer::write_object(&mut out, &Object::Dictionary(trailer))
                    .map_err(|e| EngineError::internal(format!("writing the update: {e}")))?;
                out.extend_from_slice(b"\nstream\n");
                out.extend_from_slice(&data);
                out.extend_from_slice(b"\nendstream\nendobj\n");
            }
        }
        out.extend_from_slice(format!("startxref\n{xref_at}\n%%EOF\n").as_bytes());
        Ok(Written { bytes: out, spans })
    }
}

/// A cross-reference entry: object number, generation, offset.
type Entry = (u32, u16, usize);

/// Consecutive object numbers, grouped into cross-reference subsections.
fn runs(entries: &[Entry]) -> Vec<&[Entry]> {
    let mut runs = Vec::new();
    let mut start = 0;
    for i in 1..=entries.len() {
        if i == entries.len() || entries[i].0 != entries[i - 1].0 + 1 {
            runs.push(&entries[start..i]);
            start = i;
        }
    }
    runs
}

/// The file identifier: the first part kept (it names the document), the second new
/// (it names this revision).
fn file_id(doc: &Document, bytes: &[u8]) -> Object {
    let revision = crate::pdf::sign::cms::Digest::Sha256.of(&[bytes])[..16].to_vec();
    let first = match doc.trailer.get(b"ID") {
        Ok(Object::Array(parts)) => match parts.first() {
            Some(Object::String(first, _)) => first.clone(),
            _ => revision.clone(),
        },
        _ => revision.clone(),
    };
    Object::Array(vec![
        Object::String(first, lopdf::StringFormat::Hexadecimal),
        Object::String(revision, lopdf::StringFormat::Hexadecimal),
    ])
}
