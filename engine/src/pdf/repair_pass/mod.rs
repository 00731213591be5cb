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

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::context::Limits;
use crate::error::EngineError;
use crate::pdf::{MAX_OUTPUT_BYTES, output_too_large};

use self::handle::{Doc, Kind, Level, Obj, Warning};

/// Most objects (dictionary entries, array items, scalars) the pass visits; a file with more is
/// refused rather than walked without end.
const MAX_NODES: usize = 4_000_000;
/// Most fixes (and notes) the report lists one by one; the rest are counted.
const MAX_LISTED: usize = 50;
/// Most characters of listed lines: the report may travel as an HTTP header, which proxies
/// often cap at a few kilobytes.
const MAX_LISTED_CHARS: usize = 3_000;
/// Most distinct lines remembered to count repeats once.
const MAX_REMEMBERED: usize = 10_000;
/// Largest content a content stream is rewritten from; a longer one keeps its first part.
const MAX_CLEAN_BYTES: usize = 8 << 20;
/// qpdf gives up on a stream with more filters than this (its `max-stream-filters` limit).
const MAX_FILTERS: usize = 25;

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

/// "1 byte", "12 bytes".
fn bytes(n: usize) -> String {
    if n == 1 { "1 byte".to_string() } else { format!("{n} bytes") }
}

fn damaged(message: String) -> EngineError {
    EngineError::invalid_with("damaged_pdf", "", message)
}

/// qpdf's words made safe to show: no file name (the input is in memory), printable ASCII only,
/// bounded.
fn plain(text: &str) -> String {
    let text = text.trim();
    let text = text.strip_prefix("memory").map(|t| t.trim_start_matches(':').trim_start()).unwrap_or(text);
    let mut out: String =
        text.chars().take(160).map(|c| if c.is_ascii() && !c.is_ascii_control() { c } else { '?' }).collect();
    if text.chars().count() > 160 {
        out.push_str("...");
    }
    out
}

/// Lines of the report (fixes, notes), in order, without repeats; the first [`MAX_LISTED`]
/// kept, the others counted (a hostile file may have millions).
#[derive(Default)]
struct Entries {
    list: Vec<String>,
    seen: HashSet<String>,
    /// Distinct lines past the list.
    more: usize,
    /// Lines past [`MAX_REMEMBERED`], not counted.
    overflow: bool,
}

impl Entries {
    fn push(&mut self, line: String) {
        if self.list.len() < MAX_LISTED {
            if self.seen.insert(line.clone()) {
                self.list.push(line);
            }
        } else if self.seen.len() >= MAX_REMEMBERED {
            self.overflow = true;
        } else if self.seen.insert(line) {
            self.more += 1;
        }
    }

    /// The lines of `parts`, in order, as many as fit [`MAX_LISTED`] and
    /// [`MAX_LISTED_CHARS`] (the later parts first: they say more), and a count of the others.
    fn listed(parts: &[&Entries]) -> Vec<String> {
        let mut keep: Vec<usize> = vec![0; parts.len()];
        let (mut lines, mut chars) = (0, 0);
        for (i, part) in parts.iter().enumerate().rev() {
            for line in &part.list {
                if lines == MAX_LISTED || chars + line.len() > MAX_LISTED_CHARS {
                    break;
                }
                lines += 1;
                chars += line.len();
                keep[i] += 1;
            }
        }
        let mut out = Vec::new();
        let (mut more, mut overflow) = (0, false);
        for (part, &n) in parts.iter().zip(&keep) {
            out.extend(part.list.iter().take(n).cloned());
            more += part.more + part.list.len() - n;
            overflow |= part.overflow;
        }
        if overflow {
            out.push(format!("and more than {more} more"));
        } else if more > 0 {
            out.push(format!("and {more} more"));
        }
        out
    }
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

/// The role a stream plays, which decides how it is rebuilt when its data is lost.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    /// A page's content.
    Page(u32),
    /// A form XObject (content too, drawn by `Do`).
    Form,
    Image,
    /// An image used as another's soft mask (/SMask).
    SoftMask,
    Other,
}

/// A stream's filters, as qpdf applies them.
struct Chain {
    layers: Vec<decode::Layer>,
    /// The first filter this pass cannot decode (qpdf may or may not), if any.
    foreign: Option<String>,
}

