//! HTML (and the XHTML of EPUB books) to the Markdown block model.
//!
//! The bytes are decoded (byte order mark, then a `<meta charset>` or `http-equiv` declaration
//! or an XML declaration in the first 1024 bytes, else UTF-8 with replacement characters),
//! parsed by html5ever into a small arena tree of our own (start tags nested deeper than
//! 512 elements are dropped, as browsers do, keeping their text), and walked without
//! recursion. What a reader is not shown is left out: scripts, styles, templates, form
//! controls, SVG, the `<head>` (its `<title>` becomes the document's title), elements hidden
//! by `hidden`, `aria-hidden="true"` or an inline `display: none`, and the site's chrome:
//! `<nav>` menus, the page-level `<footer>` and a page-level `<header>` without a heading.
//!
//! Conventions: headings `h1`–`h6`; block elements split paragraphs and `<br>` breaks a line;
//! `b`/`strong`, `i`/`em`, `s`/`del` and `code`/`kbd`/`samp` become emphasis, strike-through
//! and code spans; links keep their `href` as written (`javascript:` and `data:` links keep
//! only their text); nested `ul`/`ol` become list items with levels and numbers (`start`,
//! `value`, `reversed`), a list item's paragraphs joined on its line; `dl` terms become bold
//! items with their descriptions one level below; tables become pipe tables with a
//! spanning cell's text repeated in every cell it covers, anything nested in a cell
//! (lists, tables, paragraphs) flattened onto one line, the caption a paragraph before it
//! (a table of one cell, or `role="presentation"`, only lays things out and is read as
//! blocks); `pre` becomes a fenced code block (language from a `language-x` class);
//! `blockquote` quotes; `img` a picture with its alternative text (pictures inside a
//! paragraph follow it), a `figcaption` a paragraph.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use encoding_rs::Encoding;
use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer};
use html5ever::tree_builder::TreeBuilder;
use html5ever::{Attribute, QualName, TokenizerResult, ns};

use crate::error::EngineError;
use crate::markdown::{Block, Document, Inline, Style, one_line};

/// Widest a cell may span (the HTML limit for `colspan`).
const MAX_COLSPAN: usize = 1000;
/// Tallest a cell may span (the HTML limit for `rowspan`).
const MAX_ROWSPAN: usize = 65_534;
/// Most cells a table's spans may add by repetition; past it a span covers its cells
/// with empty text.
const MAX_SPAN_CELLS: usize = 1_000_000;
/// Most bytes of text spans may repeat in one document.
const MAX_REPEATED_BYTES: usize = 16 * 1024 * 1024;
/// Largest grid (rows × columns) written as a table; a larger one is written a row a
/// paragraph, since the writer pads every row to the widest.
const MAX_GRID_CELLS: usize = 2_000_000;
/// Most nodes (elements, runs of text) a document may have: about 400 MiB of tree.
const MAX_NODES: usize = 4_000_000;
/// Bytes of input handed to the parser at a time.
const CHUNK: usize = 1 << 20;
/// Deepest elements nest: start tags deeper than this are dropped (their text is kept),
/// as browsers do (Chromium's limit), since the tree builder's scope checks walk the whole
/// stack of open elements and would take quadratic time on deep nesting.
const MAX_DEPTH: usize = 512;
/// Elements kept past [`MAX_DEPTH`]: those without children (dropping them changes
/// nothing of the depth) and those whose content is not markup (dropping a `<script>`
/// would show its code as text).
const KEPT_DEEP: &str = concat!(
    "area base br col embed hr img input link meta param source track wbr script style textarea title xmp ",
    "iframe noembed noframes noscript plaintext template",
);

/// Reads an HTML file into a document.
pub fn read(bytes: &[u8], field: &str) -> Result<Document, EngineError> {
    let mut doc = Document::default();
    read_into(&mut doc, bytes, field)?;
    Ok(doc)
}

/// Reads one HTML or XHTML document and appends its blocks to `doc`; its `<title>` becomes
/// the document's title when `doc` has none yet. XHTML (an XML declaration or the XHTML
/// namespace at the start) has its self-closed elements (`<a id="x"/>`, `<script/>`)
/// closed first, since an HTML parser would leave them open.
pub fn read_into(doc: &mut Document, bytes: &[u8], field: &str) -> Result<(), EngineError> {
    let text = decode(bytes);
    if let Some(kind) = binary_kind(bytes, &text) {
        return Err(EngineError::invalid(field, format!("{field}: this is {kind}, not an HTML file")));
    }
    let text = if is_xhtml(&text) { close_self_closed(&text) } else { Cow::Borrowed(text.as_ref()) };
    let tree = parse(&text, MAX_NODES).ok_or_else(|| {
        EngineError::too_large(
            "file_too_large",
            Some(field.to_string()),
            format!("{field}: the HTML has more than {MAX_NODES} elements and runs of text"),
        )
    })?;
    if doc.title.is_none() {
        doc.title = tree.title();
    }
    Converter::new(&tree, doc).run();
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Decoding

/// The text of `bytes`: a byte order mark decides, then a declaration near the start, then
/// UTF-8; malformed sequences become U+FFFD.
pub(crate) fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let (encoding, skip) = match (Encoding::for_bom(bytes), bytes) {
        (Some((encoding, length)), _) => (encoding, length),
        // UTF-16 without a byte order mark, known by its first `<`.
        (None, [b'<', 0, _, 0, ..]) => (encoding_rs::UTF_16LE, 0),
        (None, [0, b'<', 0, _, ..]) => (encoding_rs::UTF_16BE, 0),
        (None, _) => (sniff(&bytes[..bytes.len().min(1024)]).unwrap_or(encoding_rs::UTF_8), 0),
    };
    let rest = bytes.get(skip..).unwrap_or_default();
    encoding.decode_without_bom_handling(rest).0
}

/// The encoding an XML declaration or a `<meta>` element in `head` declares.
fn sniff(head: &[u8]) -> Option<&'static Encoding> {
    let label = xml_declared(head).or_else(|| meta_declared(head))?;
    let encoding = Encoding::for_label(label.trim().as_bytes())?;
    // As browsers do: a document that could be read as ASCII to find the declaration is
    // not UTF-16, and x-user-defined means windows-1252.
    Some(if encoding == encoding_rs::UTF_16LE || encoding == encoding_rs::UTF_16BE {
        encoding_rs::UTF_8
    } else if encoding == encoding_rs::X_USER_DEFINED {
        encoding_rs::WINDOWS_1252
    } else {
        encoding
    })
}

fn xml_declared(head: &[u8]) -> Option<String> {
    let start = head.iter().position(|b| !b.is_ascii_whitespace())?;
    let head = &head[start..];
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = find(head, b"?>")?;
    attributes(&head[5..end]).into_iter().find(|(name, _)| name == "encoding").map(|(_, value)| value)
}

fn meta_declared(head: &[u8]) -> Option<String> {
    let lower = head.to_ascii_lowercase();
    let mut at = 0;
    while let Some(found) = find(&lower[at..], b"<meta") {
        let start = at + found + 5;
        let end = lower[start..].iter().position(|&b| b == b'>').map_or(lower.len(), |p| start + p);
        let attrs = attributes(&head[start..end]);
        if let Some((_, charset)) = attrs.iter().find(|(name, _)| name == "charset") {
            return Some(charset.clone());
        }
        let http_equiv = attrs.iter().any(|(n, v)| n == "http-equiv" && v.eq_ignore_ascii_case("content-type"));
        if http_equiv && let Some((_, content)) = attrs.iter().find(|(name, _)| name == "content") {
            let lower = content.to_ascii_lowercase();
            if let Some(p) = lower.find("charset=") {
                let value = &content[p + 8..];
                let value = value.trim_start().trim_start_matches(['"', '\'']);
                let end = value.find([';', ' ', '"', '\'']).unwrap_or(value.len());
                return Some(value[..end].to_string());
            }
        }
        at = end;
    }
    None
}

