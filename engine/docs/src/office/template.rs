//! Word templates filled from JSON: the engine of `/v1/docs/fill-template`.
//!
//! The syntax is Mustache's, on a Word document's text:
//! - `{{name}}`, `{{customer.name}}`: a value (text, number, true/false; null is empty),
//!   looked up in the innermost section's item first, then outwards; `{{.}}` is the item
//!   itself. The text takes the formatting of the placeholder's first character; a line
//!   break in the value becomes a line break in Word.
//! - `{{#items}}…{{/items}}`: a section. Over a list it repeats once per item; over an
//!   object, once with the object as the innermost item; over true or a non-empty value,
//!   once; over false, null, an empty list or "", not at all. `{{^items}}…{{/items}}` is
//!   the inverse: once when the value is false, null, empty or "".
//! - Where a section repeats: both markers in one table row repeat that row; markers in
//!   different paragraphs or rows repeat everything from the opening one's to the closing
//!   one's (a paragraph left empty by removing its marker goes too); both markers in the
//!   same run of one paragraph repeat the text between them.
//!
//! Word splits typed text into runs at will (spell checking, an edit, a format change), so
//! `{{customer.name}}` may be stored as `{{`, `customer`, `.name}}` in three runs: each
//! paragraph's placeholders are first gathered whole into the run where they begin.
//! Every key the template uses and the data lacks is listed in one error.

use std::collections::BTreeSet;
use std::io::{Cursor, Write};

use serde_json::Value;

use crate::error::EngineError;
use crate::office::package::{self, Kind};
use crate::office::xml_tree::{self, Element, Node};

/// Most items a section may produce in all, so a template cannot multiply a document past
/// any size (a list of 10,000 rows in a list of 10,000).
pub const MAX_REPEATS: usize = 200_000;

/// What filling did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Filled {
    /// The filled document.
    pub docx: Vec<u8>,
    /// Placeholders replaced by a value.
    pub placeholders: usize,
    /// Section items rendered (a row repeated for 3 items counts 3).
    pub section_items: usize,
}

/// A parsed `{{…}}`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Tag {
    Value(String),
    Open(String),
    Inverted(String),
    Close(String),
}

/// The tags in `text`, with their byte ranges; `Err` names a `{{…}}` that is not a tag.
fn tags(text: &str) -> Result<Vec<(usize, usize, Tag)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(found) = text[at..].find("{{") {
        let start = at + found;
        let Some(length) = text[start + 2..].find("}}") else { break };
        let end = start + 2 + length + 2;
        let inner = text[start + 2..end - 2].trim();
        let (sigil, name) = match inner.chars().next() {
            Some(c @ ('#' | '^' | '/')) => (Some(c), inner[1..].trim()),
            _ => (None, inner),
        };
        if !valid_name(name) {
            return Err(format!(
                "{:?} is not a placeholder: a name is letters, digits, _ and -, in parts joined by dots, or a lone .",
                &text[start..end]
            ));
        }
        let name = name.to_string();
        let tag = match sigil {
            Some('#') => Tag::Open(name),
            Some('^') => Tag::Inverted(name),
            Some('/') => Tag::Close(name),
            _ => Tag::Value(name),
        };
        out.push((start, end, tag));
        at = end;
    }
    Ok(out)
}

