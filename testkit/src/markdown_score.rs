//! How close a Markdown conversion is to a reference: the text similarity and the
//! heading and table structure that `/v1/docs/to-markdown`'s corpus test and
//! `cargo xtask bench convert` report for Paperchain and for the reference tools alike.
//!
//! - **text**: both sides are reduced to their words (Markdown marks, HTML comments,
//!   table rules and link targets dropped; escapes undone; typographic quotes and dashes
//!   read as ASCII ones; each CJK character a word of
//!   its own, so a line break inside Korean text does not count), then
//!   `2 × matching words / (words of both)` over the longest common subsequence, the way
//!   `difflib`'s ratio is defined. Order matters: a wrong reading order loses words.
//! - **headings**: F1 of the heading texts (as multisets of their words-joined text).
//! - **tables**: the smaller of the two table counts over the larger (1 when both have none).

use std::collections::HashMap;
use std::path::PathBuf;

use similar::{Algorithm, DiffOp, capture_diff_slices};

/// The formats of docling's corpus that `/v1/docs/to-markdown` reads, by folder name.
pub const DOCLING_FORMATS: [&str; 7] = ["pdf", "docx", "pptx", "xlsx", "html", "epub", "csv"];

/// One input of docling's corpus with its ground-truth Markdown.
#[derive(Clone, Debug)]
pub struct DoclingCase {
    /// The format folder (`pdf`, `docx`…).
    pub format: &'static str,
    /// The input file.
    pub input: PathBuf,
    /// Its ground truth.
    pub truth: PathBuf,
}

impl DoclingCase {
    /// The input's file name.
    pub fn name(&self) -> String {
        self.input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// Every input of `corpus/docling/<format>/sources/` in [`DOCLING_FORMATS`], with its ground
/// truth (`<name>.md`; for PDFs `<stem>.md`), sorted by format then name.
pub fn docling_cases() -> Vec<DoclingCase> {
    let root = crate::corpus::corpus().join("docling");
    let mut cases = Vec::new();
    for format in DOCLING_FORMATS {
        let sources = root.join(format).join("sources");
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(&sources)
            .unwrap_or_else(|e| panic!("{}: {e}", sources.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .collect();
        inputs.sort();
        for input in inputs {
            let name = input.file_name().expect("a file name").to_string_lossy().into_owned();
            let truth_name = match name.strip_suffix(".pdf") {
                Some(stem) if format == "pdf" => format!("{stem}.md"),
                _ => format!("{name}.md"),
            };
            let truth = root.join(format).join("groundtruth").join(truth_name);
            assert!(truth.is_file(), "no ground truth for {}", input.display());
            cases.push(DoclingCase { format, input, truth });
        }
    }
    cases
}

/// The scores of one conversion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    /// Text similarity, 0 to 1.
    pub text: f64,
    /// Heading F1, 0 to 1 (1 when neither side has headings).
    pub headings: f64,
    /// Table count agreement, 0 to 1.
    pub tables: f64,
}

/// Scores `ours` against `truth`.
pub fn score(ours: &str, truth: &str) -> Score {
    Score {
        text: text_similarity(ours, truth),
        headings: heading_f1(ours, truth),
        tables: table_agreement(ours, truth),
    }
}

/// The words of a Markdown text, marks removed.
pub fn words(markdown: &str) -> Vec<String> {
    let text = strip_comments(markdown);
    let mut out = Vec::new();
    for line in text.lines() {
        if is_table_rule(line) || is_fence(line) {
            continue;
        }
        let line = drop_link_targets(line);
        let line = line.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&nbsp;", " ");
        let line: String = line.chars().map(plain_punctuation).collect();
        let mut word = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\'
                && let Some(&next) = chars.peek()
                && next.is_ascii_punctuation()
            {
                // An escaped pipe still parts words, as a bare one does in a converter that
                // does not escape it.
                if next == '|' {
                    flush(&mut word, &mut out);
                } else {
                    word.push(next);
                }
                chars.next();
                continue;
            }
            if c.is_whitespace() || matches!(c, '|' | '*' | '#' | '`') {
                flush(&mut word, &mut out);
            } else if is_cjk(c) {
                flush(&mut word, &mut out);
                out.push(c.to_string());
            } else {
                word.push(c);
            }
        }
        flush(&mut word, &mut out);
    }
    out
}

fn flush(word: &mut String, out: &mut Vec<String>) {
    // List bullets, emphasis underscores and strike marks are not words.
    let trimmed = word.trim_matches(|c| c == '_' || c == '~');
    let is_mark = trimmed.is_empty() || trimmed == "-" || trimmed == "+" || trimmed == ">" || is_list_number(trimmed);
    if !is_mark {
        out.push(trimmed.to_string());
    }
    word.clear();
}

fn is_list_number(word: &str) -> bool {
    word.len() > 1 && word.ends_with('.') && word[..word.len() - 1].bytes().all(|b| b.is_ascii_digit())
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x3040..=0x30FF | 0x3130..=0x318F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => rest = "",
        }
        out.push(' ');
    }
    out.push_str(rest);
    out
}