/// What checking a stream's data found.
enum Verdict {
    /// qpdf decodes it without a warning; the decoded data when asked for.
    Clean(Option<Vec<u8>>),
    /// qpdf does not decode it at this level (nor does `qpdf --check`).
    NotDecoded,
    /// It decodes past the size limit, or the pass has checked all it may: left as it is,
    /// unchecked, for this reason.
    TooLarge(&'static str),
    /// It cannot be decoded: why, and what could be.
    Damaged { why: String, salvage: Salvage },
}

/// What could be decoded of a damaged stream.
#[derive(Default, Clone)]
struct Salvage {
    /// The decoded data, up to the damage.
    data: Vec<u8>,
    /// Whether that is all of it (the damage was after the end: a missing checksum, or a
    /// stream qpdf cannot decode but this pass can).
    whole: bool,
    /// Where the data comes from when not from the stream's own filters.
    from: Option<&'static str>,
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
        if content::parses_cleanly(&content) {
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

    /// Reads a stream's /Filter and /DecodeParms as qpdf does, fixing what can be fixed in
    /// place (a filter named by a string, parameters that do not line up with the filters).
    /// An error says why the data cannot be interpreted at all.
    fn chain(&mut self, stream: &Obj<'d>, label: &str) -> Result<Chain, String> {
        let dict = stream.stream_dict();
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut from_strings = false;
        if dict.has(b"/Filter") {
            let filter = dict.get(b"/Filter");
            let not_names = || "its /Filter is not a name or an array of names".to_string();
            match filter.kind() {
                Kind::Null => {}
                Kind::Name => names.push(filter.name()),
                Kind::Str => {
                    names.push(known_filter(&filter.string()).ok_or_else(not_names)?);
                    from_strings = true;
                }
                Kind::Array => {
                    for i in 0..filter.len() {
                        let item = filter.item(i);
                        match item.kind() {
                            Kind::Name => names.push(item.name()),
                            Kind::Str => {
                                names.push(known_filter(&item.string()).ok_or_else(not_names)?);
                                from_strings = true;
                            }
                            _ => return Err(not_names()),
                        }
                    }
                }
                _ => return Err(not_names()),
            }
        }
        if names.len() > MAX_FILTERS {
            return Err(format!("it has more than {MAX_FILTERS} filters"));
        }
        if from_strings {
            let value = match names.as_slice() {
                [one] => self.doc.name(one),
                many => {
                    let array = self.doc.array();
                    for name in many {
                        array.push(&self.doc.name(name));
                    }
                    array
                }
            };
            dict.set(b"/Filter", &value);
            self.fixes.push(format!("{label}: its /Filter was written as a string instead of a name; corrected it"));
        }
        let mut parms: Vec<Option<Obj<'d>>> = Vec::new();
        if dict.has(b"/DecodeParms") {
            let given = dict.get(b"/DecodeParms");
            if given.kind() == Kind::Array {
                let len = given.len();
                if len != 0 && !names.is_empty() && len != names.len() {
                    let aligned = self.doc.array();
                    for i in 0..names.len() {
                        if i < len { aligned.push(&given.item(i)) } else { aligned.push(&self.doc.null()) }
                    }
                    dict.set(b"/DecodeParms", &aligned);
                    self.fixes.push(format!(
                        "{label}: its /DecodeParms had {len} entries for {} filters; aligned them",
                        names.len()
                    ));
                }
                if len != 0 {
                    parms = (0..names.len()).map(|i| if i < len { Some(given.item(i)) } else { None }).collect();
                }
            } else if given.kind() != Kind::Null {
                parms = (0..names.len()).map(|_| Some(given.dup())).collect();
            }
        }
        let mut chain = Chain { layers: Vec::new(), foreign: None };
        for (i, name) in names.iter().enumerate() {
            let parms = parms.get(i).and_then(Option::as_ref);
            match layer(name, parms) {
                Some(layer) => chain.layers.push(layer),
                None => {
                    chain.foreign = Some(show_name(name));
                    break;
                }
            }
        }
        Ok(chain)
    }

    /// Whether qpdf decodes `stream` at `level` without a warning. The data is first decoded
    /// here, bounded, so that qpdf is never handed a decompression bomb: libqpdf has no
    /// per-document limit.
    fn verdict(&mut self, stream: &Obj<'d>, chain: &Chain, level: Level, want_data: bool) -> Verdict {
        if chain.foreign.is_some() || chain.layers.iter().any(|l| !l.decoded_at(level)) {
            return Verdict::NotDecoded;
        }
        let raw = match stream.data(Level::None) {
            Ok((raw, _)) => raw,
            Err(e) => return Verdict::Damaged { why: plain(&e), salvage: Salvage::default() },
        };
        if chain.layers.is_empty() {
            return Verdict::Clean(want_data.then_some(raw));
        }
        let cap = self.limits.max_stream_bytes;
        // JPEG comes last, if at all; its decoded size is read from its header (libjpeg
        // allocates what the header says, so a header past the limit is never handed over).
        let (jpeg, layers) = match chain.layers.split_last() {
            Some((last, rest)) if matches!(last.filter, decode::Filter::Dct) => (true, rest),
            _ => (false, &chain.layers[..]),
        };
        if layers.iter().any(|l| matches!(l.filter, decode::Filter::Dct)) {
            return Verdict::NotDecoded;
        }
        const PAST_LIMIT: &str = "its data decodes past the size limit";
        const SPENT: &str = "the pass had checked all the data it may";
        // Decoding here is bounded by what is left of the budget too, and paid for.
        let room = cap.min(self.budget);
        let (decoded, size) = match decode::run(&raw, layers, room, false) {
            decode::Outcome::TooLarge => {
                self.budget -= room;
                if room < cap {
                    self.spend(1);
                    return Verdict::TooLarge(SPENT);
                }
                return Verdict::TooLarge(PAST_LIMIT);
            }
            decode::Outcome::Complete(data) | decode::Outcome::Cut(data, _) => {
                let size = if jpeg { decode::jpeg_info(&data).map_or(0, |info| info.size()) } else { 0 };
                (data.len(), size)
            }
        };
        if size > cap as u64 {
            self.spend(decoded);
            return Verdict::TooLarge(PAST_LIMIT);
        }
        if !self.spend(decoded.max(size as usize)) {
            return Verdict::TooLarge(SPENT);
        }
        // Warnings from earlier reads are the recovery's, not this stream's.
        self.note_recovery();
        let decoded = stream.data(level);
        let warnings = self.doc.warnings();
        match decoded {
            Ok((data, true)) if warnings.is_empty() => Verdict::Clean(want_data.then_some(data)),
            Ok((_, false)) if warnings.is_empty() => Verdict::NotDecoded,
            result => {
                let mut why = warnings.first().map(|w| stream_problem(&w.detail)).unwrap_or_else(|| match result {
                    Err(e) => plain(&e),
                    Ok(_) => "it could not be decoded".to_string(),
                });
                let salvage = match decode::run(&raw, layers, cap, true) {
                    decode::Outcome::Complete(data) | decode::Outcome::Cut(data, _) if jpeg => {
                        let dict = stream.stream_dict();
                        let pixels = image_layout(&dict, cap).and_then(|layout| {
                            decode::jpeg_pixels(&data, cap).filter(|pixels| pixels.len() == layout.len)
                        });
                        match pixels {
                            Some(data) => Salvage {
                                data,
                                whole: true,
                                from: Some("the pixels a more tolerant JPEG decoder reads"),
                            },
                            None => Salvage::default(),
                        }
                    }
                    decode::Outcome::Complete(data) => Salvage { data, whole: true, from: None },
                    decode::Outcome::Cut(data, reason) if reason == decode::NO_CHECKSUM => {
                        why = reason.to_string();
                        Salvage { data, whole: true, from: None }
                    }
                    decode::Outcome::Cut(data, _) => Salvage { data, whole: false, from: None },
                    decode::Outcome::TooLarge => Salvage::default(),
                };
                Verdict::Damaged { why, salvage }
            }
        }
    }

    /// Replaces a stream whose data cannot be decoded with what could be, by its role: content
    /// keeps the operations that parse, an image its decoded rows (the rest blank), anything
    /// else the bytes before the damage. The new data is stored unfiltered (the writer
    /// compresses it).
    fn rebuild(&mut self, stream: &Obj<'d>, role: Role, label: &str, why: &str, salvage: Salvage) {
        let doc = self.doc;
        let null = doc.null();
        let Salvage { data, whole, from } = salvage;
        let kept = data.len();
        let fix = if whole {
            // Nothing was lost: the data is stored again, as it decodes.
            let what = match role {
                Role::Form => " (a form)",
                Role::Image | Role::SoftMask => " (an image)",
                Role::Page(_) | Role::Other => "",
            };
            stream.replace_data(&data, &null, &null);
            match from {
                Some(from) => format!("{label}{what}: could not be decoded ({why}); stored {from} instead"),
                None => format!("{label}{what}: {why}; stored its data again, nothing lost"),
            }
        } else {
            match role {
                Role::Page(_) => {
                    // The page's whole content is checked next; here only the data is restored.
                    stream.replace_data(&data, &null, &null);
                    if kept == 0 {
                        format!("{label}: could not be decoded ({why}); replaced by an empty one")
                    } else {
                        format!(
                            "{label}: could not be fully decoded ({why}); kept the {} before the damage",
                            bytes(kept)
                        )
                    }
                }
                Role::Form => {
                    let (cleaned, summary) = if content::parses_cleanly(&data) {
                        (data, format!("kept the {} before the damage", bytes(kept)))
                    } else {
                        clean_content(&data)
                    };
                    stream.replace_data(&cleaned, &null, &null);
                    if kept == 0 {
                        format!("{label} (a form): its content could not be decoded ({why}); it now draws nothing")
                    } else {
                        format!("{label} (a form): its content could not be fully decoded ({why}); {summary}")
                    }
                }
                Role::Image | Role::SoftMask => self.rebuild_image(stream, role, label, why, data),
                Role::Other => {
                    stream.replace_data(&data, &null, &null);
                    if kept == 0 {
                        format!("{label}: its data could not be decoded ({why}); emptied it")
                    } else {
                        format!(
                            "{label}: its data could not be fully decoded ({why}); kept the {} before the damage",
                            bytes(kept)
                        )
                    }
                }
            }
        };
        self.fixes.push(fix);
    }

    /// An image keeps the rows that decode; the rest are blank (what draws nothing: white, no
    /// ink, masked out).
    fn rebuild_image(&mut self, stream: &Obj<'d>, role: Role, label: &str, why: &str, mut data: Vec<u8>) -> String {
        let doc = self.doc;
        let null = doc.null();
        let dict = stream.stream_dict();
        let kept = data.len();
        if let Some(layout) = image_layout(&dict, self.limits.max_stream_bytes) {
            data.resize(layout.len, layout.blank);
            stream.replace_data(&data, &null, &null);
            let rows = layout.len / layout.row.max(1);
            return if kept >= layout.len {
                format!("{label} (an image): {why}, but all its {rows} rows decode; stored them again, nothing lost")
            } else if kept == 0 {
                format!("{label} (an image): could not be decoded ({why}); replaced by a blank image")
            } else {
                let kept_rows = kept.min(layout.len) / layout.row.max(1);
                format!(
                    "{label} (an image): could not be fully decoded ({why}); kept {kept_rows} of {rows} rows, the rest is blank"
                )
            };
        }
        // An image whose size cannot be known becomes a valid 1x1 one that shows nothing: a
        // stencil mask that paints nothing, or, for a soft mask (which may not be a stencil),
        // one that is opaque.
        for key in [&b"/ColorSpace"[..], b"/Decode", b"/SMask", b"/Mask", b"/Intent", b"/ImageMask"] {
            if dict.has(key) {
                dict.remove(key);
            }
        }
        if role == Role::SoftMask {
            dict.set(b"/ColorSpace", &doc.name(b"/DeviceGray"));
            dict.set(b"/BitsPerComponent", &doc.integer(8));
        } else {
            dict.set(b"/ImageMask", &doc.boolean(true));
            dict.set(b"/BitsPerComponent", &doc.integer(1));
        }
        dict.set(b"/Width", &doc.integer(1));
        dict.set(b"/Height", &doc.integer(1));
        stream.replace_data(&[0xff], &null, &null);
        format!("{label} (an image): could not be decoded ({why}) and its size is unknown; replaced by an empty image")
    }
}

/// The role of a stream that is not a page's content, from its dictionary.
fn role_of(stream: &Obj<'_>) -> Role {
    let dict = stream.stream_dict();
    if dict.has(b"/Subtype") {
        let subtype = dict.get(b"/Subtype");
        if subtype.kind() == Kind::Name {
            match subtype.name().as_slice() {
                b"/Image" => return Role::Image,
                b"/Form" => return Role::Form,
                _ => {}
            }
        }
    }
    Role::Other
}

/// Rewrites content with the operations that parse; says what was kept in words.
fn clean_content(data: &[u8]) -> (Vec<u8>, String) {
    let (data, cut) = if data.len() > MAX_CLEAN_BYTES { (&data[..MAX_CLEAN_BYTES], true) } else { (data, false) };
    let mut cleaned = content::clean(data, true);
    if !content::parses_cleanly(&cleaned.bytes) {
        cleaned = content::clean(data, false);
    }
    if !content::parses_cleanly(&cleaned.bytes) {
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

/// A copy of `obj` (looked through if indirect) whose names with a stray `#` are written
/// properly; keys with one are dropped (their values cannot be read through the C API).
/// Indirect objects inside stay references.
fn fixed_copy<'d>(doc: &'d Doc, obj: &Obj<'d>, notes: &mut Vec<String>, depth: usize) -> Obj<'d> {
    if depth > 0 && obj.indirect().is_some() {
        return obj.dup();
    }
    match obj.kind() {
        Kind::Name => {
            let name = obj.name();
            if name.contains(&0) {
                let fixed: Vec<u8> = name.iter().map(|&b| if b == 0 { b'#' } else { b }).collect();
                notes.push(format!("wrote the name {} properly (it had a stray #)", show_name(&fixed)));
                doc.name(&fixed)
            } else {
                obj.dup()
            }
        }
        Kind::Array if depth < 500 => {
            let copy = doc.array();
            for i in 0..obj.len() {
                copy.push(&fixed_copy(doc, &obj.item(i), notes, depth + 1));
            }
            copy
        }
        Kind::Dict if depth < 500 => {
            let copy = doc.dictionary();
            for key in obj.keys() {
                if obj.has(&key) {
                    copy.set(&key, &fixed_copy(doc, &obj.get(&key), notes, depth + 1));
                } else {
                    let mut shown = key.clone();
                    shown.extend_from_slice(b"...");
                    notes.push(format!(
                        "dropped the key {}, whose name is malformed (a # not followed by two hex digits)",
                        show_name(&shown)
                    ));
                }
            }
            copy
        }
        _ => obj.dup(),
    }
}

/// An object in qpdf's JSON (version 2), for `qpdf_update_from_json_data`.
fn to_json(obj: &Obj<'_>, depth: usize) -> Value {
    if depth > 0
        && let Some((id, generation)) = obj.indirect()
    {
        return Value::String(format!("{id} {generation} R"));
    }
    if depth > 500 {
        return Value::Null;
    }
    match obj.kind() {
        Kind::Bool => Value::Bool(obj.boolean()),
        Kind::Int => json!(obj.integer()),
        Kind::Real => {
            let text = obj.real();
            let number: f64 = text.trim_end_matches('.').parse().unwrap_or(0.0);
            serde_json::Number::from_f64(number).map_or(json!(0), Value::Number)
        }
        Kind::Str => {
            let hex: String = obj.string().iter().map(|b| format!("{b:02x}")).collect();
            Value::String(format!("b:{hex}"))
        }
        Kind::Name => Value::String(json_name(&obj.name())),
        Kind::Array => Value::Array((0..obj.len()).map(|i| to_json(&obj.item(i), depth + 1)).collect()),
        Kind::Dict => {
            let mut map = serde_json::Map::new();
            for key in obj.keys() {
                if obj.has(&key) {
                    map.insert(json_name(&key), to_json(&obj.get(&key), depth + 1));
                }
            }
            Value::Object(map)
        }
        _ => Value::Null,
    }
}

/// A name in qpdf's JSON: as it is when plain, else `n:` and its PDF syntax.
fn json_name(name: &[u8]) -> String {
    let body = name.strip_prefix(b"/").unwrap_or(name);
    if body.iter().all(|&b| content::is_regular(b) && b != b'#' && b.is_ascii_graphic()) {
        return format!("/{}", String::from_utf8_lossy(body));
    }
    format!("n:{}", pdf_name(body))
}

/// A name's PDF syntax (`/` and its bytes, `#xx` where needed).
fn pdf_name(body: &[u8]) -> String {
    let mut out = String::from("/");
    for &b in body {
        if b.is_ascii_graphic() && content::is_regular(b) && b != b'#' {
            out.push(b as char);
        } else {
            out.push_str(&format!("#{b:02X}"));
        }
    }
    out
}

/// A name for the report: its PDF syntax, bounded.
fn show_name(name: &[u8]) -> String {
    let body = name.strip_prefix(b"/").unwrap_or(name);
    let text: String =
        body.iter().take(60).map(|&b| if b.is_ascii_graphic() && b != b'\\' { b as char } else { '?' }).collect();
    format!("/{text}")
}

/// A filter named by a string: its name, when it is one qpdf knows.
fn known_filter(value: &[u8]) -> Option<Vec<u8>> {
    const KNOWN: [&[u8]; 17] = [
        b"FlateDecode",
        b"Fl",
        b"LZWDecode",
        b"LZW",
        b"ASCII85Decode",
        b"A85",
        b"ASCIIHexDecode",
        b"AHx",
        b"RunLengthDecode",
        b"RL",
        b"DCTDecode",
        b"DCT",
        b"CCITTFaxDecode",
        b"CCF",
        b"JBIG2Decode",
        b"JPXDecode",
        b"Crypt",
    ];
    let value = value.strip_prefix(b"/").unwrap_or(value);
    KNOWN.contains(&value).then(|| [b"/", value].concat())
}

/// The decoding step for a filter name with its parameters; `None` for a filter this pass does
/// not decode (qpdf may decode DCT, but only at a level `qpdf --check` does not use).
fn layer(name: &[u8], parms: Option<&Obj<'_>>) -> Option<decode::Layer> {
    use decode::{Filter, Layer, Predictor};
    let filter = match name {
        b"/FlateDecode" | b"/Fl" => Filter::Flate,
        b"/LZWDecode" | b"/LZW" => Filter::Lzw { early: true },
        b"/ASCII85Decode" | b"/A85" => Filter::A85,
        b"/ASCIIHexDecode" | b"/AHx" => Filter::AHx,
        b"/RunLengthDecode" | b"/RL" => Filter::RunLength,
        b"/DCTDecode" | b"/DCT" => Filter::Dct,
        _ => return None,
    };
    let mut layer = Layer { filter, predictor: Predictor::None, usable: true };
    let Some(parms) = parms else { return Some(layer) };
    if !matches!(layer.filter, Filter::Flate | Filter::Lzw { .. }) {
        return Some(layer);
    }
    match parms.kind() {
        Kind::Null => return Some(layer),
        Kind::Dict => {}
        _ => {
            layer.usable = false;
            return Some(layer);
        }
    }
    // As qpdf's SF_FlateLzwDecode::setDecodeParms: anything it does not take makes the stream
    // one qpdf does not decode.
    let int = |key: &[u8]| -> Result<Option<i64>, ()> {
        if !parms.has(key) {
            return Ok(None);
        }
        let value = parms.get(key);
        match value.kind() {
            Kind::Int => Ok(Some(value.integer())),
            Kind::Null => Ok(None),
            _ => Err(()),
        }
    };
    let (Ok(predictor), Ok(columns), Ok(colors), Ok(bpc), Ok(early)) =
        (int(b"/Predictor"), int(b"/Columns"), int(b"/Colors"), int(b"/BitsPerComponent"), int(b"/EarlyChange"))
    else {
        layer.usable = false;
        return Some(layer);
    };
    if let Filter::Lzw { early: e } = &mut layer.filter {
        *e = early.unwrap_or(1) == 1;
    }
    let predictor = predictor.unwrap_or(1);
    let geometry =
        decode::Geometry { columns: columns.unwrap_or(1), colors: colors.unwrap_or(1), bpc: bpc.unwrap_or(8) };
    layer.predictor = match predictor {
        1 => Predictor::None,
        2 => Predictor::Tiff(geometry),
        10..=15 => Predictor::Png(geometry),
        _ => {
            layer.usable = false;
            Predictor::None
        }
    };
    Some(layer)
}

/// How a blank image of the stream's size is made.
struct ImageLayout {
    /// Bytes of the whole image.
    len: usize,
    /// Bytes of one row.
    row: usize,
    /// The byte that draws nothing (white, no ink, or masked out).
    blank: u8,
}

/// An image's size and blank sample, when its dictionary tells them (and it fits the limit).
fn image_layout(dict: &Obj<'_>, cap: usize) -> Option<ImageLayout> {
    let int = |key: &[u8]| -> Option<i64> {
        if !dict.has(key) {
            return None;
        }
        let value = dict.get(key);
        (value.kind() == Kind::Int).then(|| value.integer())
    };
    let width = int(b"/Width").filter(|w| *w > 0)?;
    let height = int(b"/Height").filter(|h| *h > 0)?;
    let mask = dict.has(b"/ImageMask") && {
        let value = dict.get(b"/ImageMask");
        value.kind() == Kind::Bool && value.boolean()
    };
    // A /Decode that starts high-to-low inverts the samples.
    let inverted = dict.has(b"/Decode") && {
        let decode = dict.get(b"/Decode");
        let number = |o: Obj<'_>| match o.kind() {
            Kind::Int => Some(o.integer() as f64),
            Kind::Real => o.real().trim_end_matches('.').parse().ok(),
            _ => None,
        };
        decode.kind() == Kind::Array
            && decode.len() >= 2
            && matches!((number(decode.item(0)), number(decode.item(1))), (Some(a), Some(b)) if a > b)
    };
    let (components, bpc, blank) = if mask {
        // Sample 1 is masked out.
        (1, 1, 0xff)
    } else {
        let bpc = int(b"/BitsPerComponent").filter(|b| [1, 2, 4, 8, 16].contains(b))?;
        if !dict.has(b"/ColorSpace") {
            return None;
        }
        let (components, blank) = color_space(&dict.get(b"/ColorSpace"))?;
        (components, bpc, blank)
    };
    let bits = (width as u128) * (components as u128) * (bpc as u128);
    let row = bits.div_ceil(8);
    let len = row.checked_mul(height as u128)?;
    if len > cap as u128 {
        return None;
    }
    Some(ImageLayout { len: len as usize, row: row as usize, blank: if inverted { !blank } else { blank } })
}

/// Components and blank sample (white, or no ink) of a colour space.
fn color_space(cs: &Obj<'_>) -> Option<(i64, u8)> {
    match cs.kind() {
        Kind::Name => match cs.name().as_slice() {
            b"/DeviceGray" | b"/G" | b"/CalGray" => Some((1, 0xff)),
            b"/DeviceRGB" | b"/RGB" | b"/CalRGB" => Some((3, 0xff)),
            b"/DeviceCMYK" | b"/CMYK" => Some((4, 0x00)),
            _ => None,
        },
        Kind::Array if cs.len() >= 1 => {
            let family = cs.item(0);
            if family.kind() != Kind::Name {
                return None;
            }
            match family.name().as_slice() {
                b"/CalGray" => Some((1, 0xff)),
                b"/CalRGB" | b"/Lab" => Some((3, 0xff)),
                b"/Indexed" | b"/I" | b"/Separation" => Some((1, 0x00)),
                b"/DeviceN" if cs.len() >= 2 => {
                    let names = cs.item(1);
                    (names.kind() == Kind::Array && names.len() >= 1).then(|| (names.len() as i64, 0x00))
                }
                b"/ICCBased" if cs.len() >= 2 => {
                    let profile = cs.item(1);
                    if profile.kind() != Kind::Stream {
                        return None;
                    }
                    let dict = profile.stream_dict();
                    if !dict.has(b"/N") {
                        return None;
                    }
                    let n = dict.get(b"/N");
                    match (n.kind() == Kind::Int).then(|| n.integer()) {
                        Some(1) => Some((1, 0xff)),
                        Some(3) => Some((3, 0xff)),
                        Some(4) => Some((4, 0x00)),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// A warning qpdf gave while reading, as a fix for the report (`None` for those another one
/// already says).
fn recovery_fix(w: &Warning) -> Option<String> {
    let detail = w.detail.trim();
    let at = w.location.as_deref().map(|l| format!("{l}: ")).unwrap_or_default();
    // Said by "rebuilt the cross-reference table", or by the warning that follows.
    const QUIET: [&str; 7] = [
        "file is damaged",
        "xref not found",
        "can't find startxref",
        "loop detected following xref tables",
        "attempting to recover stream length",
        "stream dictionary lacks /Length key",
        "/Length key in stream dictionary is not an integer",
    ];
    if QUIET.iter().any(|q| detail.starts_with(q)) {
        return None;
    }
    let says = |phrase: &str| detail.contains(phrase);
    let fix = if says("reconstruct cross-reference table") {
        "rebuilt the cross-reference table".to_string()
    } else if says("recovered stream length") {
        format!("{at}recovered the true length of its stream")
    } else if says("unable to recover stream data") {
        format!("{at}its stream data could not be found; it is now empty")
    } else if detail == "expected endobj" || detail == "expected endstream" {
        format!("{at}read past a missing '{}'", &detail["expected ".len()..])
    } else if says("not found in file after regenerating cross reference table") {
        let id: String = detail.trim_start_matches("object ").chars().take_while(char::is_ascii_digit).collect();
        format!("object {id}: missing from the file; what referred to it now refers to nothing")
    } else if says("unable to find trailer dictionary") {
        "the trailer could not be read; rebuilt it".to_string()
    } else if says("can't find PDF header") {
        "the %PDF- header was missing or damaged".to_string()
    } else if says("MediaBox is undefined") {
        "a page had no /MediaBox; gave it the US Letter size".to_string()
    } else if says("Resources is missing or invalid") {
        "a page's /Resources was missing or invalid; repaired it".to_string()
    } else {
        format!("{at}worked around: {}", plain(detail))
    };
    Some(fix)
}

/// Why qpdf could not decode a stream, from its warning.
fn stream_problem(detail: &str) -> String {
    let detail = detail.trim();
    // "error decoding stream data for object 5 0: LZWDecoder: bad code received"
    let detail = match detail.strip_prefix("error decoding stream data for object ") {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, why)| why),
        None => detail,
    };
    if detail.contains("input stream is complete but output may still be valid") {
        return "its compressed data ends early".to_string();
    }
    plain(detail)
}

mod handle {
    //! A libqpdf document through qpdf-sys.
    //!
    //! Safety argument for every `unsafe` block in this module:
    //! - `raw` comes from `qpdf_init`, is checked for null, and is freed exactly once, in
    //!   [`Doc`]'s `Drop`. A `Doc` is neither `Send` nor `Sync` (it holds a raw pointer), so one
    //!   thread uses it at a time, as libqpdf requires.
    //! - Object handles are integers that libqpdf looks up in its own table (an unknown one is an
    //!   error, not undefined behaviour). An [`Obj`] borrows its `Doc`, so it cannot outlive the
    //!   handle; it releases its entry in `Drop`.
    //! - Strings and buffers libqpdf returns point into its own storage and stay valid only until
    //!   the next call on the same handle: each is copied out at once. Stream buffers are
    //!   `malloc`ed for us and freed with `qpdf_oh_free_buffer`; the written file's buffer belongs
    //!   to the handle.
    //! - `qpdf_read_memory` reads the input in place: the `Doc` owns those bytes, never changes
    //!   them, and frees them only after the handle (`Drop` runs before the fields are dropped).
    //! - Strings passed in are `CString`s that live across the call.
    //! - C++ exceptions never cross the boundary: the C API catches them and records an error
    //!   (`qpdf_silence_errors` keeps it off stderr), which [`Doc::take_error`] reads back.

    use std::ffi::{CStr, CString, c_char};

    use qpdf_sys as sys;

    /// How far qpdf decodes a stream's filters.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(super) enum Level {
        /// Not at all: the raw bytes.
        None,
        /// General-purpose filters and run-length (what qpdf decodes to parse content).
        Specialized,
        /// Also JPEG (what `qpdf --check` decodes).
        All,
    }

    impl Level {
        fn raw(self) -> sys::qpdf_stream_decode_level_e {
            match self {
                Level::None => sys::qpdf_stream_decode_level_e_qpdf_dl_none,
                Level::Specialized => sys::qpdf_stream_decode_level_e_qpdf_dl_specialized,
                Level::All => sys::qpdf_stream_decode_level_e_qpdf_dl_all,
            }
        }
    }

    /// An object's type (indirect objects are looked through).
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(super) enum Kind {
        Null,
        Bool,
        Int,
        Real,
        Str,
        Name,
        Array,
        Dict,
        Stream,
        Other,
    }

    impl Kind {
        /// The type in words, for the report.
        pub(super) fn article(self) -> &'static str {
            match self {
                Kind::Null => "null",
                Kind::Bool => "a boolean",
                Kind::Int | Kind::Real => "a number",
                Kind::Str => "a string",
                Kind::Name => "a name",
                Kind::Array => "an array",
                Kind::Dict => "a dictionary",
                Kind::Stream => "a stream",
                Kind::Other => "an unknown object",
            }
        }
    }

    /// A warning qpdf gave.
    pub(super) struct Warning {
        /// Where: `object 7`, `trailer`, when qpdf says.
        pub location: Option<String>,
        /// What, in qpdf's words.
        pub detail: String,
    }

    impl Warning {
        /// The warning in one line, for the report.
        pub(super) fn describe(&self) -> String {
            match &self.location {
                Some(at) => format!("{at}: {}", super::plain(&self.detail)),
                None => super::plain(&self.detail),
            }
        }
    }

    /// Most warnings kept from one read of the queue (the rest are dropped).
    const MAX_WARNINGS: usize = 1_000;

    /// A document opened by libqpdf.
    pub(super) struct Doc {
        raw: sys::qpdf_data,
        input: Vec<u8>,
    }

    impl Drop for Doc {
        fn drop(&mut self) {
            // SAFETY: see the module comment; this is the only cleanup of `raw`.
            unsafe { sys::qpdf_cleanup(&mut self.raw) }
        }
    }

    fn copy_text(ptr: *const c_char) -> String {
        if ptr.is_null() {
            return String::new();
        }
        // SAFETY: libqpdf returns a NUL-terminated string it owns; it is copied at once.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    }

    fn c_string(bytes: &[u8]) -> Option<CString> {
        CString::new(bytes).ok()
    }

    impl Doc {
        /// Reads a PDF from memory with qpdf's recovery (and its password).
        pub(super) fn read(input: Vec<u8>, password: Option<&str>) -> Result<Doc, String> {
            let password = match password {
                Some(p) if !p.is_empty() => {
                    Some(CString::new(p).map_err(|_| "the password has a NUL byte".to_string())?)
                }
                _ => None,
            };
            // SAFETY: see the module comment.
            let raw = unsafe { sys::qpdf_init() };
            if raw.is_null() {
                return Err("libqpdf could not start".to_string());
            }
            let doc = Doc { raw, input };
            // SAFETY: see the module comment; `doc.input` outlives the handle.
            unsafe {
                sys::qpdf_silence_errors(doc.raw);
                sys::qpdf_set_suppress_warnings(doc.raw, 1);
                sys::qpdf_read_memory(
                    doc.raw,
                    c"memory".as_ptr(),
                    doc.input.as_ptr().cast::<c_char>(),
                    doc.input.len() as u64,
                    password.as_ref().map_or(std::ptr::null(), |p| p.as_ptr()),
                );
            }
            match doc.take_error() {
                Some(e) => Err(e),
                None => Ok(doc),
            }
        }

        /// The last error, if the last calls had one (and clears it).
        pub(super) fn take_error(&self) -> Option<String> {
            // SAFETY: see the module comment.
            unsafe {
                if sys::qpdf_has_error(self.raw) == 0 {
                    return None;
                }
                let error = sys::qpdf_get_error(self.raw);
                if error.is_null() {
                    return Some("unknown error".to_string());
                }
                Some(copy_text(sys::qpdf_get_error_message_detail(self.raw, error)))
            }
        }

        /// The warnings given since the last call (at most [`MAX_WARNINGS`] of them).
        pub(super) fn warnings(&self) -> Vec<Warning> {
            let mut out = Vec::new();
            // SAFETY: see the module comment.
            unsafe {
                while sys::qpdf_more_warnings(self.raw) != 0 {
                    let w = sys::qpdf_next_warning(self.raw);
                    if w.is_null() {
                        break;
                    }
                    if out.len() < MAX_WARNINGS {
                        let full = copy_text(sys::qpdf_get_error_full_text(self.raw, w));
                        let detail = copy_text(sys::qpdf_get_error_message_detail(self.raw, w));
                        out.push(Warning { location: location(&full), detail });
                    }
                }
            }
            out
        }

        fn wrap(&self, oh: sys::qpdf_oh) -> Obj<'_> {
            Obj { doc: self, oh }
        }

        pub(super) fn is_encrypted(&self) -> bool {
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_is_encrypted(self.raw) != 0 }
        }

        pub(super) fn trailer(&self) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_get_trailer(self.raw) })
        }

        pub(super) fn page_count(&self) -> Result<u32, String> {
            // SAFETY: see the module comment.
            let n = unsafe { sys::qpdf_get_num_pages(self.raw) };
            if let Some(e) = self.take_error() {
                return Err(e);
            }
            u32::try_from(n).map_err(|_| "no page tree".to_string())
        }

        pub(super) fn page(&self, index: u32) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_get_page_n(self.raw, index as usize) })
        }

        pub(super) fn object(&self, id: i32, generation: i32) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_get_object_by_id(self.raw, id, generation) })
        }

        pub(super) fn null(&self) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_null(self.raw) })
        }

        pub(super) fn boolean(&self, value: bool) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_bool(self.raw, i32::from(value)) })
        }

        pub(super) fn integer(&self, value: i64) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_integer(self.raw, value) })
        }

        /// A name from its value (`/` first); a NUL, which no name may hold, becomes `#`.
        pub(super) fn name(&self, value: &[u8]) -> Obj<'_> {
            let value: Vec<u8> = value.iter().map(|&b| if b == 0 { b'#' } else { b }).collect();
            let value = c_string(&value).unwrap_or_default();
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_name(self.raw, value.as_ptr()) })
        }

        pub(super) fn array(&self) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_array(self.raw) })
        }

        pub(super) fn dictionary(&self) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_dictionary(self.raw) })
        }

        /// A new (indirect) stream with no data.
        pub(super) fn new_stream(&self) -> Obj<'_> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_stream(self.raw) })
        }

        pub(super) fn replace_object(&self, id: i32, generation: i32, with: &Obj<'_>) -> Result<(), String> {
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_replace_object(self.raw, id, generation, with.oh) };
            self.take_error().map_or(Ok(()), Err)
        }

        /// Applies a qpdf JSON (version 2) update: objects or the trailer replaced.
        pub(super) fn update_from_json(&self, update: &serde_json::Value) -> Result<(), String> {
            let text = update.to_string();
            // SAFETY: see the module comment; libqpdf copies the buffer.
            unsafe { sys::qpdf_update_from_json_data(self.raw, text.as_ptr().cast::<c_char>(), text.len() as u64) };
            self.take_error().map_or(Ok(()), Err)
        }

        /// Writes the document as a new file: a fresh cross-reference table, stream data copied
        /// without decoding (new data compressed), object streams kept, unreferenced objects
        /// dropped, the input's encryption kept.
        pub(super) fn write(&self, linearize: bool) -> Result<Vec<u8>, String> {
            // SAFETY: see the module comment.
            unsafe {
                sys::qpdf_init_write_memory(self.raw);
                if let Some(e) = self.take_error() {
                    return Err(e);
                }
                sys::qpdf_set_decode_level(self.raw, Level::None.raw());
                sys::qpdf_set_object_stream_mode(self.raw, sys::qpdf_object_stream_e_qpdf_o_preserve);
                sys::qpdf_set_compress_streams(self.raw, 1);
                sys::qpdf_set_preserve_unreferenced_objects(self.raw, 0);
                sys::qpdf_set_linearization(self.raw, i32::from(linearize));
                sys::qpdf_write(self.raw);
                if let Some(e) = self.take_error() {
                    return Err(e);
                }
                let len = sys::qpdf_get_buffer_length(self.raw);
                let ptr = sys::qpdf_get_buffer(self.raw);
                if ptr.is_null() {
                    return Err("no output".to_string());
                }
                Ok(std::slice::from_raw_parts(ptr, len).to_vec())
            }
        }
    }

    /// Where a warning's full text says it happened: "memory (object 7 0, offset 12): ..."
    /// gives `object 7`, "memory (trailer, offset 9): ..." gives `trailer`.
    fn location(full: &str) -> Option<String> {
        let inner = full.split_once(" (")?.1.split_once(')')?.0;
        if let Some(rest) = inner.strip_prefix("object ") {
            let id: String = rest.chars().take_while(char::is_ascii_digit).collect();
            return (!id.is_empty()).then(|| format!("object {id}"));
        }
        inner.starts_with("trailer").then(|| "trailer".to_string())
    }

    /// An object of a [`Doc`].
    pub(super) struct Obj<'d> {
        doc: &'d Doc,
        oh: sys::qpdf_oh,
    }

    impl Drop for Obj<'_> {
        fn drop(&mut self) {
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_release(self.doc.raw, self.oh) }
        }
    }

    impl<'d> Obj<'d> {
        fn wrap(&self, oh: sys::qpdf_oh) -> Obj<'d> {
            Obj { doc: self.doc, oh }
        }

        fn raw(&self) -> sys::qpdf_data {
            self.doc.raw
        }

        /// Another handle to the same object.
        pub(super) fn dup(&self) -> Obj<'d> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_new_object(self.raw(), self.oh) })
        }

        pub(super) fn kind(&self) -> Kind {
            // SAFETY: see the module comment.
            let code = unsafe { sys::qpdf_oh_get_type_code(self.raw(), self.oh) };
            match code {
                sys::qpdf_object_type_e_ot_null => Kind::Null,
                sys::qpdf_object_type_e_ot_boolean => Kind::Bool,
                sys::qpdf_object_type_e_ot_integer => Kind::Int,
                sys::qpdf_object_type_e_ot_real => Kind::Real,
                sys::qpdf_object_type_e_ot_string => Kind::Str,
                sys::qpdf_object_type_e_ot_name => Kind::Name,
                sys::qpdf_object_type_e_ot_array => Kind::Array,
                sys::qpdf_object_type_e_ot_dictionary => Kind::Dict,
                sys::qpdf_object_type_e_ot_stream => Kind::Stream,
                _ => Kind::Other,
            }
        }

        /// Object number and generation, for an indirect object.
        pub(super) fn indirect(&self) -> Option<(i32, i32)> {
            // SAFETY: see the module comment.
            unsafe {
                (sys::qpdf_oh_is_indirect(self.raw(), self.oh) != 0).then(|| {
                    (sys::qpdf_oh_get_object_id(self.raw(), self.oh), sys::qpdf_oh_get_generation(self.raw(), self.oh))
                })
            }
        }

        /// A dictionary's keys (as libqpdf gives them: one with a stray # is cut at its NUL).
        pub(super) fn keys(&self) -> Vec<Vec<u8>> {
            let mut keys = Vec::new();
            // SAFETY: see the module comment; the key iterator lives in the handle and is used to
            // its end before any other call.
            unsafe {
                sys::qpdf_oh_begin_dict_key_iter(self.raw(), self.oh);
                while sys::qpdf_oh_dict_more_keys(self.raw()) != 0 {
                    let key = sys::qpdf_oh_dict_next_key(self.raw());
                    if key.is_null() {
                        break;
                    }
                    keys.push(CStr::from_ptr(key).to_bytes().to_vec());
                }
            }
            keys
        }

        pub(super) fn has(&self, key: &[u8]) -> bool {
            let Some(key) = c_string(key) else { return false };
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_has_key(self.raw(), self.oh, key.as_ptr()) != 0 }
        }

        /// A dictionary's value (null when absent).
        pub(super) fn get(&self, key: &[u8]) -> Obj<'d> {
            let key = c_string(key).unwrap_or_default();
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_get_key(self.raw(), self.oh, key.as_ptr()) })
        }

        pub(super) fn set(&self, key: &[u8], value: &Obj<'_>) {
            let Some(key) = c_string(key) else { return };
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_replace_key(self.raw(), self.oh, key.as_ptr(), value.oh) };
        }

        pub(super) fn remove(&self, key: &[u8]) {
            let Some(key) = c_string(key) else { return };
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_remove_key(self.raw(), self.oh, key.as_ptr()) };
        }

        /// An array's length.
        pub(super) fn len(&self) -> usize {
            // SAFETY: see the module comment.
            usize::try_from(unsafe { sys::qpdf_oh_get_array_n_items(self.raw(), self.oh) }).unwrap_or(0)
        }

        pub(super) fn item(&self, index: usize) -> Obj<'d> {
            let index = i32::try_from(index).unwrap_or(i32::MAX);
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_get_array_item(self.raw(), self.oh, index) })
        }

        pub(super) fn erase(&self, index: usize) {
            let Ok(index) = i32::try_from(index) else { return };
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_erase_item(self.raw(), self.oh, index) };
        }

        pub(super) fn push(&self, item: &Obj<'_>) {
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_append_item(self.raw(), self.oh, item.oh) };
        }

        /// A name's value, whole (with the NUL that stands for a stray #).
        pub(super) fn name(&self) -> Vec<u8> {
            // SAFETY: see the module comment; the length is that of the string just returned.
            unsafe {
                let ptr = sys::qpdf_oh_get_name(self.raw(), self.oh);
                let len = sys::qpdf_get_last_string_length(self.raw());
                if ptr.is_null() {
                    return Vec::new();
                }
                std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec()
            }
        }

        /// A string's bytes.
        pub(super) fn string(&self) -> Vec<u8> {
            let mut len = 0usize;
            // SAFETY: see the module comment.
            unsafe {
                let ptr = sys::qpdf_oh_get_binary_string_value(self.raw(), self.oh, &mut len);
                if ptr.is_null() {
                    return Vec::new();
                }
                std::slice::from_raw_parts(ptr.cast::<u8>(), len).to_vec()
            }
        }

        pub(super) fn integer(&self) -> i64 {
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_get_int_value(self.raw(), self.oh) }
        }

        /// A real number as written.
        pub(super) fn real(&self) -> String {
            // SAFETY: see the module comment.
            copy_text(unsafe { sys::qpdf_oh_get_real_value(self.raw(), self.oh) })
        }

        pub(super) fn boolean(&self) -> bool {
            // SAFETY: see the module comment.
            unsafe { sys::qpdf_oh_get_bool_value(self.raw(), self.oh) != 0 }
        }

        pub(super) fn stream_dict(&self) -> Obj<'d> {
            // SAFETY: see the module comment.
            self.wrap(unsafe { sys::qpdf_oh_get_dict(self.raw(), self.oh) })
        }

        /// A stream's data decoded at `level`, and whether it was decoded (qpdf gives the raw
        /// bytes of a stream it cannot decode at that level).
        pub(super) fn data(&self, level: Level) -> Result<(Vec<u8>, bool), String> {
            let mut filtered = 0;
            let mut buf: *mut u8 = std::ptr::null_mut();
            let mut len = 0usize;
            // SAFETY: see the module comment; `buf` is malloc'ed by libqpdf and freed below.
            unsafe {
                sys::qpdf_oh_get_stream_data(self.raw(), self.oh, level.raw(), &mut filtered, &mut buf, &mut len);
                let data = if buf.is_null() { Vec::new() } else { std::slice::from_raw_parts(buf, len).to_vec() };
                sys::qpdf_oh_free_buffer(&mut buf);
                match self.doc.take_error() {
                    Some(e) => Err(e),
                    None => Ok((data, filtered != 0)),
                }
            }
        }

        /// Replaces a stream's data; `filter` and `parms` become its /Filter and /DecodeParms
        /// (null removes them).
        pub(super) fn replace_data(&self, data: &[u8], filter: &Obj<'_>, parms: &Obj<'_>) {
            // SAFETY: see the module comment; libqpdf copies the data.
            unsafe {
                sys::qpdf_oh_replace_stream_data(self.raw(), self.oh, data.as_ptr(), data.len(), filter.oh, parms.oh);
            }
        }
    }
}

