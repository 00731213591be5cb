//! `/v1/pdf/sign`, `/v1/pdf/verify-signatures` and `/v1/pdf/remove-signatures` against a
//! real little PKI (OpenSSL's `ca`), a real RFC 3161 authority (OpenSSL's `ts` behind a
//! loopback HTTP handler) and an independent validator and signer (pyHanko).

use crate::common;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::route::{call, call_files, file_body};
use paperchain_engine::Context;
use paperchain_engine::fetch::AddressPolicy;
use paperchain_testkit::b64;
use paperchain_testkit::pki::{Pki, Tsa, sign_with_pyhanko, validate_with_pyhanko};
use serde_json::{Value, json};

const SIGN: &str = "/v1/pdf/sign";
const VERIFY: &str = "/v1/pdf/verify-signatures";
const REMOVE: &str = "/v1/pdf/remove-signatures";

/// Two pages by reportlab, the second turned, with a text field on the first.
const CONTRACT: &str = r#"
import sys
from reportlab.pdfgen import canvas
c = canvas.Canvas(sys.argv[1] + "/contract.pdf", pagesize=(595, 842))
c.setFont("Helvetica-Bold", 18)
c.drawString(72, 770, "Service agreement 2026-44")
c.setFont("Helvetica", 11)
c.drawString(72, 740, "The parties agree on the terms below.")
c.acroForm.textfield(name="client", x=72, y=600, width=200, height=20, value="Nordlicht GmbH")
c.showPage()
c.setPageRotation(90)
c.drawString(72, 500, "Annex A")
c.save()
print("ok")
"#;

fn loopback() -> Context {
    Context::with_policy(AddressPolicy::allowing([IpAddr::V4(Ipv4Addr::LOCALHOST)]))
}

fn p12(path: &Path, password: &str) -> Value {
    json!({ "data": b64(&std::fs::read(path).unwrap()), "filename": "signer.p12", "password": password })
}

