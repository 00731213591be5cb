//! `/v1/pdf/n-up`, `/v1/pdf/booklet` and `/v1/pdf/poster` on a document reportlab writes
//! here: ten Letter pages labelled P01 to P10, bookmarks to each, a link on page 3 to page
//! 7, a filled form field on page 2, page 5 turned a quarter and page 6 a landscape A5.
//! Where each page lands is read back with poppler (`pdftotext -bbox`), bookmarks and
//! links with pikepdf, and a poster is put together again from its rendered tiles and
//! compared with the page rendered at the poster's scale.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::route::{assert_refused, call_files};
use paperchain_engine::{Context, ErrorKind};
use paperchain_testkit::b64;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

const WRITER: &str = r#"
import sys
from reportlab.pdfgen import canvas
from reportlab.lib.colors import black, blue
out = sys.argv[1]
c = canvas.Canvas(out + "/pages.pdf", pagesize=(612, 792))
for n in range(1, 11):
    if n == 5:
        c.setPageRotation(90)
    if n == 6:
        c.setPageSize((595, 420))
    c.bookmarkPage("p%d" % n)
    c.addOutlineEntry("Page %d" % n, "p%d" % n, level=0)
    c.setFont("Helvetica-Bold", 40)
    c.drawString(72, 330 if n == 6 else 700, "P%02d" % n)
    c.setFont("Helvetica", 12)
    c.drawString(72, 100, "footer%02d" % n)
    if n == 2:
        c.acroForm.textfield(name="name", value="FIELDVALUE", x=72, y=400, width=200, height=24,
                             borderWidth=0, fontName="Helvetica", fontSize=12)
    if n == 3:
        c.setFillColor(blue)
        c.drawString(72, 500, "go to seven")
        c.linkRect("", "p7", (70, 495, 160, 515), relative=0)
        c.setFillColor(black)
    c.showPage()
    if n == 5:
        c.setPageRotation(0)
    if n == 6:
        c.setPageSize((612, 792))
c.save()
# One page drawn all over, for the poster: a grid of shapes and words.
p = canvas.Canvas(out + "/drawing.pdf", pagesize=(612, 792))
for i in range(0, 612, 51):
    for j in range(0, 792, 66):
        p.setFillColorRGB((i % 204) / 204.0, (j % 264) / 264.0, 0.5)
        p.rect(i + 4, j + 4, 40, 55, stroke=0, fill=1)
p.setFillColorRGB(0, 0, 0)
p.setFont("Helvetica-Bold", 30)
p.drawString(200, 400, "POSTER")
p.showPage()
p.save()
print("ok")
"#;

fn written() -> (tempfile::TempDir, Vec<u8>) {
    common::written_by(WRITER, "pages.pdf")
}

async fn layout(route: &str, pdf: &[u8], more: Value) -> (Vec<u8>, Option<Value>) {
    let body = common::route::file_body(pdf, "pages.pdf", &more);
    let set =
        call_files(&Context::new(), route, body.clone()).await.unwrap_or_else(|e| panic!("{route} {more}: {e:?}"));
    (set.files[0].bytes.clone(), set.report.clone())
}

/// One word pdftotext finds: its page (1-based), its box (top-down, in points) and the
/// page's size.
#[derive(Debug)]
struct Word {
    page: u32,
    text: String,
    x: f64,
    y: f64,
    page_width: f64,
    page_height: f64,
}

