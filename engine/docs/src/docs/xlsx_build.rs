//! `POST /v1/docs/xlsx-build`: an .xlsx workbook from typed columns and rows of JSON values.

use rust_xlsxwriter::{Color, ExcelDateTime, Format, FormatBorder, Workbook, Worksheet};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use time::format_description::well_known::Iso8601;
use time::{Date, PrimitiveDateTime};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::docs::BUILDER_PRICE_RULE;
use crate::error::EngineError;
use crate::office::workbook::{MAX_CELLS, MAX_EXACT_INTEGER, number_text};
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, chosen_name};
use crate::price::Price;

/// Most sheets one workbook gets.
pub const MAX_SHEETS: usize = 100;
/// Excel's column count.
pub const MAX_COLUMNS: usize = 16_384;
/// Excel's rows, less the header row.
pub const MAX_ROWS: usize = 1_048_575;
/// Excel's limit on one cell's text, in characters.
pub const MAX_TEXT_CHARS: usize = 32_767;

/// Request of `/v1/docs/xlsx-build`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct XlsxBuildInput {
    /// The sheets, in order (1 to 100).
    #[schemars(length(min = 1, max = 100))]
    #[serde(deserialize_with = "sheets_within_budget")]
    pub sheets: Vec<SheetSpec>,
    /// The file's name (`.xlsx` is added when missing). Default `workbook.xlsx`, also for a name with nothing usable (blank, a folder).
    #[serde(default)]
    pub filename: Option<String>,
    /// How the file is delivered.
    #[serde(default)]
    pub output: OutputMode,
}

/// One sheet: typed columns and rows of values.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SheetSpec {
    /// The sheet's name: 1 to 31 characters, none of `[ ] : * ? / \`, not starting or ending with `'`, unique in
    /// the workbook (letter case aside).
    #[schemars(
        length(min = 1, max = 31),
        regex(pattern = r"^[^\[\]:*?/\\'\x00-\x1f\x7f-\x9f]([^\[\]:*?/\\\x00-\x1f\x7f-\x9f]*[^\[\]:*?/\\'\x00-\x1f\x7f-\x9f])?$"),
        extend("not" = { "pattern": "^[Hh][Ii][Ss][Tt][Oo][Rr][Yy]$" })
    )]
    pub name: String,
    /// The columns, left to right (1 to 16,384); their names make the header row.
    #[schemars(length(min = 1, max = 16_384))]
    pub columns: Vec<ColumnSpec>,
    /// The rows below the header: each a list of one value per column, null for an empty cell.
    #[serde(default)]
    #[schemars(with = "Vec<Vec<Value>>", extend("default" = []))]
    pub rows: Rows,
    /// Keep the header row in view while scrolling. Default true.
    #[serde(default = "yes")]
    pub freeze_header: bool,
    /// Filter buttons on the header row. Default true.
    #[serde(default = "yes")]
    pub autofilter: bool,
}

fn yes() -> bool {
    true
}

/// A sheet's rows as read. The cells are kept while the body's budget of
/// [`MAX_CELLS`]` + 1` lasts, and past it only counted: a body far over the cell limit is
/// refused having cost little more than its own size, not a value per cell.
#[derive(Debug, Default)]
pub struct Rows {
    kept: Vec<Vec<InCell>>,
    /// Rows read, kept or not.
    count: usize,
    /// Whether values were read past the budget (and not kept).
    over_budget: bool,
}

/// A cell's value as read: what [`cell`] needs of it, without a list's or object's content.
#[derive(Debug)]
enum InCell {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    Text(String),
    List,
    Object,
}

impl InCell {
    fn into_value(self) -> Value {
        match self {
            InCell::Null => Value::Null,
            InCell::Bool(b) => Value::Bool(b),
            InCell::Number(n) => Value::Number(n),
            InCell::Text(t) => Value::String(t),
            InCell::List => Value::Array(Vec::new()),
            InCell::Object => Value::Object(serde_json::Map::new()),
        }
    }
}

thread_local! {
    /// Cells the body being read may still keep ([`sheets_within_budget`] sets it).
    static CELLS_LEFT: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}

