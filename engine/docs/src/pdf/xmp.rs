//! Reading and writing XMP packets: a small XML reader that resolves namespaces, knows
//! the five predefined entities and character references, and nothing else, and a writer
//! of the packet the metadata edit leaves (`pdf/metadata.rs`).
//!
//! What this module must not do: read a DTD or expand a declared entity (external
//! entities and entity bombs have nothing to act on), go past its depth and element caps,
//! or use a route file.

use crate::xml::escape;

pub const RDF: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
pub const DC: &str = "http://purl.org/dc/elements/1.1/";
pub const XMP: &str = "http://ns.adobe.com/xap/1.0/";
pub const PDF: &str = "http://ns.adobe.com/pdf/1.3/";
pub const XMP_MM: &str = "http://ns.adobe.com/xap/1.0/mm/";
pub const PDFAID: &str = "http://www.aiim.org/pdfa/ns/id/";
pub const PDFUAID: &str = "http://www.aiim.org/pdfua/ns/id/";
const XML: &str = "http://www.w3.org/XML/1998/namespace";

const MAX_DEPTH: usize = 128;
const MAX_ELEMENTS: usize = 100_000;

/// The packet bytes as text: UTF-16 with a byte order mark, else UTF-8 (lossy).
pub fn decode_packet(bytes: &[u8]) -> String {
    if let Some(text) = crate::pdf::decode_utf16_with_bom(bytes) {
        return text;
    }
    let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

#[derive(Debug, Default)]
struct Element {
    ns: String,
    local: String,
    attrs: Vec<Attr>,
    children: Vec<usize>,
    text: String,
}

#[derive(Debug)]
struct Attr {
    ns: String,
    local: String,
    value: String,
}

/// A parsed packet; element 0 is the document itself.
#[derive(Debug)]
pub struct Tree {
    elements: Vec<Element>,
}

struct Open {
    element: usize,
    qname: String,
    scope_len: usize,
}

/// Parses leniently: what precedes a syntax error is kept, the rest dropped.
pub fn parse(text: &str) -> Tree {
    let mut tree = Tree { elements: vec![Element::default()] };
    let mut open = vec![Open { element: 0, qname: String::new(), scope_len: 1 }];
    let mut scopes: Vec<(String, String)> = vec![("xml".into(), XML.into())];
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if !rest.starts_with('<') {
            let end = rest.find('<').unwrap_or(rest.len());
            if let Some(top) = open.last() {
                tree.elements[top.element].text.push_str(&unescape(&rest[..end]));
            }
            i += end;
            continue;
        }
        let skip_past = |marker: &str, from: usize| rest[from..].find(marker).map(|p| from + p + marker.len());
        if rest.starts_with("<!--") {
            i += skip_past("-->", 4).unwrap_or(rest.len());
        } else if let Some(cdata) = rest.strip_prefix("<![CDATA[") {
            let end = cdata.find("]]>").unwrap_or(cdata.len());
            if let Some(top) = open.last() {
                tree.elements[top.element].text.push_str(&cdata[..end]);
            }
            i += (9 + end + 3).min(rest.len());
        } else if rest.starts_with("<!") {
            i += skip_declaration(rest);
        } else if rest.starts_with("<?") {
            i += skip_past("?>", 2).unwrap_or(rest.len());
        } else if let Some(after) = rest.strip_prefix("</") {
            let Some(end) = after.find('>') else { break };
            let name = after[..end].trim();
            if let Some(at) = open.iter().rposition(|o| o.qname == name)
                && at > 0
            {
                scopes.truncate(open[at].scope_len);
                open.truncate(at);
            }
            i += 2 + end + 1;
        } else {
            let Some((tag, used)) = start_tag(rest) else { break };
            i += used;
            if open.len() > MAX_DEPTH || tree.elements.len() >= MAX_ELEMENTS {
                break;
            }
            let scope_len = scopes.len();
            for (name, value) in &tag.attrs {
                if name == "xmlns" {
                    scopes.push((String::new(), value.clone()));
                } else if let Some(prefix) = name.strip_prefix("xmlns:") {
                    scopes.push((prefix.to_string(), value.clone()));
                }
            }
            let resolve = |qname: &str, default_ns: bool| -> (String, String) {
                let (prefix, local) = match qname.split_once(':') {
                    Some((p, l)) => (p, l),
                    None if default_ns => ("", qname),
                    None => return (String::new(), qname.to_string()),
                };
                let ns = scopes.iter().rev().find(|(p, _)| p == prefix).map(|(_, u)| u.clone()).unwrap_or_default();
                (ns, local.to_string())
            };
            let (ns, local) = resolve(&tag.name, true);
            let attrs = tag
                .attrs
                .iter()
                .filter(|(name, _)| name != "xmlns" && !name.starts_with("xmlns:"))
                .map(|(name, value)| {
                    let (ns, local) = resolve(name, false);
                    Attr { ns, local, value: value.clone() }
                })
                .collect();
            let index = tree.elements.len();
            tree.elements.push(Element { ns, local, attrs, children: Vec::new(), text: String::new() });
            if let Some(top) = open.last() {
                tree.elements[top.element].children.push(index);
            }
            if tag.empty {
                scopes.truncate(scope_len);
            } else {
                open.push(Open { element: index, qname: tag.name, scope_len });
            }
        }
    }
    tree
}

