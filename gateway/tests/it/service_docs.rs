//! The service documents: OpenAPI 3.1 checked by a real validator and snapshot-tested,
//! llms.txt and the x402 listing generated from the catalog.

use serde_json::Value;

use crate::common::*;

const SNAPSHOT_BASE: &str = "https://paperchain.example";

/// The snapshots stay in `tests/snapshots/` under the names they had when this file was a
/// test binary of its own (`service_docs__<name>.snap`); insta's default here, a module of
/// the `it` binary, would be `tests/it/snapshots/it__service_docs__<name>.snap`.
fn snapshot_settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings
}

async fn get_text(server: &Server, path: &str) -> (u16, String, String) {
    let response = server.client.get(format!("{}{path}", server.base)).send().await.unwrap();
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    (status, content_type, response.text().await.unwrap())
}

#[tokio::test]
async fn openapi_lists_every_route_and_passes_the_validator() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), Some(SNAPSHOT_BASE)).await;
    let (status, content_type, text) = get_text(&server, "/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(content_type, "application/json");
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "0.1.0");
    let catalog = paperchain_engine::catalog::standard();
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), catalog.routes().count());
    for entry in catalog.routes() {
        let info = entry.info();
        let op = &paths[info.path]["post"];
        assert_eq!(op["operationId"], info.operation, "{}", info.path);
        assert!(op["requestBody"]["content"]["application/json"]["schema"].is_object());
        assert!(op["responses"]["200"]["content"].as_object().is_some_and(|c| !c.is_empty()));
        for status in ["413", "415", "422"] {
            assert!(op["responses"][status].is_object(), "{} lacks {status}", info.path);
        }
        assert_eq!(op["x-price"]["base_atomic"], info.base_price.atomic_string());
    }

    // The real validator, installed by `cargo xtask setup`.
    let tools = std::env::var_os("PAPERCHAIN_TOOLS")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/paperchain/tools")))
        .unwrap();
    let validator = tools.join("bin/openapi-spec-validator");
    assert!(
        validator.exists(),
        "openapi-spec-validator is missing at {}: run `cargo xtask setup`",
        validator.display()
    );
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, &text).unwrap();
    let out = std::process::Command::new(&validator).arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "openapi-spec-validator rejected the document:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    snapshot_settings().bind(|| insta::assert_snapshot!("service_docs__openapi", text));
}

#[tokio::test]
async fn llms_txt_and_x402_listing() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), Some(SNAPSHOT_BASE)).await;
    let (status, content_type, llms) = get_text(&server, "/llms.txt").await;
    assert_eq!(status, 200);
    assert!(content_type.starts_with("text/plain"));
    for entry in paperchain_engine::catalog::standard().routes() {
        assert!(llms.contains(&format!("### POST {}  ({})", entry.info().path, entry.info().operation)));
    }
    snapshot_settings().bind(|| insta::assert_snapshot!("service_docs__llms_txt", llms));

    let (status, _, listing) = get_text(&server, "/.well-known/x402").await;
    assert_eq!(status, 200);
    let listing: Value = serde_json::from_str(&listing).unwrap();
    assert_eq!(listing["version"], 1);
    let resources: Vec<&str> = listing["resources"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    assert!(resources.contains(&"https://paperchain.example/v1/pdf/merge"));
    assert!(resources.iter().all(|r| r.starts_with(SNAPSHOT_BASE)));
    assert!(listing["instructions"].as_str().unwrap().contains("PAYMENT-SIGNATURE"));
}
