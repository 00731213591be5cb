//! `/v1/docs/to-pdf`: every Office file of the corpus converted by the warm, boxed pool and
//! compared with what LibreOffice's own `soffice --convert-to pdf` makes of it; macros that
//! do not run, linked images that are not fetched; a worker killed mid-conversion, a
//! conversion past its timeout, a full queue; and folders left empty.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::route::{assert_refused, call_files};
use paperchain_engine::soffice::{self, OfficePool, PoolConfig};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::b64;
use serde_json::json;

const ROUTE: &str = "/v1/docs/to-pdf";

fn config(workers: usize) -> PoolConfig {
    PoolConfig {
        workers,
        queue: 8,
        wait: Duration::from_secs(120),
        timeout: Duration::from_secs(120),
        max_conversions: 500,
        idle: Duration::from_secs(600),
        start_patience: Duration::from_secs(90),
    }
}

/// A context whose routes use `pool`.
fn context_with(pool: &Arc<OfficePool>) -> Context {
    let ctx = Context::new();
    soffice::install(&ctx.state, Arc::clone(pool));
    ctx
}

fn pool(config: PoolConfig) -> Arc<OfficePool> {
    Arc::new(OfficePool::new(config).expect("a pool"))
}

/// The route's PDF of `bytes` and its report.
async fn to_pdf(ctx: &Context, bytes: &[u8], filename: &str) -> Result<(Vec<u8>, serde_json::Value), EngineError> {
    let set = call_files(ctx, ROUTE, json!({ "file": { "data": b64(bytes), "filename": filename } })).await?;
    let file = &set.files[0];
    assert_eq!(file.media_type, "application/pdf");
    Ok((file.bytes.clone(), set.report.clone().expect("a report")))
}

/// `pdftotext`'s text, whitespace runs made one space.
fn pdf_text(pdf: &Path) -> String {
    let out = Command::new("pdftotext").arg(pdf).arg("-").output().expect("pdftotext is installed");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ")
}

fn pdf_pages(pdf: &Path) -> u32 {
    let out = Command::new("pdfinfo").arg(pdf).output().expect("pdfinfo is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find_map(|l| l.strip_prefix("Pages:")).expect("a page count").trim().parse().unwrap()
}

/// LibreOffice's own conversion of `files` (one cold `soffice --convert-to pdf` with a
/// fresh profile), into `out` as `<n>.pdf` for the n-th file.
fn reference_pdfs(files: &[PathBuf], out: &Path) {
    let inputs = out.join("in");
    std::fs::create_dir_all(&inputs).unwrap();
    let mut names = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let name = inputs.join(format!("{n}.{}", file.extension().unwrap().to_str().unwrap()));
        std::fs::copy(file, &name).unwrap();
        names.push(name);
    }
    let profile = format!("-env:UserInstallation=file://{}", out.join("profile").display());
    let status = Command::new("timeout")
        .args(["600", "soffice", &profile, "--headless", "--norestore", "--convert-to", "pdf", "--outdir"])
        .arg(out)
        .args(&names)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("soffice is installed (cargo xtask setup)");
    assert!(status.success(), "soffice --convert-to failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_office_file_of_the_corpus_converts_as_libreoffice_itself_converts_it() {
    let files = paperchain_testkit::corpus::office_files(&paperchain_testkit::corpus::corpus());
    assert!(files.len() >= 40, "the corpus has its Office files: {}", files.len());
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference");
    reference_pdfs(&files, &reference);
    let pool = pool(config(2));
    let ctx = context_with(&pool);
    let mut differ = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let name = file.file_name().unwrap().to_str().unwrap();
        let (pdf, report) =
            to_pdf(&ctx, &std::fs::read(file).unwrap(), name).await.unwrap_or_else(|e| panic!("{name}: {e}"));
        let ours = dir.path().join(format!("{n}.pdf"));
        std::fs::write(&ours, &pdf).unwrap();
        let theirs = reference.join(format!("{n}.pdf"));
        let (pages, text) = (pdf_pages(&ours), pdf_text(&ours));
        assert_eq!(report["pages"], json!(pages), "{name}: the report counts the PDF's pages");
        assert_eq!(report["format"], json!(file.extension().unwrap().to_str().unwrap()), "{name}");
        if pages != pdf_pages(&theirs) || text != pdf_text(&theirs) {
            differ.push(format!(
                "{name}: {pages} pages vs {}; text equal: {}",
                pdf_pages(&theirs),
                text == pdf_text(&theirs)
            ));
        }
        assert!(pages >= 1, "{name} has pages");
    }
    assert!(differ.is_empty(), "converted otherwise than by soffice --convert-to: {differ:#?}");
    // Every conversion's folder is gone; the workers' own folders stay while they run.
    let leftovers = leftover_job_folders(pool.folder());
    assert!(leftovers.is_empty(), "job folders left: {leftovers:?}");
}

