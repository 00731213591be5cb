//! Part of the `convert` group: `/v1/docs/to-markdown` against MarkItDown 0.1.9 on every
//! input of docling's corpus (PDF, DOCX, PPTX, XLSX, HTML, EPUB, CSV), quality and speed
//! in one run. Both outputs are scored by the same function against docling's ground truth
//! (`paperchain_testkit::markdown_score`: text similarity, heading F1, table count).
//!
//! The variety set's reports (`paperchain_testkit::variety`: reportlab, LibreOffice from
//! Word, Chromium, on one or two columns) are scored the same way against the Markdown of
//! what was written, summed up per writer and column count.
//!
//! Paperchain is timed as a child process (`paperchain call convert_to_markdown`, its start
//! included); MarkItDown inside one Python process that has already imported it, so its
//! times leave out Python's start and imports. The comparison favours MarkItDown.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use paperchain_testkit::markdown_score::{DoclingCase, Score, docling_cases, score};

use crate::cmd::Cmd;

/// Converts every file given (argv[3:]) `runs` + 1 times (argv[2]) with one MarkItDown,
/// writes the last Markdown to `<out>/<name>.md` (argv[1]) and prints one line a file:
/// `name<TAB>median ms`, or `name<TAB>error<TAB>message`.
const MARKITDOWN: &str = r#"
import os, statistics, sys, time
from markitdown import MarkItDown
out, runs, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
md = MarkItDown()
for path in files:
    name = os.path.basename(path)
    try:
        times = []
        for run in range(runs + 1):
            start = time.perf_counter()
            text = md.convert(path).text_content
            if run > 0:
                times.append(time.perf_counter() - start)
        open(os.path.join(out, name + ".md"), "w").write(text)
        print(f"{name}\t{statistics.median(times) * 1000:.3f}", flush=True)
    except Exception as e:
        print(f"{name}\terror\t{type(e).__name__}: {str(e)[:200]}", flush=True)
"#;

/// One file's results.
pub(super) struct Row {
    case: DoclingCase,
    ours: Result<(Score, Duration), String>,
    theirs: Result<(Score, Duration), String>,
}

pub(super) struct Report {
    rows: Vec<Row>,
    runs: u32,
}

pub(super) fn measure(paperchain: &Path, python: &Path, runs: u32, dir: &Path) -> anyhow::Result<Report> {
    let ours_dir = dir.join("paperchain");
    let theirs_dir = dir.join("markitdown");
    for d in [&ours_dir, &theirs_dir] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let mut cases = docling_cases();
    cases.extend(variety_cases(&dir.join("variety"))?);
    println!("bench: convert: to-markdown, {} files, MarkItDown", cases.len());
    let inputs: Vec<&Path> = cases.iter().map(|c| c.input.as_path()).collect();
    let mut theirs_times =
        run_reference(python, MARKITDOWN, &theirs_dir, runs, &inputs).context("running MarkItDown")?;
    let mut rows = Vec::new();
    for case in cases {
        let name = case.name();
        println!("bench: convert: to-markdown, {name}");
        let truth = std::fs::read_to_string(&case.truth).with_context(|| format!("{}", case.truth.display()))?;
        let out = ours_dir.join(format!("{name}.json"));
        let cmd = Cmd::new(paperchain)
            .args(["call", "convert_to_markdown", "--input", "-", "--out"])
            .arg(&out)
            .arg("--force")
            .arg("--file")
            .arg(format!("file={}", case.input.display()))
            .stdin("{}");
        let ours = time_runs(&cmd, runs).and_then(|time| markdown_of(&out).map(|md| (score(&md, &truth), time)));
        let theirs = match theirs_times.remove(&name) {
            Some(Ok(time)) => std::fs::read_to_string(theirs_dir.join(format!("{name}.md")))
                .map(|md| (score(&md, &truth), time))
                .map_err(|e| e.to_string()),
            Some(Err(e)) => Err(e),
            None => Err("MarkItDown printed nothing for this file".into()),
        };
        rows.push(Row { case, ours, theirs });
    }
    Ok(Report { rows, runs })
}

/// The variety set's reports, grouped as `variety <writer> <n>-column` (the group stands
/// where a corpus case has its format).
fn variety_cases(dir: &Path) -> anyhow::Result<Vec<DoclingCase>> {
    use paperchain_testkit::variety::Kind;
    let cases = super::variety_set(dir, &[Kind::Reports])?;
    let mut groups: Vec<&'static str> = Vec::new();
    Ok(cases
        .iter()
        .map(|case| {
            let file = case["file"].as_str().unwrap_or_default();
            let group = format!(
                "variety {} {}-column",
                case["writer"].as_str().unwrap_or_default(),
                case["layout"]["columns"].as_u64().unwrap_or(1)
            );
            // A handful of group names, kept for the report's lifetime.
            let format = match groups.iter().find(|g| **g == group) {
                Some(g) => *g,
                None => {
                    groups.push(Box::leak(group.into_boxed_str()));
                    groups[groups.len() - 1]
                }
            };
            DoclingCase { format, input: dir.join(file), truth: dir.join(file.replace(".pdf", ".md")) }
        })
        .collect())
}