mod decode {
    //! The filters qpdf decodes when it checks a file, decoded here with a bound on the output,
    //! as libqpdf's own decoders do (their errors are the same): first to measure a stream before
    //! qpdf decodes it, then to keep what precedes the damage in one it cannot.

    use flate2::{Decompress, FlushDecompress, Status};

    use super::handle::Level;

    /// A filter.
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Filter {
        Flate,
        Lzw {
            early: bool,
        },
        A85,
        AHx,
        RunLength,
        /// JPEG: only measured and, to salvage an image, decoded by a tolerant decoder.
        Dct,
    }

    /// Predictor parameters (/DecodeParms of Flate and LZW).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Geometry {
        pub columns: i64,
        pub colors: i64,
        pub bpc: i64,
    }

    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Predictor {
        None,
        Tiff(Geometry),
        Png(Geometry),
    }

    /// One filter of a stream's chain.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Layer {
        pub filter: Filter,
        pub predictor: Predictor,
        /// False when qpdf does not take the parameters (and so does not decode the stream).
        pub usable: bool,
    }

    impl Layer {
        /// Whether qpdf decodes this filter at `level`.
        pub(super) fn decoded_at(&self, level: Level) -> bool {
            self.usable
                && match self.filter {
                    Filter::RunLength => matches!(level, Level::Specialized | Level::All),
                    Filter::Dct => level == Level::All,
                    _ => level != Level::None,
                }
        }
    }

    /// What decoding gave.
    #[derive(Debug)]
    pub(crate) enum Outcome {
        /// All of it.
        Complete(Vec<u8>),
        /// What came before the damage, and why it stopped.
        Cut(Vec<u8>, &'static str),
        /// More than the limit.
        TooLarge,
    }

    /// Decodes `raw` through `layers`, never producing more than `cap` bytes at any step;
    /// with `predict`, predictors are undone too (else the size is all that is wanted, and a
    /// predictor never adds bytes).
    pub(crate) fn run(raw: &[u8], layers: &[Layer], cap: usize, predict: bool) -> Outcome {
        let mut data = raw.to_vec();
        let mut cut: Option<&'static str> = None;
        for layer in layers {
            let outcome = match layer.filter {
                Filter::Flate => inflate(&data, cap),
                Filter::Lzw { early } => lzw(&data, early, cap),
                Filter::A85 => a85(&data),
                Filter::AHx => ahx(&data),
                Filter::RunLength => run_length(&data, cap),
                // JPEG data is measured apart (see `jpeg_info`); nothing after it is decoded.
                Filter::Dct => return Outcome::Cut(data, "its JPEG data is not decoded here"),
            };
            let (out, why) = match outcome {
                Outcome::TooLarge => return Outcome::TooLarge,
                Outcome::Complete(out) => (out, None),
                Outcome::Cut(out, why) => (out, Some(why)),
            };
            cut = cut.or(why);
            data = out;
            if predict {
                let (out, why) = unpredict(data, layer.predictor);
                data = out;
                cut = cut.or(why);
            }
        }
        match cut {
            Some(why) => Outcome::Cut(data, why),
            None => Outcome::Complete(data),
        }
    }

    fn inflate(data: &[u8], cap: usize) -> Outcome {
        let mut z = Decompress::new(true);
        let mut out: Vec<u8> =
            Vec::with_capacity(data.len().saturating_mul(2).clamp(64, 1 << 20).min(cap.saturating_add(1)));
        loop {
            if out.len() > cap {
                return Outcome::TooLarge;
            }
            if out.len() == out.capacity() {
                let more = out.len().clamp(1 << 16, 1 << 24).min(cap.saturating_add(1) - out.len());
                out.reserve(more);
            }
            let consumed = z.total_in() as usize;
            let produced = out.len();
            let input = data.get(consumed..).unwrap_or_default();
            match z.decompress_vec(input, &mut out, FlushDecompress::None) {
                Ok(Status::StreamEnd) => return Outcome::Complete(out),
                Ok(_) => {
                    if z.total_in() as usize == consumed && out.len() == produced {
                        let why = if deflate_ends(data) { NO_CHECKSUM } else { "its compressed data ends early" };
                        return Outcome::Cut(out, why);
                    }
                }
                Err(_) => return Outcome::Cut(out, "the compressed data is corrupt"),
            }
        }
    }

    /// What a JPEG's header says.
    pub(crate) struct JpegInfo {
        width: u64,
        height: u64,
        components: u64,
        precision: u64,
        /// An Adobe marker says the three components are RGB, not YCbCr.
        rgb: bool,
    }

    impl JpegInfo {
        /// Bytes of the decoded image.
        pub(crate) fn size(&self) -> u64 {
            self.width * self.height * self.components * if self.precision > 8 { 2 } else { 1 }
        }
    }

    /// Reads a JPEG's frame header (and Adobe marker) without decoding it.
    pub(crate) fn jpeg_info(data: &[u8]) -> Option<JpegInfo> {
        if data.get(..2)? != [0xff, 0xd8] {
            return None;
        }
        let mut rgb = false;
        let mut i = 2;
        loop {
            while data.get(i)? != &0xff {
                i += 1;
            }
            while data.get(i)? == &0xff {
                i += 1;
            }
            let marker = *data.get(i)?;
            i += 1;
            if matches!(marker, 0x01 | 0xd0..=0xd8) {
                continue;
            }
            let len = usize::from(u16::from_be_bytes([*data.get(i)?, *data.get(i + 1)?]));
            let segment = data.get(i + 2..i + len.max(2))?;
            match marker {
                0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                    let (precision, height, width, components) = (
                        u64::from(*segment.first()?),
                        u64::from(u16::from_be_bytes([*segment.get(1)?, *segment.get(2)?])),
                        u64::from(u16::from_be_bytes([*segment.get(3)?, *segment.get(4)?])),
                        u64::from(*segment.get(5)?),
                    );
                    return Some(JpegInfo { width, height, components, precision, rgb });
                }
                0xee if segment.starts_with(b"Adobe") => rgb = segment.get(11) == Some(&0),
                0xda | 0xd9 => return None,
                _ => {}
            }
            i += len;
        }
    }

    /// A JPEG's samples, as a tolerant decoder reads them (8-bit gray or RGB only; none when
    /// it fails or the image would pass `cap`).
    pub(crate) fn jpeg_pixels(data: &[u8], cap: usize) -> Option<Vec<u8>> {
        use image::ImageDecoder as _;
        let info = jpeg_info(data)?;
        if info.precision != 8 || !matches!(info.components, 1 | 3) || info.rgb || info.size() > cap as u64 {
            return None;
        }
        let mut decoder = image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(data)).ok()?;
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(cap as u64);
        decoder.set_limits(limits).ok()?;
        let wanted = if info.components == 3 { image::ColorType::Rgb8 } else { image::ColorType::L8 };
        if decoder.color_type() != wanted || u64::from(decoder.dimensions().0) != info.width {
            return None;
        }
        let mut pixels = vec![0u8; usize::try_from(decoder.total_bytes()).ok()?];
        decoder.read_image(&mut pixels).ok()?;
        Some(pixels)
    }

    /// Why a zlib stream whose deflate data is whole still fails: its checksum is missing.
    pub(super) const NO_CHECKSUM: &str = "its compressed data lacks its final checksum";

    /// Whether the deflate data inside a zlib stream reaches its last block (only the checksum
    /// after it is missing). Output is discarded.
    fn deflate_ends(data: &[u8]) -> bool {
        let Some(body) = data.get(2..) else { return false };
        let mut z = Decompress::new(false);
        let mut sink = vec![0u8; 1 << 16];
        loop {
            let (consumed, produced) = (z.total_in(), z.total_out());
            let input = body.get(z.total_in() as usize..).unwrap_or_default();
            match z.decompress(input, &mut sink, FlushDecompress::None) {
                Ok(Status::StreamEnd) => return true,
                Ok(_) if z.total_in() != consumed || z.total_out() != produced => {}
                _ => return false,
            }
        }
    }

    /// LZW as libqpdf's Pl_LZWDecoder decodes it (same table, same errors).
    fn lzw(data: &[u8], early: bool, cap: usize) -> Outcome {
        let mut table: Vec<Vec<u8>> = Vec::new();
        let mut out = Vec::new();
        let mut code_size = 9u32;
        let mut last: u32 = 256;
        let mut bits: u32 = 0;
        let mut nbits = 0u32;
        let first_char = |table: &Vec<Vec<u8>>, code: u32| -> Option<u8> {
            if code < 256 {
                return Some(code as u8);
            }
            table.get(code.checked_sub(258)? as usize).and_then(|e| e.first().copied())
        };
        for &byte in data {
            bits = (bits << 8) | u32::from(byte);
            nbits += 8;
            if nbits < code_size {
                continue;
            }
            nbits -= code_size;
            let code = (bits >> nbits) & ((1 << code_size) - 1);
            bits &= (1 << nbits) - 1;
            match code {
                256 => {
                    table.clear();
                    code_size = 9;
                }
                257 => return Outcome::Complete(out),
                _ => {
                    if last != 256 {
                        let next = if code < 256 {
                            Some(code as u8)
                        } else {
                            let index = (code - 258) as usize;
                            match index.cmp(&table.len()) {
                                std::cmp::Ordering::Greater => None,
                                std::cmp::Ordering::Equal => first_char(&table, last),
                                std::cmp::Ordering::Less => first_char(&table, code),
                            }
                        };
                        let Some(next) = next else { return Outcome::Cut(out, "the LZW data has a bad code") };
                        let new_index = 258 + table.len() as u32;
                        if new_index == 4096 {
                            return Outcome::Cut(out, "the LZW table is full");
                        }
                        let mut entry = if last < 256 {
                            vec![last as u8]
                        } else {
                            match table.get((last - 258) as usize) {
                                Some(e) => e.clone(),
                                None => return Outcome::Cut(out, "the LZW data has a bad code"),
                            }
                        };
                        entry.push(next);
                        table.push(entry);
                        if matches!(new_index + u32::from(early), 511 | 1023 | 2047) {
                            code_size += 1;
                        }
                    }
                    if code < 256 {
                        out.push(code as u8);
                    } else {
                        match table.get((code - 258) as usize) {
                            Some(entry) => out.extend_from_slice(entry),
                            None => return Outcome::Cut(out, "the LZW data has a bad code"),
                        }
                    }
                    if out.len() > cap {
                        return Outcome::TooLarge;
                    }
                }
            }
            last = code;
        }
        Outcome::Complete(out)
    }

    /// ASCII85 as libqpdf decodes it (output is shorter than input).
    fn a85(data: &[u8]) -> Outcome {
        let mut out = Vec::with_capacity(data.len());
        let mut group = [b'u'; 5];
        let mut pos = 0;
        let mut tilde = false;
        let flush = |group: &mut [u8; 5], pos: &mut usize, out: &mut Vec<u8>| {
            if *pos == 0 {
                return;
            }
            let value = group.iter().fold(0u64, |v, &c| v * 85 + u64::from(c - 33));
            let bytes = (value as u32).to_be_bytes();
            out.extend_from_slice(&bytes[..*pos - 1]);
            *pos = 0;
            *group = [b'u'; 5];
        };
        for &c in data {
            if matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c) {
                continue;
            }
            if tilde {
                if c != b'>' {
                    return Outcome::Cut(out, "the ASCII85 data ends badly");
                }
                flush(&mut group, &mut pos, &mut out);
                return Outcome::Complete(out);
            }
            match c {
                b'~' => tilde = true,
                b'z' if pos == 0 => out.extend_from_slice(&[0; 4]),
                b'z' => return Outcome::Cut(out, "the ASCII85 data has a misplaced z"),
                33..=117 => {
                    group[pos] = c;
                    pos += 1;
                    if pos == 5 {
                        flush(&mut group, &mut pos, &mut out);
                    }
                }
                _ => return Outcome::Cut(out, "the ASCII85 data has a character out of range"),
            }
        }
        flush(&mut group, &mut pos, &mut out);
        Outcome::Complete(out)
    }

    /// ASCIIHex as libqpdf decodes it.
    fn ahx(data: &[u8]) -> Outcome {
        let mut out = Vec::with_capacity(data.len() / 2 + 1);
        let mut high: Option<u8> = None;
        for &c in data {
            let nibble = match c.to_ascii_uppercase() {
                b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c => continue,
                b'>' => break,
                d @ b'0'..=b'9' => d - b'0',
                d @ b'A'..=b'F' => d - b'A' + 10,
                _ => {
                    if let Some(h) = high {
                        out.push(h << 4);
                    }
                    return Outcome::Cut(out, "the ASCIIHex data has a character out of range");
                }
            };
            match high.take() {
                Some(h) => out.push((h << 4) | nibble),
                None => high = Some(nibble),
            }
        }
        if let Some(h) = high {
            out.push(h << 4);
        }
        Outcome::Complete(out)
    }

    /// Run-length as libqpdf decodes it (it reads on past the end-of-data byte).
    fn run_length(data: &[u8], cap: usize) -> Outcome {
        let mut out = Vec::new();
        let mut i = 0;
        while let Some(&len) = data.get(i) {
            i += 1;
            match len {
                0..=127 => {
                    let end = (i + usize::from(len) + 1).min(data.len());
                    out.extend_from_slice(&data[i..end]);
                    i = end;
                }
                128 => {}
                _ => {
                    if let Some(&b) = data.get(i) {
                        out.resize(out.len() + 257 - usize::from(len), b);
                        i += 1;
                    }
                }
            }
            if out.len() > cap {
                return Outcome::TooLarge;
            }
        }
        Outcome::Complete(out)
    }

    /// Undoes a predictor; keeps whole rows only. A predictor this cannot undo leaves nothing
    /// usable.
    fn unpredict(data: Vec<u8>, predictor: Predictor) -> (Vec<u8>, Option<&'static str>) {
        let geometry = match predictor {
            Predictor::None => return (data, None),
            Predictor::Tiff(g) | Predictor::Png(g) => g,
        };
        let bits = geometry.columns.checked_mul(geometry.colors).and_then(|v| v.checked_mul(geometry.bpc));
        let Some(row) = bits.filter(|b| *b > 0 && *b <= (1 << 34)).map(|b| ((b + 7) / 8) as usize) else {
            return (Vec::new(), Some("its predictor parameters are invalid"));
        };
        if !(1..=16).contains(&geometry.bpc) || geometry.colors < 1 || row >= data.len() {
            return (Vec::new(), Some("its predictor parameters are invalid"));
        }
        let pixel = ((geometry.colors * geometry.bpc) as usize).div_ceil(8).max(1);
        match predictor {
            Predictor::Png(_) => {
                let mut out = Vec::with_capacity(data.len());
                let mut previous = vec![0u8; row];
                let mut why = None;
                for chunk in data.chunks(row + 1) {
                    if chunk.len() < row + 1 {
                        why = Some("the data ends in the middle of a row");
                        break;
                    }
                    let mut current = chunk[1..].to_vec();
                    for i in 0..row {
                        let left = if i >= pixel { current[i - pixel] } else { 0 };
                        let up = previous[i];
                        let up_left = if i >= pixel { previous[i - pixel] } else { 0 };
                        let add = match chunk[0] {
                            0 => 0,
                            1 => left,
                            2 => up,
                            3 => ((u16::from(left) + u16::from(up)) / 2) as u8,
                            4 => paeth(left, up, up_left),
                            _ => {
                                why = Some("a row has an unknown predictor");
                                break;
                            }
                        };
                        current[i] = current[i].wrapping_add(add);
                    }
                    if why.is_some() {
                        break;
                    }
                    out.extend_from_slice(&current);
                    previous = current;
                }
                (out, why)
            }
            _ if geometry.bpc == 8 => {
                let mut out = data;
                let whole = out.len() / row * row;
                out.truncate(whole);
                let colors = geometry.colors as usize;
                for line in out.chunks_mut(row) {
                    for i in colors..line.len() {
                        line[i] = line[i].wrapping_add(line[i - colors]);
                    }
                }
                (out, None)
            }
            _ => (Vec::new(), Some("its predictor is not supported here")),
        }
    }

    fn paeth(a: u8, b: u8, c: u8) -> u8 {
        let p = i16::from(a) + i16::from(b) - i16::from(c);
        let (pa, pb, pc) = ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
        if pa <= pb && pa <= pc {
            a
        } else if pb <= pc {
            b
        } else {
            c
        }
    }
}

