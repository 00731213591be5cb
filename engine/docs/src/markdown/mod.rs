//! Documents as Markdown: a small block model every reader fills (PDF, DOCX, PPTX, XLSX,
//! HTML, EPUB, CSV) and the one writer that turns it into CommonMark with GitHub pipe
//! tables. Nothing here knows about routes; `docs/to_markdown.rs` picks the reader.
//!
//! The writer's conventions: ATX headings (`#`–`######`); list items `-` or `1.`, four
//! spaces of indent a level; tables as pipe tables whose first row is the header, a merged
//! cell's text repeated in every cell it covers, line breaks inside a cell written as
//! spaces; pictures as `<!-- image: alt text -->` (`<!-- image -->` without alt text);
//! code in fenced blocks. Text is escaped so that it reads back as the same text.

pub mod csv;
pub mod docx;
pub mod epub;
pub mod html;
mod omml;
pub(crate) mod ooxml;
pub mod pdf;
pub mod pptx;
pub mod xlsx;

/// One block of a document, in reading order.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A heading, level 1 to 6. `text` is inline Markdown (see [`Inline`]).
    Heading { level: u8, text: String },
    /// A paragraph of inline Markdown.
    Paragraph(String),
    /// One list item. `level` 0 is the outermost; `ordered` holds the item's number.
    ListItem { level: u8, ordered: Option<u64>, text: String },
    /// A table: rows of cells of inline Markdown, the first row the header. Rows may be
    /// ragged; the writer pads them.
    Table(Vec<Vec<String>>),
    /// A picture, with its alternative text or caption when the document gives one.
    Image { alt: String },
    /// Preformatted text (code), kept line for line.
    Code { language: String, text: String },
    /// A block quote of inline Markdown.
    Quote(String),
    /// A page or section break worth showing (`---`).
    Rule,
}

/// A document read for Markdown.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    /// The title, when the document states one (metadata, `<title>`, a deck's first title).
    pub title: Option<String>,
    /// The blocks, in reading order.
    pub blocks: Vec<Block>,
}

impl Document {
    /// Adds a block, dropping empty paragraphs and headings.
    pub fn push(&mut self, block: Block) {
        match &block {
            Block::Paragraph(text) | Block::Heading { text, .. } | Block::Quote(text) if text.trim().is_empty() => {}
            _ => self.blocks.push(block),
        }
    }
}

/// Writes `document` as Markdown, blocks separated by a blank line (list items by a line
/// break), ending with one newline.
pub fn render(document: &Document) -> String {
    let mut out = String::new();
    let mut previous: Option<&Block> = None;
    for block in &document.blocks {
        if !out.is_empty() {
            let tight = matches!((previous, block), (Some(Block::ListItem { .. }), Block::ListItem { .. }));
            out.push_str(if tight { "\n" } else { "\n\n" });
        }
        write_block(&mut out, block);
        previous = Some(block);
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

fn write_block(out: &mut String, block: &Block) {
    match block {
        Block::Heading { level, text } => {
            let level = (*level).clamp(1, 6) as usize;
            out.push_str(&"#".repeat(level));
            out.push(' ');
            out.push_str(&one_line(text));
        }
        Block::Paragraph(text) => out.push_str(text.trim()),
        Block::ListItem { level, ordered, text } => {
            out.push_str(&"    ".repeat((*level).min(8) as usize));
            match ordered {
                Some(n) => out.push_str(&format!("{n}. ")),
                None => out.push_str("- "),
            }
            out.push_str(&one_line(text));
        }
        Block::Table(rows) => write_table(out, rows),
        Block::Image { alt } => {
            let alt = one_line(alt).replace("--", "- -");
            if alt.is_empty() {
                out.push_str("<!-- image -->");
            } else {
                out.push_str(&format!("<!-- image: {alt} -->"));
            }
        }
        Block::Code { language, text } => {
            // A fence longer than any run of backticks inside.
            let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
            let fence = "`".repeat(longest.max(2) + 1);
            out.push_str(&fence);
            out.push_str(language.trim());
            out.push('\n');
            out.push_str(text.trim_end_matches('\n'));
            out.push('\n');
            out.push_str(&fence);
        }
        Block::Quote(text) => {
            for (i, line) in text.trim().lines().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str("> ");
                out.push_str(line);
            }
        }
        Block::Rule => out.push_str("---"),
    }
}

/// Line breaks and runs of white space as one space, trimmed.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

fn write_table(out: &mut String, rows: &[Vec<String>]) {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            (0..width).map(|i| row.get(i).map(|c| one_line(c).replace('|', "\\|")).unwrap_or_default()).collect()
        })
        .collect();
    let mut widths = vec![3usize; width];
    for row in &cells {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    // Very wide cells are not padded: padding would only blow the file up.
    for w in &mut widths {
        *w = (*w).min(60);
    }
    let line = |out: &mut String, row: &[String]| {
        out.push('|');
        for (i, cell) in row.iter().enumerate() {
            out.push(' ');
            out.push_str(cell);
            out.push_str(&" ".repeat(widths[i].saturating_sub(cell.chars().count())));
            out.push_str(" |");
        }
    };
    let empty_header = vec![String::new(); width];
    let (header, body) = match cells.split_first() {
        Some((h, b)) => (h.as_slice(), b),
        None => (empty_header.as_slice(), &[][..]),
    };
    line(out, header);
    out.push_str("\n|");
    for w in &widths {
        out.push_str(&"-".repeat(w + 2));
        out.push('|');
    }
    for row in body {
        out.push('\n');
        line(out, row);
    }
}