/// The attributes of a tag's inside (after its name), names lowercased.
fn attributes(tag: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    let n = tag.len();
    while i < n {
        while i < n && (tag[i].is_ascii_whitespace() || tag[i] == b'/') {
            i += 1;
        }
        let start = i;
        while i < n && !tag[i].is_ascii_whitespace() && !matches!(tag[i], b'=' | b'/' | b'>') {
            i += 1;
        }
        if start == i {
            i += 1;
            continue;
        }
        let name = String::from_utf8_lossy(&tag[start..i]).to_ascii_lowercase();
        while i < n && tag[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = String::new();
        if i < n && tag[i] == b'=' {
            i += 1;
            while i < n && tag[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < n && (tag[i] == b'"' || tag[i] == b'\'') {
                let quote = tag[i];
                let begin = i + 1;
                let end = tag[begin..].iter().position(|&b| b == quote).map_or(n, |p| begin + p);
                value = String::from_utf8_lossy(&tag[begin..end]).into_owned();
                i = end + 1;
            } else {
                let begin = i;
                while i < n && !tag[i].is_ascii_whitespace() && tag[i] != b'>' {
                    i += 1;
                }
                value = String::from_utf8_lossy(&tag[begin..i]).into_owned();
            }
        }
        out.push((name, value));
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// What a file that is plainly not text is (a PDF, a ZIP, a picture), if it is one.
fn binary_kind(bytes: &[u8], text: &str) -> Option<&'static str> {
    const KINDS: &[(&[u8], &str)] = &[
        (b"%PDF-", "a PDF"),
        (b"PK\x03\x04", "a ZIP archive (an Office file or an EPUB?)"),
        (b"\x89PNG", "a PNG picture"),
        (b"\xFF\xD8\xFF", "a JPEG picture"),
        (b"GIF8", "a GIF picture"),
        (b"\xD0\xCF\x11\xE0", "a legacy Office file"),
    ];
    if let Some((_, kind)) = KINDS.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some(kind);
    }
    let head: String = text.chars().take(1024).collect();
    head.contains('\0').then_some("a binary file")
}

// ---------------------------------------------------------------------------------------
// XHTML

fn is_xhtml(text: &str) -> bool {
    let head = match text.char_indices().nth(1024) {
        Some((end, _)) => &text[..end],
        None => text,
    };
    head.trim_start().starts_with("<?xml") || head.contains("http://www.w3.org/1999/xhtml")
}

/// Elements that have no end tag in HTML: their `/>` is fine as it is.
const VOID: &str = "area base br col embed hr img input link meta param source track wbr";

/// `<name .../>` of a non-void element as `<name ...></name>`; comments, CDATA sections
/// and the insides of `script` and `style` are passed over.
fn close_self_closed(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while let Some(p) = bytes[i..].iter().position(|&b| b == b'<') {
        let lt = i + p;
        let rest = &text[lt..];
        if rest.starts_with("<!--") {
            i = rest.find("-->").map_or(bytes.len(), |e| lt + e + 3);
            continue;
        }
        if rest.starts_with("<![CDATA[") {
            i = rest.find("]]>").map_or(bytes.len(), |e| lt + e + 3);
            continue;
        }
        let name_len = rest[1..].bytes().take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b':')).count();
        if name_len == 0 || !rest.as_bytes()[1].is_ascii_alphabetic() {
            i = lt + 1;
            continue;
        }
        let name = rest[1..1 + name_len].to_ascii_lowercase();
        // The tag's end, quotes respected.
        let mut j = lt + 1 + name_len;
        let mut quote = None;
        while j < bytes.len() {
            match (quote, bytes[j]) {
                (None, b'"' | b'\'') => quote = Some(bytes[j]),
                (Some(q), b) if b == q => quote = None,
                (None, b'>') => break,
                _ => {}
            }
            j += 1;
        }
        if j >= bytes.len() {
            break;
        }
        let self_closed = bytes[j - 1] == b'/';
        if self_closed && !listed(VOID, &name) {
            out.push_str(&text[copied..j - 1]);
            out.push_str("></");
            out.push_str(&name);
            out.push('>');
            copied = j + 1;
        } else if !self_closed && (name == "script" || name == "style") {
            // On to the end tag (its name in any case).
            let close = format!("</{name}");
            j = (j..bytes.len())
                .find(|&k| {
                    bytes[k] == b'<'
                        && bytes.get(k..k + close.len()).is_some_and(|w| w.eq_ignore_ascii_case(close.as_bytes()))
                })
                .unwrap_or(bytes.len() - 1);
        }
        i = j + 1;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

// ---------------------------------------------------------------------------------------
// The tree: an arena of nodes linked to parent and siblings, built by html5ever.

type Id = usize;

enum Data {
    Document,
    Element { name: Rc<QualName>, attrs: Vec<Attribute>, template: Option<Id>, integration_point: bool },
    Text(String),
    Other,
}

struct Node {
    /// Elements above it when it was inserted.
    depth: usize,
    parent: Option<Id>,
    first: Option<Id>,
    last: Option<Id>,
    prev: Option<Id>,
    next: Option<Id>,
    data: Data,
}

impl Node {
    fn new(data: Data) -> Node {
        Node { depth: 0, parent: None, first: None, last: None, prev: None, next: None, data }
    }
}

/// A reference to a node; elements carry their name, which the tree builder asks for often.
#[derive(Clone)]
struct Handle {
    id: Id,
    name: Rc<QualName>,
}

struct Sink {
    nodes: RefCell<Vec<Node>>,
    blank: Rc<QualName>,
    /// Where the tree builder inserts now, as far as insertions and end tags tell: the
    /// element last inserted, or the parent of the text last inserted.
    current: std::cell::Cell<Id>,
}

struct Tree {
    nodes: Vec<Node>,
}

fn detach(nodes: &mut [Node], id: Id) {
    let (parent, prev, next) = (nodes[id].parent, nodes[id].prev, nodes[id].next);
    match prev {
        Some(p) => nodes[p].next = next,
        None => {
            if let Some(parent) = parent {
                nodes[parent].first = next;
            }
        }
    }
    match next {
        Some(n) => nodes[n].prev = prev,
        None => {
            if let Some(parent) = parent {
                nodes[parent].last = prev;
            }
        }
    }
    let node = &mut nodes[id];
    node.parent = None;
    node.prev = None;
    node.next = None;
}

fn append_child(nodes: &mut [Node], parent: Id, child: Id) {
    detach(nodes, child);
    nodes[child].depth = nodes[parent].depth + 1;
    let last = nodes[parent].last;
    nodes[child].parent = Some(parent);
    nodes[child].prev = last;
    match last {
        Some(l) => nodes[l].next = Some(child),
        None => nodes[parent].first = Some(child),
    }
    nodes[parent].last = Some(child);
}

fn insert_before(nodes: &mut [Node], sibling: Id, child: Id) {
    detach(nodes, child);
    let (parent, prev) = (nodes[sibling].parent, nodes[sibling].prev);
    nodes[child].depth = nodes[sibling].depth;
    nodes[child].parent = parent;
    nodes[child].prev = prev;
    nodes[child].next = Some(sibling);
    nodes[sibling].prev = Some(child);
    match prev {
        Some(p) => nodes[p].next = Some(child),
        None => {
            if let Some(parent) = parent {
                nodes[parent].first = Some(child);
            }
        }
    }
}

impl Sink {
    fn new() -> Sink {
        Sink {
            nodes: RefCell::new(vec![Node::new(Data::Document)]),
            blank: Rc::new(QualName::new(None, ns!(), "".into())),
            current: std::cell::Cell::new(0),
        }
    }

    /// How deep the tree builder inserts now.
    fn depth(&self) -> usize {
        self.nodes.borrow()[self.current.get()].depth
    }

    /// Follows end tag `name`: the insertion point moves above the nearest open element of
    /// that name, unless a table, cell or other scope boundary comes first.
    fn close(&self, name: &str) {
        let nodes = self.nodes.borrow();
        let mut at = self.current.get();
        for _ in 0..MAX_DEPTH + 16 {
            let Data::Element { name: element, .. } = &nodes[at].data else { return };
            if element.ns == ns!(html) && &*element.local == name {
                self.current.set(nodes[at].parent.unwrap_or(0));
                return;
            }
            let boundary = element.ns != ns!(html)
                || matches!(
                    &*element.local,
                    "html" | "table" | "td" | "th" | "caption" | "template" | "applet" | "object" | "marquee"
                );
            match nodes[at].parent {
                Some(parent) if !boundary => at = parent,
                _ => return,
            }
        }
    }

    fn add(&self, data: Data) -> Id {
        let mut nodes = self.nodes.borrow_mut();
        nodes.push(Node::new(data));
        nodes.len() - 1
    }

    fn handle(&self, id: Id) -> Handle {
        Handle { id, name: self.blank.clone() }
    }
}

impl TreeSink for Sink {
    type Handle = Handle;
    type Output = Tree;
    type ElemName<'a> = &'a QualName;

    fn finish(self) -> Tree {
        Tree { nodes: self.nodes.into_inner() }
    }

    fn parse_error(&self, _message: Cow<'static, str>) {}

    fn get_document(&self) -> Handle {
        self.handle(0)
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> &'a QualName {
        &target.name
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        let name = Rc::new(name);
        let template = flags.template.then(|| self.add(Data::Document));
        let integration_point = flags.mathml_annotation_xml_integration_point;
        let id = self.add(Data::Element { name: name.clone(), attrs, template, integration_point });
        Handle { id, name }
    }

    fn create_comment(&self, _text: StrTendril) -> Handle {
        self.handle(self.add(Data::Other))
    }

    fn create_pi(&self, _target: StrTendril, _data: StrTendril) -> Handle {
        self.handle(self.add(Data::Other))
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        let mut nodes = self.nodes.borrow_mut();
        match child {
            NodeOrText::AppendNode(node) => {
                append_child(&mut nodes, parent.id, node.id);
                self.current.set(node.id);
            }
            NodeOrText::AppendText(text) => {
                self.current.set(parent.id);
                if let Some(last) = nodes[parent.id].last
                    && let Data::Text(existing) = &mut nodes[last].data
                {
                    existing.push_str(&text);
                    return;
                }
                nodes.push(Node::new(Data::Text(text.to_string())));
                let id = nodes.len() - 1;
                append_child(&mut nodes, parent.id, id);
            }
        }
    }

    fn append_based_on_parent_node(&self, element: &Handle, prev_element: &Handle, child: NodeOrText<Handle>) {
        let has_parent = self.nodes.borrow()[element.id].parent.is_some();
        if has_parent {
            self.append_before_sibling(element, child);
        } else {
            self.append(prev_element, child);
        }
    }

    fn append_doctype_to_document(&self, _name: StrTendril, _public_id: StrTendril, _system_id: StrTendril) {}

    fn get_template_contents(&self, target: &Handle) -> Handle {
        let contents = match &self.nodes.borrow()[target.id].data {
            Data::Element { template: Some(contents), .. } => *contents,
            _ => target.id,
        };
        self.handle(contents)
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        x.id == y.id
    }

    fn set_quirks_mode(&self, _mode: QuirksMode) {}

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        let mut nodes = self.nodes.borrow_mut();
        match new_node {
            NodeOrText::AppendNode(node) => {
                insert_before(&mut nodes, sibling.id, node.id);
                self.current.set(node.id);
            }
            NodeOrText::AppendText(text) => {
                if let Some(prev) = nodes[sibling.id].prev
                    && let Data::Text(existing) = &mut nodes[prev].data
                {
                    existing.push_str(&text);
                    return;
                }
                nodes.push(Node::new(Data::Text(text.to_string())));
                let id = nodes.len() - 1;
                insert_before(&mut nodes, sibling.id, id);
            }
        }
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        if let Data::Element { attrs: existing, .. } = &mut self.nodes.borrow_mut()[target.id].data {
            for attr in attrs {
                if !existing.iter().any(|e| e.name == attr.name) {
                    existing.push(attr);
                }
            }
        }
    }

    fn remove_from_parent(&self, target: &Handle) {
        detach(&mut self.nodes.borrow_mut(), target.id);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        let mut nodes = self.nodes.borrow_mut();
        while let Some(child) = nodes[node.id].first {
            append_child(&mut nodes, new_parent.id, child);
        }
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        matches!(self.nodes.borrow()[handle.id].data, Data::Element { integration_point: true, .. })
    }
}

/// The tree builder behind a guard that drops start tags nested past [`MAX_DEPTH`].
struct Capped {
    builder: TreeBuilder<Handle, Sink>,
    /// Start tags dropped and not yet closed, by name: their end tags are dropped too.
    dropped: RefCell<std::collections::HashMap<html5ever::LocalName, usize>>,
    /// Most nodes the tree may have.
    max_nodes: usize,
    /// Set once the tree has more: the rest of the input is passed over.
    full: std::cell::Cell<bool>,
}

impl TokenSink for Capped {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        if self.full.get() || self.builder.sink.nodes.borrow().len() > self.max_nodes {
            self.full.set(true);
            return TokenSinkResult::Continue;
        }
        let mut closes = None;
        if let Token::TagToken(tag) = &token {
            match tag.kind {
                TagKind::StartTag => {
                    if self.builder.sink.depth() >= MAX_DEPTH && !listed(KEPT_DEEP, &tag.name) {
                        if !tag.self_closing {
                            *self.dropped.borrow_mut().entry(tag.name.clone()).or_default() += 1;
                        }
                        return TokenSinkResult::Continue;
                    }
                }
                TagKind::EndTag => {
                    if let Some(open) = self.dropped.borrow_mut().get_mut(&tag.name).filter(|n| **n > 0) {
                        *open -= 1;
                        return TokenSinkResult::Continue;
                    }
                    closes = Some(tag.name.clone());
                }
            }
        }
        let result = self.builder.process_token(token, line_number);
        if let Some(name) = closes {
            self.builder.sink.close(&name);
        }
        result
    }

    fn end(&self) {
        self.builder.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder.adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// Parses `text`, handing it to html5ever a chunk at a time (a tendril holds at most 4 GiB);
/// `None` when the tree would have more than `max_nodes` nodes.
fn parse(text: &str, max_nodes: usize) -> Option<Tree> {
    let builder = TreeBuilder::new(Sink::new(), Default::default());
    let capped = Capped { builder, dropped: RefCell::default(), max_nodes, full: std::cell::Cell::new(false) };
    let tokenizer = Tokenizer::new(capped, Default::default());
    let input = BufferQueue::default();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        input.push_back(StrTendril::from_slice(&rest[..end]));
        rest = &rest[end..];
        while !matches!(tokenizer.feed(&input), TokenizerResult::Done) {}
    }
    tokenizer.end();
    let capped = tokenizer.sink;
    if capped.full.get() {
        return None;
    }
    Some(capped.builder.sink.finish())
}

/// Where an element belongs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Space {
    Html,
    Svg,
    MathMl,
    Other,
}

impl Tree {
    fn element(&self, id: Id) -> Option<(&str, Space, &[Attribute])> {
        match &self.nodes[id].data {
            Data::Element { name, attrs, .. } => {
                let space = if name.ns == ns!(html) {
                    Space::Html
                } else if name.ns == ns!(svg) {
                    Space::Svg
                } else if name.ns == ns!(mathml) {
                    Space::MathMl
                } else {
                    Space::Other
                };
                Some((&name.local, space, attrs))
            }
            _ => None,
        }
    }

    fn html_name(&self, id: Id) -> Option<&str> {
        self.element(id).filter(|(_, space, _)| *space == Space::Html).map(|(name, _, _)| name)
    }

    fn children(&self, id: Id) -> impl Iterator<Item = Id> + '_ {
        std::iter::successors(self.nodes[id].first, |&c| self.nodes[c].next)
    }

    /// Whether element `id` holds an `h1`–`h6`.
    fn has_heading(&self, id: Id) -> bool {
        let mut at = self.nodes[id].first;
        while let Some(node) = at {
            if matches!(self.html_name(node), Some("h1" | "h2" | "h3" | "h4" | "h5" | "h6")) {
                return true;
            }
            at = self.nodes[node].first.or_else(|| {
                let mut up = node;
                loop {
                    if let Some(next) = self.nodes[up].next {
                        return Some(next);
                    }
                    match self.nodes[up].parent {
                        Some(parent) if parent != id => up = parent,
                        _ => return None,
                    }
                }
            });
        }
        false
    }

    /// The text of the first HTML `<title>` outside SVG, white space collapsed.
    fn title(&self) -> Option<String> {
        let id = (0..self.nodes.len()).find(|&id| {
            self.html_name(id) == Some("title")
                && std::iter::successors(self.nodes[id].parent, |&p| self.nodes[p].parent)
                    .all(|p| !matches!(self.element(p), Some((_, Space::Svg, _))))
        })?;
        let text: String = self
            .children(id)
            .filter_map(|c| match &self.nodes[c].data {
                Data::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let title = one_line(&clean(&text));
        (!title.is_empty()).then_some(title)
    }
}

fn space_is_flat(converter: &Converter<'_>) -> bool {
    converter.flat > 0 || converter.pre.is_some()
}

/// Whether `name` is one of the space-separated names of `list`.
fn listed(list: &str, name: &str) -> bool {
    list.split(' ').any(|n| n == name)
}

fn attr<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a str> {
    attrs.iter().find(|a| a.name.ns == ns!() && &*a.name.local == name).map(|a| &*a.value)
}

/// Text without the characters that show nothing: zero-width space, byte order mark,
/// soft hyphen and word joiner; a non-breaking hyphen (which only matters where lines
/// wrap) as a hyphen.
fn clean(text: &str) -> Cow<'_, str> {
    const INVISIBLE: [char; 4] = ['\u{200B}', '\u{FEFF}', '\u{AD}', '\u{2060}'];
    if !text.contains(INVISIBLE) && !text.contains('\u{2011}') {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace(INVISIBLE, "").replace('\u{2011}', "-"))
}

// ---------------------------------------------------------------------------------------
// The walk

/// Elements whose content a reader never sees (or that only hold controls and metadata).
const SKIPPED: &str = concat!(
    "script style noscript template head title iframe object embed canvas button select datalist input ",
    "textarea audio video map param source track meta link base nav colgroup col frameset frame noembed ",
    "noframes",
);

/// Elements that start and end a paragraph.
const BLOCKS: &str = concat!(
    "address article aside body center details dialog div fieldset figcaption figure footer form header ",
    "hgroup html legend main p search section summary optgroup option output menuitem marquee",
);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Bold,
    Italic,
    Strike,
    Code,
}

