//! The MCP bundle desktop agents install (`cargo xtask bundle --bundles mcpb`), used as an
//! agent's app uses it. The official bundle tool (npm `@anthropic-ai/mcpb`, installed by
//! `cargo xtask setup`) reads, unpacks and validates the bundle, and works out the command
//! its manifest names with the user's settings; that command, run in a fresh home with
//! nothing of this machine's environment, speaks MCP over stdio, lists the tools the
//! manifest promises and renders a PDF from the granted folder with the libpdfium packed
//! beside it. The registry's `server.json` is checked against the registry's schema
//! (check-jsonschema, from setup) and against the bundle's SHA-256.

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use paperchain_testkit::corpus::corpus_file;
use paperchain_testkit::tools::{npm_bin, require_node_packages, tools_dir};
use rmcp::ServiceExt as _;
use rmcp::model::{CallToolRequestParams, ContentBlock, ResourceContents};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// What `paperchain mcp --stdio --standalone` lists in a fresh home: the compact surface
/// with the paying client's two read-only tools (the client is there without a wallet).
const TOOLS: [&str; 5] = ["chain_read", "document_operation", "describe_operation", "wallet_budget", "quote_operation"];

/// The registry schema kept in xtask/schemas, and the SHA-256 of the published file.
const SERVER_SCHEMA: &str = "xtask/schemas/server.schema.2025-12-11.json";
const SERVER_SCHEMA_SHA256: &str = "3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace holds cli/").to_path_buf()
}

/// The official bundle tool, as setup installs it.
fn mcpb() -> PathBuf {
    let tools = tools_dir();
    require_node_packages(&tools, "the MCP bundle tool", &["@anthropic-ai/mcpb"]);
    npm_bin(&tools, "mcpb")
}

fn check_jsonschema() -> PathBuf {
    let program = tools_dir().join("bin/check-jsonschema");
    assert!(program.is_file(), "check-jsonschema is missing at {}; run `cargo xtask setup`", program.display());
    program
}

/// Runs `command`; panics with both outputs unless it succeeds.
fn run(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{what} did not start: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `cargo xtask bundle --bundles mcpb`, packing the `paperchain` this test suite runs, into `out`.
fn build_bundle(out: &Path) -> (PathBuf, PathBuf) {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo
        .current_dir(workspace())
        .args(["xtask", "bundle", "--bundles", "mcpb", "--program", env!("CARGO_BIN_EXE_paperchain"), "--out"])
        .arg(out);
    // Cargo's variables for this test would look like a change to build scripts that watch
    // them, and rebuild what `cargo xtask` built (xtask's own `cargo()` drops them too).
    for (key, _) in std::env::vars_os() {
        let name = key.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || name.starts_with("CARGO_BIN_EXE_")
            || matches!(name.as_ref(), "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR")
        {
            cargo.env_remove(&key);
        }
    }
    run(&mut cargo, "cargo xtask bundle --bundles mcpb (it installs what it needs with `cargo xtask setup`)");
    let bundles: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|x| x == "mcpb"))
        .collect();
    assert_eq!(bundles.len(), 1, "one bundle in {}: {bundles:?}", out.display());
    (bundles[0].clone(), out.join("server.json"))
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The command and environment an agent's app runs for the bundle unpacked in `extension`,
/// as the official bundle library works them out from the manifest, the user's `settings`
/// and the user's `home`.
fn mcp_config(extension: &Path, settings: &Value, home: &Path) -> Value {
    let library = tools_dir().join("npm/node_modules/@anthropic-ai/mcpb/dist/index.js");
    const SCRIPT: &str = r#"
        import { readFileSync } from "node:fs";
        const [library, extension, settings, home] = process.argv.slice(1);
        const { getMcpConfigForManifest } = await import(library);
        const manifest = JSON.parse(readFileSync(`${extension}/manifest.json`, "utf8"));
        const systemDirs = { HOME: home, DESKTOP: `${home}/Desktop`, DOCUMENTS: `${home}/Documents`, DOWNLOADS: `${home}/Downloads` };
        const config = await getMcpConfigForManifest({
            manifest, extensionPath: extension, systemDirs, userConfig: JSON.parse(settings), pathSeparator: "/",
        });
        console.log(JSON.stringify(config ?? null));
    "#;
    let output = run(
        Command::new("node")
            .args(["--input-type=module", "-e", SCRIPT])
            .arg(library)
            .arg(extension)
            .arg(settings.to_string())
            .arg(home),
        "the bundle library's getMcpConfigForManifest",
    );
    serde_json::from_slice(&output.stdout).expect("the MCP configuration as JSON")
}

