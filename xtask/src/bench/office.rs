//! The `office` group: `/v1/docs/to-pdf` of a warm `paperchain serve` (its pool of boxed
//! LibreOffice workers) against a cold `soffice --convert-to pdf` (a new process each file,
//! its profile kept between runs, as a user's would be), on every Office file of the corpus.
//!
//! Warm: one pass to start the workers, then `--runs` passes, each file sent alone over
//! HTTP (`curl`), timed around the request. Cold: one pass, each file a new soffice. Both
//! outputs must be PDFs with as many pages as each other. Then a soak: 100 conversions in
//! a row on the same server, the resident memory of the server and its workers read from
//! `/proc` after the 10th and the 100th.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use paperchain_testkit::b64;

use super::{Server, pdf_pages, print_warm_cold};
use crate::cmd::Cmd;

/// Conversions of the soak.
const SOAK: usize = 100;

pub(super) struct Report {
    files: usize,
    runs: u32,
    warm: Result<Vec<Duration>, String>,
    cold: Result<Vec<Duration>, String>,
    /// Resident memory (KiB) of the server and its workers after the 10th and the last soak conversion.
    soak: Result<(u64, u64), String>,
}

/// Resident memory (KiB) of `root` and every process under it.
fn tree_rss(root: u32) -> u64 {
    let mut parent_of = std::collections::HashMap::new();
    let mut rss = std::collections::HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else { continue };
        let field = |name: &str| -> Option<u64> {
            status.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().next()?.parse().ok()
        };
        if let Some(ppid) = field("PPid:") {
            parent_of.insert(pid, ppid as u32);
        }
        rss.insert(pid, field("VmRSS:").unwrap_or(0));
    }
    rss.iter()
        .filter(|&(&pid, _)| {
            let mut at = pid;
            loop {
                if at == root {
                    return true;
                }
                match parent_of.get(&at) {
                    Some(&up) if up > 1 => at = up,
                    _ => return false,
                }
            }
        })
        .map(|(_, kib)| kib)
        .sum()
}

pub(super) fn measure(paperchain: &Path, corpus: &Path, runs: u32, dir: &Path) -> anyhow::Result<Report> {
    let files = paperchain_testkit::corpus::office_files(corpus);
    ensure!(!files.is_empty(), "no Office files in {}", corpus.display());
    std::fs::create_dir_all(dir.join("bodies"))?;
    let mut bodies = Vec::new();
    for (n, file) in files.iter().enumerate() {
        let bytes = std::fs::read(file)?;
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("document");
        let body = dir.join("bodies").join(format!("{n}.json"));
        std::fs::write(&body, format!(r#"{{"file":{{"data":"{}","filename":"{name}"}}}}"#, b64(&bytes)))?;
        bodies.push(body);
    }
    println!("bench: office: {} files", files.len());
    let server = Server::start(paperchain, &dir.join("server"), &[])?;
    let ours = dir.join("ours");
    let theirs = dir.join("theirs");
    std::fs::create_dir_all(&ours)?;
    std::fs::create_dir_all(&theirs)?;

    let warm = (|| -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::new();
        for run in 0..=runs {
            for (n, body) in bodies.iter().enumerate() {
                let out = ours.join(format!("{n}.pdf"));
                let took =
                    server.post("/v1/docs/to-pdf", body, &out).with_context(|| format!("{}", files[n].display()))?;
                if run > 0 {
                    times.push(took);
                }
            }
            if run > 0 {
                eprintln!("  warm pass {run}/{runs} done");
            }
        }
        Ok(times)
    })()
    .map_err(|e| format!("{e:#}"));

    let profile = format!("-env:UserInstallation=file://{}", dir.join("soffice-profile").display());
    let cold = (|| -> anyhow::Result<Vec<Duration>> {
        let mut times = Vec::new();
        for (n, file) in files.iter().enumerate() {
            // Copied under a numbered name, so files of one name in two folders do not collide.
            let input = theirs.join(format!("{n}.{}", file.extension().and_then(|e| e.to_str()).unwrap_or("")));
            std::fs::copy(file, &input)?;
            let start = Instant::now();
            Cmd::new("soffice")
                .arg(&profile)
                .args(["--headless", "--norestore", "--convert-to", "pdf", "--outdir"])
                .arg(&theirs)
                .arg(&input)
                .quiet()
                .run()?;
            times.push(start.elapsed());
            let (a, b) = (ours.join(format!("{n}.pdf")), theirs.join(format!("{n}.pdf")));
            ensure!(pdf_pages(&a)? == pdf_pages(&b)?, "{}: page counts differ", file.display());
        }
        Ok(times)
    })()
    .map_err(|e| format!("{e:#}"));

    let soak = (|| -> anyhow::Result<(u64, u64)> {
        let mut after_ten = 0;
        for i in 0..SOAK {
            let n = i % bodies.len();
            server
                .post("/v1/docs/to-pdf", &bodies[n], &dir.join("soak.pdf"))
                .with_context(|| format!("{}", files[n].display()))?;
            if i == 9 {
                after_ten = tree_rss(server.pid());
            }
        }
        Ok((after_ten, tree_rss(server.pid())))
    })()
    .map_err(|e| format!("{e:#}"));

    Ok(Report { files: files.len(), runs, warm, cold, soak })
}

impl Report {
    pub(super) fn print(&self) {
        println!();
        println!(
            "Office to PDF: {} corpus files, warm /v1/docs/to-pdf (paperchain serve, {} passes after one warm-up) \
             against cold soffice --convert-to (one pass)",
            self.files, self.runs
        );
        print_warm_cold(
            [("paperchain warm", &self.warm), ("soffice cold", &self.cold)],
            "conversions",
            " (target: 3x)",
        );
        match &self.soak {
            Ok((ten, last)) => println!(
                "Soak: {SOAK} conversions in a row; resident memory of the server and its workers {} MiB after 10, \
                 {} MiB after {SOAK} ({:+.1}%).",
                ten / 1024,
                last / 1024,
                (*last as f64 / *ten as f64 - 1.0) * 100.0
            ),
            Err(e) => println!("Soak failed: {e}"),
        }
    }

    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        let mut out = Vec::new();
        if let Err(e) = &self.warm {
            out.push((true, format!("office (paperchain): {e}")));
        }
        if let Err(e) = &self.cold {
            out.push((false, format!("office (soffice): {e}")));
        }
        if let Err(e) = &self.soak {
            out.push((true, format!("office soak: {e}")));
        }
        out
    }
}