fn mark_of(tag: &str) -> Option<Mark> {
    Some(match tag {
        "b" | "strong" => Mark::Bold,
        "i" | "em" | "var" | "dfn" => Mark::Italic,
        "s" | "strike" | "del" => Mark::Strike,
        "code" | "kbd" | "samp" | "tt" => Mark::Code,
        _ => return None,
    })
}

/// What to do when an element ends.
enum Frame {
    /// Nothing.
    Nothing,
    /// A space (in flattened text).
    Space,
    /// A block boundary.
    Boundary,
    /// Undo a mark.
    Mark(Mark),
    /// Undo the code mark of a flattened `pre`, then a space.
    FlatPre,
    /// Drop a link.
    Link,
    /// Write the heading.
    Heading(u8),
    /// End a section: a block boundary.
    Section,
    /// End a block quote (`true` when it counted as one).
    Quote(bool),
    /// End a list (`true` when flattened: also a space).
    List(bool),
    /// End a list item (`true` for a `dt`, whose text is bold).
    Item(bool),
    /// End a table.
    Table,
    /// End a row group (`thead`, `tbody`, `tfoot`).
    Group,
    /// End a row.
    Row,
    /// End a cell.
    Cell,
    /// End a caption.
    Caption,
    /// End preformatted text.
    Pre,
}