/// Escapes text so Markdown shows it as written: backslash, emphasis and code marks,
/// brackets and angle brackets everywhere; a leading `#`, `>`, `-`, `+`, `=` or an ordered
/// list number where they would start a block.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if matches!(c, '\\' | '*' | '_' | '`' | '[' | ']' | '<' | '>') {
            out.push('\\');
        }
        out.push(c);
    }
    escape_block_start(out)
}

fn escape_block_start(text: String) -> String {
    let trimmed = text.trim_start();
    let lead = text.len() - trimmed.len();
    let first = trimmed.chars().next();
    let needs = match first {
        Some('#' | '+' | '=') => true,
        Some('-') => trimmed.len() == 1 || trimmed[1..].starts_with([' ', '-']),
        Some(c) if c.is_ascii_digit() => {
            let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
            let rest = &trimmed[digits..];
            (rest.starts_with(". ") || rest.starts_with(") ") || rest == "." || rest == ")") && digits <= 9
        }
        _ => false,
    };
    if !needs {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 1);
    out.push_str(&text[..lead]);
    if first.is_some_and(|c| c.is_ascii_digit()) {
        let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&trimmed[..digits]);
        out.push('\\');
        out.push_str(&trimmed[digits..]);
    } else {
        out.push('\\');
        out.push_str(trimmed);
    }
    out
}

/// How a run of text looks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Style {
    /// Bold (`**`).
    pub bold: bool,
    /// Italic (`*`).
    pub italic: bool,
    /// Struck through (`~~`).
    pub strike: bool,
    /// Inline code (`` ` ``).
    pub code: bool,
}

/// Builds one block's inline Markdown from styled runs of plain text: neighbouring runs
/// of the same style and link are merged, marks are put around the words (never around
/// the white space at a run's ends, which Markdown would not read as emphasis), and the
/// text is escaped.
#[derive(Debug, Default)]
pub struct Inline {
    runs: Vec<(String, Style, Option<String>)>,
}

impl Inline {
    /// A builder with no text.
    pub fn new() -> Inline {
        Inline::default()
    }

    /// Adds plain `text` in `style`, linked to `link` when given.
    pub fn push(&mut self, text: &str, style: Style, link: Option<&str>) {
        if text.is_empty() {
            return;
        }
        let link = link.map(str::to_string);
        match self.runs.last_mut() {
            Some((last, s, l)) if *s == style && *l == link => last.push_str(text),
            _ => self.runs.push((text.to_string(), style, link)),
        }
    }

    /// Adds unstyled text.
    pub fn text(&mut self, text: &str) {
        self.push(text, Style::default(), None);
    }

    /// Whether no visible text was added.
    pub fn is_blank(&self) -> bool {
        self.runs.iter().all(|(t, _, _)| t.trim().is_empty())
    }

    /// The plain text, without marks.
    pub fn plain(&self) -> String {
        self.runs.iter().map(|(t, _, _)| t.as_str()).collect()
    }

