//! `/v1/pdf/to-pdfa` on documents other writers make here (reportlab with fonts it does not
//! embed, then pikepdf adding what PDF/A forbids: a script on open, a launch action, a
//! hidden annotation, an attachment, an interpolated image) and on the whole corpus.
//! Checked with tools nobody here wrote: qpdf `--check` without warnings, poppler's
//! `pdffonts` (every font embedded) and `pdftotext` (the same words), pikepdf for the XMP,
//! the output intent and the attachments, Pillow's LittleCMS for the colour profile, and
//! the pages rendered by poppler before and after.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::route::{call_files, file_body};
use paperchain_engine::Context;
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/to-pdfa";

const WRITER: &str = r#"
import sys, io
from reportlab.pdfgen import canvas
from reportlab.lib.utils import ImageReader
from PIL import Image
out = sys.argv[1]
c = canvas.Canvas(out + "/plain.pdf", pagesize=(595, 842))
c.setTitle("Quarterly report")
c.setAuthor("Finance team")
c.setSubject("Archive test")
c.setFont("Helvetica", 14)
c.drawString(72, 760, "Revenue grew by 12% in the third quarter.")
c.setFont("Times-Bold", 14)
c.drawString(72, 730, "Times bold: \u00e9t\u00e9 \u00e0 Z\u00fcrich \u2014 \u201cquoted\u201d")
c.setFont("Courier-Oblique", 12)
c.drawString(72, 700, "Courier oblique: 0123456789")
c.setFont("ZapfDingbats", 14)
c.drawString(72, 670, "4 5 6")
c.setFillColorRGB(0.1, 0.4, 0.8)
c.rect(72, 500, 200, 100, stroke=0, fill=1)
img = Image.new("RGB", (8, 8), (200, 30, 30))
c.drawImage(ImageReader(img), 300, 500, 80, 80)
c.linkURL("https://example.com/report", (72, 755, 300, 775))
c.showPage()
c.setFont("Helvetica-Bold", 20)
c.drawString(72, 760, "Second page")
c.showPage()
c.save()

import pikepdf
from pikepdf import Dictionary, Name, Array, String
pdf = pikepdf.open(out + "/plain.pdf")
pdf.Root.OpenAction = pdf.make_indirect(Dictionary(S=Name.JavaScript, JS=String("app.alert('hi')")))
page = pdf.pages[0]
launch = Dictionary(Type=Name.Annot, Subtype=Name.Link, Rect=Array([72, 600, 200, 620]), A=Dictionary(S=Name.Launch, F=String("calc.exe")))
hidden = Dictionary(Type=Name.Annot, Subtype=Name.Text, Rect=Array([400, 700, 420, 720]), F=2, Contents=String("hidden note"))
page.Annots.append(pdf.make_indirect(launch))
page.Annots.append(pdf.make_indirect(hidden))
for name, xobject in page.Resources.XObject.items():
    if xobject.Subtype == Name.Image:
        xobject.Interpolate = True
pdf.attachments["data.csv"] = pikepdf.AttachedFileSpec(pdf, b"a,b\n1,2\n", filename="data.csv")
pdf.save(out + "/input.pdf")
print("ok")
"#;

fn written() -> (tempfile::TempDir, Vec<u8>) {
    common::written_by(WRITER, "input.pdf")
}

async fn convert(pdf: &[u8], more: Value) -> (Vec<u8>, Value) {
    let body = file_body(pdf, "input.pdf", &more);
    let set = call_files(&Context::new(), ROUTE, body).await.unwrap_or_else(|e| panic!("{more}: {e:?}"));
    (set.files[0].bytes.clone(), set.report.clone().expect("a report"))
}

/// qpdf's check, which must find nothing to warn about.
fn qpdf_clean(path: &Path) {
    let check = Command::new("qpdf").arg("--check").arg(path).output().unwrap();
    let out = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "{}: {out}", path.display());
    assert!(out.contains("No syntax or stream encoding errors") && !out.to_lowercase().contains("warning"), "{out}");
    assert!(check.stderr.is_empty(), "{}", String::from_utf8_lossy(&check.stderr));
}