/// Writes `pdf`, checks it with qpdf, and reads every word with its place.
fn words(dir: &Path, pdf: &[u8]) -> Vec<Word> {
    let path = dir.join("result.pdf");
    std::fs::write(&path, pdf).unwrap();
    let check = Command::new("qpdf").arg("--check").arg(&path).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
    let out = Command::new("pdftotext").arg("-bbox").arg(&path).arg("-").output().unwrap();
    let html = String::from_utf8_lossy(&out.stdout).into_owned();
    let attr = |tag: &str, name: &str| -> f64 {
        let at = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    let mut found = Vec::new();
    for (i, page) in html.split("<page ").skip(1).enumerate() {
        let (width, height) = (attr(page, "width"), attr(page, "height"));
        for word in page.split("<word ").skip(1) {
            let text = word.split('>').nth(1).unwrap().split('<').next().unwrap().to_string();
            found.push(Word {
                page: i as u32 + 1,
                text,
                x: (attr(word, "xMin") + attr(word, "xMax")) / 2.0,
                y: (attr(word, "yMin") + attr(word, "yMax")) / 2.0,
                page_width: width,
                page_height: height,
            });
        }
    }
    found
}

/// The sheet and the quarter (column, row from the top, of a `cols` x `rows` grid) word `text` is in.
fn cell_of(words: &[Word], text: &str, cols: u32, rows: u32) -> (u32, u32, u32) {
    let w = words.iter().find(|w| w.text == text).unwrap_or_else(|| panic!("{text} is not in the result"));
    let col = (w.x / w.page_width * cols as f64) as u32;
    let row = (w.y / w.page_height * rows as f64) as u32;
    (w.page, col, row)
}

fn page_count(dir: &Path, pdf: &[u8]) -> u32 {
    let path = dir.join("count.pdf");
    std::fs::write(&path, pdf).unwrap();
    let out = Command::new("qpdf").arg("--show-npages").arg(&path).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[tokio::test]
async fn four_up_puts_each_page_in_its_cell_in_either_order() {
    let (dir, pdf) = written();
    let (out, _) = layout("/v1/pdf/n-up", &pdf, json!({ "per_sheet": 4 })).await;
    assert_eq!(page_count(dir.path(), &out), 3);
    let found = words(dir.path(), &out);
    // Letter pages four to a Letter sheet: the sheet keeps its orientation.
    assert!(found.iter().all(|w| (w.page_width, w.page_height) == (612.0, 792.0)));
    for (label, want) in [("P01", (1, 0, 0)), ("P02", (1, 1, 0)), ("P03", (1, 0, 1)), ("P04", (1, 1, 1))] {
        assert_eq!(cell_of(&found, label, 2, 2), want, "{label}");
    }
    for (label, want) in [("P07", (2, 0, 1)), ("P09", (3, 0, 0)), ("P10", (3, 1, 0))] {
        assert_eq!(cell_of(&found, label, 2, 2), want, "{label}");
    }
    // Each label sits above its own footer, in the same cell: pages are not cut or swapped.
    for n in [1, 2, 3, 4, 7, 8, 9, 10] {
        let (label, footer) = (format!("P{n:02}"), format!("footer{n:02}"));
        assert_eq!(cell_of(&found, &label, 2, 2), cell_of(&found, &footer, 2, 2), "page {n}");
    }
    // The field's value was burned in with its page.
    assert_eq!(cell_of(&found, "FIELDVALUE", 2, 2), (1, 1, 0));

    let (out, _) = layout("/v1/pdf/n-up", &pdf, json!({ "per_sheet": 4, "order": "down_right_to_left" })).await;
    let found = words(dir.path(), &out);
    for (label, want) in [("P01", (1, 1, 0)), ("P02", (1, 1, 1)), ("P03", (1, 0, 0)), ("P04", (1, 0, 1))] {
        assert_eq!(cell_of(&found, label, 2, 2), want, "{label}");
    }
}

#[tokio::test]
async fn two_up_turns_the_sheet_and_a_selection_may_repeat_a_page() {
    let (dir, pdf) = written();
    let (out, _) = layout("/v1/pdf/n-up", &pdf, json!({ "per_sheet": 2, "sheet": "A4", "pages": "1,1,8" })).await;
    assert_eq!(page_count(dir.path(), &out), 2);
    let found = words(dir.path(), &out);
    // Two portrait pages side by side on an A4 sheet turned landscape.
    assert!(found.iter().all(|w| (w.page_width, w.page_height) == (841.89, 595.276)), "{found:?}");
    let ones: Vec<_> = found.iter().filter(|w| w.text == "P01").map(|w| (w.page, w.x < 421.0)).collect();
    assert_eq!(ones, [(1, true), (1, false)]);
    assert_eq!(cell_of(&found, "P08", 2, 1).0, 2);
    assert!(!found.iter().any(|w| w.text == "P02"));
}

#[tokio::test]
async fn bookmarks_and_links_follow_their_page_onto_its_sheet() {
    let (dir, pdf) = written();
    let (out, _) = layout("/v1/pdf/n-up", &pdf, json!({ "per_sheet": 4, "pages": "1-8" })).await;
    let path = dir.path().join("nup.pdf");
    std::fs::write(&path, &out).unwrap();
    // pikepdf reads what a viewer follows: each bookmark's page, the link's box and target.
    let read = r#"
import sys, pikepdf
pdf = pikepdf.open(sys.argv[1])
index = {p.objgen: i + 1 for i, p in enumerate(pdf.pages)}
named = {}
if "/Dests" in pdf.Root:
    named.update({str(k): v for k, v in pdf.Root.Dests.items()})
if "/Names" in pdf.Root and "/Dests" in pdf.Root.Names:
    named.update({str(k): v for k, v in pikepdf.NameTree(pdf.Root.Names.Dests).items()})
def target(dest):
    if isinstance(dest, (pikepdf.Name, pikepdf.String, str)):
        dest = named.get(str(dest))
    if isinstance(dest, pikepdf.Dictionary):
        dest = dest.get("/D")
    if isinstance(dest, pikepdf.Array) and len(dest) > 0 and isinstance(dest[0], pikepdf.Dictionary):
        return index.get(dest[0].objgen, 0)
    return 0
with pdf.open_outline() as outline:
    for item in outline.root:
        print("outline", item.title, target(item.destination))
for i, page in enumerate(pdf.pages):
    for annot in page.obj.get("/Annots", []):
        if annot.get("/Subtype") == "/Link":
            dest = annot.get("/Dest")
            if dest is None and "/A" in annot:
                dest = annot.A.get("/D")
            rect = [round(float(v)) for v in annot.Rect]
            print("link", i + 1, target(dest), *rect)
"#;
    let lines = run_python(read, &[&path]);
    let outline: Vec<&str> = lines.lines().filter(|l| l.starts_with("outline")).collect();
    // Pages 1-4 are on sheet 1, 5-8 on sheet 2; pages 9 and 10 are on none.
    let want: Vec<String> =
        (1..=10).map(|n| format!("outline Page {n} {}", if n <= 8 { (n as u32).div_ceil(4) } else { 0 })).collect();
    assert_eq!(outline, want.iter().map(String::as_str).collect::<Vec<_>>());
    let links: Vec<Vec<i64>> = lines
        .lines()
        .filter(|l| l.starts_with("link"))
        .map(|l| l.split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect())
        .collect();
    // Page 3's link, on sheet 1, goes to sheet 2 (page 7); its box moved with the page
    // into the bottom left quarter, at half size: (70, 495) → (35, 247.5) on the sheet.
    assert_eq!(links.len(), 1, "{lines}");
    assert_eq!(links[0][..2], [1, 2]);
    let (x0, y0, x1, y1) = (links[0][2], links[0][3], links[0][4], links[0][5]);
    assert!((x0 - 35).abs() <= 1 && (y0 - 248).abs() <= 1 && (x1 - 80).abs() <= 1 && (y1 - 258).abs() <= 1, "{lines}");
}

#[tokio::test]
async fn a_booklet_reads_in_order_once_folded() {
    let (dir, pdf) = written();
    let (out, _) = layout("/v1/pdf/booklet", &pdf, json!({ "sheet": "Letter" })).await;
    // Ten pages padded to twelve: three sheets, six sides.
    assert_eq!(page_count(dir.path(), &out), 6);
    let found = words(dir.path(), &out);
    assert!(found.iter().all(|w| (w.page_width, w.page_height) == (792.0, 612.0)), "{found:?}");
    // (side, left page, right page); 11 and 12 are blank.
    let sides = [(1, 12, 1), (2, 2, 11), (3, 10, 3), (4, 4, 9), (5, 8, 5), (6, 6, 7)];
    for (side, left, right) in sides {
        for (page, col) in [(left, 0), (right, 1)] {
            if page <= 10 {
                let (s, c, _) = cell_of(&found, &format!("footer{page:02}"), 2, 1);
                assert_eq!((s, c), (side, col), "page {page}");
            }
        }
    }
    // Bound on the right, each side is mirrored.
    let (out, _) = layout("/v1/pdf/booklet", &pdf, json!({ "binding": "right", "pages": "1-4" })).await;
    let found = words(dir.path(), &out);
    assert_eq!(cell_of(&found, "P01", 2, 1), (1, 0, 0));
    assert_eq!(cell_of(&found, "P04", 2, 1), (1, 1, 0));
    assert_eq!(cell_of(&found, "P03", 2, 1), (2, 0, 0));
    // Two signatures of one sheet each: pages 1-4 fold alone, then 5-8.
    let (out, _) = layout("/v1/pdf/booklet", &pdf, json!({ "sheets_per_signature": 1, "pages": "1-8" })).await;
    let found = words(dir.path(), &out);
    assert_eq!(cell_of(&found, "footer04", 2, 1), (1, 0, 0));
    assert_eq!(cell_of(&found, "footer08", 2, 1), (3, 0, 0));
    assert_eq!(cell_of(&found, "footer05", 2, 1), (3, 1, 0));
}

/// Puts the poster's tiles together again (their printed parts, overlaps laid over each
/// other) and compares the result with the page rendered at the poster's scale: the
/// mean difference per channel, 0 to 255.
const STITCH: &str = r#"
import sys, json, subprocess, glob, os
from PIL import Image, ImageChops, ImageStat
page, poster, work = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.loads(sys.argv[4]); margin = float(sys.argv[5]); overlap = float(sys.argv[6])
dpi = 36.0; px = dpi / 72.0
p = r["posters"][0]; scale = p["scale"]
subprocess.run(["pdftoppm", "-r", str(dpi), "-png", poster, work + "/tile"], check=True)
subprocess.run(["pdftoppm", "-r", str(dpi * scale), "-png", page, work + "/page"], check=True)
tiles = sorted(glob.glob(work + "/tile-*.png"))
assert len(tiles) == p["columns"] * p["rows"], len(tiles)
tw, th = r["tile_width_pt"], r["tile_height_pt"]
pw, ph = tw - 2 * margin, th - 2 * margin
sx, sy = pw - overlap, ph - overlap
gw, gh = p["columns"] * sx + overlap, p["rows"] * sy + overlap
canvas = Image.new("RGB", (round(gw * px), round(gh * px)), "white")
for k, name in enumerate(tiles):
    row, col = divmod(k, p["columns"])
    tile = Image.open(name).convert("RGB")
    part = tile.crop((round(margin * px), round(margin * px), round((margin + pw) * px), round((margin + ph) * px)))
    canvas.paste(part, (round(col * sx * px), round(row * sy * px)))
ox, oy = (gw - p["width_pt"]) / 2, (gh - p["height_pt"]) / 2
original = Image.open(glob.glob(work + "/page-*.png")[0]).convert("RGB")
placed = canvas.crop((round(ox * px), round(oy * px), round(ox * px) + original.width, round(oy * px) + original.height))
diff = ImageStat.Stat(ImageChops.difference(placed, original)).mean
print(sum(diff) / 3)
"#;

#[tokio::test]
async fn a_poster_put_together_again_is_the_page_enlarged() {
    let (dir, _) = written();
    let drawing = std::fs::read(dir.path().join("drawing.pdf")).unwrap();
    for (options, margin, overlap, tiles) in [
        // Twice as large: an A2 poster of Letter proportions on A4 tiles.
        (json!({ "scale": 2, "tile": "A4" }), 0.0, 0.0, 6),
        // An A1 poster, with a margin a printer leaves and an overlap to glue.
        (json!({ "poster_size": "A1", "margin_pt": 18, "overlap_pt": 24, "marks": true }), 18.0, 24.0, 12),
    ] {
        let (out, report) = layout("/v1/pdf/poster", &drawing, options.clone()).await;
        let report = report.expect("a report");
        assert_eq!(report["tiles"], tiles, "{options}: {report}");
        let work = tempfile::tempdir().unwrap();
        let (page, poster) = (work.path().join("page.pdf"), work.path().join("poster.pdf"));
        std::fs::write(&page, &drawing).unwrap();
        std::fs::write(&poster, &out).unwrap();
        let (report_text, margin, overlap) = (report.to_string(), margin.to_string(), overlap.to_string());
        let args = [&page, &poster, work.path(), Path::new(&report_text), Path::new(&margin), Path::new(&overlap)];
        let diff: f64 = run_python(STITCH, &args).trim().parse().unwrap();
        // Edges of shapes land a pixel apart where tiles meet; anything misplaced is far more.
        assert!(diff < 6.0, "{options}: the tiles put together differ from the page by {diff} on average");
    }
}

#[tokio::test]
async fn wrong_layouts_are_refused_naming_the_field() {
    let (_dir, pdf) = written();
    let file = json!({ "data": b64(&pdf) });
    let ctx = Context::new();
    assert_refused(
        &ctx,
        "/v1/pdf/n-up",
        &[
            (json!({ "file": file, "per_sheet": 3 }), "/per_sheet"),
            (json!({ "file": file }), "/per_sheet"),
            (json!({ "file": file, "per_sheet": 4, "margin_pt": 200 }), "/margin_pt"),
            (json!({ "file": file, "per_sheet": 16, "sheet": { "width_pt": 300, "height_pt": 300 }, "margin_pt": 144, "gap_pt": 10 }), "/margin_pt"),
            (json!({ "file": file, "per_sheet": 4, "order": "spiral" }), "/order"),
            (json!({ "file": file, "per_sheet": 4, "sheet": "B5" }), "/sheet"),
            (json!({ "file": file, "per_sheet": 4, "pages": "11" }), "/pages"),
        ],
    )
    .await;
    assert_refused(
        &ctx,
        "/v1/pdf/booklet",
        &[
            (json!({ "file": file, "sheets_per_signature": 0 }), "/sheets_per_signature"),
            (json!({ "file": file, "binding": "top" }), "/binding"),
            (json!({ "file": file, "gutter_pt": -1 }), "/gutter_pt"),
        ],
    )
    .await;
    assert_refused(
        &ctx,
        "/v1/pdf/poster",
        &[
            (json!({ "file": file }), "/poster_size"),
            (json!({ "file": file, "scale": 2, "poster_size": "A1" }), "/scale"),
            (json!({ "file": file, "scale": 21 }), "/scale"),
            (json!({ "file": file, "scale": 2, "margin_pt": 72, "overlap_pt": 100, "tile": { "width_pt": 200, "height_pt": 400 } }), "/overlap_pt"),
            (json!({ "file": file, "scale": 2, "tile": { "width_pt": 0, "height_pt": 10 } }), "/tile/width_pt"),
        ],
    )
    .await;
    // Too many tiles is a size limit, not a mistake: 413 naming the field.
    let body = json!({ "file": file, "scale": 20, "tile": "A5", "margin_pt": 72, "pages": "1" });
    let error = call_files(&ctx, "/v1/pdf/poster", body).await.unwrap_err();
    assert!(matches!(error.kind, ErrorKind::TooLarge) && error.code == "too_many_pages", "{error:?}");
    assert_eq!(error.field.as_deref(), Some("/scale"));
}
