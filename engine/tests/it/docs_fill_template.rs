//! `/v1/docs/fill-template` on templates written in the shapes Word stores them in
//! (placeholders split across runs by spell checking, bookmarks and edits, formatting on
//! the placeholder, a header), read back by python-docx; a table row repeated for 1,000
//! items; every missing key listed; and the PDF through the LibreOffice pool.

use crate::common;

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use common::route::call_files;
use paperchain_engine::soffice::{self, OfficePool, PoolConfig};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::b64;
use paperchain_testkit::tools::{DOCX_TEXT, run_python};
use serde_json::{Value, json};

const ROUTE: &str = "/v1/docs/fill-template";

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

/// A Word package: `body` in the document, `header` in a default header.
fn docx(body: &str, header: &str) -> Vec<u8> {
    let parts = [
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/header1.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.header+xml"/></Types>"#.to_string(),
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#.to_string(),
        ),
        (
            "word/_rels/document.xml.rels",
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdH" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/header" Target="header1.xml"/></Relationships>"#.to_string(),
        ),
        (
            "word/document.xml",
            format!(
                r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="{W}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>{body}<w:sectPr><w:headerReference w:type="default" r:id="rIdH"/><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr></w:body></w:document>"#
            ),
        ),
        (
            "word/header1.xml",
            format!(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:hdr xmlns:w="{W}">{header}</w:hdr>"#),
        ),
    ];
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, text) in parts {
        zip.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// A run as Word writes one: revision ids, and properties.
fn run(props: &str, text: &str) -> String {
    format!(r#"<w:r w:rsidR="00A1B2C3"><w:rPr>{props}</w:rPr><w:t xml:space="preserve">{text}</w:t></w:r>"#)
}

fn para(inner: &str) -> String {
    format!(r#"<w:p w:rsidR="00A1B2C3" w:rsidRDefault="00D4E5F6">{inner}</w:p>"#)
}

fn cell(inner: &str) -> String {
    format!(r#"<w:tc><w:tcPr><w:tcW w:w="3000" w:type="dxa"/></w:tcPr>{}</w:tc>"#, para(inner))
}

/// The invoice template: split placeholders in every shape Word makes.
fn invoice_template() -> Vec<u8> {
    let big = r#"<w:rFonts w:ascii="Courier New" w:hAnsi="Courier New"/><w:b/><w:i/><w:sz w:val="28"/>"#;
    let body = [
        // Split by spell checking, with the marker of the proofing error between runs.
        para(&format!(
            "{}{}<w:proofErr w:type=\"spellStart\"/>{}<w:proofErr w:type=\"spellEnd\"/>{}",
            run("", "Dear "),
            run(big, "{{"),
            run("", "customer"),
            run("", ".name}},")
        )),
        // Split by a bookmark and an edit session (another rsid), inside a hyperlink.
        para(&format!(
            "{}<w:bookmarkStart w:id=\"0\" w:name=\"ref\"/>{}<w:bookmarkEnd w:id=\"0\"/><w:hyperlink w:anchor=\"ref\">{}</w:hyperlink>",
            run("", "Invoice {"),
            run("", "{invoice.number}} dated {{invoice"),
            run("<w:rStyle w:val=\"Hyperlink\"/>", ".date}} for {{customer.address.city}}.")
        )),
        // A value with markup characters and line breaks.
        para(&run("", "Note: {{note}}")),
        {
            let head = format!("<w:tr>{}{}{}</w:tr>", cell(&run("<w:b/>", "Item")), cell(&run("<w:b/>", "Qty")), cell(&run("<w:b/>", "Price")));
            let item = format!(
                "<w:tr>{}{}{}</w:tr>",
                cell(&format!("{}{}", run("", "{{#"), run("", "items}}{{name}}"))),
                cell(&run("", "{{qty}}")),
                cell(&format!("{}{}", run("", "{{price}} {{currency}}{{/it"), run("", "ems}}")))
            );
            let total = format!("<w:tr>{}{}{}</w:tr>", cell(&run("<w:b/>", "Total")), cell(&run("", "")), cell(&run("<w:b/>", "{{total}} {{currency}}")));
            format!(r#"<w:tbl><w:tblPr><w:tblW w:w="9000" w:type="dxa"/></w:tblPr>{head}{item}{total}</w:tbl>"#)
        },
        para(&run("", "{{#paid}}Paid in full, thank you.{{/paid}}{{^paid}}Please pay within {{terms.days}} days.{{/paid}}")),
    ]
    .concat();
    docx(&body, &para(&run("", "{{company}} - invoice {{invoice.number}}")))
}

fn invoice_data(items: usize) -> Value {
    let items: Vec<Value> = (1..=items)
        .map(|i| json!({ "name": format!("Item {i}"), "qty": i % 7 + 1, "price": format!("{}.50", i) }))
        .collect();
    json!({
        "company": "Paperchain & Sons",
        "customer": { "name": "Ada <Lovelace>", "address": { "city": "Zürich" } },
        "invoice": { "number": "INV-0042", "date": "2026-11-26" },
        "note": "Fragile \"glass\"\nhandle with care",
        "items": items,
        "currency": "EUR",
        "total": "1,234.50",
        "paid": false,
        "terms": { "days": 30 },
    })
}

async fn fill(
    ctx: &Context,
    template: &[u8],
    data: Value,
    format: &str,
) -> Result<(Vec<u8>, Value, String), EngineError> {
    let body =
        json!({ "template": { "data": b64(template), "filename": "invoice.docx" }, "data": data, "format": format });
    let set = call_files(ctx, ROUTE, body).await?;
    let file = &set.files[0];
    Ok((file.bytes.clone(), set.report.clone().unwrap(), file.filename.clone()))
}

/// What python-docx reads from `docx`, and the header's text.
fn read_back(docx: &[u8]) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("filled.docx");
    std::fs::write(&path, docx).unwrap();
    let read: Value = serde_json::from_str(&run_python(DOCX_TEXT, &[&path])).unwrap();
    let header = run_python(
        "import docx, sys\nd = docx.Document(sys.argv[1])\nprint('|'.join(p.text for p in d.sections[0].header.paragraphs))",
        &[&path],
    );
    (read, header.trim().to_string())
}

#[tokio::test]
async fn a_word_template_is_filled_and_python_docx_reads_it_back() {
    let (docx, report, name) = fill(&Context::new(), &invoice_template(), invoice_data(3), "docx").await.unwrap();
    assert_eq!(name, "invoice-filled.docx");
    let (read, header) = read_back(&docx);
    assert_eq!(header, "Paperchain & Sons - invoice INV-0042");
    let blocks = read["blocks"].as_array().unwrap();
    assert_eq!(blocks[0]["paragraph"], "Dear Ada <Lovelace>,");
    // The value took the placeholder's formatting (where its "{{" was).
    let name_run = blocks[0]["runs"].as_array().unwrap().iter().find(|r| r["text"] == "Ada <Lovelace>").unwrap();
    assert_eq!(
        (name_run["font"].as_str(), name_run["bold"].as_bool(), name_run["italic"].as_bool()),
        (Some("Courier New"), Some(true), Some(true))
    );
    assert_eq!(name_run["size"], json!(14.0));
    assert_eq!(blocks[1]["paragraph"], "Invoice INV-0042 dated 2026-11-26 for Zürich.");
    assert_eq!(blocks[2]["paragraph"], "Note: Fragile \"glass\"\nhandle with care");
    let table = blocks[3]["table"].as_array().unwrap();
    let rows: Vec<Vec<&str>> =
        table.iter().map(|r| r.as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect()).collect();
    assert_eq!(
        rows,
        vec![
            vec!["Item", "Qty", "Price"],
            vec!["Item 1", "2", "1.50 EUR"],
            vec!["Item 2", "3", "2.50 EUR"],
            vec!["Item 3", "4", "3.50 EUR"],
            vec!["Total", "", "1,234.50 EUR"],
        ]
    );
    assert_eq!(blocks[4]["paragraph"], "Please pay within 30 days.");
    assert_eq!(report["section_items"], json!(3 + 1));
    assert!(report["placeholders"].as_u64().unwrap() >= 20, "{report}");
}

#[tokio::test]
async fn a_row_repeats_for_a_thousand_items() {
    let (docx, report, _) = fill(&Context::new(), &invoice_template(), invoice_data(1_000), "docx").await.unwrap();
    let (read, _) = read_back(&docx);
    let table = read["blocks"][3]["table"].as_array().unwrap();
    assert_eq!(table.len(), 1 + 1_000 + 1);
    assert_eq!(table[1000], json!(["Item 1000", "7", "1000.50 EUR"]));
    assert_eq!(table[1001][0], "Total");
    assert_eq!(report["section_items"], json!(1_000 + 1));
}

#[tokio::test]
async fn every_missing_key_is_listed_in_one_error() {
    let mut data = invoice_data(2);
    data["customer"].as_object_mut().unwrap().remove("address");
    data.as_object_mut().unwrap().remove("company");
    data["items"][1].as_object_mut().unwrap().remove("qty");
    data.as_object_mut().unwrap().remove("terms");
    let error = fill(&Context::new(), &invoice_template(), data, "docx").await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("missing_keys", Some("/data")), "{error:?}");
    for key in ["company", "customer.address.city", "items[1].qty", "terms.days"] {
        assert!(error.message.contains(key), "{key} in {}", error.message);
    }
    assert!(error.message.contains("4 key(s)"), "{}", error.message);
}

#[tokio::test]
async fn bad_templates_and_data_are_refused_naming_the_field() {
    let ctx = Context::new();
    let good = b64(&invoice_template());
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({ "data": {} }), "/template", "invalid_input"),
        (json!({ "template": { "data": good } }), "/data", "invalid_input"),
        (json!({ "template": { "data": good }, "data": [1] }), "/data", "invalid_input"),
        (json!({ "template": { "data": good }, "data": {}, "format": "odt" }), "/format", "invalid_input"),
        (json!({ "template": { "data": b64(b"%PDF-1.7") }, "data": {} }), "/template", "not_an_office_file"),
        (
            json!({ "template": { "data": b64(&docx(&para(&run("", "{{a b}}")), "")) }, "data": {} }),
            "/template",
            "invalid_template",
        ),
        (
            json!({ "template": { "data": b64(&docx(&para(&run("", "{{#rows}}")), "")) }, "data": { "rows": [] } }),
            "/template",
            "invalid_template",
        ),
        (json!({ "template": { "data": good }, "data": {}, "pages": "1" }), "/pages", "unknown_field"),
    ];
    for (body, field, code) in cases {
        let error = call_files(&ctx, ROUTE, body.clone()).await.unwrap_err();
        assert_eq!((error.code.as_ref(), error.field.as_deref()), (code, Some(field)), "{body}: {error:?}");
        assert!(matches!(error.kind, ErrorKind::InvalidInput), "{error:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pdf_comes_through_the_office_pool() {
    let pool = Arc::new(
        OfficePool::new(PoolConfig {
            workers: 1,
            queue: 4,
            wait: Duration::from_secs(120),
            timeout: Duration::from_secs(120),
            max_conversions: 100,
            idle: Duration::from_secs(600),
            start_patience: Duration::from_secs(90),
        })
        .unwrap(),
    );
    let ctx = Context::new();
    soffice::install(&ctx.state, Arc::clone(&pool));
    let (pdf, report, name) = fill(&ctx, &invoice_template(), invoice_data(200), "pdf").await.unwrap();
    assert_eq!(name, "invoice-filled.pdf");
    assert_eq!(report["format"], "pdf");
    assert_eq!(pool.stats().started, 1, "converted by the pool");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("filled.pdf");
    std::fs::write(&path, &pdf).unwrap();
    let out = std::process::Command::new("pdftotext").arg("-layout").arg(&path).arg("-").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "Paperchain & Sons - invoice INV-0042",
        "Dear Ada <Lovelace>,",
        "Item 200",
        "200.50 EUR",
        "Please pay within 30 days.",
    ] {
        assert!(text.contains(expected), "{expected:?} in the PDF's text");
    }
    let info = std::process::Command::new("pdfinfo").arg(&path).output().unwrap();
    let pages: u32 = String::from_utf8_lossy(&info.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pages >= 4, "200 rows take several pages: {pages}");
}
