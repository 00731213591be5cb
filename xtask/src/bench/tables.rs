//! Part of the `convert` group: `/v1/pdf/tables` against pdfplumber 0.11.9
//! (`page.extract_tables()`, its default settings) on every PDF of `corpus/tables`,
//! quality and speed in one run. Both sides' tables are scored by the same function
//! against the expected tables (`paperchain_testkit::table_score`: cells found,
//! neighbour-relation F1).
//!
//! The variety set's tables and reports (`paperchain_testkit::variety`: reportlab,
//! LibreOffice and Chromium, ruled, unruled, boxed, merged header cells) are scored the
//! same way and summed up per writer and table style, so a regression on one layout shows.
//!
//! Paperchain is timed as a child process (`paperchain call extract_pdf_tables`, its start
//! included); pdfplumber inside one Python process that has already imported it.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use paperchain_testkit::table_score::{Grid, TableCase, TableScore, best, table_cases};

use crate::cmd::Cmd;

/// Extracts the tables of every PDF given (argv[3:]) `runs` + 1 times (argv[2]), writes
/// the last tables to `<out>/<name>.json` (argv[1], a list of row lists, None as "") and
/// prints one line a file: `name<TAB>median ms`, or `name<TAB>error<TAB>message`.
const PDFPLUMBER: &str = r#"
import json, os, statistics, sys, time
import pdfplumber
out, runs, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
for path in files:
    name = os.path.basename(path)
    try:
        times = []
        for run in range(runs + 1):
            start = time.perf_counter()
            tables = []
            with pdfplumber.open(path) as pdf:
                for page in pdf.pages:
                    for table in page.extract_tables():
                        tables.append([[c if c is not None else "" for c in row] for row in table])
            if run > 0:
                times.append(time.perf_counter() - start)
        json.dump(tables, open(os.path.join(out, name + ".json"), "w"))
        print(f"{name}\t{statistics.median(times) * 1000:.3f}", flush=True)
    except Exception as e:
        print(f"{name}\terror\t{type(e).__name__}: {str(e)[:200]}", flush=True)
"#;

/// A side's result on one PDF: a score per expected table and the time, or what failed.
type Outcome = Result<(Vec<TableScore>, Duration), String>;

/// One PDF's results: a score per expected table, and the time.
pub(super) struct Row {
    case: TableCase,
    /// The variety set's writer and table style; `None` for the corpus.
    group: Option<String>,
    ours: Outcome,
    theirs: Outcome,
}

pub(super) struct Report {
    rows: Vec<Row>,
    runs: u32,
}

fn scores(case: &TableCase, found: &[Grid]) -> Vec<TableScore> {
    case.tables.iter().map(|expected| best(expected, found)).collect()
}

pub(super) fn measure(paperchain: &Path, python: &Path, runs: u32, dir: &Path) -> anyhow::Result<Report> {
    let ours_dir = dir.join("paperchain");
    let theirs_dir = dir.join("pdfplumber");
    for d in [&ours_dir, &theirs_dir] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let mut cases: Vec<(TableCase, Option<String>)> = table_cases().into_iter().map(|c| (c, None)).collect();
    cases.extend(variety_cases(&dir.join("variety"))?.into_iter().map(|(c, g)| (c, Some(g))));
    println!("bench: convert: tables, {} PDFs, pdfplumber", cases.len());
    let inputs: Vec<&Path> = cases.iter().map(|(c, _)| c.pdf.as_path()).collect();
    let mut theirs_times =
        super::markdown::run_reference(python, PDFPLUMBER, &theirs_dir, runs, &inputs).context("running pdfplumber")?;
    let mut rows = Vec::new();
    for (case, group) in cases {
        let name = case.name();
        println!("bench: convert: tables, {name}");
        let out = ours_dir.join(format!("{name}.json"));
        let cmd = Cmd::new(paperchain)
            .args(["call", "extract_pdf_tables", "--input", "-", "--out"])
            .arg(&out)
            .arg("--force")
            .arg("--file")
            .arg(format!("file={}", case.pdf.display()))
            .stdin("{}");
        let ours = super::markdown::time_runs(&cmd, runs)
            .and_then(|time| our_tables(&out).map(|found| (scores(&case, &found), time)));
        let theirs = match theirs_times.remove(&name) {
            Some(Ok(time)) => std::fs::read_to_string(theirs_dir.join(format!("{name}.json")))
                .map_err(|e| e.to_string())
                .and_then(|text| serde_json::from_str::<Vec<Grid>>(&text).map_err(|e| e.to_string()))
                .map(|found| (scores(&case, &found), time)),
            Some(Err(e)) => Err(e),
            None => Err("pdfplumber printed nothing for this file".into()),
        };
        rows.push(Row { case, group, ours, theirs });
    }
    Ok(Report { rows, runs })
}