/// pdffonts' rows: (name, embedded).
fn fonts(path: &Path) -> Vec<(String, bool)> {
    let out = Command::new("pdffonts").arg(path).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(2)
        .map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // name ... emb sub uni object-id generation
            (cols[0].to_string(), cols[cols.len() - 5] == "yes")
        })
        .collect()
}

fn text(path: &Path) -> String {
    let out = Command::new("pdftotext").arg(path).arg("-").output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What pikepdf and Pillow read from the output.
const READER: &str = r#"
import sys, json, io
import pikepdf
from PIL import ImageCms, Image
pdf = pikepdf.open(sys.argv[1])
meta = pdf.open_metadata()
intent = pdf.Root.OutputIntents[0]
icc = intent.DestOutputProfile.read_bytes()
profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
srgb = ImageCms.createProfile("sRGB")
t = ImageCms.buildTransform(srgb, profile, "RGB", "RGB")
colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (128, 128, 128), (250, 200, 20)]
im = Image.new("RGB", (len(colours), 1))
im.putdata(colours)
mapped = list(ImageCms.applyTransform(im, t).getdata())
drift = max(abs(a - b) for c, m in zip(colours, mapped) for a, b in zip(c, m))
annots = []
for page in pdf.pages:
    for a in page.get("/Annots", []):
        annots.append({"subtype": str(a.Subtype), "flags": int(a.get("/F", 0)), "ap": "/AP" in a})
files = {}
for name, spec in pdf.attachments.items():
    files[name] = {"data": spec.get_file().read_bytes().decode(), "relationship": str(spec.obj.get("/AFRelationship"))}
af = [str(s.get("/UF")) for s in pdf.Root.get("/AF", [])]
print(json.dumps({
    "part": meta.get("pdfaid:part"), "conformance": meta.get("pdfaid:conformance"),
    "title": meta.get("dc:title"), "creator": meta.get("dc:creator"), "info_title": str(pdf.docinfo.get("/Title")),
    "intent": str(intent.S), "description": profile.profile.profile_description, "drift": drift,
    "id": "/ID" in pdf.trailer, "encrypted": pdf.is_encrypted,
    "open_action": "/OpenAction" in pdf.Root, "annots": annots, "files": files, "af": af,
    "interpolate": [bool(x.get("/Interpolate", False)) for p in pdf.pages for x in p.Resources.get("/XObject", {}).values() if x.Subtype == "/Image"],
}))
"#;

fn read(path: &Path) -> Value {
    serde_json::from_str(run_python(READER, &[path]).trim()).unwrap()
}

/// The mean absolute difference of two renderings of page `page` (72 dpi, grey).
fn rendering_difference(dir: &Path, before: &Path, after: &Path, page: u32) -> f64 {
    let render = |pdf: &Path, stem: &str| {
        let prefix = dir.join(stem);
        let status = Command::new("pdftoppm")
            .args(["-gray", "-r", "72", "-singlefile", "-f", &page.to_string(), "-l", &page.to_string()])
            .arg(pdf)
            .arg(&prefix)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read(prefix.with_extension("pgm")).unwrap()
    };
    let (a, b) = (render(before, "before"), render(after, "after"));
    assert_eq!(a.len(), b.len(), "the page changed size");
    let sum: u64 = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y) as u64).sum();
    sum as f64 / a.len() as f64
}

