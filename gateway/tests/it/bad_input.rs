//! The bad-input matrix: for every page-edit route, every way a caller can get the input
//! wrong answers the right status with an error naming the field. Never a 500.

use paperchain_testkit::b64;
use paperchain_testkit::corpus::file_input;
use serde_json::{Value, json};

use crate::common::*;

/// A route under test: its path, a valid body around a file, where the file sits, and
/// where its page selection sits (if it has one).
struct Case {
    path: &'static str,
    body: fn(Value) -> Value,
    file_at: &'static str,
    pages_at: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            path: "/v1/pdf/merge",
            body: |f| json!({ "files": [{ "file": f, "pages": "1-2" }, { "file": f }] }),
            file_at: "/files/0/file",
            pages_at: Some("/files/0/pages"),
        },
        Case {
            path: "/v1/pdf/split",
            body: |f| json!({ "file": f, "ranges": ["1-2", "3-"] }),
            file_at: "/file",
            pages_at: Some("/ranges/0"),
        },
        Case {
            path: "/v1/pdf/extract-pages",
            body: |f| json!({ "file": f, "pages": "2,1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/remove-pages",
            body: |f| json!({ "file": f, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/reorder",
            body: |f| json!({ "file": f, "order": [2, 1, 1] }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/rotate",
            body: |f| json!({ "file": f, "degrees": 90, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/crop",
            body: |f| json!({ "file": f, "margins": { "top": 10, "left": 5 }, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/resize",
            body: |f| json!({ "file": f, "size": "A4", "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/metadata",
            body: |f| json!({ "file": f, "action": "read" }),
            file_at: "/file",
            pages_at: None,
        },
        Case { path: "/v1/pdf/outline", body: |f| json!({ "file": f }), file_at: "/file", pages_at: None },
        Case {
            path: "/v1/pdf/set-outline",
            body: |f| json!({ "file": f, "outline": [{ "title": "A", "page": 1 }] }),
            file_at: "/file",
            pages_at: None,
        },
        Case { path: "/v1/pdf/inspect", body: |f| json!({ "file": f }), file_at: "/file", pages_at: None },
        Case {
            path: "/v1/pdf/attachments",
            body: |f| json!({ "file": f, "action": "list" }),
            file_at: "/file",
            pages_at: None,
        },
        Case { path: "/v1/pdf/form-fields", body: |f| json!({ "file": f }), file_at: "/file", pages_at: None },
        Case {
            path: "/v1/pdf/protect",
            body: |f| json!({ "file": f, "user_password": "open sesame", "permissions": { "print": "low", "modify": false } }),
            file_at: "/file",
            pages_at: None,
        },
        Case { path: "/v1/pdf/unlock", body: |f| json!({ "file": f }), file_at: "/file", pages_at: None },
        Case {
            path: "/v1/pdf/repair",
            body: |f| json!({ "file": f, "linearize": true }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/to-images",
            body: |f| json!({ "file": f, "format": "png", "dpi": 36, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/to-pdfa",
            body: |f| json!({ "file": f, "level": "3b" }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/e-invoice",
            body: |f| {
                let xml = paperchain_engine::pdf::pdfa::facturx::MINIMUM_EXAMPLE.as_bytes();
                json!({ "file": f, "invoice": { "data": paperchain_testkit::b64(xml) } })
            },
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/sign",
            body: |f| {
                let p12 = include_bytes!("../../../engine/tests/fixtures/signing/signer.p12");
                json!({ "file": f, "certificate": { "data": paperchain_testkit::b64(p12), "password": "fixture" } })
            },
            file_at: "/file",
            pages_at: None,
        },
        Case { path: "/v1/pdf/verify-signatures", body: |f| json!({ "file": f }), file_at: "/file", pages_at: None },
        Case {
            path: "/v1/pdf/remove-blank-pages",
            body: |f| json!({ "file": f, "pages": "1", "threshold_percent": 0 }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/redact",
            body: |f| json!({ "file": f, "text": ["secret"], "pages": "1", "dpi": 72 }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/compare",
            body: |f| json!({ "original": f, "revised": f, "visual": false }),
            file_at: "/original",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/split-by",
            body: |f| json!({ "file": f, "at": "size", "max_mb": 1 }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/n-up",
            body: |f| json!({ "file": f, "per_sheet": 4, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/booklet",
            body: |f| json!({ "file": f, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/poster",
            body: |f| json!({ "file": f, "scale": 1.5, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/sanitize",
            body: |f| json!({ "file": f, "links": true }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/extract-images",
            body: |f| json!({ "file": f, "pages": "1", "min_width": 1 }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case { path: "/v1/pdf/rasterize", body: |f| json!({ "file": f, "dpi": 36 }), file_at: "/file", pages_at: None },
        Case {
            path: "/v1/pdf/flatten",
            body: |f| json!({ "file": f, "annotations": false }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/fill-form",
            body: |f| json!({ "file": f, "values": {}, "flatten": true }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/watermark",
            body: |f| json!({ "file": f, "text": "DRAFT", "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/page-numbers",
            body: |f| json!({ "file": f, "pages": "1" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/compress",
            body: |f| json!({ "file": f, "mode": "lossless" }),
            file_at: "/file",
            pages_at: None,
        },
        Case {
            path: "/v1/pdf/pipeline",
            body: |f| json!({ "file": f, "steps": [{ "op": "flatten" }, { "op": "rotate", "degrees": 90, "pages": "1" }] }),
            file_at: "/file",
            pages_at: Some("/steps/1/pages"),
        },
        Case {
            path: "/v1/pdf/tables",
            body: |f| json!({ "file": f, "pages": "1-2" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            path: "/v1/pdf/to-docx",
            body: |f| json!({ "file": f, "pages": "2" }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
        Case {
            // The sample has text on every page: forced, so the valid body reads one.
            path: "/v1/pdf/ocr",
            body: |f| json!({ "file": f, "pages": "1", "force": true }),
            file_at: "/file",
            pages_at: Some("/pages"),
        },
    ]
}

fn set(body: &mut Value, pointer: &str, value: Value) {
    let shown = body.to_string();
    *body.pointer_mut(pointer).unwrap_or_else(|| panic!("no {pointer} in {shown}")) = value;
}

async fn expect(server: &Server, path: &str, body: &Value, status: u16, code: &str, field: Option<&str>) {
    let (got, answer) = server.post_json(path, body).await;
    let what = format!("{path} expecting {status} {code} at {field:?}, got {got} {answer}");
    assert_eq!(got, status, "{what}");
    assert_eq!(answer["error"]["code"], code, "{what}");
    if let Some(field) = field {
        assert_eq!(answer["error"]["field"], field, "{what}");
    }
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(!message.is_empty(), "{what}");
}

/// Routes that refuse an encrypted PDF whatever the password: a signature is appended to the
/// file's own bytes, which an unlocked copy would not be.
const ENCRYPTED_REFUSED: &[&str] = &["/v1/pdf/sign"];

/// Routes whose inputs are not a PDF, with their own bad-input test below.
const NOT_PDF_INPUT: &[&str] = &[
    "/v1/pdf/from-images",
    "/v1/docs/xlsx-to-json",
    "/v1/docs/xlsx-build",
    "/v1/pdf",
    "/v1/docs/pptx-build",
    "/v1/docs/to-markdown",
    // Its valid input is a statement, not the matrix's sample PDF: engine/tests/it/pdf_bank_statement.rs
    // has its bad inputs, and the test below the HTTP side.
    "/v1/pdf/bank-statement",
    // An image URL: engine/tests/it/ocr_url.rs has its bad inputs.
    "/v1/ocr",
    // Office files: engine/tests/it/docs_to_pdf.rs and engine/tests/it/docs_fill_template.rs have their bad inputs.
    "/v1/docs/to-pdf",
    "/v1/docs/fill-template",
    // A URL or HTML: engine/tests/it/html_to_pdf.rs has its bad inputs.
    "/v1/pdf/html-to-pdf",
    // Its valid input is a signed PDF: engine/tests/it/pdf_sign.rs has its bad inputs.
    "/v1/pdf/remove-signatures",
];

#[test]
fn the_matrix_covers_every_document_route() {
    let mut covered: Vec<&str> = cases().iter().map(|c| c.path).collect();
    covered.extend(NOT_PDF_INPUT);
    for entry in paperchain_engine::catalog::standard().routes() {
        let info = entry.info();
        if info.family == paperchain_engine::Family::Docs {
            assert!(covered.contains(&info.path), "no bad-input case for {}", info.path);
        }
    }
}

#[tokio::test]
async fn every_route_answers_every_bad_input_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let pdf = file_input("sample-files/pdflatex-4-pages.pdf");
    let encrypted = file_input("qpdf/enc-XI-R6,V5,U=view,O=master.pdf");
    let damaged = file_input("qpdf/issue-146.pdf");

    for case in cases() {
        let valid = (case.body)(pdf.clone());
        let (status, answer) = server.post_json(case.path, &valid).await;
        assert_eq!(status, 200, "{}: the valid body must succeed: {answer}", case.path);

        // Missing everything: the first missing field is named.
        let (status, answer) = server.post_json(case.path, &json!({})).await;
        assert_eq!(status, 422, "{}", case.path);
        assert!(answer["error"]["field"].as_str().is_some_and(|f| f.starts_with('/')), "{}: {answer}", case.path);

        let mut unknown = valid.clone();
        unknown["bogus"] = json!(1);
        expect(&server, case.path, &unknown, 422, "unknown_field", Some("/bogus")).await;

        let mut wrong_type = valid.clone();
        set(&mut wrong_type, case.file_at, json!(5));
        expect(&server, case.path, &wrong_type, 422, "invalid_input", Some(case.file_at)).await;

        let mut no_source = valid.clone();
        set(&mut no_source, case.file_at, json!({ "filename": "a.pdf" }));
        expect(&server, case.path, &no_source, 422, "invalid_input", Some(&format!("{}/data", case.file_at))).await;

        let mut empty = valid.clone();
        set(&mut empty, case.file_at, json!({ "data": "" }));
        expect(&server, case.path, &empty, 422, "empty_file", Some(case.file_at)).await;

        let mut not_pdf = valid.clone();
        set(&mut not_pdf, case.file_at, json!({ "data": b64(b"hello, this is not a PDF") }));
        expect(&server, case.path, &not_pdf, 422, "not_a_pdf", Some(case.file_at)).await;

        let mut bad_base64 = valid.clone();
        set(&mut bad_base64, case.file_at, json!({ "data": "%%% not base64 %%%" }));
        expect(&server, case.path, &bad_base64, 422, "invalid_base64", Some(&format!("{}/data", case.file_at))).await;

        let mut broken = valid.clone();
        set(&mut broken, case.file_at, damaged.clone());
        expect(&server, case.path, &broken, 422, "damaged_pdf", Some(case.file_at)).await;

        let mut locked = valid.clone();
        set(&mut locked, case.file_at, encrypted.clone());
        let mut wrong = encrypted.clone();
        wrong["password"] = json!("not-it");
        if ENCRYPTED_REFUSED.contains(&case.path) {
            expect(&server, case.path, &locked, 422, "encrypted_pdf", Some(case.file_at)).await;
            set(&mut locked, case.file_at, wrong);
            expect(&server, case.path, &locked, 422, "encrypted_pdf", Some(case.file_at)).await;
        } else {
            expect(&server, case.path, &locked, 422, "password_required", Some(&format!("{}/password", case.file_at)))
                .await;
            set(&mut locked, case.file_at, wrong);
            expect(&server, case.path, &locked, 422, "wrong_password", Some(&format!("{}/password", case.file_at)))
                .await;
        }

        let mut blocked = valid.clone();
        set(&mut blocked, case.file_at, json!({ "url": format!("http://{}/x.pdf", server.addr) }));
        expect(&server, case.path, &blocked, 422, "blocked_target", Some(&format!("{}/url", case.file_at))).await;
        set(&mut blocked, case.file_at, json!({ "url": "file:///etc/passwd" }));
        expect(&server, case.path, &blocked, 422, "invalid_input", Some(&format!("{}/url", case.file_at))).await;

        if let Some(pages_at) = case.pages_at {
            let mut bad_pages = valid.clone();
            set(&mut bad_pages, pages_at, json!("1-x"));
            expect(&server, case.path, &bad_pages, 422, "invalid_pages", Some(pages_at)).await;
            set(&mut bad_pages, pages_at, json!("2,99"));
            expect(&server, case.path, &bad_pages, 422, "page_out_of_range", Some(pages_at)).await;
            set(&mut bad_pages, pages_at, json!(3));
            expect(&server, case.path, &bad_pages, 422, "invalid_input", Some(pages_at)).await;
        }
    }
}

#[tokio::test]
async fn route_specific_limits() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let pdf = file_input("sample-files/pdflatex-4-pages.pdf");

    let one = json!({ "files": [{ "file": pdf }] });
    expect(&server, "/v1/pdf/merge", &one, 422, "invalid_input", Some("/files")).await;
    let many: Vec<Value> = (0..21).map(|_| json!({ "file": { "data": "JVBERi0=" } })).collect();
    expect(&server, "/v1/pdf/merge", &json!({ "files": many }), 422, "invalid_input", Some("/files")).await;

    expect(&server, "/v1/pdf/rotate", &json!({ "file": pdf, "degrees": 45 }), 422, "invalid_input", Some("/degrees"))
        .await;
    expect(&server, "/v1/pdf/rotate", &json!({ "file": pdf, "degrees": "90" }), 422, "invalid_input", Some("/degrees"))
        .await;
    expect(
        &server,
        "/v1/pdf/rotate",
        &json!({ "file": pdf, "degrees": 90, "output": "fax" }),
        422,
        "invalid_input",
        Some("/output"),
    )
    .await;
    expect(&server, "/v1/pdf/split", &json!({ "file": pdf }), 422, "invalid_input", Some("/ranges")).await;
    expect(&server, "/v1/pdf/split", &json!({ "file": pdf, "every": 0 }), 422, "invalid_input", Some("/every")).await;
    expect(
        &server,
        "/v1/pdf/split",
        &json!({ "file": pdf, "every": 2, "ranges": ["1"] }),
        422,
        "invalid_input",
        Some("/every"),
    )
    .await;
    expect(
        &server,
        "/v1/pdf/remove-pages",
        &json!({ "file": pdf, "pages": "1-last" }),
        422,
        "no_pages_left",
        Some("/pages"),
    )
    .await;
    expect(&server, "/v1/pdf/reorder", &json!({ "file": pdf, "order": [] }), 422, "invalid_input", Some("/order"))
        .await;
    expect(
        &server,
        "/v1/pdf/reorder",
        &json!({ "file": pdf, "order": [1, 5] }),
        422,
        "page_out_of_range",
        Some("/order/1"),
    )
    .await;
    expect(
        &server,
        "/v1/pdf/reorder",
        &json!({ "file": pdf, "order": [1, -1] }),
        422,
        "invalid_input",
        Some("/order/1"),
    )
    .await;
    let deep =
        json!({ "file": pdf, "outline": [{ "title": "A", "page": 1, "children": [{ "title": "B", "page": 9 }] }] });
    expect(&server, "/v1/pdf/set-outline", &deep, 422, "page_out_of_range", Some("/outline/0/children/0/page")).await;
    // A selection that repeats the document cannot multiply the work: as an ordered list
    // it is held to the 5,000-page limit; as a set it is every page once.
    let repeated = vec!["1-last"; 2_000].join(",");
    expect(
        &server,
        "/v1/pdf/extract-pages",
        &json!({ "file": pdf, "pages": repeated }),
        413,
        "too_many_pages",
        Some("/pages"),
    )
    .await;
    let ranges: Vec<&str> = vec!["1-last"; 1_300];
    expect(
        &server,
        "/v1/pdf/split",
        &json!({ "file": pdf, "ranges": ranges }),
        413,
        "too_many_pages",
        Some("/ranges/1250"),
    )
    .await;
    let (status, _) =
        server.post_json("/v1/pdf/rotate", &json!({ "file": pdf, "degrees": 90, "pages": repeated })).await;
    assert_eq!(status, 200);
    let blank = json!({ "file": pdf, "outline": [{ "title": "  ", "page": 1 }] });
    expect(&server, "/v1/pdf/set-outline", &blank, 422, "invalid_input", Some("/outline/0/title")).await;
}

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[tokio::test]
async fn from_images_answers_every_bad_input_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let path = "/v1/pdf/from-images";
    let image = json!({ "data": PNG, "filename": "dot.png" });
    let (status, answer) = server.post_json(path, &json!({ "images": [image, image], "page_size": "A4" })).await;
    assert_eq!(status, 200, "{answer}");

    expect(&server, path, &json!({}), 422, "invalid_input", Some("/images")).await;
    expect(&server, path, &json!({ "images": [image], "bogus": 1 }), 422, "unknown_field", Some("/bogus")).await;
    expect(&server, path, &json!({ "images": [] }), 422, "invalid_input", Some("/images")).await;
    let many: Vec<Value> = (0..31).map(|_| image.clone()).collect();
    expect(&server, path, &json!({ "images": many }), 422, "invalid_input", Some("/images")).await;
    let text = json!({ "data": b64(b"just some text, not an image") });
    expect(&server, path, &json!({ "images": [image, text] }), 422, "invalid_input", Some("/images/1")).await;
    expect(&server, path, &json!({ "images": [{ "data": "%%%" }] }), 422, "invalid_base64", Some("/images/0/data"))
        .await;
    expect(&server, path, &json!({ "images": [{ "data": "" }] }), 422, "empty_file", Some("/images/0")).await;
    let blocked = json!({ "url": format!("http://{}/a.png", server.addr) });
    expect(&server, path, &json!({ "images": [blocked] }), 422, "blocked_target", Some("/images/0/url")).await;
    expect(&server, path, &json!({ "images": [image], "margin_pt": 500 }), 422, "invalid_input", Some("/margin_pt"))
        .await;
    expect(&server, path, &json!({ "images": [image], "page_size": "A5" }), 422, "invalid_input", Some("/page_size"))
        .await;
    expect(&server, path, &json!({ "images": [5] }), 422, "invalid_input", Some("/images/0")).await;
}

#[tokio::test]
async fn spreadsheet_routes_answer_every_bad_input_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let build = "/v1/docs/xlsx-build";
    let sheet = json!({ "name": "S", "columns": [{ "name": "n", "type": "integer" }], "rows": [[1], [2]] });
    let response = server.post(build, &json!({ "sheets": [sheet] })).await;
    assert_eq!(response.status(), 200);
    let book = response.bytes().await.unwrap();
    assert!(book.starts_with(b"PK"), "an xlsx comes back");

    expect(&server, build, &json!({}), 422, "invalid_input", Some("/sheets")).await;
    expect(&server, build, &json!({ "sheets": [] }), 422, "invalid_input", Some("/sheets")).await;
    expect(&server, build, &json!({ "sheets": [sheet], "bogus": 1 }), 422, "unknown_field", Some("/bogus")).await;
    let mut wrong = sheet.clone();
    wrong["rows"] = json!([[1], [2], [3], ["four"]]);
    expect(&server, build, &json!({ "sheets": [wrong] }), 422, "inconsistent_fields", Some("/sheets/0/rows/3/0")).await;
    let mut short = sheet.clone();
    short["rows"] = json!([[1, 2]]);
    expect(&server, build, &json!({ "sheets": [short] }), 422, "inconsistent_fields", Some("/sheets/0/rows/0")).await;
    let mut kind = sheet.clone();
    kind["columns"][0]["type"] = json!("money");
    expect(&server, build, &json!({ "sheets": [kind] }), 422, "invalid_input", Some("/sheets/0/columns/0/type")).await;
    let mut named = sheet.clone();
    named["name"] = json!("a:b");
    expect(&server, build, &json!({ "sheets": [named] }), 422, "invalid_input", Some("/sheets/0/name")).await;

    let read = "/v1/docs/xlsx-to-json";
    let file = json!({ "data": b64(&book), "filename": "book.xlsx" });
    let (status, answer) = server.post_json(read, &json!({ "file": file })).await;
    assert_eq!((status, &answer["sheets"][0]["rows"]), (200, &json!([{ "n": 1 }, { "n": 2 }])), "{answer}");
    expect(&server, read, &json!({}), 422, "invalid_input", Some("/file")).await;
    expect(&server, read, &json!({ "file": file, "bogus": 1 }), 422, "unknown_field", Some("/bogus")).await;
    expect(&server, read, &json!({ "file": { "data": "" } }), 422, "empty_file", Some("/file")).await;
    expect(&server, read, &json!({ "file": { "data": "%%%" } }), 422, "invalid_base64", Some("/file/data")).await;
    let pdf = json!({ "data": b64(b"%PDF-1.7 not a workbook") });
    expect(&server, read, &json!({ "file": pdf }), 422, "not_an_office_file", Some("/file")).await;
    let cut = json!({ "data": b64(&book[..book.len() / 2]) });
    expect(&server, read, &json!({ "file": cut }), 422, "damaged_office_file", Some("/file")).await;
    expect(&server, read, &json!({ "file": file, "sheets": ["T"] }), 422, "unknown_sheet", Some("/sheets/0")).await;
    expect(&server, read, &json!({ "file": file, "header_row": -1 }), 422, "invalid_input", Some("/header_row")).await;
    let blocked = json!({ "url": format!("http://{}/a.xlsx", server.addr) });
    expect(&server, read, &json!({ "file": blocked }), 422, "blocked_target", Some("/file/url")).await;
}

#[tokio::test]
async fn the_markdown_route_answers_every_bad_input_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let path = "/v1/docs/to-markdown";
    let pdf = file_input("sample-files/pdflatex-4-pages.pdf");
    let (status, answer) = server.post_json(path, &json!({ "file": pdf })).await;
    assert_eq!((status, &answer["format"]), (200, &json!("pdf")), "{answer}");
    assert!(answer["markdown"].as_str().is_some_and(|m| !m.is_empty()), "{answer}");

    expect(&server, path, &json!({}), 422, "invalid_input", Some("/file")).await;
    expect(&server, path, &json!({ "file": pdf, "bogus": 1 }), 422, "unknown_field", Some("/bogus")).await;
    expect(&server, path, &json!({ "file": 5 }), 422, "invalid_input", Some("/file")).await;
    expect(&server, path, &json!({ "file": { "filename": "a.pdf" } }), 422, "invalid_input", Some("/file/data")).await;
    expect(&server, path, &json!({ "file": { "data": "" } }), 422, "empty_file", Some("/file")).await;
    expect(&server, path, &json!({ "file": { "data": "%%%" } }), 422, "invalid_base64", Some("/file/data")).await;
    let junk = json!({ "data": b64(&[0u8, 1, 2, 3, 250, 251, 252]), "filename": "x.bin" });
    expect(&server, path, &json!({ "file": junk }), 422, "unsupported_format", Some("/file")).await;
    let cut_zip = json!({ "data": b64(b"PK\x03\x04 only the start of a zip"), "filename": "x.docx" });
    expect(&server, path, &json!({ "file": cut_zip }), 422, "damaged_office_file", Some("/file")).await;
    expect(&server, path, &json!({ "file": file_input("qpdf/issue-146.pdf") }), 422, "damaged_pdf", Some("/file"))
        .await;
    let locked = file_input("qpdf/enc-XI-R6,V5,U=view,O=master.pdf");
    expect(&server, path, &json!({ "file": locked }), 422, "password_required", Some("/file/password")).await;
    expect(&server, path, &json!({ "file": pdf, "pages": "1-x" }), 422, "invalid_pages", Some("/pages")).await;
    expect(&server, path, &json!({ "file": pdf, "pages": "2,99" }), 422, "page_out_of_range", Some("/pages")).await;
    expect(&server, path, &json!({ "file": pdf, "pages": 3 }), 422, "invalid_input", Some("/pages")).await;
    expect(&server, path, &json!({ "file": pdf, "format": "rtf" }), 422, "invalid_input", Some("/format")).await;
    let csv = json!({ "data": b64(b"a,b\n1,2\n"), "filename": "t.csv" });
    expect(&server, path, &json!({ "file": csv, "pages": "1" }), 422, "option_not_applicable", Some("/pages")).await;
    let blocked = json!({ "url": format!("http://{}/a.pdf", server.addr) });
    expect(&server, path, &json!({ "file": blocked }), 422, "blocked_target", Some("/file/url")).await;
}

#[tokio::test]
async fn the_pdf_url_route_answers_every_bad_input_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let path = "/v1/pdf";
    expect(&server, path, &json!({}), 422, "invalid_input", Some("/url")).await;
    expect(&server, path, &json!({ "url": 5 }), 422, "invalid_input", Some("/url")).await;
    expect(&server, path, &json!({ "url": "" }), 422, "invalid_input", Some("/url")).await;
    expect(
        &server,
        path,
        &json!({ "url": "https://example.com/a.pdf", "bogus": 1 }),
        422,
        "unknown_field",
        Some("/bogus"),
    )
    .await;
    expect(&server, path, &json!({ "url": "file:///etc/passwd" }), 422, "invalid_input", Some("/url")).await;
    let own = json!({ "url": format!("http://{}/a.pdf", server.addr) });
    expect(&server, path, &own, 422, "blocked_target", Some("/url")).await;
    let metadata = json!({ "url": "http://169.254.169.254/latest/meta-data/" });
    expect(&server, path, &metadata, 422, "blocked_target", Some("/url")).await;
}

#[tokio::test]
async fn the_deck_builder_answers_every_bad_input_with_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let path = "/v1/docs/pptx-build";
    let response = server.post(path, &json!({ "title": "T", "slides": [{ "title": "A", "bullets": ["x"] }] })).await;
    assert_eq!(response.status(), 200);
    assert!(response.bytes().await.unwrap().starts_with(b"PK"), "a pptx comes back");
    expect(&server, path, &json!({}), 422, "invalid_input", Some("/slides")).await;
    expect(&server, path, &json!({ "slides": [] }), 422, "invalid_input", Some("/slides")).await;
    expect(&server, path, &json!({ "slides": [{ "title": "A" }], "bogus": 1 }), 422, "unknown_field", Some("/bogus"))
        .await;
    expect(&server, path, &json!({ "slides": [{ "title": "" }] }), 422, "invalid_input", Some("/slides/0/title")).await;
    expect(
        &server,
        path,
        &json!({ "slides": [{ "title": "A", "bullets": [5] }] }),
        422,
        "invalid_input",
        Some("/slides/0/bullets/0"),
    )
    .await;
    let deep = json!({ "slides": [{ "title": "A", "bullets": [{ "text": "x", "level": 9 }] }] });
    expect(&server, path, &deep, 422, "invalid_input", Some("/slides/0/bullets/0/level")).await;
    let lone = json!({ "subtitle": "s", "slides": [{ "title": "A" }] });
    expect(&server, path, &lone, 422, "invalid_input", Some("/subtitle")).await;
}
