//! Office Open XML plumbing the Word and PowerPoint readers share: parts read with a size
//! bound, relationships resolved to part names, a namespace-normalised XML tree (prefixes
//! are the usual ones whatever the file declares: `w:`, `a:`, `p:`, `r:`, `m:`, `c:` …),
//! core properties and chart data.

use std::collections::HashMap;
use std::io::{Cursor, Read};

use quick_xml::NsReader;
use quick_xml::XmlVersion;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;

use crate::error::EngineError;
use crate::markdown::{Block, Inline, escape, one_line};
use crate::office::package::{self, Kind};

/// Largest part read, inflated.
pub const MAX_PART_BYTES: u64 = 64 * 1024 * 1024;
/// Most XML nodes one part may have.
pub const MAX_NODES: usize = 4_000_000;
/// Deepest XML nesting read; also bounds every recursive walk.
pub const MAX_DEPTH: usize = 160;
/// Most table cells (rows × columns, padded) one document may produce.
pub const MAX_TABLE_SLOTS: usize = 2_000_000;
/// Most data points a chart series contributes.
const MAX_CHART_POINTS: usize = 10_000;

pub fn damaged(field: &str, part: &str, why: &str) -> EngineError {
    EngineError::invalid_with(
        "damaged_office_file",
        field,
        format!("{field}: the file's part {part} cannot be read: {why}"),
    )
}

pub fn missing(field: &str, part: &str) -> EngineError {
    EngineError::invalid_with("damaged_office_file", field, format!("{field}: the file has no part {part}"))
}

pub fn too_many_cells(field: &str) -> EngineError {
    EngineError::too_large(
        "output_too_large",
        Some(field.to_string()),
        format!("{field}: its tables hold more than {MAX_TABLE_SLOTS} cells"),
    )
}

/// One relationship of a part.
#[derive(Clone, Debug)]
pub struct Rel {
    pub id: String,
    /// The last segment of the relationship type (`styles`, `hyperlink`, `slide` …).
    pub kind: String,
    /// The part name (resolved against the source part) or the external URL.
    pub target: String,
    pub external: bool,
}

/// The relationships of a part.
#[derive(Clone, Debug, Default)]
pub struct Rels(pub Vec<Rel>);

impl Rels {
    pub fn get(&self, id: &str) -> Option<&Rel> {
        self.0.iter().find(|r| r.id == id)
    }

    pub fn first(&self, kind: &str) -> Option<&Rel> {
        self.0.iter().find(|r| r.kind == kind)
    }

    pub fn all<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Rel> + 'a {
        self.0.iter().filter(move |r| r.kind == kind)
    }
}

/// A package that passed the gate, its parts read on demand.
pub struct Package<'a> {
    archive: zip::ZipArchive<Cursor<&'a [u8]>>,
    names: HashMap<String, String>,
    pub field: String,
}

impl<'a> Package<'a> {
    pub fn open(bytes: &'a [u8], kind: Kind, field: &str) -> Result<Package<'a>, EngineError> {
        let checked = package::check(bytes, kind, field)?;
        let archive =
            zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| damaged(field, "(directory)", &e.to_string()))?;
        let names = checked.members.iter().map(|m| (m.to_ascii_lowercase(), m.clone())).collect();
        Ok(Package { archive, names, field: field.to_string() })
    }

    fn lookup(&self, name: &str) -> Option<String> {
        let name = name.trim_start_matches('/');
        self.names
            .get(&name.to_ascii_lowercase())
            .or_else(|| self.names.get(&percent_decode(name).to_ascii_lowercase()))
            .cloned()
    }

