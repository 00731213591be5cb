//! XLSX/XLSM workbooks to Markdown: a `##` heading per worksheet, and each block of
//! touching cells on it as a pipe table of its own (a title cell above a table, or two
//! tables side by side, stay apart), in the order they start, top to bottom, left to right.
//! Charts drawn on a sheet (or on a chart sheet) follow its tables: a picture named by the
//! chart type and the chart's data as a table.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Cursor;

use crate::error::EngineError;
use crate::markdown::ooxml::{self, Package};
use crate::markdown::{Block, Document, escape};
use crate::office::package::Kind;
use crate::office::workbook::{MAX_CELLS, Sheet, Workbook};

/// Reads every worksheet, then the chart sheets (macro sheets are left out); at most
/// [`MAX_CELLS`] cells in all.
pub fn read(bytes: &[u8], field: &str) -> Result<Document, EngineError> {
    let mut book = Workbook::open(bytes.to_vec(), field)?;
    let (worksheets, skipped) = book.sheet_list();
    let mut charts = charts_by_sheet(bytes, field)?;
    let mut budget = MAX_CELLS;
    let mut document = Document::default();
    for (name, visible) in worksheets {
        let sheet = book.read(&name, visible, &mut budget)?;
        document.push(Block::Heading { level: 2, text: escape(&name) });
        for table in blocks_of(&sheet) {
            document.push(Block::Table(table));
        }
        for block in charts.remove(&name).unwrap_or_default() {
            document.push(block);
        }
    }
    for sheet in skipped {
        if let Some(blocks) = charts.remove(&sheet.name) {
            document.push(Block::Heading { level: 2, text: escape(&sheet.name) });
            for block in blocks {
                document.push(block);
            }
        }
    }
    Ok(document)
}

/// The charts of every sheet, by sheet name, in drawing order. Only a workbook that has
/// chart parts is opened a second time for them.
fn charts_by_sheet(bytes: &[u8], field: &str) -> Result<HashMap<String, Vec<Block>>, EngineError> {
    let mut found = HashMap::new();
    let has_charts = zip::ZipArchive::new(Cursor::new(bytes))
        .map(|zip| zip.file_names().any(|n| n.is_ok_and(|n| n.to_ascii_lowercase().starts_with("xl/charts/"))))
        .unwrap_or(false);
    if !has_charts {
        return Ok(found);
    }
    let mut pkg = Package::open(bytes, Kind::Workbook, field)?;
    let root = pkg.rels("")?;
    let Some(workbook) = root.first("officeDocument").filter(|r| !r.external).map(|r| r.target.clone()) else {
        return Ok(found);
    };
    let book_rels = pkg.rels(&workbook)?;
    let Some(dom) = pkg.xml(&workbook)? else { return Ok(found) };
    let sheets: Vec<(String, String)> = dom
        .root()
        .descendants()
        .filter(|e| e.local() == "sheet")
        .filter_map(|e| {
            let part = book_rels.get(e.attr("r:id")?).filter(|r| !r.external)?.target.clone();
            Some((e.attr("name")?.to_string(), part))
        })
        .collect();
    for (name, part) in sheets {
        let mut blocks = Vec::new();
        for drawing in
            pkg.rels(&part)?.all("drawing").filter(|r| !r.external).map(|r| r.target.clone()).collect::<Vec<_>>()
        {
            let drawing_rels = pkg.rels(&drawing)?;
            let Some(drawing_dom) = pkg.xml(&drawing)? else { continue };
            let targets: Vec<String> = drawing_dom
                .root()
                .descendants()
                .filter(|e| e.is("c:chart"))
                .filter_map(|e| drawing_rels.get(e.attr("r:id")?).filter(|r| !r.external).map(|r| r.target.clone()))
                .collect();
            for target in targets {
                blocks.extend(ooxml::chart(&mut pkg, &target)?);
            }
        }
        if !blocks.is_empty() {
            found.insert(name, blocks);
        }
    }
    Ok(found)
}

