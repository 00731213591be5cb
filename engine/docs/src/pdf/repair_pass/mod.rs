//! The careful pass of `/v1/pdf/repair`.
//!
//! qpdf's recovery rebuilds a damaged file's structure, but some damage lives inside objects and
//! survives a plain rewrite: a stream whose data no longer decodes, a /Filter that is not a name,
//! a page /Contents that is not a stream, a content stream that stops parsing half-way, a name
//! with a stray `#`. `qpdf --check` warns about each of these. This pass looks for them in
//! libqpdf's own model of the document, so that a stream is judged the way qpdf judges it, fixes
//! each while keeping as much as it can, writes the file and says what it did.
//!
//! libqpdf is driven through qpdf-sys with a handle of our own: the `qpdf` crate keeps its handle
//! private, and only the handle gives qpdf's warnings, which tell what the recovery had to do and
//! whether a stream decodes cleanly. An encrypted file is read with its password, repaired in
//! memory and written with its original encryption.
//!
//! This module is the repair algorithm. Beside it: [`qpdf_handle`] (the libqpdf binding),
//! [`filters`] (the stream filters decoded with a bound, as qpdf decodes them),
//! [`content_tokens`] (content streams as qpdf's tokenizer reads them), [`objects`] (what the
//! pass reads from and writes into qpdf's objects), [`report`] (the report's lines) and
//! [`streams`] (the checks and rebuilds of one stream's data).

mod content_tokens;
mod filters;
mod objects;
mod qpdf_handle;
mod report;
mod streams;

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::context::Limits;
use crate::error::EngineError;
use crate::pdf::{MAX_OUTPUT_BYTES, output_too_large};

use self::objects::{fixed_copy, to_json};
use self::qpdf_handle::{Doc, Kind, Level, Obj};
use self::report::{Entries, plain, recovery_fix};
use self::streams::{Chain, Role, Salvage, Verdict, role_of};

/// Most objects (dictionary entries, array items, scalars) the pass visits; a file with more is
/// refused rather than walked without end.
const MAX_NODES: usize = 4_000_000;

/// Largest content a content stream is rewritten from; a longer one keeps its first part.
const MAX_CLEAN_BYTES: usize = 8 << 20;

/// A repaired file and what was done to it.
pub struct Repaired {
    /// The new file.
    pub bytes: Vec<u8>,
    /// Its number of pages.
    pub pages: u32,
    /// What was repaired, as the route's report.
    pub report: Value,
}

/// Reads `input` with qpdf's recovery, fixes what qpdf would still warn about, and writes it
/// (linearized on request, encrypted as the input was). Errors are on the input's account and
/// name no field (the caller nests them under the file).
pub fn repair(input: &[u8], password: Option<&str>, linearize: bool, limits: &Limits) -> Result<Repaired, EngineError> {
    let doc = Doc::read(input.to_vec(), password)
        .map_err(|e| damaged(format!("the PDF is too damaged to read: {}", plain(&e))))?;
    let encrypted = doc.is_encrypted();
    let mut pass = Pass::new(&doc, limits);
    pass.run()?;
    let Pass { read, mut fixes, notes, recovered, .. } = pass;
    if doc.trailer().kind() == Kind::Dict && !doc.trailer().has(b"/Size") {
        // A trailer rebuilt from a damaged file may lack /Size, and qpdf then writes one without
        // it (readers call that damaged); any value makes it write the true size.
        doc.trailer().set(b"/Size", &doc.integer(0));
    }
    let bytes = doc.write(linearize).map_err(|e| damaged(format!("the PDF could not be rewritten: {}", plain(&e))))?;
    if bytes.len() > MAX_OUTPUT_BYTES {
        return Err(output_too_large());
    }
    for w in doc.warnings() {
        fixes.push(format!("while writing: {}", w.describe()));
    }
    let pages = doc.page_count().unwrap_or(0);
    let report = json!({
        "pages": pages,
        "linearized": linearize,
        "encrypted": encrypted,
        "recovered": recovered,
        "fixes": Entries::listed(&[&read, &fixes]),
        "notes": Entries::listed(&[&notes]),
    });
    Ok(Repaired { bytes, pages, report })
}