    /// The bytes of part `name`, `None` when the package has no such part.
    pub fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, EngineError> {
        let Some(actual) = self.lookup(name) else { return Ok(None) };
        let field = self.field.clone();
        let member = self.archive.by_name(&actual).map_err(|e| damaged(&field, name, &e.to_string()))?;
        let mut data = Vec::new();
        member.take(MAX_PART_BYTES + 1).read_to_end(&mut data).map_err(|e| damaged(&field, name, &e.to_string()))?;
        if data.len() as u64 > MAX_PART_BYTES {
            return Err(EngineError::too_large(
                "file_too_large",
                Some(field.clone()),
                format!("{field}: part {name} is larger than {} MiB", MAX_PART_BYTES >> 20),
            ));
        }
        Ok(Some(data))
    }

    /// Part `name` as an XML tree.
    pub fn xml(&mut self, name: &str) -> Result<Option<Dom>, EngineError> {
        match self.read(name)? {
            None => Ok(None),
            Some(bytes) => Dom::parse(&bytes).map(Some).map_err(|why| match why {
                DomError::TooLarge(what) => EngineError::too_large(
                    "file_too_large",
                    Some(self.field.clone()),
                    format!("{}: part {name} {what}", self.field),
                ),
                DomError::Xml(why) => damaged(&self.field, name, &why),
            }),
        }
    }

    /// The relationships of part `part` (`""`: the package's own).
    pub fn rels(&mut self, part: &str) -> Result<Rels, EngineError> {
        let part = part.trim_start_matches('/');
        let (dir, file) = match part.rfind('/') {
            Some(i) => (&part[..i], &part[i + 1..]),
            None => ("", part),
        };
        let rels_name = if dir.is_empty() { format!("_rels/{file}.rels") } else { format!("{dir}/_rels/{file}.rels") };
        let Some(dom) = self.xml(&rels_name)? else { return Ok(Rels::default()) };
        let mut rels = Vec::new();
        if let Some(list) = dom.root().child("rel:Relationships") {
            for r in list.children().filter(|r| r.is("rel:Relationship")) {
                let (Some(id), Some(kind), Some(target)) = (r.attr("Id"), r.attr("Type"), r.attr("Target")) else {
                    continue;
                };
                let external = r.attr("TargetMode").is_some_and(|m| m.eq_ignore_ascii_case("external"));
                rels.push(Rel {
                    id: id.to_string(),
                    kind: kind.rsplit('/').next().unwrap_or_default().to_string(),
                    target: if external { target.to_string() } else { resolve(dir, target) },
                    external,
                });
            }
        }
        Ok(Rels(rels))
    }

    /// The document title of `docProps/core.xml` (found through the package's relationships).
    pub fn core_title(&mut self, root: &Rels) -> Result<Option<String>, EngineError> {
        let part = root
            .first("core-properties")
            .filter(|r| !r.external)
            .map(|r| r.target.clone())
            .unwrap_or_else(|| "docProps/core.xml".to_string());
        let Some(dom) = self.xml(&part)? else { return Ok(None) };
        let title = dom
            .root()
            .children()
            .next()
            .and_then(|props| props.children().find(|c| c.is("dc:title")))
            .map(|t| one_line(&t.text()))
            .filter(|t| !t.is_empty());
        Ok(title)
    }
}

/// `target` relative to the folder `dir`, `..` and `.` resolved.
pub fn resolve(dir: &str, target: &str) -> String {
    let target = target.split('#').next().unwrap_or_default();
    let mut parts: Vec<&str> = Vec::new();
    let joined;
    let path = if let Some(absolute) = target.strip_prefix('/') {
        absolute
    } else {
        joined = if dir.is_empty() { target.to_string() } else { format!("{dir}/{target}") };
        joined.as_str()
    };
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

/// `%XX` escapes decoded (invalid ones kept as written); the bytes read as UTF-8.
pub fn percent_decode(name: &str) -> String {
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), bytes.get(i + 2).and_then(|b| hex(*b)))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The URL of a link target when it is one Markdown may carry (no `javascript:` and the like).
pub fn safe_link(target: &str) -> Option<String> {
    let target = target.trim();
    if target.is_empty() {
        return None;
    }
    let scheme_end = target.find(':');
    let scheme = scheme_end.map(|i| &target[..i]).filter(|s| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    match scheme.map(str::to_ascii_lowercase).as_deref() {
        None => Some(target.to_string()),
        Some("http" | "https" | "mailto" | "ftp" | "ftps" | "tel" | "file" | "news") => Some(target.to_string()),
        Some(_) => None,
    }
}

/// Picture descriptions without the line Office adds to the ones it generates.
pub fn clean_alt(alt: &str) -> String {
    let kept: Vec<&str> = alt
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.to_ascii_lowercase().starts_with("description automatically generated"))
        .collect();
    one_line(&kept.join(" "))
}