#[tokio::test(flavor = "multi_thread")]
async fn a_document_with_unembedded_fonts_and_forbidden_parts_becomes_pdfa_2b() {
    let (dir, input) = written();
    let before = dir.path().join("input.pdf");
    assert!(fonts(&before).iter().any(|(name, embedded)| name == "Helvetica" && !embedded));

    let (output, report) = convert(&input, json!({})).await;
    let after = dir.path().join("out.pdf");
    std::fs::write(&after, &output).unwrap();
    qpdf_clean(&after);
    let fonts_after = fonts(&after);
    assert!(fonts_after.len() >= 5, "{fonts_after:?}");
    assert!(fonts_after.iter().all(|(_, embedded)| *embedded), "{fonts_after:?}");
    assert_eq!(report["conformance"], "PDF/A-2b");
    let embedded: Vec<&str> =
        report["fonts_embedded"].as_array().unwrap().iter().map(|f| f["embedded"].as_str().unwrap()).collect();
    for want in ["LiberationSans", "LiberationSerif-Bold", "LiberationMono-Italic", "LiberationSans-Bold", "D050000L"] {
        assert!(embedded.contains(&want), "{want} not in {report}");
    }

    // The same words, with the accents and typographic quotes of the Times line.
    assert_eq!(text(&after), text(&before));
    assert!(text(&after).contains("été à Zürich — “quoted”"), "{}", text(&after));
    // Fonts of the same metrics: the pages look the same.
    for page in [1, 2] {
        let difference = rendering_difference(dir.path(), &before, &after, page);
        assert!(difference < 1.5, "page {page} differs by {difference:.2} grey levels on average");
    }

    let seen = read(&after);
    assert_eq!((seen["part"].as_str(), seen["conformance"].as_str()), (Some("2"), Some("B")), "{seen}");
    assert_eq!(seen["title"], "Quarterly report");
    assert_eq!(seen["info_title"], "Quarterly report");
    assert_eq!(seen["intent"], "/GTS_PDFA1");
    assert_eq!(seen["description"], "sRGB IEC61966-2.1");
    assert!(seen["drift"].as_i64().unwrap() <= 2, "the profile is not sRGB: {seen}");
    assert_eq!((seen["id"].as_bool(), seen["encrypted"].as_bool()), (Some(true), Some(false)));
    assert_eq!(seen["open_action"], false, "the script on open stays: {seen}");
    assert_eq!(seen["files"], json!({}), "PDF/A-2 keeps no attachment: {seen}");
    assert!(seen["interpolate"].as_array().unwrap().iter().all(|i| i == false), "{seen}");
    let annots = seen["annots"].as_array().unwrap();
    // The web link and the launch link stay as links (the launch without its action); the hidden note goes.
    assert_eq!(annots.len(), 2, "{seen}");
    for annot in annots {
        assert_eq!(annot["subtype"], "/Link");
        assert_eq!(annot["flags"].as_i64().unwrap() & (4 | 1 | 2 | 32 | 256), 4, "{annot}");
        assert_eq!(annot["ap"], true);
    }
    let decompressed = qdf(dir.path(), &after);
    for forbidden in ["/JavaScript", "app.alert", "calc.exe", "/Launch", "/LZWDecode"] {
        assert!(!decompressed.contains(forbidden), "{forbidden} is still in the file");
    }
    let changes: Vec<&str> =
        report["changes"].as_array().unwrap().iter().map(|c| c["what"].as_str().unwrap()).collect();
    for want in [
        "JavaScript removed",
        "embedded files removed",
        "hidden annotations removed",
        "sRGB output intent added",
        "image interpolation",
    ] {
        assert!(changes.iter().any(|c| c.starts_with(want)), "{want}: {changes:?}");
    }

    // Converting the result again changes no font and keeps it valid.
    let (again, report) = convert(&output, json!({})).await;
    assert_eq!(report["fonts_embedded"], json!([]), "{report}");
    let again_path = dir.path().join("again.pdf");
    std::fs::write(&again_path, &again).unwrap();
    qpdf_clean(&again_path);
    assert_eq!(read(&again_path)["part"], "2");
}

