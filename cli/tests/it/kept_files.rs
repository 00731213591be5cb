//! A signing identity kept in the OS keyring (a real Secret Service on a private bus):
//! `paperchain wallet file add` checks the PKCS#12 file opens with its password and keeps
//! both in the keyring only; a local call names it as `{"keyring": "NAME"}` and signs with
//! it; nothing of it reaches a file on disk.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use paperchain_testkit::keyring::SecretService;
use serde_json::{Value, json};

const FIXTURE: &[u8] = include_bytes!("../../../engine/tests/fixtures/signing/signer.p12");

struct User {
    service: SecretService,
    data: tempfile::TempDir,
}

impl User {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = self.service.command(env!("CARGO_BIN_EXE_paperchain"));
        command
            .args(args)
            .env("PAPERCHAIN_DATA_DIR", self.data.path())
            .env("PAPERCHAIN_RUNTIME_DIR", self.data.path().join("run"))
            .env("XDG_CONFIG_HOME", self.data.path().join("config"))
            .env("PAPERCHAIN_WALLET_STORE", "keyring")
            .env_remove("PAPERCHAIN_CLIENT_CONFIG")
            .env_remove("PAPERCHAIN_SERVICE_URL")
            .env_remove("PAPERCHAIN_ROUTE");
        command
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child =
            self.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.data.path().join(name)
    }
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_signing_identity_kept_in_the_keyring_signs_local_calls_and_stays_there() {
    let user = User { service: SecretService::start(), data: tempfile::tempdir().unwrap() };
    let p12 = user.path("signer.p12");
    std::fs::write(&p12, FIXTURE).unwrap();
    let p12 = p12.display().to_string();

    // A wrong password is refused, and nothing is kept.
    let refused = user.run(&["wallet", "file", "add", "ada", &p12], "not it\n");
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(text(&refused).contains("password"), "{}", text(&refused));
    assert!(!text(&refused).contains("not it"), "the password is never repeated: {}", text(&refused));
    let shown = user.run(&["wallet", "file", "show", "ada"], "");
    assert!(!shown.status.success(), "{}", text(&shown));

    let added = user.run(&["wallet", "file", "add", "ada", &p12], "fixture\n");
    assert!(added.status.success(), "{}", text(&added));
    assert!(text(&added).contains("Paperchain Fixture Signer"), "the certificate is named: {}", text(&added));
    let shown = user.run(&["wallet", "file", "show", "ada"], "");
    assert!(text(&shown).contains("signer.p12") && text(&shown).contains("with its password"), "{}", text(&shown));
    // Kept once: a second add under that name needs --replace.
    let again = user.run(&["wallet", "file", "add", "ada", &p12], "fixture\n");
    assert!(!again.status.success() && text(&again).contains("already"), "{}", text(&again));
    std::fs::remove_file(&p12).unwrap();

    // A local call names it instead of sending it.
    let pdf = paperchain_testkit::corpus::corpus_file("sample-files/pdflatex-4-pages.pdf");
    let input = user.path("sign.json");
    let body = json!({ "file": { "data": paperchain_testkit::b64(&pdf), "filename": "report.pdf" },
                       "certificate": { "keyring": "ada" }, "reason": "Approved" });
    std::fs::write(&input, body.to_string()).unwrap();
    let out = user.path("out");
    let input_arg = input.display().to_string();
    let out_arg = out.display().to_string();
    let signed = user.run(&["call", "sign_pdf", "-i", &input_arg, "-o", &out_arg, "--force", "--standalone"], "");
    assert!(signed.status.success(), "{}", text(&signed));
    let signed_pdf = std::fs::read(&out).unwrap();
    assert!(signed_pdf.windows(20).any(|w| w == b"/ETSI.CAdES.detached"), "a PAdES signature");

    let verify = user.path("verify.json");
    let body = json!({ "file": { "data": paperchain_testkit::b64(&signed_pdf) } });
    std::fs::write(&verify, body.to_string()).unwrap();
    let verify_arg = verify.display().to_string();
    let checked = user.run(&["call", "verify_pdf_signatures", "-i", &verify_arg, "--standalone"], "");
    assert!(checked.status.success(), "{}", text(&checked));
    let answer: Value = serde_json::from_slice(&checked.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&checked)));
    assert_eq!(answer["signatures"][0]["signer"]["common_name"], "Paperchain Fixture Signer", "{answer}");
    assert_eq!(answer["signatures"][0]["intact"], true);

    // A name nothing is kept under.
    let body = json!({ "file": { "data": paperchain_testkit::b64(&pdf) }, "certificate": { "keyring": "nobody" } });
    std::fs::write(&input, body.to_string()).unwrap();
    let missing = user.run(&["call", "sign_pdf", "-i", &input_arg, "-o", &out_arg, "--force", "--standalone"], "");
    assert!(!missing.status.success());
    assert!(
        text(&missing).contains("keyring_file_missing") || text(&missing).contains("no file is kept"),
        "{}",
        text(&missing)
    );

    // With a wallet and a service, routes go there when the configuration says so; a call
    // holding a signing key stays here unless it asks otherwise itself, and a kept file is
    // never sent. The service's address listens nowhere: whatever is sent fails to connect.
    // Anvil's first development key: a wallet nothing is paid from here.
    let key = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80\n";
    let imported = user.run(&["wallet", "import"], key);
    assert!(imported.status.success(), "{}", text(&imported));
    let nowhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let set = user.run(&["config", "set", "service.url", &format!("http://{nowhere}")], "");
    assert!(set.status.success(), "{}", text(&set));
    let hosted_by_default = |args: &[&str]| {
        let mut command = user.command(args);
        command.env("PAPERCHAIN_ROUTE", "hosted").stdin(Stdio::null());
        command.output().unwrap()
    };
    let rotate = user.path("rotate.json");
    std::fs::write(&rotate, json!({ "file": { "data": paperchain_testkit::b64(&pdf) }, "degrees": 90 }).to_string())
        .unwrap();
    let rotated = hosted_by_default(&["call", "rotate_pdf_pages", "-i", &rotate.display().to_string(), "-o", &out_arg]);
    assert!(!rotated.status.success(), "a plain route goes to the (unreachable) service: {}", text(&rotated));
    let body = json!({ "file": { "data": paperchain_testkit::b64(&pdf) },
                       "certificate": { "data": paperchain_testkit::b64(FIXTURE), "password": "fixture" } });
    std::fs::write(&input, body.to_string()).unwrap();
    let kept_here = hosted_by_default(&["call", "sign_pdf", "-i", &input_arg, "-o", &out_arg, "--force"]);
    assert!(kept_here.status.success(), "a signing key stays here: {}", text(&kept_here));
    assert!(std::fs::read(&out).unwrap().windows(20).any(|w| w == b"/ETSI.CAdES.detached"));
    let body = json!({ "file": { "data": paperchain_testkit::b64(&pdf) }, "certificate": { "keyring": "ada" } });
    std::fs::write(&input, body.to_string()).unwrap();
    let sent = user.run(&["call", "sign_pdf", "-i", &input_arg, "-o", &out_arg, "--force", "--route", "hosted"], "");
    assert!(!sent.status.success(), "{}", text(&sent));
    assert!(text(&sent).contains("keyring_not_here"), "refused before sending: {}", text(&sent));

    // Neither the file nor its password reached a file of the user's data.
    for file in files(user.data.path()) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!bytes.windows(FIXTURE.len()).any(|w| w == FIXTURE), "{} holds the PKCS#12 file", file.display());
        assert!(!bytes.windows(8).any(|w| w == b"\"fixture"), "{} holds the password", file.display());
    }

    let removed = user.run(&["wallet", "file", "remove", "ada", "--yes"], "");
    assert!(removed.status.success(), "{}", text(&removed));
    assert!(!user.run(&["wallet", "file", "show", "ada"], "").status.success());
}