mod content {
    //! Content streams as qpdf's tokenizer and parser read them: whether a stream parses without
    //! a warning, and a rewrite that keeps the operations that parse.

    /// qpdf's white space (NUL included).
    pub(crate) fn is_space(c: u8) -> bool {
        matches!(c, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c | 0)
    }

    /// qpdf's delimiters (white space included).
    pub(crate) fn is_delimiter(c: u8) -> bool {
        is_space(c) || matches!(c, b'/' | b'(' | b')' | b'{' | b'}' | b'<' | b'>' | b'[' | b']' | b'%')
    }

    /// A byte that may stand in a name or word as it is.
    pub(crate) fn is_regular(c: u8) -> bool {
        !is_delimiter(c)
    }

    fn is_hex(c: u8) -> bool {
        c.is_ascii_hexdigit()
    }

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(crate) enum K {
        Eof,
        Int,
        Real,
        Name,
        Str,
        Bool,
        Null,
        Word,
        ArrayOpen,
        ArrayClose,
        DictOpen,
        DictClose,
        BraceOpen,
        BraceClose,
        /// A bad token qpdf warns about.
        Bad,
        /// A bad token qpdf reads silently: a comment cut by the end of the data.
        Quiet,
        /// Inline image data (after `ID`, up to `EI`).
        Image,
    }

    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Tok {
        pub kind: K,
        pub start: usize,
        pub end: usize,
        /// A name with a # not followed by two hex digits (qpdf warns, and keeps it).
        pub stray: bool,
        /// An integer qpdf cannot hold (it warns and drops it).
        pub overflow: bool,
    }

