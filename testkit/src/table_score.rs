//! How close extracted tables are to the expected ones of `corpus/tables` (camelot's
//! expected CSVs and the ICDAR 2013 ground truth), scored the same way for Paperchain's
//! `/v1/pdf/tables` and for the reference tool in `cargo xtask bench convert`.
//!
//! Each expected table is matched with the extracted table of the same PDF that scores
//! best on it; an unmatched expected table scores 0. Texts are compared by a key: NFKC,
//! whitespace removed, and for text with right-to-left letters the characters sorted (the
//! expected Arabic is in visual order, an extractor's in logical order).
//!
//! - **cells**: the share of the expected table's non-empty cells found, each once, among
//!   the extracted table's cells (a merged cell repeated by the extractor counts once).
//! - **adjacency**: F1 of the neighbour relations (each cell and the next non-empty,
//!   different cell to its right and below), the ICDAR 2013 competition's structure
//!   measure: it checks that cells stand in the right rows and columns.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use unicode_normalization::UnicodeNormalization;

/// A table as rows of cell texts.
pub type Grid = Vec<Vec<String>>;

/// One PDF of `corpus/tables` with its expected tables in page and reading order.
#[derive(Clone, Debug)]
pub struct TableCase {
    /// The PDF.
    pub pdf: PathBuf,
    /// Its expected tables.
    pub tables: Vec<Grid>,
}