fn damaged(message: String) -> EngineError {
    EngineError::invalid_with("damaged_pdf", "", message)
}

/// Where a fix was made, for the report.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Root {
    Trailer,
    Object(i32, i32),
}

impl Root {
    fn label(self) -> String {
        match self {
            Root::Trailer => "trailer".to_string(),
            Root::Object(id, _) => format!("object {id}"),
        }
    }
}

/// The objects reachable from the trailer (what the writer writes).
struct Graph {
    streams: Vec<(i32, i32)>,
    /// Objects (or the trailer) holding a name with a stray `#`.
    bad_names: Vec<Root>,
    /// Streams used as an image's soft mask (/SMask).
    soft_masks: HashSet<(i32, i32)>,
}

/// A container being walked.
enum Frame<'d> {
    Dict { obj: Obj<'d>, keys: Vec<Vec<u8>>, next: usize, root: Root },
    Array { obj: Obj<'d>, len: usize, next: usize, root: Root },
}

struct Pass<'d> {
    doc: &'d Doc,
    limits: Limits,
    /// What qpdf's recovery did while reading.
    read: Entries,
    /// What this pass did.
    fixes: Entries,
    notes: Entries,
    recovered: bool,
    /// Decoded bytes the pass may still spend on checking streams.
    budget: usize,
    /// Streams already checked (shared content streams are checked once).
    checked: HashSet<(i32, i32)>,
    /// Streams used as soft masks.
    soft_masks: HashSet<(i32, i32)>,
    /// Content streams left unchecked (too large).
    unchecked: HashSet<(i32, i32)>,
    /// The content-stream lists of pages already checked.
    contents_seen: HashSet<Vec<(i32, i32)>>,
    /// Whether the budget ran out (noted once).
    budget_spent: bool,
}

impl<'d> Pass<'d> {
    fn new(doc: &'d Doc, limits: &Limits) -> Self {
        Pass {
            doc,
            limits: *limits,
            read: Entries::default(),
            fixes: Entries::default(),
            notes: Entries::default(),
            recovered: false,
            budget: limits.max_stream_bytes.saturating_mul(8),
            checked: HashSet::new(),
            soft_masks: HashSet::new(),
            unchecked: HashSet::new(),
            contents_seen: HashSet::new(),
            budget_spent: false,
        }
    }

    fn run(&mut self) -> Result<(), EngineError> {
        let pages =
            self.doc.page_count().map_err(|e| damaged(format!("the PDF is too damaged to read: {}", plain(&e))))?;
        let mut graph = self.walk()?;
        self.soft_masks = std::mem::take(&mut graph.soft_masks);
        self.note_recovery();
        self.fix_names(&graph.bad_names)?;
        let contents = self.fix_page_contents(pages);
        let content_ids: HashSet<(i32, i32)> = contents.iter().flatten().copied().collect();
        for &og in &graph.streams {
            if !content_ids.contains(&og) {
                self.check_stream(og);
            }
        }
        for (index, streams) in contents.iter().enumerate() {
            self.check_page(index as u32 + 1, streams);
        }
        // What fixing or checking made qpdf read for the first time.
        self.note_recovery();
        Ok(())
    }

    /// Turns the warnings qpdf gave while reading into fixes.
    fn note_recovery(&mut self) {
        for w in self.doc.warnings() {
            self.recovered = true;
            if let Some(fix) = recovery_fix(&w) {
                self.read.push(fix);
            }
        }
    }

