//! The OCR routes as a process: nothing left in the temporary folder after a call; and on
//! a machine without an OCR engine, `unavailable` naming the packages to install, before
//! any file is read or any URL fetched, the other routes unaffected.

use std::process::Command;

use paperchain_testkit::scan::{Gray, image_pdf, render, sample_page};

#[test]
fn ocr_without_tesseract_names_the_package_and_reads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scan = dir.path().join("scan.pdf");
    let page = Gray { width: 100, height: 100, pixels: vec![255; 100 * 100] };
    std::fs::write(&scan, image_pdf(&[&page], 72)).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_paperchain"))
            .args(args)
            .env("PAPERCHAIN_TESSERACT", dir.path().join("nowhere"))
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .output()
            .unwrap()
    };
    let file = format!("file={}", scan.display());
    let out_path = dir.path().join("out.pdf");
    let input = dir.path().join("input.json");
    std::fs::write(&input, r#"{"url": "https://example.com/page.png"}"#).unwrap();
    for args in [
        vec!["call", "ocr_pdf", "--route", "local", "--file", &file, "--out", out_path.to_str().unwrap()],
        vec!["call", "ocr_image_url", "--route", "local", "--input", input.to_str().unwrap()],
    ] {
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains("unavailable"), "{args:?}: {stderr}");
        assert!(stderr.contains("tesseract-ocr"), "the package is named: {stderr}");
        assert!(stderr.contains("PAPERCHAIN_TESSERACT"), "the setting is named: {stderr}");
    }
    assert!(!out_path.exists());
    // Other routes still work.
    let out = run(&["call", "inspect_pdf_document", "--route", "local", "--file", &file]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn an_ocr_call_leaves_nothing_in_the_temporary_folder() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (pdf, _) = sample_page();
    let source = dir.path().join("page.pdf");
    std::fs::write(&source, pdf).unwrap();
    let page = render(&source, 1, 150);
    let scan = dir.path().join("scan.pdf");
    std::fs::write(&scan, image_pdf(&[&page, &page, &page], 150)).unwrap();
    let out_path = dir.path().join("out.pdf");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_paperchain"))
            .args(["call", "ocr_pdf", "--route", "local", "--file"])
            .arg(format!("file={}", scan.display()))
            .args(extra)
            .env("TMPDIR", &tmp)
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .output()
            .unwrap()
    };
    let out = run(&["--out", out_path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out_path.is_file());
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
