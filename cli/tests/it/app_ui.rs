//! The app at `/app` in a real browser: `paperchain serve` on a local anvil, and the
//! browser tests of `ui/tests/` (Debian's Chromium driven by puppeteer-core, axe-core for
//! accessibility) run against it by Node's test runner. Screenshots of each screen are kept
//! in `ui/test-artifacts/`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{self, Home};
use paperchain_testkit::anvil::Anvil;
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::sandbox::{self, Setup};

pub(crate) fn ui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui")
}

struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_app_works_in_a_real_browser() {
    let ui = ui_dir();
    assert!(
        ui.join("node_modules/puppeteer-core").is_dir(),
        "ui/node_modules is missing: `cargo xtask setup` installs it"
    );
    let chain = Anvil::start(8453).await;
    let address = "0x1111111111111111111111111111111111111111";
    chain.set_balance(address, 1_234_567_000_000_000_000).await;

    let data = tempfile::tempdir().unwrap();
    // The app writes Claude Desktop's configuration in this home, beside what is there.
    let claude = data.path().join("config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    std::fs::write(&claude, r#"{"theme": "kept"}"#).unwrap();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data.path())
        .env("HOME", data.path())
        // The renderer and the other tools stay where setup put them.
        .env("PAPERCHAIN_TOOLS", paperchain_testkit::tools::tools_dir())
        .env("XDG_CONFIG_HOME", data.path().join("config"))
        .env("PAPERCHAIN_RPC_BASE", &chain.url)
        .env("PAPERCHAIN_RUNTIME_DIR", data.path().join("run"))
        .env_remove("PAPERCHAIN_CHAINS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until_listening(&mut child, port);
    let _served = Served(child);

    // Absolute: the browser reads it from another working folder.
    let pdf = std::fs::canonicalize(corpus().join("pdf/sample-files/pdflatex-4-pages.pdf")).unwrap();
    // The fixture signing identity (engine/tests/fixtures/signing/README.md).
    let certificate = std::fs::canonicalize(ui.join("../engine/tests/fixtures/signing/signer.p12")).unwrap();
    let artifacts = ui.join("test-artifacts");
    let env = [
        ("PAPERCHAIN_APP_URL", format!("http://127.0.0.1:{port}")),
        ("PAPERCHAIN_PDF", pdf.display().to_string()),
        ("PAPERCHAIN_PDF_PAGES", "4".into()),
        ("PAPERCHAIN_ADDRESS", address.into()),
        ("PAPERCHAIN_BALANCE", "1.234567".into()),
        ("PAPERCHAIN_CLAUDE_CONFIG", claude.display().to_string()),
        ("PAPERCHAIN_CERTIFICATE", certificate.display().to_string()),
        ("PAPERCHAIN_CERTIFICATE_PASSWORD", "fixture".into()),
        ("PAPERCHAIN_CERTIFICATE_SIGNER", "Paperchain Fixture Signer".into()),
    ];
    run_browser_tests("app.test.mjs", &env, 9).await;
    for screen in [
        "01-documents-empty",
        "03-rotate-result",
        "04-merge-form",
        "07-chain-address",
        "08-spend",
        "09-agents",
        "11-n-up-result",
        "13-pdfa-result",
        "14-sign-form",
        "15-sign-result",
        "16-verify-result",
    ] {
        assert!(artifacts.join(format!("{screen}.png")).is_file(), "screenshot {screen}");
    }
}

/// Runs one file of `ui/tests` with `env`; every one of its `tests` tests must pass.
pub(crate) async fn run_browser_tests(file: &str, env: &[(&str, String)], tests: usize) {
    let ui = ui_dir();
    assert!(
        ui.join("node_modules/puppeteer-core").is_dir(),
        "ui/node_modules is missing: `cargo xtask setup` installs it"
    );
    let run = tokio::process::Command::new("node")
        .args(["--test", "--test-reporter=spec", &format!("tests/{file}")])
        .current_dir(&ui)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("PAPERCHAIN_ARTIFACTS", ui.join("test-artifacts"))
        .output()
        .await
        .expect("running node");
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "the browser tests failed:\n{said}");
    // Every test ran: none skipped, none left out.
    assert!(
        said.contains(&format!("ℹ pass {tests}")) && said.contains("ℹ fail 0") && said.contains("ℹ skipped 0"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paid_calls_wait_for_the_users_approval_and_show_in_the_ledger() {
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    // The sandbox's price of one gas read; every payment above half of it needs approval.
    let required: serde_json::Value =
        hosted.post("/v1/chain/gas", &serde_json::json!({"chain": "base"}), &[]).await.json().await.unwrap();
    let atomic: u64 = required["accepts"][0]["amount"].as_str().unwrap().parse().unwrap();
    home.run(&["config", "set", "policy.approve_above", &dollars(atomic / 2)], "");
    let server = home.serve();
    let payer = hosted.chain.payer();
    let before = hosted.balance(payer).await;

    // The dialog names the service by its host.
    let authority = hosted.base.trim_start_matches("http://");
    let service_host = authority.rsplit_once(':').map_or(authority, |(host, _)| host).to_string();
    let env = [
        ("PAPERCHAIN_APP_URL", server.base.clone()),
        ("PAPERCHAIN_SERVICE_HOST", service_host),
        ("PAPERCHAIN_QUOTE", dollars(atomic)),
        ("PAPERCHAIN_PAYER", payer.to_checksum(None)),
        ("PAPERCHAIN_GRANT_FOLDER", home.dir.path().join("Documents").display().to_string()),
        ("PAPERCHAIN_PASSWORD", common::PASSWORD.to_string()),
    ];
    std::fs::create_dir(home.dir.path().join("Documents")).unwrap();
    run_browser_tests("paid.test.mjs", &env, 5).await;

    // Two payments, the approved one and the one after the limit was raised: exactly twice
    // the quote left the payer, and the denied call paid nothing.
    assert_eq!(hosted.balance(payer).await, before - alloy::primitives::U256::from(2 * atomic));
    let ledger = home.json(&["ledger", "--json"]);
    let paid: Vec<_> = ledger.as_array().unwrap().iter().filter(|r| r["micros"].as_i64() > Some(0)).collect();
    assert_eq!(paid.len(), 2, "{ledger}");
    assert!(paid.iter().all(|r| r["state"] == "paid"), "{ledger}");
    let config = std::fs::read_to_string(home.dir.path().join("config/paperchain/config.toml")).unwrap();
    assert!(config.contains("approve_above = \"1.00\""), "{config}");
    let refused: Vec<_> = ledger.as_array().unwrap().iter().filter(|r| r["state"] != "paid").collect();
    assert!(refused.iter().any(|r| r["error"].as_str().is_some_and(|e| e.contains("refused"))), "{ledger}");
}

/// Micro-dollars as the app writes them: at least two decimals, no trailing zeros beyond.
fn dollars(micros: u64) -> String {
    let text = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let fraction = fraction.trim_end_matches('0');
    format!("{whole}.{fraction:0<2}")
}
