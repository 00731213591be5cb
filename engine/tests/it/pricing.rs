//! Quotes: the exact price of a valid input, the base price of an invalid one
//! (`../shared/spec/routebook.md` §4: page edits cost $0.002 for up to 50 pages, + $0.00002 a page
//! beyond).

use paperchain_engine::{Context, Family, Price};
use paperchain_testkit::b64;
use serde_json::{Value, json};

/// A file input (data only) of corpus file `relative`.
fn corpus_file(relative: &str) -> Value {
    json!({ "data": b64(&paperchain_testkit::corpus::corpus_file(relative)) })
}

async fn quote(operation: &str, body: Value) -> (u64, bool) {
    let catalog = paperchain_engine::catalog::standard();
    let route = catalog.by_operation(operation).unwrap();
    let (price, call) = route.quote(&serde_json::to_vec(&body).unwrap(), &Context::new()).await;
    (price.units(), call.is_ok())
}

#[tokio::test]
async fn page_edits_are_priced_by_pages() {
    let big = corpus_file("sample-files/GeoTopo-komprimiert.pdf"); // 117 pages
    let small = corpus_file("sample-files/pdflatex-4-pages.pdf");
    assert_eq!(quote("rotate_pdf_pages", json!({ "file": small, "degrees": 90 })).await, (2_000, true));
    assert_eq!(quote("rotate_pdf_pages", json!({ "file": big, "degrees": 90 })).await, (2_000 + 67 * 20, true));
    // Merge is priced by the pages of the result.
    let merge =
        json!({ "files": [{ "file": big, "pages": "1-40" }, { "file": small }, { "file": small, "pages": "1-3" }] });
    assert_eq!(quote("merge_pdf_files", merge).await, (2_000, true), "47 pages");
    let merge = json!({ "files": [{ "file": big }, { "file": small }] });
    assert_eq!(quote("merge_pdf_files", merge).await, (2_000 + 71 * 20, true), "121 pages");
}

#[tokio::test]
async fn invalid_input_quotes_the_base_price() {
    let small = corpus_file("sample-files/pdflatex-4-pages.pdf");
    assert_eq!(quote("rotate_pdf_pages", json!({ "file": small, "degrees": 45 })).await, (2_000, false));
    assert_eq!(quote("split_pdf", json!({})).await, (2_000, false));
    assert_eq!(quote("extract_pdf_pages", json!({ "file": small, "pages": "9" })).await, (2_000, false));
}

/// The "page edits" price group of `../shared/spec/routebook.md` §4.
const PAGE_EDITS: &[&str] = &[
    "merge",
    "split",
    "extract-pages",
    "remove-pages",
    "reorder",
    "rotate",
    "crop",
    "resize",
    "watermark",
    "page-numbers",
    "metadata",
    "outline",
    "set-outline",
    "inspect",
    "form-fields",
    "fill-form",
    "flatten",
    "attachments",
    "protect",
    "unlock",
    "repair",
];

#[test]
fn the_catalog_is_consistent() {
    let catalog = paperchain_engine::catalog::standard();
    let mut paths = std::collections::HashSet::new();
    let mut operations = std::collections::HashSet::new();
    for route in catalog.routes() {
        let info = route.info();
        assert!(paths.insert(info.path), "duplicate path {}", info.path);
        assert!(operations.insert(info.operation), "duplicate operation {}", info.operation);
        assert!(info.path.starts_with("/v1/"), "{}", info.path);
        assert!(!info.summary.is_empty() && !info.description.is_empty(), "{}", info.path);
        if info.family == Family::Docs && PAGE_EDITS.contains(&info.path.trim_start_matches("/v1/pdf/")) {
            assert_eq!(info.base_price, Price::micros(2_000), "page edits cost $0.002: {}", info.path);
        }
    }
}
