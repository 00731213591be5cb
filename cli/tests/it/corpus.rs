//! Every page-edit route on every file of the shared corpus (damaged and encrypted
//! included), each call in its own `paperchain` process under a time and memory cap.
//!
//! A call either succeeds with output that `qpdf --check` accepts and that has the
//! expected page count, or fails with a clear input error (exit code 2 and a stable
//! code). A crash, a hang, running out of memory, or an internal error fails the test.
//! Files that qpdf itself reads cleanly must always succeed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use paperchain_testkit::corpus::corpus;
use serde_json::{Value, json};

/// Wall-clock cap per call, seconds.
const TIME_CAP: &str = "60";
/// Address-space cap per call, bytes (the largest corpus file is 20 MB).
const MEMORY_CAP: &str = "--as=4294967296";

/// Passwords of the encrypted corpus files (corpus README and qpdf's test suite).
const PASSWORDS: &[(&str, &str)] = &[
    ("enc-XI-R6,V5,U=view,O=master.pdf", "view"),
    ("libreoffice-writer-password.pdf", "openpassword"),
    ("20-pages.pdf", "user"),
];

/// Error codes a damaged, hostile or locked input may legitimately produce.
const INPUT_ERRORS: &[&str] =
    &["damaged_pdf", "password_required", "wrong_password", "not_a_pdf", "file_too_large", "too_many_pages"];

fn pdfs(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            pdfs(&path, out);
        } else if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
            out.push(path);
        }
    }
}

fn password_of(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    PASSWORDS.iter().find(|(file, _)| *file == name).map(|(_, pw)| *pw)
}

/// What qpdf makes of an input: whether it reads it without a warning, and its page count.
struct QpdfView {
    clean: bool,
    pages: Option<u32>,
}

fn qpdf_view(path: &Path, password: Option<&str>) -> QpdfView {
    let qpdf = |arg: &str| {
        let mut command = Command::new("qpdf");
        if let Some(pw) = password {
            command.arg(format!("--password={pw}"));
        }
        command.arg(arg).arg(path).output().expect("qpdf is installed (cargo xtask setup)")
    };
    let clean = qpdf("--check").status.code() == Some(0);
    let out = qpdf("--show-npages");
    let pages = String::from_utf8_lossy(&out.stdout).trim().parse().ok().filter(|&n: &u32| n > 0);
    QpdfView { clean, pages }
}

/// The page count `inspect_pdf_document` reports, if it reads the file.
fn our_page_count(path: &Path, password: Option<&str>) -> Option<u32> {
    let input = serde_json::to_vec(&json!({ "file": { "password": password } })).ok()?;
    let dir = tempfile::tempdir().ok()?;
    let input_path = dir.path().join("input.json");
    std::fs::write(&input_path, input).ok()?;
    let out = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["call", "inspect_pdf_document", "--input"])
        .arg(&input_path)
        .arg("--file")
        .arg(format!("file={}", path.display()))
        .output()
        .ok()?;
    let report: Value = serde_json::from_slice(&out.stdout).ok()?;
    report["page_count"].as_u64().map(|n| n as u32)
}

/// Checks a PDF with qpdf; returns its page count or what qpdf said. Warnings are
/// accepted only when the input already drew them (`strict` false).
fn check_output(path: &Path, strict: bool, password: Option<&str>) -> Result<u32, String> {
    let qpdf = |arg: &str| {
        let mut command = Command::new("qpdf");
        if let Some(pw) = password {
            command.arg(format!("--password={pw}"));
        }
        command.arg(arg).arg(path).output()
    };
    let check = qpdf("--check").map_err(|e| e.to_string())?;
    let accepted = match check.status.code() {
        Some(0) => true,
        Some(3) => !strict,
        _ => false,
    };
    if !accepted {
        let said = String::from_utf8_lossy(&check.stdout)
            .lines()
            .chain(String::from_utf8_lossy(&check.stderr).lines())
            .take(4)
            .collect::<Vec<_>>()
            .join(" | ");
        return Err(format!("qpdf --check exit {:?}: {said}", check.status.code()));
    }
    let out = qpdf("--show-npages").map_err(|e| e.to_string())?;
    String::from_utf8_lossy(&out.stdout).trim().parse().map_err(|e| format!("page count: {e}"))
}

