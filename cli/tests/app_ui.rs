//! The app at `/app` in a real browser: `paperchain serve` on a local anvil, and the
//! browser tests of `ui/tests/` (Debian's Chromium driven by puppeteer-core, axe-core for
//! accessibility) run against it by Node's test runner. Screenshots of each screen are kept
//! in `ui/test-artifacts/`.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use paperchain_testkit::anvil::Anvil;
use paperchain_testkit::corpus::corpus;

fn ui_dir() -> PathBuf {
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
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data.path())
        .env("PAPERCHAIN_RPC_BASE", &chain.url)
        .env("PAPERCHAIN_RUNTIME_DIR", data.path().join("run"))
        .env_remove("PAPERCHAIN_CHAINS")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut stderr = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
            panic!("paperchain serve exited ({status}): {stderr}");
        }
        assert!(started.elapsed() < Duration::from_secs(30), "paperchain serve did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _served = Served(child);

    // Absolute: the browser reads it from another working folder.
    let pdf = std::fs::canonicalize(corpus().join("pdf/sample-files/pdflatex-4-pages.pdf")).unwrap();
    let artifacts = ui.join("test-artifacts");
    let run = tokio::process::Command::new("node")
        .args(["--test", "--test-reporter=spec", "tests/"])
        .current_dir(&ui)
        .env("PAPERCHAIN_APP_URL", format!("http://127.0.0.1:{port}"))
        .env("PAPERCHAIN_PDF", &pdf)
        .env("PAPERCHAIN_PDF_PAGES", "4")
        .env("PAPERCHAIN_ADDRESS", address)
        .env("PAPERCHAIN_BALANCE", "1.234567")
        .env("PAPERCHAIN_ARTIFACTS", &artifacts)
        .output()
        .await
        .expect("running node");
    let said = format!("{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "the browser tests failed:\n{said}");
    // Every test ran: none skipped, none left out.
    assert!(said.contains("ℹ fail 0") && said.contains("ℹ skipped 0"), "{said}");
    for screen in
        ["01-documents-empty", "03-rotate-result", "04-merge-form", "07-chain-address", "08-spend", "09-agents"]
    {
        assert!(artifacts.join(format!("{screen}.png")).is_file(), "screenshot {screen}");
    }
}