impl TableCase {
    /// The PDF's file name.
    pub fn name(&self) -> String {
        self.pdf.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// Every PDF of `corpus/tables/{camelot,icdar2013}` with its expected tables
/// (`<stem>.csv`, or `<stem>.table<N>.csv` in order of N), sorted by path.
pub fn table_cases() -> Vec<TableCase> {
    let root = crate::corpus::corpus().join("tables");
    let mut cases = Vec::new();
    for folder in ["camelot", "icdar2013"] {
        let dir = root.join(folder);
        let mut pdfs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
            .collect();
        pdfs.sort();
        for pdf in pdfs {
            let stem = pdf.file_stem().expect("a stem").to_string_lossy().into_owned();
            let single = dir.join(format!("{stem}.csv"));
            let mut files = if single.is_file() { vec![single] } else { Vec::new() };
            for n in 1.. {
                let numbered = dir.join(format!("{stem}.table{n}.csv"));
                if !numbered.is_file() {
                    break;
                }
                files.push(numbered);
            }
            assert!(!files.is_empty(), "no expected table for {}", pdf.display());
            cases.push(TableCase { pdf, tables: files.iter().map(|f| read_csv(f)).collect() });
        }
    }
    cases
}

/// An RFC 4180 CSV file (quoted fields, `""` for a quote, line breaks inside quotes).
pub fn read_csv(path: &Path) -> Grid {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_csv(&text)
}

/// See [`read_csv`].
pub fn parse_csv(text: &str) -> Grid {
    let mut rows = Vec::new();
    let (mut row, mut field) = (Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\r', false) => {}
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}

/// The comparison key of a cell's text.
pub fn key(text: &str) -> String {
    let plain: String = text.nfkc().filter(|c| !c.is_whitespace()).collect();
    if plain.chars().any(|c| matches!(c as u32, 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF)) {
        let mut chars: Vec<char> = plain.chars().collect();
        chars.sort_unstable();
        chars.into_iter().collect()
    } else {
        plain
    }
}

/// A table's scores.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TableScore {
    /// Share of expected cells found.
    pub cells: f64,
    /// F1 of neighbour relations.
    pub adjacency: f64,
}

/// Scores one expected table against one extracted table.
pub fn score_pair(expected: &Grid, found: &Grid) -> TableScore {
    let mut available: HashMap<String, usize> = HashMap::new();
    for cell in unique_cells(found) {
        *available.entry(cell).or_default() += 1;
    }
    let wanted: Vec<String> = expected.iter().flatten().map(|c| key(c)).filter(|k| !k.is_empty()).collect();
    let mut hits = 0;
    for k in &wanted {
        if let Some(n) = available.get_mut(k).filter(|n| **n > 0) {
            *n -= 1;
            hits += 1;
        }
    }
    let cells = if wanted.is_empty() { 1.0 } else { hits as f64 / wanted.len() as f64 };
    let (e, f) = (relations(expected), relations(found));
    let mut pool: HashMap<&(String, String, bool), usize> = HashMap::new();
    for r in &f {
        *pool.entry(r).or_default() += 1;
    }
    let mut common = 0;
    for r in &e {
        if let Some(n) = pool.get_mut(r).filter(|n| **n > 0) {
            *n -= 1;
            common += 1;
        }
    }
    let adjacency = if e.is_empty() && f.is_empty() { 1.0 } else { 2.0 * common as f64 / (e.len() + f.len()) as f64 };
    TableScore { cells, adjacency }
}

/// The best score of `expected` among `found` (0 when nothing was found), by cells then
/// adjacency.
pub fn best(expected: &Grid, found: &[Grid]) -> TableScore {
    found
        .iter()
        .map(|f| score_pair(expected, f))
        .max_by(|a, b| (a.cells + a.adjacency).total_cmp(&(b.cells + b.adjacency)))
        .unwrap_or_default()
}

/// The keys of a table's cells, a run of one text repeated along a row or a column (a
/// merged cell) counted once.
fn unique_cells(grid: &Grid) -> Vec<String> {
    let keys: Vec<Vec<String>> = grid.iter().map(|row| row.iter().map(|c| key(c)).collect()).collect();
    let mut out = Vec::new();
    for (r, row) in keys.iter().enumerate() {
        for (c, k) in row.iter().enumerate() {
            let left = c > 0 && row[c - 1] == *k;
            let above = r > 0 && keys[r - 1].get(c) == Some(k);
            if !k.is_empty() && !left && !above {
                out.push(k.clone());
            }
        }
    }
    out
}

/// Neighbour relations: `(a, b, true)` when `b` is the next non-empty cell to the right
/// of `a`, `(a, b, false)` below it; the copies of a repeated (merged) cell are empty.
fn relations(grid: &Grid) -> Vec<(String, String, bool)> {
    let mut keys: Vec<Vec<String>> = grid.iter().map(|row| row.iter().map(|c| key(c)).collect()).collect();
    // A merged cell repeated over the cells it covers keeps only its top-left copy.
    let copy = |keys: &[Vec<String>], r: usize, c: usize| {
        let k = &keys[r][c];
        (c > 0 && keys[r][c - 1] == *k) || (r > 0 && keys[r - 1].get(c) == Some(k))
    };
    let repeats: Vec<(usize, usize)> = (0..keys.len())
        .flat_map(|r| (0..keys[r].len()).map(move |c| (r, c)))
        .filter(|&(r, c)| !keys[r][c].is_empty() && copy(&keys, r, c))
        .collect();
    for (r, c) in repeats {
        keys[r][c].clear();
    }
    let width = keys.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    let mut walk = |line: Vec<&String>, across: bool| {
        let mut kept: Vec<&String> = Vec::new();
        for k in line.into_iter().filter(|k| !k.is_empty()) {
            if kept.last() != Some(&k) {
                kept.push(k);
            }
        }
        for pair in kept.windows(2) {
            out.push((pair[0].clone(), pair[1].clone(), across));
        }
    };
    for row in &keys {
        walk(row.iter().collect(), true);
    }
    for c in 0..width {
        walk(keys.iter().filter_map(|row| row.get(c)).collect(), false);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(rows: &[&[&str]]) -> Grid {
        rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect()
    }

    #[test]
    fn csv_fields_quotes_and_line_breaks_are_read() {
        assert_eq!(parse_csv("\"a\",\"b \"\"q\"\"\"\r\n\"x\ny\",\"\"\r\n"), grid(&[&["a", "b \"q\""], &["x\ny", ""]]));
    }

    #[test]
    fn a_merged_cell_repeated_or_left_blank_scores_the_same() {
        let expected = grid(&[&["Head", "", "C"], &["1", "2", "3"]]);
        let repeated = grid(&[&["Head", "Head", "C"], &["1", "2", "3"]]);
        assert_eq!(score_pair(&expected, &repeated), TableScore { cells: 1.0, adjacency: 1.0 });
        let shuffled = grid(&[&["1", "2", "3"], &["Head", "C", ""]]);
        let s = score_pair(&expected, &shuffled);
        assert_eq!(s.cells, 1.0);
        assert!(s.adjacency < 0.7, "{s:?}");
        assert_eq!(best(&expected, &[]), TableScore::default());
    }
}
