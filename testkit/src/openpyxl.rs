//! openpyxl's reading of a workbook's values in the shape `/v1/docs/xlsx-to-json` answers
//! with `header_row: 0`, for the tests and the convert bench to compare against.

/// A Python script: `python -c OPENPYXL_VALUES book.xlsx [out.json]` writes, for every
/// worksheet, its name and rows of values (formulas as their saved results, dates ISO 8601,
/// merged areas repeated over the data's extent, empty rows left out, columns from the first
/// to the last used one) as JSON to `out.json`, or to standard output.
pub const OPENPYXL_VALUES: &str = include_str!("openpyxl_values.py");