struct List {
    ordered: bool,
    next: i64,
    step: i64,
    level: u8,
}

struct Item {
    level: u8,
    number: Option<u64>,
    /// Whether its marker was written (later text goes one level below).
    written: bool,
    /// A `dd`: lists inside it stay at its level.
    description: bool,
    /// `lists.len()` when it started.
    lists: usize,
}

struct Pre {
    text: String,
    language: String,
}

enum Table {
    /// A table of data.
    Grid(Box<Grid>),
    /// A table used for layout (one cell, or `role="presentation"`): its cells are blocks.
    Layout,
}

#[derive(Default)]
struct Grid {
    rows: Vec<Vec<String>>,
    foot: Vec<Vec<String>>,
    in_foot: bool,
    row: Option<Vec<String>>,
    /// For each column, the rows a cell from above still covers and its text.
    spans: Vec<(usize, String)>,
    /// The open cell's column span and row span.
    cell: (usize, usize),
    caption: String,
    repeated: usize,
}

struct Converter<'a> {
    tree: &'a Tree,
    doc: &'a mut Document,
    frames: Vec<Frame>,
    marks: [u32; 4],
    links: Vec<Option<String>>,
    inline: Inline,
    /// Earlier lines of the open paragraph (ended by `<br>`).
    lines: Vec<String>,
    /// Pictures met inside a paragraph or list item, written after it.
    images: Vec<String>,
    quote: u32,
    /// Open sectioning elements (`article`, `aside`, `main`, `section`, a kept page header).
    sections: u32,
    /// Inside a table cell, a caption or a heading: everything is text on one line.
    flat: u32,
    pre: Option<Pre>,
    lists: Vec<List>,
    items: Vec<Item>,
    /// Where the outermost open list's items begin in the document's blocks.
    list_start: usize,
    tables: Vec<Table>,
    repeat_budget: usize,
}

enum Mode {
    Flat,
    Pre,
    Item,
    Paragraph,
}