/// What a route should produce for a file of `n` pages.
enum Expect {
    Pages(u32),
    /// A ZIP of PDFs (and a JSON manifest) whose pages add up to this many.
    Covers(u32),
    /// A PDF of at most this many pages, or refused for having no page left.
    AtMost(u32),
    Parts(Vec<u32>),
    Json,
    /// Refused with this error code.
    InputError(&'static str),
}

struct Call {
    operation: &'static str,
    input: Value,
    files: Vec<&'static str>,
    expect: Expect,
}

fn calls(n: u32) -> Vec<Call> {
    let every = n.div_ceil(3).max(1);
    let parts: Vec<u32> = (1..=n).collect::<Vec<_>>().chunks(every as usize).map(|c| c.len() as u32).collect();
    vec![
        Call {
            operation: "merge_pdf_files",
            input: json!({}),
            files: vec!["files/0/file", "files/1/file"],
            expect: Expect::Pages(2 * n),
        },
        Call {
            operation: "split_pdf",
            input: json!({ "every": every }),
            files: vec!["file"],
            expect: Expect::Parts(parts),
        },
        Call {
            operation: "split_pdf_by_content",
            input: json!({ "at": "size", "max_mb": 0.2 }),
            files: vec!["file"],
            expect: Expect::Covers(n),
        },
        Call {
            operation: "extract_pdf_pages",
            input: json!({ "pages": "last,1" }),
            files: vec!["file"],
            expect: Expect::Pages(2),
        },
        Call {
            operation: "remove_pdf_pages",
            input: json!({ "pages": "1" }),
            files: vec!["file"],
            expect: if n > 1 { Expect::Pages(n - 1) } else { Expect::InputError("no_pages_left") },
        },
        Call {
            operation: "reorder_pdf_pages",
            input: json!({ "order": [n, 1] }),
            files: vec!["file"],
            expect: Expect::Pages(2),
        },
        Call {
            operation: "rotate_pdf_pages",
            input: json!({ "degrees": 90 }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "crop_pdf_pages",
            input: json!({ "margins": { "top": 5, "right": 5, "bottom": 5, "left": 5 }, "unit": "percent" }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "resize_pdf_pages",
            input: json!({ "size": "A4", "mode": "fit" }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "n_up_pdf_pages",
            input: json!({ "per_sheet": 4, "borders": true }),
            files: vec!["file"],
            expect: Expect::Pages(n.div_ceil(4)),
        },
        Call {
            operation: "make_pdf_booklet",
            input: json!({ "sheet": "A4", "gutter_pt": 10 }),
            files: vec!["file"],
            expect: Expect::Pages(n.div_ceil(4) * 2),
        },
        // A page scaled to fit an A4 poster, turned like the page, is one A4 tile.
        Call {
            operation: "make_pdf_poster",
            input: json!({ "poster_size": "A4" }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "edit_pdf_metadata",
            input: json!({ "action": "edit", "set": { "title": "Corpus test" } }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "write_pdf_bookmarks",
            input: json!({ "outline": [{ "title": "Last page", "page": n }] }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call { operation: "read_pdf_bookmarks", input: json!({}), files: vec!["file"], expect: Expect::Json },
        Call { operation: "list_pdf_form_fields", input: json!({}), files: vec!["file"], expect: Expect::Json },
        Call {
            operation: "manage_pdf_attachments",
            input: json!({ "action": "list" }),
            files: vec!["file"],
            expect: Expect::Json,
        },
        Call { operation: "repair_damaged_pdf", input: json!({}), files: vec!["file"], expect: Expect::Pages(n) },
        Call {
            operation: "add_watermark_to_pdf",
            input: json!({ "text": "DRAFT" }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call { operation: "add_pdf_page_numbers", input: json!({}), files: vec!["file"], expect: Expect::Pages(n) },
        Call {
            operation: "flatten_pdf_to_image_only",
            input: json!({ "dpi": 36 }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call { operation: "flatten_pdf_forms", input: json!({}), files: vec!["file"], expect: Expect::Pages(n) },
        Call { operation: "remove_blank_pdf_pages", input: json!({}), files: vec!["file"], expect: Expect::AtMost(n) },
        Call {
            operation: "sanitize_pdf",
            input: json!({ "links": true }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "redact_pdf",
            input: json!({ "text": ["the"], "patterns": ["[0-9]{2,}"], "dpi": 72 }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call { operation: "inspect_pdf_document", input: json!({}), files: vec!["file"], expect: Expect::Json },
        // A file against itself: nothing differs, in words or looks.
        Call { operation: "compare_pdfs", input: json!({}), files: vec!["original", "revised"], expect: Expect::Json },
        Call {
            operation: "compress_pdf",
            input: json!({ "mode": "lossless" }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "compress_pdf",
            input: json!({ "mode": "recommended" }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
        Call {
            operation: "run_pdf_pipeline",
            input: json!({ "steps": [
                { "op": "rotate", "degrees": 90 },
                { "op": "watermark", "text": "DRAFT" },
                { "op": "page-numbers" },
                { "op": "flatten" },
            ] }),
            files: vec!["file"],
            expect: Expect::Pages(n),
        },
    ]
}

/// Runs one call; returns a failure description, or None when it behaved.
fn run(pdf: &Path, password: Option<&str>, view: &QpdfView, call: &Call, work: &Path) -> Option<String> {
    let expected_pages = view.pages;
    // Repair keeps the input's encryption, and compress returns an input it cannot shrink
    // as it is: their outputs may open only with the same password.
    let output_password = if matches!(call.operation, "repair_damaged_pdf" | "compress_pdf") { password } else { None };
    let mut input = call.input.clone();
    for at in &call.files {
        let mut file = json!({});
        if let Some(pw) = password {
            file["password"] = json!(pw);
        }
        let mut slot = &mut input;
        for segment in at.split('/') {
            slot = match segment.parse::<usize>() {
                Ok(i) => {
                    if !slot.is_array() {
                        *slot = json!([]);
                    }
                    let list = slot.as_array_mut().unwrap();
                    while list.len() <= i {
                        list.push(json!({}));
                    }
                    &mut list[i]
                }
                Err(_) => &mut slot[segment],
            };
        }
        *slot = file;
    }
    let input_path = work.join("input.json");
    std::fs::write(&input_path, serde_json::to_vec(&input).unwrap()).unwrap();
    let out =
        work.join(if matches!(call.expect, Expect::Parts(_) | Expect::Covers(_)) { "out.zip" } else { "out.pdf" });
    let _ = std::fs::remove_file(&out);
    let mut command = Command::new("timeout");
    command.args(["-k", "5", TIME_CAP, "prlimit", MEMORY_CAP, "--"]).arg(env!("CARGO_BIN_EXE_paperchain"));
    command.args(["call", call.operation, "--input"]).arg(&input_path).arg("--out").arg(&out).arg("--force");
    for at in &call.files {
        command.arg("--file").arg(format!("{at}={}", pdf.display()));
    }
    let result = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&result.stderr);
    let code = result.status.code();
    let error_code = stderr.split("error [").nth(1).and_then(|s| s.split(']').next()).unwrap_or("");
    match (code, &call.expect) {
        (Some(0), Expect::InputError(_)) => Some("succeeded where an input error was expected".into()),
        (Some(0), Expect::Json) => {
            let json: Value = match std::fs::read(&out).ok().and_then(|b| serde_json::from_slice(&b).ok()) {
                Some(json) => json,
                None => return Some("no JSON answer".into()),
            };
            match (call.operation, expected_pages) {
                ("inspect_pdf_document", Some(n)) if json["page_count"] != n => {
                    Some(format!("page_count {} but qpdf counts {n}", json["page_count"]))
                }
                ("compare_pdfs", _) if json["identical"] != true => {
                    Some(format!("a file compared with itself differs: {}", json["changes"]))
                }
                _ => None,
            }
        }
        (Some(0), Expect::Pages(want)) => match check_output(&out, view.clean, output_password) {
            Err(e) => Some(e),
            Ok(got) if expected_pages.is_some() && got != *want => Some(format!("{got} pages, expected {want}")),
            Ok(_) => None,
        },
        (Some(0), Expect::AtMost(most)) => match check_output(&out, view.clean, output_password) {
            Err(e) => Some(e),
            Ok(got) if expected_pages.is_some() && (got > *most || got == 0) => {
                Some(format!("{got} pages, expected 1 to {most}"))
            }
            Ok(_) => None,
        },
        (Some(2), Expect::AtMost(_)) if error_code == "no_pages_left" => None,
        (Some(0), Expect::Covers(want)) => {
            let bytes = std::fs::read(&out).unwrap_or_default();
            let mut archive = match zip::ZipArchive::new(std::io::Cursor::new(bytes)) {
                Ok(a) => a,
                Err(e) => return Some(format!("not a ZIP: {e}")),
            };
            let mut total = 0;
            for i in 0..archive.len() {
                let mut part = archive.by_index(i).unwrap();
                if part.name().is_ok_and(|name| name.ends_with(".json")) {
                    continue;
                }
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut part, &mut bytes).unwrap();
                let path = work.join(format!("part-{i}.pdf"));
                std::fs::write(&path, bytes).unwrap();
                match check_output(&path, view.clean, output_password) {
                    Ok(n) => total += n,
                    Err(e) => return Some(format!("part {i}: {e}")),
                }
            }
            (expected_pages.is_some() && total != *want)
                .then(|| format!("parts of {total} pages in all, expected {want}"))
        }
        (Some(0), Expect::Parts(want)) => {
            let bytes = std::fs::read(&out).unwrap_or_default();
            let mut archive = match zip::ZipArchive::new(std::io::Cursor::new(bytes)) {
                Ok(a) => a,
                Err(e) => return Some(format!("not a ZIP: {e}")),
            };
            let mut got = Vec::new();
            for i in 0..archive.len() {
                let mut part = archive.by_index(i).unwrap();
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut part, &mut bytes).unwrap();
                let path = work.join(format!("part-{i}.pdf"));
                std::fs::write(&path, bytes).unwrap();
                match check_output(&path, view.clean, output_password) {
                    Ok(n) => got.push(n),
                    Err(e) => return Some(format!("part {i}: {e}")),
                }
            }
            (expected_pages.is_some() && got != *want).then(|| format!("parts of {got:?} pages, expected {want:?}"))
        }
        (Some(2), Expect::InputError(code)) if error_code == *code => None,
        (Some(2), _) if INPUT_ERRORS.contains(&error_code) => {
            // A file qpdf reads cleanly must not be refused.
            view.clean.then(|| format!("refused a file qpdf reads cleanly: {}", stderr.trim()))
        }
        (Some(124) | Some(137), _) => Some(format!("over the {TIME_CAP} s cap")),
        (code, _) => Some(format!("exit {code:?}: {}", stderr.trim().lines().last().unwrap_or(""))),
    }
}

#[test]
fn every_page_edit_route_on_every_corpus_file() {
    let mut files = Vec::new();
    pdfs(&corpus().join("pdf"), &mut files);
    assert!(files.len() >= 100, "expected the whole corpus, found {} PDFs", files.len());
    let queue = Mutex::new(files.clone());
    let failures = Mutex::new(Vec::new());
    let counts = Mutex::new((0usize, 0usize, 0usize));
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let work = tempfile::tempdir().unwrap();
                loop {
                    let Some(pdf) = queue.lock().unwrap().pop() else { break };
                    let password = password_of(&pdf);
                    let view = qpdf_view(&pdf, password);
                    // Where qpdf cannot count the pages, what we read decides the expectations.
                    let n = view.pages.or_else(|| our_page_count(&pdf, password)).unwrap_or(1);
                    for call in calls(n) {
                        let failure = run(&pdf, password, &view, &call, work.path());
                        let mut c = counts.lock().unwrap();
                        c.0 += 1;
                        match failure {
                            Some(why) => {
                                c.2 += 1;
                                let name = pdf.strip_prefix(corpus()).unwrap_or(&pdf).display().to_string();
                                failures.lock().unwrap().push(format!("{name} {}: {why}", call.operation));
                            }
                            None => c.1 += 1,
                        }
                    }
                }
            });
        }
    });
    let (calls_made, behaved, failed) = *counts.lock().unwrap();
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    eprintln!("{} files, {calls_made} calls: {behaved} behaved, {failed} failed", files.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Corpus files where poppler's `pdfimages` and `extract_pdf_images` are known to see
/// different images, and why.
const IMAGES_SEEN_APART: &[(&str, &str)] = &[
    // The image is in a form field's appearance, which pdfimages reads and the page's
    // content (what extract-images reads) does not draw.
    ("form-filled-by-acrobat.pdf", "an image inside an annotation's appearance"),
    // A damaged file: pdfimages stops at the broken content stream before its image.
    ("issue-117.pdf", "pdfimages gives up on the damaged content"),
];

/// `pdfimages -list`'s images and stencil masks (not soft masks): (page, width, height) → count.
fn pdfimages_list(pdf: &Path, password: Option<&str>) -> std::collections::BTreeMap<(u32, u32, u32), u32> {
    let mut command = Command::new("pdfimages");
    command.arg("-list");
    if let Some(pw) = password {
        command.args(["-upw", pw]);
    }
    let out = command.arg(pdf).output().expect("pdfimages is installed (cargo xtask setup)");
    let mut seen = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines().skip(2) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.len() > 4 && matches!(cols[2], "image" | "stencil") {
            let key = (cols[0].parse().unwrap(), cols[3].parse().unwrap(), cols[4].parse().unwrap());
            *seen.entry(key).or_insert(0) += 1;
        }
    }
    seen
}

#[test]
fn extracted_images_are_the_ones_pdfimages_lists_on_every_corpus_file() {
    let mut files = Vec::new();
    pdfs(&corpus().join("pdf"), &mut files);
    let work = tempfile::tempdir().unwrap();
    let (mut same, mut refused, mut with_images) = (0, 0, 0);
    let mut failures = Vec::new();
    for pdf in &files {
        let name = pdf.file_name().unwrap().to_string_lossy().to_string();
        let password = password_of(pdf);
        let input = work.path().join("input.json");
        std::fs::write(&input, json!({ "file": { "password": password } }).to_string()).unwrap();
        let out = work.path().join("images.zip");
        let result = Command::new("timeout")
            .args(["-k", "5", TIME_CAP, "prlimit", MEMORY_CAP, "--"])
            .arg(env!("CARGO_BIN_EXE_paperchain"))
            .args(["call", "extract_pdf_images", "--input"])
            .arg(&input)
            .arg("--file")
            .arg(format!("file={}", pdf.display()))
            .arg("--out")
            .arg(&out)
            .arg("--force")
            .output()
            .unwrap();
        let theirs = pdfimages_list(pdf, password);
        if result.status.code() == Some(2) {
            let stderr = String::from_utf8_lossy(&result.stderr);
            let code = stderr.split("error [").nth(1).and_then(|s| s.split(']').next()).unwrap_or("");
            // Refused as damaged or locked: pdfimages finds nothing in those either.
            if !INPUT_ERRORS.contains(&code) || !theirs.is_empty() {
                failures.push(format!("{name}: refused ({code}) where pdfimages lists {theirs:?}"));
            }
            refused += 1;
            continue;
        }
        if !result.status.success() {
            failures.push(format!(
                "{name}: exit {:?}: {}",
                result.status.code(),
                String::from_utf8_lossy(&result.stderr)
            ));
            continue;
        }
        let mut archive = zip::ZipArchive::new(std::fs::File::open(&out).unwrap()).unwrap();
        let manifest: Value = serde_json::from_reader(archive.by_name("images.json").unwrap()).unwrap();
        let mut ours = std::collections::BTreeMap::new();
        for image in manifest["images"].as_array().unwrap() {
            let (w, h) = (image["width"].as_u64().unwrap() as u32, image["height"].as_u64().unwrap() as u32);
            // Every file the manifest names is in the archive, at its stated size.
            let file = archive.by_name(image["file"].as_str().unwrap()).unwrap();
            assert_eq!(file.size(), image["bytes"].as_u64().unwrap(), "{name}: {}", image["file"]);
            for place in image["placements"].as_array().unwrap() {
                *ours.entry((place["page"].as_u64().unwrap() as u32, w, h)).or_insert(0) += 1;
            }
        }
        with_images += usize::from(!ours.is_empty());
        match IMAGES_SEEN_APART.iter().find(|(file, _)| *file == name) {
            Some((_, why)) => assert_ne!(ours, theirs, "{name} is listed as seen apart ({why}) but now agrees"),
            None if ours == theirs => same += 1,
            None => failures.push(format!("{name}: ours {ours:?}, pdfimages {theirs:?}")),
        }
    }
    eprintln!("{} files: {same} agree with pdfimages ({with_images} with images), {refused} refused", files.len());
    assert!(with_images >= 12, "expected images in at least 12 corpus files, found {with_images}");
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}
