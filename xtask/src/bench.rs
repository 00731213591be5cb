//! `cargo xtask bench`: times Paperchain's operations against other command-line tools
//! (qpdf, Ghostscript, pdftoppm) on the same inputs, and checks every output so neither side
//! can win by writing garbage.
//!
//! Each side of each case is run once to warm up, then `--runs` times, alternating the
//! sides so drift (thermal, page cache) falls on both. Wall time is measured around the
//! child process; peak memory (RSS) comes from `/usr/bin/time -f %M` wrapping the child,
//! the same wrapper on both sides. The cases of a group live in its own module
//! (`bench/pages.rs`, `bench/docs.rs`); a group is added to [`Group`] and to [`run`].
//! The `chain` group (`bench/chain.rs`) times a warm server's answers against `cast` and
//! prints its own table; so do `convert` (`bench/convert.rs`, documents to data against the
//! Python libraries, and `bench/markdown.rs`, to-markdown against MarkItDown), `ocr` (`bench/ocr.rs`, against
//! OCRmyPDF), `office` (`bench/office.rs`, warm Office to PDF against cold soffice), `html` (`bench/html.rs`, warm HTML to PDF against cold Chromium), `paywall` (`bench/paywall.rs`), `wallet` (`bench/wallet.rs`) and `load` (`bench/load.rs`, wrk against a release server, and a soak).

mod chain;
mod convert;
mod docs;
mod html;
mod load;
mod markdown;
mod ocr;
mod office;
mod pages;
mod paywall;
mod tables;
mod wallet;

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
    /// Page operations against the qpdf CLI: merge, split, rotate.
    Pages,
    /// Compression against qpdf and Ghostscript, PDF to PNG against pdftoppm, on the
    /// corpus's largest PDFs.
    Docs,
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
    let documents = args.group.includes(Group::Pages) || args.group.includes(Group::Docs);
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
    }
    if args.group.includes(Group::Docs) {
        comparisons.extend(docs::cases(&paperchain, &corpus, &work.path.join("docs"))?);
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

/// The document groups' tables and what their columns mean.
fn print_documents(rows: &[Row], runs: u32, memory: bool) {
    print_tables(rows);
    println!();
    println!(
        "Median (minimum) wall time of {} runs after one warm-up, each side a fresh process. Peak RSS: {}.",
        runs,
        if memory {
            "/usr/bin/time -f %M around each child, highest of the runs"
        } else {
            "not measured (no /usr/bin/time)"
        }
    );
    println!(
        "Output: the size of the PDFs or images written (a ZIP's, unpacked), after each passed the checks above; \
         the ratios are paperchain/other, below 1 where Paperchain is faster or smaller."
    );
}

/// One operation of the `pages` group, timed on both sides: the short form of a
/// [`Comparison`] for PDF outputs against qpdf, which `pages.rs` writes.
struct Case {
    operation: &'static str,
    paperchain: Side,
    qpdf: Side,
    expect: Expect,
    /// Said under the table, where the two sides do not do quite the same work.
    note: Option<&'static str>,
}

/// One operation, timed on Paperchain and on another tool.
struct Comparison {
    /// The table it is printed in: one per kind of operation, each against one tool.
    table: &'static str,
    /// The other tool's name, in the table's columns.
    tool: &'static str,
    operation: String,
    paperchain: Side,
    reference: Side,
    /// What both sides write.
    kind: Kind,
    expect: Expect,
    /// The input both sides' PDFs must still look like, where the operation may rewrite
    /// every page (compression).
    source: Option<Source>,
    /// Said under the table, where the two sides do not do quite the same work.
    note: Option<&'static str>,
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
    /// A folder of files (it must exist before the run).
    Folder(PathBuf),
}

/// The kind of files an operation writes, which decides how they are checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pdf,
    /// One PNG a page.
    Png,
}

impl Kind {
    fn extension(self) -> &'static str {
        match self {
            Kind::Pdf => "pdf",
            Kind::Png => "png",
        }
    }
}

