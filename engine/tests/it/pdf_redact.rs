//! `/v1/pdf/redact` on a document reportlab writes here: a name and a social security
//! number on one line with other words (a partly covered line), a page with nothing
//! secret, a page where the name is in a form field, the name in the title, subject and a
//! bookmark. After redaction neither poppler's `pdftotext`, pypdfium2 nor a byte search of
//! the whole file with its streams decompressed by qpdf finds them, in any encoding; the
//! other words are still found; the boxes render in the fill colour; the untouched page is
//! still vector text.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::route::{assert_refused, call_files};
use paperchain_engine::Context;
use paperchain_testkit::b64;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/redact";

const WRITER: &str = r#"
import sys
from reportlab.pdfgen import canvas
out = sys.argv[1]
c = canvas.Canvas(out + "/record.pdf", pagesize=(612, 792))
c.setTitle("Report on John Smith")
c.setSubject("SSN 123-45-6789")
c.setAuthor("Clinic")
c.bookmarkPage("p1"); c.addOutlineEntry("John Smith, first visit", "p1")
c.setFont("Helvetica", 14)
c.drawString(72, 700, "Patient: John Smith, SSN 123-45-6789. Diagnosis follows.")
# Words in other scripts on the same page: they must stay searchable after the page is rebuilt.
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
pdfmetrics.registerFont(TTFont("DejaVu", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
c.setFont("DejaVu", 14)
c.drawString(72, 650, "Zürich Ελλάδα Москва")
c.setFillColorRGB(0.2, 0.6, 0.2)
c.rect(72, 400, 200, 100, stroke=0, fill=1)
c.setFillColorRGB(0, 0, 0)
c.showPage()
c.bookmarkPage("p2"); c.addOutlineEntry("Notes", "p2")
c.setFont("Helvetica", 14)
c.drawString(72, 700, "Nothing secret here.")
# Not page text, but in the file: a comment and a field value on this untouched page.
c.acroForm.textfield(name="contact", value="Call JOHN SMITH", x=72, y=500, width=200, height=24, fontSize=12)
c.showPage()
c.setFont("Helvetica", 14)
c.drawString(72, 700, "Contact john smith at home.")
c.acroForm.textfield(name="patient", value="John Smith", x=72, y=600, width=200, height=24, fontSize=12)
c.showPage()
c.save()
print("ok")
"#;

fn written() -> (tempfile::TempDir, Vec<u8>) {
    common::written_by(WRITER, "record.pdf")
}

async fn redact(pdf: &[u8], more: Value) -> (Vec<u8>, Value) {
    let body = common::route::file_body(pdf, "record.pdf", &more);
    let set = call_files(&Context::new(), ROUTE, body).await.unwrap_or_else(|e| panic!("{more}: {e:?}"));
    assert_eq!(set.files[0].filename, "record-redacted.pdf");
    (set.files[0].bytes.clone(), set.report.clone().expect("a report"))
}

/// poppler's text of each page, after qpdf's check.
fn poppler_pages(dir: &Path, pdf: &[u8]) -> Vec<String> {
    let path = dir.join("out.pdf");
    std::fs::write(&path, pdf).unwrap();
    let check = Command::new("qpdf").arg("--check").arg(&path).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
    let out = Command::new("pdftotext").arg(&path).arg("-").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split('\u{c}')
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// pypdfium2's text of the whole document.
fn pdfium_text(dir: &Path, pdf: &[u8]) -> String {
    let path = dir.join("out.pdf");
    std::fs::write(&path, pdf).unwrap();
    let read = r#"
import sys, pypdfium2
doc = pypdfium2.PdfDocument(sys.argv[1])
print("\f".join(page.get_textpage().get_text_range() for page in doc))
"#;
    run_python(read, &[&path])
}

/// Every byte of the file, its streams decompressed by qpdf.
fn decompressed(dir: &Path, pdf: &[u8]) -> Vec<u8> {
    let (input, output) = (dir.join("in.pdf"), dir.join("qdf.pdf"));
    std::fs::write(&input, pdf).unwrap();
    let run = Command::new("qpdf")
        .args(["--qdf", "--object-streams=disable", "--decode-level=all"])
        .arg(&input)
        .arg(&output)
        .output()
        .unwrap();
    assert!(matches!(run.status.code(), Some(0 | 3)), "{}", String::from_utf8_lossy(&run.stderr));
    std::fs::read(output).unwrap()
}

/// Whether `text` is in `bytes` as ASCII or UTF-16 (big-endian, as PDF text strings are), any case.
fn holds(bytes: &[u8], text: &str) -> bool {
    let lower: Vec<u8> = bytes.iter().map(u8::to_ascii_lowercase).collect();
    let ascii = text.to_ascii_lowercase().into_bytes();
    let utf16: Vec<u8> = text.to_ascii_lowercase().bytes().flat_map(|b| [0, b]).collect();
    lower.windows(ascii.len()).any(|w| w == ascii) || lower.windows(utf16.len()).any(|w| w == utf16)
}

/// The colour of poppler's rendering of `page` at 72 dpi at (x, y) points from the top left.
fn colour_at(dir: &Path, pdf: &[u8], page: u32, x: f64, y: f64) -> Vec<u8> {
    let path = dir.join("shown.pdf");
    std::fs::write(&path, pdf).unwrap();
    let probe = r#"
import sys, subprocess
from PIL import Image
pdf, page, x, y, work = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
subprocess.run(["pdftoppm", "-r", "72", "-f", page, "-l", page, "-png", "-singlefile", pdf, work + "/shown"], check=True)
print(*Image.open(work + "/shown.png").convert("RGB").getpixel((round(x), round(y))))
"#;
    let (page, x, y) = (page.to_string(), x.to_string(), y.to_string());
    let args = [path.as_path(), Path::new(&page), Path::new(&x), Path::new(&y), dir];
    run_python(probe, &args).split_whitespace().map(|c| c.parse().unwrap()).collect()
}

#[tokio::test]
async fn found_text_is_gone_from_every_reading_of_the_file_and_the_rest_stays() {
    let (dir, pdf) = written();
    // The input holds everything the redaction must remove, so the checks below can fail.
    let before = decompressed(dir.path(), &pdf);
    assert!(holds(&before, "John Smith") && holds(&before, "123-45-6789"));

    let (out, report) =
        redact(&pdf, json!({ "text": ["john smith", "Nonexistent"], "patterns": [r"\d{3}-\d{2}-\d{4}"] })).await;
    let pages = poppler_pages(dir.path(), &out);
    let all = pages.join(" ").to_lowercase();
    assert!(!all.contains("smith") && !all.contains("123-45"), "{all}");
    assert!(!pdfium_text(dir.path(), &out).to_lowercase().contains("smith"));
    let bytes = decompressed(dir.path(), &out);
    // ("6789" alone is no test: the TrueType font the writer embeds for page 1's other
    // scripts, still used by page 2, holds every 16-bit code in order in its tables.)
    for secret in ["John Smith", "Smith", "123-45-6789", "45-6789"] {
        assert!(!holds(&bytes, secret), "{secret} is still in the file");
    }
    // The rest of the partly covered line is still there, and the untouched page.
    assert!(pages[0].contains("Patient:") && pages[0].contains("Diagnosis follows."), "{}", pages[0]);
    assert!(pages[0].contains("Zürich Ελλάδα Москва"), "other scripts are put back too: {}", pages[0]);
    assert_eq!(pages[1], "Nothing secret here.");
    assert_eq!(report["annotations_removed"], 1, "the field on page 2 holding the name");
    assert!(pages[2].contains("Contact") && pages[2].contains("at home."), "{}", pages[2]);

    assert_eq!(report["matches"], 3, "{report:#}");
    assert_eq!(report["not_found"], json!(["Nonexistent"]));
    let redacted: Vec<u64> = report["pages"].as_array().unwrap().iter().map(|p| p["page"].as_u64().unwrap()).collect();
    assert_eq!(redacted, [1, 3]);
    assert_eq!(report["form_fields_removed"], 2);
    assert_eq!(report["bookmarks"], 1);
    assert!(report["info_fields"].as_array().unwrap().len() >= 2, "{report:#}");

    // The box over the name renders black.
    let b = &report["pages"][0]["boxes"][0];
    let (x, y) = (
        (b[0].as_f64().unwrap() + b[2].as_f64().unwrap()) / 2.0,
        (b[1].as_f64().unwrap() + b[3].as_f64().unwrap()) / 2.0,
    );
    assert_eq!(colour_at(dir.path(), &out, 1, x, y), [0, 0, 0]);
    // Page 2 was not touched: still text drawn as text, no picture.
    let path = dir.path().join("out.pdf");
    std::fs::write(&path, &out).unwrap();
    let images = Command::new("pdfimages").args(["-list", "-f", "2", "-l", "2"]).arg(&path).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&images.stdout).lines().count(), 2, "page 2 has no image");
}

/// A word hyphenated at the end of a line, "Abbil-" then "dung" on the next.
const HYPHENATED: &str = r#"
import sys
from reportlab.pdfgen import canvas
c = canvas.Canvas(sys.argv[1] + "/record.pdf", pagesize=(612, 792))
c.setFont("Helvetica", 12)
c.drawString(72, 700, "Ein Beispiel ist die in Abbil-")
c.drawString(72, 685, "dung 1.9 dargestellte Kurve.")
c.drawString(72, 650, "Siehe auch Abbildung 2 und die Zeit-")
c.drawString(72, 635, "Schrift unten.")
c.save()
print("ok")
"#;

#[tokio::test]
async fn a_word_hyphenated_across_two_lines_is_found_and_removed() {
    let (dir, pdf) = common::written_by(HYPHENATED, "record.pdf");
    let before = poppler_pages(dir.path(), &pdf).join(" ");
    assert!(before.contains("Abbil- dung") || before.contains("Abbildung 1.9"), "{before}");
    let (out, report) = redact(&pdf, json!({ "text": ["Abbildung"] })).await;
    assert_eq!(report["matches"], 2, "{report:#}");
    // Only the word's two parts: the lines set close above and below keep their words.
    assert_eq!(report["pages"][0]["words_removed"], 3, "Abbil-, dung and Abbildung: {report:#}");
    let text = poppler_pages(dir.path(), &out).join(" ");
    for gone in ["Abbil", "dung 1.9", "Abbildung"] {
        assert!(!text.contains(gone), "{gone} is still read: {text}");
    }
    assert!(!pdfium_text(dir.path(), &out).contains("Abbil"));
    // The rest of both lines stays, and a hyphenated word not asked for.
    for kept in ["Ein Beispiel ist die in", "1.9 dargestellte Kurve.", "Siehe auch", "Zeit"] {
        assert!(text.contains(kept), "{kept} is gone: {text}");
    }
}

#[tokio::test]
async fn areas_and_whole_pages_are_painted_and_emptied() {
    let (dir, pdf) = written();
    // The green square on page 1 is at x 72-272, y 292-392 from the top: cover its left half.
    let body = json!({
        "areas": [{ "page": 1, "box_pt": [60, 280, 172, 400] }, { "page": 2, "box_pt": [60, 80, 300, 100] }],
        "pages": "3",
        "fill": "#ff0000",
    });
    let (out, report) = redact(&pdf, body).await;
    let pages = poppler_pages(dir.path(), &out);
    assert!(pages[1].is_empty(), "page 2's line was under the area: {}", pages[1]);
    assert!(pages[2].is_empty(), "page 3 was removed whole: {}", pages[2]);
    assert!(pages[0].contains("John Smith"), "page 1's text was outside the area");
    let red = colour_at(dir.path(), &out, 1, 100.0, 340.0);
    assert!(red[0] > 240 && red[1] < 20 && red[2] < 20, "{red:?}");
    let green = colour_at(dir.path(), &out, 1, 230.0, 340.0);
    assert!(green[1] > 120 && green[0] < 80, "the uncovered half of the square: {green:?}");
    // JPEG keeps a flat colour within a few levels.
    let whole = colour_at(dir.path(), &out, 3, 300.0, 400.0);
    assert!(whole[0] > 240 && whole[1] < 20 && whole[2] < 20, "{whole:?}");
    assert_eq!(report["pages"].as_array().unwrap().len(), 3);
    // Nothing found by text: the metadata is left alone.
    assert_eq!(report["info_fields"], json!([]));
    let bytes = decompressed(dir.path(), &out);
    assert!(holds(&bytes, "Report on John Smith"));
}

#[tokio::test]
async fn wrong_requests_are_refused_naming_the_field() {
    let (_dir, pdf) = written();
    let file = json!({ "data": b64(&pdf) });
    assert_refused(
        &Context::new(),
        ROUTE,
        &[
            (json!({ "file": file }), "/text"),
            (json!({ "file": file, "text": [""] }), "/text/0"),
            (json!({ "file": file, "patterns": ["(open"] }), "/patterns/0"),
            (json!({ "file": file, "areas": [{ "page": 9, "box_pt": [0, 0, 10, 10] }] }), "/areas/0/page"),
            (json!({ "file": file, "areas": [{ "page": 1, "box_pt": [10, 0, 5, 10] }] }), "/areas/0/box_pt"),
            (json!({ "file": file, "pages": "7" }), "/pages"),
            (json!({ "file": file, "text": ["x"], "dpi": 10 }), "/dpi"),
            (json!({ "file": file, "text": ["x"], "fill": "red" }), "/fill"),
        ],
    )
    .await;
}