    fn tok(kind: K, start: usize, end: usize) -> Tok {
        Tok { kind, start, end, stray: false, overflow: false }
    }

    /// The token at or after `pos`, as qpdf's tokenizer reads it; `end` is where the next one
    /// is looked for.
    pub(crate) fn next(d: &[u8], mut pos: usize) -> Tok {
        loop {
            let Some(&c) = d.get(pos) else { return tok(K::Eof, pos, pos) };
            if is_space(c) {
                pos += 1;
            } else if c == b'%' {
                let start = pos;
                while let Some(&c) = d.get(pos) {
                    if c == b'\r' || c == b'\n' {
                        break;
                    }
                    pos += 1;
                }
                if pos >= d.len() {
                    return tok(K::Quiet, start, pos);
                }
            } else {
                break;
            }
        }
        let start = pos;
        let at = |i: usize| d.get(i).copied();
        match at(pos) {
            Some(b'(') => {
                let mut i = pos + 1;
                let mut depth = 1;
                loop {
                    match at(i) {
                        None => return tok(K::Bad, start, d.len()),
                        Some(b'\\') => i += 2,
                        Some(b'(') => {
                            depth += 1;
                            i += 1;
                        }
                        Some(b')') => {
                            depth -= 1;
                            i += 1;
                            if depth == 0 {
                                return tok(K::Str, start, i);
                            }
                        }
                        Some(_) => i += 1,
                    }
                }
            }
            Some(b'<') => {
                if at(pos + 1) == Some(b'<') {
                    return tok(K::DictOpen, start, pos + 2);
                }
                let mut i = pos + 1;
                loop {
                    match at(i) {
                        None => return tok(K::Bad, start, d.len()),
                        Some(b'>') => return tok(K::Str, start, i + 1),
                        Some(c) if is_hex(c) || is_space(c) => i += 1,
                        Some(_) => return tok(K::Bad, start, i + 1),
                    }
                }
            }
            Some(b'>') => {
                if at(pos + 1) == Some(b'>') {
                    tok(K::DictClose, start, pos + 2)
                } else {
                    tok(K::Bad, start, pos + 1)
                }
            }
            Some(b')') => tok(K::Bad, start, pos + 1),
            Some(b'[') => tok(K::ArrayOpen, start, pos + 1),
            Some(b']') => tok(K::ArrayClose, start, pos + 1),
            Some(b'{') => tok(K::BraceOpen, start, pos + 1),
            Some(b'}') => tok(K::BraceClose, start, pos + 1),
            Some(b'/') => {
                let mut i = pos + 1;
                let (mut stray, mut bad) = (false, false);
                while let Some(c) = at(i) {
                    if is_delimiter(c) {
                        break;
                    }
                    if c != b'#' {
                        i += 1;
                        continue;
                    }
                    match (at(i + 1), at(i + 2)) {
                        (Some(h), Some(l)) if is_hex(h) && is_hex(l) => {
                            bad |= h == b'0' && l == b'0';
                            i += 3;
                        }
                        (Some(h), _) if is_hex(h) => {
                            stray = true;
                            i += 2;
                        }
                        _ => {
                            stray = true;
                            i += 1;
                        }
                    }
                }
                Tok { kind: if bad { K::Bad } else { K::Name }, start, end: i, stray, overflow: false }
            }
            _ => {
                let mut i = pos;
                while at(i).is_some_and(is_regular) {
                    i += 1;
                }
                let text = &d[start..i];
                let kind = match text {
                    b"true" | b"false" => K::Bool,
                    b"null" => K::Null,
                    _ => number_kind(text),
                };
                let overflow = kind == K::Int && !fits_i64(text);
                Tok { kind, start, end: i, stray: false, overflow }
            }
        }
    }