/// The sheets, their rows read within one budget of cells for the whole body.
fn sheets_within_budget<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<SheetSpec>, D::Error> {
    CELLS_LEFT.set(MAX_CELLS + 1);
    let sheets = Vec::<SheetSpec>::deserialize(deserializer);
    CELLS_LEFT.set(u64::MAX);
    sheets
}

impl<'de> Deserialize<'de> for Rows {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rows, D::Error> {
        deserializer.deserialize_seq(RowsVisitor)
    }
}

struct RowsVisitor;

impl<'de> serde::de::Visitor<'de> for RowsVisitor {
    type Value = Rows;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of rows, each a list of values")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Rows, A::Error> {
        let mut rows = Rows::default();
        loop {
            if CELLS_LEFT.get() == 0 {
                match seq.next_element::<serde::de::IgnoredAny>()? {
                    Some(_) => {
                        rows.count += 1;
                        rows.over_budget = true;
                    }
                    None => break,
                }
                continue;
            }
            match seq.next_element::<Row>()? {
                Some(row) => {
                    rows.over_budget |= row.over_budget;
                    rows.kept.push(row.cells);
                    rows.count += 1;
                }
                None => break,
            }
        }
        Ok(rows)
    }
}

/// One row as read: its cells while the budget lasts.
struct Row {
    cells: Vec<InCell>,
    over_budget: bool,
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Row, D::Error> {
        deserializer.deserialize_seq(RowVisitor)
    }
}

struct RowVisitor;

impl<'de> serde::de::Visitor<'de> for RowVisitor {
    type Value = Row;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a row: a list of values, one per column")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Row, A::Error> {
        let mut row = Row { cells: Vec::new(), over_budget: false };
        loop {
            let left = CELLS_LEFT.get();
            if left == 0 {
                match seq.next_element::<serde::de::IgnoredAny>()? {
                    Some(_) => row.over_budget = true,
                    None => break,
                }
                continue;
            }
            match seq.next_element::<InCell>()? {
                Some(cell) => {
                    CELLS_LEFT.set(left - 1);
                    row.cells.push(cell);
                }
                None => break,
            }
        }
        Ok(row)
    }
}

impl<'de> Deserialize<'de> for InCell {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<InCell, D::Error> {
        deserializer.deserialize_any(InCellVisitor)
    }
}

struct InCellVisitor;

