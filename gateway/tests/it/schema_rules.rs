//! The published request schemas state the rules the routes enforce: for each rule a
//! body that breaks it is refused both by the schema (a JSON Schema 2020-12 validator,
//! Python's `jsonschema`, over the served `/openapi.json`) and by the server (422), and a
//! body that keeps it passes both. Agents build calls from these schemas, so a rule the
//! schema does not state is a call that fails for them.

use paperchain_testkit::corpus::file_input;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

use crate::common::*;

/// Validates bodies against the request schemas of an OpenAPI document: argv[1] is the
/// document, argv[2] a list of `[path, body]`; prints a list of `true` (valid) / error text.
const VALIDATE: &str = r#"
import json, sys
from jsonschema import Draft202012Validator
doc = json.load(open(sys.argv[1]))
cases = json.load(open(sys.argv[2]))
out = []
for path, body in cases:
    schema = dict(doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"])
    schema["components"] = doc["components"]
    errors = sorted(Draft202012Validator(schema).iter_errors(body), key=lambda e: list(e.absolute_path))
    out.append(True if not errors else errors[0].message[:200])
print(json.dumps(out))
"#;

/// One body: where it goes, and whether the route takes it. `posted: false` for a body the
/// server could only run against a chain this test has none of (the schema is still checked).
struct Case {
    path: &'static str,
    body: Value,
    valid: bool,
    posted: bool,
}

fn ok(path: &'static str, body: Value) -> Case {
    Case { path, body, valid: true, posted: true }
}

fn bad(path: &'static str, body: Value) -> Case {
    Case { path, body, valid: false, posted: true }
}

fn cases() -> Vec<Case> {
    let pdf = file_input("sample-files/pdflatex-4-pages.pdf");
    let data = pdf["data"].clone();
    // A 1×1 PNG.
    let png = json!({ "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==" });
    let sheet = |name: &str| json!({ "sheets": [{ "name": name, "columns": [{ "name": "A", "type": "string" }] }] });
    let address = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045";
    vec![
        // A file: exactly one of data and url; a null counts as absent.
        bad("/v1/pdf/inspect", json!({ "file": {} })),
        bad("/v1/pdf/inspect", json!({ "file": { "data": null, "url": null } })),
        bad("/v1/pdf/inspect", json!({ "file": { "data": data, "url": "https://example.com/a.pdf" } })),
        bad("/v1/pdf/inspect", json!({ "file": { "data": "" } })),
        ok("/v1/pdf/inspect", json!({ "file": { "data": data, "url": null } })),
        // Split: ranges or every, one of them.
        bad("/v1/pdf/split", json!({ "file": pdf })),
        bad("/v1/pdf/split", json!({ "file": pdf, "ranges": ["1"], "every": 2 })),
        ok("/v1/pdf/split", json!({ "file": pdf, "every": 2 })),
        ok("/v1/pdf/split", json!({ "file": pdf, "ranges": ["1-2"], "every": null })),
        // Protect: a password is not empty.
        bad("/v1/pdf/protect", json!({ "file": pdf, "user_password": "" })),
        bad("/v1/pdf/protect", json!({ "file": pdf, "user_password": "u", "owner_password": "" })),
        ok("/v1/pdf/protect", json!({ "file": pdf, "user_password": "u" })),
        // Metadata: `set` goes with edit, and holds an entry.
        bad("/v1/pdf/metadata", json!({ "file": pdf, "action": "edit" })),
        bad("/v1/pdf/metadata", json!({ "file": pdf, "action": "edit", "set": {} })),
        bad("/v1/pdf/metadata", json!({ "file": pdf, "action": "read", "set": { "title": "T" } })),
        ok("/v1/pdf/metadata", json!({ "file": pdf, "action": "edit", "set": { "title": null } })),
        ok("/v1/pdf/metadata", json!({ "file": pdf, "action": "read", "set": null })),
        // Attachments: `add` with add (one file at least), `names` with extract.
        bad("/v1/pdf/attachments", json!({ "file": pdf, "action": "add" })),
        bad("/v1/pdf/attachments", json!({ "file": pdf, "action": "add", "add": [] })),
        bad("/v1/pdf/attachments", json!({ "file": pdf, "action": "list", "add": [] })),
        bad("/v1/pdf/attachments", json!({ "file": pdf, "action": "list", "names": ["a"] })),
        bad(
            "/v1/pdf/attachments",
            json!({ "file": pdf, "action": "add", "add": [{ "filename": " ", "file": { "data": "aGk=" } }] }),
        ),
        ok("/v1/pdf/attachments", json!({ "file": pdf, "action": "list" })),
        ok(
            "/v1/pdf/attachments",
            json!({ "file": pdf, "action": "add", "add": [{ "filename": "a.txt", "file": { "data": "aGk=" } }] }),
        ),
        // From images: at least one.
        bad("/v1/pdf/from-images", json!({ "images": [] })),
        ok("/v1/pdf/from-images", json!({ "images": [png] })),
        // HTML to PDF: url or html; allow_network with html only; a page is not empty.
        bad("/v1/pdf/html-to-pdf", json!({})),
        bad("/v1/pdf/html-to-pdf", json!({ "html": "<p>a</p>", "url": "https://example.com/" })),
        bad("/v1/pdf/html-to-pdf", json!({ "url": "https://example.com/", "allow_network": true })),
        bad("/v1/pdf/html-to-pdf", json!({ "html": "" })),
        ok("/v1/pdf/html-to-pdf", json!({ "html": "<p>a</p>", "allow_network": true })),
        // Workbook builder: Excel's sheet name rules.
        bad("/v1/docs/xlsx-build", sheet("")),
        bad("/v1/docs/xlsx-build", sheet("a:b")),
        bad("/v1/docs/xlsx-build", sheet("'quoted'")),
        bad("/v1/docs/xlsx-build", sheet("history")),
        bad("/v1/docs/xlsx-build", sheet(&"x".repeat(32))),
        bad("/v1/docs/xlsx-build", sheet("a\u{9e}b")),
        bad("/v1/docs/xlsx-build", sheet("a\u{7f}")),
        ok("/v1/docs/xlsx-build", sheet("Data 'a' x")),
        // OCR languages are Tesseract codes.
        bad("/v1/docs/to-markdown", json!({ "file": pdf, "languages": ["ENG"] })),
        bad("/v1/docs/to-markdown", json!({ "file": pdf, "languages": [""] })),
        ok("/v1/docs/to-markdown", json!({ "file": pdf, "languages": ["eng"] })),
        // ENS: exactly one of name and address; the chain is not reached for these.
        bad("/v1/chain/ens", json!({})),
        bad("/v1/chain/ens", json!({ "name": "vitalik.eth", "address": address })),
        bad("/v1/chain/ens", json!({ "name": "" })),
        Case { path: "/v1/chain/ens", body: json!({ "name": null, "address": address }), valid: true, posted: false },
        bad("/v1/chain/ens/records", json!({ "name": " " })),
        // A call: `data` or `signature`, and `args` only with a signature (a null counts as absent).
        bad("/v1/chain/simulate", json!({ "chain": "base", "to": address, "args": [] })),
        bad("/v1/chain/simulate", json!({ "chain": "base", "to": address, "args": [], "signature": null })),
        bad("/v1/chain/estimate-gas", json!({ "chain": "base", "to": address, "data": "0x", "signature": "f()" })),
        Case {
            path: "/v1/chain/simulate",
            body: json!({ "chain": "base", "to": address, "data": "0x", "signature": null, "args": null }),
            valid: true,
            posted: false,
        },
        // A pipeline step leaves a PDF: metadata's `read` is not a step.
        bad("/v1/pdf/pipeline", json!({ "file": pdf, "steps": [{ "op": "metadata", "action": "read" }] })),
        ok("/v1/pdf/pipeline", json!({ "file": pdf, "steps": [{ "op": "metadata", "action": "strip" }] })),
        // Other rules a pattern or a range states.
        bad("/v1/pdf/from-images", json!({ "images": [png], "margin_pt": 1e171 })),
        bad("/v1/pdf/protect", json!({ "file": pdf, "user_password": "a\u{0}b" })),
        bad("/v1/pdf/protect", json!({ "file": pdf, "user_password": "x".repeat(128) })),
        bad("/v1/pdf/bank-statement", json!({ "file": pdf, "date_format": "DD/MM/YYYY\u{ef}" })),
        bad("/v1/pdf/bank-statement", json!({ "file": pdf, "date_format": "DD/DD/YYYY" })),
        // ENS names: what a pattern holds of ENSIP-15 (no spaces or punctuation, no empty label).
        bad("/v1/chain/ens", json!({ "name": "OFAC SDN" })),
        bad("/v1/chain/ens/records", json!({ "name": "alice..eth" })),
        bad("/v1/chain/ens/records", json!({ "name": "a_b.eth" })),
        bad("/v1/chain/ens/records", json!({ "name": format!("{}.eth", "a".repeat(252)) })),
        // URLs: any text up to 8,192 characters is judged; blank text is refused.
        bad("/v1/check/url", json!({ "url": " \t" })),
        bad("/v1/check/url", json!({ "url": format!("https://a.example/{}", "é".repeat(8_200)) })),
        ok("/v1/check/url", json!({ "url": format!("https://a.example/{}", "é".repeat(8_000)) })),
        ok("/v1/check/url", json!({ "url": "https://exa mple.com/" })),
        // EIP-712 requests: their shape is stated (struct names, member types, the domain).
        bad(
            "/v1/check/typed-data",
            json!({ "typed_data": { "types": {}, "primaryType": "X", "message": {}, "domain": [] } }),
        ),
        bad(
            "/v1/check/typed-data",
            json!({ "typed_data": { "types": { "X": [{ "name": "a", "type": "uint8[0]" }] }, "primaryType": "X", "message": {} } }),
        ),
        bad("/v1/check/typed-data", json!({ "typed_data": { "types": { "X": [] }, "primaryType": "X" } })),
        bad("/v1/check/typed-data", json!({ "typed_data": "x".repeat(256 * 1024 + 1) })),
        ok(
            "/v1/check/typed-data",
            json!({ "typed_data": { "types": { "X": [] }, "primaryType": "X", "message": {} } }),
        ),
        ok(
            "/v1/check/typed-data",
            json!({ "typed_data": r#"{"types": {"X": []}, "primaryType": "X", "message": {}}"# }),
        ),
        // Signatures: at most 2048 characters (an event's limit; a function's is 1024).
        bad("/v1/chain/signature", json!({ "query": format!("f({})", "uint256,".repeat(255) + "uint256") })),
        ok("/v1/chain/signature", json!({ "query": format!("f({})", "uint256,".repeat(250) + "uint256") })),
        ok("/v1/chain/signature", json!({ "query": "transfer(address,uint256)" })),
    ]
}

#[tokio::test]
async fn each_rule_the_routes_enforce_is_stated_in_the_published_schema() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let doc = server.client.get(format!("{}/openapi.json", server.base)).send().await.unwrap().text().await.unwrap();
    let cases = cases();
    let doc_file = dir.path().join("openapi.json");
    let cases_file = dir.path().join("cases.json");
    std::fs::write(&doc_file, doc).unwrap();
    let listed: Vec<Value> = cases.iter().map(|c| json!([c.path, c.body])).collect();
    std::fs::write(&cases_file, serde_json::to_vec(&listed).unwrap()).unwrap();
    let verdicts: Vec<Value> =
        serde_json::from_str(&run_python(VALIDATE, &[doc_file.as_path(), cases_file.as_path()])).unwrap();
    assert_eq!(verdicts.len(), cases.len());

    let mut wrong = Vec::new();
    for (case, verdict) in cases.iter().zip(&verdicts) {
        let shown = shorten(&case.body);
        if (verdict == &Value::Bool(true)) != case.valid {
            wrong.push(format!("schema of {} says {verdict} for {shown}", case.path));
        }
        if !case.posted {
            continue;
        }
        let (status, body) = server.post_json(case.path, &case.body).await;
        let taken = status == 200;
        if taken != case.valid || (!case.valid && status != 422) {
            wrong.push(format!("{} answers {status} {} for {shown}", case.path, shorten(&body)));
        }
    }
    assert!(wrong.is_empty(), "schema and server disagree with the rule:\n{}", wrong.join("\n"));
}

/// Some agents refuse a tool whose input schema has `oneOf`, `anyOf` or `allOf` at its top;
/// rules between a request's fields are said with `if`/`then`/`else` and `not` instead.
#[tokio::test]
async fn no_request_schema_has_a_combinator_at_its_top() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let doc: Value =
        server.client.get(format!("{}/openapi.json", server.base)).send().await.unwrap().json().await.unwrap();
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let mut schema = &item["post"]["requestBody"]["content"]["application/json"]["schema"];
        if let Some(name) = schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
            schema = &doc["components"]["schemas"][name];
        }
        assert_eq!(schema["type"], "object", "{path}");
        for keyword in ["oneOf", "anyOf", "allOf"] {
            if schema.get(keyword).is_some() {
                found.push(format!("{path}: {keyword}"));
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

/// A body for a message: long strings (base64) cut short.
fn shorten(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 300 {
        format!("{}…", &text[..text.char_indices().nth(300).map_or(text.len(), |(i, _)| i)])
    } else {
        text
    }
}
