//! `POST /v1/docs/xlsx-to-json`: the worksheets of an XLSX/XLSM workbook as JSON records
//! keyed by the header row, or as one CSV per sheet.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::docs::BUILDER_PRICE_RULE;
use crate::error::EngineError;
use crate::input::{FileInput, sanitize_filename};
use crate::office::workbook::{MAX_CELLS, Sheet, Value, Workbook, as_whole, column_letters};
use crate::output::{FileSet, OutFile, OutputMode, Reply, derived_name};
use crate::price::Price;

/// Most sheets `sheets` may name.
pub const MAX_SHEETS: usize = 256;
/// Excel's last row.
pub const MAX_ROW: u32 = 1_048_576;

/// Request of `/v1/docs/xlsx-to-json`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct XlsxToJsonInput {
    /// The workbook: `.xlsx` or `.xlsm` (macros are never run).
    pub file: FileInput,
    /// Worksheets to read, by name, in the order wanted. Default: every worksheet, in workbook order.
    #[serde(default)]
    #[schemars(length(min = 1, max = MAX_SHEETS), extend("uniqueItems" = true))]
    pub sheets: Option<Vec<String>>,
    /// `json` (default): records keyed by the header row. `csv`: one CSV file per sheet (a ZIP when several).
    #[serde(default)]
    pub format: SheetFormat,
    /// 1-based row holding the column names; rows above it are left out. 0: no header row, the keys are the
    /// column letters (`A`, `B`…). Default 1.
    #[serde(default = "first_row")]
    #[schemars(range(max = 1_048_576))]
    pub header_row: u32,
    /// How CSV files are delivered (`file`, `base64` or `url`); JSON is always answered as JSON.
    #[serde(default)]
    pub output: OutputMode,
}

fn first_row() -> u32 {
    1
}

/// What the sheets are turned into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SheetFormat {
    /// JSON records.
    #[default]
    Json,
    /// CSV, one file per sheet.
    Csv,
}

/// The answer for `format: json`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkbookJson {
    /// Always `json`.
    pub format: SheetFormat,
    /// The worksheets read, in the order asked.
    pub sheets: Vec<SheetJson>,
    /// Sheets of the workbook that hold no cells (chart sheets, macro sheets), not read.
    pub skipped_sheets: Vec<SkippedSheet>,
}

/// One worksheet as records.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SheetJson {
    /// The sheet's name (text from the file).
    pub name: String,
    /// Whether Excel shows the sheet (hidden sheets are read too).
    pub visible: bool,
    /// The records' keys, in column order: the header row's texts (a repeated name gets `_2`, `_3`…; an empty
    /// one, or every key when `header_row` is 0, is the column letter).
    pub columns: Vec<String>,
    /// One record per non-empty row below the header row. Every key is present: null where the cell is empty.
    /// Numbers are JSON numbers (the double Excel stored), dates and times ISO 8601 text, durations ISO 8601
    /// durations, booleans true/false, error values their text (`#DIV/0!`). A merged area repeats its value in
    /// every cell it covers. Formulas give the value Excel saved with them.
    #[schemars(with = "Vec<Map<String, serde_json::Value>>")]
    pub rows: Records,
    /// Number of records.
    pub row_count: u64,
    /// The area read, in A1 notation (`A1:D20`), header row included; null for an empty sheet.
    pub range: Option<String>,
}

/// Records written as JSON objects keyed by `keys`, without a map built for each row.
#[derive(Debug)]
pub struct Records {
    keys: Vec<String>,
    rows: Vec<Vec<serde_json::Value>>,
}

impl Serialize for Records {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct Record<'a>(&'a [String], &'a [serde_json::Value]);
        impl Serialize for Record<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (key, value) in self.0.iter().zip(self.1) {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
        let mut seq = serializer.serialize_seq(Some(self.rows.len()))?;
        for row in &self.rows {
            seq.serialize_element(&Record(&self.keys, row))?;
        }
        seq.end()
    }
}

