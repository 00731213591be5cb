//! Spreadsheets: `/v1/docs/xlsx-build` read back by openpyxl with every value, type and
//! format as sent; `/v1/docs/xlsx-to-json` against openpyxl's reading of the corpus
//! workbooks, cell by cell; bombs and wrong files refused.

use crate::common;

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

use common::route::{call, call_files};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::b64;
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::openpyxl::OPENPYXL_VALUES;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

/// Runs a Python snippet on `file` (its path is `sys.argv[1]`) and parses what it prints as JSON.
fn python_json(script: &str, file: &Path) -> Value {
    serde_json::from_str(&run_python(script, &[file])).expect("python printed JSON")
}

/// What openpyxl reads from a workbook: per sheet its cells with type and number format,
/// the frozen pane, the filter range and which header cells are bold.
const OPENPYXL_DUMP: &str = r#"
import json, sys, datetime, openpyxl
wb = openpyxl.load_workbook(sys.argv[1])
def val(v):
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    return v
out = []
for ws in wb.worksheets:
    rows = [[{"value": val(c.value), "type": c.data_type, "is_date": c.is_date, "format": c.number_format}
             for c in row] for row in ws.iter_rows()]
    out.append({"name": ws.title, "freeze": ws.freeze_panes, "filter": ws.auto_filter.ref,
                "bold": [c.font.b for c in ws[1]] if ws.max_row >= 1 else [],
                "widths": {k: d.width for k, d in ws.column_dimensions.items()}, "rows": rows})
print(json.dumps(out))
"#;

