//! `/v1/pdf/html-to-pdf`: a page with CSS, a web font from a data URL and an image prints
//! as Chromium's own `--print-to-pdf` prints it; a subresource or redirect to an address
//! that is not allowed gets nothing from it (the server records no hit); `html` loads
//! nothing unless allowed; a script that never stops is cut off; every call has a fresh
//! browser context.

use crate::common;

use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::route::{assert_refused, call_files};
use paperchain_engine::chromium::BrowserHost;
use paperchain_engine::fetch::AddressPolicy;
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::b64;
use paperchain_testkit::loopback::counting_server;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/html-to-pdf";

/// A context with a browser whose pages may take `page_timeout`, whose fetcher reaches
/// 127.0.0.1 (the tests' "public" servers) and nothing else of loopback.
fn context(page_timeout: Duration) -> Context {
    let ctx = Context::with_policy(AddressPolicy::allowing([IpAddr::V4(Ipv4Addr::LOCALHOST)]));
    ctx.state.insert(BrowserHost::with_page_timeout(page_timeout));
    ctx
}

async fn print(ctx: &Context, body: Value) -> Result<(Vec<u8>, Value), EngineError> {
    let set = call_files(ctx, ROUTE, body).await?;
    let file = &set.files[0];
    assert_eq!(file.media_type, "application/pdf");
    Ok((file.bytes.clone(), set.report.clone().unwrap()))
}

