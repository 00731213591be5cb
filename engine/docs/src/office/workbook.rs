//! Reading an XLSX/XLSM workbook into sparse rows of typed values.
//!
//! Cells come from calamine's streaming cell reader, one at a time, into rows that hold only
//! the cells present: a sheet with one cell at A1 and one at XFD1048576 costs two cells, not
//! the 17 billion a dense grid would. Merged areas repeat their top-left value over the
//! cells they cover, within the rows and columns that hold data. Formulas give the value
//! Excel saved with them.

use std::collections::BTreeMap;
use std::io::Cursor;

use calamine::{DataRef, Reader, SheetType, SheetVisible, Xlsx};

use crate::error::{EngineError, ErrorKind};
use crate::office::package::{self, Kind};

/// Most cells (present or filled from a merge) one call reads across all its sheets.
pub const MAX_CELLS: u64 = 2_000_000;

/// A cell's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Text.
    Text(String),
    /// A number as Excel stores it (a double).
    Number(f64),
    /// TRUE or FALSE.
    Bool(bool),
    /// A date, a time or both, as ISO 8601 text (`2024-03-31`, `13:45:00`, `2024-03-31T13:45:00`).
    DateTime(String),
    /// A duration (a `[h]:mm:ss` format), as ISO 8601 (`PT36H30M`).
    Duration(String),
    /// An error value such as `#DIV/0!`.
    Error(String),
}

impl Value {
    /// The value as CSV or Markdown shows it.
    pub fn text(&self) -> String {
        match self {
            Value::Text(t) | Value::DateTime(t) | Value::Duration(t) | Value::Error(t) => t.clone(),
            Value::Number(n) => number_text(*n),
            Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        }
    }
}

/// Largest whole number a double holds exactly (2^53): Excel stores every number as a double.
pub const MAX_EXACT_INTEGER: i64 = 9_007_199_254_740_992;

/// `n` as an integer when it is a whole number a double holds exactly.
pub fn as_whole(n: f64) -> Option<i64> {
    (n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER as f64).then_some(n as i64)
}

/// A number as the shortest text that reads back to the same double: whole numbers without
/// a fraction (`3`, not `3.0`), very large and very small ones with an exponent (`1e300`).
pub fn number_text(n: f64) -> String {
    let magnitude = n.abs();
    if let Some(whole) = as_whole(n) {
        whole.to_string()
    } else if magnitude >= 1e16 || (magnitude < 1e-6 && magnitude > 0.0) {
        format!("{n:e}")
    } else {
        format!("{n}")
    }
}

/// One sheet's cells.
#[derive(Debug)]
pub struct Sheet {
    /// The sheet's name.
    pub name: String,
    /// Whether Excel shows it (hidden and very hidden sheets are read too).
    pub visible: bool,
    /// Rows that hold at least one value, by 0-based row index; cells by 0-based column.
    pub rows: BTreeMap<u32, BTreeMap<u32, Value>>,
}

impl Sheet {
    /// The 0-based first and last columns that hold a value.
    pub fn columns(&self) -> Option<(u32, u32)> {
        let first = self.rows.values().filter_map(|r| r.keys().next()).min()?;
        let last = self.rows.values().filter_map(|r| r.keys().next_back()).max()?;
        Some((*first, *last))
    }
}

/// A sheet the workbook lists that holds no cells (a chart sheet, a macro sheet).
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The sheet's name.
    pub name: String,
    /// Its kind.
    pub kind: &'static str,
}

/// An opened workbook.
pub struct Workbook {
    book: Xlsx<Cursor<Vec<u8>>>,
    field: String,
    /// Whether any part mentions merged cells; when none does, sheets are not read a
    /// second time for them.
    merged_cells: bool,
}

impl Workbook {
    /// Checks the package (`package::check`) and opens it; errors name `field`.
    pub fn open(bytes: Vec<u8>, field: &str) -> Result<Workbook, EngineError> {
        let checked = package::check(&bytes, Kind::Workbook, field)?;
        let book = reader_guard(field, || Xlsx::new(Cursor::new(bytes)).map_err(|e| damaged(field, &e.to_string())))?;
        Ok(Workbook { book, field: field.to_string(), merged_cells: checked.merged_cells })
    }