// --- the XML tree ---------------------------------------------------------------

const NONE: u32 = u32::MAX;
const TEXT: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    /// Index into `names`, or [`TEXT`].
    name: u32,
    first: u32,
    last: u32,
    next: u32,
    /// Elements: first attribute; text: index into `texts`.
    data: u32,
    /// Elements: number of attributes.
    len: u32,
}

/// An XML part as a tree: elements with normalised names, attributes and text.
#[derive(Debug, Default)]
pub struct Dom {
    nodes: Vec<Node>,
    names: Vec<String>,
    attrs: Vec<(u32, String)>,
    texts: Vec<String>,
}

#[derive(Debug)]
pub enum DomError {
    Xml(String),
    TooLarge(String),
}

/// The usual prefix of a namespace, `x` for the ones the readers do not use.
fn prefix(ns: &str) -> &'static str {
    const OOXML: &str = "http://schemas.openxmlformats.org/";
    const STRICT: &str = "http://purl.oclc.org/ooxml/";
    let tail = ns.strip_prefix(OOXML).or_else(|| ns.strip_prefix(STRICT));
    if let Some(tail) = tail {
        let tail = tail.replace("/2006", "");
        return match tail.as_str() {
            "wordprocessingml/main" => "w",
            "officeDocument/relationships" => "r",
            "officeDocument/math" => "m",
            "drawingml/main" => "a",
            "drawingml/wordprocessingDrawing" => "wp",
            "drawingml/picture" => "pic",
            "drawingml/chart" => "c",
            "drawingml/diagram" => "dgm",
            "presentationml/main" => "p",
            "markup-compatibility" => "mc",
            "package/relationships" => "rel",
            "package/metadata/core-properties" => "cp",
            _ => "x",
        };
    }
    match ns {
        "urn:schemas-microsoft-com:vml" => "v",
        "urn:schemas-microsoft-com:office:office" => "o",
        "http://schemas.microsoft.com/office/word/2010/wordprocessingShape" => "wps",
        "http://schemas.microsoft.com/office/word/2010/wordprocessingGroup" => "wpg",
        "http://purl.org/dc/elements/1.1/" => "dc",
        "http://schemas.microsoft.com/office/powerpoint/2018/8/main" => "p188",
        "http://schemas.microsoft.com/office/drawing/2010/main" => "a14",
        "http://www.w3.org/XML/1998/namespace" => "xml",
        _ => "x",
    }
}

pub(crate) fn decode(bytes: &[u8]) -> String {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return String::from_utf8_lossy(rest).into_owned();
    }
    if bytes.starts_with(&[0xFF, 0xFE]) {
        return encoding_rs::UTF_16LE.decode_with_bom_removal(bytes).0.into_owned();
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        return encoding_rs::UTF_16BE.decode_with_bom_removal(bytes).0.into_owned();
    }
    String::from_utf8_lossy(bytes).into_owned()
}

