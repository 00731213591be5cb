//! A comparison of the document groups: one operation timed on Paperchain and on another
//! tool ([`Comparison`], or its short form [`Case`] for the `pages` group against qpdf),
//! each side's command and output, what a correct output is, and the timed runs
//! (`Bench::measure`: a warm-up, then the runs alternating the sides).
//!
//! What this module must not do: take a side's timings without its output having passed the
//! checks (`checks.rs`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};

use crate::cmd::Cmd;

use super::TIME_PROGRAM;
use super::checks::files_in;
use super::report::size_text;

/// One operation of the `pages` group, timed on both sides: the short form of a
/// [`Comparison`] for PDF outputs against qpdf, which `pages.rs` writes.
pub(super) struct Case {
    pub(super) operation: &'static str,
    pub(super) paperchain: Side,
    pub(super) qpdf: Side,
    pub(super) expect: Expect,
    /// Said under the table, where the two sides do not do quite the same work.
    pub(super) note: Option<&'static str>,
}

/// One operation, timed on Paperchain and on another tool.
pub(super) struct Comparison {
    /// The table it is printed in: one per kind of operation, each against one tool.
    pub(super) table: &'static str,
    /// The other tool's name, in the table's columns.
    pub(super) tool: &'static str,
    pub(super) operation: String,
    pub(super) paperchain: Side,
    pub(super) reference: Side,
    /// What both sides write.
    pub(super) kind: Kind,
    pub(super) expect: Expect,
    /// The input both sides' PDFs must still look like, where the operation may rewrite
    /// every page (compression).
    pub(super) source: Option<Source>,
    /// Said under the table, where the two sides do not do quite the same work.
    pub(super) note: Option<&'static str>,
}

impl From<Case> for Comparison {
    fn from(case: Case) -> Comparison {
        Comparison {
            table: "pages",
            tool: "qpdf",
            operation: case.operation.into(),
            paperchain: case.paperchain,
            reference: case.qpdf,
            kind: Kind::Pdf,
            expect: case.expect,
            source: None,
            note: case.note,
        }
    }
}

/// One side's command and where it writes.
pub(super) struct Side {
    pub(super) program: PathBuf,
    pub(super) args: Vec<OsString>,
    pub(super) stdin: Option<&'static str>,
    pub(super) output: Produces,
}