impl<'de> serde::de::Visitor<'de> for InCellVisitor {
    type Value = InCell;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a cell's value")
    }

    fn visit_unit<E>(self) -> Result<InCell, E> {
        Ok(InCell::Null)
    }

    fn visit_none<E>(self) -> Result<InCell, E> {
        Ok(InCell::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<InCell, E> {
        Ok(InCell::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<InCell, E> {
        Ok(InCell::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<InCell, E> {
        Ok(InCell::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<InCell, E> {
        serde_json::Number::from_f64(n).map(InCell::Number).ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, text: &str) -> Result<InCell, E> {
        Ok(InCell::Text(text.to_string()))
    }

    fn visit_string<E>(self, text: String) -> Result<InCell, E> {
        Ok(InCell::Text(text))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<InCell, A::Error> {
        // Not a cell's value: its content is skipped, only its kind is said.
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(InCell::List)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<InCell, A::Error> {
        while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
        Ok(InCell::Object)
    }
}

/// One column.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// The header text.
    #[schemars(length(max = 255))]
    pub name: String,
    /// What the column holds, which decides the values it takes and how Excel shows them.
    #[serde(rename = "type")]
    pub kind: ColumnType,
    /// For `currency`: the ISO 4217 code (`USD`, `EUR`, `GBP`, `JPY`…). Default `USD`.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub currency: Option<String>,
    /// An Excel number format that replaces the type's own (`0.000`, `dd/mm/yyyy`); not for `string` or
    /// `boolean`.
    #[serde(default)]
    #[schemars(length(min = 1, max = 255))]
    pub format: Option<String>,
    /// Column width in characters (1 to 255). Default: fitted to the header and the values.
    #[serde(default)]
    #[schemars(range(min = 1.0, max = 255.0))]
    pub width: Option<f64>,
}

/// A column's type and the JSON values it takes (null is an empty cell in every type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// Text (a JSON string), never read as a formula.
    String,
    /// A JSON number, shown as typed.
    Number,
    /// A JSON integer within ±2^53, shown without decimals.
    Integer,
    /// `YYYY-MM-DD`, shown as such.
    Date,
    /// `YYYY-MM-DDTHH:MM[:SS[.fff]]` without a UTC offset (Excel has no time zones).
    Datetime,
    /// true or false.
    Boolean,
    /// A JSON number, shown with the column's currency and two decimals (none for JPY and KRW).
    Currency,
    /// A JSON number where 1 is 100%, shown as a percentage with two decimals.
    Percent,
}

/// A checked call: the cells as they will be written.
pub struct XlsxBuild {
    sheets: Vec<Sheet>,
    filename: String,
    output: OutputMode,
}

struct Sheet {
    name: String,
    columns: Vec<Column>,
    rows: Vec<Vec<Cell>>,
    freeze_header: bool,
    autofilter: bool,
}

struct Column {
    name: String,
    format: Option<String>,
    width: Option<f64>,
}

enum Cell {
    Empty,
    Text(String),
    Number(f64),
    Bool(bool),
    When(ExcelDateTime, usize),
}

/// The route.
pub struct XlsxBuildRoute;

impl Route for XlsxBuildRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::XLSX];
    type Input = XlsxBuildInput;
    type Prepared = XlsxBuild;
    type Output = NoJson;

    // The rows keep at most the cell limit and only count the rest (`Rows`): the
    // reading bounds itself, and a body over the limit is told which sheet is at fault.
    const MAX_BODY_VALUES: u64 = u64::MAX;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/docs/xlsx-build",
        operation: "build_xlsx",
        family: Family::Docs,
        summary: "Build an Excel workbook",
        description: "Writes an .xlsx from sheets of typed columns (string, number, integer, date, datetime, \
            boolean, currency, percent) and rows of JSON values: each type with its number format, a bold frozen \
            header row with filter buttons, columns fitted to their contents. A value that does not fit its \
            column's type is 422 naming it (`/sheets/0/rows/3/2`). Text is always text, never a formula. At most \
            2,000,000 cells.",
        base_price: Price::micros(3_000),
        price_rule: BUILDER_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: XlsxBuildInput, _ctx: &Context) -> Result<XlsxBuild, EngineError> {
        check(input)
    }

    fn quote(_: &XlsxBuild) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: XlsxBuild, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let bytes = write(&call.sheets)?;
            let file = OutFile { filename: call.filename, media_type: media::XLSX.into(), bytes };
            Ok(Reply::Files(FileSet::single(file, call.output)))
        })
        .await
    }
}

fn check(input: XlsxBuildInput) -> Result<XlsxBuild, EngineError> {
    if input.sheets.is_empty() || input.sheets.len() > MAX_SHEETS {
        return Err(EngineError::invalid("/sheets", format!("/sheets: give 1 to {MAX_SHEETS} sheets")));
    }
    let filename = chosen_name(input.filename.as_deref(), "workbook", "xlsx");
    let mut cells = 0u64;
    let mut names: Vec<String> = Vec::new();
    let mut sheets = Vec::with_capacity(input.sheets.len());
    for (s, spec) in input.sheets.into_iter().enumerate() {
        let at = format!("/sheets/{s}");
        check_sheet_name(&spec.name, &format!("{at}/name"))?;
        let folded = spec.name.to_lowercase();
        if names.contains(&folded) {
            // Two sheets of one request contradict each other: a rule across items that no
            // schema of one sheet can state.
            return Err(EngineError::invalid_with(
                "inconsistent_fields",
                format!("{at}/name"),
                format!("{at}/name: another sheet is already named {:?} (Excel ignores letter case)", spec.name),
            ));
        }
        names.push(folded);
        if spec.columns.is_empty() || spec.columns.len() > MAX_COLUMNS {
            return Err(EngineError::invalid(
                format!("{at}/columns"),
                format!("{at}/columns: give 1 to {MAX_COLUMNS} columns"),
            ));
        }
        if spec.rows.over_budget {
            // Values past the budget were read and not kept: the workbook is over the limit.
            return Err(too_many_cells(&at));
        }
        if spec.rows.count > MAX_ROWS {
            return Err(EngineError::invalid(
                format!("{at}/rows"),
                format!("{at}/rows: a sheet holds at most {MAX_ROWS} rows below its header"),
            ));
        }
        cells += (spec.rows.count as u64 + 1) * spec.columns.len() as u64;
        if cells > MAX_CELLS {
            return Err(too_many_cells(&at));
        }
        let mut columns = Vec::with_capacity(spec.columns.len());
        let mut kinds = Vec::with_capacity(spec.columns.len());
        for (c, column) in spec.columns.iter().enumerate() {
            let at = format!("{at}/columns/{c}");
            if column.name.chars().count() > 255 {
                return Err(EngineError::invalid(format!("{at}/name"), format!("{at}/name: at most 255 characters")));
            }
            if column.currency.is_some() && column.kind != ColumnType::Currency {
                return Err(EngineError::invalid_with(
                    "option_not_applicable",
                    format!("{at}/currency"),
                    format!("{at}/currency: only a `currency` column takes a currency"),
                ));
            }
            if let Some(width) = column.width
                && !(1.0..=255.0).contains(&width)
            {
                return Err(EngineError::invalid(format!("{at}/width"), format!("{at}/width: 1 to 255 characters")));
            }
            let format = match (&column.format, column.kind) {
                (Some(_), ColumnType::String | ColumnType::Boolean) => {
                    return Err(EngineError::invalid(
                        format!("{at}/format"),
                        format!("{at}/format: a number format applies to numbers and dates, not to this column's type"),
                    ));
                }
                (Some(f), _) if f.is_empty() || f.chars().count() > 255 => {
                    return Err(EngineError::invalid(
                        format!("{at}/format"),
                        format!("{at}/format: 1 to 255 characters"),
                    ));
                }
                (Some(f), _) => Some(f.clone()),
                (None, kind) => default_format(kind, column.currency.as_deref(), &format!("{at}/currency"))?,
            };
            columns.push(Column { name: column.name.clone(), format, width: column.width });
            kinds.push(column.kind);
        }
        let mut rows = Vec::with_capacity(spec.rows.kept.len());
        for (r, row) in spec.rows.kept.into_iter().enumerate() {
            let at = format!("{at}/rows/{r}");
            if row.len() != kinds.len() {
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    at.clone(),
                    format!(
                        "{at}: {} values for {} columns; give one per column (null for an empty cell)",
                        row.len(),
                        kinds.len()
                    ),
                ));
            }
            let cells = row
                .into_iter()
                .zip(&kinds)
                .enumerate()
                .map(|(c, (value, kind))| cell(value.into_value(), *kind, &format!("{at}/{c}")))
                .collect::<Result<Vec<_>, _>>()?;
            rows.push(cells);
        }
        sheets.push(Sheet {
            name: spec.name,
            columns,
            rows,
            freeze_header: spec.freeze_header,
            autofilter: spec.autofilter,
        });
    }
    Ok(XlsxBuild { sheets, filename, output: input.output })
}