/// The sheet's blocks of touching cells (sharing a side or a corner), each as rows of
/// escaped cell texts over its bounding box.
pub fn blocks_of(sheet: &Sheet) -> Vec<Vec<Vec<String>>> {
    let filled = |row: u32, column: u32| sheet.rows.get(&row).and_then(|cells| cells.get(&column)).is_some();
    let mut seen: HashSet<(u32, u32)> = HashSet::new();
    let mut found: Vec<((u32, u32), (u32, u32))> = Vec::new();
    for (&row, cells) in &sheet.rows {
        for &column in cells.keys() {
            if !seen.insert((row, column)) {
                continue;
            }
            let (mut top, mut left, mut bottom, mut right) = (row, column, row, column);
            let mut stack = vec![(row, column)];
            while let Some((r, c)) = stack.pop() {
                top = top.min(r);
                bottom = bottom.max(r);
                left = left.min(c);
                right = right.max(c);
                for dr in [-1i64, 0, 1] {
                    for dc in [-1i64, 0, 1] {
                        let (nr, nc) = (r as i64 + dr, c as i64 + dc);
                        if nr < 0 || nc < 0 || nr > u32::MAX as i64 || nc > u32::MAX as i64 {
                            continue;
                        }
                        let next = (nr as u32, nc as u32);
                        if filled(next.0, next.1) && seen.insert(next) {
                            stack.push(next);
                        }
                    }
                }
            }
            found.push(((top, left), (bottom, right)));
        }
    }
    // Blocks whose boxes overlap (an L-shaped block around another) are one table.
    let mut merged: Vec<((u32, u32), (u32, u32))> = Vec::new();
    for block in found {
        let mut block = block;
        loop {
            let overlapping = merged.iter().position(|other| overlaps(*other, block));
            match overlapping {
                Some(i) => {
                    let other = merged.remove(i);
                    block = (
                        (block.0.0.min(other.0.0), block.0.1.min(other.0.1)),
                        (block.1.0.max(other.1.0), block.1.1.max(other.1.1)),
                    );
                }
                None => break,
            }
        }
        merged.push(block);
    }
    merged.sort();
    merged.into_iter().map(|((top, left), (bottom, right))| table(sheet, top, left, bottom, right)).collect()
}

fn overlaps(a: ((u32, u32), (u32, u32)), b: ((u32, u32), (u32, u32))) -> bool {
    a.0.0 <= b.1.0 && b.0.0 <= a.1.0 && a.0.1 <= b.1.1 && b.0.1 <= a.1.1
}

fn table(sheet: &Sheet, top: u32, left: u32, bottom: u32, right: u32) -> Vec<Vec<String>> {
    let empty = BTreeMap::new();
    (top..=bottom)
        .filter_map(|r| {
            let cells = sheet.rows.get(&r).unwrap_or(&empty);
            let row: Vec<String> =
                (left..=right).map(|c| cells.get(&c).map(|v| escape(v.text().trim())).unwrap_or_default()).collect();
            row.iter().any(|c| !c.is_empty()).then_some(row)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::office::workbook::Value;

    fn sheet(cells: &[(u32, u32, &str)]) -> Sheet {
        let mut rows: BTreeMap<u32, BTreeMap<u32, Value>> = BTreeMap::new();
        for (r, c, text) in cells {
            rows.entry(*r).or_default().insert(*c, Value::Text(text.to_string()));
        }
        Sheet { name: "S".into(), visible: true, rows }
    }

    #[test]
    fn separate_blocks_are_separate_tables() {
        // A title two rows above a table, and a second table two columns to the right.
        let s = sheet(&[(0, 0, "Title"), (2, 0, "a"), (2, 1, "b"), (3, 0, "1"), (3, 1, "2"), (2, 4, "x"), (3, 4, "9")]);
        assert_eq!(
            blocks_of(&s),
            vec![
                vec![vec!["Title".to_string()]],
                vec![vec!["a".to_string(), "b".to_string()], vec!["1".to_string(), "2".to_string()]],
                vec![vec!["x".to_string()], vec!["9".to_string()]],
            ]
        );
    }

    #[test]
    fn a_diagonal_touch_joins_and_gaps_inside_are_empty_cells() {
        let s = sheet(&[(0, 0, "a"), (1, 1, "b"), (2, 0, "*c*")]);
        assert_eq!(
            blocks_of(&s),
            vec![vec![
                vec!["a".to_string(), String::new()],
                vec![String::new(), "b".to_string()],
                vec!["\\*c\\*".to_string(), String::new()]
            ]]
        );
    }
}