impl Dom {
    pub fn parse(bytes: &[u8]) -> Result<Dom, DomError> {
        let text = decode(bytes);
        let mut reader = NsReader::from_str(&text);
        let mut dom = Dom::default();
        let mut interned: HashMap<String, u32> = HashMap::new();
        let mut intern = |dom: &mut Dom, name: String| -> u32 {
            if let Some(id) = interned.get(&name) {
                return *id;
            }
            let id = dom.names.len() as u32;
            dom.names.push(name.clone());
            interned.insert(name, id);
            id
        };
        let root_name = intern(&mut dom, "#document".to_string());
        dom.nodes.push(Node { name: root_name, first: NONE, last: NONE, next: NONE, data: 0, len: 0 });
        let mut stack: Vec<u32> = vec![0];
        loop {
            let event = reader.read_event().map_err(|e| DomError::Xml(e.to_string()))?;
            match event {
                Event::Start(ref e) | Event::Empty(ref e) => {
                    let (ns, local) = reader.resolver().resolve_element(e.name());
                    let name = qualify(&ns, local.into_inner());
                    let name = intern(&mut dom, name);
                    let attr_start = dom.attrs.len() as u32;
                    for attr in e.attributes().with_checks(false) {
                        let attr = attr.map_err(|e| DomError::Xml(e.to_string()))?;
                        let key = attr.key.into_inner();
                        if key == "xmlns" || key.starts_with("xmlns:") {
                            continue;
                        }
                        let (ns, local) = reader.resolver().resolve_attribute(attr.key);
                        let key = qualify(&ns, local.into_inner());
                        let value = match attr.normalized_value(XmlVersion::Implicit1_0) {
                            Ok(v) => v.into_owned(),
                            Err(_) => attr.value.into_owned(),
                        };
                        let key = intern(&mut dom, key);
                        dom.attrs.push((key, value));
                    }
                    let len = dom.attrs.len() as u32 - attr_start;
                    let parent = *stack.last().unwrap_or(&0);
                    let id =
                        dom.append(parent, Node { name, first: NONE, last: NONE, next: NONE, data: attr_start, len });
                    if matches!(event, Event::Start(_)) {
                        stack.push(id);
                        if stack.len() > MAX_DEPTH {
                            return Err(DomError::Xml(format!("elements nest more than {MAX_DEPTH} deep")));
                        }
                    }
                }
                Event::End(_) if stack.len() > 1 => {
                    stack.pop();
                }
                Event::Text(t) => {
                    let parent = *stack.last().unwrap_or(&0);
                    dom.add_text(parent, &t.xml10_content());
                }
                Event::CData(t) => {
                    let parent = *stack.last().unwrap_or(&0);
                    dom.add_text(parent, &t);
                }
                Event::GeneralRef(r) => {
                    let parent = *stack.last().unwrap_or(&0);
                    let resolved = match r.resolve_char_ref() {
                        Ok(Some(c)) => Some(c.to_string()),
                        Ok(None) => quick_xml::escape::resolve_predefined_entity(&r).map(str::to_string),
                        Err(_) => None,
                    };
                    // Other entities are not expanded (the gate refuses document types).
                    if let Some(s) = resolved {
                        dom.add_text(parent, &s);
                    }
                }
                Event::Eof => {
                    if stack.len() > 1 {
                        return Err(DomError::Xml("the part ends inside an element".to_string()));
                    }
                    break;
                }
                _ => {}
            }
            if dom.nodes.len() > MAX_NODES {
                return Err(DomError::TooLarge(format!("has more than {MAX_NODES} XML nodes")));
            }
        }
        Ok(dom)
    }

    fn append(&mut self, parent: u32, node: Node) -> u32 {
        let id = self.nodes.len() as u32;
        self.nodes.push(node);
        let p = parent as usize;
        match self.nodes[p].last {
            NONE => self.nodes[p].first = id,
            last => self.nodes[last as usize].next = id,
        }
        self.nodes[p].last = id;
        id
    }

