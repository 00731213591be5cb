//! `/v1/pdf/sanitize` on a document pikepdf writes here with a script, a risky action, a
//! file, a link, metadata in every place a reader looks for them: after sanitizing, none of
//! their bytes is anywhere in the file (its streams decompressed by qpdf), poppler lists no
//! script and no attachment, the page text and the link between pages are still there.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::route::{assert_refused, call_files};
use paperchain_engine::Context;
use paperchain_testkit::b64;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/sanitize";

/// Writes `risky.pdf`: three pages of text; the catalog's open action runs a script, a
/// named document script, an XFA form with a script, a text field calculated by a script,
/// a page-open script on page 2; page 1 has a web link, a link launching a program, a link
/// to page 3 and a link whose internal jump chains to a script (/Next); page 2 has a file
/// attachment annotation; the attachments list holds `secret.txt`; document information,
/// XMP and PieceInfo; a bookmark opening a web page and one submitting the form.
const WRITER: &str = r#"
import sys
import pikepdf
from pikepdf import Array, Dictionary, Name, String
out = sys.argv[1]
pdf = pikepdf.new()
font = pdf.make_indirect(Dictionary(Type=Name.Font, Subtype=Name.Type1, BaseFont=Name.Helvetica))
for n in range(3):
    page = pdf.add_blank_page(page_size=(612, 792))
    page.obj.Resources = Dictionary(Font=Dictionary(F1=font))
    page.obj.Contents = pdf.make_stream(f"BT /F1 18 Tf 72 700 Td (Keep this text on page {n + 1}) Tj ET".encode())
js = lambda code: pdf.make_indirect(Dictionary(S=Name.JavaScript, JS=String(code)))
pdf.Root.OpenAction = js("app.alert('OPEN-SCRIPT')")
p1, p2, p3 = (pdf.pages[i].obj for i in range(3))
p2.AA = Dictionary(O=js("app.alert('PAGE-OPEN-SCRIPT')"))
link = lambda rect, action: pdf.make_indirect(Dictionary(Type=Name.Annot, Subtype=Name.Link, Rect=Array(rect), Border=Array([0, 0, 0]), A=action))
goto = Dictionary(S=Name.GoTo, D=Array([p3, Name.Fit]))
chained = Dictionary(S=Name.GoTo, D=Array([p3, Name.Fit]), Next=js("app.alert('CHAINED-SCRIPT')"))
p1.Annots = Array([
    link([72, 600, 300, 620], Dictionary(S=Name.URI, URI=String("https://example.com/WEB-LINK"))),
    link([72, 560, 300, 580], Dictionary(S=Name.Launch, F=String("LAUNCHED-PROGRAM.exe"))),
    link([72, 520, 300, 540], goto),
    link([72, 480, 300, 500], chained),
])
spec = pikepdf.AttachedFileSpec(pdf, b"ATTACHED-SECRET-DATA", filename="secret.txt")
pdf.attachments["secret.txt"] = spec
annotated = pikepdf.AttachedFileSpec(pdf, b"ANNOTATION-SECRET-DATA", filename="note.txt")
p2.Annots = Array([pdf.make_indirect(Dictionary(Type=Name.Annot, Subtype=Name.FileAttachment, Rect=Array([72, 400, 90, 420]), FS=annotated.obj))])
pdf.Root.Names.JavaScript = Dictionary(Names=Array([String("greeting"), js("app.alert('NAMED-SCRIPT')")]))
field = pdf.make_indirect(Dictionary(FT=Name.Tx, T=String("Total"), Type=Name.Annot, Subtype=Name.Widget, Rect=Array([72, 300, 200, 320]), P=p3, AA=Dictionary(C=js("event.value = 'CALC-SCRIPT'"))))
p3.Annots = Array([field])
pdf.Root.AcroForm = Dictionary(Fields=Array([field]), CO=Array([field]), XFA=pdf.make_stream(b"<xdp><script>XFA-SCRIPT</script></xdp>"))
with pdf.open_metadata(update_docinfo=False) as meta:
    meta["dc:creator"] = ["XMP-CREATOR"]