/// Job folders under the pool's workers (there should be none between calls).
fn leftover_job_folders(pool_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for worker in std::fs::read_dir(pool_dir).unwrap().flatten() {
        if let Ok(jobs) = std::fs::read_dir(worker.path().join("jobs")) {
            found.extend(jobs.flatten().map(|j| j.path()));
        }
    }
    found
}

/// An OOXML Word package of `document` (the body's XML) with relationships `rels`.
fn docx(body: &str, rels: &str) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    let parts = [
        (
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_string(),
        ),
        (
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#.to_string(),
        ),
        (
            "word/_rels/document.xml.rels",
            format!(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#),
        ),
        (
            "word/document.xml",
            format!(r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><w:body>{body}</w:body></w:document>"#),
        ),
    ];
    for (name, text) in parts {
        zip.start_file(name, options).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

fn paragraph(text: &str) -> String {
    format!("<w:p><w:r><w:t>{text}</w:t></w:r></w:p>")
}

/// A Word file of `count` paragraphs: long enough to keep a worker busy for seconds.
fn long_docx(count: usize) -> Vec<u8> {
    let body: String = (0..count)
        .map(|i| paragraph(&format!("Paragraph {i}: the quick brown fox jumps over the lazy dog, again and again.")))
        .collect();
    docx(&body, "")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linked_image_is_not_fetched_though_libreoffice_alone_fetches_it() {
    let (url, hits) = paperchain_testkit::loopback::counting_server("127.0.0.1", |_| (404, vec![], Vec::new()));
    let body = format!(
        r#"{}<w:p><w:r><w:drawing><wp:inline><wp:extent cx="914400" cy="914400"/><wp:docPr id="1" name="Picture 1"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="1" name="linked.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:link="rIdImg"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="914400" cy="914400"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"#,
        paragraph("A linked image below.")
    );
    let rels = format!(
        r#"<Relationship Id="rIdImg" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="{url}/linked.png" TargetMode="External"/>"#
    );
    let file = docx(&body, &rels);
    let pool = pool(config(1));
    let (pdf, _) = to_pdf(&context_with(&pool), &file, "linked.docx").await.unwrap();
    assert!(pdf.starts_with(b"%PDF"));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the boxed conversion reached the loopback server");
    // LibreOffice on its own, outside the box, does fetch it: the document is a real test.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("linked.docx");
    std::fs::write(&path, &file).unwrap();
    reference_pdfs(&[path], dir.path());
    assert!(hits.load(Ordering::SeqCst) > 0, "soffice alone fetched nothing: the test document links nothing");
}

/// An OpenDocument text whose Basic macro, bound to the document's load event, appends
/// "MACRO RAN" to the text and writes `marker`.
fn macro_odt(marker: &Path) -> Vec<u8> {
    let content = r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:script="urn:oasis:names:tc:opendocument:xmlns:script:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" xmlns:dom="http://www.w3.org/2001/xml-events" xmlns:ooo="http://openoffice.org/2004/office" office:version="1.2"><office:scripts><office:event-listeners><script:event-listener script:language="ooo:script" script:event-name="dom:load" xlink:href="vnd.sun.star.script:Standard.Module1.OnLoad?language=Basic&amp;location=document" xlink:type="simple"/></office:event-listeners></office:scripts><office:body><office:text><text:p>Document text.</text:p></office:text></office:body></office:document-content>"#;
    let module = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE script:module PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "module.dtd"><script:module xmlns:script="http://openoffice.org/2000/script" script:name="Module1" script:language="StarBasic">Sub OnLoad
  ThisComponent.Text.insertString(ThisComponent.Text.getEnd(), &quot; MACRO RAN&quot;, False)
  Open &quot;{}&quot; For Output As #1
  Print #1, &quot;ran&quot;
  Close #1
End Sub
</script:module>"#,
        marker.display()
    );
    let parts: [(&str, String); 5] = [
        ("mimetype", "application/vnd.oasis.opendocument.text".into()),
        ("META-INF/manifest.xml", r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/><manifest:file-entry manifest:full-path="Basic/script-lc.xml" manifest:media-type="text/xml"/><manifest:file-entry manifest:full-path="Basic/Standard/script-lb.xml" manifest:media-type="text/xml"/><manifest:file-entry manifest:full-path="Basic/Standard/Module1.xml" manifest:media-type="text/xml"/></manifest:manifest>"#.into()),
        ("content.xml", content.into()),
        ("Basic/script-lc.xml", r#"<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE library:libraries PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "libraries.dtd"><library:libraries xmlns:library="http://openoffice.org/2000/library" xmlns:xlink="http://www.w3.org/1999/xlink"><library:library library:name="Standard" library:link="false"/></library:libraries>"#.into()),
        ("Basic/Standard/script-lb.xml", r#"<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE library:library PUBLIC "-//OpenOffice.org//DTD OfficeDocument 1.0//EN" "library.dtd"><library:library xmlns:library="http://openoffice.org/2000/library" library:name="Standard" library:readonly="false" library:passwordprotected="false"><library:element library:name="Module1"/></library:library>"#.into()),
    ];
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, text) in parts.iter().chain(std::iter::once(&("Basic/Standard/Module1.xml", module))) {
        zip.start_file(*name, stored).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_macro_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("macro-ran");
    let file = macro_odt(&marker);
    let pool = pool(config(1));
    let (pdf, _) = to_pdf(&context_with(&pool), &file, "macro.odt").await.unwrap();
    let path = dir.path().join("out.pdf");
    std::fs::write(&path, pdf).unwrap();
    assert_eq!(pdf_text(&path), "Document text.", "the macro did not change the document");
    assert!(!marker.exists(), "the macro wrote its file");

    // The control: LibreOffice opening the same file with macros allowed runs the macro.
    let doc = dir.path().join("macro.odt");
    std::fs::write(&doc, &file).unwrap();
    let profile = dir.path().join("permissive");
    std::fs::create_dir_all(profile.join("user")).unwrap();
    std::fs::write(
        profile.join("user/registrymodifications.xcu"),
        r#"<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>0</value></prop></item></oor:items>"#,
    )
    .unwrap();
    let mut office = Command::new("soffice")
        .arg(format!("-env:UserInstallation=file://{}", profile.display()))
        .args(["--headless", "--norestore"])
        .arg(&doc)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(90);
    while !marker.exists() && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(100));
    }
    kill_group(office.id());
    let _ = office.wait();
    assert!(marker.exists(), "with macros allowed, opening the file runs its macro: the file is a real test");
}

use std::os::unix::process::CommandExt as _;

fn kill_group(leader: u32) {
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{leader}")]).status();
}

/// Process ids whose ancestry leads to `root` (its whole tree, as the host sees it).
fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = BTreeMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // "pid (name) state ppid ...": the name may hold spaces, the last ')' ends it.
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        let ppid: u32 = after.split(' ').nth(1).unwrap().parse().unwrap();
        parent_of.insert(pid, ppid);
    }
    parent_of
        .keys()
        .copied()
        .filter(|&pid| {
            let mut at = pid;
            while let Some(&up) = parent_of.get(&at) {
                if up == root {
                    return true;
                }
                if up <= 1 {
                    return false;
                }
                at = up;
            }
            false
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat[stat.rfind(')').unwrap() + 2..].chars().next();
        state != Some('Z')
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_conversion_is_a_clean_503_and_the_next_call_succeeds() {
    let pool = pool(config(1));
    let ctx = context_with(&pool);
    let small = docx(&paragraph("Small."), "");
    to_pdf(&ctx, &small, "small.docx").await.unwrap();
    let pid = pool.stats().idle_pids[0];
    let long = long_docx(20_000);
    let call = tokio::spawn({
        let ctx = ctx.clone();
        async move { to_pdf(&ctx, &long, "long.docx").await }
    });
    // Killed once it converts.
    let give_up = Instant::now() + Duration::from_secs(30);
    while pool.stats().busy == 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    kill_group(pid);
    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(error.kind, ErrorKind::Unavailable { .. }), "{error:?}");
    assert_eq!(error.code, "engine_failed", "{error:?}");
    let (pdf, report) = to_pdf(&ctx, &small, "small.docx").await.unwrap();
    assert!(pdf.starts_with(b"%PDF") && report["pages"] == json!(1));
    assert_eq!(pool.stats().started, 2, "a new worker took the dead one's place");
    assert!(leftover_job_folders(pool.folder()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversion_past_its_timeout_is_504_and_kills_the_whole_box() {
    let pool = pool(PoolConfig { timeout: Duration::from_secs(1), ..config(1) });
    let ctx = context_with(&pool);
    to_pdf(&ctx, &docx(&paragraph("Warm."), ""), "warm.docx").await.unwrap();
    let pid = pool.stats().idle_pids[0];
    let tree = descendants(pid);
    assert!(tree.len() >= 2, "the box runs soffice: {tree:?}");
    let error = to_pdf(&ctx, &long_docx(20_000), "long.docx").await.unwrap_err();
    assert_eq!((error.kind, error.code.as_ref()), (ErrorKind::Timeout, "timeout"), "{error:?}");
    // Every process of the box is gone.
    let give_up = Instant::now() + Duration::from_secs(10);
    while tree.iter().any(|&p| alive(p)) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<u32> = tree.iter().copied().filter(|&p| alive(p)).collect();
    assert!(left.is_empty() && !alive(pid), "processes of the killed box still run: {left:?}");
    // The next call gets a new worker.
    to_pdf(&ctx, &docx(&paragraph("Again."), ""), "again.docx").await.unwrap();
    assert_eq!(pool.stats().started, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_503_busy_with_retry_after() {
    let pool = pool(PoolConfig { queue: 0, ..config(1) });
    let ctx = context_with(&pool);
    let long = long_docx(20_000);
    let first = tokio::spawn({
        let ctx = ctx.clone();
        async move { to_pdf(&ctx, &long, "long.docx").await }
    });
    let give_up = Instant::now() + Duration::from_secs(60);
    while pool.stats().busy == 0 && Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let error = to_pdf(&ctx, &docx(&paragraph("Second."), ""), "second.docx").await.unwrap_err();
    assert_eq!(error.code, "busy", "{error:?}");
    assert!(matches!(error.kind, ErrorKind::Unavailable { retry_after } if retry_after.as_secs() >= 1), "{error:?}");
    let (_, report) = first.await.unwrap().unwrap();
    assert!(report["pages"].as_u64().unwrap() > 100, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_are_replaced_after_their_conversions_and_the_pool_leaves_no_folder() {
    let pool = pool(PoolConfig { max_conversions: 2, ..config(1) });
    let ctx = context_with(&pool);
    let file = docx(&paragraph("Again and again."), "");
    let mut pids = Vec::new();
    for _ in 0..3 {
        to_pdf(&ctx, &file, "again.docx").await.unwrap();
        pids.extend(pool.stats().idle_pids);
    }
    assert_eq!(pool.stats().started, 2, "the first worker was replaced after 2 conversions");
    assert_eq!(pids.len(), 2, "no idle worker after its second conversion: {pids:?}");
    let folder = pool.folder().to_path_buf();
    assert!(folder.is_dir());
    drop(ctx);
    drop(pool);
    let give_up = Instant::now() + Duration::from_secs(10);
    while folder.exists() && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!folder.exists(), "the pool's folder is removed with it");
    assert!(!alive(pids[1]), "its worker is stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_libreoffice_cannot_read_are_refused_naming_the_field() {
    let pool = pool(config(1));
    let ctx = context_with(&pool);
    // A workbook package whose workbook part is not XML.
    let broken = {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, body) in [("[Content_Types].xml", &b"<Types/>"[..]), ("xl/workbook.xml", b"not XML at all \x00\x01")]
        {
            zip.start_file(name, zip::write::SimpleFileOptions::default()).unwrap();
            zip.write_all(body).unwrap();
        }
        zip.finish().unwrap().into_inner()
    };
    let error = to_pdf(&ctx, &broken, "book.xlsx").await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("conversion_failed", Some("/file")), "{error:?}");
    // The worker is kept: the file was at fault, not LibreOffice.
    assert_eq!(pool.stats().idle, 1);
    let pdf = paperchain_testkit::corpus::corpus_file("sample-files/pdflatex-4-pages.pdf");
    let error = to_pdf(&ctx, &pdf, "already.pdf").await.unwrap_err();
    assert_eq!(error.code, "not_an_office_file");
    let error = to_pdf(&ctx, b"just some text", "notes.txt").await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("unsupported_format", Some("/file")));
    let mut truncated = docx(&paragraph("Cut."), "");
    truncated.truncate(truncated.len() / 2);
    let error = to_pdf(&ctx, &truncated, "cut.docx").await.unwrap_err();
    assert_eq!(error.code, "damaged_office_file", "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_is_refused_naming_its_field() {
    let pool = pool(config(1));
    let ctx = context_with(&pool);
    let word = b64(&docx(&paragraph("Fine."), ""));
    let cases = [
        (json!({}), "/file"),
        (json!({ "file": {} }), "/file"),
        (json!({ "file": { "data": "" } }), "/file"),
        (json!({ "file": { "data": "not base64!" } }), "/file"),
        (json!({ "file": { "data": word, "url": "https://example.com/a.docx" } }), "/file"),
        (json!({ "file": { "data": word }, "output": "zip" }), "/output"),
        (json!({ "file": { "data": word }, "pages": "1" }), "/pages"),
        (json!({ "file": { "url": "http://127.0.0.1:9/a.docx" } }), "/file/url"),
    ];
    assert_refused(&ctx, ROUTE, &cases).await;
    assert_eq!(pool.stats().started, 0, "no worker was started for input refused before conversion");
}