impl<'a> Converter<'a> {
    fn new(tree: &'a Tree, doc: &'a mut Document) -> Converter<'a> {
        let list_start = doc.blocks.len();
        Converter {
            tree,
            doc,
            frames: Vec::new(),
            marks: [0; 4],
            links: Vec::new(),
            inline: Inline::new(),
            lines: Vec::new(),
            images: Vec::new(),
            quote: 0,
            sections: 0,
            flat: 0,
            pre: None,
            lists: Vec::new(),
            items: Vec::new(),
            list_start,
            tables: Vec::new(),
            repeat_budget: MAX_REPEATED_BYTES,
        }
    }

    /// Walks the tree in document order without recursion: down to the first child when an
    /// element is entered, else on to the next sibling, ending each element climbed out of.
    fn run(mut self) {
        let tree = self.tree;
        let mut next = tree.nodes[0].first;
        while let Some(id) = next {
            let descend = match &tree.nodes[id].data {
                Data::Element { .. } => self.enter(id),
                Data::Text(text) => {
                    self.text(text);
                    false
                }
                _ => false,
            };
            if descend && let Some(first) = tree.nodes[id].first {
                next = Some(first);
                continue;
            }
            if matches!(tree.nodes[id].data, Data::Element { .. }) {
                self.exit();
            }
            let mut at = id;
            next = loop {
                if let Some(sibling) = tree.nodes[at].next {
                    break Some(sibling);
                }
                match tree.nodes[at].parent {
                    Some(parent) if parent != 0 => {
                        self.exit();
                        at = parent;
                    }
                    _ => break None,
                }
            };
        }
        self.flush();
    }

    fn mode(&self) -> Mode {
        if self.flat > 0 {
            Mode::Flat
        } else if self.pre.is_some() {
            Mode::Pre
        } else if !self.items.is_empty() {
            Mode::Item
        } else {
            Mode::Paragraph
        }
    }

    fn style(&self) -> Style {
        Style { bold: self.marks[0] > 0, italic: self.marks[1] > 0, strike: self.marks[2] > 0, code: self.marks[3] > 0 }
    }

    fn text(&mut self, text: &str) {
        let text = clean(text);
        match self.mode() {
            Mode::Pre => {
                if let Some(pre) = &mut self.pre {
                    pre.text.push_str(&text);
                }
            }
            // Text between a table's rows and cells is only white space.
            Mode::Item | Mode::Paragraph if matches!(self.tables.last(), Some(Table::Grid(_))) => {}
            _ => {
                let link = self.links.last().and_then(|l| l.clone());
                self.inline.push(&text, self.style(), link.as_deref());
            }
        }
    }

    fn space(&mut self) {
        self.inline.text(" ");
    }

    /// Enters element `id`; whether to walk its children. Every call pushes one frame.
    fn enter(&mut self, id: Id) -> bool {
        let Some((tag, space, attrs)) = self.tree.element(id) else {
            self.frames.push(Frame::Nothing);
            return false;
        };
        let skip = match space {
            Space::Html => listed(SKIPPED, tag) || is_hidden(attrs),
            Space::Svg => true,
            Space::MathMl => matches!(tag, "annotation" | "annotation-xml") || is_hidden(attrs),
            Space::Other => false,
        };
        if skip || self.is_chrome(id, tag, attrs) {
            self.frames.push(Frame::Nothing);
            return false;
        }
        if space != Space::Html {
            self.frames.push(Frame::Nothing);
            return true;
        }
        if let Some(mark) = mark_of(tag)
            && !matches!(self.mode(), Mode::Pre)
        {
            self.marks[mark as usize] += 1;
            self.frames.push(Frame::Mark(mark));
            return true;
        }
        if tag == "a" {
            let href = attr(attrs, "href").map(str::trim).filter(|h| is_followable(h)).map(str::to_string);
            self.links.push(href);
            self.frames.push(Frame::Link);
            return true;
        }
        let frame = match self.mode() {
            Mode::Pre => self.enter_pre(tag, attrs),
            Mode::Flat => self.enter_flat(tag, attrs),
            Mode::Item | Mode::Paragraph => self.enter_block(id, tag, attrs),
        };
        self.frames.push(frame);
        true
    }

    /// Whether an element is the site's chrome rather than the page's content: a page-level
    /// footer, or a page-level header without a heading, which hold search boxes, logos and
    /// legal notes (`<nav>` menus are skipped outright; `role="navigation"` boxes are kept,
    /// as sites use them for link tables inside the content too).
    fn is_chrome(&self, id: Id, tag: &str, attrs: &[Attribute]) -> bool {
        if space_is_flat(self) {
            return false;
        }
        let role = attr(attrs, "role").map(|r| r.trim().to_ascii_lowercase());
        let page_level = self.sections == 0;
        match (role.as_deref(), tag) {
            (Some("contentinfo"), _) | (_, "footer") => page_level,
            // Page-level headers are scanned at most once each: a kept one counts as a
            // section, so the headers inside it are not scanned again.
            (Some("banner"), _) | (_, "header") => page_level && !self.tree.has_heading(id),
            _ => false,
        }
    }

    fn enter_pre(&mut self, tag: &str, attrs: &[Attribute]) -> Frame {
        match tag {
            "br" => {
                if let Some(pre) = &mut self.pre {
                    pre.text.push('\n');
                }
            }
            "code" => {
                if let Some(pre) = &mut self.pre
                    && pre.language.is_empty()
                {
                    pre.language = language(attrs);
                }
            }
            _ => {}
        }
        Frame::Nothing
    }

    fn enter_flat(&mut self, tag: &str, attrs: &[Attribute]) -> Frame {
        match tag {
            "br" | "hr" | "td" | "th" | "tr" | "dt" | "dd" | "caption" | "blockquote" | "h1" | "h2" | "h3" | "h4"
            | "h5" | "h6" | "table" | "thead" | "tbody" | "tfoot" | "dl" => {
                self.space();
                Frame::Space
            }
            "pre" => {
                self.space();
                self.marks[Mark::Code as usize] += 1;
                Frame::FlatPre
            }
            "ul" | "ol" | "menu" | "dir" => {
                self.space();
                let list = new_list(tag, attrs, 0, self.tree, None);
                self.lists.push(list);
                Frame::List(true)
            }
            "li" => {
                self.space();
                let marker = match self.lists.last_mut() {
                    Some(list) if list.ordered => {
                        let n = list.next.max(0);
                        list.next = list.next.saturating_add(list.step);
                        format!("{n}. ")
                    }
                    _ => "- ".to_string(),
                };
                self.inline.text(&marker);
                Frame::Space
            }
            "img" => {
                if let Some(alt) = attr(attrs, "alt").map(str::trim).filter(|a| !a.is_empty()) {
                    self.space();
                    let link = self.links.last().and_then(|l| l.clone());
                    self.inline.push(&clean(alt), self.style(), link.as_deref());
                    self.space();
                }
                Frame::Nothing
            }
            _ if listed(BLOCKS, tag) => {
                self.space();
                Frame::Space
            }
            _ => Frame::Nothing,
        }
    }

    fn enter_block(&mut self, id: Id, tag: &str, attrs: &[Attribute]) -> Frame {
        let in_item = matches!(self.mode(), Mode::Item);
        let banner = attr(attrs, "role").is_some_and(|r| r.trim().eq_ignore_ascii_case("banner"));
        let tag = if banner { "header" } else { tag };
        match tag {
            "br" => {
                if in_item {
                    self.space();
                } else {
                    let line = std::mem::take(&mut self.inline).finish();
                    if line.is_empty() {
                        // An empty line (`<br><br>`) ends a paragraph.
                        self.flush();
                    } else {
                        self.lines.push(line);
                    }
                }
                Frame::Nothing
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" if !in_item => {
                self.flush();
                self.flat += 1;
                Frame::Heading(tag.as_bytes()[1] - b'0')
            }
            "blockquote" => {
                self.boundary();
                if in_item {
                    Frame::Boundary
                } else {
                    self.quote += 1;
                    Frame::Quote(true)
                }
            }
            "ul" | "ol" | "menu" | "dir" | "dl" => {
                self.flush();
                if self.lists.is_empty() {
                    self.list_start = self.doc.blocks.len();
                }
                let level = self.nested_level();
                let list = new_list(tag, attrs, level, self.tree, Some(id));
                self.lists.push(list);
                Frame::List(false)
            }
            "li" | "dt" | "dd" => {
                self.flush();
                let (list_level, number) = match self.lists.last_mut() {
                    Some(list) => {
                        let number = list.ordered.then(|| {
                            if let Some(value) = attr(attrs, "value").and_then(|v| v.trim().parse::<i64>().ok()) {
                                list.next = value;
                            }
                            let n = list.next;
                            list.next = list.next.saturating_add(list.step);
                            n.max(0) as u64
                        });
                        (list.level, number)
                    }
                    None => (0, None),
                };
                let level = if tag == "dd" { list_level.saturating_add(1) } else { list_level };
                let bold = tag == "dt";
                if bold {
                    self.marks[Mark::Bold as usize] += 1;
                }
                let item = Item { level, number, written: false, description: tag == "dd", lists: self.lists.len() };
                self.items.push(item);
                Frame::Item(bold)
            }
            "table" => {
                self.flush();
                if is_layout_table(self.tree, id, attrs) {
                    self.tables.push(Table::Layout);
                } else {
                    self.tables.push(Table::Grid(Box::default()));
                }
                Frame::Table
            }
            "thead" | "tbody" | "tfoot" | "tr" | "td" | "th" | "caption" => self.enter_table_part(tag, attrs),
            "pre" => {
                self.flush();
                self.pre = Some(Pre { text: String::new(), language: language(attrs) });
                Frame::Pre
            }
            "img" => {
                let alt = attr(attrs, "alt").map(|a| one_line(&clean(a))).unwrap_or_default();
                let blank = self.inline.is_blank() && self.lines.is_empty();
                if blank && !in_item {
                    self.doc.push(Block::Image { alt });
                } else {
                    self.images.push(alt);
                }
                Frame::Nothing
            }
            "article" | "aside" | "main" | "section" | "header" => {
                self.boundary();
                self.sections += 1;
                Frame::Section
            }
            "hr" => {
                if !in_item {
                    self.flush();
                    self.doc.push(Block::Rule);
                }
                Frame::Nothing
            }
            _ if listed(BLOCKS, tag) || matches!(tag, "h1" | "h2" | "h3" | "h4" | "h5" | "h6") => {
                self.boundary();
                Frame::Boundary
            }
            _ => Frame::Nothing,
        }
    }

    fn enter_table_part(&mut self, tag: &str, attrs: &[Attribute]) -> Frame {
        let Some(Table::Grid(grid)) = self.tables.last_mut() else {
            self.boundary();
            return Frame::Boundary;
        };
        match tag {
            "thead" | "tbody" | "tfoot" => {
                grid.end_row(&mut self.repeat_budget);
                grid.spans.clear();
                grid.in_foot = tag == "tfoot";
                Frame::Group
            }
            "tr" => {
                grid.end_row(&mut self.repeat_budget);
                grid.row = Some(Vec::new());
                Frame::Row
            }
            "caption" => {
                self.flat += 1;
                Frame::Caption
            }
            _ => {
                let colspan = span(attrs, "colspan", MAX_COLSPAN);
                let rowspan = match span(attrs, "rowspan", MAX_ROWSPAN) {
                    0 => MAX_ROWSPAN,
                    n => n,
                };
                grid.start_cell(colspan.max(1), rowspan, &mut self.repeat_budget);
                self.flat += 1;
                Frame::Cell
            }
        }
    }

    /// The level of a list that starts here.
    fn nested_level(&self) -> u8 {
        match (self.items.last(), self.lists.last()) {
            (Some(item), _) if item.lists == self.lists.len() => {
                if item.description {
                    item.level
                } else {
                    item.level.saturating_add(1)
                }
            }
            (_, Some(list)) => list.level.saturating_add(1),
            _ => 0,
        }
    }

    fn exit(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        match frame {
            Frame::Nothing => {}
            Frame::Space => self.space(),
            Frame::Boundary => self.boundary(),
            Frame::Section => {
                self.sections = self.sections.saturating_sub(1);
                self.boundary();
            }
            Frame::Mark(mark) => self.marks[mark as usize] = self.marks[mark as usize].saturating_sub(1),
            Frame::FlatPre => {
                self.marks[Mark::Code as usize] = self.marks[Mark::Code as usize].saturating_sub(1);
                self.space();
            }
            Frame::Link => {
                self.links.pop();
            }
            Frame::Heading(level) => {
                self.flat = self.flat.saturating_sub(1);
                let text = std::mem::take(&mut self.inline).finish();
                self.doc.push(Block::Heading { level, text });
            }
            Frame::Quote(counted) => {
                self.flush();
                if counted {
                    self.quote = self.quote.saturating_sub(1);
                }
            }
            Frame::List(flat) => {
                if flat {
                    self.space();
                } else {
                    self.flush();
                }
                self.lists.pop();
            }
            Frame::Item(bold) => {
                self.flush();
                self.items.pop();
                if bold {
                    self.marks[Mark::Bold as usize] = self.marks[Mark::Bold as usize].saturating_sub(1);
                }
            }
            Frame::Table => match self.tables.pop() {
                Some(Table::Grid(mut grid)) => {
                    grid.end_row(&mut self.repeat_budget);
                    self.write_table(*grid);
                }
                _ => self.boundary(),
            },
            Frame::Group => {
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    grid.end_row(&mut self.repeat_budget);
                    grid.spans.clear();
                    grid.in_foot = false;
                }
            }
            Frame::Row => {
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    grid.end_row(&mut self.repeat_budget);
                }
            }
            Frame::Cell => {
                self.flat = self.flat.saturating_sub(1);
                let text = std::mem::take(&mut self.inline).finish();
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    grid.end_cell(text, &mut self.repeat_budget);
                }
            }
            Frame::Caption => {
                self.flat = self.flat.saturating_sub(1);
                let text = std::mem::take(&mut self.inline).finish();
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    if !grid.caption.is_empty() {
                        grid.caption.push(' ');
                    }
                    grid.caption.push_str(&text);
                }
            }
            Frame::Pre => {
                if let Some(pre) = self.pre.take() {
                    let text = code_text(&pre.text);
                    if !text.is_empty() {
                        self.doc.push(Block::Code { language: pre.language, text });
                    }
                }
            }
        }
    }

    /// A block boundary: the end of a paragraph, or a space in a list item or flat text.
    fn boundary(&mut self) {
        match self.mode() {
            Mode::Paragraph => self.flush(),
            Mode::Pre => {}
            Mode::Item | Mode::Flat => self.space(),
        }
    }

    /// Writes the open paragraph or list item text, then the pictures met inside it.
    fn flush(&mut self) {
        match self.mode() {
            Mode::Flat | Mode::Pre => return,
            Mode::Item => {
                let text = std::mem::take(&mut self.inline).finish();
                if let Some(item) = self.items.last_mut()
                    && !text.is_empty()
                {
                    let (level, number) =
                        if item.written { (item.level.saturating_add(1), None) } else { (item.level, item.number) };
                    item.written = true;
                    self.push_item(level, number, text);
                }
            }
            Mode::Paragraph => {
                let last = std::mem::take(&mut self.inline).finish();
                let mut lines = std::mem::take(&mut self.lines);
                if !last.is_empty() {
                    lines.push(last);
                }
                // Lines end with a hard break (two spaces).
                let text = lines.join("  \n");
                self.doc.push(if self.quote > 0 { Block::Quote(text) } else { Block::Paragraph(text) });
            }
        }
        for alt in std::mem::take(&mut self.images) {
            self.doc.push(Block::Image { alt });
        }
    }

    /// Adds a list item, its level at most one below the item of the same list before it
    /// (a deeper item with nothing above it would read as indented code).
    fn push_item(&mut self, level: u8, ordered: Option<u64>, text: String) {
        let max = match self.doc.blocks.last() {
            Some(Block::ListItem { level, .. }) if self.doc.blocks.len() > self.list_start => level.saturating_add(1),
            _ => 0,
        };
        self.doc.push(Block::ListItem { level: level.min(max), ordered, text });
    }

    fn write_table(&mut self, grid: Grid) {
        if !grid.caption.is_empty() {
            self.doc.push(Block::Paragraph(grid.caption.clone()));
        }
        let mut rows = grid.rows;
        rows.extend(grid.foot);
        rows.retain(|row| row.iter().any(|cell| !cell.trim().is_empty()));
        if rows.is_empty() {
            return;
        }
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        if rows.len().saturating_mul(width) > MAX_GRID_CELLS {
            for row in rows {
                let cells: Vec<String> = row.into_iter().filter(|c| !c.trim().is_empty()).collect();
                self.doc.push(Block::Paragraph(cells.join(" ")));
            }
            return;
        }
        self.doc.push(Block::Table(rows));
    }
}