fn valid_name(name: &str) -> bool {
    name == "."
        || (!name.is_empty()
            && name
                .split('.')
                .all(|part| !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-')))
}

/// One level of the lookup: a value and how a person would write its place in the data.
#[derive(Clone)]
struct Scope<'a> {
    value: &'a Value,
    path: String,
}

/// Collects what went wrong while filling, to report it all at once.
#[derive(Default)]
struct Run {
    missing: BTreeSet<String>,
    problems: BTreeSet<String>,
    placeholders: usize,
    section_items: usize,
}

impl Run {
    /// The value of `name`, or None (and it is listed as missing).
    fn lookup<'a>(&mut self, scopes: &[Scope<'a>], name: &str) -> Option<&'a Value> {
        let innermost = scopes.last().expect("the data is the outermost scope");
        if name == "." {
            return Some(innermost.value);
        }
        let mut parts = name.split('.');
        let first = parts.next().expect("names have a part");
        for scope in scopes.iter().rev() {
            if let Some(mut value) = child(scope.value, first) {
                for part in parts.by_ref() {
                    match child(value, part) {
                        Some(next) => value = next,
                        None => {
                            self.missing.insert(join(&scope.path, name));
                            return None;
                        }
                    }
                }
                return Some(value);
            }
        }
        self.missing.insert(join(&innermost.path, name));
        None
    }

    /// The text of a value placeholder.
    fn text_of(&mut self, scopes: &[Scope<'_>], name: &str) -> String {
        let Some(value) = self.lookup(scopes, name) else { return String::new() };
        self.placeholders += 1;
        match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Null => String::new(),
            Value::Object(_) | Value::Array(_) => {
                let kind = if value.is_object() { "an object" } else { "a list" };
                self.problems.insert(format!(
                    "{{{{{name}}}}} names {kind}; show one of its fields ({{{{{name}.field}}}}) or repeat it with \
                     {{{{#{name}}}}}…{{{{/{name}}}}}"
                ));
                String::new()
            }
        }
    }

    /// The scopes a section's content is rendered with, once each: none to hide it.
    fn section<'a>(&mut self, scopes: &[Scope<'a>], name: &str, inverted: bool) -> Vec<Vec<Scope<'a>>> {
        let Some(value) = self.lookup(scopes, name) else { return Vec::new() };
        let path = join(&scopes.last().expect("a scope").path, name);
        let shown = |with: Option<Scope<'a>>| {
            let mut inner = scopes.to_vec();
            inner.extend(with);
            inner
        };
        let empty = match value {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::String(s) => s.is_empty(),
            Value::Array(items) => items.is_empty(),
            Value::Number(_) | Value::Object(_) => false,
        };
        let out = if inverted {
            if empty { vec![shown(None)] } else { Vec::new() }
        } else {
            match value {
                _ if empty => Vec::new(),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| shown(Some(Scope { value: item, path: format!("{path}[{i}]") })))
                    .collect(),
                Value::Object(_) => vec![shown(Some(Scope { value, path }))],
                _ => vec![shown(None)],
            }
        };
        self.section_items += out.len();
        if self.section_items > MAX_REPEATS {
            self.problems.insert(format!("the sections repeat more than {MAX_REPEATS} times in all"));
            return Vec::new();
        }
        out
    }
}

fn child<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map.get(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_string() } else { format!("{path}.{name}") }
}

/// Fills the DOCX `template` (field `field`) from `data`.
pub fn fill(template: &[u8], data: &Value, field: &str) -> Result<Filled, EngineError> {
    let checked = package::check(template, Kind::WordDocument, field)?;
    let types = package::read_member(template, "[Content_Types].xml", 4 << 20).unwrap_or_default();
    if String::from_utf8_lossy(&types).contains("macroEnabled") {
        return Err(EngineError::invalid_with(
            "not_an_office_file",
            field,
            format!("{field}: this is a macro-enabled document (.docm); save the template as a .docx"),
        ));
    }
    let mut run = Run::default();
    let mut changed: Vec<(String, Vec<u8>)> = Vec::new();
    let scopes = [Scope { value: data, path: String::new() }];
    for name in checked.members.iter().filter(|m| is_text_part(m)) {
        let Some(bytes) = package::read_member(template, name, package::MAX_MEMBER_BYTES) else { continue };
        let mut doc = xml_tree::parse(&bytes).map_err(|why| {
            EngineError::invalid_with(
                "damaged_office_file",
                field,
                format!("{field}: part {name} is not well-formed XML: {why}"),
            )
        })?;
        gather_split_tags(&mut doc.root, &mut run);
        fill_children(&mut doc.root.children, &scopes, &mut run);
        break_lines(&mut doc.root);
        changed.push((name.clone(), doc.to_bytes()));
    }
    if !run.problems.is_empty() {
        let list: Vec<String> = run.problems.into_iter().collect();
        return Err(EngineError::invalid_with("invalid_template", field, format!("{field}: {}", list.join("; "))));
    }
    if !run.missing.is_empty() {
        let list: Vec<String> = run.missing.into_iter().collect();
        return Err(EngineError::invalid_with(
            "missing_keys",
            "/data",
            format!("/data: the template uses {} key(s) the data does not have: {}", list.len(), list.join(", ")),
        ));
    }
    let docx = rezip(template, &changed).map_err(|e| EngineError::internal(format!("writing the document: {e}")))?;
    Ok(Filled { docx, placeholders: run.placeholders, section_items: run.section_items })
}

