//! `/v1/pdf/compare` on two versions of a corpus document's text, written by reportlab:
//! the revision replaces three words, deletes one and inserts one, at places chosen by
//! the writer. The comparison must report exactly those words. A third version draws a
//! box on page 2 and changes no word: only the looks of page 2 differ, where the box is.
//! The side-by-side PDF is rendered by poppler and the highlight looked for under the
//! changed word.

use crate::common;

use std::process::Command;

use common::route::{assert_refused, call_files};
use paperchain_engine::Context;
use paperchain_testkit::b64;
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/compare";

/// Writes `original.pdf`, `revised.pdf` and `boxed.pdf` from a Markdown file's text, and
/// prints the changes made as JSON.
const WRITER: &str = r#"
import sys, re, json
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import SimpleDocTemplate, Paragraph
out, source = sys.argv[1], sys.argv[2]
text = open(source, encoding="utf-8").read()
text = re.sub(r"[#*_`|>\[\]()<&]", " ", text)
words = [w for w in text.split() if w.isascii()][:1100]
plain = lambda i: re.fullmatch(r"[A-Za-z]{4,}", words[i]) is not None
def pick(start):
    i = start
    while not (plain(i) and words[i - 1] != words[i] and words[i + 1] != words[i] and words[i - 1] != words[i + 1]):
        i += 1
    return i
revised = list(words)
changes = []
for start, new in [(60, "Zebraword"), (400, "Quokkaword"), (900, "Narwhalword")]:
    i = pick(start)
    changes.append({"kind": "replaced", "original": words[i], "revised": new})
    revised[i] = new
d = pick(650)
changes.append({"kind": "deleted", "original": words[d], "revised": None})
revised[d] = None
changes.append({"kind": "inserted", "original": None, "revised": "Platypusword"})
revised.insert(pick(1000) + 1, "Platypusword")
style = getSampleStyleSheet()["Normal"]
def write(name, items, box=False):
    doc = SimpleDocTemplate(out + "/" + name, pagesize=A4)
    paras = [" ".join(w for w in items[i:i + 80] if w) for i in range(0, len(items), 80)]
    def later(canvas, doc):
        if box and doc.page == 2:
            canvas.setFillColorRGB(0.1, 0.2, 0.7)
            canvas.rect(400, 60, 120, 40, stroke=0, fill=1)
    doc.build([Paragraph(p, style) for p in paras], onFirstPage=later, onLaterPages=later)
write("original.pdf", words)
write("revised.pdf", revised)
write("boxed.pdf", words, box=True)
print(json.dumps(changes))
"#;

struct Versions {
    dir: tempfile::TempDir,
    changes: Vec<Value>,
}

impl Versions {
    fn read(&self, name: &str) -> Value {
        json!({ "data": b64(&std::fs::read(self.dir.path().join(name)).unwrap()), "filename": name })
    }
}

fn written() -> Versions {
    let dir = tempfile::tempdir().unwrap();
    let source = corpus().join("docling/pdf/groundtruth/multi_page.md");
    let printed = run_python(WRITER, &[dir.path(), &source]);
    let changes: Vec<Value> = serde_json::from_str(printed.trim()).unwrap();
    Versions { dir, changes }
}

async fn compare(body: Value) -> Value {
    common::route::ok(&Context::new(), ROUTE, body).await
}

