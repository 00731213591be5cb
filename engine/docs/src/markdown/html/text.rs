//! An HTML file's bytes as text: the charset from a byte order mark, a `<meta charset>` or
//! `http-equiv` declaration or an XML declaration in the first 1024 bytes, else UTF-8 with
//! replacement characters; binary files told apart; and XHTML's self-closed elements
//! (`<a id="x"/>`, `<script/>`) closed, since an HTML parser would leave them open.
//!
//! What this module must not do: parse the document (that is `tree`'s) or read past the
//! first 1024 bytes to find a declaration.

use std::borrow::Cow;

use encoding_rs::Encoding;

use super::tree::listed;

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
pub(super) fn binary_kind(bytes: &[u8], text: &str) -> Option<&'static str> {
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

pub(super) fn is_xhtml(text: &str) -> bool {
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
pub(super) fn close_self_closed(text: &str) -> Cow<'_, str> {
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