/// The variety set's tables and reports, each with its `writer style` group.
fn variety_cases(dir: &Path) -> anyhow::Result<Vec<(TableCase, String)>> {
    use paperchain_testkit::variety::Kind;
    let cases = super::variety_set(dir, &[Kind::Tables, Kind::Reports])?;
    cases
        .iter()
        .map(|case| {
            let tables: Vec<Grid> = serde_json::from_value(case["tables"].clone())?;
            let group = format!(
                "{} {}",
                case["writer"].as_str().unwrap_or_default(),
                case["layout"]["table"].as_str().unwrap_or_default()
            );
            Ok((TableCase { pdf: dir.join(case["file"].as_str().unwrap_or_default()), tables }, group))
        })
        .collect()
}

fn our_tables(answer: &Path) -> Result<Vec<Grid>, String> {
    let text = std::fs::read_to_string(answer).map_err(|e| format!("{}: {e}", answer.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("the answer is not JSON: {e}"))?;
    let tables = json["tables"].as_array().ok_or("the answer has no `tables`")?;
    tables.iter().map(|t| serde_json::from_value(t["rows"].clone()).map_err(|e| e.to_string())).collect()
}

fn cell(outcome: &Outcome, i: usize) -> String {
    match outcome {
        Ok((scores, _)) => format!("{:.3} / {:.3}", scores[i].cells, scores[i].adjacency),
        Err(_) => "failed".into(),
    }
}

impl Report {
    pub(super) fn print(&self) {
        println!("\nconvert: /v1/pdf/tables against pdfplumber 0.11.9, scored against corpus/tables");
        println!(
            "| table | paperchain cells / adjacency | pdfplumber cells / adjacency | paperchain ms | pdfplumber ms |"
        );
        println!("| --- | --- | --- | --- | --- |");
        let ms = |outcome: &Outcome| match outcome {
            Ok((_, t)) => format!("{:.1}", t.as_secs_f64() * 1000.0),
            Err(_) => "-".into(),
        };
        for row in self.rows.iter().filter(|r| r.group.is_none()) {
            for i in 0..row.case.tables.len() {
                let (a, b) = if i == 0 { (ms(&row.ours), ms(&row.theirs)) } else { (String::new(), String::new()) };
                println!(
                    "| {}#{} | {} | {} | {a} | {b} |",
                    row.case.name(),
                    i + 1,
                    cell(&row.ours, i),
                    cell(&row.theirs, i)
                );
            }
        }
        // A failed file scores 0 on each of its tables.
        let mean = |rows: &[&Row], side: fn(&Row) -> &Outcome, pick: fn(&TableScore) -> f64| {
            let all: Vec<f64> = rows
                .iter()
                .flat_map(|r| match side(r) {
                    Ok((scores, _)) => scores.iter().map(pick).collect(),
                    Err(_) => vec![0.0; r.case.tables.len()],
                })
                .collect();
            all.iter().sum::<f64>() / all.len().max(1) as f64
        };
        let total = |rows: &[&Row], side: fn(&Row) -> &Outcome| {
            rows.iter().map(|r| side(r).as_ref().map_or(0.0, |(_, t)| t.as_secs_f64() * 1000.0)).sum::<f64>()
        };
        let line = |label: String, rows: &[&Row]| {
            println!(
                "| {label} | {:.3} / {:.3} | {:.3} / {:.3} | {:.0} total | {:.0} total |",
                mean(rows, |r| &r.ours, |s| s.cells),
                mean(rows, |r| &r.ours, |s| s.adjacency),
                mean(rows, |r| &r.theirs, |s| s.cells),
                mean(rows, |r| &r.theirs, |s| s.adjacency),
                total(rows, |r| &r.ours),
                total(rows, |r| &r.theirs)
            )
        };
        let corpus: Vec<&Row> = self.rows.iter().filter(|r| r.group.is_none()).collect();
        line(format!("mean of {} tables", corpus.iter().map(|r| r.case.tables.len()).sum::<usize>()), &corpus);
        let mut groups: Vec<&str> = self.rows.iter().filter_map(|r| r.group.as_deref()).collect();
        groups.sort_unstable();
        groups.dedup();
        if !groups.is_empty() {
            println!(
                "\nconvert: /v1/pdf/tables against pdfplumber 0.11.9 on the variety set, per writer and table style"
            );
            println!(
                "| writer, style | paperchain cells / adjacency | pdfplumber cells / adjacency | paperchain ms | pdfplumber ms |"
            );
            println!("| --- | --- | --- | --- | --- |");
            for group in groups {
                let rows: Vec<&Row> = self.rows.iter().filter(|r| r.group.as_deref() == Some(group)).collect();
                line(format!("{group} ({} tables)", rows.iter().map(|r| r.case.tables.len()).sum::<usize>()), &rows);
            }
        }
        println!(
            "Cells: share of the expected non-empty cells found in the best-matching table; adjacency: F1 of \
             neighbour relations (ICDAR 2013). Times: median of {} runs after a warm-up run; Paperchain as a child \
             process (start included), pdfplumber inside one warm Python process.",
            self.runs
        );
    }

    /// Paperchain failing on a file fails the bench; pdfplumber failing scores 0 there.
    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        self.rows
            .iter()
            .filter_map(|row| {
                let e = row.ours.as_ref().err()?;
                Some((true, format!("convert, tables {}: {e}", row.case.name())))
            })
            .collect()
    }
}