/// Runs a reference tool's script (`python -c script out_dir runs files…`), which writes
/// its outputs to `out_dir`, and reads the timings it prints.
pub(super) fn run_reference(
    python: &Path,
    script: &str,
    out_dir: &Path,
    runs: u32,
    files: &[&Path],
) -> anyhow::Result<BTreeMap<String, Result<Duration, String>>> {
    let listing = Cmd::new(python)
        .arg("-c")
        .arg(script)
        .arg(out_dir)
        .arg(runs.to_string())
        .args(files.iter().map(|f| f.as_os_str().to_owned()))
        .read()?;
    Ok(reference_times(&listing))
}

/// What a reference tool's script printed, a line a file (`name<TAB>median ms`, or
/// `name<TAB>error<TAB>message`), by file name.
fn reference_times(listing: &str) -> BTreeMap<String, Result<Duration, String>> {
    let mut times = BTreeMap::new();
    for line in listing.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(name), Some(ms)) = (parts.next(), parts.next()) else { continue };
        let outcome = match (ms, parts.next()) {
            ("error", Some(why)) => Err(why.to_string()),
            (ms, _) => ms.parse::<f64>().map(|ms| Duration::from_secs_f64(ms / 1000.0)).map_err(|e| e.to_string()),
        };
        times.insert(name.to_string(), outcome);
    }
    times
}

/// Runs `cmd` once to warm up, then `runs` times; the median time, or what failed.
pub(super) fn time_runs(cmd: &Cmd, runs: u32) -> Result<Duration, String> {
    let mut times = Vec::new();
    for run in 0..=runs {
        let start = Instant::now();
        cmd.clone().quiet().run().map_err(|e| format!("{e:#}"))?;
        if run > 0 {
            times.push(start.elapsed());
        }
    }
    Ok(median(&mut times))
}

fn markdown_of(answer: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(answer).map_err(|e| format!("{}: {e}", answer.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("the answer is not JSON: {e}"))?;
    json["markdown"].as_str().map(str::to_string).ok_or_else(|| "the answer has no `markdown`".into())
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    let mid = times.len() / 2;
    if times.len().is_multiple_of(2) { (times[mid - 1] + times[mid]) / 2 } else { times[mid] }
}

fn cell(outcome: &Result<(Score, Duration), String>) -> String {
    match outcome {
        Ok((s, _)) => format!("{:.3} / {:.2} / {:.2}", s.text, s.headings, s.tables),
        Err(_) => "failed".into(),
    }
}

fn ms(outcome: &Result<(Score, Duration), String>) -> String {
    match outcome {
        Ok((_, t)) => format!("{:.1}", t.as_secs_f64() * 1000.0),
        Err(_) => "-".into(),
    }
}

impl Report {
    pub(super) fn print(&self) {
        println!("\nconvert: to-markdown against MarkItDown 0.1.9, scored against docling's ground truth");
        println!(
            "| file | paperchain text / headings / tables | MarkItDown text / headings / tables | paperchain ms | MarkItDown ms |"
        );
        println!("| --- | --- | --- | --- | --- |");
        for row in self.rows.iter().filter(|r| !r.case.format.starts_with("variety")) {
            println!(
                "| {} | {} | {} | {} | {} |",
                row.case.name(),
                cell(&row.ours),
                cell(&row.theirs),
                ms(&row.ours),
                ms(&row.theirs)
            );
        }
        println!(
            "\n| format | files | paperchain mean text | MarkItDown mean text | paperchain total ms | MarkItDown total ms | speed-up |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        let mut formats: Vec<&str> = self.rows.iter().map(|r| r.case.format).collect();
        formats.sort_by_key(|f| f.starts_with("variety"));
        let mut seen = Vec::new();
        formats.retain(|f| {
            !seen.contains(f) && {
                seen.push(*f);
                true
            }
        });
        for format in formats {
            let rows: Vec<&Row> = self.rows.iter().filter(|r| r.case.format == format).collect();
            // A failed conversion scores 0 and adds no time.
            let mean = |side: fn(&Row) -> &Result<(Score, Duration), String>| {
                rows.iter().map(|r| side(r).as_ref().map_or(0.0, |(s, _)| s.text)).sum::<f64>() / rows.len() as f64
            };
            let total = |side: fn(&Row) -> &Result<(Score, Duration), String>| {
                rows.iter().map(|r| side(r).as_ref().map_or(0.0, |(_, t)| t.as_secs_f64() * 1000.0)).sum::<f64>()
            };
            let (ours_ms, theirs_ms) = (total(|r| &r.ours), total(|r| &r.theirs));
            println!(
                "| {format} | {} | {:.3} | {:.3} | {ours_ms:.0} | {theirs_ms:.0} | {:.1}x |",
                rows.len(),
                mean(|r| &r.ours),
                mean(|r| &r.theirs),
                theirs_ms / ours_ms.max(0.001)
            );
        }
        println!(
            "Text: 2 x matching words / words of both (order kept); headings: F1 of heading texts; tables: smaller over \
             larger table count. Times: median of {} runs after a warm-up run; Paperchain as a child process (start \
             included), MarkItDown inside one warm Python process.",
            self.runs
        );
    }

    /// `(whether Paperchain is at fault, what failed)`; MarkItDown failing on a file is
    /// reported in the table (it scores 0 there), not as a bench failure.
    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        self.rows
            .iter()
            .filter_map(|row| {
                let e = row.ours.as_ref().err()?;
                Some((true, format!("convert, to-markdown {}: {e}", row.case.name())))
            })
            .collect()
    }
}