    /// Int, Real or Word, as qpdf's number states decide.
    fn number_kind(text: &[u8]) -> K {
        let body = text.strip_prefix(b"+").or_else(|| text.strip_prefix(b"-")).unwrap_or(text);
        if !body.is_empty() && body.iter().all(u8::is_ascii_digit) {
            return K::Int;
        }
        let Some(dot) = body.iter().position(|&c| c == b'.') else { return K::Word };
        let (whole, fraction) = (&body[..dot], &body[dot + 1..]);
        let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
        // "5." and ".5" are reals; "." alone is a word.
        if digits(whole) && digits(fraction) && (!whole.is_empty() || !fraction.is_empty()) { K::Real } else { K::Word }
    }

    fn fits_i64(text: &[u8]) -> bool {
        std::str::from_utf8(text).ok().and_then(|t| t.strip_prefix('+').unwrap_or(t).parse::<i64>().ok()).is_some()
    }

    /// Whether a word looks like image data to qpdf's search for `EI`.
    fn odd_word(word: &[u8]) -> bool {
        let (mut alpha, mut other) = (false, false);
        for &c in word {
            if c.is_ascii_alphabetic() || c == b'*' {
                alpha = true;
            } else if (c as i8) < 32 && !is_space(c) {
                return true;
            } else {
                other = true;
            }
        }
        alpha && other
    }