fn is_table_rule(line: &str) -> bool {
    let t = line.trim();
    t.contains('-') && t.contains('|') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '+' | '='))
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// `[text](target)` and `![alt](target)` as their text.
fn drop_link_targets(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        // An escaped character is text, kept with its backslash for `words` to undo.
        if bytes[i] == b'\\' && bytes.get(i + 1).is_some_and(u8::is_ascii_punctuation) {
            out.push('\\');
            out.push(bytes[i + 1] as char);
            i += 2;
            continue;
        }
        if bytes[i] == b']' && bytes.get(i + 1) == Some(&b'(') {
            // `](<target with (parentheses)>)` or `](target)`.
            let rest = &line[i + 2..];
            let end =
                if rest.starts_with('<') { rest.find(">)").map(|e| e + 2) } else { rest.find(')').map(|e| e + 1) };
            if let Some(end) = end {
                out.push(' ');
                i += 2 + end;
                continue;
            }
        }
        let c = line[i..].chars().next().unwrap_or(' ');
        if !(c == '[' || (c == '!' && bytes.get(i + 1) == Some(&b'['))) {
            out.push(c);
        }
        i += c.len_utf8();
    }
    out
}

/// Typographic quotes and dashes as their ASCII forms, on both sides alike: converters
/// differ in whether they keep them, and the words are the same.
fn plain_punctuation(c: char) -> char {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{2032}' => '\'',
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{2033}' => '"',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2212}' => '-',
        '\u{a0}' => ' ',
        c => c,
    }
}

/// `2 × matches / (n + m)` over the words of both texts (1 when both are empty).
pub fn text_similarity(ours: &str, truth: &str) -> f64 {
    let a = words(ours);
    let b = words(truth);
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let matched: usize = capture_diff_slices(Algorithm::Myers, &a, &b)
        .iter()
        .map(|op| match op {
            DiffOp::Equal { len, .. } => *len,
            _ => 0,
        })
        .sum();
    2.0 * matched as f64 / (a.len() + b.len()) as f64
}

/// `2 × common words / (n + m)` over the words of both texts as multisets, NFKC-normalised
/// (1 when both are empty): whether one text holds the other's words, whatever their order.
pub fn word_overlap(ours: &str, truth: &str) -> f64 {
    use unicode_normalization::UnicodeNormalization;
    let bag = |text: &str| {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for w in words(&text.nfkc().collect::<String>()) {
            *counts.entry(w).or_default() += 1;
        }
        counts
    };
    let (a, b) = (bag(ours), bag(truth));
    let (n, m) = (a.values().sum::<usize>(), b.values().sum::<usize>());
    if n + m == 0 {
        return 1.0;
    }
    let common: usize = a.iter().map(|(w, k)| (*k).min(b.get(w).copied().unwrap_or(0))).sum();
    2.0 * common as f64 / (n + m) as f64
}

/// The texts of the ATX headings, each as its words joined by one space.
pub fn headings(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    markdown
        .lines()
        .filter(|line| {
            if is_fence(line) {
                fenced = !fenced;
            }
            !fenced
        })
        .filter_map(|line| {
            let t = line.trim_start();
            let hashes = t.bytes().take_while(|&b| b == b'#').count();
            (1..=6).contains(&hashes).then(|| &t[hashes..]).filter(|rest| rest.starts_with(' '))
        })
        .map(|rest| words(rest).join(" "))
        .filter(|h| !h.is_empty())
        .collect()
}

/// F1 of the heading texts of `ours` against `truth` (1 when neither has any).
pub fn heading_f1(ours: &str, truth: &str) -> f64 {
    let a = headings(ours);
    let b = headings(truth);
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let mut pool: HashMap<&str, usize> = HashMap::new();
    for h in &b {
        *pool.entry(h.as_str()).or_default() += 1;
    }
    let mut hits = 0;
    for h in &a {
        if let Some(n) = pool.get_mut(h.as_str()).filter(|n| **n > 0) {
            *n -= 1;
            hits += 1;
        }
    }
    2.0 * hits as f64 / (a.len() + b.len()) as f64
}

/// Number of pipe tables (their rule rows).
pub fn table_count(markdown: &str) -> usize {
    markdown.lines().filter(|line| is_table_rule(line) && line.trim_start().starts_with('|')).count()
}

/// The smaller table count over the larger (1 when both have none).
pub fn table_agreement(ours: &str, truth: &str) -> f64 {
    let (a, b) = (table_count(ours), table_count(truth));
    if a == b { 1.0 } else { a.min(b) as f64 / a.max(b) as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_not_words() {
        assert_eq!(
            words(
                "## A *b* [link](http://x.y/z)\n\n- item one\n1. two\n\n| x | y |\n| - | - |\n| 1\\_2 | 3 |\n<!-- image -->"
            ),
            ["A", "b", "link", "item", "one", "two", "x", "y", "1_2", "3"]
        );
        assert_eq!(words("돌입 text"), ["돌", "입", "text"]);
        assert_eq!(words("[\\[1\\]](#n) [a](<b_(c)>) “quoted” – dash"), ["[1]", "a", "\"quoted\"", "dash"]);
    }

    #[test]
    fn similarity_counts_common_words_in_order() {
        assert_eq!(text_similarity("a b c d", "a b c d"), 1.0);
        assert_eq!(text_similarity("a b", "a b c d"), 2.0 * 2.0 / 6.0);
        assert_eq!(text_similarity("d c b a", "a b c d"), 2.0 / 8.0);
    }

    #[test]
    fn headings_and_tables_are_compared() {
        let truth = "# One\n\n## Two\n\n| a |\n| - |\n| 1 |\n";
        assert_eq!(heading_f1("# One\n\n## Three\n", truth), 0.5);
        assert_eq!(table_agreement("| a |\n|---|\n\n| b |\n|---|\n", truth), 0.5);
        assert_eq!(heading_f1("```\n# not a heading\n```\n# One\n## Two", truth), 1.0);
    }
}
