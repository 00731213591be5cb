//! An owned XML tree that is read and written back: what the template filler edits.
//!
//! Elements keep their qualified names and attributes as written (prefixes and namespace
//! declarations included), so a part comes back as Word wrote it except for what was
//! changed. Text is held unescaped and escaped again on writing. Comments and processing
//! instructions are kept verbatim; entity references other than XML's five and character
//! references are dropped (the package gate refuses document types, so there are none).

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::xml::{escape, escape_text};

/// Deepest nesting a part may have; Word's deepest (tables in tables) is far below.
const MAX_DEPTH: usize = 512;

/// A node of the tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// An element.
    Element(Element),
    /// Text, unescaped.
    Text(String),
    /// A comment, processing instruction or CDATA section, as written.
    Raw(String),
}

/// An element: its qualified name, attributes (values unescaped) and children.
#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    /// The qualified name (`w:p`).
    pub name: String,
    /// Attributes in document order.
    pub attrs: Vec<(String, String)>,
    /// Child nodes.
    pub children: Vec<Node>,
}

impl Element {
    /// A new element without attributes or children.
    pub fn new(name: &str) -> Element {
        Element { name: name.to_string(), attrs: Vec::new(), children: Vec::new() }
    }

    /// The child elements.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| if let Node::Element(e) = n { Some(e) } else { None })
    }

    /// The child elements, to change.
    pub fn elements_mut(&mut self) -> impl Iterator<Item = &mut Element> {
        self.children.iter_mut().filter_map(|n| if let Node::Element(e) = n { Some(e) } else { None })
    }

    /// Sets attribute `name` to `value`, adding it if missing.
    pub fn set_attr(&mut self, name: &str, value: &str) {
        match self.attrs.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value.to_string(),
            None => self.attrs.push((name.to_string(), value.to_string())),
        }
    }

    /// The text of this element's descendants, in order.
    pub fn text(&self) -> String {
        let mut out = String::new();
        collect_text(self, &mut out);
        out
    }
}

fn collect_text(element: &Element, out: &mut String) {
    for child in &element.children {
        match child {
            Node::Element(e) => collect_text(e, out),
            Node::Text(t) => out.push_str(t),
            Node::Raw(_) => {}
        }
    }
}

/// A parsed part: what comes before the root (the XML declaration), and the root.
#[derive(Clone, Debug)]
pub struct Document {
    /// Declaration, comments and processing instructions before the root, as written.
    pub prolog: Vec<String>,
    /// The root element.
    pub root: Element,
}

/// Parses `xml`; the error says what is wrong.
pub fn parse(xml: &[u8]) -> Result<Document, String> {
    let text = crate::markdown::ooxml::decode(xml);
    let mut reader = Reader::from_str(&text);
    reader.config_mut().trim_text(false);
    let mut prolog = Vec::new();
    let mut stack: Vec<Element> = Vec::new();
    let mut root = None;
    loop {
        let event = reader.read_event().map_err(|e| format!("at byte {}: {e}", reader.buffer_position()))?;
        match event {
            Event::Start(start) | Event::Empty(start) if root.is_some() => {
                return Err(format!("a second root element <{}>", start.name().into_inner()));
            }
            Event::Start(ref start) | Event::Empty(ref start) => {
                let name = start.name().into_inner().to_string();
                let mut attrs = Vec::new();
                for attr in start.attributes() {
                    let attr = attr.map_err(|e| format!("in <{name}>: {e}"))?;
                    let key = attr.key.into_inner().to_string();
                    let value = attr
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| format!("in <{name}> {key}: {e}"))?
                        .into_owned();
                    attrs.push((key, value));
                }
                let element = Element { name, attrs, children: Vec::new() };
                if matches!(event, Event::Start(_)) {
                    stack.push(element);
                    if stack.len() > MAX_DEPTH {
                        return Err(format!("elements nest more than {MAX_DEPTH} deep"));
                    }
                } else {
                    attach(&mut stack, &mut root, element);
                }
            }
            Event::End(_) => {
                let element = stack.pop().ok_or("a closing tag without an opening one")?;
                attach(&mut stack, &mut root, element);
            }
            Event::Text(text) => {
                add_text(&mut stack, &text.xml10_content());
            }
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(c)) => Some(c.to_string()),
                    Ok(None) => quick_xml::escape::resolve_predefined_entity(&reference).map(str::to_string),
                    Err(_) => None,
                };
                if let Some(text) = resolved {
                    add_text(&mut stack, &text);
                }
            }
            Event::CData(data) => raw(&mut stack, &mut prolog, format!("<![CDATA[{}]]>", &*data)),
            Event::Comment(text) => raw(&mut stack, &mut prolog, format!("<!--{}-->", &*text)),
            Event::PI(pi) => raw(&mut stack, &mut prolog, format!("<?{}?>", &*pi)),
            Event::Decl(decl) => prolog.push(format!("<?{}?>", &*decl)),
            Event::DocType(_) => return Err("it declares a document type".into()),
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err("the part ends inside an element".into());
    }
    let root = root.ok_or("the part has no root element")?;
    Ok(Document { prolog, root })
}

