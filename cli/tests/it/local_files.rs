//! Files on the user's own machine, as desktop agents use them: the official MCP TypeScript
//! and Python SDK clients, over stdio (`paperchain mcp --stdio`) and over HTTP (`/mcp` of
//! `paperchain serve`), rotate a PDF given by path into an output path, read it back with
//! `resources/read` and inspect it by path; a path outside the granted folder, a `..` escape
//! and a symlink escape are tool errors naming the field, and nothing is written outside or
//! over an existing file. The HTTP API takes the same paths (`Paperchain-Save-To`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use paperchain_testkit::node::{interop_script, last_json_line_of};
use paperchain_testkit::pdf::qpdf_pages_of;
use paperchain_testkit::tools::{require_node_packages, tools_dir};
use serde_json::{Value, json};

use crate::common::{Server, wait_until_listening};

/// Longest one SDK session may take (start-up, the handshake, eight steps).
const SESSION_TIMEOUT: Duration = Duration::from_secs(120);

/// A user's machine: a home, a granted folder holding `report.pdf`, a folder outside it
/// holding `secret.pdf`, and in the granted folder a symlink to the secret and one to the
/// outside folder.
struct Machine {
    dir: tempfile::TempDir,
}

impl Machine {
    fn new() -> Machine {
        let dir = tempfile::tempdir().unwrap();
        let machine = Machine { dir };
        for folder in ["home", "data", "config/paperchain", "granted", "outside"] {
            std::fs::create_dir_all(machine.path(folder)).unwrap();
        }
        let report = paperchain_testkit::corpus::corpus_file("sample-files/pdflatex-4-pages.pdf");
        std::fs::write(machine.granted("report.pdf"), &report).unwrap();
        std::fs::write(machine.path("outside/secret.pdf"), &report).unwrap();
        std::os::unix::fs::symlink(machine.path("outside/secret.pdf"), machine.granted("link.pdf")).unwrap();
        std::os::unix::fs::symlink(machine.path("outside"), machine.granted("away")).unwrap();
        let config = format!("[files]\nfolders = [{:?}]\n", machine.path("granted").display().to_string());
        std::fs::write(machine.path("config/paperchain/config.toml"), config).unwrap();
        machine
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn granted(&self, name: &str) -> PathBuf {
        self.path("granted").join(name)
    }

    /// The environment `paperchain` runs with as this user (no wallet, no service).
    fn env(&self) -> Vec<(&'static str, String)> {
        let at = |relative: &str| self.path(relative).display().to_string();
        vec![
            ("HOME", at("home")),
            ("XDG_CONFIG_HOME", at("config")),
            ("PAPERCHAIN_DATA_DIR", at("data")),
            ("PAPERCHAIN_RUNTIME_DIR", at("data/run")),
            ("PAPERCHAIN_WALLET_STORE", "keystore".into()),
        ]
    }

    fn serve(&self) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
        command.args(["serve", "--listen", &format!("127.0.0.1:{port}")]);
        for name in ["PAPERCHAIN_CLIENT_CONFIG", "PAPERCHAIN_SERVICE_URL", "PAPERCHAIN_ROUTE", "XDG_DATA_HOME"] {
            command.env_remove(name);
        }
        let log = std::fs::File::create(self.path(&format!("serve-{port}.log"))).unwrap();
        let mut child =
            command.envs(self.env()).stdin(Stdio::null()).stdout(Stdio::null()).stderr(log).spawn().unwrap();
        wait_until_listening(&mut child, port);
        Server { child, base: format!("http://127.0.0.1:{port}") }
    }

    /// The plan's server: `paperchain mcp --stdio` as a child of the SDK client.
    fn stdio_server(&self) -> Value {
        let env: serde_json::Map<String, Value> =
            self.env().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
        json!({
            "command": env!("CARGO_BIN_EXE_paperchain"),
            "args": ["mcp", "--stdio", "--standalone"],
            "env": env,
        })
    }

