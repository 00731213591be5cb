//! `cargo xtask bench`: times Paperchain's operations against other command-line tools
//! (qpdf, Ghostscript, pdftoppm, pdfimages, PyMuPDF, mutool, pyHanko) on the same inputs, and checks every output so
//! neither side can win by writing garbage.
//!
//! Each side of each case is run once to warm up, then `--runs` times, alternating the
//! sides so drift (thermal, page cache) falls on both. Wall time is measured around the
//! child process; peak memory (RSS) comes from `/usr/bin/time -f %M` wrapping the child,
//! the same wrapper on both sides. The cases of a group live in its own module
//! (`bench/pages.rs`, `bench/docs.rs`, `bench/edits.rs`, `bench/signatures.rs`); a group is added to [`Group`]
//! and to [`run`].
//! The `chain` group (`bench/chain.rs`) times a warm server's answers against `cast` and
//! prints its own table; so do `convert` (`bench/convert.rs`, documents to data against the
//! Python libraries, and `bench/markdown.rs`, to-markdown against MarkItDown), `ocr` (`bench/ocr.rs`, against
//! OCRmyPDF), `office` (`bench/office.rs`, warm Office to PDF against cold soffice), `html` (`bench/html.rs`, warm HTML to PDF against cold Chromium), `paywall` (`bench/paywall.rs`), `wallet` (`bench/wallet.rs`) and `load` (`bench/load.rs`, wrk against a release server, and a soak).
//!
//! Beside the groups: `compare` (a comparison's sides, what a correct output is, the timed
//! runs), `checks` (the checks of each output), `report` (the tables) and `server` (a
//! warm Paperchain server for the groups that time answers).

mod chain;
mod checks;
mod compare;
mod convert;
mod docs;
mod edits;
mod html;
mod load;
mod markdown;
mod ocr;
mod office;
mod pages;
mod paywall;
mod report;
mod server;
mod signatures;
mod tables;
mod wallet;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;

use crate::cmd::Cmd;
use crate::setup::{self, Verbosity};
use crate::{cargo, corpus_dir};

use self::checks::rotations;
use self::compare::{Bench, Case, Comparison, Expect, Kind, Outcome, Produces, Row, Side, Source, Timing};
use self::report::{print_documents, print_warm_cold, size_text, time_cell};
use self::server::Server;

/// Wraps each timed child to read its peak RSS; without it, memory is not reported.
const TIME_PROGRAM: &str = "/usr/bin/time";

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Which benchmarks to run.
    #[arg(value_enum, default_value_t = Group::All)]
    group: Group,
    /// Timed runs of each side, after one warm-up run; the table shows their median and minimum.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    /// The `load` group: seconds of each run under 256 connections.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(5..))]
    load_seconds: u64,
    /// The `load` group: minutes of the soak.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(2..))]
    soak_minutes: u64,
}

/// Groups of benchmarks. Later work adds conversions and OCR to `Docs`, or groups of their own.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Group {
    /// Every group.
    All,
    /// Page operations against the qpdf CLI: merge, split, rotate; n-up against Ghostscript.
    Pages,
    /// Compression against qpdf and Ghostscript, PDF to PNG against pdftoppm, on the
    /// corpus's largest PDFs.
    Docs,
    /// The other document routes on a 100-page PDF, each against the nearest open tool:
    /// redact and sanitize against PyMuPDF, extract-images against pdfimages, blank pages
    /// against Ghostscript's ink coverage with qpdf, compare against git diff and comparepdf,
    /// booklet against qpdf with Ghostscript, poster against mutool, e-invoice against factur-x.
    Edits,
    /// Signing a 100-page PDF (PAdES, a visible field) against pyHanko's signer, and validating
    /// the signed file against pyHanko's validator, with a test CA made by openssl.
    Signatures,
    /// Documents to data against Python libraries: xlsx-to-json against openpyxl,
    /// to-markdown against MarkItDown, tables against pdfplumber.
    Convert,
    /// OCR of a scan made from corpus pages against OCRmyPDF (the same Tesseract): pages a second and accuracy.
    Ocr,
    /// Office files to PDF by a warm `paperchain serve` against cold `soffice --convert-to`, and a 100-conversion soak.
    Office,
    /// Web pages to PDF by a warm `paperchain serve` against cold `chromium --headless --print-to-pdf`.
    Html,
    /// Chain reads of a warm `paperchain serve` against Foundry's `cast`, on a local anvil.
    Chain,
    /// Hosted mode's paywall: unpaid 402s a second under 64 connections, and its own cost on a paid call.
    Paywall,
    /// The paying client's own cost on a paid call (everything but the server and the chain): p50 and p99.
    Wallet,
    /// wrk at 256 connections: a light document route, a chain route on anvil, unpaid 402s and a
    /// heavy route; then a mixed soak with the servers' memory followed.
    Load,
}