    fn add_text(&mut self, parent: u32, text: &str) {
        if text.is_empty() {
            return;
        }
        let p = parent as usize;
        let last = self.nodes[p].last;
        if last != NONE && self.nodes[last as usize].name == TEXT {
            let index = self.nodes[last as usize].data as usize;
            self.texts[index].push_str(text);
            return;
        }
        // White space between elements is kept only inside text elements (w:t, a:t, m:t).
        let keeps_space = self.names.get(self.nodes[p].name as usize).is_some_and(|n| n.ends_with(":t") || n == "t");
        if !keeps_space && text.chars().all(char::is_whitespace) {
            return;
        }
        let index = self.texts.len() as u32;
        self.texts.push(text.to_string());
        self.append(parent, Node { name: TEXT, first: NONE, last: NONE, next: NONE, data: index, len: 0 });
    }

    /// The document node (its child is the root element).
    pub fn root(&self) -> El<'_> {
        El { dom: self, id: 0 }
    }
}

fn qualify(ns: &ResolveResult, local: &str) -> String {
    match ns {
        ResolveResult::Bound(ns) => format!("{}:{local}", prefix(ns.0)),
        ResolveResult::Unbound => local.to_string(),
        ResolveResult::Unknown(_) => format!("x:{local}"),
    }
}

/// An element of a [`Dom`].
#[derive(Clone, Copy)]
pub struct El<'d> {
    dom: &'d Dom,
    id: u32,
}

impl std::fmt::Debug for El<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{}>", self.name())
    }
}

impl<'d> El<'d> {
    fn node(self) -> Node {
        self.dom.nodes[self.id as usize]
    }

    /// The name with its usual prefix (`w:p`).
    pub fn name(self) -> &'d str {
        self.dom.names.get(self.node().name as usize).map(String::as_str).unwrap_or("")
    }

    /// The name without its prefix.
    pub fn local(self) -> &'d str {
        let name = self.name();
        name.rsplit(':').next().unwrap_or(name)
    }

    pub fn is(self, name: &str) -> bool {
        self.name() == name
    }

    pub fn attr(self, name: &str) -> Option<&'d str> {
        let node = self.node();
        let start = node.data as usize;
        let attrs = self.dom.attrs.get(start..start + node.len as usize)?;
        attrs.iter().find(|(k, _)| self.dom.names.get(*k as usize).is_some_and(|n| n == name)).map(|(_, v)| v.as_str())
    }

    /// The child elements.
    pub fn children(self) -> impl Iterator<Item = El<'d>> + 'd {
        let dom = self.dom;
        let mut next = self.node().first;
        std::iter::from_fn(move || {
            while next != NONE {
                let id = next;
                let node = dom.nodes[id as usize];
                next = node.next;
                if node.name != TEXT {
                    return Some(El { dom, id });
                }
            }
            None
        })
    }

    pub fn child(self, name: &str) -> Option<El<'d>> {
        self.children().find(|c| c.is(name))
    }

    /// The descendant elements in document order.
    pub fn descendants(self) -> impl Iterator<Item = El<'d>> + 'd {
        let dom = self.dom;
        let mut stack = vec![self.node().first];
        std::iter::from_fn(move || {
            loop {
                let id = stack.pop()?;
                if id == NONE {
                    continue;
                }
                let node = dom.nodes[id as usize];
                stack.push(node.next);
                if node.name == TEXT {
                    continue;
                }
                stack.push(node.first);
                return Some(El { dom, id });
            }
        })
    }

    /// All text inside, in document order.
    pub fn text(self) -> String {
        let dom = self.dom;
        let mut out = String::new();
        let mut stack = vec![self.node().first];
        while let Some(id) = stack.pop() {
            if id == NONE {
                continue;
            }
            let node = dom.nodes[id as usize];
            stack.push(node.next);
            if node.name == TEXT {
                out.push_str(dom.texts.get(node.data as usize).map(String::as_str).unwrap_or(""));
            } else {
                stack.push(node.first);
            }
        }
        out
    }
}

/// Markup-compatibility prefixes whose content these readers understand.
const UNDERSTOOD: &[&str] = &["wps", "wpg", "wpc", "wp14", "w14", "w15", "w16", "a14", "p14", "p15", "m", "v", "mc"];