/// The sheet at `at` takes the workbook past [`MAX_CELLS`].
fn too_many_cells(at: &str) -> EngineError {
    EngineError::too_large(
        "too_many_cells",
        Some(format!("{at}/rows")),
        format!("{at}/rows: the workbook would hold more than {MAX_CELLS} cells; split it across calls"),
    )
}

/// Excel's rules for sheet names.
fn check_sheet_name(name: &str, at: &str) -> Result<(), EngineError> {
    let count = name.chars().count();
    let why = if count == 0 || count > 31 {
        Some("1 to 31 characters".to_string())
    } else if let Some(c) = name.chars().find(|c| "[]:*?/\\".contains(*c) || c.is_control()) {
        Some(format!("{c:?} is not allowed in a sheet name"))
    } else if name.starts_with('\'') || name.ends_with('\'') {
        Some("a sheet name cannot start or end with '".to_string())
    } else if name.eq_ignore_ascii_case("history") {
        Some("Excel reserves the name History".to_string())
    } else {
        None
    };
    match why {
        Some(why) => Err(EngineError::invalid(at, format!("{at}: {why}"))),
        None => Ok(()),
    }
}

/// The number format a type gets when the column gives none.
fn default_format(kind: ColumnType, currency: Option<&str>, at: &str) -> Result<Option<String>, EngineError> {
    Ok(Some(match kind {
        ColumnType::String | ColumnType::Boolean | ColumnType::Number => return Ok(None),
        ColumnType::Integer => "0".into(),
        ColumnType::Date => "yyyy-mm-dd".into(),
        ColumnType::Datetime => "yyyy-mm-dd hh:mm:ss".into(),
        ColumnType::Percent => "0.00%".into(),
        ColumnType::Currency => currency_format(currency.unwrap_or("USD"), at)?,
    }))
}

