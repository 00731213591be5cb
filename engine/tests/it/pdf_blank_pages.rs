//! `/v1/pdf/remove-blank-pages` on a document reportlab writes here: a text page, an empty
//! page, a scanned blank sheet (paper tone and specks of dust), a scanned page with three
//! lines, a page with only a small logo and a page with a pale background. The blank ones
//! go and nothing else, as qpdf and pdftotext read the result.

use crate::common;

use std::process::Command;

use common::route::{assert_refused, call_files};
use paperchain_engine::Context;
use paperchain_testkit::b64;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/remove-blank-pages";

const WRITER: &str = r#"
import sys, random
from PIL import Image, ImageDraw
from reportlab.pdfgen import canvas
out = sys.argv[1]
random.seed(7)
# A sheet scanned at 150 dpi: paper tone, specks of one and two pixels.
sheet = Image.new("L", (1275, 1650), 235)
d = ImageDraw.Draw(sheet)
for _ in range(60):
    x, y = random.randrange(1270), random.randrange(1645)
    size = random.choice([0, 1])
    d.rectangle([x, y, x + size, y + size], fill=30)
sheet.save(out + "/blank-scan.png")
lines = sheet.copy()
d = ImageDraw.Draw(lines)
for i in range(3):
    d.rectangle([150, 300 + i * 40, 750, 312 + i * 40], fill=20)
lines.save(out + "/lines-scan.png")
c = canvas.Canvas(out + "/pages.pdf", pagesize=(612, 792))
c.drawString(72, 700, "Page one has text"); c.showPage()
c.showPage()
c.drawImage(out + "/blank-scan.png", 0, 0, 612, 792); c.showPage()
c.drawImage(out + "/lines-scan.png", 0, 0, 612, 792); c.showPage()
c.setFillColorRGB(0.1, 0.1, 0.4); c.rect(270, 400, 60, 60, stroke=0, fill=1); c.showPage()
c.setFillColorRGB(1, 1, 0.85); c.rect(0, 0, 612, 792, stroke=0, fill=1); c.showPage()
c.drawString(72, 700, "Page seven has text"); c.showPage()
c.save()
blank = canvas.Canvas(out + "/all-blank.pdf", pagesize=(612, 792))
blank.showPage(); blank.showPage(); blank.save()
print("ok")
"#;

fn written() -> (tempfile::TempDir, Vec<u8>) {
    common::written_by(WRITER, "pages.pdf")
}

async fn remove(pdf: &[u8], more: Value) -> (Vec<u8>, Value) {
    let body = common::route::file_body(pdf, "pages.pdf", &more);
    let set = call_files(&Context::new(), ROUTE, body).await.expect("remove-blank-pages succeeds");
    assert_eq!(set.files[0].filename, "pages-no-blanks.pdf");
    (set.files[0].bytes.clone(), set.report.clone().expect("a report"))
}

/// qpdf's page count (after its check) and pdftotext's text of the result.
fn read(dir: &std::path::Path, pdf: &[u8]) -> (u32, String) {
    let path = dir.join("result.pdf");
    std::fs::write(&path, pdf).unwrap();
    assert_eq!(Command::new("qpdf").arg("--check").arg(&path).output().unwrap().status.code(), Some(0));
    let pages = Command::new("qpdf").arg("--show-npages").arg(&path).output().unwrap();
    let text = Command::new("pdftotext").arg(&path).arg("-").output().unwrap();
    (String::from_utf8_lossy(&pages.stdout).trim().parse().unwrap(), String::from_utf8_lossy(&text.stdout).into_owned())
}

#[tokio::test]
async fn blank_and_scanned_blank_pages_go_and_nothing_else() {
    let (dir, pdf) = written();
    let (out, report) = remove(&pdf, json!({})).await;
    assert_eq!(report["removed"], json!([2, 3, 6]), "{report}");
    assert_eq!((report["pages_in"].as_u64(), report["pages_out"].as_u64()), (Some(7), Some(4)));
    let (pages, text) = read(dir.path(), &out);
    assert_eq!(pages, 4);
    assert!(text.contains("Page one has text") && text.contains("Page seven has text"));
    let ink: Vec<Option<f64>> = report["pages"].as_array().unwrap().iter().map(|p| p["ink_percent"].as_f64()).collect();
    // Text pages are not measured; the empty page and the pale one measure nothing, the
    // specks and the paper tone almost nothing (two specks may touch); three scanned lines
    // and a 60 pt logo are well above the threshold.
    assert_eq!((ink[0], ink[6]), (None, None));
    assert_eq!((ink[1], ink[5]), (Some(0.0), Some(0.0)));
    assert!(ink[2].unwrap() < 0.05, "{ink:?}");
    // Three bars of 4 by 0.08 inches are about 1.3% of a Letter page as rendered, the
    // 60 pt logo 0.75%.
    assert!((1.0..1.6).contains(&ink[3].unwrap()) && (0.6..0.9).contains(&ink[4].unwrap()), "{ink:?}");

    // A higher threshold takes the page of lines and the logo too; `pages` limits the search.
    let (_, report) = remove(&pdf, json!({ "threshold_percent": 1.0 })).await;
    assert_eq!(report["removed"], json!([2, 3, 5, 6]));
    let (_, report) = remove(&pdf, json!({ "threshold_percent": 2 })).await;
    assert_eq!(report["removed"], json!([2, 3, 4, 5, 6]));
    let (out, report) = remove(&pdf, json!({ "pages": "1-2,4-last" })).await;
    assert_eq!(report["removed"], json!([2, 6]));
    assert_eq!(read(dir.path(), &out).0, 5);
}

#[tokio::test]
async fn a_document_of_blank_pages_is_refused_and_bad_inputs_name_their_field() {
    let (dir, pdf) = written();
    let blank = std::fs::read(dir.path().join("all-blank.pdf")).unwrap();
    let body = json!({ "file": { "data": b64(&blank), "filename": "all-blank.pdf" } });
    let error = call_files(&Context::new(), ROUTE, body).await.unwrap_err();
    assert_eq!((&*error.code, error.field.as_deref()), ("no_pages_left", Some("/file")), "{error:?}");

    let file = json!({ "data": b64(&pdf), "filename": "pages.pdf" });
    assert_refused(
        &Context::new(),
        ROUTE,
        &[
            (json!({ "file": file, "threshold_percent": 6 }), "/threshold_percent"),
            (json!({ "file": file, "threshold_percent": -0.5 }), "/threshold_percent"),
            (json!({ "file": file, "pages": "9" }), "/pages"),
            (json!({ "file": file, "dpi": 72 }), "/dpi"),
        ],
    )
    .await;
}