    fn names_in(&self, folder: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(folder))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// One rotate of `report.pdf` into `rotated-<tag>.pdf`, read back, inspected by path; then
/// the refusals.
fn steps(machine: &Machine, tag: &str) -> Vec<Value> {
    let path = |p: PathBuf| p.display().to_string();
    let rotated = machine.granted(&format!("rotated-{tag}.pdf"));
    let rotate = |file: String, save_to: Option<String>| {
        let mut arguments = json!({
            "operation": "rotate_pdf_pages",
            "input": { "file": { "path": file }, "degrees": 90 },
        });
        if let Some(save_to) = save_to {
            arguments["save_to"] = json!(save_to);
        }
        json!({ "call": "document_operation", "arguments": arguments })
    };
    let report = path(machine.granted("report.pdf"));
    vec![
        rotate(report.clone(), Some(path(rotated.clone()))),
        json!({ "read": url_of(&rotated) }),
        json!({ "call": "document_operation", "arguments": {
            "operation": "inspect_pdf_document", "input": { "file": { "path": path(rotated.clone()) } },
        }}),
        rotate(path(machine.path("outside/secret.pdf")), None),
        rotate(format!("{}/../outside/secret.pdf", machine.path("granted").display()), None),
        rotate(path(machine.granted("link.pdf")), None),
        rotate(path(machine.granted("away/secret.pdf")), None),
        rotate(report.clone(), Some(path(machine.path(&format!("outside/out-{tag}.pdf"))))),
        rotate(report.clone(), Some(path(machine.granted("away/out.pdf")))),
        rotate(report, Some(path(machine.granted("report.pdf")))),
    ]
}

fn url_of(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// What each step of [`steps`] must have answered, and what must be on disk.
fn check(machine: &Machine, tag: &str, line: &Value) {
    let answers = line["steps"].as_array().unwrap_or_else(|| panic!("{tag}: no steps: {line}"));
    let result = |i: usize| -> &Value {
        answers[i].get("result").unwrap_or_else(|| panic!("{tag}: step {i} failed: {}", answers[i]))
    };
    let rotated = machine.granted(&format!("rotated-{tag}.pdf"));

    // Saved, answered as a file:// link and a line saying where.
    let saved = result(0);
    assert_ne!(saved["isError"], true, "{tag}: {saved}");
    let file = &saved["structuredContent"]["files"][0];
    assert_eq!(file["uri"], url_of(&rotated), "{tag}: {saved}");
    let on_disk = std::fs::read(&rotated).unwrap_or_else(|e| panic!("{tag}: {}: {e}", rotated.display()));
    assert_eq!(file["bytes"], on_disk.len() as u64, "{tag}");
    let content = saved["content"].as_array().unwrap();
    assert!(
        content.iter().any(|c| c["type"] == "resource_link" && c["uri"] == url_of(&rotated)),
        "{tag}: a resource link to the saved file: {saved}"
    );
    assert!(!content.iter().any(|c| c["type"] == "resource"), "{tag}: no file embedded: {saved}");
    assert_eq!(qpdf_pages_of(&rotated), 4, "{tag}: the saved PDF opens");

    // resources/read gives the bytes on disk.
    let read = &result(1)["contents"][0];
    assert_eq!(read["mimeType"], "application/pdf", "{tag}");
    let blob = paperchain_testkit::b64_decode(read["blob"].as_str().unwrap()).unwrap();
    assert_eq!(blob, on_disk, "{tag}: resources/read reads the saved file");

    // The saved file, read by path, is rotated.
    let inspected = &result(2)["structuredContent"];
    let pages = inspected["pages"].as_array().unwrap_or_else(|| panic!("{tag}: {inspected}"));
    assert_eq!(pages.len(), 4, "{tag}");
    assert!(pages.iter().all(|p| p["rotation"] == 90), "{tag}: every page turned 90°: {inspected}");

    // Escapes and refusals: tool errors naming the field.
    let refused = |i: usize, field: &str, code: &str| {
        let answer = result(i);
        assert_eq!(answer["isError"], true, "{tag}: step {i}: {answer}");
        let text = answer["content"][0]["text"].as_str().unwrap();
        let error: Value = serde_json::from_str(text).unwrap();
        assert_eq!(error["error"]["field"], field, "{tag}: step {i}: {error}");
        assert_eq!(error["error"]["code"], code, "{tag}: step {i}: {error}");
    };
    refused(3, "/input/file/path", "path_not_granted");
    refused(4, "/input/file/path", "path_not_granted");
    refused(5, "/input/file/path", "path_not_granted");
    refused(6, "/input/file/path", "path_not_granted");
    refused(7, "/save_to", "path_not_granted");
    refused(8, "/save_to", "path_not_granted");
    refused(9, "/save_to", "file_exists");
}

/// The plan through the TypeScript SDK client.
async fn typescript(server: Value, steps: Vec<Value>, label: &str) -> Value {
    let plan = json!({ "server": server, "steps": steps });
    let line = crate::common::ts_sdk_session(&plan, SESSION_TIMEOUT, label).await;
    assert!(line["sdk"].as_str().is_some_and(|v| v.starts_with("1.")), "{label}: {line}");
    line
}

/// The plan through the Python SDK client (the tools venv's `mcp`).
async fn python(tools: &Path, server: Value, steps: Vec<Value>, label: &str) -> Value {
    let plan = json!({ "server": server, "steps": steps }).to_string();
    let mut command = tokio::process::Command::new(tools.join("bin/python"));
    command.arg(interop_script("mcp_sdk_session.py"));
    let line = last_json_line_of(command, Some(plan.as_bytes()), SESSION_TIMEOUT, label).await;
    assert!(line["sdk"].as_str().is_some_and(|v| !v.is_empty()), "{label}: {line}");
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_rotate_a_pdf_by_path_over_stdio_and_http_and_cannot_leave_the_granted_folder() {
    let tools = tools_dir();
    require_node_packages(&tools, "the MCP TypeScript SDK", &["@modelcontextprotocol/sdk"]);
    let machine = Machine::new();
    let report_before = std::fs::read(machine.granted("report.pdf")).unwrap();

    let line = typescript(machine.stdio_server(), steps(&machine, "ts-stdio"), "ts-stdio").await;
    check(&machine, "ts-stdio", &line);
    let line = python(&tools, machine.stdio_server(), steps(&machine, "py-stdio"), "py-stdio").await;
    check(&machine, "py-stdio", &line);

    let server = machine.serve();
    let mcp = json!({ "url": format!("{}/mcp", server.base) });
    let line = typescript(mcp.clone(), steps(&machine, "ts-http"), "ts-http").await;
    check(&machine, "ts-http", &line);
    let line = python(&tools, mcp, steps(&machine, "py-http"), "py-http").await;
    check(&machine, "py-http", &line);

    // A per-route tool takes save_to beside its input; the TypeScript client checks the
    // answer against the tool's output schema.
    let full = json!({ "url": format!("{}/mcp/docs", server.base) });
    let per_route = json!({ "call": "rotate_pdf_pages", "arguments": {
        "file": { "path": machine.granted("report.pdf") }, "degrees": 180,
        "save_to": machine.granted("turned.pdf"),
    }});
    let line = typescript(full, vec![per_route], "ts-per-route").await;
    let result = &line["steps"][0]["result"];
    assert_ne!(result["isError"], true, "{line}");
    assert_eq!(result["structuredContent"]["files"][0]["uri"], url_of(&machine.granted("turned.pdf")), "{line}");

    // The HTTP API: a path in, the result saved; the answer is JSON naming the file.
    let http = reqwest::Client::new();
    let rotate = format!("{}/v1/pdf/rotate", server.base);
    let body = json!({ "file": { "path": machine.granted("report.pdf") }, "degrees": 270 });
    let answer = http
        .post(&rotate)
        .header("paperchain-save-to", machine.granted("http.pdf").display().to_string())
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let saved: Value = answer.json().await.unwrap();
    assert_eq!(saved["files"][0]["uri"], url_of(&machine.granted("http.pdf")), "{saved}");
    assert_eq!(qpdf_pages_of(&machine.granted("http.pdf")), 4);
    let escape = json!({ "file": { "path": machine.granted("link.pdf") }, "degrees": 90 });
    let answer = http.post(&rotate).json(&escape).send().await.unwrap();
    assert_eq!(answer.status(), 422);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(error["error"]["field"], "/file/path", "{error}");
    // Without the header the file comes back as bytes, as before.
    let body = json!({ "file": { "path": machine.granted("report.pdf") }, "degrees": 90 });
    let answer = http.post(&rotate).json(&body).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert!(answer.bytes().await.unwrap().starts_with(b"%PDF"));

    // A folder granted in the app's settings holds from the next call, and so does its removal.
    let later = machine.path("later");
    std::fs::create_dir(&later).unwrap();
    std::fs::copy(machine.granted("report.pdf"), later.join("scan.pdf")).unwrap();
    let body = json!({ "file": { "path": later.join("scan.pdf") }, "degrees": 90 });
    let status = |answer: reqwest::Response| answer.status().as_u16();
    assert_eq!(status(http.post(&rotate).json(&body).send().await.unwrap()), 422);
    let token = crate::common::app_token(&server.base).await;
    let settings = format!("{}/app/api/settings", server.base);
    let grant = json!({ "key": "files.folders", "add": later });
    let answer = http.post(&settings).header("x-paperchain-token", &token).json(&grant).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    let shown: Value = answer.json().await.unwrap();
    assert!(shown["files"]["folders"].as_array().unwrap().contains(&json!(later)), "{shown}");
    assert_eq!(status(http.post(&rotate).json(&body).send().await.unwrap()), 200);
    let revoke = json!({ "key": "files.folders", "remove": later });
    let answer = http.post(&settings).header("x-paperchain-token", &token).json(&revoke).send().await.unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(status(http.post(&rotate).json(&body).send().await.unwrap()), 422);
    let wide = json!({ "key": "files.folders", "add": "/" });
    let answer = http.post(&settings).header("x-paperchain-token", &token).json(&wide).send().await.unwrap();
    assert_eq!(answer.status(), 422);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(error["error"]["field"], "/add", "{error}");

    // Nothing was written outside, nor over the input; no temporary file stayed.
    assert_eq!(machine.names_in("outside"), ["secret.pdf"]);
    assert_eq!(std::fs::read(machine.granted("report.pdf")).unwrap(), report_before);
    assert_eq!(
        machine.names_in("granted"),
        [
            "away",
            "http.pdf",
            "link.pdf",
            "report.pdf",
            "rotated-py-http.pdf",
            "rotated-py-stdio.pdf",
            "rotated-ts-http.pdf",
            "rotated-ts-stdio.pdf",
            "turned.pdf"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_folder_granted_a_path_is_refused_saying_how_to_grant_one() {
    let tools = tools_dir();
    let machine = Machine::new();
    std::fs::remove_file(machine.path("config/paperchain/config.toml")).unwrap();
    let step = json!({ "call": "document_operation", "arguments": {
        "operation": "rotate_pdf_pages", "input": { "file": { "path": machine.granted("report.pdf") }, "degrees": 90 },
    }});
    let line = python(&tools, machine.stdio_server(), vec![step], "no-folder").await;
    let result = &line["steps"][0]["result"];
    assert_eq!(result["isError"], true, "{line}");
    let error: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(error["error"]["code"], "no_folder_granted", "{error}");
    assert_eq!(error["error"]["field"], "/input/file/path", "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("paperchain config add files.folders"), "{error}");

    // --folder grants one for this process.
    let mut server = machine.stdio_server();
    server["args"] = json!(["mcp", "--stdio", "--standalone", "--folder", machine.path("granted")]);
    let step = json!({ "call": "document_operation", "arguments": {
        "operation": "rotate_pdf_pages", "input": { "file": { "path": machine.granted("report.pdf") }, "degrees": 90 },
        "save_to": machine.granted("granted-by-flag.pdf"),
    }});
    let line = python(&tools, server, vec![step], "--folder").await;
    assert_ne!(line["steps"][0]["result"]["isError"], true, "{line}");
    assert_eq!(qpdf_pages_of(&machine.granted("granted-by-flag.pdf")), 4);
}

/// A result larger than what is embedded comes back as a link to a copy the server keeps,
/// which `resources/read` reads; a small one stays embedded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_result_is_a_link_read_back_with_resources_read() {
    use rmcp::ServiceExt as _;
    use rmcp::model::{CallToolRequestParams, ContentBlock, ReadResourceRequestParams, ResourceContents};

    let machine = Machine::new();
    let large = paperchain_testkit::corpus::corpus_file("sample-files/cmyk-image.pdf");
    assert!(large.len() > paperchain_mcp::results::EMBED_LIMIT, "the input is larger than what is embedded");
    std::fs::write(machine.granted("large.pdf"), &large).unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command.args(["mcp", "--stdio", "--standalone"]).env_remove("PAPERCHAIN_CLIENT_CONFIG").envs(machine.env());
    let client = ().serve(rmcp::transport::TokioChildProcess::new(command).unwrap()).await.unwrap();
    let rotate = |name: &str| {
        let input = json!({ "file": { "path": machine.granted(name) }, "degrees": 90 });
        let arguments = json!({ "operation": "rotate_pdf_pages", "input": input });
        CallToolRequestParams::new("document_operation").with_arguments(arguments.as_object().cloned().unwrap())
    };

    let result = client.call_tool(rotate("large.pdf")).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    let file = result.structured_content.as_ref().unwrap()["files"][0].clone();
    let uri = file["uri"].as_str().unwrap().to_string();
    assert!(uri.starts_with("paperchain://results/") && uri.ends_with("/large-rotated.pdf"), "{file}");
    assert!(!result.content.iter().any(|c| matches!(c, ContentBlock::Resource(_))), "nothing embedded");
    assert!(
        result.content.iter().any(|c| matches!(c, ContentBlock::ResourceLink(link) if link.uri == uri)),
        "a resource link to the kept result: {:?}",
        result.content
    );
    let read = client.read_resource(ReadResourceRequestParams::new(uri.clone())).await.unwrap();
    let ResourceContents::BlobResourceContents { blob, mime_type, .. } = &read.contents[0] else {
        panic!("a blob: {read:?}")
    };
    let bytes = paperchain_testkit::b64_decode(blob).unwrap();
    assert_eq!(mime_type.as_deref(), Some("application/pdf"));
    assert_eq!(bytes.len() as u64, file["bytes"].as_u64().unwrap());
    use sha2::Digest as _;
    assert_eq!(hex::encode(sha2::Sha256::digest(&bytes)), file["sha256"], "the bytes the result describes");
    assert!(bytes.starts_with(b"%PDF"));
    let unknown = uri.replace("/results/", "/results/0");
    assert!(client.read_resource(ReadResourceRequestParams::new(unknown)).await.is_err(), "only kept ids are read");

    // A small result stays embedded.
    let result = client.call_tool(rotate("report.pdf")).await.unwrap();
    assert!(result.content.iter().any(|c| matches!(c, ContentBlock::Resource(_))), "{:?}", result.content);
    client.cancel().await.unwrap();
}