/// A currency's number format: its symbol and decimals, negatives with a minus sign.
fn currency_format(code: &str, at: &str) -> Result<String, EngineError> {
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(EngineError::invalid(
            at,
            format!("{at}: {code:?} is not an ISO 4217 code (three capital letters, such as USD or EUR)"),
        ));
    }
    let (symbol, decimals, before) = match code {
        "USD" => ("$", 2, true),
        "EUR" => ("€", 2, false),
        "GBP" => ("£", 2, true),
        "JPY" => ("¥", 0, true),
        "CNY" => ("CN¥", 2, true),
        "INR" => ("₹", 2, true),
        "KRW" => ("₩", 0, true),
        "CHF" => ("CHF ", 2, true),
        "CAD" => ("CA$", 2, true),
        "AUD" => ("A$", 2, true),
        _ => ("", 2, true),
    };
    let number = if decimals == 0 { "#,##0".to_string() } else { format!("#,##0.{}", "0".repeat(decimals)) };
    Ok(match (symbol, before) {
        ("", _) => format!("{number} \"{code}\""),
        (symbol, true) => format!("\"{symbol}\"{number}"),
        (symbol, false) => format!("{number} \"{symbol}\""),
    })
}

/// A JSON value as a cell of `kind`, or a 422 naming `at`: `inconsistent_fields`, since a
/// value is wrong only for its column's type (a rule across fields no schema of the row states).
fn cell(value: Value, kind: ColumnType, at: &str) -> Result<Cell, EngineError> {
    let wrong = |want: &str| {
        let got = match &value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "text",
            Value::Array(_) => "a list",
            Value::Object(_) => "an object",
        };
        EngineError::invalid_with(
            "inconsistent_fields",
            at,
            format!("{at}: a {} column takes {want} or null, not {got}", type_name(kind)),
        )
    };
    if value.is_null() {
        return Ok(Cell::Empty);
    }
    Ok(match kind {
        ColumnType::String => {
            let Value::String(text) = value else { return Err(wrong("text")) };
            if text.chars().count() > MAX_TEXT_CHARS {
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    at,
                    format!("{at}: a cell holds at most {MAX_TEXT_CHARS} characters"),
                ));
            }
            if text.is_empty() { Cell::Empty } else { Cell::Text(text) }
        }
        ColumnType::Number | ColumnType::Currency | ColumnType::Percent => {
            let Some(n) = value.as_f64() else { return Err(wrong("a number")) };
            Cell::Number(n)
        }
        ColumnType::Integer => {
            let n = match (value.as_i64(), value.as_u64()) {
                (Some(n), _) => n,
                (None, Some(_)) => MAX_EXACT_INTEGER + 1,
                _ => return Err(wrong("a whole number")),
            };
            if n.unsigned_abs() > MAX_EXACT_INTEGER as u64 {
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    at,
                    format!(
                        "{at}: {value} is beyond ±2^53, past which Excel (which stores doubles) cannot keep it exact; use a string column"
                    ),
                ));
            }
            Cell::Number(n as f64)
        }
        ColumnType::Boolean => {
            let Value::Bool(b) = value else { return Err(wrong("true or false")) };
            Cell::Bool(b)
        }
        ColumnType::Date => {
            let Value::String(text) = &value else { return Err(wrong("a date as YYYY-MM-DD text")) };
            let date = Date::parse(text, &Iso8601::DATE).map_err(|_| {
                EngineError::invalid_with(
                    "inconsistent_fields",
                    at,
                    format!("{at}: {text:?} is not a date as YYYY-MM-DD"),
                )
            })?;
            Cell::When(excel_date(date, None, at)?, 10)
        }
        ColumnType::Datetime => {
            let Value::String(text) = &value else { return Err(wrong("a date and time as YYYY-MM-DDTHH:MM:SS text")) };
            let text = text.replacen(' ', "T", 1);
            let time_part = text.split_once('T').map_or("", |(_, t)| t);
            if time_part.ends_with(['Z', 'z']) || time_part.contains(['+', '-']) {
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    at,
                    format!(
                        "{at}: {text:?} has a UTC offset; Excel has no time zones, give the local time without one"
                    ),
                ));
            }
            let when = PrimitiveDateTime::parse(&text, &Iso8601::DEFAULT).map_err(|_| {
                EngineError::invalid_with(
                    "inconsistent_fields",
                    at,
                    format!("{at}: {text:?} is not a date and time as YYYY-MM-DDTHH:MM[:SS[.fff]]"),
                )
            })?;
            Cell::When(excel_date(when.date(), Some(when.time()), at)?, 19)
        }
    })
}

