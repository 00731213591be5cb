//! `/v1/pdf/to-docx`: the Word file read back by python-docx. On the corpus, its words
//! match the PDF's (docling's ground truth for its PDFs; poppler's `pdftotext` for the
//! ICDAR ones) with a floor per file and a mean of at least 0.95; on a PDF drawn here, paragraphs are joined lines, fonts, sizes, bold
//! and italic are kept, a ruled table is a Word table with its merged cells, and each page
//! size is a section.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::route::call_files;
use paperchain_engine::{Context, ErrorKind};
use paperchain_testkit::b64;
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::markdown_score::{text_similarity, word_overlap};
use paperchain_testkit::page_pdf::{Font, PagePdf};
use paperchain_testkit::tools::{DOCX_TEXT, run_python};
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/to-docx";

pub(crate) async fn docx_of(pdf: &[u8], more: Value) -> (Value, Value) {
    let body = common::route::file_body(pdf, "in.pdf", &more);
    let set = call_files(&Context::new(), ROUTE, body).await.unwrap();
    let file = &set.files[0];
    assert_eq!(file.media_type, "application/vnd.openxmlformats-officedocument.wordprocessingml.document");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.docx");
    std::fs::write(&path, &file.bytes).unwrap();
    let read: Value = serde_json::from_str(&run_python(DOCX_TEXT, &[&path])).unwrap();
    (read, set.report.clone().unwrap())
}

/// The body's text in order: paragraphs, and each table's cells row by row.
pub(crate) fn text_of(read: &Value) -> String {
    let mut out = Vec::new();
    for block in read["blocks"].as_array().unwrap() {
        if let Some(p) = block["paragraph"].as_str() {
            out.push(p.to_string());
        } else {
            for row in block["table"].as_array().unwrap() {
                for cell in row.as_array().unwrap() {
                    out.push(cell.as_str().unwrap().to_string());
                }
            }
        }
    }
    out.join("\n")
}

