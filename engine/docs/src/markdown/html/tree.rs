//! The parsed page: html5ever's tree builder fed a chunk at a time into a small arena of
//! nodes linked to parent and siblings ([`Tree`]), start tags nested deeper than
//! [`MAX_DEPTH`] dropped as browsers do (their text kept), and at most a given number of
//! nodes. Also the small lookups the walk makes on elements and text.
//!
//! What this module must not do: hold more nodes than it is allowed (`parse` answers
//! `None`), or recurse over the tree.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use html5ever::interface::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer};
use html5ever::tree_builder::TreeBuilder;
use html5ever::{Attribute, QualName, TokenizerResult, ns};

use crate::markdown::one_line;

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

pub(super) type Id = usize;

pub(super) enum Data {
    Document,
    Element { name: Rc<QualName>, attrs: Vec<Attribute>, template: Option<Id>, integration_point: bool },
    Text(String),
    Other,
}

pub(super) struct Node {
    /// Elements above it when it was inserted.
    depth: usize,
    pub(super) parent: Option<Id>,
    pub(super) first: Option<Id>,
    last: Option<Id>,
    prev: Option<Id>,
    pub(super) next: Option<Id>,
    pub(super) data: Data,
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

pub(super) struct Tree {
    pub(super) nodes: Vec<Node>,
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
pub(super) fn parse(text: &str, max_nodes: usize) -> Option<Tree> {
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
pub(super) enum Space {
    Html,
    Svg,
    MathMl,
    Other,
}

impl Tree {
    pub(super) fn element(&self, id: Id) -> Option<(&str, Space, &[Attribute])> {
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

    pub(super) fn html_name(&self, id: Id) -> Option<&str> {
        self.element(id).filter(|(_, space, _)| *space == Space::Html).map(|(name, _, _)| name)
    }

    pub(super) fn children(&self, id: Id) -> impl Iterator<Item = Id> + '_ {
        std::iter::successors(self.nodes[id].first, |&c| self.nodes[c].next)
    }

    /// Whether element `id` holds an `h1`–`h6`.
    pub(super) fn has_heading(&self, id: Id) -> bool {
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
    pub(super) fn title(&self) -> Option<String> {
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

/// Whether `name` is one of the space-separated names of `list`.
pub(super) fn listed(list: &str, name: &str) -> bool {
    list.split(' ').any(|n| n == name)
}

pub(super) fn attr<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a str> {
    attrs.iter().find(|a| a.name.ns == ns!() && &*a.name.local == name).map(|a| &*a.value)
}

/// Text without the characters that show nothing: zero-width space, byte order mark,
/// soft hyphen and word joiner; a non-breaking hyphen (which only matters where lines
/// wrap) as a hyphen.
pub(super) fn clean(text: &str) -> Cow<'_, str> {
    const INVISIBLE: [char; 4] = ['\u{200B}', '\u{FEFF}', '\u{AD}', '\u{2060}'];
    if !text.contains(INVISIBLE) && !text.contains('\u{2011}') {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.replace(INVISIBLE, "").replace('\u{2011}', "-"))
}