/// A sheet that was not read, and why.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SkippedSheet {
    /// The sheet's name.
    pub name: String,
    /// What it is: `chart sheet`, `macro sheet`, `dialog sheet`.
    pub kind: String,
}

/// A checked call.
pub struct XlsxToJson {
    bytes: Vec<u8>,
    filename: String,
    sheets: Option<Vec<String>>,
    format: SheetFormat,
    header_row: u32,
    output: OutputMode,
}

/// The route.
pub struct XlsxToJsonRoute;

impl Route for XlsxToJsonRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::CSV, media::ZIP];
    type Input = XlsxToJsonInput;
    type Prepared = XlsxToJson;
    type Output = WorkbookJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/docs/xlsx-to-json",
        operation: "xlsx_to_json",
        family: Family::Docs,
        summary: "Spreadsheet to JSON or CSV",
        description: "Reads the worksheets of an .xlsx/.xlsm workbook (macros never run). format=json answers records \
            keyed by the header row (`header_row`, default 1; 0 for column letters): numbers as numbers, dates ISO \
            8601, merged areas repeated, empty rows skipped, formulas as their saved values. format=csv gives one \
            CSV per sheet (a ZIP when several), text cells starting with = + - @ tab or CR prefixed with ' so a \
            spreadsheet does not run them. At most 2,000,000 cells a call; zip and XML entity bombs are refused.",
        base_price: Price::micros(3_000),
        price_rule: BUILDER_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::JsonOrFile,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::XLSX,
    };

    async fn prepare(input: XlsxToJsonInput, ctx: &Context) -> Result<XlsxToJson, EngineError> {
        if let Some(sheets) = &input.sheets {
            if sheets.is_empty() || sheets.len() > MAX_SHEETS {
                return Err(EngineError::invalid("/sheets", format!("/sheets: name 1 to {MAX_SHEETS} sheets")));
            }
            for (i, name) in sheets.iter().enumerate() {
                if sheets[..i].contains(name) {
                    return Err(EngineError::invalid(
                        format!("/sheets/{i}"),
                        format!("/sheets/{i}: sheet {name:?} is named twice"),
                    ));
                }
            }
        }
        if input.header_row > MAX_ROW {
            return Err(EngineError::invalid(
                "/header_row",
                format!("/header_row: a worksheet has rows 1 to {MAX_ROW} (0 for no header row)"),
            ));
        }
        let file = input.file.resolve(ctx, "/file", "workbook.xlsx").await?;
        Ok(XlsxToJson {
            bytes: file.bytes,
            filename: file.filename,
            sheets: input.sheets,
            format: input.format,
            header_row: input.header_row,
            output: input.output,
        })
    }

    fn quote(_: &XlsxToJson) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: XlsxToJson, _ctx: &Context) -> Result<Reply<WorkbookJson>, EngineError> {
        blocking(move || convert(call)).await
    }
}