/// What a side writes; cleared before every run so each run does the same work.
pub(super) enum Produces {
    Pdf(PathBuf),
    Zip(PathBuf),
    /// A folder of files (it must exist before the run).
    Folder(PathBuf),
    /// A JSON answer, which must hold each expected value at its JSON pointer (`Value::Null`
    /// expected: absent or null). Checked by those values, whatever the comparison's kind.
    Json(PathBuf, Vec<(&'static str, serde_json::Value)>),
    /// A text answer (a diff, a verdict), which must hold each expected piece of text.
    Text(PathBuf, Vec<&'static str>),
}

/// The kind of files an operation writes, which decides how they are checked.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Pdf,
    /// One PNG a page.
    Png,
    /// Images taken out of a PDF, in their own formats: at most `Expect::files` of them
    /// (one an image object; a tool that de-duplicates writes fewer).
    Images,
}

impl Kind {
    /// Whether a file of an output is one of this kind, by its name's extension.
    pub(super) fn matches(self, path: &Path) -> bool {
        let extensions: &[&str] = match self {
            Kind::Pdf => &["pdf"],
            Kind::Png => &["png"],
            // What pdfimages -all and extract_pdf_images write.
            Kind::Images => &["jpg", "jpeg", "png", "jp2", "jpx", "tif", "tiff", "ppm", "pgm", "pbm", "jb2e", "ccitt"],
        };
        path.extension().and_then(|e| e.to_str()).is_some_and(|e| extensions.iter().any(|x| e.eq_ignore_ascii_case(x)))
    }
}

/// What a correct output is.
pub(super) struct Expect {
    /// How many files (PDFs, or images: one a page).
    pub(super) files: usize,
    /// Pages in each PDF.
    pub(super) pages_each: u32,
    /// The /Rotate of every page of the (single) PDF, when the operation sets it.
    pub(super) rotations: Option<Vec<u32>>,
    /// (file index, page) whose text must match the other tool's output: the two sides must
    /// have put the same pages in the same places.
    pub(super) text_samples: Vec<(usize, u32)>,
    /// A word no PDF may hold any more, in any case, as `pdftotext -layout` reads the whole
    /// file (redaction).
    pub(super) absent_text: Option<&'static str>,
}

/// The input PDF an output must still look like: a compressor could otherwise win by
/// dropping content, and a blank page passes `qpdf --check` with the right page count
/// (Ghostscript 10.0 writes one for a corpus file it cannot read, and exits 0).
pub(super) struct Source {
    pub(super) pdf: PathBuf,
    /// Pages compared, rendered small in gray by pdftoppm from the input and the output.
    pub(super) pages: Vec<u32>,
    /// The largest mean difference of gray levels (0-255) allowed on a compared page.
    /// A text page rendered blank differs by about 5; downsampled images by well under 1.
    pub(super) max_difference: f64,
    /// Whether each compared page's text (pdftotext) must be the input's too: for modes
    /// that keep the page content, not for rewriters (Ghostscript changes the text order).
    pub(super) same_text: bool,
}

/// Resolution the input and output pages are compared at: enough to see a missing image
/// or paragraph, cheap enough for a few pages of each output.
pub(super) const COMPARE_DPI: &str = "24";

pub(super) struct Bench {
    pub(super) runs: u32,
    pub(super) memory_file: Option<PathBuf>,
    /// The tools venv's Python, which unpacks ZIPs and checks PNGs.
    pub(super) python: PathBuf,
}

/// Timings of one side; `Err` says why there are none (failed run, rejected output).
pub(super) type Outcome = Result<Timing, String>;

pub(super) struct Timing {
    pub(super) median: Duration,
    pub(super) min: Duration,
    pub(super) peak_rss_kib: Option<u64>,
    /// Size of the files written (unpacked, for a ZIP).
    pub(super) output_bytes: u64,
}

pub(super) struct Row {
    pub(super) table: &'static str,
    pub(super) tool: &'static str,
    pub(super) operation: String,
    pub(super) note: Option<&'static str>,
    pub(super) paperchain: Outcome,
    pub(super) reference: Outcome,
}

impl Bench {
    pub(super) fn measure(&self, case: &Comparison) -> Row {
        println!("bench: {}: {}", case.table, case.operation);
        let sides = [("paperchain", &case.paperchain), (case.tool, &case.reference)];
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
        let [paperchain_times, reference_times] = times;
        let reference = reference_times.and_then(|t| {
            let bytes = self.check_output(case.tool, &case.reference.output, case, None)?;
            Ok(Timing::of(&t, peaks[1], bytes))
        });
        let checked_reference = reference.is_ok().then_some(&case.reference.output);
        let paperchain = paperchain_times.and_then(|t| {
            let bytes = self.check_output("paperchain", &case.paperchain.output, case, checked_reference)?;
            Ok(Timing::of(&t, peaks[0], bytes))
        });
        Row {
            table: case.table,
            tool: case.tool,
            operation: case.operation.clone(),
            note: case.note,
            paperchain,
            reference,
        }
    }

    /// Checks one side's output: a JSON answer against its expected values, files as
    /// `checks.rs` checks the comparison's kind.
    fn check_output(
        &self,
        name: &str,
        output: &Produces,
        case: &Comparison,
        reference: Option<&Produces>,
    ) -> Result<u64, String> {
        let checked = match output {
            Produces::Json(path, expected) => check_json(path, expected).map(|bytes| (bytes, expected.len())),
            Produces::Text(path, expected) => check_text(path, expected).map(|bytes| (bytes, expected.len())),
            _ => return self.check(name, output, case, reference),
        };
        match checked {
            Ok((bytes, values)) => {
                eprintln!("  {name} output checked: {values} values as expected; {}", size_text(bytes));
                Ok(bytes)
            }
            Err(e) => {
                eprintln!("  {name} output rejected: {e:#}");
                Err(format!("output rejected: {e:#}"))
            }
        }
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
}

impl Side {
    /// `paperchain call OPERATION [--input -] --file POINTER=PATH… --out OUTPUT --force`, the
    /// input (when there is one) on stdin.
    pub(super) fn paperchain(
        program: &Path,
        operation: &str,
        input: Option<&'static str>,
        files: &[(String, &Path)],
        output: Produces,
    ) -> Side {
        let mut args: Vec<OsString> = vec!["call".into(), operation.into()];
        if input.is_some() {
            args.extend(["--input".into(), "-".into()]);
        }
        for (pointer, path) in files {
            args.extend(["--file".into(), format!("{pointer}={}", path.display()).into()]);
        }
        args.extend(["--out".into(), output.path().into(), "--force".into()]);
        Side { program: program.to_path_buf(), args, stdin: input, output }
    }
}

/// Whether the JSON file at `path` holds each expected value at its pointer; its size.
fn check_json(path: &Path, expected: &[(&'static str, serde_json::Value)]) -> anyhow::Result<u64> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_slice(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    for (pointer, want) in expected {
        let found = json.pointer(pointer).unwrap_or(&serde_json::Value::Null);
        ensure!(found == want, "{}: {pointer} is {found}, expected {want}", path.display());
    }
    Ok(text.len() as u64)
}

/// Whether the text file at `path` holds each expected piece; its size.
fn check_text(path: &Path, expected: &[&'static str]) -> anyhow::Result<u64> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    for piece in expected {
        ensure!(text.contains(piece), "{}: no {piece:?} in it", path.display());
    }
    Ok(text.len() as u64)
}

impl Timing {
    pub(super) fn of(runs: &[Duration], peak_rss_kib: Option<u64>, output_bytes: u64) -> Timing {
        let mut sorted = runs.to_vec();
        sorted.sort();
        let mid = sorted.len() / 2;
        let median = if sorted.len().is_multiple_of(2) { (sorted[mid - 1] + sorted[mid]) / 2 } else { sorted[mid] };
        Timing { median, min: sorted[0], peak_rss_kib, output_bytes }
    }
}

impl Produces {
    pub(super) fn path(&self) -> &Path {
        match self {
            Produces::Pdf(path)
            | Produces::Zip(path)
            | Produces::Folder(path)
            | Produces::Json(path, _)
            | Produces::Text(path, _) => path,
        }
    }

    pub(super) fn clear(&self) -> anyhow::Result<()> {
        match self {
            Produces::Pdf(file) | Produces::Zip(file) | Produces::Json(file, _) | Produces::Text(file, _) => {
                match std::fs::remove_file(file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
                    _ => Ok(()),
                }
            }
            Produces::Folder(dir) => {
                if dir.exists() {
                    std::fs::remove_dir_all(dir)?;
                }
                Ok(std::fs::create_dir_all(dir)?)
            }
        }
    }

    /// The files of `kind` written, in name order (a ZIP is unpacked beside itself first).
    pub(super) fn files(&self, python: &Path, kind: Kind) -> anyhow::Result<Vec<PathBuf>> {
        match self {
            Produces::Pdf(file) | Produces::Json(file, _) | Produces::Text(file, _) => Ok(vec![file.clone()]),
            Produces::Folder(dir) => files_in(dir, kind),
            Produces::Zip(zip) => {
                let dir = zip.with_extension("unzipped");
                if dir.exists() {
                    std::fs::remove_dir_all(&dir)?;
                }
                // zipfile checks each member's CRC as it extracts.
                Cmd::new(python).args(["-m", "zipfile", "-e"]).arg(zip).arg(&dir).quiet().read()?;
                files_in(&dir, kind)
            }
        }
    }
}