/// The branch of an `mc:AlternateContent` to read: the first choice whose requirements
/// are understood, else the fallback.
pub fn alternate(el: El) -> Option<El> {
    let mut fallback = None;
    for branch in el.children() {
        if branch.is("mc:Choice") {
            let requires = branch.attr("Requires").unwrap_or("");
            if requires.split_whitespace().all(|r| UNDERSTOOD.contains(&r)) {
                return Some(branch);
            }
        } else if branch.is("mc:Fallback") {
            fallback = Some(branch);
        }
    }
    fallback
}

/// The child elements, `mc:AlternateContent` replaced by the children of its branch.
pub fn kids(el: El) -> Vec<El> {
    let mut out = Vec::new();
    push_kids(el, &mut out, 0);
    out
}

fn push_kids<'d>(el: El<'d>, out: &mut Vec<El<'d>>, level: usize) {
    for k in el.children() {
        if k.is("mc:AlternateContent") {
            if level < 4
                && let Some(branch) = alternate(k)
            {
                push_kids(branch, out, level + 1);
            }
        } else {
            out.push(k);
        }
    }
}

/// List items follow one another a level at a time, and a list starts at level 0,
/// as Markdown needs.
pub fn normalise_list_levels(blocks: &mut [Block]) {
    let mut previous: Option<u8> = None;
    for block in blocks {
        match block {
            Block::ListItem { level, .. } => {
                let max = previous.map_or(0, |p| p.saturating_add(1));
                *level = (*level).min(max);
                previous = Some(*level);
            }
            _ => previous = None,
        }
    }
}

/// Blocks as the inline Markdown of one table cell: list items keep their markers,
/// nested tables give their cells in order, pictures their placeholder.
pub fn flatten(blocks: &[Block]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for block in blocks {
        let part = match block {
            Block::Heading { text, .. } | Block::Paragraph(text) | Block::Quote(text) => text.clone(),
            Block::ListItem { ordered: Some(n), text, .. } => format!("{n}. {text}"),
            Block::ListItem { ordered: None, text, .. } => format!("- {text}"),
            Block::Table(rows) => {
                rows.iter().flatten().map(|c| c.trim()).filter(|c| !c.is_empty()).collect::<Vec<_>>().join(" ")
            }
            Block::Image { alt } => {
                let alt = one_line(alt).replace("--", "- -");
                if alt.is_empty() { "<!-- image -->".to_string() } else { format!("<!-- image: {alt} -->") }
            }
            Block::Code { text, .. } => escape(&one_line(text)),
            Block::Rule => String::new(),
        };
        let part = one_line(&part);
        if !part.is_empty() {
            parts.push(part);
        }
    }
    parts.join(" ")
}

// --- charts ----------------------------------------------------------------------

fn chart_kind(name: &str) -> &'static str {
    match name {
        "c:barChart" | "c:bar3DChart" => "Bar chart",
        "c:lineChart" | "c:line3DChart" => "Line chart",
        "c:pieChart" | "c:pie3DChart" | "c:doughnutChart" | "c:ofPieChart" => "Pie chart",
        "c:scatterChart" | "c:bubbleChart" => "Scatter chart",
        "c:areaChart" | "c:area3DChart" => "Area chart",
        "c:radarChart" => "Radar chart",
        "c:stockChart" => "Stock chart",
        "c:surfaceChart" | "c:surface3DChart" => "Surface chart",
        _ => "Chart",
    }
}

/// The points of a data source (`c:cat`, `c:val`, `c:tx` …): index → text.
fn points(source: El) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let cache = source
        .descendants()
        .find(|d| matches!(d.name(), "c:strCache" | "c:numCache" | "c:strLit" | "c:numLit" | "c:multiLvlStrCache"));
    let Some(cache) = cache else {
        // A series name given as plain text.
        if let Some(v) = source.child("c:v") {
            out.push((0, one_line(&v.text())));
        }
        return out;
    };
    // Multi-level categories: the innermost level.
    let cache = if cache.is("c:multiLvlStrCache") { cache.child("c:lvl").unwrap_or(cache) } else { cache };
    for pt in cache.children().filter(|p| p.is("c:pt")) {
        let Some(idx) = pt.attr("idx").and_then(|i| i.trim().parse::<usize>().ok()) else { continue };
        if idx >= MAX_CHART_POINTS {
            continue;
        }
        let value = pt.child("c:v").map(|v| one_line(&v.text())).unwrap_or_default();
        out.push((idx, value));
    }
    out
}