fn convert(call: XlsxToJson) -> Result<Reply<WorkbookJson>, EngineError> {
    let XlsxToJson { bytes, filename, sheets: wanted, format, header_row, output } = call;
    let mut book = Workbook::open(bytes, "/file")?;
    let (worksheets, skipped) = book.sheet_list();
    let chosen: Vec<(String, bool)> = match wanted {
        None => worksheets,
        Some(names) => names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                if let Some(found) = worksheets.iter().find(|(n, _)| n == name) {
                    return Ok(found.clone());
                }
                let why = match skipped.iter().find(|s| &s.name == name) {
                    Some(s) => format!("{name:?} is a {} and holds no cells", s.kind),
                    None => format!(
                        "the workbook has no worksheet {name:?}; its worksheets are {}",
                        worksheets.iter().map(|(n, _)| format!("{n:?}")).collect::<Vec<_>>().join(", ")
                    ),
                };
                Err(EngineError::invalid_with("unknown_sheet", format!("/sheets/{i}"), format!("/sheets/{i}: {why}")))
            })
            .collect::<Result<_, _>>()?,
    };
    let mut budget = MAX_CELLS;
    let mut read = Vec::with_capacity(chosen.len());
    for (name, visible) in &chosen {
        read.push(book.read(name, *visible, &mut budget)?);
    }
    match format {
        SheetFormat::Json => Ok(Reply::Json(WorkbookJson {
            format,
            sheets: read.iter().map(|sheet| sheet_json(sheet, header_row)).collect(),
            skipped_sheets: skipped.into_iter().map(|s| SkippedSheet { name: s.name, kind: s.kind.into() }).collect(),
        })),
        SheetFormat::Csv => {
            let mut files: Vec<OutFile> = read
                .iter()
                .map(|sheet| OutFile {
                    filename: derived_name(&filename, &sanitize_filename(&sheet.name), "csv"),
                    media_type: media::CSV.into(),
                    bytes: sheet_csv(sheet, header_row).into_bytes(),
                })
                .collect();
            Ok(Reply::Files(if files.len() == 1 {
                FileSet::single(files.remove(0), output)
            } else {
                FileSet::several(files, output, derived_name(&filename, "sheets", "zip"))
            }))
        }
    }
}

/// The rows kept: from the header row down (all rows when there is none).
fn kept_rows(sheet: &Sheet, header_row: u32) -> impl Iterator<Item = (&u32, &BTreeMap<u32, Value>)> {
    let first = header_row.saturating_sub(1);
    sheet.rows.range(first..)
}

/// The first and last columns and rows of the kept rows, 0-based.
fn bounds(sheet: &Sheet, header_row: u32) -> Option<((u32, u32), (u32, u32))> {
    let mut rows = kept_rows(sheet, header_row).peekable();
    let first_row = *rows.peek()?.0;
    let (mut left, mut right, mut last_row) = (u32::MAX, 0, first_row);
    for (row, cells) in rows {
        last_row = *row;
        if let (Some(first), Some(last)) = (cells.keys().next(), cells.keys().next_back()) {
            left = left.min(*first);
            right = right.max(*last);
        }
    }
    Some(((first_row, left), (last_row, right)))
}

fn a1(row: u32, column: u32) -> String {
    format!("{}{}", column_letters(column), row + 1)
}

fn sheet_json(sheet: &Sheet, header_row: u32) -> SheetJson {
    let Some(((top, left), (bottom, right))) = bounds(sheet, header_row) else {
        return SheetJson {
            name: sheet.name.clone(),
            visible: sheet.visible,
            columns: Vec::new(),
            rows: Records { keys: Vec::new(), rows: Vec::new() },
            row_count: 0,
            range: None,
        };
    };
    let header = (header_row > 0).then(|| sheet.rows.get(&(header_row - 1))).flatten();
    let mut columns: Vec<String> = Vec::with_capacity((right - left + 1) as usize);
    for column in left..=right {
        let name = header
            .and_then(|h| h.get(&column))
            .map(|v| v.text().trim().to_string())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| column_letters(column));
        let mut unique = name.clone();
        let mut n = 2;
        while columns.contains(&unique) {
            unique = format!("{name}_{n}");
            n += 1;
        }
        columns.push(unique);
    }
    let rows: Vec<Vec<serde_json::Value>> = kept_rows(sheet, header_row)
        .filter(|(row, _)| header_row == 0 || **row != header_row - 1)
        .map(|(_, cells)| {
            (left..=right).map(|column| cells.get(&column).map_or(serde_json::Value::Null, json_value)).collect()
        })
        .collect();
    SheetJson {
        name: sheet.name.clone(),
        visible: sheet.visible,
        row_count: rows.len() as u64,
        rows: Records { keys: columns.clone(), rows },
        columns,
        range: Some(format!("{}:{}", a1(top, left), a1(bottom, right))),
    }
}

