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
        b"b" | b"B" | b"b*" | b"B*" | b"BT" | b"BX" | b"EMC" | b"ET" | b"EX" | b"f" | b"F" | b"f*" | b"h" | b"n"
        | b"q" | b"Q" | b"s" | b"S" | b"T*" | b"W" | b"W*" | b"BI" => (0, 0),
        b"BMC" | b"CS" | b"cs" | b"Do" | b"G" | b"g" | b"gs" | b"i" | b"j" | b"J" | b"M" | b"MP" | b"ri" | b"sh"
        | b"Tc" | b"TJ" | b"Tj" | b"TL" | b"Tr" | b"Ts" | b"Tw" | b"Tz" | b"w" | b"'" => (1, 1),
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
        if c == b'#' && !(raw.get(i + 1).is_some_and(|&h| is_hex(h)) && raw.get(i + 2).is_some_and(|&l| is_hex(l))) {
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
                let ei =
                    image.and_then(|_| toks.get(i + 1)).filter(|t| t.kind == K::Word && &d[t.start..t.end] == b"EI");
                let pairs = operands.len().is_multiple_of(2) && operands.iter().step_by(2).all(|(_, name)| *name);
                if let (Some(image), Some(_), true, true, false, true) = (image, ei, in_image, pairs, spoiled, images) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