/// The parts whose text is filled: the body, headers, footers, footnotes and endnotes.
fn is_text_part(name: &str) -> bool {
    let Some(file) = name.strip_prefix("word/") else { return false };
    let stem = file.strip_suffix(".xml").unwrap_or("");
    file == "document.xml"
        || ["header", "footer"]
            .iter()
            .any(|p| stem.strip_prefix(p).is_some_and(|n| n.chars().all(|c| c.is_ascii_digit())))
        || file == "footnotes.xml"
        || file == "endnotes.xml"
}

/// Index paths from `element` to its `w:t` descendants, in order, not entering nested
/// paragraphs (a text box's paragraphs are gathered on their own).
fn text_paths(element: &Element, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>, into_paragraphs: bool) {
    for (i, child) in element.children.iter().enumerate() {
        if let Node::Element(e) = child {
            prefix.push(i);
            if e.name == "w:t" {
                out.push(prefix.clone());
            } else if into_paragraphs || e.name != "w:p" {
                text_paths(e, prefix, out, into_paragraphs);
            }
            prefix.pop();
        }
    }
}

fn at_path<'a>(element: &'a mut Element, path: &[usize]) -> &'a mut Element {
    let mut at = element;
    for &i in path {
        at = match &mut at.children[i] {
            Node::Element(e) => e,
            _ => unreachable!("paths lead through elements"),
        };
    }
    at
}

fn set_text(t: &mut Element, text: String) {
    t.children = if text.is_empty() { Vec::new() } else { vec![Node::Text(text)] };
    t.set_attr("xml:space", "preserve");
}

/// In every paragraph under `element`, moves each placeholder split across runs whole into
/// the run where it begins.
fn gather_split_tags(element: &mut Element, run: &mut Run) {
    if element.name == "w:p" {
        gather_in_paragraph(element, run);
    }
    for child in element.elements_mut() {
        gather_split_tags(child, run);
    }
}

fn gather_in_paragraph(paragraph: &mut Element, run: &mut Run) {
    let mut paths = Vec::new();
    text_paths(paragraph, &mut Vec::new(), &mut paths, false);
    if paths.len() < 2 {
        return;
    }
    let texts: Vec<String> = paths.iter().map(|p| at_path(paragraph, p).text()).collect();
    let joined: String = texts.concat();
    if !joined.contains("{{") {
        return;
    }
    // Which run each byte of the paragraph's text belongs to.
    let mut owner: Vec<usize> = texts.iter().enumerate().flat_map(|(i, t)| std::iter::repeat_n(i, t.len())).collect();
    let found = match tags(&joined) {
        Ok(found) => found,
        Err(problem) => {
            run.problems.insert(problem);
            return;
        }
    };
    let mut moved = false;
    for (start, end, _) in found {
        let first = owner[start];
        if owner[end - 1] != first {
            owner[start..end].iter_mut().for_each(|o| *o = first);
            moved = true;
        }
    }
    if !moved {
        return;
    }
    let mut rebuilt = vec![String::new(); texts.len()];
    for (i, c) in joined.char_indices() {
        rebuilt[owner[i]].push(c);
    }
    for (path, text) in paths.iter().zip(rebuilt) {
        let t = at_path(paragraph, path);
        if t.text() != text {
            set_text(t, text);
        }
    }
}

/// The first section tag opened in `text`, if any.
fn first_open(text: &str) -> Option<(String, bool)> {
    tags(text).ok()?.into_iter().find_map(|(_, _, tag)| match tag {
        Tag::Open(name) => Some((name, false)),
        Tag::Inverted(name) => Some((name, true)),
        _ => None,
    })
}

fn closes(text: &str, name: &str) -> bool {
    tags(text).is_ok_and(|found| found.iter().any(|(_, _, t)| matches!(t, Tag::Close(n) if n == name)))
}

/// Removes the first tag of `element`'s text that `wanted` picks (the first opening or the
/// last closing marker), from the `w:t` that holds it: whether there was one.
fn remove_tag(element: &mut Element, wanted: &dyn Fn(&Tag) -> bool, last: bool) -> bool {
    let mut paths = Vec::new();
    text_paths(element, &mut Vec::new(), &mut paths, true);
    if element.name == "w:t" {
        paths.push(Vec::new());
    }
    let order: Vec<&Vec<usize>> = if last { paths.iter().rev().collect() } else { paths.iter().collect() };
    for path in order {
        let t = at_path(element, path);
        let text = t.text();
        let Ok(found) = tags(&text) else { continue };
        let pick = if last {
            found.iter().rev().find(|(_, _, tag)| wanted(tag))
        } else {
            found.iter().find(|(_, _, tag)| wanted(tag))
        };
        if let Some((start, end, _)) = pick {
            set_text(t, format!("{}{}", &text[..*start], &text[*end..]));
            return true;
        }
    }
    false
}

