//! `cargo xtask bench`: times Paperchain's operations against the `qpdf` command-line tool on
//! the same inputs, and checks every output so neither side can win by writing garbage.
//!
//! Each side of each case is run once to warm up, then `--runs` times, alternating the
//! sides so drift (thermal, page cache) falls on both. Wall time is measured around the
//! child process; peak memory (RSS) comes from `/usr/bin/time -f %M` wrapping the child,
//! the same wrapper on both sides. The cases of a group live in its own module
//! (`bench/pages.rs`); a group is added to [`Group`] and to [`run`].

mod pages;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};

use crate::cmd::Cmd;
use crate::setup::{self, Verbosity};
use crate::{cargo, corpus_dir};

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
}

/// Groups of benchmarks. Later work adds `Docs` (conversions, OCR, rendering) here.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Group {
    /// Every group.
    All,
    /// Page operations against the qpdf CLI: merge, split, rotate.
    Pages,
}

impl Group {
    fn includes(self, group: Group) -> bool {
        self == Group::All || self == group
    }
}

pub fn run(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let installed = setup::run(Verbosity::Quiet)?;
    let corpus = corpus_dir().context("no corpus: set PAPERCHAIN_CORPUS, or put shared/corpus beside the clone")?;
    let paperchain = build_paperchain()?;
    let work = WorkDir::create()?;
    let memory = Path::new(TIME_PROGRAM).is_file();
    let bench = Bench {
        runs: args.runs,
        memory_file: memory.then(|| work.path.join("peak-rss.txt")),
        python: installed.tools.join("bin/python"),
    };

    let mut rows = Vec::new();
    if args.group.includes(Group::Pages) {
        let cases = pages::cases(&paperchain, &corpus, &work.path.join("pages"))?;
        rows.extend(cases.iter().map(|case| bench.measure(case)));
    }

    println!();
    print_table(&rows);
    println!();
    println!(
        "Median (minimum) wall time of {} runs after one warm-up, each side a fresh process. Peak RSS: {}.",
        args.runs,
        if memory {
            "/usr/bin/time -f %M around each child, highest of the runs"
        } else {
            "not measured (no /usr/bin/time)"
        }
    );
    println!("Output: the size of the PDFs written (a ZIP's, unpacked), after each passed the checks above.");
    for row in &rows {
        if let Some(note) = row.note {
            println!("{}: {note}", row.operation);
        }
    }
    let failures: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            [("paperchain", &row.paperchain), ("qpdf", &row.qpdf)].into_iter().filter_map(move |(side, outcome)| {
                outcome.as_ref().err().map(|e| format!("{} ({side}): {e}", row.operation))
            })
        })
        .collect();
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    println!("\nFailures:");
    for failure in &failures {
        println!("- {failure}");
    }
    println!("Inputs and outputs kept in {}", work.keep().display());
    Ok(ExitCode::FAILURE)
}

/// One operation, timed on both sides.
struct Case {
    operation: &'static str,
    paperchain: Side,
    qpdf: Side,
    expect: Expect,
    /// Said under the table, where the two sides do not do quite the same work.
    note: Option<&'static str>,
}

/// One side's command and where it writes.
struct Side {
    program: PathBuf,
    args: Vec<OsString>,
    stdin: Option<&'static str>,
    output: Produces,
}

/// What a side writes; cleared before every run so each run does the same work.
enum Produces {
    Pdf(PathBuf),
    Zip(PathBuf),
    /// A folder of PDFs (it must exist before the run).
    Folder(PathBuf),
}

/// What a correct output is.
struct Expect {
    /// How many PDFs.
    files: usize,
    /// Pages in each of them.
    pages_each: u32,
    /// The /Rotate of every page of the (single) PDF, when the operation sets it.
    rotations: Option<Vec<u32>>,
    /// (file index, page) whose text must match qpdf's output: the two sides must have
    /// put the same pages in the same places.
    text_samples: Vec<(usize, u32)>,
}

struct Bench {
    runs: u32,
    memory_file: Option<PathBuf>,
    /// The tools venv's Python, which unpacks ZIPs for checking.
    python: PathBuf,
}

/// Timings of one side; `Err` says why there are none (failed run, rejected output).
type Outcome = Result<Timing, String>;