impl Group {
    fn includes(self, group: Group) -> bool {
        self == Group::All || self == group
    }
}

pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let installed = setup::run(Verbosity::Quiet)?;
    let documents =
        [Group::Pages, Group::Docs, Group::Edits, Group::Signatures].iter().any(|g| args.group.includes(*g));
    let corpus = if documents
        || [Group::Convert, Group::Ocr, Group::Office, Group::Load].iter().any(|g| args.group.includes(*g))
    {
        corpus_dir().context("no corpus: set PAPERCHAIN_CORPUS, or put shared/corpus beside the clone")?
    } else {
        PathBuf::new()
    };
    // The wallet group builds its own bench; the others run the release binary.
    let binary = [
        Group::Pages,
        Group::Docs,
        Group::Edits,
        Group::Signatures,
        Group::Convert,
        Group::Ocr,
        Group::Office,
        Group::Html,
        Group::Chain,
        Group::Paywall,
        Group::Load,
    ]
    .into_iter()
    .any(|g| args.group.includes(g));
    let paperchain = if binary { build_paperchain()? } else { PathBuf::new() };
    let work = WorkDir::create()?;
    let memory = Path::new(TIME_PROGRAM).is_file();
    let bench = Bench {
        runs: args.runs,
        memory_file: memory.then(|| work.path.join("peak-rss.txt")),
        python: installed.tools.join("bin/python"),
    };

    let mut comparisons: Vec<Comparison> = Vec::new();
    if args.group.includes(Group::Pages) {
        comparisons.extend(pages::cases(&paperchain, &corpus, &work.path.join("pages"))?.into_iter().map(Into::into));
        comparisons.extend(pages::layouts(&paperchain, &corpus, &work.path.join("pages"))?);
    }
    if args.group.includes(Group::Docs) {
        comparisons.extend(docs::cases(&paperchain, &corpus, &work.path.join("docs"))?);
    }
    if args.group.includes(Group::Edits) {
        comparisons.extend(edits::cases(&paperchain, &bench.python, &corpus, &work.path.join("edits"))?);
    }
    if args.group.includes(Group::Signatures) {
        let dir = work.path.join("signatures");
        comparisons.extend(signatures::cases(&paperchain, &bench.python, &corpus, &dir)?);
    }
    let rows: Vec<Row> = comparisons.iter().map(|comparison| bench.measure(comparison)).collect();
    let convert = if args.group.includes(Group::Convert) {
        Some(convert::measure(&paperchain, &bench.python, &corpus, args.runs, &work.path.join("convert"))?)
    } else {
        None
    };
    let to_markdown = if args.group.includes(Group::Convert) {
        Some(markdown::measure(&paperchain, &bench.python, args.runs, &work.path.join("markdown"))?)
    } else {
        None
    };
    let tables = if args.group.includes(Group::Convert) {
        Some(tables::measure(&paperchain, &bench.python, args.runs, &work.path.join("tables"))?)
    } else {
        None
    };
    let ocr = if args.group.includes(Group::Ocr) {
        Some(ocr::measure(&paperchain, &installed.tools, &corpus, args.runs, &work.path.join("ocr"))?)
    } else {
        None
    };
    let office = if args.group.includes(Group::Office) {
        Some(office::measure(&paperchain, &corpus, args.runs, &work.path.join("office"))?)
    } else {
        None
    };
    let html = if args.group.includes(Group::Html) {
        Some(html::measure(&paperchain, args.runs, &work.path.join("html"))?)
    } else {
        None
    };
    let chain = if args.group.includes(Group::Chain) {
        Some(chain::measure(&paperchain, &installed.tools, args.runs, &work.path.join("chain"))?)
    } else {
        None
    };
    let paywall = if args.group.includes(Group::Paywall) {
        Some(paywall::measure(&paperchain, &installed.tools, &work.path.join("paywall"))?)
    } else {
        None
    };
    let wallet =
        if args.group.includes(Group::Wallet) { Some(wallet::measure(&work.path.join("wallet"))?) } else { None };
    let load = if args.group.includes(Group::Load) {
        let durations = load::Durations {
            run: Duration::from_secs(args.load_seconds),
            soak: Duration::from_secs(args.soak_minutes * 60),
        };
        Some(load::measure(&paperchain, &installed.tools, &corpus, durations, &work.path.join("load"))?)
    } else {
        None
    };

    if documents {
        print_documents(&rows, args.runs, memory);
    }
    if let Some(convert) = &convert {
        convert.print();
    }
    if let Some(to_markdown) = &to_markdown {
        to_markdown.print();
    }
    if let Some(tables) = &tables {
        tables.print();
    }
    if let Some(ocr) = &ocr {
        ocr.print();
    }
    if let Some(office) = &office {
        office.print();
    }
    if let Some(html) = &html {
        html.print();
    }
    if let Some(chain) = &chain {
        chain.print();
    }
    if let Some(paywall) = &paywall {
        paywall.print();
    }
    if let Some(wallet) = &wallet {
        wallet.print();
    }
    if let Some(load) = &load {
        load.print();
    }
    let mut failures: Vec<(bool, String)> = rows
        .iter()
        .flat_map(|row| {
            [("paperchain", &row.paperchain), (row.tool, &row.reference)].into_iter().filter_map(
                move |(side, outcome)| {
                    let failure = format!("{}, {} ({side}): {}", row.table, row.operation, outcome.as_ref().err()?);
                    Some((side == "paperchain", failure))
                },
            )
        })
        .collect();
    failures.extend(convert.iter().flat_map(convert::Report::failures));
    failures.extend(to_markdown.iter().flat_map(markdown::Report::failures));
    failures.extend(tables.iter().flat_map(tables::Report::failures));
    failures.extend(ocr.iter().flat_map(ocr::Report::failures));
    failures.extend(office.iter().flat_map(office::Report::failures));
    failures.extend(html.iter().flat_map(html::Report::failures));
    failures.extend(chain.iter().flat_map(chain::Report::failures));
    failures.extend(paywall.iter().flat_map(paywall::Report::failures));
    failures.extend(wallet.iter().flat_map(wallet::Report::failures));
    failures.extend(load.iter().flat_map(load::Report::failures));
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    println!("\nFailures:");
    for (_, failure) in &failures {
        println!("- {failure}");
    }
    println!("Inputs and outputs kept in {}", work.keep().display());
    // Another tool failing on a corpus file (Ghostscript on cmyk-image.pdf) only leaves
    // that comparison out; the bench fails where Paperchain did.
    if failures.iter().any(|(paperchain, _)| *paperchain) {
        return Ok(ExitCode::FAILURE);
    }
    println!("Only the other tools failed: their rows have no comparison.");
    Ok(ExitCode::SUCCESS)
}