fn excel_date(date: Date, time: Option<time::Time>, at: &str) -> Result<ExcelDateTime, EngineError> {
    let out_of_range = || {
        EngineError::invalid(at, format!("{at}: Excel's dates run from 1900-01-01 to 9999-12-31; {date} is outside"))
    };
    if !(1900..=9999).contains(&date.year()) {
        return Err(out_of_range());
    }
    let day =
        ExcelDateTime::from_ymd(date.year() as u16, date.month() as u8, date.day()).map_err(|_| out_of_range())?;
    match time {
        None => Ok(day),
        Some(t) => day
            .and_hms_milli(t.hour() as u16, t.minute(), t.second(), t.millisecond())
            .map_err(|e| EngineError::invalid(at, format!("{at}: {e}"))),
    }
}

fn type_name(kind: ColumnType) -> &'static str {
    match kind {
        ColumnType::String => "string",
        ColumnType::Number => "number",
        ColumnType::Integer => "integer",
        ColumnType::Date => "date",
        ColumnType::Datetime => "datetime",
        ColumnType::Boolean => "boolean",
        ColumnType::Currency => "currency",
        ColumnType::Percent => "percent",
    }
}

fn write(sheets: &[Sheet]) -> Result<Vec<u8>, EngineError> {
    let failed = |e: rust_xlsxwriter::XlsxError| EngineError::internal(format!("writing the workbook: {e}"));
    let mut book = Workbook::new();
    let header =
        Format::new().set_bold().set_background_color(Color::RGB(0xD9E1F2)).set_border_bottom(FormatBorder::Thin);
    for sheet in sheets {
        let worksheet = book.add_worksheet();
        worksheet.set_name(&sheet.name).map_err(failed)?;
        write_sheet(worksheet, sheet, &header).map_err(failed)?;
    }
    book.save_to_buffer().map_err(failed)
}