    /// The worksheets in workbook order, and the sheets that are not worksheets.
    pub fn sheet_list(&self) -> (Vec<(String, bool)>, Vec<Skipped>) {
        let mut worksheets = Vec::new();
        let mut skipped = Vec::new();
        for sheet in self.book.sheets_metadata() {
            let kind = match sheet.typ {
                SheetType::WorkSheet => {
                    worksheets.push((sheet.name.clone(), sheet.visible == SheetVisible::Visible));
                    continue;
                }
                SheetType::ChartSheet => "chart sheet",
                SheetType::DialogSheet => "dialog sheet",
                SheetType::MacroSheet => "macro sheet",
                SheetType::Vba => "VBA module",
            };
            skipped.push(Skipped { name: sheet.name.clone(), kind });
        }
        (worksheets, skipped)
    }

    /// Reads one worksheet; `budget` is the cells still allowed, and shrinks by what was read.
    pub fn read(&mut self, name: &str, visible: bool, budget: &mut u64) -> Result<Sheet, EngineError> {
        let field = self.field.clone();
        let book = &mut self.book;
        let rows = reader_guard(&field, || {
            let mut rows: BTreeMap<u32, BTreeMap<u32, Value>> = BTreeMap::new();
            let mut reader = book.worksheet_cells_reader(name).map_err(|e| damaged(&field, &e.to_string()))?;
            while let Some(cell) = reader.next_cell().map_err(|e| damaged(&field, &e.to_string()))? {
                let Some(value) = convert(cell.get_value()) else { continue };
                take(budget, 1)?;
                let (row, column) = cell.get_position();
                rows.entry(row).or_default().insert(column, value);
            }
            Ok(rows)
        })?;
        let merges = if self.merged_cells {
            reader_guard(&field, || {
                self.book.merge_cells_by_sheet_name(name).map_err(|e| damaged(&field, &e.to_string()))
            })?
        } else {
            Vec::new()
        };
        let mut sheet = Sheet { name: name.to_string(), visible, rows };
        if let (false, Some((_, last_column))) = (merges.is_empty(), sheet.columns()) {
            let last_row = sheet.rows.keys().next_back().copied().unwrap_or(0);
            for area in merges {
                let (top, left) = area.start;
                let Some(value) = sheet.rows.get(&top).and_then(|r| r.get(&left)).cloned() else { continue };
                for row in top..=area.end.0.min(last_row) {
                    for column in left..=area.end.1.min(last_column) {
                        if (row, column) == (top, left) {
                            continue;
                        }
                        take(budget, 1)?;
                        sheet.rows.entry(row).or_default().insert(column, value.clone());
                    }
                }
            }
        }
        Ok(sheet)
    }
}

fn take(budget: &mut u64, cells: u64) -> Result<(), EngineError> {
    if *budget < cells {
        return Err(EngineError::too_large(
            "too_many_cells",
            Some("/file".into()),
            format!(
                "/file: the sheets asked for hold more than {MAX_CELLS} cells; ask for fewer sheets (`sheets`) or split \
                 the workbook"
            ),
        ));
    }
    *budget -= cells;
    Ok(())
}