fn attach(stack: &mut [Element], root: &mut Option<Element>, element: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(element)),
        None => *root = Some(element),
    }
}

fn add_text(stack: &mut [Element], text: &str) {
    // Text outside the root is only whitespace between the prolog's parts.
    let Some(parent) = stack.last_mut() else { return };
    if let Some(Node::Text(previous)) = parent.children.last_mut() {
        previous.push_str(text);
    } else {
        parent.children.push(Node::Text(text.to_string()));
    }
}

fn raw(stack: &mut [Element], prolog: &mut Vec<String>, text: String) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Raw(text)),
        None => prolog.push(text),
    }
}

impl Document {
    /// The part as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = String::new();
        for item in &self.prolog {
            out.push_str(item);
            out.push('\n');
        }
        write_element(&self.root, &mut out);
        out.into_bytes()
    }
}

fn write_element(element: &Element, out: &mut String) {
    out.push('<');
    out.push_str(&element.name);
    for (key, value) in &element.attrs {
        out.push(' ');
        out.push_str(key);
        out.push_str("=\"");
        out.push_str(&escape(value));
        out.push('"');
    }
    if element.children.is_empty() {
        out.push_str("/>");
        return;
    }
    out.push('>');
    for child in &element.children {
        match child {
            Node::Element(e) => write_element(e, out),
            Node::Text(t) => out.push_str(&escape_text(t)),
            Node::Raw(r) => out.push_str(r),
        }
    }
    out.push_str("</");
    out.push_str(&element.name);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_comes_back_as_written() {
        let xml = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="urn:w" w:x="a&amp;b"><w:body><!-- note --><w:p><w:r><w:t xml:space="preserve"> A &lt;b&gt; &amp; &#x263A; </w:t></w:r><w:r/></w:p></w:body></w:document>"#;
        let doc = parse(xml.as_bytes()).unwrap();
        assert_eq!(doc.root.text(), " A <b> & \u{263A} ");
        assert_eq!(
            doc.root.attrs,
            vec![("xmlns:w".to_string(), "urn:w".to_string()), ("w:x".to_string(), "a&b".to_string())]
        );
        let written = String::from_utf8(doc.to_bytes()).unwrap();
        assert_eq!(written, xml.replace("&#x263A;", "\u{263A}"));
        assert_eq!(parse(written.as_bytes()).unwrap().root, doc.root);
    }

    #[test]
    fn broken_parts_say_why() {
        assert!(parse(b"<a><b></a>").is_err());
        assert!(parse(b"<a>").unwrap_err().contains("ends inside"));
        assert!(parse(b"<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>").unwrap_err().contains("document type"));
        assert!(parse(b"<a/><b/>").unwrap_err().contains("second root"));
    }
}