    /// Visits everything reachable from the trailer, resolving each indirect object once.
    fn walk(&mut self) -> Result<Graph, EngineError> {
        let doc = self.doc;
        let mut seen = HashSet::new();
        let mut graph = Graph { streams: Vec::new(), bad_names: Vec::new(), soft_masks: HashSet::new() };
        let mut bad = HashSet::new();
        let mut frames: Vec<Frame<'d>> = Vec::new();
        let mut nodes = 0usize;
        let mut pending = Some((doc.trailer(), Root::Trailer));
        loop {
            if let Some((obj, root)) = pending.take() {
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(EngineError::too_large(
                        "file_too_large",
                        None,
                        format!("the PDF has more than {MAX_NODES} objects to check"),
                    ));
                }
                let root = match obj.indirect() {
                    Some((id, generation)) => {
                        if !seen.insert((id, generation)) {
                            continue;
                        }
                        Root::Object(id, generation)
                    }
                    None => root,
                };
                match obj.kind() {
                    Kind::Dict => frames.push(Frame::Dict { keys: obj.keys(), obj, next: 0, root }),
                    Kind::Stream => {
                        if let Root::Object(id, generation) = root {
                            graph.streams.push((id, generation));
                        }
                        let dict = obj.stream_dict();
                        frames.push(Frame::Dict { keys: dict.keys(), obj: dict, next: 0, root });
                    }
                    Kind::Array => frames.push(Frame::Array { len: obj.len(), obj, next: 0, root }),
                    Kind::Name if obj.name().contains(&0) && bad.insert(root) => graph.bad_names.push(root),
                    _ => {}
                }
            }
            let Some(top) = frames.last_mut() else { break };
            match top {
                Frame::Dict { obj, keys, next, root } => {
                    let Some(key) = keys.get(*next) else {
                        frames.pop();
                        continue;
                    };
                    *next += 1;
                    // A key with a stray # holds a NUL inside libqpdf and cannot be looked up.
                    if obj.has(key) {
                        let value = obj.get(key);
                        if key == b"/SMask"
                            && let Some(og) = value.indirect()
                        {
                            graph.soft_masks.insert(og);
                        }
                        pending = Some((value, *root));
                    } else if bad.insert(*root) {
                        graph.bad_names.push(*root);
                    }
                }
                Frame::Array { obj, len, next, root } => {
                    if *next >= *len {
                        frames.pop();
                        continue;
                    }
                    pending = Some((obj.item(*next), *root));
                    *next += 1;
                }
            }
        }
        Ok(graph)
    }

    /// Rewrites every object holding a name with a stray `#` so that its names are written
    /// properly (`#23`). A dictionary key with one cannot be read back through libqpdf's C API
    /// (it holds a NUL there), so such a key is dropped with its value.
    fn fix_names(&mut self, roots: &[Root]) -> Result<(), EngineError> {
        let doc = self.doc;
        for &root in roots {
            let label = root.label();
            let mut notes = Vec::new();
            let result = match root {
                Root::Trailer => {
                    let fixed = fixed_copy(doc, &doc.trailer(), &mut notes, 0);
                    if !fixed.has(b"/Size") {
                        fixed.set(b"/Size", &doc.integer(0));
                    }
                    let update =
                        json!({ "qpdf": [{ "jsonversion": 2 }, { "trailer": { "value": to_json(&fixed, 0) } }] });
                    doc.update_from_json(&update)
                }
                Root::Object(id, generation) => {
                    let obj = doc.object(id, generation);
                    if obj.kind() == Kind::Stream {
                        let fixed = fixed_copy(doc, &obj.stream_dict(), &mut notes, 0);
                        let key = format!("obj:{id} {generation} R");
                        let update = json!({ "qpdf": [{ "jsonversion": 2 }, { key: { "stream": { "dict": to_json(&fixed, 0) } } }] });
                        doc.update_from_json(&update)
                    } else {
                        let fixed = fixed_copy(doc, &obj, &mut notes, 0);
                        doc.replace_object(id, generation, &fixed)
                    }
                }
            };
            result.map_err(|e| damaged(format!("the {label} could not be repaired: {}", plain(&e))))?;
            for note in notes {
                self.fixes.push(format!("{label}: {note}"));
            }
        }
        Ok(())
    }

    /// Makes every page's /Contents a stream or an array of streams (what qpdf reads), and
    /// returns each page's content streams.
    fn fix_page_contents(&mut self, pages: u32) -> Vec<Vec<(i32, i32)>> {
        let mut out = Vec::with_capacity(pages as usize);
        for index in 0..pages {
            let number = index + 1;
            let page = self.doc.page(index);
            let mut streams = Vec::new();
            if page.kind() == Kind::Dict && page.has(b"/Contents") {
                let contents = page.get(b"/Contents");
                match contents.kind() {
                    Kind::Null => {}
                    Kind::Stream => streams.extend(contents.indirect()),
                    Kind::Array => {
                        let mut dropped = 0;
                        for i in (0..contents.len()).rev() {
                            let item = contents.item(i);
                            if item.kind() == Kind::Stream {
                                streams.extend(item.indirect());
                            } else {
                                contents.erase(i);
                                dropped += 1;
                            }
                        }
                        streams.reverse();
                        if dropped > 0 {
                            self.fixes.push(format!(
                                "page {number}: removed {dropped} entr{} of /Contents that {} not a content stream",
                                if dropped == 1 { "y" } else { "ies" },
                                if dropped == 1 { "was" } else { "were" },
                            ));
                        }
                    }
                    other => {
                        page.remove(b"/Contents");
                        self.fixes.push(format!(
                            "page {number}: /Contents was {} instead of a content stream; removed it (the page shows \
                             nothing but its annotations)",
                            other.article()
                        ));
                    }
                }
            }
            out.push(streams);
        }
        out
    }

    /// Checks a stream that is not a page's content: its /Filter, and its data where qpdf
    /// decodes it.
    fn check_stream(&mut self, og: (i32, i32)) {
        if !self.checked.insert(og) {
            return;
        }
        let stream = self.doc.object(og.0, og.1);
        if stream.kind() != Kind::Stream {
            return;
        }
        let role = match role_of(&stream) {
            Role::Image if self.soft_masks.contains(&og) => Role::SoftMask,
            role => role,
        };
        let label = format!("object {}", og.0);
        let verdict = match self.chain(&stream, &label) {
            Err(why) => Verdict::Damaged { why, salvage: Salvage::default() },
            Ok(chain) => self.verdict(&stream, &chain, Level::All, false),
        };
        match verdict {
            Verdict::Clean(_) | Verdict::NotDecoded => {}
            Verdict::TooLarge(why) => self.notes.push(format!("{label}: not checked: {why}")),
            Verdict::Damaged { why, salvage } => self.rebuild(&stream, role, &label, &why, salvage),
        }
    }

    /// Checks a page's content streams and the content they make together, as `qpdf --check`
    /// parses it.
    fn check_page(&mut self, number: u32, streams: &[(i32, i32)]) {
        // Pages sharing their content are checked once.
        if streams.is_empty() || !self.contents_seen.insert(streams.to_vec()) {
            return;
        }
        let mut content = Vec::new();
        let mut need_newline = false;
        for &og in streams {
            let Some(data) = self.content_data(number, og) else { return };
            if need_newline {
                content.push(b'\n');
            }
            need_newline = data.last() != Some(&b'\n');
            content.extend_from_slice(&data);
            if content.len() > self.limits.max_stream_bytes {
                self.notes.push(format!("page {number}: content not checked: it is larger than the size limit"));
                return;
            }
        }
        if !self.spend(content.len()) {
            return;
        }
        if content_tokens::parses_cleanly(&content) {
            return;
        }
        let (cleaned, summary) = clean_content(&content);
        let page = self.doc.page(number - 1);
        if let [og] = streams {
            self.doc.object(og.0, og.1).replace_data(&cleaned, &self.doc.null(), &self.doc.null());
        } else {
            let stream = self.doc.new_stream();
            stream.replace_data(&cleaned, &self.doc.null(), &self.doc.null());
            page.set(b"/Contents", &stream);
        }
        self.fixes.push(format!("page {number}: its content did not parse cleanly; {summary}"));
    }

    /// A content stream's data as qpdf decodes it to parse it, after checking (and if need be
    /// rebuilding) it the first time; `None` when it is not checked.
    fn content_data(&mut self, number: u32, og: (i32, i32)) -> Option<Vec<u8>> {
        let stream = self.doc.object(og.0, og.1);
        if self.unchecked.contains(&og) {
            return None;
        }
        if !self.checked.insert(og) {
            // Checked for an earlier page: it decodes now (it was clean, or rebuilt unfiltered).
            return Some(stream.data(Level::Specialized).map(|(data, _)| data).unwrap_or_default());
        }
        let label = format!("page {number}: content stream (object {})", og.0);
        let verdict = match self.chain(&stream, &label) {
            Err(why) => Verdict::Damaged { why, salvage: Salvage::default() },
            Ok(Chain { foreign: Some(filter), .. }) => {
                Verdict::Damaged { why: format!("it uses {filter}, which cannot be read"), salvage: Salvage::default() }
            }
            Ok(chain) => self.verdict(&stream, &chain, Level::Specialized, true),
        };
        match verdict {
            Verdict::Clean(data) => Some(data.unwrap_or_default()),
            Verdict::NotDecoded => {
                // qpdf would parse the raw bytes as content: there is no content to keep.
                let why = "its filters cannot be decoded";
                self.rebuild(&stream, Role::Page(number), &label, why, Salvage::default());
                Some(Vec::new())
            }
            Verdict::TooLarge(why) => {
                self.unchecked.insert(og);
                self.notes.push(format!("{label}: not checked: {why}"));
                None
            }
            Verdict::Damaged { why, salvage } => {
                let data = salvage.data.clone();
                self.rebuild(&stream, Role::Page(number), &label, &why, salvage);
                Some(data)
            }
        }
    }

    /// Takes `bytes` from the budget of data to check; false (and a note, once) when it is
    /// spent.
    fn spend(&mut self, bytes: usize) -> bool {
        match self.budget.checked_sub(bytes) {
            Some(left) => {
                self.budget = left;
                true
            }
            None => {
                if !self.budget_spent {
                    self.budget_spent = true;
                    self.notes.push(format!(
                        "the document holds more than {} MiB of stream data; what follows was not checked",
                        self.limits.max_stream_bytes.saturating_mul(8) >> 20
                    ));
                }
                false
            }
        }
    }
}