/// The PDF's text: docling's ground truth beside a docling input, else `pdftotext`'s.
fn reference(path: &Path) -> String {
    let stem = path.file_stem().unwrap().to_string_lossy();
    let truth = path.parent().unwrap().join("../groundtruth").join(format!("{stem}.md"));
    if truth.is_file() {
        return std::fs::read_to_string(truth).unwrap();
    }
    let out = Command::new("pdftotext").arg(path).arg("-").output().expect("pdftotext is installed");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lowest text similarity each corpus file may score: what it scores now, less about 0.02.
fn floor(name: &str) -> f64 {
    match name {
        // Its fonts map most glyphs to the wrong letters; docling's own text of it is garbled too.
        "right_to_left_02.pdf" => 0.83,
        // The questionnaire's check boxes and the sidebars of the Redbook are drawings.
        "table_mislabeled_as_picture.pdf" => 0.89,
        "redp5110_sampled.pdf" => 0.92,
        "multi_page.pdf" | "amt_handbook_sample.pdf" | "2305.03393v1-pg9.pdf" | "eu-021.pdf" => 0.94,
        _ => 0.96,
    }
}

#[tokio::test]
async fn corpus_text_comes_back_from_the_word_file() {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(corpus().join("docling/pdf/sources"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .chain(std::fs::read_dir(corpus().join("tables/icdar2013")).unwrap().map(|e| e.unwrap().path()))
        .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut scores = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (read, report) = docx_of(&std::fs::read(&path).unwrap(), json!({})).await;
        let (ours, theirs) = (text_of(&read), reference(&path));
        let s = word_overlap(&ours, &theirs);
        eprintln!(
            "{name:40} words {s:.3} in order {:.3} paragraphs {} tables {} pictures {}",
            text_similarity(&ours, &theirs),
            report["paragraphs"],
            report["tables"],
            report["pictures"]
        );
        assert_eq!(report["pictures"].as_u64(), Some(read["pictures"].as_u64().unwrap()), "{name}");
        if s < floor(&name) {
            failures.push(format!("{name}: {s:.3} < {:.2}", floor(&name)));
        }
        scores.push(s);
    }
    let mean = scores.iter().sum::<f64>() / scores.len() as f64;
    eprintln!("mean text similarity {mean:.3} over {} files", scores.len());
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(mean >= 0.95, "mean text similarity {mean:.3} < 0.95");
}

/// A page of a report: a centred bold title, a paragraph of three lines, an italic note, a
/// line with a bold lead, a ruled table with merged cells; then a landscape page.
fn report_pdf() -> Vec<u8> {
    use paperchain_testkit::page_pdf::text_width;
    let mut pdf = PagePdf::new(595.0, 842.0);
    let title = "Quarterly report";
    pdf.text((595.0 - text_width(title, 18.0, Font::Bold)) / 2.0, 80.0, 18.0, Font::Bold, title);
    for (i, line) in LINES.iter().enumerate() {
        pdf.text(72.0, 120.0 + 14.0 * i as f64, 11.0, Font::Regular, line);
    }
    pdf.text(72.0, 175.0, 10.0, Font::Italic, "All figures are in thousands of euros.");
    pdf.text(72.0, 200.0, 11.0, Font::Bold, "Net result: ");
    pdf.text(72.0 + text_width("Net result: ", 11.0, Font::Bold), 200.0, 11.0, Font::Regular, "up 12 percent.");
    let xs = [72.0, 200.0, 300.0, 400.0];
    let ys = [230.0, 250.0, 270.0, 290.0];
    for &y in &ys {
        pdf.line(xs[0], y, xs[3], y);
    }
    pdf.line(xs[0], ys[0], xs[0], ys[3]).line(xs[1], ys[0], xs[1], ys[3]).line(xs[3], ys[0], xs[3], ys[3]);
    pdf.line(xs[2], ys[1], xs[2], ys[3]);
    pdf.text(76.0, 244.0, 10.0, Font::Bold, "Region").text(230.0, 244.0, 10.0, Font::Bold, "Sales by half");
    pdf.text(76.0, 264.0, 10.0, Font::Regular, "North").text(204.0, 264.0, 10.0, Font::Regular, "1,200");
    pdf.text(304.0, 264.0, 10.0, Font::Regular, "1,350");
    pdf.text(76.0, 284.0, 10.0, Font::Regular, "South").text(204.0, 284.0, 10.0, Font::Regular, "980");
    pdf.text(304.0, 284.0, 10.0, Font::Regular, "1,010");
    pdf.sized_page(842.0, 595.0);
    pdf.text(72.0, 90.0, 12.0, Font::Regular, "A wide page for the appendix.");
    pdf.finish()
}

const LINES: [&str; 3] = [
    "The first quarter closed with sales above the plan in every region, and the",
    "costs of the new warehouse were lower than the budget had foreseen for them",
    "this year. Margins held.",
];

#[tokio::test]
async fn paragraphs_styles_tables_and_sections_are_kept() {
    let (read, report) = docx_of(&report_pdf(), json!({})).await;
    assert_eq!(report["sections"], 2, "{report}");
    assert_eq!(report["tables"], 1, "{report}");
    let blocks = read["blocks"].as_array().unwrap();
    let paragraphs: Vec<&Value> =
        blocks.iter().filter(|b| b["paragraph"].as_str().is_some_and(|t| !t.is_empty())).collect();
    let texts: Vec<&str> = paragraphs.iter().map(|b| b["paragraph"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        [
            "Quarterly report",
            &LINES.join(" ") as &str,
            "All figures are in thousands of euros.",
            "Net result: up 12 percent.",
            "A wide page for the appendix.",
        ],
        "{read:#}"
    );
    // The title: bold, 18 pt, centred, Helvetica's stand-in.
    let title = &paragraphs[0];
    assert_eq!(title["align"], "CENTER (1)");
    for run in title["runs"].as_array().unwrap() {
        assert_eq!(
            (run["bold"].as_bool(), run["size"].as_f64(), run["font"].as_str()),
            (Some(true), Some(18.0), Some("Arial"))
        );
    }
    // The paragraph: one paragraph of three lines, 11 pt, not bold.
    for run in paragraphs[1]["runs"].as_array().unwrap() {
        assert_eq!(
            (run["bold"].as_bool(), run["italic"].as_bool(), run["size"].as_f64()),
            (Some(false), Some(false), Some(11.0))
        );
    }
    assert!(paragraphs[2]["runs"].as_array().unwrap().iter().all(|r| r["italic"] == true && r["size"] == 10.0));
    let lead = paragraphs[3]["runs"].as_array().unwrap();
    assert_eq!((lead[0]["text"].as_str().map(str::trim), lead[0]["bold"].as_bool()), (Some("Net result:"), Some(true)));
    assert!(lead.iter().any(|r| r["text"].as_str().unwrap().contains("percent") && r["bold"] == false));
    // The table: a Word table whose merged header spans two columns.
    let table = blocks.iter().find(|b| b["table"].is_array()).unwrap();
    assert_eq!(
        table["table"],
        json!([["Region", "Sales by half"], ["North", "1,200", "1,350"], ["South", "980", "1,010"]])
    );
    assert_eq!(table["grid"][0], json!(["Region", "Sales by half", "Sales by half"]));
    // Sections: A4 portrait, then landscape; margins from the text.
    let sections = read["sections"].as_array().unwrap();
    assert_eq!((sections[0]["width"].as_f64(), sections[0]["height"].as_f64()), (Some(595.0), Some(842.0)));
    assert_eq!((sections[1]["width"].as_f64(), sections[1]["height"].as_f64()), (Some(842.0), Some(595.0)));
    assert_eq!(sections[1]["orientation"], "LANDSCAPE (1)");
    let left = sections[0]["margins"][3].as_f64().unwrap();
    assert!((left - 72.0).abs() < 2.0, "left margin {left}");
}

#[tokio::test]
async fn pictures_are_placed_and_wrong_inputs_named() {
    let pictures = std::fs::read(corpus().join("docling/pdf/sources/picture_classification.pdf")).unwrap();
    let (read, report) = docx_of(&pictures, json!({})).await;
    assert_eq!(report["pictures"], 2);
    assert_eq!(read["pictures"], 2);
    let (read, _) = docx_of(&pictures, json!({ "pages": "1" })).await;
    assert_eq!(read["sections"].as_array().unwrap().len(), 1);

    let call = |body: Value| async move { call_files(&Context::new(), ROUTE, body).await.unwrap_err() };
    let e = call(json!({ "file": { "data": b64(&pictures), "filename": "p.pdf" }, "pages": "9" })).await;
    assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/pages")));
    let damaged = std::fs::read(corpus().join("pdf/qpdf/issue-146.pdf")).unwrap();
    let e = call(json!({ "file": { "data": b64(&damaged), "filename": "d.pdf" } })).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("damaged_pdf", Some("/file")));
    let locked = std::fs::read(corpus().join("pdf/qpdf/enc-XI-R6,V5,U=view,O=master.pdf")).unwrap();
    let e = call(json!({ "file": { "data": b64(&locked), "filename": "l.pdf" } })).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("password_required", Some("/file/password")));
    let e = call(json!({ "file": { "data": b64(&locked), "filename": "l.pdf" }, "format": "odt" })).await;
    assert_eq!(e.kind, ErrorKind::InvalidInput);
}

#[tokio::test]
async fn libreoffice_renders_the_word_file() {
    let mut body = json!({ "file": { "data": b64(&report_pdf()), "filename": "report.pdf" } });
    body["output"] = json!("file");
    let set = call_files(&Context::new(), ROUTE, body).await.unwrap();
    assert_eq!(set.files[0].filename, "report.docx");
    let dir = tempfile::tempdir().unwrap();
    let docx = dir.path().join("report.docx");
    std::fs::write(&docx, &set.files[0].bytes).unwrap();
    // A private profile, so parallel runs do not share one.
    let profile = format!("-env:UserInstallation=file://{}", dir.path().join("profile").display());
    let out = Command::new("timeout")
        .args(["180", "soffice", &profile, "--headless", "--norestore", "--convert-to", "pdf", "--outdir"])
        .arg(dir.path())
        .arg(&docx)
        .output()
        .expect("soffice is installed (cargo xtask setup)");
    let pdf = dir.path().join("report.pdf");
    assert!(out.status.success() && pdf.is_file(), "soffice failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = Command::new("pdftotext").arg(&pdf).arg("-").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    for words in ["Quarterly report", "Margins held.", "Sales by half", "1,350", "A wide page for the appendix."] {
        assert!(text.contains(words), "{words:?} is not in LibreOffice's rendering:\n{text}");
    }
    let info = Command::new("pdfinfo").args(["-f", "1", "-l", "2"]).arg(&pdf).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("Pages:           2"), "{info}");
    // Each page's size within a point (LibreOffice keeps sizes in hundredths of a millimetre).
    let sizes: Vec<(f64, f64)> = info
        .lines()
        .filter(|l| l.starts_with("Page ") && l.contains(" size:"))
        .map(|l| {
            let numbers: Vec<f64> = l.split_whitespace().filter_map(|w| w.parse().ok()).collect();
            (numbers[1], numbers[2])
        })
        .collect();
    assert_eq!(sizes.len(), 2, "{info}");
    for ((w, h), (want_w, want_h)) in sizes.iter().zip([(595.0, 842.0), (842.0, 595.0)]) {
        assert!((w - want_w).abs() < 1.0 && (h - want_h).abs() < 1.0, "{info}");
    }
}
