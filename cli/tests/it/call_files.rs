//! `paperchain call` writing file results: several files into a folder one by one, or one
//! ZIP to a file path; in this process and through the local server alike.

use crate::common;

use std::process::{Command, Stdio};

use paperchain_testkit::corpus::corpus;

/// `paperchain call convert_pdf_to_images` of a four-page corpus PDF in this process,
/// written to `out`.
fn to_images(out: &std::path::Path, data: &std::path::Path) -> std::process::Output {
    let pdf = corpus().join("pdf/sample-files/pdflatex-4-pages.pdf");
    let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
    let mut child = common::unconfigured(&mut command, data)
        .args(["call", "convert_pdf_to_images", "--standalone", "--input", "-", "--file"])
        .arg(format!("file={}", pdf.display()))
        .arg("--out")
        .arg(out)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), br#"{"format": "png", "dpi": 50}"#).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn several_files_go_into_a_folder_one_by_one_or_into_one_zip() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let written = to_images(folder.path(), data.path());
    assert!(written.status.success(), "{}", String::from_utf8_lossy(&written.stderr));
    let mut names: Vec<String> = std::fs::read_dir(folder.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let expected: Vec<String> = (1..=4).map(|n| format!("pdflatex-4-pages-page-{n}.png")).collect();
    assert_eq!(names, expected, "one PNG a page, no ZIP and nothing else");
    let pngs: Vec<Vec<u8>> = expected.iter().map(|n| std::fs::read(folder.path().join(n)).unwrap()).collect();
    for png in &pngs {
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG file");
    }

    // A file path: the one ZIP the route writes as it renders, holding the same images.
    let zip_path = folder.path().join("pages.zip");
    let written = to_images(&zip_path, data.path());
    assert!(written.status.success(), "{}", String::from_utf8_lossy(&written.stderr));
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zip_path).unwrap()).unwrap();
    assert_eq!(archive.len(), 4);
    for (i, (name, png)) in expected.iter().zip(&pngs).enumerate() {
        let mut entry = archive.by_index(i).unwrap();
        assert_eq!(entry.name().unwrap(), name.as_str());
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        assert!(&bytes == png, "{name} in the ZIP differs from the one written alone");
    }
}