    /// Where qpdf ends inline image data that starts at `start`: the `EI` it settles on (its
    /// position), or `None` when it finds none.
    pub(crate) fn find_ei(d: &[u8], start: usize) -> Option<usize> {
        let mut search = start;
        let mut last = None;
        loop {
            let Some(rest) = d.get(search..) else { return last };
            let found = rest.windows(2).position(|w| w == b"EI").map(|p| p + search);
            let Some(p) = found else { return last };
            let after = p + 2;
            if p == 0 || !(after >= d.len() || d.get(after).copied().is_some_and(is_delimiter)) {
                search = p + 1;
                continue;
            }
            last = Some(p);
            let mut q = after;
            let mut bad = false;
            for _ in 0..10 {
                let t = next(d, q);
                q = t.end;
                match t.kind {
                    K::Eof => break,
                    K::Bad | K::Quiet => bad = true,
                    K::Word => bad = odd_word(&d[t.start..t.end]),
                    _ => {}
                }
                if bad {
                    break;
                }
            }
            if !bad {
                return Some(p);
            }
            search = q.max(p + 1);
        }
    }

    /// qpdf's limit on nested arrays and dictionaries.
    const MAX_NESTING: usize = 499;

    /// Whether qpdf parses `d` as content without a warning.
    pub(crate) fn parses_cleanly(d: &[u8]) -> bool {
        let mut pos = 0;
        loop {
            let t = next(d, pos);
            pos = t.end;
            match t.kind {
                K::Eof => return true,
                K::Bad | K::BraceOpen | K::BraceClose | K::ArrayClose | K::DictClose | K::Image => return false,
                K::Name if t.stray => return false,
                K::Int if t.overflow => return false,
                K::ArrayOpen | K::DictOpen => match container(d, t) {
                    Some(end) => pos = end,
                    None => return false,
                },
                K::Word if &d[t.start..t.end] == b"ID" => {
                    // qpdf drops the one character after ID, then looks for EI.
                    let data = (pos + 1).min(d.len());
                    match find_ei(d, data) {
                        Some(p) if p > data => pos = p,
                        _ => return false,
                    }
                }
                _ => {}
            }
        }
    }

    struct Frame<'a> {
        dict: bool,
        expect_value: bool,
        keys: std::collections::HashSet<&'a [u8]>,
    }

    /// Parses an array or dictionary opened by `first` as qpdf does in content; its end, or
    /// `None` where qpdf would warn.
    fn container<'a>(d: &'a [u8], first: Tok) -> Option<usize> {
        let frame = |t: Tok| Frame { dict: t.kind == K::DictOpen, expect_value: false, keys: Default::default() };
        let mut stack = vec![frame(first)];
        let mut pos = first.end;
        loop {
            let t = next(d, pos);
            pos = t.end;
            let depth = stack.len();
            let top = stack.last_mut()?;
            // A value where a dictionary wants a key is a warning at its close.
            let value_ok = |top: &mut Frame<'a>| -> bool {
                if top.dict {
                    if !top.expect_value {
                        return false;
                    }
                    top.expect_value = false;
                }
                true
            };
            match t.kind {
                K::Eof | K::Bad | K::BraceOpen | K::BraceClose | K::Image => return None,
                K::Int if t.overflow => return None,
                K::Name if t.stray => return None,
                K::ArrayClose | K::DictClose => {
                    if top.dict != (t.kind == K::DictClose) || (top.dict && top.expect_value) {
                        return None;
                    }
                    stack.pop();
                    if stack.is_empty() {
                        return Some(pos);
                    }
                }
                K::ArrayOpen | K::DictOpen => {
                    if depth > MAX_NESTING || !value_ok(top) {
                        return None;
                    }
                    stack.push(frame(t));
                }
                K::Name if top.dict && !top.expect_value => {
                    if !top.keys.insert(&d[t.start..t.end]) {
                        return None;
                    }
                    top.expect_value = true;
                }
                // Qpdf adds a null for a silent bad token.
                _ => {
                    if !value_ok(top) {
                        return None;
                    }
                }
            }
        }
    }

    /// A rewrite of content.
    pub(crate) struct Cleaned {
        pub bytes: Vec<u8>,
        /// Operations kept.
        pub kept: usize,
        /// Operations dropped (malformed, unknown, with the wrong number of operands, unbalanced).
        pub dropped: usize,
    }

    /// Operand counts of the content operators (min, max).
    fn arity(op: &[u8]) -> Option<(usize, usize)> {
        Some(match op {
            b"b" | b"B" | b"b*" | b"B*" | b"BT" | b"BX" | b"EMC" | b"ET" | b"EX" | b"f" | b"F" | b"f*" | b"h"
            | b"n" | b"q" | b"Q" | b"s" | b"S" | b"T*" | b"W" | b"W*" | b"BI" => (0, 0),
            b"BMC" | b"CS" | b"cs" | b"Do" | b"G" | b"g" | b"gs" | b"i" | b"j" | b"J" | b"M" | b"MP" | b"ri"
            | b"sh" | b"Tc" | b"TJ" | b"Tj" | b"TL" | b"Tr" | b"Ts" | b"Tw" | b"Tz" | b"w" | b"'" => (1, 1),
            b"BDC" | b"d" | b"d0" | b"DP" | b"l" | b"m" | b"Td" | b"TD" | b"Tf" => (2, 2),
            b"RG" | b"rg" | b"\"" => (3, 3),
            b"K" | b"k" | b"re" | b"v" | b"y" => (4, 4),
            b"c" | b"cm" | b"d1" | b"Tm" => (6, 6),
            b"SC" | b"sc" => (1, 4),
            b"SCN" | b"scn" => (1, 33),
            _ => return None,
        })
    }

    /// Most tokens a rewrite reads (its input is bounded by the caller too).
    const MAX_TOKENS: usize = 2_000_000;

    /// The tokens of `d` as qpdf's parser meets them (inline image data taken whole).
    fn tokens(d: &[u8]) -> Vec<Tok> {
        let mut out = Vec::new();
        let mut open: Vec<bool> = Vec::new();
        let mut pos = 0;
        while out.len() < MAX_TOKENS {
            let t = next(d, pos);
            pos = t.end;
            match t.kind {
                K::Eof => break,
                K::ArrayOpen | K::DictOpen => open.push(t.kind == K::DictOpen),
                K::ArrayClose | K::DictClose if open.last() == Some(&(t.kind == K::DictClose)) => {
                    open.pop();
                }
                K::Word if open.is_empty() && &d[t.start..t.end] == b"ID" => {
                    out.push(t);
                    let data = (pos + 1).min(d.len());
                    match find_ei(d, data) {
                        Some(p) if p > data => {
                            // The image token keeps the character after ID, to write it back.
                            out.push(tok(K::Image, pos, p));
                            pos = p;
                        }
                        _ => {
                            out.push(tok(K::Bad, pos, d.len()));
                            break;
                        }
                    }
                    continue;
                }
                _ => {}
            }
            out.push(t);
        }
        out
    }

    /// A token as it is written back: a name's stray # as #23.
    fn write_token(d: &[u8], t: &Tok, out: &mut Vec<u8>) {
        let raw = &d[t.start..t.end];
        if !(t.kind == K::Name && t.stray) {
            out.extend_from_slice(raw);
            return;
        }
        let mut i = 0;
        while let Some(&c) = raw.get(i) {
            if c == b'#' && !(raw.get(i + 1).is_some_and(|&h| is_hex(h)) && raw.get(i + 2).is_some_and(|&l| is_hex(l)))
            {
                out.extend_from_slice(b"#23");
                i += 1;
            } else if c == b'#' {
                out.extend_from_slice(&raw[i..i + 3]);
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        }
    }

    /// An open construct a rewrite closes at its end.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Open {
        Save,
        Text,
        Marked,
        Compat,
    }

    /// Rewrites content with its operations that parse, each with its operands, one a line:
    /// malformed tokens and arrays or dictionaries that never close are dropped, and so is an
    /// operation with a malformed operand, an unknown operator (outside BX/EX), the wrong number
    /// of operands or an unmatched closing operator (Q, ET, EMC, EX); what is left open is
    /// closed at the end. With `images` false, inline images are dropped too.
    pub(crate) fn clean(d: &[u8], images: bool) -> Cleaned {
        let toks = tokens(d);
        let n = toks.len();
        // Match brackets as qpdf does (a closer of the other kind does not close); what is
        // left unmatched is junk.
        let mut partner = vec![usize::MAX; n];
        let mut junk = vec![false; n];
        let mut stack: Vec<usize> = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            match t.kind {
                K::ArrayOpen | K::DictOpen => stack.push(i),
                K::ArrayClose | K::DictClose => {
                    let opener = if t.kind == K::ArrayClose { K::ArrayOpen } else { K::DictOpen };
                    match stack.last() {
                        Some(&o) if toks[o].kind == opener => {
                            stack.pop();
                            partner[o] = i;
                        }
                        _ => junk[i] = true,
                    }
                }
                K::Bad | K::Quiet | K::BraceOpen | K::BraceClose => junk[i] = true,
                K::Int if t.overflow => junk[i] = true,
                _ => {}
            }
        }
        for i in stack {
            junk[i] = true;
        }

        let mut out = Vec::with_capacity(d.len());
        let (mut kept, mut dropped) = (0, 0);
        let mut operands: Vec<(Vec<u8>, bool)> = Vec::new();
        let mut spoiled = false;
        let mut in_image = false;
        let mut open: Vec<Open> = Vec::new();
        let mut i = 0;
        while i < n {
            let t = toks[i];
            if junk[i] {
                i += 1;
                continue;
            }
            match t.kind {
                K::ArrayOpen | K::DictOpen => {
                    let end = partner[i];
                    let mut bytes = Vec::new();
                    let well_formed = write_container(d, &toks, &junk, i, end, &mut bytes);
                    spoiled |= !well_formed;
                    operands.push((bytes, false));
                    i = end + 1;
                    continue;
                }
                K::Word => {}
                K::Image => {
                    i += 1;
                    continue;
                }
                _ => {
                    let mut bytes = Vec::new();
                    write_token(d, &t, &mut bytes);
                    operands.push((bytes, t.kind == K::Name));
                    i += 1;
                    continue;
                }
            }
            let op = &d[t.start..t.end];
            i += 1;
            if in_image && op != b"ID" {
                // A BI whose dictionary never reached ID.
                dropped += 1;
                in_image = false;
                operands.clear();
                spoiled = false;
            }
            match op {
                b"BI" => {
                    if !operands.is_empty() {
                        dropped += 1;
                    }
                    operands.clear();
                    spoiled = false;
                    in_image = true;
                    continue;
                }
                b"ID" => {
                    let image = toks.get(i).filter(|t| t.kind == K::Image).copied();
                    let ei = image
                        .and_then(|_| toks.get(i + 1))
                        .filter(|t| t.kind == K::Word && &d[t.start..t.end] == b"EI");
                    let pairs = operands.len().is_multiple_of(2) && operands.iter().step_by(2).all(|(_, name)| *name);
                    if let (Some(image), Some(_), true, true, false, true) =
                        (image, ei, in_image, pairs, spoiled, images)
                    {
                        out.extend_from_slice(b"BI");
                        for (bytes, _) in &operands {
                            out.push(b' ');
                            out.extend_from_slice(bytes);
                        }
                        out.extend_from_slice(b" ID");
                        out.extend_from_slice(&d[image.start..image.end]);
                        out.extend_from_slice(b"EI\n");
                        kept += 1;
                    } else {
                        dropped += 1;
                    }
                    if image.is_some() {
                        i += 1;
                    }
                    if ei.is_some() {
                        i += 1;
                    }
                    operands.clear();
                    spoiled = false;
                    in_image = false;
                    continue;
                }
                _ => {}
            }
            let keep = !spoiled
                && match arity(op) {
                    Some((min, max)) => (min..=max).contains(&operands.len()) && balance(op, &mut open),
                    None => open.contains(&Open::Compat),
                };
            if keep {
                for (bytes, _) in &operands {
                    out.extend_from_slice(bytes);
                    out.push(b' ');
                }
                out.extend_from_slice(op);
                out.push(b'\n');
                kept += 1;
            } else {
                dropped += 1;
            }
            operands.clear();
            spoiled = false;
        }
        if !operands.is_empty() || in_image {
            dropped += 1;
        }
        for construct in open.iter().rev() {
            out.extend_from_slice(match construct {
                Open::Save => b"Q\n",
                Open::Text => b"ET\n",
                Open::Marked => b"EMC\n",
                Open::Compat => b"EX\n",
            });
        }
        Cleaned { bytes: out, kept, dropped }
    }

    /// Tracks what `op` opens or closes; false for a close with nothing to close (or a text
    /// object opened inside another).
    fn balance(op: &[u8], open: &mut Vec<Open>) -> bool {
        let (opens, closes) = match op {
            b"q" => (Some(Open::Save), None),
            b"BT" => (Some(Open::Text), None),
            b"BMC" | b"BDC" => (Some(Open::Marked), None),
            b"BX" => (Some(Open::Compat), None),
            b"Q" => (None, Some(Open::Save)),
            b"ET" => (None, Some(Open::Text)),
            b"EMC" => (None, Some(Open::Marked)),
            b"EX" => (None, Some(Open::Compat)),
            _ => return true,
        };
        if let Some(construct) = opens {
            if construct == Open::Text && open.contains(&Open::Text) {
                return false;
            }
            open.push(construct);
            return true;
        }
        // Close the nearest match among the last few open constructs.
        let Some(closes) = closes else { return true };
        let from = open.len().saturating_sub(8);
        match open[from..].iter().rposition(|&o| o == closes) {
            Some(at) => {
                open.remove(from + at);
                true
            }
            None => false,
        }
    }

    /// An open dictionary: whether it expects a value, and the keys seen.
    type DictState<'a> = (bool, std::collections::HashSet<&'a [u8]>);

    /// Writes the container from `start` to its partner `end`, without its junk tokens; false
    /// when a dictionary in it is malformed (keys not names, a key without a value, a key
    /// twice).
    fn write_container(d: &[u8], toks: &[Tok], junk: &[bool], start: usize, end: usize, out: &mut Vec<u8>) -> bool {
        let mut well_formed = true;
        // One entry per open container: `None` for an array, for a dictionary whether it
        // expects a value and the keys seen.
        let mut frames: Vec<Option<DictState<'_>>> = Vec::new();
        for i in start..=end {
            let (Some(t), Some(false)) = (toks.get(i), junk.get(i).copied()) else { continue };
            if i != start {
                out.push(b' ');
            }
            write_token(d, t, out);
            if matches!(t.kind, K::ArrayClose | K::DictClose) {
                if let Some(Some((expect_value, _))) = frames.pop() {
                    well_formed &= !expect_value;
                }
                continue;
            }
            if let Some(Some((expect_value, keys))) = frames.last_mut() {
                if *expect_value {
                    *expect_value = false;
                } else if t.kind == K::Name {
                    well_formed &= keys.insert(&d[t.start..t.end]);
                    *expect_value = true;
                } else {
                    well_formed = false;
                }
            }
            match t.kind {
                K::DictOpen => frames.push(Some((false, Default::default()))),
                K::ArrayOpen => frames.push(None),
                _ => {}
            }
        }
        well_formed
    }
}

