//! `/v1/pdf/split-by` on documents reportlab writes here: a batch of letters with a
//! separator sheet and a scanned blank sheet between them, chapters and sections as
//! bookmarks, and pages of incompressible images for sizes. Each part's text is read back
//! with pdftotext and its size from the ZIP.

use crate::common;

use std::io::Read;
use std::process::Command;

use common::route::{assert_refused, call_files};
use paperchain_engine::{Context, EngineError};
use paperchain_testkit::b64;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/split-by";

const WRITER: &str = r#"
import sys, random
from PIL import Image, ImageDraw
from reportlab.pdfgen import canvas
out = sys.argv[1]
random.seed(11)
# A blank sheet as a scanner sees it: paper tone and specks of dust.
sheet = Image.new("L", (850, 1100), 232)
d = ImageDraw.Draw(sheet)
for _ in range(40):
    x, y = random.randrange(845), random.randrange(1095)
    d.point((x, y), fill=40)
sheet.save(out + "/blank.png")
c = canvas.Canvas(out + "/batch.pdf", pagesize=(612, 792))
pages = ["Letter A one", "Letter A two", "BATCH\nSEPARATOR", "Letter B one", None, "Letter C one", "Letter C two"]
outline = {1: [("Chapter 1", 0), ("Section 1.1", 1)], 2: [("Section 1.2", 1)], 4: [("Chapter 2", 0)],
           6: [("Chapter 3", 0)]}
for n, text in enumerate(pages, 1):
    for i, (title, level) in enumerate(outline.get(n, [])):
        key = "k%d_%d" % (n, i)
        c.bookmarkPage(key)
        c.addOutlineEntry(title, key, level=level)
    if text is None:
        c.drawImage(out + "/blank.png", 0, 0, 612, 792)
    else:
        y = 700
        for line in text.split("\n"):
            c.drawString(72, y, line); y -= 16
    c.showPage()
c.save()
# Pages of noise (which no compression shrinks): eleven of about 60 KB, one of about 400 KB.
c = canvas.Canvas(out + "/heavy.pdf", pagesize=(612, 792))
for n in range(1, 13):
    side = 360 if n == 7 else 140
    img = Image.frombytes("RGB", (side, side), bytes(random.getrandbits(8) for _ in range(side * side * 3)))
    img.save(out + "/noise%d.png" % n)
    c.drawString(72, 740, "heavy page %d" % n)
    c.drawImage(out + "/noise%d.png" % n, 72, 200, 400, 400)
    c.showPage()
c.save()
print("ok")
"#;

fn written() -> (tempfile::TempDir, Vec<u8>) {
    common::written_by(WRITER, "batch.pdf")
}

/// The parts (file name and bytes) and `parts.json`.
async fn split(pdf: &[u8], more: Value) -> Result<(Vec<(String, Vec<u8>)>, Value), EngineError> {
    let body = common::route::file_body(pdf, "batch.pdf", &more);
    let set = call_files(&Context::new(), ROUTE, body).await?;
    let mut parts = Vec::new();
    let mut manifest = Value::Null;
    for file in &set.files {
        if file.filename == "parts.json" {
            manifest = serde_json::from_slice(&file.bytes).unwrap();
        } else {
            parts.push((file.filename.clone(), file.bytes.clone()));
        }
    }
    Ok((parts, manifest))
}