pdf.docinfo["/Author"] = "SECRET-AUTHOR"
pdf.docinfo["/Title"] = "SECRET-TITLE"
pdf.Root.PieceInfo = Dictionary(App=Dictionary(Private=String("PRIVATE-APP-DATA")))
outlines = pdf.make_indirect(Dictionary(Type=Name.Outlines))
web = pdf.make_indirect(Dictionary(Title=String("Web"), Parent=outlines, A=Dictionary(S=Name.URI, URI=String("https://example.com/BOOKMARK-LINK"))))
submit = pdf.make_indirect(Dictionary(Title=String("Send"), Parent=outlines, Prev=web, A=Dictionary(S=Name.SubmitForm, F=String("https://example.com/SUBMIT-TARGET"))))
web.Next = submit
outlines.First, outlines.Last, outlines.Count = web, submit, 2
pdf.Root.Outlines = outlines
pdf.save(out + "/risky.pdf")
print("ok")
"#;

/// Markers of what goes by default, and of what stays.
const GONE_BY_DEFAULT: &[&str] = &[
    "OPEN-SCRIPT",
    "PAGE-OPEN-SCRIPT",
    "CHAINED-SCRIPT",
    "NAMED-SCRIPT",
    "CALC-SCRIPT",
    "XFA-SCRIPT",
    "LAUNCHED-PROGRAM",
    "SUBMIT-TARGET",
    "ATTACHED-SECRET-DATA",
    "ANNOTATION-SECRET-DATA",
    "secret.txt",
    "SECRET-AUTHOR",
    "SECRET-TITLE",
    "XMP-CREATOR",
    "PRIVATE-APP-DATA",
    "/JavaScript",
    "/EmbeddedFiles",
    "/XFA",
];
const LINKS: &[&str] = &["WEB-LINK", "BOOKMARK-LINK"];

fn written() -> (tempfile::TempDir, Vec<u8>) {
    common::written_by(WRITER, "risky.pdf")
}

async fn sanitize(pdf: &[u8], options: Value) -> (Vec<u8>, Value) {
    let body = common::route::file_body(pdf, "risky.pdf", &options);
    let set = call_files(&Context::new(), ROUTE, body).await.expect("sanitize succeeds");
    assert_eq!(set.files[0].filename, "risky-sanitized.pdf");
    (set.files[0].bytes.clone(), set.report.clone().expect("a report"))
}

/// The file with every stream decompressed and no object streams (qpdf's QDF form): what
/// a search of the file's bytes must not find.
fn qdf(dir: &Path, pdf: &[u8]) -> String {
    let input = dir.join("check-in.pdf");
    let output = dir.join("check-out.pdf");
    std::fs::write(&input, pdf).unwrap();
    let status = Command::new("qpdf")
        .args(["--qdf", "--object-streams=disable", "--decode-level=all"])
        .arg(&input)
        .arg(&output)
        .status()
        .expect("qpdf is installed");
    assert_eq!(status.code(), Some(0), "qpdf reads the output without warnings");
    String::from_utf8_lossy(&std::fs::read(&output).unwrap()).into_owned()
}

