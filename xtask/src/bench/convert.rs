//! The `convert` group: documents to data against the Python libraries people use for the
//! same job. For now, spreadsheets: `/v1/docs/xlsx-to-json` (`paperchain call xlsx_to_json`)
//! against openpyxl 3.1 reading the same workbook's values, on the corpus's largest
//! workbook and on a large one built for the run by `/v1/docs/xlsx-build` (every column
//! type). Both sides are a child process timed whole, Python's start and imports included
//! as the CLI's start is; after every run a checker compares the two answers cell by cell
//! (numbers by value, dates as ISO 8601), so neither side can win by reading less.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};

use paperchain_testkit::openpyxl::OPENPYXL_VALUES;

use super::{Outcome, Timing, size_text, time_cell};
use crate::cmd::Cmd;

/// Rows of the built workbook (eight columns, one of each type): 400,000 cells.
const BUILT_ROWS: usize = 50_000;

/// Compares Paperchain's answer (argv[1], `header_row: 0`) with openpyxl's (argv[2]);
/// prints the number of cells compared, or exits 1 naming the first difference.
const COMPARE: &str = r#"
import json, sys
ours = json.load(open(sys.argv[1]))["sheets"]
theirs = json.load(open(sys.argv[2]))
assert [s["name"] for s in ours] == [s["name"] for s in theirs], "worksheets differ"
n = 0
for a, b in zip(ours, theirs):
    assert len(a["rows"]) == len(b["rows"]), f'{a["name"]}: {len(a["rows"])} rows vs {len(b["rows"])}'
    for i, (ra, rb) in enumerate(zip(a["rows"], b["rows"])):
        va = list(ra.values())
        assert len(va) == len(rb), f'{a["name"]} row {i}: {len(va)} cells vs {len(rb)}'
        for x, y in zip(va, rb):
            same = x == y or (isinstance(x, (int, float)) and isinstance(y, (int, float)) and float(x) == float(y))
            assert same, f'{a["name"]} row {i}: {x!r} vs {y!r}'
            n += 1
print(n)
"#;

pub(super) struct Row {
    case: String,
    paperchain: Outcome,
    openpyxl: Outcome,
    /// Cells compared on every run, or why the answers differ.
    agreed: Result<String, String>,
}

pub(super) struct Report {
    rows: Vec<Row>,
    runs: u32,
}

pub(super) fn measure(
    paperchain: &Path,
    python: &Path,
    corpus: &Path,
    runs: u32,
    dir: &Path,
) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut books: Vec<(PathBuf, u64)> = Vec::new();
    for folder in ["docling/xlsx/sources", "office/xlsx"] {
        let folder = corpus.join(folder);
        for entry in std::fs::read_dir(&folder).with_context(|| format!("reading {}", folder.display()))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "xlsx") {
                books.push((path.clone(), std::fs::metadata(&path)?.len()));
            }
        }
    }
    let largest = books.into_iter().max_by_key(|(_, bytes)| *bytes).context("the corpus has no .xlsx workbooks")?;
    let built = build_workbook(paperchain, dir)?;
    let mut rows = Vec::new();
    for (i, book) in [largest.0, built].into_iter().enumerate() {
        let bytes = std::fs::metadata(&book)?.len();
        let case = format!("{} ({})", book.file_name().unwrap_or_default().to_string_lossy(), size_text(bytes));
        println!("bench: convert: xlsx-to-json, {case}");
        let ours_out = dir.join(format!("paperchain-{i}.json"));
        let theirs_out = dir.join(format!("openpyxl-{i}.json"));
        let ours = Cmd::new(paperchain)
            .args(["call", "xlsx_to_json", "--input", "-", "--out"])
            .arg(&ours_out)
            .arg("--force")
            .arg("--file")
            .arg(format!("file={}", book.display()))
            .stdin(r#"{"header_row":0}"#);
        let theirs = Cmd::new(python).arg("-c").arg(OPENPYXL_VALUES).arg(&book).arg(&theirs_out);
        let check = Cmd::new(python).arg("-c").arg(COMPARE).arg(&ours_out).arg(&theirs_out);
        let (mut ours_times, mut theirs_times) = (Vec::new(), Vec::new());
        let mut failure: [Option<String>; 2] = [None, None];
        let mut agreed: Option<Result<String, String>> = None;
        for run in 0..=runs {
            for (side, cmd, times) in [(0, &ours, &mut ours_times), (1, &theirs, &mut theirs_times)] {
                if failure[side].is_some() {
                    continue;
                }
                let start = Instant::now();
                match cmd.clone().quiet().run() {
                    Ok(()) if run > 0 => times.push(start.elapsed()),
                    Ok(()) => {}
                    Err(e) => failure[side] = Some(format!("{e:#}")),
                }
            }
            if failure.iter().all(Option::is_none) && !matches!(agreed, Some(Err(_))) {
                agreed = Some(match check.clone().quiet().read() {
                    Ok(cells) => Ok(format!("{} cells", cells.trim())),
                    Err(e) => Err(format!("{e:#}")),
                });
            }
        }
        let outcome = |times: &[Duration], failed: &Option<String>| match failed {
            Some(e) => Err(e.clone()),
            None => Ok(Timing::of(times, None, 0)),
        };
        rows.push(Row {
            case,
            paperchain: outcome(&ours_times, &failure[0]),
            openpyxl: outcome(&theirs_times, &failure[1]),
            agreed: agreed.unwrap_or_else(|| Err("not compared: a side failed".into())),
        });
    }
    Ok(Report { rows, runs })
}