#[tokio::test]
async fn built_workbooks_read_back_in_openpyxl_with_every_value_and_type() {
    let ctx = Context::new();
    let columns = json!([
        {"name": "Item", "type": "string"},
        {"name": "Weight", "type": "number"},
        {"name": "Count", "type": "integer"},
        {"name": "Shipped", "type": "date"},
        {"name": "Scanned", "type": "datetime"},
        {"name": "Paid", "type": "boolean"},
        {"name": "Price", "type": "currency", "currency": "EUR"},
        {"name": "Discount", "type": "percent"},
        {"name": "Ratio", "type": "number", "format": "0.000"},
    ]);
    let rows = json!([
        ["Bolts", 1.25, 400, "2024-02-29", "2024-02-29T17:45:30", true, 19.99, 0.125, 0.5],
        ["=HYPERLINK(\"http://evil\")", -0.1, -7, "1900-03-01", "2024-01-01 00:00", false, -3.5, 1, 1],
        ["Nuts", null, 9_007_199_254_740_992u64, null, null, null, 0, 0, null],
    ]);
    let body = json!({"sheets": [
        {"name": "Parts", "columns": columns, "rows": rows},
        {"name": "Empty", "columns": [{"name": "Only header", "type": "string"}], "freeze_header": false, "autofilter": false},
    ], "filename": "parts"});
    let files = call_files(&ctx, "/v1/docs/xlsx-build", body).await.unwrap();
    let file = files.into_single_file().unwrap();
    assert_eq!(file.filename, "parts.xlsx");
    assert_eq!(file.media_type, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("parts.xlsx");
    std::fs::write(&path, &file.bytes).unwrap();
    let read = python_json(OPENPYXL_DUMP, &path);

    let parts = &read[0];
    assert_eq!(parts["name"], "Parts");
    assert_eq!(parts["freeze"], "A2", "the header row stays in view");
    assert_eq!(parts["filter"], "A1:I4");
    assert!(parts["bold"].as_array().unwrap().iter().all(|b| b == true), "a bold header: {}", parts["bold"]);
    let header: Vec<&Value> = parts["rows"][0].as_array().unwrap().iter().map(|c| &c["value"]).collect();
    assert_eq!(header, ["Item", "Weight", "Count", "Shipped", "Scanned", "Paid", "Price", "Discount", "Ratio"]);
    let cell = |r: usize, c: usize| &parts["rows"][r][c];
    // Text stays text, a formula-looking one included.
    assert_eq!((&cell(1, 0)["value"], &cell(1, 0)["type"]), (&json!("Bolts"), &json!("s")));
    assert_eq!((&cell(2, 0)["value"], &cell(2, 0)["type"]), (&json!("=HYPERLINK(\"http://evil\")"), &json!("s")));
    // Numbers exactly as sent, with their type's format.
    assert_eq!((&cell(1, 1)["value"], &cell(1, 1)["format"]), (&json!(1.25), &json!("General")));
    assert_eq!(cell(2, 1)["value"], json!(-0.1));
    assert_eq!((&cell(1, 2)["value"], &cell(1, 2)["format"]), (&json!(400), &json!("0")));
    assert_eq!(cell(3, 2)["value"], json!(9_007_199_254_740_992u64));
    assert_eq!((&cell(1, 3)["value"], &cell(1, 3)["is_date"]), (&json!("2024-02-29T00:00:00"), &json!(true)));
    assert_eq!(cell(1, 3)["format"], "yyyy-mm-dd");
    assert_eq!(cell(2, 3)["value"], "1900-03-01T00:00:00");
    assert_eq!(
        (&cell(1, 4)["value"], &cell(1, 4)["format"]),
        (&json!("2024-02-29T17:45:30"), &json!("yyyy-mm-dd hh:mm:ss"))
    );
    assert_eq!(cell(2, 4)["value"], "2024-01-01T00:00:00");
    assert_eq!((&cell(1, 5)["value"], &cell(1, 5)["type"]), (&json!(true), &json!("b")));
    assert_eq!(cell(2, 5)["value"], false);
    assert_eq!((&cell(1, 6)["value"], &cell(1, 6)["format"]), (&json!(19.99), &json!("#,##0.00 \"€\"")));
    assert_eq!(cell(2, 6)["value"], json!(-3.5));
    assert_eq!((&cell(1, 7)["value"], &cell(1, 7)["format"]), (&json!(0.125), &json!("0.00%")));
    assert_eq!((&cell(1, 8)["value"], &cell(1, 8)["format"]), (&json!(0.5), &json!("0.000")));
    // Nulls are empty cells.
    for c in [1, 3, 4, 5, 8] {
        assert_eq!(cell(3, c)["value"], Value::Null, "row 3, column {c}");
    }
    // Columns are wide enough for their header and values, within bounds.
    for (letter, width) in parts["widths"].as_object().unwrap() {
        let width = width.as_f64().unwrap();
        assert!((6.0..=61.0).contains(&width), "column {letter} is {width} wide");
    }
    assert!(parts["widths"]["A"].as_f64().unwrap() >= 25.0, "the long text fits: {}", parts["widths"]);

    let empty = &read[1];
    assert_eq!((&empty["name"], &empty["freeze"], &empty["filter"]), (&json!("Empty"), &Value::Null, &Value::Null));
    assert_eq!(empty["rows"].as_array().unwrap().len(), 1, "the header alone");

    // And back through xlsx-to-json: the same values.
    let body = json!({"file": {"data": b64(&file.bytes), "filename": "parts.xlsx"}, "sheets": ["Parts"]});
    let answer = call(&ctx, "/v1/docs/xlsx-to-json", body).await.unwrap();
    let sheet = &answer["sheets"][0];
    assert_eq!(sheet["row_count"], 3);
    assert_eq!(
        sheet["rows"][0],
        json!({"Item": "Bolts", "Weight": 1.25, "Count": 400, "Shipped": "2024-02-29", "Scanned": "2024-02-29T17:45:30",
            "Paid": true, "Price": 19.99, "Discount": 0.125, "Ratio": 0.5})
    );
    assert_eq!(sheet["rows"][2]["Count"], json!(9_007_199_254_740_992u64));
    assert_eq!(sheet["rows"][1]["Scanned"], "2024-01-01");
}

fn corpus_workbooks() -> Vec<PathBuf> {
    let mut books = Vec::new();
    for dir in ["docling/xlsx/sources", "office/xlsx"] {
        for entry in std::fs::read_dir(corpus().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "xlsx") {
                books.push(path);
            }
        }
    }
    books.sort();
    books
}

fn same_value(ours: &Value, theirs: &Value) -> bool {
    match (ours.as_f64(), theirs.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => ours == theirs,
    }
}