fn sign_body(pdf: &[u8], pki: &Pki, more: Value) -> Value {
    let mut body = file_body(pdf, "contract.pdf", &json!({ "certificate": p12(&pki.rsa_p12(), pki.password()) }));
    for (k, v) in more.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

async fn verify(ctx: &Context, pdf: &[u8], roots: &[PathBuf]) -> Value {
    let roots: Vec<Value> =
        roots.iter().map(|r| json!({ "data": b64(&std::fs::read(r).unwrap()), "filename": "root.pem" })).collect();
    call(ctx, VERIFY, file_body(pdf, "signed.pdf", &json!({ "trust_roots": roots }))).await.unwrap()
}

fn qpdf_check(path: &Path) {
    let out = Command::new("qpdf").arg("--check").arg(path).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Renders page `page` of `pdf` with poppler; kept as `<name>.png` in
/// `$PAPERCHAIN_KEEP_RENDERS` when that is set, for a person to look at.
fn keep_render(pdf: &Path, page: u32, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let page = page.to_string();
    let status = Command::new("pdftoppm")
        .args(["-r", "60", "-f", &page, "-l", &page, "-png", "-singlefile"])
        .arg(pdf)
        .arg(dir.path().join("page"))
        .status()
        .unwrap();
    assert!(status.success(), "poppler renders the signed page");
    if let Some(keep) = std::env::var_os("PAPERCHAIN_KEEP_RENDERS") {
        std::fs::copy(dir.path().join("page.png"), Path::new(&keep).join(format!("{name}.png"))).unwrap();
    }
}

/// pyHanko's modification level as ours names it.
fn level(pyhanko: &Value) -> String {
    pyhanko["modification_level"].as_str().unwrap_or("NONE").to_ascii_lowercase()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_time_stamped_visible_signature_is_valid_for_pyhanko() {
    let (dir, pdf) = common::written_by(CONTRACT, "contract.pdf");
    let pki = Pki::new(dir.path());
    let tsa = Tsa::start(&pki).await;
    let ctx = loopback();
    let body = sign_body(
        &pdf,
        &pki,
        json!({ "box_pt": [300, 80, 540, 150], "reason": "I approve this agreement", "location": "Lyon",
                "timestamp_url": tsa.url }),
    );
    let set = call_files(&ctx, SIGN, body).await.unwrap();
    assert_eq!(tsa.requests(), 1, "one time stamp is asked for");
    let report = set.report.clone().unwrap();
    assert_eq!(report["level"], "B-T", "{report}");
    assert_eq!(
        (report["field"].as_str(), report["page"].as_u64(), report["visible"].as_bool()),
        (Some("Signature1"), Some(1), Some(true))
    );
    assert_eq!(report["signer"], "Ada Signer");
    assert_eq!(set.files[0].filename, "contract-signed.pdf");
    let signed = &set.files[0].bytes;
    // An incremental update: the original bytes come first, unchanged.
    assert_eq!(&signed[..pdf.len()], &pdf[..]);
    let path = write(dir.path(), "signed.pdf", signed);
    qpdf_check(&path);

    let seen = validate_with_pyhanko(&path, &[&pki.root_pem()]);
    let sig = &seen["signatures"][0];
    assert_eq!(sig["field"], "Signature1", "{seen}");
    assert_eq!(
        (sig["intact"].as_bool(), sig["valid"].as_bool(), sig["trusted"].as_bool()),
        (Some(true), Some(true), Some(true)),
        "{seen}"
    );
    assert_eq!(sig["coverage"], "ENTIRE_FILE");
    assert_eq!(sig["subfilter"], "/ETSI.CAdES.detached");
    assert_eq!(sig["signer"]["common_name"], "Ada Signer");
    assert_eq!(sig["timestamp"]["valid"], true, "{seen}");
    assert_eq!(sig["timestamp"]["trusted"], true, "{seen}");
    assert_eq!(sig["bottom_line"], true, "{seen}");

    let ours = verify(&ctx, signed, &[pki.root_pem()]).await;
    let s = &ours["signatures"][0];
    assert_eq!(ours["count"], 1);
    assert_eq!(s["status"], "valid", "{ours}");
    assert_eq!(
        (s["intact"].as_bool(), s["valid"].as_bool(), s["trusted"].as_bool()),
        (Some(true), Some(true), Some(true))
    );
    assert_eq!(s["coverage"]["whole_file"], true);
    assert_eq!(s["time_stamp"]["valid"], true, "{ours}");
    assert_eq!(s["time_stamp"]["trusted"], true);
    assert_eq!(s["time_stamp"]["time"], report["time_stamp"]);
    assert_eq!(s["validated_at"], report["time_stamp"], "the certificates are checked at the stamped time");
    assert_eq!(s["visible"], true);
    assert_eq!(s["path"].as_array().unwrap().len(), 3, "signer, intermediate, root: {ours}");

    // The appearance, as a person sees it: rendered for a look.
    let png = dir.path().join("page");
    let status = Command::new("pdftoppm")
        .args(["-r", "60", "-f", "1", "-l", "1", "-png"])
        .arg(&path)
        .arg(&png)
        .status()
        .unwrap();
    assert!(status.success());
    if let Some(keep) = std::env::var_os("PAPERCHAIN_KEEP_RENDERS") {
        std::fs::copy(dir.path().join("page-1.png"), Path::new(&keep).join("signed-page-1.png")).unwrap();
    }
    let text = Command::new("pdftotext").args(["-f", "1", "-l", "1"]).arg(&path).arg("-").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Service agreement"), "{text}");

    // Only the other root: intact and valid, but not trusted, for both.
    let seen = validate_with_pyhanko(&path, &[&pki.other_root_pem()]);
    assert_eq!(seen["signatures"][0]["trusted"], false);
    let ours = verify(&ctx, signed, &[pki.other_root_pem()]).await;
    assert_eq!(ours["signatures"][0]["status"], "untrusted", "{ours}");
    assert_eq!(ours["signatures"][0]["intact"], true);
    // No roots at all: the signer is unknown.
    let ours = verify(&ctx, signed, &[]).await;
    assert_eq!(ours["signatures"][0]["status"], "unknown_signer", "{ours}");
    assert_eq!(ours["signatures"][0]["trusted"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_signature_keeps_the_first_valid() {
    let (dir, pdf) = common::written_by(CONTRACT, "contract.pdf");
    let pki = Pki::new(dir.path());
    let ctx = Context::new();
    // ECDSA, invisible, then RSA from a legacy (3DES, SHA-1 MAC) PKCS#12 on the turned page.
    let mut body = sign_body(&pdf, &pki, json!({ "field": "Seller" }));
    body["certificate"] = p12(&pki.ec_p12(), pki.password());
    let first = call_files(&ctx, SIGN, body).await.unwrap();
    assert_eq!(first.report.as_ref().unwrap()["algorithm"], "ecdsa-sha256");
    assert_eq!(first.report.as_ref().unwrap()["visible"], false);
    let mut body =
        sign_body(&first.files[0].bytes, &pki, json!({ "field": "Buyer", "page": 2, "box_pt": [40, 40, 260, 110] }));
    body["certificate"] = p12(&pki.rsa_legacy_p12(), pki.password());
    let second = call_files(&ctx, SIGN, body).await.unwrap();
    let path = write(dir.path(), "twice.pdf", &second.files[0].bytes);
    qpdf_check(&path);
    // The box on the turned page reads upright, as the page is shown.
    keep_render(&path, 2, "signed-turned-page-2");

    let seen = validate_with_pyhanko(&path, &[&pki.root_pem()]);
    let ours = verify(&ctx, &second.files[0].bytes, &[pki.root_pem()]).await;
    assert_eq!(ours["count"], 2, "{ours}");
    for (theirs, mine) in seen["signatures"].as_array().unwrap().iter().zip(ours["signatures"].as_array().unwrap()) {
        assert_eq!(theirs["field"], mine["field"]);
        assert_eq!(theirs["intact"], mine["intact"], "{theirs} / {mine}");
        assert_eq!(theirs["valid"], mine["valid"]);
        assert_eq!(theirs["trusted"], mine["trusted"]);
        assert_eq!(theirs["bottom_line"], true, "{theirs}");
        assert_eq!(mine["status"], "valid", "{mine}");
    }
    let first_sig = &ours["signatures"][0];
    assert_eq!(first_sig["field"], "Seller");
    assert_eq!(first_sig["coverage"]["whole_file"], false);
    assert_eq!(first_sig["coverage"]["whole_revision"], true);
    assert_eq!(first_sig["coverage"]["revisions_after"], 1);
    assert_eq!(first_sig["modifications"]["level"], level(&seen["signatures"][0]), "{ours}\n{seen}");
    assert_eq!(seen["signatures"][0]["coverage"], "ENTIRE_REVISION");
    assert_eq!(ours["signatures"][1]["page"], 2);
    assert_eq!(ours["signatures"][1]["signer"]["common_name"], "Ada Signer");
    assert_eq!(ours["signatures"][0]["signer"]["common_name"], "Eve Signer");
}

/// Past 50 signatures the rest are counted, not validated, and the file is not called
/// all valid; the 50 validated are the first in the form's order, each intact.
#[tokio::test(flavor = "multi_thread")]
async fn past_fifty_signatures_the_rest_are_counted_not_checked() {
    let (dir, pdf) = common::written_by(CONTRACT, "contract.pdf");
    let pki = Pki::new(dir.path());
    let ctx = Context::new();
    let mut signed = pdf;
    for n in 1..=52 {
        let body = sign_body(&signed, &pki, json!({ "field": format!("Party{n}") }));
        signed = call_files(&ctx, SIGN, body).await.unwrap().files.remove(0).bytes;
    }
    let path = write(dir.path(), "fifty-two.pdf", &signed);
    qpdf_check(&path);
    let ours = verify(&ctx, &signed, &[pki.root_pem()]).await;
    assert_eq!(ours["count"], 52, "{}", ours["count"]);
    assert_eq!(ours["not_checked"], 2);
    assert_eq!(ours["all_valid"], false, "two are not validated");
    let checked = ours["signatures"].as_array().unwrap();
    assert_eq!(checked.len(), 50);
    for (n, signature) in checked.iter().enumerate() {
        assert_eq!(signature["field"], format!("Party{}", n + 1));
        assert_eq!(signature["status"], "valid", "{signature}");
        assert_eq!(signature["coverage"]["revisions_after"], 51 - n, "{signature}");
    }
}

/// Changes one byte of the page's text inside the signed range.
fn tamper(signed: &[u8], from: &str, to: &str) -> Vec<u8> {
    let mut bytes = signed.to_vec();
    let at = bytes.windows(from.len()).position(|w| w == from.as_bytes()).expect("the text is in the file");
    bytes[at..at + to.len()].copy_from_slice(to.as_bytes());
    bytes
}

/// pyHanko appends a revision that draws on the first page.
const DRAW_AFTER: &str = r#"
import sys, warnings
warnings.simplefilter("ignore")
from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
from pyhanko.pdf_utils import generic
with open(sys.argv[1], "rb") as f:
    w = IncrementalPdfFileWriter(f)
    page = w.root["/Pages"]["/Kids"][0].get_object()
    extra = w.add_object(generic.StreamObject(stream_data=b"0 0 1 rg 72 400 200 50 re f"))
    old = page.raw_get("/Contents")
    items = list(old) if isinstance(old, generic.ArrayObject) else [old]
    page["/Contents"] = generic.ArrayObject(items + [extra])
    w.update_container(page)
    with open(sys.argv[2], "wb") as out:
        w.write(out)
print("ok")
"#;

#[tokio::test(flavor = "multi_thread")]
async fn changes_after_signing_are_reported() {
    let (dir, pdf) = common::written_by(CONTRACT, "contract.pdf");
    let pki = Pki::new(dir.path());
    let ctx = Context::new();
    let signed = call_files(&ctx, SIGN, sign_body(&pdf, &pki, json!({}))).await.unwrap().files[0].bytes.clone();

    // A byte of the signed text changed: not intact, for both.
    // The page's width, 595 pt in the signed bytes.
    let forged = tamper(&signed, "595", "596");
    let path = write(dir.path(), "forged.pdf", &forged);
    let seen = validate_with_pyhanko(&path, &[&pki.root_pem()]);
    assert_eq!(seen["signatures"][0]["intact"], false, "{seen}");
    let ours = verify(&ctx, &forged, &[pki.root_pem()]).await;
    assert_eq!(ours["signatures"][0]["status"], "invalid", "{ours}");
    assert_eq!(ours["signatures"][0]["intact"], false);
    assert!(ours["signatures"][0]["summary"].as_str().unwrap().contains("changed"), "{ours}");

    // A revision appended after signing draws on the page: intact, but modified.
    let signed_path = write(dir.path(), "signed.pdf", &signed);
    let drawn = dir.path().join("drawn.pdf");
    assert_eq!(paperchain_testkit::tools::run_python(DRAW_AFTER, &[&signed_path, &drawn]).trim(), "ok");
    let seen = validate_with_pyhanko(&drawn, &[&pki.root_pem()]);
    assert_eq!(seen["signatures"][0]["intact"], true, "{seen}");
    assert_eq!(seen["signatures"][0]["modification_level"], "OTHER", "{seen}");
    let ours = verify(&ctx, &std::fs::read(&drawn).unwrap(), &[pki.root_pem()]).await;
    let s = &ours["signatures"][0];
    assert_eq!(s["status"], "modified", "{ours}");
    assert_eq!(s["intact"], true);
    assert_eq!(s["modifications"]["level"], "other");
    assert!(
        s["modifications"]["changes"].as_array().unwrap().iter().any(|c| c.as_str().unwrap().contains("page 1")),
        "{ours}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn validation_agrees_with_pyhanko_on_files_it_signed() {
    let (dir, pdf) = common::written_by(CONTRACT, "contract.pdf");
    let pki = Pki::new(dir.path());
    let tsa = Tsa::start(&pki).await;
    let ctx = Context::new();
    let input = write(dir.path(), "in.pdf", &pdf);
    let one = dir.path().join("one.pdf");
    sign_with_pyhanko(&input, &one, &pki.rsa_p12(), pki.password(), &["--pades", "--tsa", &tsa.url]);
    let two = dir.path().join("two.pdf");
    sign_with_pyhanko(&one, &two, &pki.ec_p12(), pki.password(), &["--visible", "1,300,50,500,120"]);
    let forged = write(dir.path(), "forged.pdf", &tamper(&std::fs::read(&two).unwrap(), "595", "596"));
    for (file, roots) in [
        (&one, vec![pki.root_pem()]),
        (&two, vec![pki.root_pem()]),
        (&two, vec![pki.other_root_pem()]),
        (&forged, vec![pki.root_pem()]),
    ] {
        let root_refs: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
        let seen = validate_with_pyhanko(file, &root_refs);
        let ours = verify(&ctx, &std::fs::read(file).unwrap(), &roots).await;
        let theirs = seen["signatures"].as_array().unwrap();
        let mine = ours["signatures"].as_array().unwrap();
        assert_eq!(theirs.len(), mine.len(), "{seen}\n{ours}");
        for (t, m) in theirs.iter().zip(mine) {
            let what = format!("{} of {}: pyHanko {t}\nours {m}", m["field"], file.display());
            assert_eq!(t["field"], m["field"], "{what}");
            assert_eq!(t["intact"], m["intact"], "{what}");
            if t["intact"] == true {
                assert_eq!(t["valid"], m["valid"], "{what}");
                assert_eq!(t["trusted"], m["trusted"], "{what}");
                assert_eq!(level(t), m["modifications"]["level"].as_str().unwrap(), "{what}");
                assert_eq!(t["coverage"] == "ENTIRE_FILE", m["coverage"]["whole_file"] == true, "{what}");
                assert_eq!(t["bottom_line"] == true, m["status"] == "valid", "{what}");
                assert_eq!(t["timestamp"].is_object(), m["time_stamp"].is_object(), "{what}");
                if t["timestamp"].is_object() {
                    assert_eq!(t["timestamp"]["valid"], m["time_stamp"]["valid"], "{what}");
                    assert_eq!(t["timestamp"]["trusted"], m["time_stamp"]["trusted"], "{what}");
                }
            } else {
                assert_eq!(m["status"], "invalid", "{what}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn signatures_are_removed_and_an_empty_field_signed_again() {
    let (dir, pdf) = common::written_by(CONTRACT, "contract.pdf");
    let pki = Pki::new(dir.path());
    let ctx = Context::new();
    let once =
        call_files(&ctx, SIGN, sign_body(&pdf, &pki, json!({ "field": "Approval", "box_pt": [300, 80, 540, 150] })))
            .await
            .unwrap();
    let twice = call_files(&ctx, SIGN, sign_body(&once.files[0].bytes, &pki, json!({}))).await.unwrap();
    assert_eq!(twice.report.as_ref().unwrap()["field"], "Signature1");

    // One field emptied and kept; then signed again by name.
    let body = file_body(&twice.files[0].bytes, "twice.pdf", &json!({ "fields": ["Approval"], "keep_fields": true }));
    let cleared = call_files(&ctx, REMOVE, body).await.unwrap();
    assert_eq!(cleared.report.as_ref().unwrap()["removed"], json!(["Approval"]));
    assert_eq!(cleared.report.as_ref().unwrap()["remaining"], 1);
    let path = write(dir.path(), "cleared.pdf", &cleared.files[0].bytes);
    qpdf_check(&path);
    let ours = verify(&ctx, &cleared.files[0].bytes, &[]).await;
    // The rewrite breaks the other signature's byte range: it is reported, not hidden.
    assert_eq!(ours["count"], 1, "{ours}");
    assert_eq!(ours["signatures"][0]["field"], "Signature1");
    let again =
        call_files(&ctx, SIGN, sign_body(&cleared.files[0].bytes, &pki, json!({ "field": "Approval" }))).await.unwrap();
    let report = again.report.as_ref().unwrap();
    assert_eq!((report["field"].as_str(), report["visible"].as_bool()), (Some("Approval"), Some(true)), "{report}");
    let path = write(dir.path(), "again.pdf", &again.files[0].bytes);
    let seen = validate_with_pyhanko(&path, &[&pki.root_pem()]);
    let approval = seen["signatures"].as_array().unwrap().iter().find(|s| s["field"] == "Approval").unwrap().clone();
    assert_eq!(
        (approval["intact"].as_bool(), approval["valid"].as_bool(), approval["trusted"].as_bool()),
        (Some(true), Some(true), Some(true)),
        "{seen}"
    );

    // Every signature and field gone.
    let body = file_body(&again.files[0].bytes, "again.pdf", &json!({}));
    let bare = call_files(&ctx, REMOVE, body).await.unwrap();
    assert_eq!(bare.report.as_ref().unwrap()["remaining"], 0);
    let path = write(dir.path(), "bare.pdf", &bare.files[0].bytes);
    qpdf_check(&path);
    assert_eq!(verify(&ctx, &bare.files[0].bytes, &[]).await["count"], 0);
    let seen = validate_with_pyhanko(&path, &[]);
    assert_eq!(seen["signatures"], json!([]), "{seen}");
    // The text field is still there.
    let fields = Command::new("qpdf").args(["--json", "--json-key=acroform"]).arg(&path).output().unwrap();
    let fields = String::from_utf8_lossy(&fields.stdout);
    assert!(fields.contains("\"client\""), "{fields}");
    assert!(!fields.contains("Approval"), "{fields}");
    let e = common::route::err(&ctx, REMOVE, file_body(&bare.files[0].bytes, "bare.pdf", &json!({}))).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("no_signatures", Some("/file")));
    let body = file_body(&again.files[0].bytes, "again.pdf", &json!({ "fields": ["Approval", "Nope"] }));
    let e = common::route::err(&ctx, REMOVE, body).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("form_mismatch", Some("/fields/1")), "{e:?}");
    assert!(e.message.contains("Signature1"), "the message lists the signed fields: {}", e.message);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_signing_inputs_are_refused_naming_the_field() {
    let (dir, pdf) = common::written_by(CONTRACT, "contract.pdf");
    let pki = Pki::new(dir.path());
    let ctx = loopback();
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            sign_body(&pdf, &pki, json!({ "certificate": p12(&pki.rsa_p12(), "wrong") })),
            "wrong_password",
            "/certificate/password",
        ),
        (
            sign_body(&pdf, &pki, json!({ "certificate": p12(&pki.rsa_p12(), "") })),
            "password_required",
            "/certificate/password",
        ),
        (
            sign_body(&pdf, &pki, json!({ "certificate": { "data": b64(&pdf), "password": "x" } })),
            "invalid_certificate",
            "/certificate",
        ),
        (sign_body(&pdf, &pki, json!({ "field": "client" })), "not_a_signature_field", "/field"),
        // A file kept in a keyring is read by the local call path; the engine (a hosted service) never has one.
        (
            sign_body(&pdf, &pki, json!({ "certificate": { "keyring": "ada" } })),
            "keyring_not_here",
            "/certificate/keyring",
        ),
        (sign_body(&pdf, &pki, json!({ "page": 3 })), "page_out_of_range", "/page"),
        (sign_body(&pdf, &pki, json!({ "box_pt": [500, 10, 700, 60] })), "invalid_input", "/box_pt"),
        (sign_body(&pdf, &pki, json!({ "box_pt": [50, 60, 10, 10] })), "invalid_input", "/box_pt"),
        (sign_body(&pdf, &pki, json!({ "timestamp_url": "ftp://tsa.example/" })), "invalid_input", "/timestamp_url"),
        (sign_body(&pdf, &pki, json!({ "reason": "x".repeat(501) })), "invalid_input", "/reason"),
    ];
    for (body, code, field) in cases {
        let e = common::route::err(&ctx, SIGN, body).await;
        assert_eq!((e.code.as_ref(), e.field.as_deref()), (code, Some(field)), "{e:?}");
        assert!(!e.message.contains(pki.password()), "the password is never quoted: {}", e.message);
    }

    // A field signed already.
    let signed = call_files(&ctx, SIGN, sign_body(&pdf, &pki, json!({}))).await.unwrap().files[0].bytes.clone();
    let e = common::route::err(&ctx, SIGN, sign_body(&signed, &pki, json!({ "field": "Signature1" }))).await;
    assert_eq!(e.code, "already_signed");

    // Time-stamp authorities that refuse, fail, or may not be reached.
    let rejecting = Tsa::start_rejecting(&pki).await;
    let e = common::route::err(&ctx, SIGN, sign_body(&pdf, &pki, json!({ "timestamp_url": rejecting.url }))).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("timestamp_failed", Some("/timestamp_url")), "{e:?}");
    assert!(e.message.contains("rejection"), "{}", e.message);
    let failing = Tsa::start_failing(&pki).await;
    let e = common::route::err(&ctx, SIGN, sign_body(&pdf, &pki, json!({ "timestamp_url": failing.url }))).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("fetch_failed", Some("/timestamp_url")), "{e:?}");
    let tsa = Tsa::start(&pki).await;
    let e = common::route::err(&Context::new(), SIGN, sign_body(&pdf, &pki, json!({ "timestamp_url": tsa.url }))).await;
    assert_eq!(e.code, "blocked_target", "a loopback authority is refused outside tests: {e:?}");
    assert_eq!(tsa.requests(), 0);

    // An encrypted PDF.
    let encrypted = dir.path().join("locked.pdf");
    let input = write(dir.path(), "in.pdf", &pdf);
    let status = Command::new("qpdf")
        .args(["--encrypt", "", "owner", "256", "--"])
        .arg(&input)
        .arg(&encrypted)
        .status()
        .unwrap();
    assert!(status.success());
    let e = common::route::err(&ctx, SIGN, sign_body(&std::fs::read(&encrypted).unwrap(), &pki, json!({}))).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("encrypted_pdf", Some("/file")), "{e:?}");

    // Trust roots that are not certificates.
    let e = common::route::err(
        &ctx,
        VERIFY,
        file_body(&signed, "s.pdf", &json!({ "trust_roots": [{ "data": b64(b"not a certificate") }] })),
    )
    .await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("invalid_certificate", Some("/trust_roots/0")), "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_corpus_pdf_is_signed_or_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let ctx = Context::new();
    let corpus = paperchain_testkit::corpus::corpus().join("pdf");
    let mut files: Vec<PathBuf> = walk(&corpus);
    files.sort();
    let (mut signed, mut refused) = (0, Vec::new());
    for file in &files {
        let pdf = std::fs::read(file).unwrap();
        match call_files(&ctx, SIGN, sign_body(&pdf, &pki, json!({ "box_pt": [0, 0, 2, 2] }))).await {
            Ok(set) => {
                signed += 1;
                if let Some(keep) = std::env::var_os("PAPERCHAIN_KEEP_RENDERS") {
                    std::fs::write(Path::new(&keep).join(file.file_name().unwrap()), &set.files[0].bytes).unwrap();
                }
                let ours = verify(&ctx, &set.files[0].bytes, &[pki.root_pem()]).await;
                let last = ours["signatures"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["coverage"]["whole_file"] == true)
                    .cloned();
                let last = last.unwrap_or_else(|| panic!("{}: no signature covers the file: {ours}", file.display()));
                assert_eq!(last["status"], "valid", "{}: {last}", file.display());
                let out = write(dir.path(), "out.pdf", &set.files[0].bytes);
                let check = Command::new("qpdf").arg("--check").arg(&out).output().unwrap();
                assert_ne!(
                    check.status.code(),
                    Some(2),
                    "{}: {}",
                    file.display(),
                    String::from_utf8_lossy(&check.stdout)
                );
                let rewritten = set.report.as_ref().unwrap()["rewritten"] == true;
                if !rewritten {
                    assert_eq!(
                        &set.files[0].bytes[..pdf.len()],
                        &pdf[..],
                        "{}: not an incremental update",
                        file.display()
                    );
                }
                // One in eight, and every rewritten one, also for pyHanko.
                if rewritten || signed % 8 == 1 {
                    let seen = validate_with_pyhanko(&out, &[&pki.root_pem()]);
                    if seen["error"].is_string() {
                        // pyHanko reads strictly: an input it cannot read is no test of the signature.
                        let before = validate_with_pyhanko(file, &[]);
                        assert!(
                            before["error"].is_string(),
                            "{}: only the signed file is unreadable: {seen}",
                            file.display()
                        );
                        continue;
                    }
                    let theirs = seen["signatures"].as_array().and_then(|s| s.last()).cloned().unwrap_or_default();
                    assert_eq!(theirs["intact"], true, "{}: {seen}", file.display());
                    assert_eq!(theirs["trusted"], true, "{}: {seen}", file.display());
                    assert_eq!(theirs["coverage"], "ENTIRE_FILE", "{}: {seen}", file.display());
                }
            }
            Err(e) => {
                assert!(
                    [
                        "encrypted_pdf",
                        "damaged_pdf",
                        "password_required",
                        "not_a_pdf",
                        "too_many_pages",
                        "file_too_large"
                    ]
                    .contains(&e.code.as_ref()),
                    "{}: {e:?}",
                    file.display()
                );
                assert_eq!(e.field.as_deref(), Some("/file"), "{}: {e:?}", file.display());
                refused.push(format!("{}: {}", file.file_name().unwrap().to_string_lossy(), e.code));
            }
        }
    }
    eprintln!("signed {signed} of {} corpus PDFs; refused: {refused:?}", files.len());
    // What is refused is encrypted, not a PDF, or too damaged to read at all.
    assert!(signed * 10 >= files.len() * 8, "signed only {signed} of {}: {refused:?}", files.len());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
            out.push(path);
        }
    }
    out
}
