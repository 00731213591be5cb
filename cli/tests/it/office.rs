//! Office and HTML conversion as a process: on a machine without LibreOffice, Chromium or
//! the box they run in, `unavailable` naming the package, before the input is read; a
//! conversion leaves nothing in the temporary folder, and no LibreOffice running, once the
//! command ends.

use std::path::Path;
use std::process::Command;

/// A Word file (the corpus's plainest).
fn word_file(dir: &Path) -> String {
    let source = paperchain_testkit::corpus::corpus().join("office/docx/default.docx");
    let path = dir.join("letter.docx");
    std::fs::copy(source, &path).unwrap();
    format!("file={}", path.display())
}

fn paperchain(dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command
        .args(args)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"));
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

#[test]
fn a_missing_engine_or_box_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = word_file(dir.path());
    let out_path = dir.path().join("letter.pdf");
    let args = ["call", "office_to_pdf", "--route", "local", "--file", &file, "--out", out_path.to_str().unwrap()];
    let nowhere = dir.path().join("nowhere");
    for (setting, named) in [("PAPERCHAIN_SOFFICE", "libreoffice-writer-nogui"), ("PAPERCHAIN_BWRAP", "bubblewrap")] {
        let out = paperchain(dir.path(), &args, &[(setting, &nowhere)]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{setting}: {stderr}");
        assert!(stderr.contains("unavailable"), "{setting}: {stderr}");
        if setting == "PAPERCHAIN_SOFFICE" {
            assert!(stderr.contains(named) && stderr.contains(setting), "the package and setting are named: {stderr}");
        } else {
            assert!(stderr.contains(&nowhere.display().to_string()), "the program tried is named: {stderr}");
        }
        assert!(!out_path.exists());
    }
}

#[test]
fn html_to_pdf_without_chromium_names_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.json");
    std::fs::write(&input, r#"{"html": "<p>Hello</p>"}"#).unwrap();
    let out_path = dir.path().join("page.pdf");
    let args = [
        "call",
        "html_to_pdf",
        "--route",
        "local",
        "--input",
        input.to_str().unwrap(),
        "--out",
        out_path.to_str().unwrap(),
    ];
    let out = paperchain(dir.path(), &args, &[("PAPERCHAIN_CHROMIUM", &dir.path().join("nowhere"))]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("unavailable") && stderr.contains("chromium") && stderr.contains("PAPERCHAIN_CHROMIUM"),
        "{stderr}"
    );
    assert!(!out_path.exists());
    // With the browser, the same call works and leaves nothing in the temporary folder.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = paperchain(dir.path(), &args, &[("TMPDIR", &tmp)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read(&out_path).unwrap().starts_with(b"%PDF"));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
}

#[test]
fn a_conversion_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let file = word_file(dir.path());
    let out_path = dir.path().join("letter.pdf");
    let args = ["call", "office_to_pdf", "--route", "local", "--file", &file, "--out", out_path.to_str().unwrap()];
    let out = paperchain(dir.path(), &args, &[("TMPDIR", &tmp)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read(&out_path).unwrap().starts_with(b"%PDF"));
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "left in the temporary folder: {left:?}");
    // No LibreOffice of this run is still running (its profiles were under this TMPDIR) once
    // it has had a moment to exit: on a busy machine the last one may still be closing.
    let still_running = || {
        let out = Command::new("pgrep").args(["-f", &tmp.display().to_string()]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !still_running().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let running = still_running();
    assert!(running.is_empty(), "still running 10 s after the call: {running}");
}