/// A workbook of [`BUILT_ROWS`] rows with one column of every type, built by the route.
fn build_workbook(paperchain: &Path, dir: &Path) -> anyhow::Result<PathBuf> {
    let mut rows = String::new();
    for i in 0..BUILT_ROWS {
        if i > 0 {
            rows.push(',');
        }
        let day = 1 + i % 28;
        let month = 1 + (i / 28) % 12;
        write!(
            rows,
            r#"["item {i}",{}.25,{i},"2024-{month:02}-{day:02}","2024-{month:02}-{day:02}T{:02}:30:00",{},{}.99,0.{}]"#,
            i % 1000,
            i % 24,
            i % 2 == 0,
            i % 500,
            i % 100
        )?;
    }
    let columns = r#"[{"name":"Item","type":"string"},{"name":"Weight","type":"number"},{"name":"Count","type":"integer"},
        {"name":"Day","type":"date"},{"name":"When","type":"datetime"},{"name":"Paid","type":"boolean"},
        {"name":"Price","type":"currency"},{"name":"Share","type":"percent"}]"#;
    let input = dir.join("build.json");
    std::fs::write(&input, format!(r#"{{"sheets":[{{"name":"Data","columns":{columns},"rows":[{rows}]}}]}}"#))?;
    let book = dir.join("built-50000-rows.xlsx");
    Cmd::new(paperchain)
        .args(["call", "build_xlsx", "--input"])
        .arg(&input)
        .arg("--out")
        .arg(&book)
        .arg("--force")
        .quiet()
        .run()
        .context("building the large workbook")?;
    ensure!(book.is_file(), "build_xlsx wrote no {}", book.display());
    Ok(book)
}

impl Report {
    pub(super) fn print(&self) {
        println!("\nconvert: xlsx-to-json (paperchain call) against openpyxl 3.1.5 (data_only), both a child process");
        println!(
            "| workbook | paperchain ms median (min) | openpyxl ms median (min) | openpyxl/paperchain | answers |"
        );
        println!("| --- | --- | --- | --- | --- |");
        for row in &self.rows {
            let speedup = match (&row.paperchain, &row.openpyxl) {
                (Ok(ours), Ok(theirs)) => format!("{:.1}x", theirs.median.as_secs_f64() / ours.median.as_secs_f64()),
                _ => "-".into(),
            };
            let agreed = match &row.agreed {
                Ok(cells) => format!("agree ({cells})"),
                Err(_) => "DIFFER".into(),
            };
            println!(
                "| {} | {} | {} | {speedup} | {agreed} |",
                row.case,
                time_cell(&row.paperchain),
                time_cell(&row.openpyxl)
            );
        }
        println!(
            "Median (minimum) wall time of {} runs after one warm-up run; the speed-up is openpyxl's time over \
             Paperchain's. Both answers are compared cell by cell after every run.",
            self.runs
        );
    }

    /// `(whether Paperchain is at fault, what failed)`, for the bench's failure list.
    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        let mut failures = Vec::new();
        for row in &self.rows {
            if let Err(e) = &row.paperchain {
                failures.push((true, format!("convert, {}: paperchain: {e}", row.case)));
            }
            if let Err(e) = &row.openpyxl {
                failures.push((false, format!("convert, {}: openpyxl: {e}", row.case)));
            }
            if let (Ok(_), Ok(_), Err(e)) = (&row.paperchain, &row.openpyxl, &row.agreed) {
                failures.push((true, format!("convert, {}: the answers differ: {e}", row.case)));
            }
        }
        failures
    }
}