/// pdftotext's text of each page of `pdf`, after qpdf's check.
fn page_texts(dir: &std::path::Path, pdf: &[u8]) -> Vec<String> {
    let path = dir.join("part.pdf");
    std::fs::write(&path, pdf).unwrap();
    assert_eq!(Command::new("qpdf").arg("--check").arg(&path).output().unwrap().status.code(), Some(0));
    let out = Command::new("pdftotext").arg("-layout").arg(&path).arg("-").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut pages: Vec<String> =
        text.split('\u{c}').map(|p| p.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    if pages.last().is_some_and(String::is_empty) {
        pages.pop();
    }
    pages
}

fn texts_of(dir: &std::path::Path, parts: &[(String, Vec<u8>)]) -> Vec<Vec<String>> {
    parts.iter().map(|(_, bytes)| page_texts(dir, bytes)).collect()
}

#[tokio::test]
async fn separator_pages_split_the_batch_and_go_unless_kept() {
    let (dir, pdf) = written();
    let (parts, manifest) = split(&pdf, json!({ "at": "separator", "text": "batch separator" })).await.unwrap();
    assert_eq!(
        texts_of(dir.path(), &parts),
        [vec!["Letter A one", "Letter A two"], vec!["Letter B one", "", "Letter C one", "Letter C two"]]
    );
    assert_eq!(manifest["dropped"], json!([3]));
    assert_eq!(manifest["parts"][1]["first_page"], 4);
    assert_eq!(manifest["parts"][1]["last_page"], 7);
    assert_eq!(parts[0].0, "batch-part-1.pdf");

    let (parts, manifest) = split(
        &pdf,
        json!({ "at": "separator", "text": "BATCH SEPARATOR", "match_case": true, "keep_separators": true }),
    )
    .await
    .unwrap();
    let texts = texts_of(dir.path(), &parts);
    assert_eq!(texts[1][0], "BATCH SEPARATOR");
    assert_eq!(texts.iter().map(Vec::len).collect::<Vec<_>>(), [2, 5]);
    assert_eq!(manifest["dropped"], json!([]));
    // With its case, "batch separator" is nowhere: one part, the whole document.
    let (parts, _) =
        split(&pdf, json!({ "at": "separator", "text": "batch separator", "match_case": true })).await.unwrap();
    assert_eq!(texts_of(dir.path(), &parts).iter().map(Vec::len).collect::<Vec<_>>(), [7]);
}

#[tokio::test]
async fn a_scanned_blank_sheet_splits_and_goes() {
    let (dir, pdf) = written();
    let (parts, manifest) = split(&pdf, json!({ "at": "blank_pages" })).await.unwrap();
    // Page 3 has text (the separator), so it is not blank; page 5 is the scan.
    assert_eq!(
        texts_of(dir.path(), &parts),
        [vec!["Letter A one", "Letter A two", "BATCH SEPARATOR", "Letter B one"], vec!["Letter C one", "Letter C two"]]
    );
    assert_eq!(manifest["dropped"], json!([5]));
}

#[tokio::test]
async fn bookmarks_name_the_parts_at_the_level_asked() {
    let (dir, pdf) = written();
    let (parts, manifest) = split(&pdf, json!({ "at": "bookmarks" })).await.unwrap();
    let names: Vec<&str> = parts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["batch-part-1-chapter-1.pdf", "batch-part-2-chapter-2.pdf", "batch-part-3-chapter-3.pdf"]);
    assert_eq!(texts_of(dir.path(), &parts).iter().map(Vec::len).collect::<Vec<_>>(), [3, 2, 2]);
    assert_eq!(manifest["parts"][0]["title"], "Chapter 1");
    // Level 2: section 1.1 on page 1, 1.2 on page 2 (running to the end).
    let (parts, manifest) = split(&pdf, json!({ "at": "bookmarks", "level": 2 })).await.unwrap();
    assert_eq!(texts_of(dir.path(), &parts).iter().map(Vec::len).collect::<Vec<_>>(), [1, 6]);
    assert_eq!(manifest["parts"][1]["title"], "Section 1.2");
    // Level 3 has none; the error says what there is.
    let error = split(&pdf, json!({ "at": "bookmarks", "level": 3 })).await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("no_bookmarks", Some("/level")));
    assert!(error.message.contains("3 at level 1, 2 at level 2"), "{}", error.message);
}

#[tokio::test]
async fn parts_stay_under_the_size_and_a_page_over_it_goes_alone() {
    let (dir, _) = written();
    let heavy = std::fs::read(dir.path().join("heavy.pdf")).unwrap();
    let (parts, manifest) = split(&heavy, json!({ "at": "size", "max_mb": 0.25 })).await.unwrap();
    let mut seen = Vec::new();
    for ((name, bytes), report) in parts.iter().zip(manifest["parts"].as_array().unwrap()) {
        let texts = page_texts(dir.path(), bytes);
        let alone = texts == ["heavy page 7"];
        assert!(bytes.len() <= 250_000 || alone, "{name}: {} bytes", bytes.len());
        assert_eq!(report["bytes"], bytes.len());
        seen.extend(texts);
    }
    // Every page once, in order.
    assert_eq!(seen, (1..=12).map(|n| format!("heavy page {n}")).collect::<Vec<_>>());
    assert_eq!(manifest["oversized"], json!([7]));
    // Parts are as large as fit: a part and the next one's first page would not.
    assert!(parts.len() <= 6, "{} parts", parts.len());
    // The ZIP (output=file) holds the same parts and the manifest.
    let body = json!({ "file": { "data": b64(&heavy), "filename": "heavy.pdf" }, "at": "size", "max_mb": 0.25 });
    let set = call_files(&Context::new(), ROUTE, body).await.unwrap();
    let zip = set.into_single_file().unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip.bytes)).unwrap();
    let mut listed = String::new();
    archive.by_name("parts.json").unwrap().read_to_string(&mut listed).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&listed).unwrap()["parts"].as_array().unwrap().len(), parts.len());
}

#[tokio::test]
async fn options_for_another_split_or_missing_ones_are_refused() {
    let (_dir, pdf) = written();
    let file = json!({ "data": b64(&pdf) });
    assert_refused(
        &Context::new(),
        ROUTE,
        &[
            (json!({ "file": file }), "/at"),
            (json!({ "file": file, "at": "chapters" }), "/at"),
            (json!({ "file": file, "at": "separator" }), "/text"),
            (json!({ "file": file, "at": "separator", "text": "  " }), "/text"),
            (json!({ "file": file, "at": "size" }), "/max_mb"),
            (json!({ "file": file, "at": "size", "max_mb": 0 }), "/max_mb"),
            (json!({ "file": file, "at": "bookmarks", "level": 11 }), "/level"),
            (json!({ "file": file, "at": "size", "max_mb": 1, "level": 2 }), "/level"),
            (json!({ "file": file, "at": "bookmarks", "text": "x" }), "/text"),
            (json!({ "file": file, "at": "separator", "text": "x", "threshold_percent": 1 }), "/threshold_percent"),
            (json!({ "file": file, "at": "blank_pages", "threshold_percent": 9 }), "/threshold_percent"),
            (json!({ "file": file, "at": "blank_pages", "keep_separators": true }), "/keep_separators"),
        ],
    )
    .await;
}