/// `pdfinfo`'s page count of `pdf`.
/// The variety set's cases of `kinds` (40 statements per writer; reports and tables, 20),
/// written into `dir`, as its manifest lists them.
fn variety_set(dir: &Path, kinds: &[paperchain_testkit::variety::Kind]) -> anyhow::Result<Vec<serde_json::Value>> {
    use anyhow::Context as _;
    let manifest = paperchain_testkit::variety::generate(dir, paperchain_testkit::variety::SEED, 40, kinds);
    let text = std::fs::read(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    Ok(serde_json::from_slice(&text)?)
}

fn pdf_pages(pdf: &Path) -> anyhow::Result<u32> {
    let info = Cmd::new("pdfinfo").arg(pdf).quiet().read_stdout()?;
    let count = info.lines().find_map(|l| l.strip_prefix("Pages:")).context("pdfinfo gave no page count")?;
    Ok(count.trim().parse()?)
}

/// Builds `paperchain` in release and returns the path of the binary cargo made.
fn build_paperchain() -> anyhow::Result<PathBuf> {
    let messages = cargo()
        .args(["build", "--release", "-p", "paperchain", "--message-format=json-render-diagnostics"])
        .read_stdout()?;
    messages
        .lines()
        .filter(|line| line.contains(r#""reason":"compiler-artifact""#))
        .filter_map(executable_of)
        .find(|path| path.file_name().is_some_and(|n| n == "paperchain"))
        .context("cargo built no `paperchain` executable")
}

/// The `"executable"` of one of cargo's JSON messages (null for libraries).
fn executable_of(message: &str) -> Option<PathBuf> {
    let start = message.find(r#""executable":""#)? + r#""executable":""#.len();
    let path = &message[start..start + message[start..].find('"')?];
    // Cargo escapes only `"` and `\` in paths, which a build directory here does not contain.
    (!path.contains('\\')).then(|| PathBuf::from(path))
}

/// The bench's scratch folder: removed afterwards, unless kept to look at a failure.
struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl WorkDir {
    fn create() -> anyhow::Result<WorkDir> {
        let path = std::env::temp_dir().join(format!("paperchain-bench-{}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(WorkDir { path, keep: false })
    }

    fn keep(mut self) -> PathBuf {
        self.keep = true;
        self.path.clone()
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_executable_in_cargo_messages() {
        let bin = r#"{"reason":"compiler-artifact","target":{"name":"paperchain"},"executable":"/t/release/paperchain","fresh":true}"#;
        assert_eq!(executable_of(bin), Some(PathBuf::from("/t/release/paperchain")));
        assert_eq!(executable_of(r#"{"reason":"compiler-artifact","executable":null}"#), None);
    }
}