    /// The inline Markdown, white space collapsed to single spaces.
    pub fn finish(&self) -> String {
        let mut out = String::new();
        let mut i = 0;
        while i < self.runs.len() {
            // Runs sharing one link are written inside one pair of brackets.
            let link = self.runs[i].2.clone();
            let mut j = i + 1;
            if link.is_some() {
                while j < self.runs.len() && self.runs[j].2 == link {
                    j += 1;
                }
            }
            let mut inner = String::new();
            for (text, style, _) in &self.runs[i..j] {
                inner.push_str(&styled(&collapse(text), *style));
            }
            match link {
                Some(url) if !inner.trim().is_empty() => {
                    let (lead, body, trail) = split_space(&inner);
                    out.push_str(lead);
                    out.push('[');
                    out.push_str(body);
                    out.push_str("](");
                    out.push_str(&link_target(&url));
                    out.push(')');
                    out.push_str(trail);
                }
                _ => out.push_str(&inner),
            }
            i = j;
        }
        let collapsed = collapse(&out);
        escape_block_start(collapsed.trim().to_string())
    }
}

fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() && c != '\u{a0}' {
            space = true;
        } else {
            if space {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

fn split_space(text: &str) -> (&str, &str, &str) {
    let start = text.len() - text.trim_start().len();
    let end = text.trim_end().len();
    if start >= end {
        return (text, "", "");
    }
    (&text[..start], &text[start..end], &text[end..])
}

fn styled(text: &str, style: Style) -> String {
    let (lead, body, trail) = split_space(text);
    if body.is_empty() {
        return text.to_string();
    }
    let body = if style.code {
        let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let ticks = "`".repeat(longest + 1);
        let pad = if body.starts_with('`') || body.ends_with('`') { " " } else { "" };
        format!("{ticks}{pad}{body}{pad}{ticks}")
    } else {
        let mut body = escape_inline(body);
        if style.strike {
            body = format!("~~{body}~~");
        }
        if style.italic {
            body = format!("*{body}*");
        }
        if style.bold {
            body = format!("**{body}**");
        }
        body
    };
    format!("{lead}{body}{trail}")
}

fn escape_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if matches!(c, '\\' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '~') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A link target as Markdown takes it: in angle brackets when it holds spaces or
/// parentheses.
fn link_target(url: &str) -> String {
    let url = url.trim();
    if url.contains([' ', '(', ')', '<', '>']) {
        format!("<{}>", url.replace('<', "%3C").replace('>', "%3E"))
    } else {
        url.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_written_in_the_conventions() {
        let doc = Document {
            title: None,
            blocks: vec![
                Block::Heading { level: 2, text: "Intro".into() },
                Block::Paragraph("Some text.".into()),
                Block::ListItem { level: 0, ordered: None, text: "one".into() },
                Block::ListItem { level: 1, ordered: Some(2), text: "two".into() },
                Block::Table(vec![vec!["a".into(), "b|c".into()], vec!["1".into()]]),
                Block::Image { alt: "A duck -- swimming".into() },
                Block::Code { language: "rust".into(), text: "let x = `1`;\n".into() },
            ],
        };
        assert_eq!(
            render(&doc),
            "## Intro\n\nSome text.\n\n- one\n    2. two\n\n| a   | b\\|c |\n|-----|------|\n| 1   |      |\n\n\
             <!-- image: A duck - - swimming -->\n\n```rust\nlet x = `1`;\n```\n"
        );
    }

    #[test]
    fn inline_runs_merge_and_marks_hug_the_words() {
        let mut inline = Inline::new();
        inline.text("Plain ");
        inline.push("bold ", Style { bold: true, ..Style::default() }, None);
        inline.push("and", Style { bold: true, ..Style::default() }, None);
        inline.text(" a ");
        inline.push("link (here)", Style::default(), Some("https://example.com/a b"));
        inline.text(" with *stars* and 1_000.");
        assert_eq!(
            inline.finish(),
            "Plain **bold and** a [link (here)](<https://example.com/a b>) with \\*stars\\* and 1\\_000."
        );
    }

    #[test]
    fn text_that_would_start_a_block_is_escaped() {
        assert_eq!(escape("# not a heading"), "\\# not a heading");
        assert_eq!(escape("1. not a list"), "1\\. not a list");
        assert_eq!(escape("- not a list"), "\\- not a list");
        assert_eq!(escape("-5 degrees"), "-5 degrees");
        assert_eq!(escape("2024. A year"), "2024\\. A year");
    }
}
