//! CSV (and TSV, semicolon- or pipe-separated text) to Markdown: one pipe table, the
//! first row its header, short rows padded.

use crate::error::EngineError;
use crate::markdown::{Block, Document};

/// Most fields one row may have (a spreadsheet's widest sheet).
const MAX_COLUMNS: usize = 16_384;
/// Most fields the whole file may have: a table of this many cells is already far larger
/// than anyone reads as Markdown.
const MAX_CELLS: usize = 4_000_000;

/// The separators tried, in order of preference when they fit equally well.
const SEPARATORS: [char; 4] = [',', ';', '\t', '|'];

/// Reads a CSV file: UTF-8 (a byte order mark is dropped) or, when the bytes are not
/// UTF-8, Windows-1252. The separator is the one of `,` `;` tab `|` that splits the first
/// lines most evenly; `"` quotes fields (`""` is a quote inside one).
pub fn read(bytes: &[u8], field: &str) -> Result<Document, EngineError> {
    let text = decode(bytes);
    if text.trim().is_empty() {
        return Err(EngineError::invalid(field, format!("{field}: the CSV file holds no text")));
    }
    let separator = sniff(&text);
    let rows = parse(&text, separator).map_err(|too_many| {
        EngineError::too_large(
            "file_too_large",
            Some(field.to_string()),
            match too_many {
                TooMany::Columns => format!("{field}: a row of the CSV file has more than {MAX_COLUMNS} fields"),
                TooMany::Cells => format!("{field}: the CSV file has more than {MAX_CELLS} fields"),
            },
        )
    })?;
    let rows: Vec<Vec<String>> = rows.into_iter().filter(|row| row.iter().any(|c| !c.trim().is_empty())).collect();
    let mut document = Document::default();
    document.push(Block::Table(
        rows.into_iter().map(|row| row.iter().map(|cell| crate::markdown::escape(cell.trim())).collect()).collect(),
    ));
    Ok(document)
}

/// Text of a file that may not be UTF-8.
pub fn decode(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => encoding_rs::WINDOWS_1252.decode(bytes).0.into_owned(),
    }
}

/// The separator that gives the same number of fields (more than one) on most of the first
/// lines; `,` when none does.
fn sniff(text: &str) -> char {
    let sample: String = text.lines().take(50).collect::<Vec<_>>().join("\n");
    let mut best = (',', 0usize, 0usize);
    for separator in SEPARATORS {
        // A separator that splits the sample past the limits is not the file's.
        let Ok(rows) = parse(&sample, separator) else { continue };
        let widths: Vec<usize> = rows.iter().map(Vec::len).collect();
        let Some(&first) = widths.first() else { continue };
        if first < 2 && widths.iter().all(|&w| w < 2) {
            continue;
        }
        // How many rows share the most common width, and that width.
        let mut counts = std::collections::HashMap::new();
        for &w in &widths {
            *counts.entry(w).or_insert(0usize) += 1;
        }
        let (width, agree) = counts.into_iter().filter(|(w, _)| *w > 1).max_by_key(|&(w, n)| (n, w)).unwrap_or((0, 0));
        if (agree, width) > (best.1, best.2) {
            best = (separator, agree, width);
        }
    }
    best.0
}

/// Which limit a file went past.
#[derive(Debug, PartialEq)]
enum TooMany {
    Columns,
    Cells,
}

/// RFC 4180 fields: quoted fields may hold separators, quotes (doubled) and line breaks.
/// Refused past [`MAX_COLUMNS`] fields in a row or [`MAX_CELLS`] in all, while read.
fn parse(text: &str, separator: char) -> Result<Vec<Vec<String>>, TooMany> {
    let mut rows = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut cells = 0usize;
    let mut end_field = |row: &mut Vec<String>, cell: String| {
        cells += 1;
        if row.len() >= MAX_COLUMNS {
            return Err(TooMany::Columns);
        }
        if cells > MAX_CELLS {
            return Err(TooMany::Cells);
        }
        row.push(cell);
        Ok(())
    };
    let mut cell = String::new();
    let mut quoted = false;
    let mut at_start = true;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    cell.push('"');
                    chars.next();
                } else {
                    quoted = false;
                }
            } else {
                cell.push(c);
            }
            continue;
        }
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            c if c == separator => {
                end_field(&mut row, std::mem::take(&mut cell))?;
                at_start = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => {
                end_field(&mut row, std::mem::take(&mut cell))?;
                rows.push(std::mem::take(&mut row));
                at_start = true;
            }
            c => {
                cell.push(c);
                at_start = false;
            }
        }
    }
    if !cell.is_empty() || !row.is_empty() {
        end_field(&mut row, cell)?;
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::render;

    fn markdown(text: &str) -> String {
        render(&read(text.as_bytes(), "/file").unwrap())
    }

    #[test]
    fn rows_too_wide_and_files_of_too_many_fields_are_refused_while_read() {
        let wide = vec!["1"; MAX_COLUMNS + 1].join(",");
        let error = read(wide.as_bytes(), "/file").unwrap_err();
        assert_eq!((error.code.as_ref(), error.field.as_deref()), ("file_too_large", Some("/file")));
        assert!(error.message.contains("more than 16384 fields"), "{}", error.message);
        let row = vec!["1"; 1000].join(",");
        let long = vec![row.as_str(); MAX_CELLS / 1000 + 1].join("\n");
        let error = read(long.as_bytes(), "/file").unwrap_err();
        assert!(error.message.contains("more than 4000000 fields"), "{}", error.message);
        // At the limits, read.
        assert!(read(vec!["1"; MAX_COLUMNS].join(",").as_bytes(), "/file").is_ok());
    }

    #[test]
    fn separators_are_sniffed_and_quotes_read() {
        assert_eq!(markdown("a;b\n1;\"x;y\"\n"), "| a   | b   |\n|-----|-----|\n| 1   | x;y |\n");
        assert_eq!(markdown("a\tb\r\n1\t2\r\n"), "| a   | b   |\n|-----|-----|\n| 1   | 2   |\n");
        assert_eq!(markdown("a|b\n1|2\n"), "| a   | b   |\n|-----|-----|\n| 1   | 2   |\n");
        assert_eq!(
            markdown("a,b\n\"say \"\"hi\"\"\",\"two\nlines\"\n"),
            "| a        | b         |\n|----------|-----------|\n| say \"hi\" | two lines |\n"
        );
    }

    #[test]
    fn ragged_rows_are_padded_and_text_escaped() {
        assert_eq!(
            markdown("1,2\na,b,c\n*x*,|\n"),
            "| 1     | 2   |     |\n|-------|-----|-----|\n| a     | b   | c   |\n| \\*x\\* | \\|  |     |\n"
        );
    }

    #[test]
    fn one_column_and_windows_1252_are_read() {
        assert_eq!(markdown("Industry\nSales\n"), "| Industry |\n|----------|\n| Sales    |\n");
        let bytes = b"name,city\nRen\xe9,K\xf6ln\n";
        assert_eq!(render(&read(bytes, "/file").unwrap()), "| name | city |\n|------|------|\n| René | Köln |\n");
    }

    #[test]
    fn an_empty_file_is_refused() {
        assert!(read(b" \n", "/file").unwrap_err().message.starts_with("/file: "));
    }
}
