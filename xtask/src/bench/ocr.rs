//! The `ocr` group: `/v1/pdf/ocr` against OCRmyPDF 16.13 (`--output-type pdf --optimize 0
//! --rotate-pages`, its default of one job a core) with the same Debian Tesseract, on the
//! same scan, in the same run. The scan is made from English corpus PDFs: each page
//! rendered by `pdftoppm` at 300 dpi in grey and put back as an image-only PDF, so the
//! true text of every page is the source page's (`pdftotext`). Both outputs are read by
//! `pdftotext` and scored against it (character accuracy, `paperchain_testkit::scan`),
//! so neither side can win by reading less.
//!
//! Both sides are fresh processes given the PDF file, each run once to warm up, then
//! `--runs` times, alternating.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use paperchain_testkit::scan::{Gray, char_accuracy, image_pdf, render};

use crate::cmd::Cmd;

/// The pages the scan is made of: (corpus file under `docling/pdf/sources`, first page,
/// last page): prose in one and two columns, tables, a manual.
const SOURCES: &[(&str, u32, u32)] = &[
    ("redp5110_sampled.pdf", 1, 4),
    ("multi_page.pdf", 1, 3),
    ("2305.03393v1-pg9.pdf", 1, 1),
    ("amt_handbook_sample.pdf", 1, 1),
    ("code_and_formula.pdf", 1, 1),
];

/// The scan's resolution.
const DPI: u32 = 300;

/// A side's timings and the accuracy of its last output, or what failed.
type Outcome = Result<(Vec<Duration>, f64), String>;

pub(super) struct Report {
    pages: usize,
    runs: u32,
    ours: Outcome,
    theirs: Outcome,
}

pub(super) fn measure(paperchain: &Path, tools: &Path, corpus: &Path, runs: u32, dir: &Path) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut scans: Vec<Gray> = Vec::new();
    let mut truth: Vec<String> = Vec::new();
    for &(file, first, last) in SOURCES {
        let source = corpus.join("docling/pdf/sources").join(file);
        ensure!(source.is_file(), "{} is missing from the corpus", source.display());
        for page in first..=last {
            scans.push(render(&source, page, DPI));
            let text = Cmd::new("pdftotext")
                .args(["-f", &page.to_string(), "-l", &page.to_string()])
                .arg(&source)
                .arg("-")
                .quiet()
                .read_stdout()?;
            truth.push(text);
        }
    }
    let scan = dir.join("scan.pdf");
    std::fs::write(&scan, image_pdf(&scans.iter().collect::<Vec<_>>(), DPI))?;
    drop(scans);
    println!("bench: ocr: {} scanned pages at {DPI} dpi in {}", truth.len(), scan.display());

    let ours_out = dir.join("paperchain.pdf");
    let theirs_out = dir.join("ocrmypdf.pdf");
    let ours = Cmd::new(paperchain)
        .args(["call", "ocr_pdf", "--route", "local", "--file"])
        .arg(format!("file={}", scan.display()))
        .arg("--out")
        .arg(&ours_out)
        .arg("--force")
        .quiet();
    let theirs = Cmd::new(tools.join("bin/ocrmypdf"))
        .args(["--output-type", "pdf", "--optimize", "0", "--rotate-pages", "--quiet"])
        .arg(&scan)
        .arg(&theirs_out)
        .quiet();
    let sides: [(&str, &Cmd, &PathBuf); 2] = [("paperchain", &ours, &ours_out), ("ocrmypdf", &theirs, &theirs_out)];
    let mut times: [Result<Vec<Duration>, String>; 2] = [Ok(Vec::new()), Ok(Vec::new())];
    for run in 0..=runs {
        for (i, (name, cmd, _)) in sides.iter().enumerate() {
            let Ok(so_far) = &mut times[i] else { continue };
            let start = Instant::now();
            match cmd.run() {
                Ok(()) if run > 0 => {
                    let elapsed = start.elapsed();
                    eprintln!("  {name} run {run}/{runs}: {} ms", elapsed.as_millis());
                    so_far.push(elapsed);
                }
                Ok(()) => {}
                Err(e) => times[i] = Err(format!("{e:#}")),
            }
        }
    }
    let score = |out: &Path| -> Result<f64, String> {
        let mut total = 0.0;
        for (i, expected) in truth.iter().enumerate() {
            let page = (i + 1).to_string();
            let text = Cmd::new("pdftotext")
                .args(["-f", &page, "-l", &page])
                .arg(out)
                .arg("-")
                .quiet()
                .read_stdout()
                .map_err(|e| format!("{e:#}"))?;
            total += char_accuracy(&text, expected);
        }
        Ok(total / truth.len() as f64)
    };
    let [ours_times, theirs_times] = times;
    let ours = ours_times.and_then(|t| Ok((t, score(&ours_out)?)));
    let theirs = theirs_times.and_then(|t| Ok((t, score(&theirs_out)?)));
    Ok(Report { pages: truth.len(), runs, ours, theirs })
}

fn median(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

impl Report {
    pub(super) fn print(&self) {
        println!();
        println!("OCR: a {}-page scan at {DPI} dpi made searchable (/v1/pdf/ocr against OCRmyPDF 16.13)", self.pages);
        println!("| tool | median s (min) | pages/s | char accuracy |");
        println!("|---|---|---|---|");
        for (name, outcome) in [("paperchain", &self.ours), ("ocrmypdf", &self.theirs)] {
            match outcome {
                Ok((times, accuracy)) => {
                    let (mid, min) = (median(times), *times.iter().min().expect("at least one run"));
                    println!(
                        "| {name} | {:.2} ({:.2}) | {:.2} | {accuracy:.4} |",
                        mid.as_secs_f64(),
                        min.as_secs_f64(),
                        self.pages as f64 / mid.as_secs_f64()
                    );
                }
                Err(e) => println!("| {name} | failed: {e} | | |"),
            }
        }
        if let (Ok((ours, _)), Ok((theirs, _))) = (&self.ours, &self.theirs) {
            println!(
                "Paperchain is {:.2}x OCRmyPDF's speed (median of {} runs after one warm-up, each a fresh process; both \
                 read pages one a core with the same Tesseract; accuracy against pdftotext of the source pages).",
                median(theirs).as_secs_f64() / median(ours).as_secs_f64(),
                self.runs
            );
        }
    }

    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        let mut out = Vec::new();
        if let Err(e) = &self.ours {
            out.push((true, format!("ocr (paperchain): {e}")));
        }
        if let Err(e) = &self.theirs {
            out.push((false, format!("ocr (ocrmypdf): {e}")));
        }
        out
    }
}
