//! The compact tool surface at `/mcp`, driven by the rmcp client over streamable HTTP: the
//! whole list is small, every operation of the catalog is reachable through it with its own
//! schema, and a run tool answers as the operation's own tool does, errors naming the field
//! under `/input`.

use std::collections::BTreeSet;

use paperchain_engine::{Context, Family};
use paperchain_testkit::corpus::file_input;
use paperchain_testkit::pdf::qpdf_pages;
use serde_json::{Value, json};

use crate::common::{call, embedded, http_client, serve, structured, tool_error};

/// The longest the default tool list may be, as sent (JSON): about 8,000 tokens.
const MAX_LIST_BYTES: usize = 32 * 1024;

#[tokio::test]
async fn the_default_tool_list_is_small_and_reaches_every_operation() {
    let server = serve(Context::new(), None).await;
    let compact = http_client(&format!("{}/mcp", server.base)).await;
    let tools = compact.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["chain_read", "document_operation", "describe_operation"]);
    let size = serde_json::to_vec(&tools).unwrap().len();
    eprintln!("compact tools/list: {size} bytes; {names:?}");
    assert!(size <= MAX_LIST_BYTES, "the compact list is {size} bytes, over {MAX_LIST_BYTES}");

    // The full surface, for comparison and for the schemas an operation must keep.
    let full = http_client(&format!("{}/mcp/full", server.base)).await;
    let per_route = full.list_all_tools().await.unwrap();
    let full_size = serde_json::to_vec(&per_route).unwrap().len();
    eprintln!("full tools/list: {full_size} bytes, {} tools", per_route.len());
    assert!(full_size > 4 * size, "the full list ({full_size} bytes) is the large one");

    // Every operation of the catalog: in its family's run tool, named in its description,
    // and described with the very schemas of its own tool.
    let catalog = paperchain_engine::catalog::standard();
    let enum_of = |tool: &str| -> BTreeSet<String> {
        let tool = tools.iter().find(|t| t.name == tool).unwrap();
        tool.input_schema["properties"]["operation"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    for route in catalog.routes() {
        let info = route.info();
        let run_tool = match info.family {
            Family::Chain => "chain_read",
            Family::Docs => "document_operation",
        };
        assert!(enum_of(run_tool).contains(info.operation), "{} is not in {run_tool}", info.operation);
        let listed = tools.iter().find(|t| t.name == run_tool).unwrap();
        assert!(
            listed.description.as_deref().unwrap_or_default().contains(&format!("- {}: ", info.operation)),
            "{} is not in {run_tool}'s description",
            info.operation
        );
        let described =
            structured(&call(&compact, "describe_operation", json!({ "operation": info.operation }), None).await);
        let own = per_route.iter().find(|t| t.name == info.operation).unwrap();
        assert_eq!(described["input_schema"], Value::Object(own.input_schema.as_ref().clone()), "{}", info.operation);
        assert_eq!(described["output_schema"], json!(own.output_schema.as_deref()), "{}", info.operation);
        assert_eq!(described["run_with"]["tool"], run_tool);
        assert_eq!(described["http"]["path"], info.path);
    }
    assert_eq!(enum_of("chain_read").len() + enum_of("document_operation").len(), catalog.routes().count());
    compact.cancel().await.unwrap();
    full.cancel().await.unwrap();
}

#[tokio::test]
async fn a_run_tool_answers_as_the_operations_own_tool_and_names_wrong_fields_under_input() {
    let server = serve(Context::new(), None).await;
    let client = http_client(&format!("{}/mcp", server.base)).await;
    let file = file_input("sample-files/pdflatex-4-pages.pdf");
    let run = |operation: &str, input: Value| json!({ "operation": operation, "input": input });

    let result =
        call(&client, "document_operation", run("rotate_pdf_pages", json!({ "file": file, "degrees": 90 })), None)
            .await;
    let described = structured(&result);
    let files = embedded(&result);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "application/pdf");
    assert_eq!(qpdf_pages(&files[0].2), 4);
    assert_eq!(described["files"][0]["filename"], "pdflatex-4-pages-rotated.pdf");

    // The operation's own validation, its fields named under /input.
    let error = tool_error(
        &call(&client, "document_operation", run("rotate_pdf_pages", json!({ "file": file, "degrees": 45 })), None)
            .await,
    );
    assert_eq!(
        (error["code"].as_str(), error["field"].as_str()),
        (Some("invalid_input"), Some("/input/degrees")),
        "{error}"
    );
    assert!(error["message"].as_str().unwrap().starts_with("/input/degrees"), "{error}");
    let error =
        tool_error(&call(&client, "document_operation", run("rotate_pdf_pages", json!({ "degrees": 90 })), None).await);
    assert_eq!(error["field"], "/input/file", "{error}");

    // The run tool's own arguments.
    for (arguments, field) in [
        (json!({ "input": {} }), "/operation"),
        (json!({ "operation": 7, "input": {} }), "/operation"),
        (json!({ "operation": "rotate_pdf_pages" }), "/input"),
        (json!({ "operation": "rotate_pdf_pages", "input": "file.pdf" }), "/input"),
        // An operation of the other family, and one that does not exist.
        (run("get_gas_price", json!({ "chain": "base" })), "/operation"),
        (run("no_such_operation", json!({})), "/operation"),
    ] {
        let error = tool_error(&call(&client, "document_operation", arguments.clone(), None).await);
        assert_eq!(error["field"], field, "{arguments}: {error}");
    }
    let error =
        tool_error(&call(&client, "describe_operation", json!({ "operation": "no_such_operation" }), None).await);
    assert_eq!(error["field"], "/operation", "{error}");
    // A per-route tool is not a tool on the compact surface.
    assert!(client.call_tool(rmcp::model::CallToolRequestParams::new("rotate_pdf_pages")).await.is_err());
    client.cancel().await.unwrap();
}