/// What a correct output is.
struct Expect {
    /// How many files (PDFs, or images: one a page).
    files: usize,
    /// Pages in each PDF.
    pages_each: u32,
    /// The /Rotate of every page of the (single) PDF, when the operation sets it.
    rotations: Option<Vec<u32>>,
    /// (file index, page) whose text must match the other tool's output: the two sides must
    /// have put the same pages in the same places.
    text_samples: Vec<(usize, u32)>,
}

/// The input PDF an output must still look like: a compressor could otherwise win by
/// dropping content, and a blank page passes `qpdf --check` with the right page count
/// (Ghostscript 10.0 writes one for a corpus file it cannot read, and exits 0).
struct Source {
    pdf: PathBuf,
    /// Pages compared, rendered small in gray by pdftoppm from the input and the output.
    pages: Vec<u32>,
    /// The largest mean difference of gray levels (0-255) allowed on a compared page.
    /// A text page rendered blank differs by about 5; downsampled images by well under 1.
    max_difference: f64,
    /// Whether each compared page's text (pdftotext) must be the input's too: for modes
    /// that keep the page content, not for rewriters (Ghostscript changes the text order).
    same_text: bool,
}

/// Resolution the input and output pages are compared at: enough to see a missing image
/// or paragraph, cheap enough for a few pages of each output.
const COMPARE_DPI: &str = "24";

struct Bench {
    runs: u32,
    memory_file: Option<PathBuf>,
    /// The tools venv's Python, which unpacks ZIPs and checks PNGs.
    python: PathBuf,
}

/// Timings of one side; `Err` says why there are none (failed run, rejected output).
type Outcome = Result<Timing, String>;

struct Timing {
    median: Duration,
    min: Duration,
    peak_rss_kib: Option<u64>,
    /// Size of the files written (unpacked, for a ZIP).
    output_bytes: u64,
}

struct Row {
    table: &'static str,
    tool: &'static str,
    operation: String,
    note: Option<&'static str>,
    paperchain: Outcome,
    reference: Outcome,
}