struct StartTag {
    name: String,
    attrs: Vec<(String, String)>,
    empty: bool,
}

/// Reads `<name a="v" …>` or `<name …/>` at the start of `s`; the bytes it used.
fn start_tag(s: &str) -> Option<(StartTag, usize)> {
    let bytes = s.as_bytes();
    let name_end = 1 + s[1..].find(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')?;
    let name = s[1..name_end].to_string();
    if name.is_empty() {
        return None;
    }
    let mut attrs = Vec::new();
    let mut i = name_end;
    loop {
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        match bytes.get(i)? {
            b'>' => return Some((StartTag { name, attrs, empty: false }, i + 1)),
            b'/' if bytes.get(i + 1) == Some(&b'>') => return Some((StartTag { name, attrs, empty: true }, i + 2)),
            _ => {}
        }
        let key_len = s[i..].find(|c: char| c.is_ascii_whitespace() || c == '=' || c == '>' || c == '/')?;
        if key_len == 0 {
            return None;
        }
        let key = s[i..i + key_len].to_string();
        i += key_len;
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if bytes.get(i) != Some(&b'=') {
            return None;
        }
        i += 1;
        while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        let quote = *bytes.get(i)?;
        if quote != b'"' && quote != b'\'' {
            return None;
        }
        let value_len = s[i + 1..].find(quote as char)?;
        attrs.push((key, unescape(&s[i + 1..i + 1 + value_len])));
        i += value_len + 2;
    }
}

/// Skips `<!DOCTYPE …>` or another declaration, internal subset and quoted text included.
fn skip_declaration(s: &str) -> usize {
    let mut brackets = 0usize;
    let mut quote: Option<u8> = None;
    for (i, &b) in s.as_bytes().iter().enumerate().skip(2) {
        match (quote, b) {
            (Some(q), _) if b == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(b),
            (None, b'[') => brackets += 1,
            (None, b']') => brackets = brackets.saturating_sub(1),
            (None, b'>') if brackets == 0 => return i + 1,
            _ => {}
        }
    }
    s.len()
}

/// Replaces the predefined entities and character references; leaves anything else as written.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        let decoded = after.find(';').filter(|&e| e <= 12).and_then(|e| Some((entity(&after[..e])?, e)));
        match decoded {
            Some((c, e)) => {
                out.push(c);
                rest = &after[e + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    match name {
        "lt" => Some('<'),
        "gt" => Some('>'),
        "amp" => Some('&'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

impl Tree {
    fn find(&self, ns: &str, local: &str) -> Option<&Element> {
        self.elements.iter().skip(1).find(|e| e.ns == ns && e.local == local)
    }

    fn attribute(&self, ns: &str, local: &str) -> Option<&str> {
        self.elements.iter().flat_map(|e| &e.attrs).find(|a| a.ns == ns && a.local == local).map(|a| a.value.as_str())
    }

    fn child<'a>(&'a self, parent: &'a Element, ns: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        parent.children.iter().filter_map(|&i| self.elements.get(i)).filter(move |e| e.ns == ns)
    }

    /// The `rdf:li` items of an `rdf:Alt`, `rdf:Seq` or `rdf:Bag` under `element`.
    fn items<'a>(&'a self, element: &'a Element) -> Option<Vec<&'a Element>> {
        let container = self.child(element, RDF).find(|e| matches!(e.local.as_str(), "Alt" | "Seq" | "Bag"))?;
        Some(self.child(container, RDF).filter(|e| e.local == "li").collect())
    }

    /// A property as one text: the x-default (else first) item of a container, or its text.
    pub fn text(&self, ns: &str, local: &str) -> Option<String> {
        let Some(element) = self.find(ns, local) else {
            return self.attribute(ns, local).map(str::to_string);
        };
        match self.items(element) {
            Some(items) => {
                let default = items.iter().find(|li| {
                    li.attrs
                        .iter()
                        .any(|a| a.ns == XML && a.local == "lang" && a.value.eq_ignore_ascii_case("x-default"))
                });
                default.or(items.first()).map(|li| li.text.clone())
            }
            None => Some(element.text.clone()),
        }
    }

    /// A property as a list: the items of a container, or its text as one item.
    pub fn list(&self, ns: &str, local: &str) -> Option<Vec<String>> {
        let Some(element) = self.find(ns, local) else {
            return self.attribute(ns, local).map(|v| vec![v.to_string()]);
        };
        match self.items(element) {
            Some(items) => Some(items.iter().map(|li| li.text.clone()).collect()),
            None => Some(vec![element.text.clone()]),
        }
    }
}

/// A simple property carried over from an old packet.
pub struct Simple {
    pub ns: &'static str,
    pub prefix: &'static str,
    pub local: &'static str,
    pub value: String,
}

/// What a fresh packet says.
pub struct PacketFields {
    pub title: Option<String>,
    pub author: Option<String>,
    pub subject: Option<String>,
    pub keywords: Option<String>,
    pub creator_tool: Option<String>,
    pub producer: Option<String>,
    pub create_date: Option<String>,
    pub modify_date: String,
    pub kept: Vec<Simple>,
    /// Whole `rdf:Description` elements added after the main one.
    pub extra: Vec<String>,
}

/// Serialises a packet with the properties of `fields`.
pub fn write_packet(fields: &PacketFields) -> String {
    let mut body = String::new();
    let mut simple = |qname: &str, value: &Option<String>| {
        if let Some(v) = value {
            body.push_str(&format!("   <{qname}>{}</{qname}>\n", escape(v)));
        }
    };
    simple("pdf:Producer", &fields.producer);
    simple("pdf:Keywords", &fields.keywords);
    simple("xmp:CreatorTool", &fields.creator_tool);
    simple("xmp:CreateDate", &fields.create_date);
    simple("xmp:ModifyDate", &Some(fields.modify_date.clone()));
    simple("xmp:MetadataDate", &Some(fields.modify_date.clone()));
    let alt = |qname: &str, value: &Option<String>| {
        value.as_ref().map(|v| {
            format!("   <{qname}><rdf:Alt><rdf:li xml:lang=\"x-default\">{}</rdf:li></rdf:Alt></{qname}>\n", escape(v))
        })
    };
    body.extend(alt("dc:title", &fields.title));
    body.extend(alt("dc:description", &fields.subject));
    if let Some(author) = &fields.author {
        body.push_str(&format!("   <dc:creator><rdf:Seq><rdf:li>{}</rdf:li></rdf:Seq></dc:creator>\n", escape(author)));
    }
    let mut namespaces = format!(" xmlns:dc=\"{DC}\"\n    xmlns:xmp=\"{XMP}\"\n    xmlns:pdf=\"{PDF}\"");
    let mut declared: Vec<&str> = Vec::new();
    for kept in &fields.kept {
        if !declared.contains(&kept.prefix) {
            declared.push(kept.prefix);
            namespaces.push_str(&format!("\n    xmlns:{}=\"{}\"", kept.prefix, kept.ns));
        }
        body.push_str(&format!("   <{0}:{1}>{2}</{0}:{1}>\n", kept.prefix, kept.local, escape(&kept.value)));
    }
    let extra: String = fields.extra.iter().map(|e| format!("  {e}\n")).collect();
    format!(
        "<?xpacket begin=\"\u{FEFF}\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n\
         <x:xmpmeta xmlns:x=\"adobe:ns:meta/\">\n \
         <rdf:RDF xmlns:rdf=\"{RDF}\">\n  \
         <rdf:Description rdf:about=\"\"{namespaces}>\n\
         {body}  \
         </rdf:Description>\n\
         {extra} \
         </rdf:RDF>\n\
         </x:xmpmeta>\n\
         <?xpacket end=\"w\"?>"
    )
}

#[cfg(test)]
mod tests {
    use crate::pdf::xmp;

    #[test]
    fn xml_reader_survives_hostile_packets() {
        let deep = "<a>".repeat(100_000);
        let tree = xmp::parse(&deep);
        assert_eq!(tree.text(xmp::DC, "title"), None);
        for junk in
            ["<", "<a", "<a b", "<a b=", "<a b='", "</", "<!", "<![CDATA[", "<?", "&", "&#xFFFFFFFF;", "<a/><b>"]
        {
            let _ = xmp::parse(junk);
        }
        let tree = xmp::parse(
            "<r xmlns:dc='http://purl.org/dc/elements/1.1/'><dc:title>&#x4E2D;&#20013;&bogus;</dc:title></r>",
        );
        assert_eq!(tree.text(xmp::DC, "title").as_deref(), Some("中中&bogus;"));
        assert_eq!(xmp::decode_packet(&[0xFE, 0xFF, 0, b'<', 0, b'a']), "<a");
    }
}
