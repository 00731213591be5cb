//! The `html` group: `/v1/pdf/html-to-pdf` of a warm `paperchain serve` (one browser kept
//! running, a fresh context a call) against a cold `chromium --headless --print-to-pdf`
//! (a new browser each page), on the same pages: an article, a long table, and a styled
//! page with an embedded image. Both outputs must be PDFs with as many pages as each other.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use paperchain_testkit::b64;

use super::{Server, pdf_pages, print_warm_cold};
use crate::cmd::Cmd;

pub(super) struct Report {
    pages: usize,
    runs: u32,
    warm: Result<Vec<Duration>, String>,
    cold: Result<Vec<Duration>, String>,
}

/// The bench's pages: (name, HTML).
fn pages() -> Vec<(&'static str, String)> {
    let paragraph = "Paperchain prints web pages with a warm browser. The quick brown fox jumps over the lazy dog, \
                     and the page goes on long enough to fill a few lines of a printed column. ";
    let article = format!(
        "<!doctype html><html><head><style>body {{ font-family: serif; max-width: 40em; margin: auto; }}</style></head>\
         <body><h1>An article</h1>{}</body></html>",
        (0..40).map(|i| format!("<h2>Section {i}</h2><p>{}</p>", paragraph.repeat(4))).collect::<String>()
    );
    let table = format!(
        "<!doctype html><html><head><style>table {{ border-collapse: collapse; width: 100%; }} td, th {{ border: 1px \
         solid #888; padding: 2px 6px; }} tr:nth-child(even) {{ background: #eef; }}</style></head><body><table>\
         <tr><th>#</th><th>Item</th><th>Qty</th><th>Price</th></tr>{}</table></body></html>",
        (1..=1000)
            .map(|i| format!("<tr><td>{i}</td><td>Item {i}</td><td>{}</td><td>{}.50</td></tr>", i % 7, i))
            .collect::<String>()
    );
    // A 64x64 gradient as an uncompressed BMP: an image in the page without any network.
    let mut bmp = Vec::new();
    let (w, h) = (64u32, 64u32);
    let size = 54 + w * h * 3;
    bmp.extend_from_slice(b"BM");
    for v in [size, 0, 54, 40] {
        bmp.extend_from_slice(&v.to_le_bytes());
    }
    bmp.extend_from_slice(&(w as i32).to_le_bytes());
    bmp.extend_from_slice(&(h as i32).to_le_bytes());
    bmp.extend_from_slice(&1u16.to_le_bytes());
    bmp.extend_from_slice(&24u16.to_le_bytes());
    for v in [0u32, w * h * 3, 2835, 2835, 0, 0] {
        bmp.extend_from_slice(&v.to_le_bytes());
    }
    for y in 0..h {
        for x in 0..w {
            bmp.extend_from_slice(&[(x * 4) as u8, (y * 4) as u8, 160]);
        }
    }
    let styled = format!(
        "<!doctype html><html><head><style>html {{ print-color-adjust: exact; }} .band {{ background: linear-gradient(90deg, \
         #1450c8, #c81450); height: 160px; }} h1 {{ font: bold 48px sans-serif; }} img {{ width: 320px; }}</style></head>\
         <body><div class=band></div><h1>Styled page</h1><img src=\"data:image/bmp;base64,{}\"><p>{}</p></body></html>",
        b64(&bmp),
        paragraph.repeat(10)
    );
    vec![("article", article), ("table", table), ("styled", styled)]
}

pub(super) fn measure(paperchain: &Path, runs: u32, dir: &Path) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir)?;
    let pages = pages();
    let server = Server::start(paperchain, &dir.join("server"), &[])?;
    let mut bodies = Vec::new();
    for (name, html) in &pages {
        std::fs::write(dir.join(format!("{name}.html")), html)?;
        let body = dir.join(format!("{name}.json"));
        // Chromium's own print uses US Letter and 0.4 in margins; the route is asked the same.
        let request = format!(r#"{{"html":{},"page_size":"Letter","margins_mm":10.16}}"#, json_string(html));
        std::fs::write(&body, request)?;
        bodies.push(body);
    }
    let warm = (|| -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::new();
        for run in 0..=runs {
            for (n, body) in bodies.iter().enumerate() {
                let out = dir.join(format!("{}-ours.pdf", pages[n].0));
                let took = server.post("/v1/pdf/html-to-pdf", body, &out).with_context(|| pages[n].0)?;
                if run > 0 {
                    times.push(took);
                }
            }
        }
        Ok(times)
    })()
    .map_err(|e| format!("{e:#}"));
    let cold = (|| -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::new();
        for run in 0..=runs {
            for (name, _) in &pages {
                let out = dir.join(format!("{name}-chromium.pdf"));
                let start = Instant::now();
                Cmd::new("chromium")
                    .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer"])
                    .arg(format!("--user-data-dir={}", dir.join("chromium-profile").display()))
                    .arg(format!("--print-to-pdf={}", out.display()))
                    .arg(format!("file://{}", dir.join(format!("{name}.html")).display()))
                    .quiet()
                    .run()?;
                if run > 0 {
                    times.push(start.elapsed());
                }
                let ours = dir.join(format!("{name}-ours.pdf"));
                ensure!(pdf_pages(&ours)? == pdf_pages(&out)?, "{name}: page counts differ");
            }
        }
        Ok(times)
    })()
    .map_err(|e| format!("{e:#}"));
    Ok(Report { pages: pages.len(), runs, warm, cold })
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

impl Report {
    pub(super) fn print(&self) {
        println!();
        println!(
            "HTML to PDF: {} pages, warm /v1/pdf/html-to-pdf against cold chromium --headless --print-to-pdf ({} runs after \
             one warm-up each)",
            self.pages, self.runs
        );
        print_warm_cold([("paperchain warm", &self.warm), ("chromium cold", &self.cold)], "prints", "");
    }

    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        let mut out = Vec::new();
        if let Err(e) = &self.warm {
            out.push((true, format!("html (paperchain): {e}")));
        }
        if let Err(e) = &self.cold {
            out.push((false, format!("html (chromium): {e}")));
        }
        out
    }
}