#[tokio::test]
async fn the_mcp_bundle_installs_as_an_agent_app_runs_it() {
    let mcpb = mcpb();
    let check_jsonschema = check_jsonschema();
    let work = tempfile::tempdir().unwrap();
    let (bundle, server_json) = build_bundle(&work.path().join("out"));
    let file_name = bundle.file_name().unwrap().to_string_lossy().into_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(file_name, format!("paperchain-{version}-linux-x64.mcpb"));

    // The bundle tool reads it and unpacks it.
    let info = run(Command::new(&mcpb).arg("info").arg(&bundle), "mcpb info");
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains(&format!("File: {file_name}")) && info.contains("Size:"), "{info}");
    let extension = work.path().join("extension");
    run(Command::new(&mcpb).arg("unpack").arg(&bundle).arg(&extension), "mcpb unpack");
    let program = extension.join("paperchain");
    let mode = std::fs::metadata(&program).expect("the program in the bundle").permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "the program stays executable: {mode:o}");
    assert!(extension.join("lib/libpdfium.so").is_file() && extension.join("icon.png").is_file());

    // The manifest passes the official validation, icon included.
    let validated = run(Command::new(&mcpb).arg("validate").arg(extension.join("manifest.json")), "mcpb validate");
    let validated = String::from_utf8_lossy(&validated.stdout);
    assert!(validated.contains("Manifest schema validation passes!") && !validated.contains("ERROR"), "{validated}");
    let manifest: Value = serde_json::from_slice(&std::fs::read(extension.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["manifest_version"], "0.3");
    assert_eq!(manifest["name"], "paperchain");
    assert_eq!(manifest["version"], version);
    assert_eq!(manifest["license"], env!("CARGO_PKG_LICENSE"));
    assert_eq!(manifest["server"]["type"], "binary");
    assert_eq!(manifest["server"]["entry_point"], "paperchain");
    assert_eq!(manifest["compatibility"], json!({ "platforms": ["linux"] }), "only what was built");
    assert_eq!(manifest["user_config"]["route_mode"]["default"], "local");
    assert_eq!(manifest["user_config"]["allowed_folders"]["type"], "directory");
    assert_eq!(manifest["user_config"]["allowed_folders"]["multiple"], true);
    let promised: Vec<&str> =
        manifest["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(promised, TOOLS);

    // A fresh home with one granted folder holding a PDF, and a file outside it.
    let home = work.path().join("home");
    let granted = home.join("Documents/papers");
    std::fs::create_dir_all(&granted).unwrap();
    let pdf = corpus_file("sample-files/pdflatex-4-pages.pdf");
    std::fs::write(granted.join("a.pdf"), &pdf).unwrap();
    std::fs::write(home.join("outside.pdf"), &pdf).unwrap();
    let runtime = home.join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();

    // The command the manifest names, as the bundle library substitutes it.
    let settings = json!({ "route_mode": "local", "allowed_folders": [granted] });
    let config = mcp_config(&extension, &settings, &home);
    assert_eq!(config["command"], program.to_str().unwrap(), "{config}");
    let args: Vec<String> =
        config["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
    let expected = ["mcp", "--stdio", "--standalone", "--route", "local", "--folder", granted.to_str().unwrap()];
    assert_eq!(args, expected, "{config}");
    assert_eq!(config["env"], json!({ "PAPERCHAIN_PDFIUM": extension.join("lib") }), "{config}");

    let client = start_bundle(&program, &args, &config, &home, &runtime).await;
    let listed = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, TOOLS, "the tools the manifest promises");

    // A PDF of the granted folder, by path, rendered with the packed libpdfium (a ZIP of the pages' images).
    let render = |file: &Path| {
        let input = json!({ "file": { "path": file }, "format": "png", "dpi": 36, "pages": "1" });
        let arguments = json!({ "operation": "convert_pdf_to_images", "input": input });
        CallToolRequestParams::new("document_operation").with_arguments(arguments.as_object().cloned().unwrap())
    };
    let result = client.call_tool(render(&granted.join("a.pdf"))).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
    let zip = result
        .content
        .iter()
        .find_map(|block| match block {
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::BlobResourceContents { blob, .. } => {
                    Some(base64::engine::general_purpose::STANDARD.decode(blob).unwrap())
                }
                _ => None,
            },
            _ => None,
        })
        .expect("the images, embedded");
    let mut images = zip::ZipArchive::new(std::io::Cursor::new(zip)).expect("a ZIP of the images");
    assert_eq!(images.len(), 1, "page 1 alone");
    let mut png = Vec::new();
    images.by_index(0).unwrap().read_to_end(&mut png).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    // A file outside the granted folder is refused, naming the field.
    let refused = client.call_tool(render(&home.join("outside.pdf"))).await.unwrap();
    assert_eq!(refused.is_error, Some(true), "{:?}", refused.content);
    let error: Value = serde_json::from_str(&refused.content[0].as_text().unwrap().text).unwrap();
    assert_eq!(error["error"]["field"], "/input/file/path", "{error}");
    client.cancel().await.unwrap();

    // No folder granted (the default install: a bare --folder) and two (--folder a b): the
    // command starts, and a file of the second folder is read only when it is granted.
    let second = home.join("Scans");
    std::fs::create_dir_all(&second).unwrap();
    std::fs::write(second.join("b.pdf"), &pdf).unwrap();
    for folders in [json!([]), json!([granted, second])] {
        let settings = json!({ "route_mode": "local", "allowed_folders": folders });
        let config = mcp_config(&extension, &settings, &home);
        let args: Vec<String> =
            config["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect();
        let client = start_bundle(&program, &args, &config, &home, &runtime).await;
        let listed = client.list_all_tools().await.unwrap();
        assert_eq!(listed.iter().map(|t| t.name.as_ref()).collect::<Vec<_>>(), TOOLS, "{args:?}");
        let result = client.call_tool(render(&second.join("b.pdf"))).await.unwrap();
        let granted_both = folders.as_array().unwrap().len() == 2;
        assert_eq!(result.is_error != Some(true), granted_both, "{args:?}: {:?}", result.content);
        client.cancel().await.unwrap();
    }

    // server.json: the registry's schema, the release asset's URL and the bundle's SHA-256.
    let schema = workspace().join(SERVER_SCHEMA);
    assert_eq!(sha256_hex(&std::fs::read(&schema).unwrap()), SERVER_SCHEMA_SHA256, "the kept schema is unchanged");
    run(Command::new(&check_jsonschema).arg("--schemafile").arg(&schema).arg(&server_json), "check-jsonschema");
    let entry: Value = serde_json::from_slice(&std::fs::read(&server_json).unwrap()).unwrap();
    let package = &entry["packages"][0];
    assert_eq!(package["registryType"], "mcpb");
    assert_eq!(package["transport"], json!({ "type": "stdio" }));
    assert_eq!(
        package["identifier"],
        format!("https://github.com/paperchain/paperchain/releases/download/v{version}/{file_name}")
    );
    assert_eq!(package["fileSha256"], sha256_hex(&std::fs::read(&bundle).unwrap()));
    assert_eq!(entry["version"], version);
}

/// The bundle's command started as the app starts it: `args`, the manifest's `env` of
/// `config`, and a fresh `home` (none of this machine's tools folders: the renderer can
/// only be the bundle's); an MCP client over its stdio.
async fn start_bundle(
    program: &Path,
    args: &[String],
    config: &Value,
    home: &Path,
    runtime: &Path,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", runtime);
    for (key, value) in config["env"].as_object().unwrap() {
        command.env(key, value.as_str().unwrap());
    }
    let transport = TokioChildProcess::new(command).expect("starting the bundle's command");
    ().serve(transport).await.unwrap_or_else(|e| panic!("the MCP handshake with the bundle ({args:?}): {e}"))
}