struct Timing {
    median: Duration,
    min: Duration,
    peak_rss_kib: Option<u64>,
    /// Size of the PDFs written (unpacked, for a ZIP).
    output_bytes: u64,
}

struct Row {
    operation: &'static str,
    note: Option<&'static str>,
    paperchain: Outcome,
    qpdf: Outcome,
}

impl Bench {
    fn measure(&self, case: &Case) -> Row {
        println!("bench: {}", case.operation);
        let sides = [("paperchain", &case.paperchain), ("qpdf", &case.qpdf)];
        let mut times: [Result<Vec<Duration>, String>; 2] = [Ok(Vec::new()), Ok(Vec::new())];
        let mut peaks: [Option<u64>; 2] = [None, None];
        // Run 0 is the warm-up, printed in full; the timed runs repeat it quietly.
        for run in 0..=self.runs {
            for (i, (name, side)) in sides.iter().enumerate() {
                let Ok(so_far) = &mut times[i] else { continue };
                match self.run_once(side, run == 0) {
                    Ok((elapsed, peak)) if run > 0 => {
                        eprintln!("  {name} run {run}/{}: {} ms", self.runs, elapsed.as_millis());
                        so_far.push(elapsed);
                        peaks[i] = peaks[i].max(peak);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        eprintln!("  {name} failed: {e}");
                        times[i] = Err(e);
                    }
                }
            }
        }
        // The reference side is checked first: its pages are what Paperchain's must match.
        let [paperchain_times, qpdf_times] = times;
        let qpdf = qpdf_times.and_then(|t| {
            let bytes = self.check("qpdf", &case.qpdf.output, &case.expect, None)?;
            Ok(Timing::of(&t, peaks[1], bytes))
        });
        let reference = qpdf.is_ok().then_some(&case.qpdf.output);
        let paperchain = paperchain_times.and_then(|t| {
            let bytes = self.check("paperchain", &case.paperchain.output, &case.expect, reference)?;
            Ok(Timing::of(&t, peaks[0], bytes))
        });
        Row { operation: case.operation, note: case.note, paperchain, qpdf }
    }

    /// One fresh run of a side: wall time, and peak RSS in KiB when measured.
    fn run_once(&self, side: &Side, echo: bool) -> Result<(Duration, Option<u64>), String> {
        side.output.clear().map_err(|e| format!("clearing the output: {e:#}"))?;
        let cmd = match &self.memory_file {
            Some(file) => Cmd::new(TIME_PROGRAM).args(["-f", "%M", "-o"]).arg(file).arg(&side.program),
            None => Cmd::new(&side.program),
        };
        let cmd = cmd.args(&side.args);
        let cmd = match side.stdin {
            Some(text) => cmd.stdin(text),
            None => cmd,
        };
        let cmd = if echo { cmd } else { cmd.quiet() };
        let start = Instant::now();
        let output = cmd.output().map_err(|e| format!("{e:#}"))?;
        let elapsed = start.elapsed();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            // /usr/bin/time adds "Command exited with non-zero status N" to the file, not here.
            return Err(format!("{} exited with {}: {}", side.program.display(), output.status, stderr.trim()));
        }
        let peak = self
            .memory_file
            .as_ref()
            .and_then(|file| std::fs::read_to_string(file).ok())
            .and_then(|text| text.lines().rev().find_map(|line| line.trim().parse::<u64>().ok()));
        Ok((elapsed, peak))
    }

    /// Checks an output (every PDF passes `qpdf --check` with the expected page count, the
    /// rotations are as expected, sampled pages read the same as `reference`'s), says what
    /// it checked, and returns the size of the PDFs.
    fn check(
        &self,
        name: &str,
        output: &Produces,
        expect: &Expect,
        reference: Option<&Produces>,
    ) -> Result<u64, String> {
        match self.check_output(output, expect, reference) {
            Ok((checked, bytes)) => {
                eprintln!("  {name} output checked: {checked}; {}", mib(bytes));
                Ok(bytes)
            }
            Err(e) => {
                eprintln!("  {name} output rejected: {e:#}");
                Err(format!("output rejected: {e:#}"))
            }
        }
    }

    fn check_output(
        &self,
        output: &Produces,
        expect: &Expect,
        reference: Option<&Produces>,
    ) -> anyhow::Result<(String, u64)> {
        let pdfs = output.pdfs(&self.python)?;
        ensure!(pdfs.len() == expect.files, "{} PDFs, expected {}", pdfs.len(), expect.files);
        for_each_parallel(&pdfs, |pdf| {
            let report = Cmd::new("qpdf").args(["--check", "--show-npages"]).arg(pdf).quiet().read()?;
            let pages = report.lines().last().and_then(|l| l.trim().parse::<u32>().ok());
            ensure!(
                pages == Some(expect.pages_each),
                "{}: {pages:?} pages, expected {}",
                pdf.display(),
                expect.pages_each
            );
            Ok(())
        })?;
        let mut checked = format!("PDFs: {}, each passes qpdf --check with {} pages", pdfs.len(), expect.pages_each);
        if let Some(expected) = &expect.rotations {
            let rotations = rotations(&pdfs[0], expect.pages_each)?;
            if let Some(page) = (0..expected.len()).find(|&i| rotations.get(i) != expected.get(i)) {
                let found = rotations.get(page).map_or("none".into(), u32::to_string);
                bail!("page {} has /Rotate {found}, expected {}", page + 1, expected[page]);
            }
            checked += ", every page's /Rotate as expected";
        }
        if let Some(reference) = reference {
            let reference = reference.pdfs(&self.python)?;
            for &(file, page) in &expect.text_samples {
                let (ours, theirs) = (text_of(&pdfs[file], page)?, text_of(&reference[file], page)?);
                ensure!(ours == theirs, "{} page {page}: the text differs from qpdf's output", pdfs[file].display());
            }
            checked += &format!(", text of {} sampled pages as in qpdf's output", expect.text_samples.len());
        }
        let bytes = pdfs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
        Ok((checked, bytes))
    }
}