impl Grid {
    fn row(&mut self) -> &mut Vec<String> {
        self.row.get_or_insert_with(Vec::new)
    }

    /// Fills the columns that cells from rows above cover, from the row's end up to the
    /// first free column (`all`: every covered column left in the row, free ones between
    /// them left empty).
    fn fill_covered(&mut self, all: bool, budget: &mut usize) {
        let mut row = self.row.take().unwrap_or_default();
        let end = if all { self.spans.iter().rposition(|(left, _)| *left > 0).map_or(0, |last| last + 1) } else { 0 };
        while let Some((left, text)) = self.spans.get_mut(row.len()) {
            if *left > 0 {
                *left -= 1;
                row.push(repeat(text, budget, &mut self.repeated));
            } else if row.len() < end {
                row.push(String::new());
            } else {
                break;
            }
        }
        self.row = Some(row);
    }

    fn start_cell(&mut self, colspan: usize, rowspan: usize, budget: &mut usize) {
        self.row();
        self.fill_covered(false, budget);
        self.cell = (colspan, rowspan);
    }

    fn end_cell(&mut self, text: String, budget: &mut usize) {
        let (colspan, rowspan) = std::mem::replace(&mut self.cell, (1, 1));
        let mut row = self.row.take().unwrap_or_default();
        let start = row.len();
        for k in 0..colspan {
            if k == 0 {
                row.push(text.clone());
            } else {
                row.push(repeat(&text, budget, &mut self.repeated));
            }
        }
        if rowspan > 1 {
            if self.spans.len() < start + colspan {
                self.spans.resize(start + colspan, (0, String::new()));
            }
            for slot in &mut self.spans[start..start + colspan] {
                *slot = (rowspan - 1, text.clone());
            }
        }
        self.row = Some(row);
    }

    fn end_row(&mut self, budget: &mut usize) {
        if self.row.is_none() {
            return;
        }
        self.fill_covered(true, budget);
        let row = self.row.take().unwrap_or_default();
        if row.is_empty() {
            return;
        }
        if self.in_foot { self.foot.push(row) } else { self.rows.push(row) }
    }
}