fn write_sheet(worksheet: &mut Worksheet, sheet: &Sheet, header: &Format) -> Result<(), rust_xlsxwriter::XlsxError> {
    let plain = Format::new();
    let formats: Vec<Format> = sheet
        .columns
        .iter()
        .map(|c| c.format.as_ref().map_or_else(Format::new, |f| Format::new().set_num_format(f)))
        .collect();
    // Widths in characters, from the header and each value as Excel would show it.
    let mut widths: Vec<usize> = sheet.columns.iter().map(|c| c.name.chars().count() + 2).collect();
    for (c, column) in sheet.columns.iter().enumerate() {
        worksheet.write_string_with_format(0, c as u16, &column.name, header)?;
    }
    for (r, row) in sheet.rows.iter().enumerate() {
        let r = r as u32 + 1;
        for (c, cell) in row.iter().enumerate() {
            let (col, format) = (c as u16, &formats[c]);
            let shown = match cell {
                Cell::Empty => 0,
                Cell::Text(text) => {
                    worksheet.write_string_with_format(r, col, text, &plain)?;
                    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
                }
                Cell::Number(n) => {
                    worksheet.write_number_with_format(r, col, *n, format)?;
                    // A grouped, signed number with its symbol and decimals.
                    number_text(*n).len() + 6
                }
                Cell::Bool(b) => {
                    worksheet.write_boolean_with_format(r, col, *b, format)?;
                    5
                }
                Cell::When(when, chars) => {
                    worksheet.write_datetime_with_format(r, col, when, format)?;
                    *chars
                }
            };
            widths[c] = widths[c].max(shown + 1);
        }
    }
    for (c, column) in sheet.columns.iter().enumerate() {
        let width = column.width.unwrap_or_else(|| widths[c].clamp(6, 60) as f64);
        worksheet.set_column_width(c as u16, width)?;
    }
    if sheet.freeze_header {
        worksheet.set_freeze_panes(1, 0)?;
    }
    if sheet.autofilter {
        worksheet.autofilter(0, 0, sheet.rows.len() as u32, sheet.columns.len() as u16 - 1)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn build(body: Value) -> Result<XlsxBuild, EngineError> {
        check(serde_json::from_value(body).unwrap())
    }

    /// A body of `sheets` sheets, each `rows` rows of `columns` numbers.
    fn numbers(sheets: usize, rows: usize, columns: usize) -> Vec<u8> {
        let row = format!("[{}]", vec!["1"; columns].join(","));
        let rows = vec![row.as_str(); rows].join(",");
        let columns = vec![r#"{"name": "n", "type": "number"}"#; columns].join(",");
        let sheet = |i: usize| format!(r#"{{"name": "s{i}", "columns": [{columns}], "rows": [{rows}]}}"#);
        format!(r#"{{"sheets": [{}]}}"#, (0..sheets).map(sheet).collect::<Vec<_>>().join(",")).into_bytes()
    }

    #[test]
    fn rows_past_the_cell_limit_are_counted_not_kept() {
        // 3 million cells in one sheet: read, a little over the limit kept, the sheet named.
        let body = numbers(1, 1_000_000, 3);
        let input: XlsxBuildInput = crate::catalog::parse_body(&body).unwrap();
        let rows = &input.sheets[0].rows;
        assert_eq!(rows.count, 1_000_000);
        assert!(rows.over_budget);
        assert_eq!(rows.kept.iter().map(Vec::len).sum::<usize>() as u64, MAX_CELLS + 1);
        let refused = check(input).map(|_| ()).unwrap_err();
        assert_eq!((refused.code.as_ref(), refused.field.as_deref()), ("too_many_cells", Some("/sheets/0/rows")));

        // The budget is the body's, across its sheets: the second sheet is the one past it.
        let input: XlsxBuildInput = crate::catalog::parse_body(&numbers(2, 600_000, 2)).unwrap();
        assert!(!input.sheets[0].rows.over_budget && input.sheets[1].rows.over_budget);
        let refused = check(input).map(|_| ()).unwrap_err();
        assert_eq!(refused.field.as_deref(), Some("/sheets/1/rows"));

        // And it starts afresh for the next body.
        let input: XlsxBuildInput = crate::catalog::parse_body(&numbers(1, 10, 1)).unwrap();
        assert!(check(input).is_ok());
    }

    #[test]
    fn a_list_or_object_in_a_cell_is_named_without_its_content() {
        let body = json!({"sheets": [{"name": "s", "columns": [{"name": "n", "type": "number"}],
            "rows": [[[1, 2, 3]], [{"a": 1}]]}]});
        let input: XlsxBuildInput = crate::catalog::parse_body(body.to_string().as_bytes()).unwrap();
        let refused = check(input).map(|_| ()).unwrap_err();
        assert_eq!(refused.field.as_deref(), Some("/sheets/0/rows/0/0"));
        assert!(refused.message.ends_with("not a list"), "{}", refused.message);
    }

    #[test]
    fn a_value_that_does_not_fit_its_column_is_named() {
        let columns =
            json!([{"name": "n", "type": "string"}, {"name": "q", "type": "integer"}, {"name": "d", "type": "date"}]);
        let cases = [
            (json!([["a", 1, "2024-01-31"], ["b", 1.5, null]]), "/sheets/0/rows/1/1", "whole number"),
            (json!([["a", 1, "31/01/2024"]]), "/sheets/0/rows/0/2", "YYYY-MM-DD"),
            (json!([[1, 1, null]]), "/sheets/0/rows/0/0", "takes text or null, not a number"),
            (json!([["a", 1]]), "/sheets/0/rows/0", "2 values for 3 columns"),
            (json!([["a", 9_007_199_254_740_993u64, null]]), "/sheets/0/rows/0/1", "2^53"),
            (json!([["a", null, "1899-12-31"]]), "/sheets/0/rows/0/2", "1900-01-01"),
        ];
        for (rows, field, words) in cases {
            let body = json!({"sheets": [{"name": "S", "columns": columns, "rows": rows}]});
            let Err(error) = build(body) else { panic!("{rows} accepted") };
            assert_eq!(error.field.as_deref(), Some(field), "{rows}: {error:?}");
            assert!(error.message.contains(words), "{rows}: {}", error.message);
        }
    }

    #[test]
    fn sheet_names_follow_excels_rules() {
        // Control characters: C0, DEL and C1 (what the published pattern leaves out too).
        for (name, words) in [
            ("", "1 to 31"),
            ("a/b", "not allowed"),
            ("'q", "start or end"),
            (&"x".repeat(32), "1 to 31"),
            ("a\u{1}", "not allowed"),
            ("a\u{7f}", "not allowed"),
            ("a\u{9e}", "not allowed"),
        ] {
            let body = json!({"sheets": [{"name": name, "columns": [{"name": "a", "type": "string"}]}]});
            let Err(error) = build(body) else { panic!("{name:?} accepted") };
            assert_eq!(error.field.as_deref(), Some("/sheets/0/name"));
            assert!(error.message.contains(words), "{name:?}: {}", error.message);
        }
        let twice = json!({"sheets": [{"name": "Data", "columns": [{"name": "a", "type": "string"}]},
            {"name": "DATA", "columns": [{"name": "a", "type": "string"}]}]});
        let error = build(twice).err().unwrap();
        assert_eq!(error.field.as_deref(), Some("/sheets/1/name"));
    }

    #[test]
    fn currencies_get_their_symbol_and_decimals() {
        assert_eq!(currency_format("USD", "/c").unwrap(), "\"$\"#,##0.00");
        assert_eq!(currency_format("EUR", "/c").unwrap(), "#,##0.00 \"€\"");
        assert_eq!(currency_format("JPY", "/c").unwrap(), "\"¥\"#,##0");
        assert_eq!(currency_format("SEK", "/c").unwrap(), "#,##0.00 \"SEK\"");
        assert!(currency_format("usd", "/c").is_err());
    }

    #[test]
    fn datetimes_with_an_offset_are_refused_saying_why() {
        let body = json!({"sheets": [{"name": "S", "columns": [{"name": "t", "type": "datetime"}],
            "rows": [["2024-01-31T10:00:00Z"]]}]});
        let error = build(body).err().unwrap();
        assert!(error.message.contains("time zones"), "{}", error.message);
        let body = json!({"sheets": [{"name": "S", "columns": [{"name": "t", "type": "datetime"}],
            "rows": [["2024-01-31 10:00"], ["2024-01-31T10:00:05.250"]]}]});
        assert!(build(body).is_ok());
    }
}