#[tokio::test]
async fn corpus_workbooks_read_as_openpyxl_reads_them() {
    let ctx = Context::new();
    let books = corpus_workbooks();
    assert!(books.len() >= 8, "{books:?}");
    let mut compared = 0usize;
    for path in &books {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let body = json!({"file": {"data": b64(&bytes), "filename": name}, "header_row": 0});
        let answer = call(&ctx, "/v1/docs/xlsx-to-json", body).await.unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let expected = python_json(OPENPYXL_VALUES, path);
        let ours = answer["sheets"].as_array().unwrap();
        let theirs = expected.as_array().unwrap();
        let names = |sheets: &[Value]| sheets.iter().map(|s| s["name"].clone()).collect::<Vec<_>>();
        assert_eq!(names(ours), names(theirs), "{name}: the worksheets");
        for (sheet, want) in ours.iter().zip(theirs) {
            let rows = sheet["rows"].as_array().unwrap();
            let want_rows = want["rows"].as_array().unwrap();
            assert_eq!(rows.len(), want_rows.len(), "{name} / {}: rows", sheet["name"]);
            for (i, (row, want_row)) in rows.iter().zip(want_rows).enumerate() {
                let values: Vec<&Value> = row.as_object().unwrap().values().collect();
                let want_values = want_row.as_array().unwrap();
                assert_eq!(values.len(), want_values.len(), "{name} / {} row {i}: {row} vs {want_row}", sheet["name"]);
                for (ours, theirs) in values.iter().zip(want_values) {
                    assert!(same_value(ours, theirs), "{name} / {} row {i}: {ours} vs {theirs}", sheet["name"]);
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 500, "{compared} cells compared");
}

#[tokio::test]
async fn chart_sheets_are_listed_apart_and_merged_areas_repeat() {
    let ctx = Context::new();
    // A worksheet and a chart sheet plotting it.
    let mut book = rust_xlsxwriter::Workbook::new();
    let data = book.add_worksheet().set_name("Data").unwrap();
    for (row, value) in [3.0, 5.0, 4.0].into_iter().enumerate() {
        data.write_number(row as u32, 0, value).unwrap();
    }
    let mut chart = rust_xlsxwriter::Chart::new_column();
    chart.add_series().set_values("Data!$A$1:$A$3");
    book.add_chartsheet().set_name("Plot").unwrap().insert_chart(0, 0, &chart).unwrap();
    let chart = book.save_to_buffer().unwrap();
    let file = json!({"data": b64(&chart), "filename": "chart.xlsx"});
    let answer = call(&ctx, "/v1/docs/xlsx-to-json", json!({"file": file})).await.unwrap();
    let skipped = answer["skipped_sheets"].as_array().unwrap();
    assert!(!skipped.is_empty() && skipped.iter().all(|s| s["kind"] == "chart sheet"), "{answer:#}");
    let chart_name = skipped[0]["name"].as_str().unwrap();
    let error = err(&ctx, json!({"file": file, "sheets": [chart_name]})).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("unknown_sheet", Some("/sheets/0")));
    assert!(error.message.contains("chart sheet"), "{}", error.message);
    let error = err(&ctx, json!({"file": file, "sheets": ["Nope"]})).await;
    assert!(error.message.contains("its worksheets are"), "{}", error.message);

    // A title merged over the table, and a region merged down two rows.
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    let plain = rust_xlsxwriter::Format::new();
    sheet.merge_range(0, 0, 0, 2, "Sales", &plain).unwrap();
    for (col, text) in ["Region", "Q1", "Q2"].into_iter().enumerate() {
        sheet.write_string(1, col as u16, text).unwrap();
    }
    sheet.merge_range(2, 0, 3, 0, "North", &plain).unwrap();
    for (row, col, value) in [(2, 1, 1.0), (2, 2, 2.0), (3, 1, 3.0), (3, 2, 4.0)] {
        sheet.write_number(row, col, value).unwrap();
    }
    let merged = json!({"data": b64(&book.save_to_buffer().unwrap())});
    let answer = call(&ctx, "/v1/docs/xlsx-to-json", json!({"file": merged, "header_row": 2})).await.unwrap();
    assert_eq!(
        answer["sheets"][0]["rows"],
        json!([{"Region": "North", "Q1": 1, "Q2": 2}, {"Region": "North", "Q1": 3, "Q2": 4}])
    );
    let answer = call(&ctx, "/v1/docs/xlsx-to-json", json!({"file": merged})).await.unwrap();
    assert_eq!(answer["sheets"][0]["columns"], json!(["Sales", "Sales_2", "Sales_3"]));
    assert_eq!(answer["sheets"][0]["range"], "A1:C4");
}

#[tokio::test]
async fn csv_is_one_file_per_sheet_with_formulas_guarded() {
    let ctx = Context::new();
    let body = json!({"sheets": [
        {"name": "A", "columns": [{"name": "text", "type": "string"}, {"name": "n", "type": "number"}],
            "rows": [["=1+1", -5], ["a, \"quoted\"", 2.5], ["@cmd", null]]},
        {"name": "B", "columns": [{"name": "d", "type": "date"}], "rows": [["2024-12-31"]]},
    ]});
    let book = call_files(&ctx, "/v1/docs/xlsx-build", body).await.unwrap().into_single_file().unwrap();
    let file = json!({"data": b64(&book.bytes), "filename": "book.xlsx"});
    let files = call_files(&ctx, "/v1/docs/xlsx-to-json", json!({"file": file, "format": "csv"})).await.unwrap();
    let zip = files.into_single_file().unwrap();
    assert_eq!((zip.filename.as_str(), zip.media_type.as_str()), ("book-sheets.zip", "application/zip"));
    let mut archive = zip::ZipArchive::new(Cursor::new(zip.bytes)).unwrap();
    let mut read = |name: &str| {
        let mut text = String::new();
        archive.by_name(name).unwrap().read_to_string(&mut text).unwrap();
        text
    };
    assert_eq!(read("book-A.csv"), "text,n\r\n'=1+1,-5\r\n\"a, \"\"quoted\"\"\",2.5\r\n'@cmd,\r\n");
    assert_eq!(read("book-B.csv"), "d\r\n2024-12-31\r\n");
    let one = call_files(&ctx, "/v1/docs/xlsx-to-json", json!({"file": file, "format": "csv", "sheets": ["B"]})).await;
    let one = one.unwrap().into_single_file().unwrap();
    assert_eq!((one.filename.as_str(), one.media_type.as_str()), ("book-B.csv", "text/csv"));
}

async fn err(ctx: &Context, body: Value) -> EngineError {
    call(ctx, "/v1/docs/xlsx-to-json", body).await.expect_err("the call must fail")
}

/// A copy of `book` with `member` replaced by `body`.
fn with_member(book: &[u8], member: &str, body: &[u8]) -> Vec<u8> {
    let mut archive = zip::ZipArchive::new(Cursor::new(book)).unwrap();
    let mut writer = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let name = entry.name().unwrap().to_string();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        writer.start_file(&name, options).unwrap();
        writer.write_all(if name == member { body } else { &bytes }).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

#[tokio::test]
async fn bombs_and_wrong_files_are_refused_naming_the_file() {
    let ctx = Context::new();
    let body = json!({"sheets": [{"name": "S", "columns": [{"name": "a", "type": "string"}], "rows": [["x"]]}]});
    let book = call_files(&ctx, "/v1/docs/xlsx-build", body).await.unwrap().into_single_file().unwrap().bytes;
    let as_file = |bytes: &[u8]| json!({"file": {"data": b64(bytes), "filename": "x.xlsx"}});

    // A sheet of 300 MiB of spaces, stored in well under a megabyte.
    let huge = vec![b' '; 300 * 1024 * 1024];
    let bomb = with_member(&book, "xl/worksheets/sheet1.xml", &huge);
    assert!(bomb.len() < 1024 * 1024, "{}", bomb.len());
    let error = err(&ctx, as_file(&bomb)).await;
    assert_eq!(
        (error.kind, error.code.as_ref(), error.field.as_deref()),
        (ErrorKind::TooLarge, "decompression_bomb", Some("/file"))
    );

    let laughs = br#"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="1" uniqueCount="1"><si><t>&lol2;</t></si></sst>"#;
    let entity = with_member(&book, "xl/sharedStrings.xml", laughs);
    let error = err(&ctx, as_file(&entity)).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("xml_doctype", Some("/file")));

    let docx = std::fs::read(corpus().join("office/docx/default.docx")).unwrap();
    let error = err(&ctx, as_file(&docx)).await;
    assert_eq!(error.code, "not_an_office_file");
    assert!(error.message.contains("Word document"), "{}", error.message);
    let error = err(&ctx, as_file(b"%PDF-1.7 not a workbook")).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("not_an_office_file", Some("/file")));
    let truncated = &book[..book.len() / 2];
    let error = err(&ctx, as_file(truncated)).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("damaged_office_file", Some("/file")));

    // Fields.
    let file = as_file(&book)["file"].clone();
    for (body, field) in [
        (json!({"file": file, "sheets": []}), "/sheets"),
        (json!({"file": file, "sheets": ["S", "S"]}), "/sheets/1"),
        (json!({"file": file, "header_row": 2_000_000}), "/header_row"),
        (json!({"file": file, "format": "xml"}), "/format"),
    ] {
        let error = err(&ctx, body.clone()).await;
        assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {error:?}");
    }
}