/// `text` again for a cell a span covers, while the document's budgets last.
fn repeat(text: &str, budget: &mut usize, repeated: &mut usize) -> String {
    *repeated += 1;
    if *repeated > MAX_SPAN_CELLS || text.len() > *budget {
        return String::new();
    }
    *budget -= text.len();
    text.to_string()
}

fn span(attrs: &[Attribute], name: &str, max: usize) -> usize {
    match attr(attrs, name) {
        None => 1,
        Some(value) => {
            let digits: String = value.trim().chars().take_while(char::is_ascii_digit).collect();
            match digits.parse::<usize>() {
                Ok(n) => n.min(max),
                Err(_) if digits.is_empty() => 1,
                Err(_) => max,
            }
        }
    }
}

fn new_list(tag: &str, attrs: &[Attribute], level: u8, tree: &Tree, id: Option<Id>) -> List {
    let ordered = tag == "ol";
    let reversed = ordered && attr(attrs, "reversed").is_some();
    let start = attr(attrs, "start").and_then(|s| s.trim().parse::<i64>().ok());
    let next = match (start, reversed) {
        (Some(start), _) => start,
        (None, true) => {
            id.map_or(1, |id| tree.children(id).filter(|&c| tree.html_name(c) == Some("li")).count() as i64)
        }
        (None, false) => 1,
    };
    List { ordered, next, step: if reversed { -1 } else { 1 }, level }
}

/// Whether a table only lays things out: `role="presentation"` (or `none`), or a single cell.
fn is_layout_table(tree: &Tree, id: Id, attrs: &[Attribute]) -> bool {
    if attr(attrs, "role").is_some_and(|r| r.eq_ignore_ascii_case("presentation") || r.eq_ignore_ascii_case("none")) {
        return true;
    }
    let mut cells = 0;
    for part in tree.children(id) {
        let rows: Vec<Id> = match tree.html_name(part) {
            Some("thead" | "tbody" | "tfoot") => tree.children(part).collect(),
            Some("tr") => vec![part],
            _ => continue,
        };
        for row in rows {
            if tree.html_name(row) == Some("tr") {
                cells += tree.children(row).filter(|&c| matches!(tree.html_name(c), Some("td" | "th"))).count();
                if cells > 1 {
                    return false;
                }
            }
        }
    }
    true
}

fn is_hidden(attrs: &[Attribute]) -> bool {
    if attr(attrs, "hidden").is_some_and(|v| !v.trim().eq_ignore_ascii_case("until-found")) {
        return true;
    }
    if attr(attrs, "aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return true;
    }
    attr(attrs, "style").is_some_and(|style| {
        let style: String = style.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        style.split(';').any(|d| d.starts_with("display:none") || d.starts_with("visibility:hidden"))
    })
}

/// Whether a link target is worth keeping: not script, not inline data.
fn is_followable(href: &str) -> bool {
    if href.is_empty() {
        return false;
    }
    let scheme: String =
        href.chars().filter(|c| !c.is_ascii_whitespace() && !c.is_control()).take(11).collect::<String>();
    let scheme = scheme.to_ascii_lowercase();
    !(scheme.starts_with("javascript:") || scheme.starts_with("vbscript:") || scheme.starts_with("data:"))
}

/// The language of a `pre` or `code` from its class (`language-rust`, `lang-rust`).
fn language(attrs: &[Attribute]) -> String {
    let Some(class) = attr(attrs, "class") else {
        return String::new();
    };
    class
        .split_ascii_whitespace()
        .find_map(|c| c.strip_prefix("language-").or_else(|| c.strip_prefix("lang-")))
        .map(|l| l.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '#' | '.' | '-')).collect())
        .unwrap_or_default()
}

