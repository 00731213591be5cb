//! `paperchain sanctions refresh --from FILE` and `status`, run as the binary with a data
//! folder of their own, and `call screen_sanctions` screening with what the refresh wrote.
//! The fixtures are made-up SDN XML files in the official structures (engine tests). The
//! download from OFAC itself is not tested here (no network).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    paperchain_testkit::workspace_root().join("engine/tests/fixtures/sanctions").join(name)
}

fn paperchain(data: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command
        .args(args)
        .env("PAPERCHAIN_DATA_DIR", data)
        .env("PAPERCHAIN_CLIENT_CONFIG", data.join("no-config.toml"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    if let Some(text) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn status(data: &Path) -> Value {
    let out = paperchain(data, &["sanctions", "status", "--json"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn refresh_from_a_file_writes_the_list_the_route_then_uses() {
    let data = tempfile::tempdir().unwrap();
    let before = status(data.path());
    assert_eq!(before["source"], "bundled");
    assert_eq!(before["date"], "2026-09-30");
    assert_eq!(before["entries"], 1063);
    assert_eq!(before["refreshed_file_exists"], false);

    let sample = fixture("sdn_advanced_sample.xml");
    let out = paperchain(data.path(), &["sanctions", "refresh", "--from", sample.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(said.contains("OFAC SDN list of 2026-11-20: 4 addresses (ETH 1, USDT 1, XBT 2)"), "{said}");
    let file = data.path().join("sanctions/ofac-sdn-addresses.tsv");
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("# date: 2026-11-20"), "{written}");

    let after = status(data.path());
    assert_eq!(
        (after["source"].as_str(), after["date"].as_str(), after["entries"].as_u64()),
        (Some("refreshed"), Some("2026-11-20"), Some(4))
    );

    let out = paperchain(
        data.path(),
        &["call", "screen_sanctions", "--input", "-"],
        Some(r#"{"address": "0x00000000000000000000000000000000A11CE5ED"}"#),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["sanctioned"], true, "{answer:#}");
    assert_eq!(answer["list"]["source"], "refreshed");
    assert_eq!(answer["matches"][0]["uid"], 990001);

    // Nothing usable replaces nothing: a file that is not XML, XML without addresses, an older list.
    let junk = data.path().join("junk.xml");
    std::fs::write(&junk, "<html><body>Service unavailable</body></html>").unwrap();
    let empty = data.path().join("empty.xml");
    std::fs::write(
        &empty,
        "<Sanctions><DateOfIssue><Year>2027</Year><Month>1</Month><Day>2</Day></DateOfIssue></Sanctions>",
    )
    .unwrap();
    let older = data.path().join("older.xml");
    let sample_text = std::fs::read_to_string(&sample).unwrap();
    std::fs::write(
        &older,
        sample_text.replace("<Year>2026</Year>\n    <Month>11</Month>", "<Year>2025</Year>\n    <Month>11</Month>"),
    )
    .unwrap();
    for (bad, why) in [
        (junk, "is not a usable SDN XML file"),
        (empty, "lists no digital currency address"),
        (data.path().join("missing.xml"), "reading"),
        (older, "older than the refreshed list"),
    ] {
        let out = paperchain(data.path(), &["sanctions", "refresh", "--from", bad.to_str().unwrap()], None);
        assert!(!out.status.success(), "{}", bad.display());
        assert!(text(&out.stderr).contains(why), "{}: {}", bad.display(), text(&out.stderr));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), written, "{} replaced the list", bad.display());
    }
    let leftovers: Vec<_> =
        std::fs::read_dir(file.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, [std::ffi::OsString::from("ofac-sdn-addresses.tsv")], "no temporary file is left");
}

#[test]
fn the_classic_sdn_xml_refreshes_too() {
    let data = tempfile::tempdir().unwrap();
    let sample = fixture("sdn_sample.xml");
    let out = paperchain(data.path(), &["sanctions", "refresh", "--from", sample.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 address (XBT 1)"), "{}", text(&out.stdout));
    let out = paperchain(data.path(), &["sanctions", "status"], None);
    assert!(
        text(&out.stdout).contains("In use: the refreshed OFAC SDN list of 2026-11-20 (1 address)"),
        "{}",
        text(&out.stdout)
    );
}