/// A cell's value; `None` for an empty cell or empty text.
fn convert(data: &DataRef<'_>) -> Option<Value> {
    Some(match data {
        DataRef::Empty => return None,
        DataRef::String(s) if s.is_empty() => return None,
        DataRef::SharedString("") => return None,
        DataRef::String(s) => Value::Text(s.clone()),
        DataRef::SharedString(s) => Value::Text((*s).to_string()),
        DataRef::Int(i) => Value::Number(*i as f64),
        DataRef::Float(f) => Value::Number(*f),
        DataRef::Bool(b) => Value::Bool(*b),
        DataRef::DateTime(dt) if dt.is_duration() => Value::Duration(iso_duration(dt.as_f64())),
        DataRef::DateTime(dt) => {
            let (y, mo, d, h, mi, s, ms) = dt.to_ymd_hms_milli();
            let date = format!("{y:04}-{mo:02}-{d:02}");
            let time = if ms > 0 { format!("{h:02}:{mi:02}:{s:02}.{ms:03}") } else { format!("{h:02}:{mi:02}:{s:02}") };
            let serial = dt.as_f64();
            Value::DateTime(if (0.0..1.0).contains(&serial) {
                time
            } else if (h, mi, s, ms) == (0, 0, 0, 0) {
                date
            } else {
                format!("{date}T{time}")
            })
        }
        DataRef::DateTimeIso(s) => Value::DateTime(s.clone()),
        DataRef::DurationIso(s) => Value::Duration(s.clone()),
        DataRef::Error(e) => Value::Error(e.to_string()),
    })
}

/// Days as an ISO 8601 duration, to the millisecond: 1.5 → `PT36H`.
fn iso_duration(days: f64) -> String {
    let negative = days < 0.0;
    let total_ms = (days.abs() * 86_400_000.0).round() as u64;
    let (hours, rest) = (total_ms / 3_600_000, total_ms % 3_600_000);
    let (minutes, rest) = (rest / 60_000, rest % 60_000);
    let (seconds, millis) = (rest / 1000, rest % 1000);
    let mut text = String::from(if negative { "-PT" } else { "PT" });
    if hours > 0 {
        text += &format!("{hours}H");
    }
    if minutes > 0 {
        text += &format!("{minutes}M");
    }
    if seconds > 0 || millis > 0 || (hours == 0 && minutes == 0) {
        if millis > 0 {
            text += &format!("{seconds}.{millis:03}S");
        } else {
            text += &format!("{seconds}S");
        }
    }
    text
}

/// Runs the workbook reader's `work`, a panic of it (an arithmetic overflow on a cell
/// reference past Excel's limits, an index out of range on malformed XML) answered as a
/// damaged file: the reader is a dependency fed untrusted bytes, and what stops it is the
/// file, not a defect of ours.
fn reader_guard<T>(field: &str, work: impl FnOnce() -> Result<T, EngineError>) -> Result<T, EngineError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|_| Err(damaged(field, "the workbook reader stopped on its XML")))
}

fn damaged(field: &str, why: &str) -> EngineError {
    EngineError::new(
        ErrorKind::InvalidInput,
        "damaged_office_file",
        format!("{field}: the workbook cannot be read: {why}"),
    )
    .at(field)
}

/// A 0-based column index as Excel's letters: 0 → `A`, 26 → `AA`.
pub fn column_letters(mut column: u32) -> String {
    let mut letters = Vec::new();
    loop {
        letters.push(b'A' + (column % 26) as u8);
        if column < 26 {
            break;
        }
        column = column / 26 - 1;
    }
    letters.reverse();
    String::from_utf8(letters).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_lettered_as_excel_does() {
        assert_eq!(column_letters(0), "A");
        assert_eq!(column_letters(25), "Z");
        assert_eq!(column_letters(26), "AA");
        assert_eq!(column_letters(701), "ZZ");
        assert_eq!(column_letters(702), "AAA");
        assert_eq!(column_letters(16_383), "XFD");
    }

    #[test]
    fn durations_and_numbers_read_as_written() {
        assert_eq!(iso_duration(1.5), "PT36H");
        assert_eq!(iso_duration(0.0), "PT0S");
        assert_eq!(iso_duration(1.0 / 86_400.0 * 90.5), "PT1M30.500S");
        assert_eq!(number_text(3.0), "3");
        assert_eq!(number_text(0.1), "0.1");
        assert_eq!(number_text(-1234.5678), "-1234.5678");
        assert_eq!(number_text(1e300), "1e300");
        assert_eq!(number_text(1.5e-7), "1.5e-7");
    }
}