/// A chart part as blocks: its title, a picture, the chart type as its caption, and its
/// data as a table (categories down, one column a series).
pub fn chart(pkg: &mut Package, part: &str) -> Result<Vec<Block>, EngineError> {
    let Some(dom) = pkg.xml(part)? else { return Ok(vec![Block::Image { alt: "Chart".to_string() }]) };
    let Some(chart) = dom.root().child("c:chartSpace").and_then(|s| s.child("c:chart")) else {
        return Ok(vec![Block::Image { alt: "Chart".to_string() }]);
    };
    let mut blocks = Vec::new();
    if let Some(title) = chart.child("c:title") {
        let paragraphs: Vec<String> =
            title.descendants().filter(|d| d.is("a:p")).map(|p| one_line(&p.text())).collect();
        let mut text = one_line(&paragraphs.join(" "));
        if text.is_empty() {
            text =
                title.descendants().filter(|d| d.is("c:v")).map(|v| one_line(&v.text())).collect::<Vec<_>>().join(" ");
        }
        if !text.is_empty() {
            let mut inline = Inline::new();
            inline.text(&text);
            blocks.push(Block::Paragraph(inline.finish()));
        }
    }
    let groups: Vec<El> = chart
        .child("c:plotArea")
        .map(|p| p.children().filter(|c| c.name().starts_with("c:") && c.name().ends_with("Chart")).collect())
        .unwrap_or_default();
    // The picture, then its kind as a visible caption ("Bar chart"): a reader of the
    // Markdown sees what the table under it is the data of.
    let kind = groups.first().map_or("Chart", |g| chart_kind(g.name()));
    blocks.push(Block::Image { alt: String::new() });
    blocks.push(Block::Paragraph(cell(kind)));
    let mut categories: HashMap<usize, String> = HashMap::new();
    let mut series: Vec<(String, HashMap<usize, String>)> = Vec::new();
    for group in &groups {
        for ser in group.children().filter(|s| s.is("c:ser")) {
            if series.len() >= 256 {
                break;
            }
            let name =
                ser.child("c:tx").map(points).and_then(|p| p.into_iter().next()).map(|p| p.1).unwrap_or_default();
            if let Some(cat) = ser.child("c:cat").or_else(|| ser.child("c:xVal")) {
                for (i, v) in points(cat) {
                    categories.entry(i).or_insert(v);
                }
            }
            let values = ser.child("c:val").or_else(|| ser.child("c:yVal")).map(points).unwrap_or_default();
            series.push((name, values.into_iter().collect()));
        }
    }
    if series.is_empty() {
        return Ok(blocks);
    }
    let mut indexes: Vec<usize> = categories.keys().chain(series.iter().flat_map(|(_, v)| v.keys())).copied().collect();
    indexes.sort_unstable();
    indexes.dedup();
    let mut rows = vec![std::iter::once(String::new()).chain(series.iter().map(|(n, _)| cell(n))).collect::<Vec<_>>()];
    for i in indexes {
        let mut row = vec![categories.get(&i).map(|c| cell(c)).unwrap_or_default()];
        row.extend(series.iter().map(|(_, v)| v.get(&i).map(|x| cell(x)).unwrap_or_default()));
        rows.push(row);
    }
    blocks.push(Block::Table(rows));
    Ok(blocks)
}

fn cell(text: &str) -> String {
    let mut inline = Inline::new();
    inline.text(text);
    inline.finish()
}