/// Whether a paragraph holds nothing once its marker is gone (no text, picture or object).
fn is_blank_paragraph(element: &Element) -> bool {
    fn has_content(e: &Element) -> bool {
        matches!(e.name.as_str(), "w:drawing" | "w:pict" | "w:object" | "w:tab" | "w:br")
            || e.elements().any(has_content)
    }
    element.name == "w:p" && element.text().trim().is_empty() && !has_content(element)
}

/// Fills a sequence of sibling nodes: sections whose markers are in paragraphs or rows
/// are expanded, everything else filled in place.
fn fill_children(children: &mut Vec<Node>, scopes: &[Scope<'_>], run: &mut Run) {
    let mut i = 0;
    while i < children.len() {
        let (kind, text) = match &children[i] {
            Node::Element(e) => (e.name.clone(), e.text()),
            _ => {
                i += 1;
                continue;
            }
        };
        let blockish = kind == "w:p" || kind == "w:tr";
        let opened = if blockish { first_open(&text) } else { None };
        // An opening and closing marker in one paragraph is a section inside its text.
        let inline = matches!(&opened, Some((name, _)) if kind == "w:p" && closes(&text, name));
        let Some((name, inverted)) = opened.filter(|_| !inline) else {
            if let Node::Element(element) = &mut children[i] {
                fill_element(element, scopes, run);
            }
            i += 1;
            continue;
        };
        let end = if kind == "w:tr" && closes(&text, &name) {
            Some(i)
        } else {
            (i + 1..children.len()).find(|&j| matches!(&children[j], Node::Element(e) if closes(&e.text(), &name)))
        };
        let Some(end) = end else {
            let marker = if inverted { '^' } else { '#' };
            run.problems.insert(format!("{{{{{marker}{name}}}}} is never closed by a {{{{/{name}}}}} after it"));
            if let Node::Element(element) = &mut children[i] {
                fill_element(element, scopes, run);
            }
            i += 1;
            continue;
        };
        let mut block: Vec<Node> = children.drain(i..=end).collect();
        let open_name = name.clone();
        let opened = match block.first_mut() {
            Some(Node::Element(first)) => {
                remove_tag(first, &|t| matches!(t, Tag::Open(n) | Tag::Inverted(n) if *n == open_name), false)
            }
            _ => false,
        };
        let closed = match block.last_mut() {
            Some(Node::Element(last)) => remove_tag(last, &|t| matches!(t, Tag::Close(n) if *n == name), true),
            _ => false,
        };
        if !(opened && closed) {
            // A marker spread over runs that could not be gathered (a field code between them).
            run.problems.insert(format!("the markers of section {name} could not be found whole in one run"));
            let skipped = block.len();
            children.splice(i..i, block);
            i += skipped;
            continue;
        }
        // Marker paragraphs left empty go; rows and paragraphs with other content stay.
        let keep = |node: &Node, edge: bool| !(edge && matches!(node, Node::Element(e) if is_blank_paragraph(e)));
        let count = block.len();
        let block: Vec<Node> = block
            .into_iter()
            .enumerate()
            .filter(|(k, n)| keep(n, *k == 0 || *k + 1 == count))
            .map(|(_, n)| n)
            .collect();
        let mut rendered = Vec::new();
        for inner in run.section(scopes, &name, inverted) {
            let mut copy = block.clone();
            fill_children(&mut copy, &inner, run);
            rendered.extend(copy);
        }
        let added = rendered.len();
        children.splice(i..i, rendered);
        i += added;
    }
}

/// Fills an element that is not itself a section's marker: its text runs, and its children.
fn fill_element(element: &mut Element, scopes: &[Scope<'_>], run: &mut Run) {
    if element.name == "w:t" {
        let text = element.text();
        if text.contains("{{") {
            let filled = fill_text(&text, scopes, run);
            set_text(element, filled);
        }
        return;
    }
    fill_children(&mut element.children, scopes, run);
}

/// Fills the placeholders and sections of one run's text.
fn fill_text(text: &str, scopes: &[Scope<'_>], run: &mut Run) -> String {
    let found = match tags(text) {
        Ok(found) => found,
        Err(problem) => {
            run.problems.insert(problem);
            return text.to_string();
        }
    };
    let mut out = String::new();
    let mut at = 0;
    let mut k = 0;
    while k < found.len() {
        let (start, end, tag) = &found[k];
        out.push_str(&text[at..*start]);
        match tag {
            Tag::Value(name) => {
                out.push_str(&run.text_of(scopes, name));
                at = *end;
                k += 1;
            }
            Tag::Open(name) | Tag::Inverted(name) => {
                // The matching close, counting sections of the same name opened inside.
                let mut depth = 0;
                let close = found[k + 1..].iter().position(|(_, _, t)| match t {
                    Tag::Open(n) | Tag::Inverted(n) if n == name => {
                        depth += 1;
                        false
                    }
                    Tag::Close(n) if n == name => {
                        if depth == 0 {
                            return true;
                        }
                        depth -= 1;
                        false
                    }
                    _ => false,
                });
                let Some(offset) = close else {
                    run.problems.insert(format!(
                        "{{{{#{name}}}}} and its {{{{/{name}}}}} must be in the same run of a paragraph, or in \
                         paragraphs or table rows of their own"
                    ));
                    return text.to_string();
                };
                let close_at = k + 1 + offset;
                let inner = &text[*end..found[close_at].0];
                for scopes in run.section(scopes, name, matches!(tag, Tag::Inverted(_))) {
                    out.push_str(&fill_text(inner, &scopes, run));
                }
                at = found[close_at].1;
                k = close_at + 1;
            }
            Tag::Close(name) => {
                run.problems.insert(format!("{{{{/{name}}}}} closes a section that was not opened before it"));
                at = *end;
                k += 1;
            }
        }
    }
    out.push_str(&text[at..]);
    out
}

/// Turns line breaks inside a run's text into Word line breaks (`w:br`).
fn break_lines(element: &mut Element) {
    if element.name == "w:r" && element.elements().any(|e| e.name == "w:t" && e.text().contains('\n')) {
        let mut children = Vec::with_capacity(element.children.len());
        for child in std::mem::take(&mut element.children) {
            match child {
                Node::Element(t) if t.name == "w:t" && t.text().contains('\n') => {
                    let text = t.text().replace("\r\n", "\n");
                    for (n, line) in text.split('\n').enumerate() {
                        if n > 0 {
                            children.push(Node::Element(Element::new("w:br")));
                        }
                        let mut piece = t.clone();
                        set_text(&mut piece, line.to_string());
                        children.push(Node::Element(piece));
                    }
                }
                other => children.push(other),
            }
        }
        element.children = children;
        return;
    }
    for child in element.elements_mut() {
        break_lines(child);
    }
}

/// `template` with the parts in `changed` replaced; every other member copied as stored.
fn rezip(template: &[u8], changed: &[(String, Vec<u8>)]) -> zip::result::ZipResult<Vec<u8>> {
    let mut archive = zip::ZipArchive::new(Cursor::new(template))?;
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for index in 0..archive.len() {
        let member = archive.by_index_raw(index)?;
        let member_name = member.name()?.into_owned();
        match changed.iter().find(|(name, _)| *name == member_name) {
            Some((name, bytes)) => {
                let name = name.clone();
                drop(member);
                writer.start_file(name, deflated)?;
                writer.write_all(bytes)?;
            }
            None => writer.raw_copy_file(member)?,
        }
    }
    Ok(writer.finish()?.into_inner())
}

/// The text of every paragraph of a DOCX's body, one a line (for tests).
#[cfg(test)]
fn body_text(docx: &[u8]) -> String {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(Cursor::new(docx)).unwrap();
    let mut xml = Vec::new();
    archive.by_name("word/document.xml").unwrap().read_to_end(&mut xml).unwrap();
    let doc = xml_tree::parse(&xml).unwrap();
    let mut lines = Vec::new();
    fn walk(e: &Element, lines: &mut Vec<String>) {
        if e.name == "w:p" {
            let mut line = String::new();
            fn inner(e: &Element, line: &mut String) {
                for child in &e.children {
                    if let Node::Element(c) = child {
                        match c.name.as_str() {
                            "w:t" => line.push_str(&c.text()),
                            "w:br" => line.push('|'),
                            "w:p" => {}
                            _ => inner(c, line),
                        }
                    }
                }
            }
            inner(e, &mut line);
            lines.push(line);
        }
        for c in e.elements() {
            walk(c, lines);
        }
    }
    walk(&doc.root, &mut lines);
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A DOCX whose body is `body` (WordprocessingML).
    fn docx(body: &str) -> Vec<u8> {
        let document = format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
        );
        package::zip_of(&[("[Content_Types].xml", b"<Types/>"), ("word/document.xml", document.as_bytes())])
    }

    fn p(runs: &[&str]) -> String {
        let runs: String = runs.iter().map(|r| format!("<w:r><w:rPr><w:b/></w:rPr><w:t>{r}</w:t></w:r>")).collect();
        format!("<w:p>{runs}</w:p>")
    }

    #[test]
    fn placeholders_split_across_runs_are_filled() {
        let template = docx(&p(&["Dear {", "{customer", ".", "name}} of {{ city }}", ",", " {{note}}"]));
        let data = json!({ "customer": { "name": "Ada & <Co>" }, "city": "Zürich", "note": "line one\nline two" });
        let filled = fill(&template, &data, "/template").unwrap();
        assert_eq!(body_text(&filled.docx), "Dear Ada & <Co> of Zürich, line one|line two");
        assert_eq!(filled.placeholders, 3);
    }

    #[test]
    fn every_missing_key_is_listed_once() {
        let template = docx(&format!(
            "{}{}<w:tbl><w:tr><w:tc>{}</w:tc><w:tc>{}</w:tc></w:tr></w:tbl>",
            p(&["{{a}} {{b.c}}"]),
            p(&["{{a}}"]),
            p(&["{{#items}}{{name}}"]),
            p(&["{{price}}{{/items}}"])
        ));
        let error =
            fill(&template, &json!({ "b": {}, "items": [{ "name": "x" }, { "name": "y", "price": 2 }] }), "/template")
                .unwrap_err();
        assert_eq!((error.code.as_ref(), error.field.as_deref()), ("missing_keys", Some("/data")));
        assert!(
            error.message.contains("3 key(s)") && error.message.contains("a, b.c, items[0].price"),
            "{}",
            error.message
        );
    }

    #[test]
    fn a_row_repeats_per_item_and_sections_nest() {
        let row = "<w:tr><w:tc>{}</w:tc><w:tc>{}</w:tc></w:tr>";
        let template = docx(&format!(
            "{}<w:tbl>{}{}</w:tbl>{}{}{}",
            p(&["Order {{id}}"]),
            row.replacen("{}", &p(&["Item"]), 1).replacen("{}", &p(&["Price"]), 1),
            row.replacen("{}", &p(&["{{#items}}{{name}}"]), 1).replacen("{}", &p(&["{{price}}{{/items}}"]), 1),
            p(&["{{#paid}}Paid, thank you.{{/paid}}{{^paid}}Due now.{{/paid}}"]),
            p(&["{{#notes}}"]),
            p(&["Note: {{.}} ({{id}})"]) + &p(&["{{/notes}}"]),
        ));
        let data = json!({
            "id": 7,
            "items": [{ "name": "Pen", "price": 1.5 }, { "name": "Ink", "price": 3 }],
            "paid": false,
            "notes": ["fragile", "gift"],
        });
        let filled = fill(&template, &data, "/template").unwrap();
        assert_eq!(
            body_text(&filled.docx),
            "Order 7\nItem\nPrice\nPen\n1.5\nInk\n3\nDue now.\nNote: fragile (7)\nNote: gift (7)"
        );
        assert_eq!(filled.section_items, 2 + 1 + 2);
    }

    #[test]
    fn template_mistakes_are_named() {
        let unclosed = fill(&docx(&p(&["{{#items}}"])), &json!({ "items": [] }), "/template").unwrap_err();
        assert_eq!((unclosed.code.as_ref(), unclosed.field.as_deref()), ("invalid_template", Some("/template")));
        assert!(unclosed.message.contains("never closed"), "{}", unclosed.message);
        let bad_name = fill(&docx(&p(&["{{first name}}"])), &json!({}), "/template").unwrap_err();
        assert!(bad_name.message.contains("\"{{first name}}\" is not a placeholder"), "{}", bad_name.message);
        let object = fill(&docx(&p(&["{{customer}}"])), &json!({ "customer": { "a": 1 } }), "/template").unwrap_err();
        assert!(object.message.contains("names an object"), "{}", object.message);
        let split = fill(&docx(&p(&["{{#a}}x", "y{{/a}}"]).replace("<w:b/>", "")), &json!({ "a": true }), "/t");
        // Runs of one paragraph with a section across them: the markers must share a run.
        assert_eq!(split.unwrap_err().code, "invalid_template");
    }
}