impl Bench {
    fn measure(&self, case: &Comparison) -> Row {
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
            let bytes = self.check(case.tool, &case.reference.output, case, None)?;
            Ok(Timing::of(&t, peaks[1], bytes))
        });
        let checked_reference = reference.is_ok().then_some(&case.reference.output);
        let paperchain = paperchain_times.and_then(|t| {
            let bytes = self.check("paperchain", &case.paperchain.output, case, checked_reference)?;
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

    /// Checks one side's output against what the comparison expects (and, for Paperchain,
    /// against the reference side's checked output), says what it checked, and returns the
    /// size of the files.
    fn check(
        &self,
        name: &str,
        output: &Produces,
        case: &Comparison,
        reference: Option<&Produces>,
    ) -> Result<u64, String> {
        let checked = match case.kind {
            Kind::Pdf => self.check_pdfs(output, case, reference),
            Kind::Png => self.check_pngs(output, &case.expect, reference),
        };
        match checked {
            Ok((checked, bytes)) => {
                eprintln!("  {name} output checked: {checked}; {}", size_text(bytes));
                Ok(bytes)
            }
            Err(e) => {
                eprintln!("  {name} output rejected: {e:#}");
                Err(format!("output rejected: {e:#}"))
            }
        }
    }

    /// Every PDF passes `qpdf --check` with the expected page count, the rotations are as
    /// expected, sampled pages read the same as `reference`'s, and look (and read) like the
    /// source's.
    fn check_pdfs(
        &self,
        output: &Produces,
        case: &Comparison,
        reference: Option<&Produces>,
    ) -> anyhow::Result<(String, u64)> {
        let expect = &case.expect;
        let pdfs = output.files(&self.python, Kind::Pdf)?;
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
        if let Some(reference) = reference.filter(|_| !expect.text_samples.is_empty()) {
            let reference = reference.files(&self.python, Kind::Pdf)?;
            for &(file, page) in &expect.text_samples {
                let (ours, theirs) = (text_of(&pdfs[file], page)?, text_of(&reference[file], page)?);
                ensure!(
                    ours == theirs,
                    "{} page {page}: the text differs from {}'s output",
                    pdfs[file].display(),
                    case.tool
                );
            }
            checked += &format!(", text of {} sampled pages as in {}'s output", expect.text_samples.len(), case.tool);
        }
        if let Some(source) = &case.source {
            let worst = looks_like_source(&pdfs, source)?;
            checked += &format!(
                ", pages {:?} look like the input's at {COMPARE_DPI} dpi (mean gray difference at most {worst:.2}){}",
                source.pages,
                if source.same_text { " and read the same" } else { "" }
            );
        }
        let bytes = pdfs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
        Ok((checked, bytes))
    }

    /// One whole PNG a page (chunk checksums, image data that inflates to its rows), each
    /// the size of `reference`'s image of the same page give or take a pixel of rounding.
    fn check_pngs(
        &self,
        output: &Produces,
        expect: &Expect,
        reference: Option<&Produces>,
    ) -> anyhow::Result<(String, u64)> {
        let pngs = output.files(&self.python, Kind::Png)?;
        ensure!(pngs.len() == expect.files, "{} PNGs, expected one a page: {}", pngs.len(), expect.files);
        let sizes = self.png_sizes(&pngs)?;
        let mut checked = format!("PNGs: {}, one a page, each complete", pngs.len());
        if let Some(reference) = reference {
            let theirs = self.png_sizes(&reference.files(&self.python, Kind::Png)?)?;
            let near = |a: u32, b: u32| a.abs_diff(b) <= 1;
            if let Some(page) = (0..sizes.len())
                .find(|&i| !theirs.get(i).is_some_and(|&(w, h)| near(sizes[i].0, w) && near(sizes[i].1, h)))
            {
                bail!(
                    "page {}: {}x{} pixels, the other tool's is {:?}",
                    page + 1,
                    sizes[page].0,
                    sizes[page].1,
                    theirs.get(page)
                );
            }
            checked += ", each the other tool's size (±1 px)";
        }
        let bytes = pngs.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
        Ok((checked, bytes))
    }

    /// The width and height of each PNG, after checking it is whole.
    fn png_sizes(&self, pngs: &[PathBuf]) -> anyhow::Result<Vec<(u32, u32)>> {
        let report = Cmd::new(&self.python).args(["-c", CHECK_PNGS]).args(pngs).quiet().read()?;
        let sizes: Vec<(u32, u32)> = report
            .lines()
            .filter_map(|line| {
                let (w, h) = line.split_once(' ')?;
                Some((w.parse().ok()?, h.parse().ok()?))
            })
            .collect();
        ensure!(sizes.len() == pngs.len(), "the PNG check reported {} sizes for {} files", sizes.len(), pngs.len());
        Ok(sizes)
    }
}

/// Checks each PNG named in argv and prints its `width height`; a broken one is an error.
/// In Python, whose zlib inflates the image data, so xtask needs no image crate; it does not
/// unfilter the rows (a PNG of the right size that inflates whole is taken as an image).
const CHECK_PNGS: &str = r#"
import struct, sys, zlib
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
def check(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        return 'not a PNG'
    pos, header, idat = 8, None, []
    while True:
        if pos + 12 > len(data):
            return 'cut short: no IEND chunk'
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body, crc = data[pos + 8:pos + 8 + length], data[pos + 8 + length:pos + 12 + length]
        if len(crc) < 4 or zlib.crc32(kind + body) != int.from_bytes(crc, 'big'):
            return f'bad {kind!r} chunk at byte {pos}'
        pos += 12 + length
        if kind == b'IHDR':
            header = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat.append(body)
        elif kind == b'IEND':
            break
    if header is None:
        return 'no IHDR chunk'
    width, height, depth, color, _, _, interlace = header
    rows = zlib.decompress(b''.join(idat))
    row = (width * CHANNELS.get(color, 0) * depth + 7) // 8 + 1
    if interlace == 0 and len(rows) != row * height:
        return f'{len(rows)} bytes of image data, {row * height} expected for {width}x{height}'
    print(width, height)
failed = False
for path in sys.argv[1:]:
    try:
        error = check(path)
    except Exception as e:
        error = str(e)
    if error:
        print(f'{path}: {error}', file=sys.stderr)
        failed = True
sys.exit(1 if failed else 0)
"#;

/// Compares the sampled pages of each PDF with the source's, rendered by pdftoppm; returns
/// the largest mean difference found.
fn looks_like_source(pdfs: &[PathBuf], source: &Source) -> anyhow::Result<f64> {
    let mut worst = 0.0f64;
    for pdf in pdfs {
        let differences = std::sync::Mutex::new(Vec::new());
        for_each_parallel(&source.pages, |&page| {
            let (ours, theirs) = (render_gray(pdf, page)?, render_gray(&source.pdf, page)?);
            let (ours, theirs) = (
                parse_pgm(&ours).context("pdftoppm wrote no PGM for the output")?,
                parse_pgm(&theirs).context("pdftoppm wrote no PGM for the input")?,
            );
            ensure!(
                (ours.0, ours.1) == (theirs.0, theirs.1),
                "page {page} is {}x{} pixels at {COMPARE_DPI} dpi, the input's {}x{}: another page size",
                ours.0,
                ours.1,
                theirs.0,
                theirs.1
            );
            let difference = mean_difference(ours.2, theirs.2);
            ensure!(
                difference <= source.max_difference,
                "page {page} looks different from the input's: mean gray difference {difference:.2}, at most {} allowed",
                source.max_difference
            );
            if source.same_text {
                ensure!(
                    text_of(pdf, page)? == text_of(&source.pdf, page)?,
                    "page {page}: the text differs from the input's"
                );
            }
            differences.lock().map_err(|_| anyhow::anyhow!("a check thread panicked"))?.push(difference);
            Ok(())
        })?;
        let differences = differences.into_inner().map_err(|_| anyhow::anyhow!("a check thread panicked"))?;
        worst = differences.into_iter().fold(worst, f64::max);
    }
    Ok(worst)
}

/// One page as an 8-bit gray PGM, as pdftoppm renders it.
fn render_gray(pdf: &Path, page: u32) -> anyhow::Result<Vec<u8>> {
    let page = page.to_string();
    let output =
        Cmd::new("pdftoppm").args(["-r", COMPARE_DPI, "-gray", "-f", &page, "-l", &page]).arg(pdf).quiet().output()?;
    ensure!(
        output.status.success(),
        "pdftoppm could not render page {page} of {}: {}",
        pdf.display(),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(output.stdout)
}

/// The width, height and pixels of a binary 8-bit PGM (`P5`), as pdftoppm -gray writes it.
fn parse_pgm(bytes: &[u8]) -> Option<(u32, u32, &[u8])> {
    let mut rest = bytes.strip_prefix(b"P5")?;
    let mut fields = [0u32; 3];
    for field in &mut fields {
        rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
        let end = rest.iter().position(|b| !b.is_ascii_digit())?;
        *field = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
        rest = &rest[end..];
    }
    let [width, height, max] = fields;
    // One whitespace byte ends the header.
    let pixels = rest.get(1..)?;
    (max == 255 && pixels.len() as u64 == u64::from(width) * u64::from(height)).then_some((width, height, pixels))
}

/// The mean absolute difference of two equally long runs of gray levels.
fn mean_difference(a: &[u8], b: &[u8]) -> f64 {
    let total: u64 = a.iter().zip(b).map(|(&x, &y)| u64::from(x.abs_diff(y))).sum();
    total as f64 / a.len().max(1) as f64
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

    /// The files of `kind` written, in name order (a ZIP is unpacked beside itself first).
    fn files(&self, python: &Path, kind: Kind) -> anyhow::Result<Vec<PathBuf>> {
        match self {
            Produces::Pdf(file) => Ok(vec![file.clone()]),
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

fn files_in(dir: &Path, kind: Kind) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case(kind.extension())) {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
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

/// One table per kind of operation (rows of one table are measured one after another),
/// each followed by its notes.
fn print_tables(rows: &[Row]) {
    for table in rows.chunk_by(|a, b| a.table == b.table) {
        let Some(first) = table.first() else { continue };
        println!("\n{}: Paperchain against {}", first.table, first.tool);
        print_table(table, first.tool);
        let mut notes: Vec<&str> = table.iter().filter_map(|row| row.note).collect();
        notes.dedup();
        for note in notes {
            println!("Note: {note}");
        }
    }
}

fn print_table(rows: &[Row], tool: &str) {
    let header = [
        "operation".to_string(),
        "paperchain ms median (min)".into(),
        format!("{tool} ms median (min)"),
        format!("time paperchain/{tool}"),
        "paperchain peak RSS".into(),
        format!("{tool} peak RSS"),
        format!("output paperchain / {tool}"),
        format!("size paperchain/{tool}"),
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|row| {
            let (time_ratio, sizes, size_ratio) = match (&row.paperchain, &row.reference) {
                (Ok(ours), Ok(theirs)) => (
                    format!("{:.2}x", ours.median.as_secs_f64() / theirs.median.as_secs_f64()),
                    format!("{} / {}", size_text(ours.output_bytes), size_text(theirs.output_bytes)),
                    format!("{:.2}x", ours.output_bytes as f64 / theirs.output_bytes.max(1) as f64),
                ),
                _ => ("-".into(), "-".into(), "-".into()),
            };
            [
                row.operation.clone(),
                time_cell(&row.paperchain),
                time_cell(&row.reference),
                time_ratio,
                memory_cell(&row.paperchain),
                memory_cell(&row.reference),
                sizes,
                size_ratio,
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| cells.iter().map(|c| c[i].chars().count()).max().unwrap_or(0).max(header[i].chars().count()))
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, &w)| format!("{c:<w$}")).collect();
        println!("| {} |", padded.join(" | "));
    };
    line(&header);
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

/// A size in MiB, or in KiB below one MiB, where compressed outputs of small inputs land.
fn size_text(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes as f64 >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    }
}

/// The `p` quantile (0 to 1) of `times`, which must not be empty.
fn percentile(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `pdfinfo`'s page count of `pdf`.
fn pdf_pages(pdf: &Path) -> anyhow::Result<u32> {
    let info = Cmd::new("pdfinfo").arg(pdf).quiet().read_stdout()?;
    let count = info.lines().find_map(|l| l.strip_prefix("Pages:")).context("pdfinfo gave no page count")?;
    Ok(count.trim().parse()?)
}

/// The table of a warm server against a cold program: each side's count, p50 and p95 (and
/// max), then how much faster the warm p50 is.
fn print_warm_cold(sides: [(&str, &Result<Vec<Duration>, String>); 2], what: &str, target: &str) {
    println!("| side | {what} | p50 ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    for (name, times) in sides {
        match times {
            Ok(times) => println!(
                "| {name} | {} | {} | {} | {} |",
                times.len(),
                percentile(times, 0.5).as_millis(),
                percentile(times, 0.95).as_millis(),
                times.iter().max().map_or(0, Duration::as_millis)
            ),
            Err(e) => println!("| {name} | failed: {e} | | | |"),
        }
    }
    if let [(_, Ok(warm)), (_, Ok(cold))] = sides {
        println!(
            "Warm p50 is {:.1}x faster than cold{target}.",
            percentile(cold, 0.5).as_secs_f64() / percentile(warm, 0.5).as_secs_f64()
        );
    }
}

/// A child process killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `paperchain serve` on a free loopback port with `env` set, its output in `dir/serve.log`;
/// stopped when dropped.
struct Server {
    child: Killed,
    url: String,
    addr: std::net::SocketAddr,
}

impl Server {
    fn start(paperchain: &Path, dir: &Path, env: &[(&str, &str)]) -> anyhow::Result<Server> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let listen = format!("127.0.0.1:{port}");
        let log = dir.join("serve.log");
        let data = dir.join("data");
        let shown: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        eprintln!(
            "$ {}{} serve --listen {listen} --data-dir {} >{} 2>&1",
            shown.concat(),
            paperchain.display(),
            data.display(),
            log.display()
        );
        let file = std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut child = Killed(
            std::process::Command::new(paperchain)
                .args(["serve", "--listen", &listen, "--data-dir"])
                .arg(&data)
                .envs(env.iter().copied())
                .stdin(std::process::Stdio::null())
                .stdout(file.try_clone()?)
                .stderr(file)
                .spawn()
                .with_context(|| format!("starting {}", paperchain.display()))?,
        );
        let url = format!("http://{listen}");
        let health = Cmd::new("curl").args(["-sf", "--noproxy", "*", "-o", "/dev/null"]).arg(format!("{url}/healthz"));
        let start = Instant::now();
        while !health.succeeds() {
            if let Some(status) = child.0.try_wait()? {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                bail!("paperchain serve exited ({status}): {}", text.trim());
            }
            ensure!(start.elapsed() < Duration::from_secs(30), "paperchain serve did not answer at {url} in 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Server { child, url, addr: listen.parse()? })
    }

    /// The server's process id.
    fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// POSTs the JSON in `body` to `route`, the answer into `out`: the time it took; an
    /// answer other than 200 is an error with its body.
    fn post(&self, route: &str, body: &Path, out: &Path) -> anyhow::Result<Duration> {
        let start = Instant::now();
        let status = Cmd::new("curl")
            .args(["-s", "--noproxy", "*", "-H", "content-type: application/json", "-w", "%{http_code}", "-o"])
            .arg(out)
            .arg("--data-binary")
            .arg(format!("@{}", body.display()))
            .arg(format!("{}{route}", self.url))
            .quiet()
            .read_stdout()?;
        let elapsed = start.elapsed();
        ensure!(status.trim() == "200", "answered {status}: {}", std::fs::read_to_string(out).unwrap_or_default());
        Ok(elapsed)
    }
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
    fn reads_pdftoppm_gray_pgms() {
        let pgm = b"P5\n3 2\n255\n\x00\x10\x20\x30\x40\xff";
        assert_eq!(parse_pgm(pgm), Some((3, 2, &pgm[11..])));
        // Cut short, or 16-bit: not something to compare byte by byte.
        assert_eq!(parse_pgm(&pgm[..15]), None);
        assert_eq!(parse_pgm(b"P5 1 1 65535\n\x00\x00"), None);
        assert_eq!(parse_pgm(b"P6\n1 1\n255\n\x00\x00\x00"), None);
        assert_eq!(mean_difference(&[0, 10, 255], &[4, 10, 251]), 8.0 / 3.0);
    }

    #[test]
    fn sizes_in_kib_below_one_mib() {
        assert_eq!(size_text(2148), "2 KiB");
        assert_eq!(size_text(1_793_479), "1.7 MiB");
    }

    #[test]
    fn median_of_even_and_odd_runs() {
        let ms = |v: &[u64]| v.iter().map(|&m| Duration::from_millis(m)).collect::<Vec<_>>();
        let t = Timing::of(&ms(&[30, 10, 20]), None, 0);
        assert_eq!((t.median, t.min), (Duration::from_millis(20), Duration::from_millis(10)));
        assert_eq!(Timing::of(&ms(&[40, 10, 20, 30]), None, 0).median, Duration::from_millis(25));
    }
}