/// The file with every stream decompressed, as text.
fn qdf(dir: &Path, pdf: &Path) -> String {
    let out = dir.join("qdf.pdf");
    let status = Command::new("qpdf").args(["--qdf", "--object-streams=disable"]).arg(pdf).arg(&out).status().unwrap();
    // 3: written, with warnings.
    assert!(matches!(status.code(), Some(0 | 3)), "{status}");
    String::from_utf8_lossy(&std::fs::read(out).unwrap()).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn pdfa_3b_keeps_attachments_associated_with_the_document() {
    let (dir, input) = written();
    let (output, report) = convert(&input, json!({ "level": "3b" })).await;
    assert_eq!(report["conformance"], "PDF/A-3b");
    let path = dir.path().join("out.pdf");
    std::fs::write(&path, &output).unwrap();
    qpdf_clean(&path);
    let seen = read(&path);
    assert_eq!(seen["part"], "3");
    assert_eq!(seen["files"]["data.csv"]["data"], "a,b\n1,2\n", "{seen}");
    assert_eq!(seen["files"]["data.csv"]["relationship"], "/Unspecified", "{seen}");
    assert_eq!(seen["af"], json!(["data.csv"]), "{seen}");
}

const REFUSED: &str = r#"
import sys
from reportlab.pdfgen import canvas
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
out = sys.argv[1]
c = canvas.Canvas(out + "/cmyk.pdf")
c.setFont("Helvetica", 12)
c.setFillColorCMYK(0, 0.5, 1, 0)
c.drawString(72, 700, "Printed in CMYK")
c.save()
# A font reportlab embeds, then unembedded by hand: no stand-in exists for it.
import pikepdf
pdfmetrics.registerFont(TTFont("DejaVu", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"))
c = canvas.Canvas(out + "/dejavu.pdf")
c.setFont("DejaVu", 12)
c.drawString(72, 700, "DejaVu text")
c.save()
pdf = pikepdf.open(out + "/dejavu.pdf", allow_overwriting_input=True)
for page in pdf.pages:
    for name, font in page.Resources.Font.items():
        if "/DescendantFonts" in font:
            del font.DescendantFonts[0].FontDescriptor["/FontFile2"]
        elif "/FontDescriptor" in font:
            del font.FontDescriptor["/FontFile2"]
pdf.save(out + "/dejavu.pdf")
print("ok")
"#;

#[tokio::test(flavor = "multi_thread")]
async fn fonts_without_a_stand_in_are_refused_by_name() {
    let (dir, _) = common::written_by(REFUSED, "cmyk.pdf");
    let ctx = Context::new();
    let dejavu = std::fs::read(dir.path().join("dejavu.pdf")).unwrap();
    let error = call_files(&ctx, ROUTE, file_body(&dejavu, "dejavu.pdf", &json!({}))).await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("font_not_embedded", Some("/file")), "{error:?}");
    assert!(error.message.contains("DejaVuSans") && error.message.contains("(page 1)"), "{}", error.message);
    let error = call_files(&ctx, ROUTE, file_body(&dejavu, "dejavu.pdf", &json!({ "level": "1b" }))).await.unwrap_err();
    assert_eq!(error.field.as_deref(), Some("/level"), "{error:?}");
}

/// What pikepdf finds of the CMYK description.
const CMYK_READER: &str = r#"
import sys, json, pikepdf
pdf = pikepdf.open(sys.argv[1])
page = pdf.pages[0]
default = page.Resources.ColorSpace.DefaultCMYK
print(json.dumps({"kind": str(default[0]), "n": int(default[1].N), "intent": str(pdf.Root.OutputIntents[0].S)}))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn device_cmyk_is_described_and_keeps_its_look() {
    let (dir, cmyk) = common::written_by(REFUSED, "cmyk.pdf");
    let (output, report) = convert(&cmyk, json!({})).await;
    let changes = report["changes"].to_string();
    assert!(changes.contains("device CMYK described"), "{report}");
    let before = dir.path().join("cmyk.pdf");
    let after = dir.path().join("out.pdf");
    std::fs::write(&after, &output).unwrap();
    qpdf_clean(&after);
    let seen: Value = serde_json::from_str(run_python(CMYK_READER, &[&after]).trim()).unwrap();
    assert_eq!(seen, json!({ "kind": "/ICCBased", "n": 4, "intent": "/GTS_PDFA1" }));
    // poppler paints the profile through LittleCMS: the orange text is still orange.
    let difference = rendering_difference(dir.path(), &before, &after, 1);
    assert!(difference < 1.0, "the page differs by {difference:.2} grey levels on average");
    assert_eq!(text(&after), "Printed in CMYK");
}

const FORM: &str = r#"
import sys
from reportlab.pdfgen import canvas
import pikepdf
out = sys.argv[1]
c = canvas.Canvas(out + "/form.pdf")
c.acroForm.textfield(name="customer", value="Ada Lovelace", x=72, y=700, width=200, height=24, fontSize=12)
c.showPage()
c.save()
# A form that leaves drawing its values to the reader.
pdf = pikepdf.open(out + "/form.pdf", allow_overwriting_input=True)
for annot in pdf.pages[0].Annots:
    del annot["/AP"]
pdf.Root.AcroForm.NeedAppearances = True
pdf.save(out + "/form.pdf")
print("ok")
"#;

const WIDGET_READER: &str = r#"
import sys, pikepdf
pdf = pikepdf.open(sys.argv[1])
widget = pdf.pages[0].Annots[0]
print(widget.AP.N.read_bytes().decode("latin-1"))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn form_values_left_to_the_reader_are_drawn_with_an_embedded_font() {
    let (dir, form) = common::written_by(FORM, "form.pdf");
    let (output, report) = convert(&form, json!({})).await;
    let changes = report["changes"].to_string();
    assert!(changes.contains("text field appearances drawn from their values"), "{report}");
    let path = dir.path().join("out.pdf");
    std::fs::write(&path, &output).unwrap();
    qpdf_clean(&path);
    let look = run_python(WIDGET_READER, &[&path]);
    assert!(look.contains("(Ada Lovelace) Tj"), "{look}");
    let fonts = fonts(&path);
    assert!(!fonts.is_empty() && fonts.iter().all(|(_, embedded)| *embedded), "{fonts:?}");
}

/// Every corpus PDF is converted or refused for a reason of its own; each conversion
/// passes qpdf's check with every font embedded and names its part in the XMP.
#[tokio::test(flavor = "multi_thread")]
async fn the_corpus_converts_or_is_refused_with_a_reason() {
    let root = corpus().join("pdf");
    let mut files: Vec<_> = walk(&root);
    files.sort();
    let dir = tempfile::tempdir().unwrap();
    let ctx = Context::new();
    let (mut converted, mut refused) = (0, Vec::new());
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        match call_files(&ctx, ROUTE, file_body(&bytes, "in.pdf", &json!({}))).await {
            Ok(set) => {
                let path = dir.path().join("out.pdf");
                std::fs::write(&path, &set.files[0].bytes).unwrap();
                let check = Command::new("qpdf").arg("--check").arg(&path).output().unwrap();
                assert_eq!(check.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&check.stdout));
                let unembedded: Vec<_> = fonts(&path).into_iter().filter(|(_, e)| !e).collect();
                assert!(unembedded.is_empty(), "{name}: {unembedded:?}");
                // The XMP stream is stored uncompressed, as PDF/A wants.
                let raw = String::from_utf8_lossy(&set.files[0].bytes).into_owned();
                assert!(raw.contains("<pdfaid:part>2</pdfaid:part>"), "{name}");
                converted += 1;
            }
            Err(error) => {
                let code = error.code.to_string();
                assert!(
                    [
                        "font_not_embedded",
                        "cmyk_colour",
                        "password_required",
                        "damaged_pdf",
                        "not_a_pdf",
                        "file_too_large",
                        "too_many_pages"
                    ]
                    .contains(&code.as_str()),
                    "{name}: {error:?}"
                );
                refused.push(format!("{name}: {code}"));
            }
        }
    }
    eprintln!("to-pdfa over the corpus: {converted} converted, {} refused:\n{}", refused.len(), refused.join("\n"));
    assert!(converted >= 60, "only {converted} converted; refused: {refused:#?}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.extension().is_some_and(|e| e == "pdf") {
            out.push(path);
        }
    }
    out
}