impl Timing {
    fn of(runs: &[Duration], peak_rss_kib: Option<u64>, output_bytes: u64) -> Timing {
        let mut sorted = runs.to_vec();
        sorted.sort();
        let mid = sorted.len() / 2;
        let median = if sorted.len().is_multiple_of(2) { (sorted[mid - 1] + sorted[mid]) / 2 } else { sorted[mid] };
        Timing { median, min: sorted[0], peak_rss_kib, output_bytes }
    }
}

impl Produces {
    fn path(&self) -> &Path {
        match self {
            Produces::Pdf(path) | Produces::Zip(path) | Produces::Folder(path) => path,
        }
    }

    fn clear(&self) -> anyhow::Result<()> {
        match self {
            Produces::Pdf(file) | Produces::Zip(file) => match std::fs::remove_file(file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
                _ => Ok(()),
            },
            Produces::Folder(dir) => {
                if dir.exists() {
                    std::fs::remove_dir_all(dir)?;
                }
                Ok(std::fs::create_dir_all(dir)?)
            }
        }
    }

    /// The PDFs written, in name order (a ZIP is unpacked beside itself first).
    fn pdfs(&self, python: &Path) -> anyhow::Result<Vec<PathBuf>> {
        match self {
            Produces::Pdf(file) => Ok(vec![file.clone()]),
            Produces::Folder(dir) => pdfs_in(dir),
            Produces::Zip(zip) => {
                let dir = zip.with_extension("unzipped");
                if dir.exists() {
                    std::fs::remove_dir_all(&dir)?;
                }
                // zipfile checks each member's CRC as it extracts.
                Cmd::new(python).args(["-m", "zipfile", "-e"]).arg(zip).arg(&dir).quiet().read()?;
                pdfs_in(&dir)
            }
        }
    }
}

fn pdfs_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut pdfs = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")) {
            pdfs.push(path);
        }
    }
    pdfs.sort();
    Ok(pdfs)
}

/// The /Rotate of each page, as poppler's `pdfinfo` reads it.
fn rotations(pdf: &Path, pages: u32) -> anyhow::Result<Vec<u32>> {
    let info = Cmd::new("pdfinfo").args(["-f", "1", "-l", &pages.to_string()]).arg(pdf).quiet().read()?;
    Ok(parse_rotations(&info))
}