#[cfg(test)]
mod tests {
    use super::content::{clean, find_ei, parses_cleanly};
    use super::decode::{Filter, Layer, Outcome, Predictor, run};
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
    fn the_report_lists_a_bounded_number_of_lines() {
        let (mut read, mut fixes) = (Entries::default(), Entries::default());
        for i in 0..5_000 {
            read.push(format!("object {i}: worked around: something qpdf said"));
            read.push(format!("object {i}: worked around: something qpdf said"));
        }
        fixes.push("page 1: its content did not parse cleanly".to_string());
        let listed = Entries::listed(&[&read, &fixes]);
        assert!(listed.len() <= MAX_LISTED + 1);
        assert!(listed.iter().map(String::len).sum::<usize>() < MAX_LISTED_CHARS + 40);
        // This pass's own fixes come first when not all fit; repeats count once.
        assert_eq!(listed[listed.len() - 2], "page 1: its content did not parse cleanly");
        assert_eq!(listed.last().unwrap(), &format!("and {} more", 5_000 - (listed.len() - 2)));
        assert_eq!(Entries::listed(&[&Entries::default()]), Vec::<String>::new());
        // Past what is remembered, lines are no longer counted.
        for i in 0..20_000 {
            read.push(format!("object {i}: something else"));
        }
        let listed = Entries::listed(&[&read]);
        assert!(listed.last().unwrap().starts_with("and more than "), "{listed:?}");
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

    fn layer(filter: Filter) -> Layer {
        Layer { filter, predictor: Predictor::None, usable: true }
    }

    #[test]
    fn clean_content_parses_and_is_left_alone() {
        for ok in [
            &b"q 1 0 0 1 72 720 cm BT /F1 24 Tf (Hello \\) world) Tj ET Q"[..],
            b"[(a) 12 (b)] TJ /P << /MCID 3 >> BDC EMC % a comment\n",
            b"BI /W 2 /H 1 /CS /G /BPC 8 ID \x00\xffEI Q",
            b"/Na#20me gs 5. .5 -3 +.2 d0",
            b"",
        ] {
            assert!(parses_cleanly(ok), "{}", String::from_utf8_lossy(ok));
        }
    }

    #[test]
    fn finds_what_qpdf_warns_about() {
        for bad in [
            &b"0.1 w ['j 23.3 cm /Im4 Do"[..],
            b"1 0 0 RG ) f",
            b"<< /A 1 /B >> BDC",
            b"<< 1 2 >> BDC",
            b"<< /A 1 /A 2 >> BDC",
            b"/Som#ething gs",
            b"<12G4> Tj",
            b"{ q }",
            b"] Q",
            b"99999999999999999999 w",
            b"BI /W 1 ID xx",
            b"(unclosed",
        ] {
            assert!(!parses_cleanly(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn keeps_the_operations_that_parse() {
        let cleaned = clean(b"q 0.1 w\n['j 23.3 2`1 cm\n/Im4 Do ['j 1 2 3 4 5 6 cm", true);
        assert!(parses_cleanly(&cleaned.bytes));
        let text = String::from_utf8(cleaned.bytes).unwrap();
        // The unclosed [ is junk; what follows it is read again; "2`1" and "'j" are no operators.
        assert!(text.contains("0.1 w\n"), "{text}");
        assert!(text.contains("/Im4 Do\n"), "{text}");
        assert!(text.contains("1 2 3 4 5 6 cm\n"), "{text}");
        assert!(!text.contains("'j"), "{text}");
        assert!(text.ends_with("Q\n"), "the q is closed: {text}");
        assert!(cleaned.dropped >= 3, "{}", cleaned.dropped);

        let cleaned = clean(b"/Som#ething gs BT /F1 12 Tf (a) Tj", true);
        let text = String::from_utf8(cleaned.bytes).unwrap();
        assert_eq!(text, "/Som#23ething gs\nBT\n/F1 12 Tf\n(a) Tj\nET\n");
        assert!(parses_cleanly(text.as_bytes()));

        let cleaned = clean(b"<< /A 1 /B >> BDC 1 0 0 RG ) f BI /W 1 /H 1 ID x EI Q", true);
        let text = String::from_utf8(cleaned.bytes).unwrap();
        assert!(parses_cleanly(text.as_bytes()), "{text}");
        assert!(text.contains("1 0 0 RG\nf\nBI /W 1 /H 1 ID x EI\n"), "{text}");
        assert!(!text.contains("BDC") && !text.contains("\nQ"), "{text}");
    }

    #[test]
    fn finds_ei_as_qpdf_does() {
        let d = b"ID abEIcd EI Q";
        assert_eq!(find_ei(d, 3), Some(10));
        // Image data that looks like an EI followed by junk is skipped.
        let d = b"ID a EI \x01\x02 b EI Q";
        assert_eq!(find_ei(d, 3), Some(13));
        assert_eq!(find_ei(b"ID abc", 3), None);
    }

    #[test]
    fn decoders_keep_what_precedes_the_damage() {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&b"0123456789".repeat(1000)).unwrap();
        let full = z.finish().unwrap();
        match run(&full, &[layer(Filter::Flate)], 1 << 20, true) {
            Outcome::Complete(data) => assert_eq!(data.len(), 10_000),
            other => panic!("{other:?}"),
        }
        match run(&full[..full.len() / 2], &[layer(Filter::Flate)], 1 << 20, true) {
            Outcome::Cut(data, why) => {
                assert!(!data.is_empty() && data.len() < 10_000);
                assert!(why.contains("ends early"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(run(&full, &[layer(Filter::Flate)], 5_000, false), Outcome::TooLarge));

        // "-----A---B" from the PDF reference's LZW example, with EarlyChange.
        let lzw = [0x80, 0x0B, 0x60, 0x50, 0x22, 0x0C, 0x0C, 0x85, 0x01];
        match run(&lzw, &[layer(Filter::Lzw { early: true })], 1 << 20, true) {
            Outcome::Complete(data) => assert_eq!(data, b"-----A---B"),
            other => panic!("{other:?}"),
        }
        match run(&[0x80, 0x0B, 0x7F, 0xFF, 0xFF], &[layer(Filter::Lzw { early: true })], 1 << 20, true) {
            Outcome::Cut(data, why) => {
                assert_eq!(data, b"-");
                assert!(why.contains("bad code"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        match run(b"87cURD]i,\"Ebo80~>", &[layer(Filter::A85)], 100, true) {
            Outcome::Complete(data) => assert_eq!(data, b"Hello World!"),
            other => panic!("{other:?}"),
        }
        match run(b"48656C6C6F7>", &[layer(Filter::AHx)], 100, true) {
            Outcome::Complete(data) => assert_eq!(data, b"Hellop"),
            other => panic!("{other:?}"),
        }
        match run(&[2, b'a', b'b', b'c', 254, b'x', 128], &[layer(Filter::RunLength)], 100, true) {
            Outcome::Complete(data) => assert_eq!(data, b"abcxxx"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(run(&[129, b'x', 129, b'x'], &[layer(Filter::RunLength)], 200, true), Outcome::TooLarge));
    }
}