/// Rewrites content with the operations that parse; says what was kept in words.
fn clean_content(data: &[u8]) -> (Vec<u8>, String) {
    let (data, cut) = if data.len() > MAX_CLEAN_BYTES { (&data[..MAX_CLEAN_BYTES], true) } else { (data, false) };
    let mut cleaned = content_tokens::clean(data, true);
    if !content_tokens::parses_cleanly(&cleaned.bytes) {
        cleaned = content_tokens::clean(data, false);
    }
    if !content_tokens::parses_cleanly(&cleaned.bytes) {
        return (Vec::new(), "nothing in it could be kept; it now draws nothing".to_string());
    }
    let mut summary = format!(
        "rewrote it with the {} operation{} that parse",
        cleaned.kept,
        if cleaned.kept == 1 { "" } else { "s" }
    );
    if cleaned.dropped > 0 {
        summary.push_str(&format!(", dropping {} malformed or unknown", cleaned.dropped));
    }
    if cut {
        summary.push_str(&format!(" (only its first {} MiB were kept)", MAX_CLEAN_BYTES >> 20));
    }
    (cleaned.bytes, summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::qpdf::testing::{assert_qpdf_check, qpdf_cli, qpdf_pages, temp_pdf};

    /// A PDF written by hand (so that it can be damaged in ways no writer allows): `objects`
    /// are objects 1.. (1 is the catalog), with a correct cross-reference table.
    fn raw_pdf(objects: &[Vec<u8>]) -> Vec<u8> {
        let mut out = b"%PDF-1.5\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend(format!("{} 0 obj\n", i + 1).bytes());
            out.extend(body);
            out.extend(b"\nendobj\n");
        }
        let xref = out.len();
        out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
        for offset in offsets {
            out.extend(format!("{offset:010} 00000 n \n").bytes());
        }
        out.extend(format!("trailer <</Size {} /Root 1 0 R>>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).bytes());
        out
    }

    fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut out = format!("<<{dict} /Length {}>>\nstream\n", data.len()).into_bytes();
        out.extend(data);
        out.extend(b"\nendstream");
        out
    }

    fn flate(data: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(data).unwrap();
        z.finish().unwrap()
    }

    /// A one-page file: catalog, pages, the page (with `page` in its dictionary), then `rest`
    /// as objects 4...
    fn one_page(page: &str, rest: Vec<Vec<u8>>) -> Vec<u8> {
        let mut objects = vec![
            b"<</Type /Catalog /Pages 2 0 R>>".to_vec(),
            b"<</Type /Pages /Kids [3 0 R] /Count 1>>".to_vec(),
            format!("<</Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] {page}>>").into_bytes(),
        ];
        objects.extend(rest);
        raw_pdf(&objects)
    }

    fn check_fails(bytes: &[u8]) {
        let file = temp_pdf(bytes);
        let (code, text) = qpdf_cli(&["--check", file.path().to_str().unwrap()]);
        assert!(matches!(code, 2 | 3), "the input should fail the check: {text}");
    }

    fn fixes(repaired: &Repaired) -> Vec<String> {
        serde_json::from_value(repaired.report["fixes"].clone()).unwrap()
    }

    #[test]
    fn fixes_names_with_a_stray_hash_wherever_they_are() {
        // In a page's dictionary (key and value) and in an image's stream dictionary.
        let image = stream(
            "/Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceGray /BitsPerComponent 8 /Tag /Val#ue /X#y 1",
            b"\x80",
        );
        let bytes = one_page(
            "/Contents 5 0 R /Resources <</XObject <</Im1 4 0 R>>>> /Odd#Key 1 /Tag /Bad#Name",
            vec![image, stream("", b"q 10 0 0 10 0 0 cm /Im1 Do Q")],
        );
        check_fails(&bytes);
        let repaired = repair(&bytes, None, false, &Limits::default()).unwrap();
        assert_qpdf_check(&repaired.bytes, None);
        let fixes = fixes(&repaired);
        assert!(
            fixes.contains(&"object 3: wrote the name /Bad#Name properly (it had a stray #)".to_string()),
            "{fixes:?}"
        );
        assert!(fixes.iter().any(|f| f.starts_with("object 3: dropped the key /Odd...")), "{fixes:?}");
        assert!(fixes.iter().any(|f| f.starts_with("object 4: wrote the name /Val#ue")), "{fixes:?}");
        assert!(fixes.iter().any(|f| f.starts_with("object 4: dropped the key /X...")), "{fixes:?}");
        let text = String::from_utf8_lossy(&repaired.bytes).into_owned();
        let doc = lopdf::Document::load_mem(&repaired.bytes).unwrap();
        let page = doc.get_dictionary((3, 0)).or_else(|_| doc.get_dictionary(doc.page_iter().next().unwrap())).unwrap();
        assert_eq!(page.get(b"Tag").unwrap().as_name().unwrap(), b"Bad#Name", "{text}");
        assert!(page.get(b"Resources").is_ok(), "the rest of the page stays");
    }

    #[test]
    fn rebuilds_damaged_images_and_contents() {
        let pixels: Vec<u8> = (0..4 * 4 * 3).map(|i| i as u8).collect();
        let mut broken = flate(&pixels);
        let cut = broken.len() / 2;
        broken.truncate(cut);
        // Corrupt data after a good start: rows that decode are kept, the rest blank.
        let image = stream(
            "/Type /XObject /Subtype /Image /Width 4 /Height 4 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode",
            &broken,
        );
        let lzw_junk = stream("/Filter /LZWDecode", &[0x80, 0x0B, 0x7F, 0xFF, 0xFF]);
        let contents = stream("", b"q 10 0 0 10 0 0 cm /Im1 Do Q");
        let bytes = one_page(
            "/Contents [5 0 R 6 0 R 7 0 R 8 0 R] /Resources <</XObject <</Im1 4 0 R>>>>",
            vec![
                image,
                b"42".to_vec(),
                contents,
                lzw_junk,
                stream("/Filter [/FlateDecode] /DecodeParms [null null]", &flate(b"BT ET")),
            ],
        );
        check_fails(&bytes);
        let repaired = repair(&bytes, None, false, &Limits::default()).unwrap();
        assert_qpdf_check(&repaired.bytes, None);
        let fixes = fixes(&repaired);
        assert!(fixes.iter().any(|f| f.starts_with("object 4 (an image): could not be fully decoded")), "{fixes:?}");
        assert!(
            fixes.iter().any(|f| f.contains("/DecodeParms had 2 entries for 1 filters; aligned them")),
            "{fixes:?}"
        );
        assert!(fixes.iter().any(|f| f.starts_with("page 1: content stream (object 7)")), "{fixes:?}");
        assert!(fixes.contains(&"page 1: removed 1 entry of /Contents that was not a content stream".to_string()));
        let doc = lopdf::Document::load_mem(&repaired.bytes).unwrap();
        let page = doc.page_iter().next().unwrap();
        let content = String::from_utf8_lossy(&doc.get_page_content(page)).into_owned();
        assert!(content.contains("/Im1 Do"), "{content}");
        // The image keeps its size: 4 rows of 12 bytes, unfiltered or recompressed.
        let image = doc
            .objects
            .values()
            .filter_map(|o| o.as_stream().ok())
            .find(|s| s.dict.get(b"Subtype").and_then(|v| v.as_name()).ok() == Some(&b"Image"[..]))
            .unwrap();
        let data = image.decompressed_content().unwrap_or_else(|_| image.content.clone());
        assert_eq!(data.len(), 48);
        assert_eq!(&data[..3], &pixels[..3]);
    }

    #[test]
    fn replaces_an_undecodable_jpeg_with_a_blank_image() {
        // `qpdf --check` decodes JPEG data too.
        let image = stream(
            "/Type /XObject /Subtype /Image /Width 2 /Height 3 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode",
            b"\xff\xd8\xff\xdb garbage",
        );
        let bytes = one_page(
            "/Contents 5 0 R /Resources <</XObject <</Im1 4 0 R>>>>",
            vec![image, stream("", b"q 10 0 0 10 0 0 cm /Im1 Do Q")],
        );
        check_fails(&bytes);
        let repaired = repair(&bytes, None, false, &Limits::default()).unwrap();
        assert_qpdf_check(&repaired.bytes, None);
        let fixes = fixes(&repaired);
        assert!(fixes.iter().any(|f| f.starts_with("object 4 (an image): could not be decoded (")), "{fixes:?}");
        let doc = lopdf::Document::load_mem(&repaired.bytes).unwrap();
        let image = doc
            .objects
            .values()
            .filter_map(|o| o.as_stream().ok())
            .find(|s| s.dict.get(b"Subtype").and_then(|v| v.as_name()).ok() == Some(&b"Image"[..]))
            .unwrap();
        let data = image.decompressed_content().unwrap_or_else(|_| image.content.clone());
        assert_eq!(data, vec![0xff; 6], "white, 2x3");
    }

    #[test]
    fn never_decodes_past_the_stream_limit() {
        // A page whose (truncated) content inflates past the limit is left as it is, unchecked:
        // qpdf is never asked to inflate it.
        let mut bomb = flate(&vec![b' '; 4 << 20]);
        bomb.truncate(bomb.len() - 8);
        let bytes = one_page("/Contents 4 0 R", vec![stream("/Filter /FlateDecode", &bomb)]);
        let limits = Limits { max_stream_bytes: 1 << 20, ..Limits::default() };
        let repaired = repair(&bytes, None, false, &limits).unwrap();
        let notes = repaired.report["notes"].to_string();
        assert!(notes.contains("decodes past the size limit"), "{notes}");
        assert_eq!(qpdf_pages(&repaired.bytes, None), 1);
    }

    #[test]
    fn hostile_content_is_cleaned_in_bounded_time() {
        let mut content = b"BT /F1 12 Tf (kept) Tj ET ".to_vec();
        content.extend(std::iter::repeat_n(b'[', 200_000));
        content.extend(b" (x) Tj <<<<<< >> ) ] } BI ID");
        let bytes = one_page("/Contents 4 0 R", vec![stream("/Filter /FlateDecode", &flate(&content))]);
        let started = std::time::Instant::now();
        let repaired = repair(&bytes, None, false, &Limits::default()).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert_qpdf_check(&repaired.bytes, None);
        let doc = lopdf::Document::load_mem(&repaired.bytes).unwrap();
        let page = doc.page_iter().next().unwrap();
        let content = String::from_utf8_lossy(&doc.get_page_content(page)).into_owned();
        assert!(content.starts_with("BT\n/F1 12 Tf\n(kept) Tj\nET\n"), "{}", &content[..content.len().min(200)]);
    }
}