#[tokio::test]
async fn exactly_the_words_changed_are_reported() {
    let v = written();
    let report = compare(json!({ "original": v.read("original.pdf"), "revised": v.read("revised.pdf") })).await;
    let got: Vec<Value> = report["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!({ "kind": c["kind"], "original": c["original"]["text"], "revised": c["revised"]["text"] }))
        .collect();
    let mut want = v.changes.clone();
    // In reading order, as the report lists them.
    let order = |c: &Value| got.iter().position(|g| g == c).unwrap_or(usize::MAX);
    want.sort_by_key(order);
    assert_eq!(got, want, "{report:#}");
    assert_eq!((report["words_deleted"].as_u64(), report["words_inserted"].as_u64()), (Some(4), Some(4)));
    assert_eq!(report["identical"], false);
    // Each change says where its words are, on a page of its document.
    for change in report["changes"].as_array().unwrap() {
        for side in ["original", "revised"] {
            if let Some(words) = change[side].as_object() {
                let b = &words["boxes"][0]["box_pt"];
                assert!(b[0].as_f64() < b[2].as_f64() && b[1].as_f64() < b[3].as_f64(), "{change}");
                assert!(words["page"].as_u64().unwrap() >= 1);
            }
        }
    }
    // The same file against itself: nothing.
    let same = compare(json!({ "original": v.read("original.pdf"), "revised": v.read("original.pdf") })).await;
    assert_eq!((same["identical"].clone(), same["changes"].as_array().unwrap().len()), (json!(true), 0));
    assert!(same["visual"].as_array().unwrap().iter().all(|p| p["differs_percent"] == 0.0));
}

#[tokio::test]
async fn a_drawing_changed_shows_in_the_looks_only_where_it_is() {
    let v = written();
    let report = compare(json!({ "original": v.read("original.pdf"), "revised": v.read("boxed.pdf") })).await;
    assert_eq!(report["changes"], json!([]));
    let looks = report["visual"].as_array().unwrap();
    for look in looks {
        if look["page"] == 2 {
            let areas = look["areas"].as_array().unwrap();
            assert_eq!(areas.len(), 1, "{look}");
            // reportlab drew it at x 400-520, y 60-100 from the bottom of an A4 page
            // (841.89 pt high): from the top, 741.89-781.89. Cells of 16 pt round outwards.
            let a: Vec<f64> = areas[0].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
            assert!(a[0] <= 400.0 && a[0] > 380.0 && a[2] >= 520.0 && a[2] < 540.0, "{a:?}");
            assert!(a[1] <= 741.9 && a[1] > 720.0 && a[3] >= 781.8 && a[3] < 800.0, "{a:?}");
        } else {
            assert_eq!(look["differs_percent"], 0.0, "{look}");
        }
    }
    // Without the looks, the two are the same.
    let words_only =
        compare(json!({ "original": v.read("original.pdf"), "revised": v.read("boxed.pdf"), "visual": false })).await;
    assert_eq!(words_only["identical"], true);
}

#[tokio::test]
async fn the_side_by_side_pdf_highlights_the_changed_words() {
    let v = written();
    let body = json!({ "original": v.read("original.pdf"), "revised": v.read("revised.pdf"), "format": "pdf" });
    let set = call_files(&Context::new(), ROUTE, body.clone()).await.unwrap();
    let summary = set.report.clone().expect("a summary");
    assert_eq!(summary["words_inserted"], 4);
    let path = v.dir.path().join("compared.pdf");
    std::fs::write(&path, &set.files[0].bytes).unwrap();
    assert_eq!(Command::new("qpdf").arg("--check").arg(&path).output().unwrap().status.code(), Some(0));
    let text = Command::new("pdftotext").arg("-f").arg("1").arg("-l").arg("1").arg(&path).arg("-").output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Original, page 1") && text.contains("Revised, page 1"), "{text}");
    // Where the first replaced word is on the revision, the sheet is green under it.
    let report = compare(json!({ "original": v.read("original.pdf"), "revised": v.read("revised.pdf") })).await;
    let first = &report["changes"][0];
    let page = first["revised"]["page"].as_u64().unwrap();
    let b: Vec<f64> =
        first["revised"]["boxes"][0]["box_pt"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    // Sheet layout (docs/compare.rs): 18 pt margins, a 22 pt label strip, the original
    // (A4, 595.276 pt wide) then the revision.
    let (x, y) = (18.0 * 2.0 + 595.276 + (b[0] + b[2]) / 2.0, 18.0 + 22.0 + (b[1] + b[3]) / 2.0);
    let probe = r#"
import sys, subprocess
from PIL import Image
pdf, page, x, y, work = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
subprocess.run(["pdftoppm", "-r", "72", "-f", page, "-l", page, "-png", "-singlefile", pdf, work + "/sheet"], check=True)
r, g, b = Image.open(work + "/sheet.png").convert("RGB").getpixel((round(x), round(y)))
print(r, g, b)
"#;
    let (page, x, y) = (page.to_string(), x.to_string(), y.to_string());
    let args =
        [path.as_path(), std::path::Path::new(&page), std::path::Path::new(&x), std::path::Path::new(&y), v.dir.path()];
    let rgb: Vec<i64> = run_python(probe, &args).split_whitespace().map(|c| c.parse().unwrap()).collect();
    assert!(rgb[1] > rgb[0] + 40 && rgb[1] > rgb[2] + 40, "not green under the inserted word: {rgb:?}");
}

#[tokio::test]
async fn missing_or_wrong_inputs_are_refused_naming_the_field() {
    let v = written();
    let a = v.read("original.pdf");
    assert_refused(
        &Context::new(),
        ROUTE,
        &[
            (json!({ "original": a }), "/revised"),
            (json!({ "revised": a }), "/original"),
            (json!({ "original": a, "revised": a, "format": "docx" }), "/format"),
            (json!({ "original": a, "revised": { "data": b64(b"not a pdf") } }), "/revised"),
        ],
    )
    .await;
}