/// Reads the `Page    1 rot:  90` lines of `pdfinfo -f -l`.
fn parse_rotations(info: &str) -> Vec<u32> {
    info.lines()
        .filter(|line| line.starts_with("Page ") && line.contains(" rot:"))
        .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
        .collect()
}

fn text_of(pdf: &Path, page: u32) -> anyhow::Result<String> {
    let page = page.to_string();
    Cmd::new("pdftotext").args(["-f", &page, "-l", &page]).arg(pdf).arg("-").quiet().read()
}

/// Runs `check` on every item, on as many threads as there are cores; the first error wins.
fn for_each_parallel<T: Sync>(items: &[T], check: impl Fn(&T) -> anyhow::Result<()> + Sync) -> anyhow::Result<()> {
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, usize::from).min(items.len().max(1));
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                        if let Err(e) = check(item) {
                            // Stops the other workers at their next item.
                            next.store(items.len(), Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().unwrap_or_else(|_| bail!("a check thread panicked")))
    })
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

fn print_table(rows: &[Row]) {
    let header = [
        "operation",
        "paperchain ms median (min)",
        "qpdf ms median (min)",
        "ratio paperchain/qpdf",
        "paperchain peak RSS",
        "qpdf peak RSS",
        "output paperchain / qpdf",
    ];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|row| {
            let (ratio, sizes) = match (&row.paperchain, &row.qpdf) {
                (Ok(ours), Ok(theirs)) => (
                    format!("{:.2}x", ours.median.as_secs_f64() / theirs.median.as_secs_f64()),
                    format!("{} / {}", mib(ours.output_bytes), mib(theirs.output_bytes)),
                ),
                _ => ("-".into(), "-".into()),
            };
            [
                row.operation.to_string(),
                time_cell(&row.paperchain),
                time_cell(&row.qpdf),
                ratio,
                memory_cell(&row.paperchain),
                memory_cell(&row.qpdf),
                sizes,
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| cells.iter().map(|c| c[i].chars().count()).max().unwrap_or(0).max(header[i].len()))
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, &w)| format!("{c:<w$}")).collect();
        println!("| {} |", padded.join(" | "));
    };
    line(&header.map(String::from));
    line(&widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>());
    for row in &cells {
        line(row);
    }
}

/// Median (min) in ms, or the start of why there is none (the full text is under the table).
fn time_cell(outcome: &Outcome) -> String {
    match outcome {
        Ok(t) => format!("{} ({})", t.median.as_millis(), t.min.as_millis()),
        Err(e) => {
            let short: String = e.lines().next().unwrap_or_default().chars().take(60).collect();
            let more = if short.len() < e.len() { "…" } else { "" };
            format!("FAILED: {short}{more}")
        }
    }
}

fn memory_cell(outcome: &Outcome) -> String {
    match outcome {
        Ok(Timing { peak_rss_kib: Some(kib), .. }) => format!("{:.0} MiB", *kib as f64 / 1024.0),
        _ => "-".into(),
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pdfinfo_rotations() {
        let info = "Title: x\nPage    1 rot:  90\nPage    2 size: 595 x 842 pts\nPage    2 rot:  270\n";
        assert_eq!(parse_rotations(info), [90, 270]);
    }

    #[test]
    fn finds_the_executable_in_cargo_messages() {
        let bin = r#"{"reason":"compiler-artifact","target":{"name":"paperchain"},"executable":"/t/release/paperchain","fresh":true}"#;
        assert_eq!(executable_of(bin), Some(PathBuf::from("/t/release/paperchain")));
        assert_eq!(executable_of(r#"{"reason":"compiler-artifact","executable":null}"#), None);
    }

    #[test]
    fn median_of_even_and_odd_runs() {
        let ms = |v: &[u64]| v.iter().map(|&m| Duration::from_millis(m)).collect::<Vec<_>>();
        let t = Timing::of(&ms(&[30, 10, 20]), None, 0);
        assert_eq!((t.median, t.min), (Duration::from_millis(20), Duration::from_millis(10)));
        assert_eq!(Timing::of(&ms(&[40, 10, 20, 30]), None, 0).median, Duration::from_millis(25));
    }
}