/// Preformatted text as a code block holds it: no blank lines at either end, no trailing
/// white space, the indentation all lines share removed.
fn code_text(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty());
    let end = lines.iter().rposition(|l| !l.is_empty());
    let (Some(start), Some(end)) = (start, end) else {
        return String::new();
    };
    let lines = &lines[start..=end];
    let indent = lines
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        // The shared indentation is ASCII white space, so `indent` is a char boundary.
        out.push_str(line.get(indent..).unwrap_or(""));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::render;
    use paperchain_testkit::markdown_score;

    fn md(html: &str) -> String {
        render(&read(html.as_bytes(), "/file").unwrap())
    }

    fn blocks(html: &str) -> Vec<Block> {
        read(html.as_bytes(), "/file").unwrap().blocks
    }

    fn row(cells: &[&str]) -> Vec<String> {
        cells.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn headings_paragraphs_and_the_title() {
        let doc = read(
            b"<html><head><title> My\n page </title><meta name=x></head><body><h1>Top</h1>\
              <div>Intro <span>text</span><p>A paragraph</p>tail</div><h3>Sub <em>part</em></h3></body></html>",
            "/file",
        )
        .unwrap();
        assert_eq!(doc.title.as_deref(), Some("My page"));
        assert_eq!(render(&doc), "# Top\n\nIntro text\n\nA paragraph\n\ntail\n\n### Sub *part*\n");
    }

    #[test]
    fn nested_lists_keep_their_levels_and_numbers() {
        let html = "<ol start=\"3\"><li>three<ul><li>a</li><li>b<ol><li>deep</li></ol></li></ul></li>\
                    <li><p>four</p><p>still four</p></li><li value=\"9\">nine</li><li>ten</li></ol>\
                    <ol reversed><li>two</li><li>one</li></ol><ul><li><ul><li>orphan</li></ul></li></ul>";
        assert_eq!(
            md(html),
            "3. three\n    - a\n    - b\n        1. deep\n4. four still four\n9. nine\n10. ten\n2. two\n1. one\n- orphan\n"
        );
    }

    #[test]
    fn description_lists_become_bold_terms_with_their_descriptions_below() {
        let html = "<dl><dt>Coffee</dt><dd>Black</dd><dt>Term</dt><dd><dl><dt>Sub</dt><dd>Detail</dd></dl></dd></dl>";
        assert_eq!(md(html), "- **Coffee**\n    - Black\n- **Term**\n    - **Sub**\n        - Detail\n");
    }

    #[test]
    fn spanning_cells_are_repeated_in_every_cell_they_cover() {
        let html = "<table><caption>Sales</caption><thead><tr><th colspan=2>Head</th><th>C</th></tr></thead>\
                    <tfoot><tr><td>f1</td><td>f2</td><td>f3</td></tr></tfoot>\
                    <tbody><tr><td rowspan=\"2\">R</td><td>1</td><td>2</td></tr><tr><td>3</td><td>4</td></tr>\
                    <tr><td>x</td><td colspan=\"2\" rowspan=\"2\">big</td></tr><tr><td>y</td></tr></tbody></table>";
        assert_eq!(
            blocks(html),
            [
                Block::Paragraph("Sales".into()),
                Block::Table(vec![
                    row(&["Head", "Head", "C"]),
                    row(&["R", "1", "2"]),
                    row(&["R", "3", "4"]),
                    row(&["x", "big", "big"]),
                    row(&["y", "big", "big"]),
                    row(&["f1", "f2", "f3"]),
                ]),
            ]
        );
        // Spans are bounded by the HTML limits.
        let wide = blocks("<table><tr><td colspan=100000>w</td></tr><tr><td>a</td><td>b</td></tr></table>");
        let Block::Table(rows) = &wide[0] else { panic!("{wide:?}") };
        assert_eq!(rows[0].len(), MAX_COLSPAN);
    }

    #[test]
    fn what_a_cell_holds_is_flattened_onto_one_line() {
        let html = "<table><tr><th>A</th><th>B</th></tr><tr><td><ul><li>Pond</li><li>Marsh</li></ul></td>\
                    <td><p>One<br>two</p><table><tr><td>In</td><td>ner</td></tr></table><img alt=\"pic\"></td></tr></table>";
        assert_eq!(
            blocks(html),
            [Block::Table(vec![row(&["A", "B"]), row(&["\\- Pond - Marsh", "One two In ner pic"])])]
        );
        // A one-cell table only lays things out.
        assert_eq!(md("<table><tr><td><h2>Title</h2><p>Body</p></td></tr></table>"), "## Title\n\nBody\n");
    }

    #[test]
    fn inline_styles_and_links() {
        let html = "<p>A <b>bold</b>, <i>it</i>, <s>gone</s>, <code>x_y</code>, <kbd>ls</kbd> and \
                    <a href=\"../rel.html\">rel</a>, <a href=\" JavaScript:alert(1)\">js</a>, \
                    <a href=\"data:text/html,x\">data</a>, <u>under</u> H<sub>2</sub>O 2*3</p>";
        assert_eq!(
            md(html),
            "A **bold**, *it*, ~~gone~~, `x_y`, `ls` and [rel](../rel.html), js, data, under H2O 2\\*3\n"
        );
    }

    #[test]
    fn preformatted_text_keeps_its_lines() {
        let html = "<p>Code:</p><pre><code class=\"hljs language-rust\">\n    fn main() {\n        <b>x</b>();\n    }\n\n</code></pre>\
                    <pre>a<br>b</pre>";
        assert_eq!(
            blocks(html),
            [
                Block::Paragraph("Code:".into()),
                Block::Code { language: "rust".into(), text: "fn main() {\n    x();\n}".into() },
                Block::Code { language: String::new(), text: "a\nb".into() },
            ]
        );
    }

    #[test]
    fn scripts_styles_hidden_elements_and_chrome_are_dropped() {
        let html = "<html><head><style>p { x }</style><script>var a = '<p>no</p>';</script></head><body>\
                    <header><a href=\"/\">Logo</a><nav><a href=\"/a\">Menu</a></nav></header>\
                    <noscript>Enable JS</noscript><template><p>tmpl</p></template>\
                    <p hidden>h</p><p aria-hidden=\"true\">a</p><p style=\"color: red; DISPLAY : none\">d</p>\
                    <main><header><h1>Kept</h1></header><p>Body <span style=\"visibility:hidden\">x</span>text\
                    <button>Click</button></p><footer>Article footer</footer></main>\
                    <footer>Copyright</footer><svg><title>icon</title><text>svg</text></svg></body></html>";
        assert_eq!(md(html), "# Kept\n\nBody text\n\nArticle footer\n");
    }

    #[test]
    fn the_charset_comes_from_a_byte_order_mark_or_a_declaration() {
        let mut cp1252 = b"<html><head><meta charset=\"windows-1252\"></head><body><p>caf".to_vec();
        cp1252.extend_from_slice(b"\xe9 \x93quoted\x94 \x80</p></body></html>");
        assert_eq!(md_bytes(&cp1252), "café “quoted” €\n");
        let mut equiv =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\"><p>\xe9t\xe9</p>".to_vec();
        equiv.push(b' ');
        assert_eq!(md_bytes(&equiv), "été\n");
        let mut utf16 = vec![0xFF, 0xFE];
        for unit in "<p>Grüße</p>".encode_utf16() {
            utf16.extend_from_slice(&unit.to_le_bytes());
        }
        assert_eq!(md_bytes(&utf16), "Grüße\n");
        let utf16be: Vec<u8> = "<p>Ünïcode</p>".encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(md_bytes(&utf16be), "Ünïcode\n");
        // No declaration: UTF-8, with replacement characters for what is not.
        assert_eq!(md_bytes(b"<p>ok \xff</p>"), "ok \u{fffd}\n");
        let xml = b"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"><p>\xe0</p></html>";
        assert_eq!(md_bytes(xml), "à\n");
    }

    fn md_bytes(bytes: &[u8]) -> String {
        render(&read(bytes, "/file").unwrap())
    }

    #[test]
    fn deep_nesting_neither_overflows_nor_crawls() {
        let started = std::time::Instant::now();
        for (open, close) in [
            ("<div>", "</div>"),
            ("<ul><li>", "</li></ul>"),
            ("<blockquote><p>", "</p></blockquote>"),
            ("<table><tr><td>", "</td></tr></table>"),
            ("<b><i>", "</i></b>"),
            ("<span>", ""),
        ] {
            let html = format!("{}deep text{}<p>after</p>", open.repeat(100_000), close.repeat(100_000));
            let doc = read(html.as_bytes(), "/file").unwrap();
            let text = render(&doc);
            assert!(text.contains("deep text") && text.contains("after"), "{open}: {}", &text[..text.len().min(200)]);
        }
        // Quadratic parsing would take many minutes here.
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "{:?}", started.elapsed());
    }

    #[test]
    fn quotes_breaks_figures_pictures_and_rules() {
        let html = "<blockquote><p>Quoted</p><p>Twice</p></blockquote><p>Line one<br>Line two<br><br>New</p>\
                    <figure><img src=a.png alt=\"A duck\"><figcaption>The <b>duck</b></figcaption></figure>\
                    <p>Inline <img alt=\"icon\"> picture</p><hr><p>end</p>";
        assert_eq!(
            blocks(html),
            [
                Block::Quote("Quoted".into()),
                Block::Quote("Twice".into()),
                Block::Paragraph("Line one  \nLine two".into()),
                Block::Paragraph("New".into()),
                Block::Image { alt: "A duck".into() },
                Block::Paragraph("The **duck**".into()),
                Block::Paragraph("Inline picture".into()),
                Block::Image { alt: "icon".into() },
                Block::Rule,
                Block::Paragraph("end".into()),
            ]
        );
    }

    #[test]
    fn xhtml_self_closed_elements_are_closed() {
        let html = "<?xml version=\"1.0\"?><!DOCTYPE html><html xmlns=\"http://www.w3.org/1999/xhtml\"><head><title/>\
                    <script src=\"a.js\"/></head><body><p>a<a id=\"x\"/>b</p><div/><p>after<br/>break</p>\
                    <script>if (a <b/>) {}</script></body></html>";
        assert_eq!(md(html), "ab\n\nafter  \nbreak\n");
        assert_eq!(close_self_closed("<P><A ID='y'/><Br/></P>"), "<P><A ID='y'></a><Br/></P>");
    }

    #[test]
    fn files_that_are_not_html_are_refused() {
        let error = read(b"%PDF-1.7\n%\xe2\xe3", "/file").unwrap_err();
        assert_eq!(error.field.as_deref(), Some("/file"));
        assert_eq!(error.message, "/file: this is a PDF, not an HTML file");
        let error = read(b"\x00\x01\x02binary", "/file").unwrap_err();
        assert!(error.message.contains("binary"), "{}", error.message);
        assert_eq!(read(b"", "/file").unwrap(), Document::default());
        // Trees are bounded (at MAX_NODES; here at 1,000).
        assert!(parse(&"<br>".repeat(990), 1000).is_some());
        assert!(parse(&"<br>".repeat(1001), 1000).is_none());
    }

    fn corpus(name: &str) -> markdown_score::Score {
        let dir = paperchain_testkit::corpus::corpus().join("docling/html");
        let bytes = std::fs::read(dir.join("sources").join(name)).unwrap();
        let truth = std::fs::read_to_string(dir.join("groundtruth").join(format!("{name}.md"))).unwrap();
        markdown_score::score(&render(&read(&bytes, "/file").unwrap()), &truth)
    }

    /// Each corpus file scores at least its measured text similarity less a small margin,
    /// with every heading and table found. What is left of the gaps is mostly docling's
    /// quirks (a space before punctuation after styled text, `H 2 O` for H₂O, no table
    /// captions, its navigation menus) and the scorer reading `[\[1\]](#n)` and
    /// `[a](<b_(c)>)` as other words.
    #[test]
    fn corpus_files_read_close_to_docling() {
        for (name, text, headings) in [
            ("example_03.html", 1.0, 1.0),
            ("formatting.html", 0.876, 1.0),
            ("html_code_snippets.html", 1.0, 1.0),
            ("html_description_list.html", 1.0, 1.0),
            ("html_rich_table_cells.html", 0.905, 1.0),
            ("wiki_duck.html", 0.919, 0.975),
        ] {
            let score = corpus(name);
            assert!(score.text >= text - 0.02, "{name}: {score:?}");
            assert!(score.headings >= headings - 0.02, "{name}: {score:?}");
            assert_eq!(score.tables, 1.0, "{name}: {score:?}");
        }
    }
}