/// A PNG of one colour.
fn png(width: u32, height: u32, rgb: [u8; 3]) -> Vec<u8> {
    let image = image::RgbImage::from_pixel(width, height, image::Rgb(rgb));
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// The test page: a coloured band (CSS), a heading in a web font given as a data URL, and
/// a red image given as a data URL.
fn styled_page() -> String {
    let font = std::fs::read("/usr/share/fonts/truetype/crosextra/Caladea-Regular.ttf")
        .expect("fonts-crosextra-caladea is installed (cargo xtask setup)");
    format!(
        r#"<!doctype html><html><head><style>
@font-face {{ font-family: "WebFace"; src: url(data:font/ttf;base64,{font}) format("truetype"); }}
html {{ -webkit-print-color-adjust: exact; print-color-adjust: exact; }}
body {{ margin: 0; font-family: serif; }}
.band {{ background: rgb(20, 90, 200); height: 120px; }}
h1 {{ font-family: "WebFace", serif; font-size: 40px; }}
img {{ width: 200px; height: 100px; display: block; }}
</style></head><body><div class="band"></div><h1>Quarterly report</h1>
<img src="data:image/png;base64,{image}" alt="red"><p>Plain text in the default serif.</p></body></html>"#,
        font = b64(&font),
        image = b64(&png(20, 10, [230, 20, 20])),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Page 1 of `pdf` as greyscale pixels at `dpi`: (width, height, bytes).
fn render(pdf: &Path, dpi: u32) -> (usize, usize, Vec<u8>) {
    let prefix = pdf.with_extension("");
    let status = Command::new("pdftoppm")
        .args(["-r", &dpi.to_string(), "-f", "1", "-l", "1", "-gray", "-singlefile"])
        .arg(pdf)
        .arg(&prefix)
        .status()
        .unwrap();
    assert!(status.success());
    let pgm = std::fs::read(prefix.with_extension("pgm")).unwrap();
    // "P5\n<w> <h>\n255\n" then the pixels.
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        let start = at;
        while !pgm[at].is_ascii_whitespace() {
            at += 1;
        }
        fields.push(String::from_utf8_lossy(&pgm[start..at]).to_string());
        at += 1;
    }
    let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    (w, h, pgm[at..].to_vec())
}

fn fonts(pdf: &Path) -> String {
    String::from_utf8_lossy(&Command::new("pdffonts").arg(pdf).output().unwrap().stdout).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_styled_page_prints_as_chromium_itself_prints_it() {
    let ctx = context(Duration::from_secs(30));
    let html = styled_page();
    // Chromium's own print: US Letter, its default margins of 0.4 in.
    let body = json!({ "html": html, "page_size": "Letter", "margins_mm": 10.16 });
    let (pdf, report) = print(&ctx, body).await.unwrap();
    assert_eq!(report["pages"], 1);
    let dir = tempfile::tempdir().unwrap();
    let ours = write(dir.path(), "ours.pdf", &pdf);
    // The web font is embedded as drawn glyphs (Type 3); without its @font-face rule there is none.
    assert!(fonts(&ours).contains("Type 3"), "the web font from the data URL is used: {}", fonts(&ours));
    let plain = html.replace("font-family: \"WebFace\", serif;", "");
    let (control, _) = print(&ctx, json!({ "html": plain, "page_size": "Letter", "margins_mm": 10.16 })).await.unwrap();
    let control = write(dir.path(), "control.pdf", &control);
    assert!(!fonts(&control).contains("Type 3"), "without the web font: {}", fonts(&control));

    let page = write(dir.path(), "page.html", html.as_bytes());
    let theirs = dir.path().join("theirs.pdf");
    let status = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer"])
        .arg(format!("--user-data-dir={}", dir.path().join("profile").display()))
        .arg(format!("--print-to-pdf={}", theirs.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("chromium is installed (cargo xtask setup)");
    assert!(status.success() && theirs.is_file());
    let (w, h, a) = render(&ours, 50);
    let (w2, h2, b) = render(&theirs, 50);
    assert_eq!((w, h), (w2, h2), "same paper");
    let differing = a.iter().zip(&b).filter(|(x, y)| x.abs_diff(**y) > 48).count();
    assert!(differing * 1000 < a.len(), "{differing} of {} pixels differ from Chromium's own print", a.len());
    // And the page is what was asked: the blue band at the top, the red image below the heading.
    let at = |x: usize, y: usize| a[y * w + x];
    let margin = (0.4 * 50.0) as usize;
    assert!(at(w / 2, margin + 10) < 120, "the band is dark in grey");
    let dark_rows = (margin + 130..h / 2).filter(|&y| at(margin + 50, y) < 140).count();
    assert!(dark_rows > 20, "the red image is there ({dark_rows} rows)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_to_addresses_not_allowed_reach_nothing() {
    // 127.0.0.2 stands for a private address: the fetcher allows only 127.0.0.1.
    let (private, private_hits) =
        counting_server("127.0.0.2", |_| (200, vec![("content-type", "image/png".into())], png(4, 4, [0, 0, 0])));
    let private_for_redirect = private.clone();
    let redirect_to = Box::leak(format!("{private_for_redirect}/redirected.png").into_boxed_str());
    REDIRECT.set(redirect_to).unwrap();
    let (public, public_hits) = counting_server("127.0.0.1", |path| match path {
        "/page.html" => (200, vec![("content-type", "text/html".into())], PAGE.get().unwrap().as_bytes().to_vec()),
        "/ok.png" => (200, vec![("content-type", "image/png".into())], png(4, 4, [0, 255, 0])),
        "/jump.png" => (302, vec![("location", REDIRECT.get().unwrap().to_string())], Vec::new()),
        _ => (404, vec![], Vec::new()),
    });
    let page = format!(
        r#"<html><head><link rel="stylesheet" href="{private}/style.css"></head><body>
<img src="{public}/ok.png"><img src="{private}/direct.png"><img src="{public}/jump.png">
<script src="{private}/script.js"></script><p>Page</p></body></html>"#
    );
    PAGE.set(Box::leak(page.clone().into_boxed_str())).unwrap();
    let ctx = context(Duration::from_secs(30));

    // A URL page on an allowed address, its subresources on one that is not.
    let (_, report) = print(&ctx, json!({ "url": format!("{public}/page.html") })).await.unwrap();
    assert_eq!(private_hits.load(Ordering::SeqCst), 0, "the private server was reached");
    let refused: Vec<&str> =
        report["requests_refused"].as_array().unwrap().iter().map(|u| u.as_str().unwrap()).collect();
    for path in ["/style.css", "/direct.png", "/script.js", "/jump.png"] {
        assert!(refused.iter().any(|u| u.ends_with(path)), "{path} refused: {refused:?}");
    }
    assert!(report["requests_loaded"].as_u64().unwrap() >= 2, "the page and ok.png: {report}");
    let public_before = public_hits.load(Ordering::SeqCst);
    assert!(public_before >= 3, "the page, ok.png and the redirect were fetched from the allowed server");

    // HTML with the network allowed: the same rules.
    print(&ctx, json!({ "html": page, "allow_network": true })).await.unwrap();
    assert_eq!(private_hits.load(Ordering::SeqCst), 0);
    assert!(public_hits.load(Ordering::SeqCst) > public_before);

    // HTML without it: nothing at all, not even the allowed server.
    let public_now = public_hits.load(Ordering::SeqCst);
    let (_, report) = print(&ctx, json!({ "html": page })).await.unwrap();
    assert_eq!(public_hits.load(Ordering::SeqCst), public_now, "html without allow_network fetched something");
    assert_eq!(private_hits.load(Ordering::SeqCst), 0);
    assert_eq!(report["requests_loaded"], 1, "only the document itself: {report}");

    // The page itself at a refused address is refused before any browser work.
    let error = print(&ctx, json!({ "url": format!("{private}/page.html") })).await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("blocked_target", Some("/url")), "{error:?}");
    assert_eq!(private_hits.load(Ordering::SeqCst), 0);
}

static PAGE: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
static REDIRECT: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_never_stops_is_cut_off_and_the_next_call_works() {
    let ctx = context(Duration::from_secs(3));
    let started = std::time::Instant::now();
    let error = print(&ctx, json!({ "html": "<p>Spin</p><script>while (true) {}</script>" })).await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("page_timeout", Some("/html")), "{error:?}");
    assert!(matches!(error.kind, ErrorKind::InvalidInput));
    assert!(started.elapsed() < Duration::from_secs(25), "cut off near its 3 s: {:?}", started.elapsed());
    let (pdf, _) = print(&ctx, json!({ "html": "<p>Fine</p>" })).await.unwrap();
    assert!(pdf.starts_with(b"%PDF"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_killed_mid_page_is_a_clean_503_and_the_next_call_succeeds() {
    let ctx = context(Duration::from_secs(30));
    print(&ctx, json!({ "html": "<p>Warm</p>" })).await.unwrap();
    let host = ctx.state.get::<BrowserHost>().unwrap();
    let pid = host.pid().expect("a browser runs");
    let call = tokio::spawn({
        let ctx = ctx.clone();
        async move { print(&ctx, json!({ "html": "<p>Spin</p><script>while (true) {}</script>" })).await }
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(error.kind, ErrorKind::Unavailable { .. }), "{error:?}");
    assert_eq!(error.code, "engine_failed");
    let (pdf, _) = print(&ctx, json!({ "html": "<p>Again</p>" })).await.unwrap();
    assert!(pdf.starts_with(b"%PDF"));
    assert_eq!(host.started(), 2, "a new browser took the killed one's place");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_gets_a_fresh_browser_context() {
    let ctx = context(Duration::from_secs(30));
    let page = "<script>document.write('stored: ' + (localStorage.getItem('k') || 'nothing') + ' cookie: ' + \
                (document.cookie || 'none')); localStorage.setItem('k', 'kept'); document.cookie = 'c=1';</script>";
    let dir = tempfile::tempdir().unwrap();
    for n in 0..2 {
        let (pdf, _) = print(&ctx, json!({ "html": page })).await.unwrap();
        let path = write(dir.path(), &format!("{n}.pdf"), &pdf);
        let text = String::from_utf8_lossy(&Command::new("pdftotext").arg(&path).arg("-").output().unwrap().stdout)
            .to_string();
        assert!(text.contains("stored: nothing cookie: none"), "call {n}: {text}");
    }
    let host = ctx.state.get::<BrowserHost>().unwrap();
    assert_eq!(host.started(), 1, "one warm browser served both calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_is_refused_naming_its_field() {
    let ctx = context(Duration::from_secs(30));
    let cases = [
        (json!({}), "/url"),
        (json!({ "url": "https://example.com", "html": "<p>x</p>" }), "/url"),
        (json!({ "html": "<p>x</p>", "page_size": "B5" }), "/page_size"),
        (json!({ "html": "<p>x</p>", "page_size": { "width_mm": 10, "height_mm": 100 } }), "/page_size/width_mm"),
        (json!({ "html": "<p>x</p>", "margins_mm": -1 }), "/margins_mm"),
        (json!({ "html": "<p>x</p>", "margins_mm": { "left": 150 } }), "/margins_mm/left"),
        (json!({ "html": "<p>x</p>", "page_size": "A5", "margins_mm": 70 }), "/margins_mm"),
        (json!({ "url": "https://example.com", "allow_network": true }), "/allow_network"),
        (json!({ "html": "<p>x</p>", "landscape": "yes" }), "/landscape"),
        (json!({ "html": "<p>x</p>", "javascript": false }), "/javascript"),
        (json!({ "url": "http://169.254.169.254/latest/meta-data/" }), "/url"),
        (json!({ "url": "file:///etc/passwd" }), "/url"),
    ];
    assert_refused(&ctx, ROUTE, &cases).await;
    // Landscape and a custom size are honoured.
    let (pdf, _) = print(&ctx, json!({ "html": "<p>x</p>", "page_size": "A5", "landscape": true })).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "a5.pdf", &pdf);
    let info = String::from_utf8_lossy(&Command::new("pdfinfo").arg(&path).output().unwrap().stdout).to_string();
    let size = info.lines().find(|l| l.starts_with("Page size:")).unwrap().to_string();
    let numbers: Vec<f64> = size.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert!(
        (numbers[0] - 595.3).abs() < 2.0 && (numbers[1] - 419.5).abs() < 2.0,
        "A5 landscape is 595 x 420 pt: {size}"
    );
}