fn json_value(value: &Value) -> serde_json::Value {
    match value {
        Value::Number(n) => match as_whole(*n) {
            Some(whole) => serde_json::Value::Number(Number::from(whole)),
            None => Number::from_f64(*n).map_or(serde_json::Value::Null, serde_json::Value::Number),
        },
        Value::Bool(b) => serde_json::Value::Bool(*b),
        other => serde_json::Value::String(other.text()),
    }
}

fn sheet_csv(sheet: &Sheet, header_row: u32) -> String {
    let mut csv = String::new();
    let Some(((_, left), (_, right))) = bounds(sheet, header_row) else { return csv };
    for (_, cells) in kept_rows(sheet, header_row) {
        let fields: Vec<String> =
            (left..=right).map(|column| cells.get(&column).map_or(String::new(), csv_field)).collect();
        csv += &fields.join(",");
        csv += "\r\n";
    }
    csv
}

/// One CSV field; text that a spreadsheet would take for a formula is guarded (route book
/// §4). Numbers, dates and booleans are not text and stay as they are.
fn csv_field(value: &Value) -> String {
    crate::office::csv::field(&value.text(), matches!(value, Value::Text(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sheet(rows: &[(u32, &[(u32, Value)])]) -> Sheet {
        Sheet {
            name: "S".into(),
            visible: true,
            rows: rows.iter().map(|(r, cells)| (*r, cells.iter().cloned().collect())).collect(),
        }
    }

    #[test]
    fn csv_fields_are_quoted_and_formulas_guarded() {
        assert_eq!(csv_field(&Value::Text("=HYPERLINK(\"x\")".into())), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field(&Value::Text("-2+3".into())), "'-2+3");
        assert_eq!(csv_field(&Value::Text("@SUM(A1)".into())), "'@SUM(A1)");
        assert_eq!(csv_field(&Value::Text("\tx".into())), "'\tx");
        assert_eq!(csv_field(&Value::Number(-5.0)), "-5");
        assert_eq!(csv_field(&Value::Text("a,b".into())), "\"a,b\"");
        assert_eq!(csv_field(&Value::Text("line\nbreak".into())), "\"line\nbreak\"");
        assert_eq!(csv_field(&Value::Text("plain".into())), "plain");
    }

    #[test]
    fn headers_name_keys_uniquely_and_empty_rows_are_gone() {
        let s = sheet(&[
            (0, &[(0, Value::Text("Title".into()))]),
            (2, &[(1, Value::Text("Name".into())), (2, Value::Text("Name".into()))]),
            (3, &[(1, Value::Text("ann".into())), (3, Value::Number(2.5))]),
            (7, &[(2, Value::Bool(true))]),
        ]);
        let json = sheet_json(&s, 3);
        assert_eq!(json.columns, vec!["Name", "Name_2", "D"]);
        assert_eq!(json.row_count, 2);
        assert_eq!(json.range.as_deref(), Some("B3:D8"));
        assert_eq!(
            serde_json::to_value(&json.rows).unwrap(),
            serde_json::json!([{"Name": "ann", "Name_2": null, "D": 2.5}, {"Name": null, "Name_2": true, "D": null}])
        );
        // Keys in column order, as the columns list says.
        let text = serde_json::to_string(&json.rows).unwrap();
        assert!(text.starts_with(r#"[{"Name":"ann","Name_2":null,"D":2.5}"#), "{text}");
        let letters = sheet_json(&s, 0);
        assert_eq!(letters.columns, vec!["A", "B", "C", "D"]);
        assert_eq!(letters.row_count, 4);
        assert_eq!(sheet_csv(&s, 3), "Name,Name,\r\nann,,2.5\r\n,TRUE,\r\n");
    }

    #[test]
    fn whole_numbers_are_integers_and_others_exact() {
        assert_eq!(json_value(&Value::Number(3.0)).to_string(), "3");
        assert_eq!(json_value(&Value::Number(0.1)).to_string(), "0.1");
        assert_eq!(json_value(&Value::Number(1e300)).to_string(), "1e+300");
        assert_eq!(json_value(&Value::DateTime("2024-03-31".into())), serde_json::json!("2024-03-31"));
    }
}