/// What `program ARGS file.pdf AFTER` prints for `pdf`.
fn tool(dir: &Path, program: &str, args: &[&str], pdf: &[u8], after: &[&str]) -> String {
    let path = dir.join("tool-in.pdf");
    std::fs::write(&path, pdf).unwrap();
    let out = Command::new(program).args(args).arg(&path).args(after).output().unwrap();
    assert!(out.status.success(), "{program}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn scripts_risky_actions_files_and_metadata_are_gone_from_the_file_and_links_stay() {
    let (dir, pdf) = written();
    // The markers are in the input: the checks below can fail.
    let input = qdf(dir.path(), &pdf);
    for marker in GONE_BY_DEFAULT.iter().chain(LINKS) {
        assert!(input.contains(marker), "the input lacks {marker}");
    }
    assert!(tool(dir.path(), "pdfinfo", &["-js"], &pdf, &[]).contains("OPEN-SCRIPT"));

    let (out, report) = sanitize(&pdf, json!({})).await;
    let text = qdf(dir.path(), &out);
    for marker in GONE_BY_DEFAULT {
        assert!(!text.contains(marker), "{marker} is still in the file");
    }
    for marker in LINKS {
        assert!(text.contains(marker), "{marker} went although links were kept");
    }
    for key in ["/OpenAction", "/AA", "/Launch", "/SubmitForm", "/Metadata", "/PieceInfo", "/Info", "/CO"] {
        assert!(
            !text.contains(&format!("{key} ")) && !text.contains(&format!("{key}\n")),
            "{key} is still in the file"
        );
    }
    assert!(!tool(dir.path(), "pdfinfo", &["-js"], &out, &[]).contains("app."), "pdfinfo still finds a script");
    assert!(tool(dir.path(), "pdfdetach", &["-list"], &out, &[]).starts_with("0 embedded files"));
    let pages = tool(dir.path(), "pdftotext", &["-layout"], &out, &["-"]);
    for n in 1..=3 {
        assert!(pages.contains(&format!("Keep this text on page {n}")), "page {n}'s text is gone");
    }
    // The link to page 3 stays; the launch link goes with its action; the chained jump
    // stays without its script.
    assert!(text.contains("/GoTo"));
    assert_eq!(report["javascript"], 6, "{report}");
    assert_eq!(report["actions"], 2, "{report}");
    // The attachments list, the file annotation, and the document's associated files
    // (pikepdf lists an attachment there too).
    assert_eq!(report["embedded_files"], 3, "{report}");
    assert_eq!(report["links"], 0);
    assert!(report["metadata"].as_u64().unwrap() >= 3, "{report}");
    assert!(report["objects_dropped"].as_u64().unwrap() >= 8, "{report}");
    let listed: Vec<&str> = report["removed"].as_array().unwrap().iter().map(|r| r["what"].as_str().unwrap()).collect();
    assert!(listed.iter().any(|w| w.contains("OPEN-SCRIPT")), "{listed:?}");
    assert!(listed.iter().any(|w| w.contains("Launch: LAUNCHED-PROGRAM.exe")), "{listed:?}");
    let calc =
        report["removed"].as_array().unwrap().iter().find(|r| r["what"].as_str().unwrap().contains("CALC-SCRIPT"));
    assert_eq!(calc.unwrap()["place"], "form field Total (page 3)");
}

#[tokio::test]
async fn each_part_is_optional() {
    let (dir, pdf) = written();
    // Links only: web links go, scripts and files stay.
    let (out, report) = sanitize(
        &pdf,
        json!({ "links": true, "javascript": false, "actions": false, "embedded_files": false, "metadata": false }),
    )
    .await;
    let text = qdf(dir.path(), &out);
    for marker in LINKS {
        assert!(!text.contains(marker), "{marker} is still in the file");
    }
    for marker in ["OPEN-SCRIPT", "ATTACHED-SECRET-DATA", "SECRET-AUTHOR", "LAUNCHED-PROGRAM"] {
        assert!(text.contains(marker), "{marker} went although its part was off");
    }
    assert_eq!((report["links"].as_u64(), report["javascript"].as_u64()), (Some(2), Some(0)));
    assert!(text.contains("/GoTo"), "the link between pages went");

    // As a pipeline step, before another.
    let body = json!({
        "file": { "data": b64(&pdf), "filename": "risky.pdf" },
        "steps": [{ "op": "sanitize", "metadata": false }, { "op": "rotate", "degrees": 90 }],
    });
    let set = call_files(&Context::new(), "/v1/pdf/pipeline", body).await.expect("the pipeline runs");
    let text = qdf(dir.path(), &set.files[0].bytes);
    assert!(!text.contains("OPEN-SCRIPT") && text.contains("SECRET-AUTHOR") && text.contains("/Rotate 90"));
}

#[tokio::test]
async fn bad_inputs_name_their_field() {
    let (_dir, pdf) = written();
    let file = json!({ "data": b64(&pdf), "filename": "risky.pdf" });
    let none = json!({ "file": file, "javascript": false, "actions": false, "embedded_files": false, "links": false, "metadata": false });
    assert_refused(
        &Context::new(),
        ROUTE,
        &[
            (none, "/javascript"),
            (json!({ "file": file, "links": "yes" }), "/links"),
            (json!({ "file": file, "scripts": true }), "/scripts"),
            (json!({ "file": { "data": b64(b"not a pdf") } }), "/file"),
        ],
    )
    .await;
}
