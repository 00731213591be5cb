//! The conversion routes on the variety set (`paperchain_testkit::variety`): documents
//! written at test time by reportlab, LibreOffice and Chromium in layouts nobody tuned the
//! routes to, each with its exact ground truth. Every file must pass: there are no
//! per-file exceptions, and a failure prints the score per writer and layout dimension so
//! the layout that broke shows.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common;

use common::route::call;
use paperchain_engine::Context;
use paperchain_testkit::b64;
use paperchain_testkit::markdown_score::{score, text_similarity};
use paperchain_testkit::table_score::{Grid, best};
use paperchain_testkit::variety::{self, Kind, SEED};
use serde_json::{Value, json};

use crate::docs_markdown::markdown_of;
use crate::pdf_tables::{grids, tables_of};
use crate::pdf_to_docx::{docx_of, text_of};

/// Cases per writer: 40 statements each (120 files), reports and tables 20 each.
const PER_WRITER: usize = 40;

fn generate(dir: &Path, kinds: &[Kind]) -> Vec<Value> {
    let manifest = variety::generate(dir, SEED, PER_WRITER, kinds);
    serde_json::from_slice(&std::fs::read(manifest).expect("the manifest is written")).expect("the manifest is JSON")
}

/// Passes and totals per writer and per layout dimension's value.
#[derive(Default)]
struct Tally(BTreeMap<String, (usize, usize)>);

impl Tally {
    fn add(&mut self, case: &Value, passed: bool) {
        let mut keys = vec![format!("writer={}", case["writer"].as_str().unwrap())];
        for (k, v) in case["layout"].as_object().unwrap() {
            keys.push(format!("{k}={}", v.as_str().map_or_else(|| v.to_string(), str::to_string)));
        }
        for key in keys {
            let entry = self.0.entry(key).or_default();
            entry.0 += usize::from(passed);
            entry.1 += 1;
        }
    }

    fn table(&self) -> String {
        self.0.iter().map(|(k, (p, n))| format!("  {k}: {p}/{n}\n")).collect()
    }
}

fn cents(value: &Value) -> Option<i64> {
    match value {
        Value::Null => None,
        Value::String(s) => Some((s.parse::<f64>().unwrap() * 100.0).round() as i64),
        Value::Number(n) => Some((n.as_f64().unwrap() * 100.0).round() as i64),
        other => panic!("not an amount: {other}"),
    }
}

/// What is wrong with the route's answer for one statement, if anything: every transaction
/// with its date, amount and printed balance, in order; the printed opening and closing
/// balances; and the balance check wherever the statement prints enough to make it.
fn statement_errors(case: &Value, answer: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let want = case["transactions"].as_array().unwrap();
    let got = answer["transactions"].as_array().unwrap();
    let row = |t: &Value| (t["date"].as_str().unwrap().to_string(), cents(&t["amount"]), cents(&t["balance"]));
    let (want, got): (Vec<_>, Vec<_>) = (want.iter().map(row).collect(), got.iter().map(row).collect());
    if want != got {
        let missing: Vec<_> = want.iter().filter(|w| !got.contains(w)).take(3).collect();
        let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).take(3).collect();
        errors.push(format!("{} of {} transactions; missing {missing:?}, extra {extra:?}", got.len(), want.len()));
    }
    let summary = &answer["summary"];
    for (end, field) in [("opening", "opening_balance"), ("closing", "closing_balance")] {
        if let Some(printed) = cents(&case[end])
            && (cents(&summary[field]) != Some(printed) || summary[format!("{field}_printed")] != json!(true))
        {
            errors.push(format!("{field}: {} (printed {printed})", summary[field]));
        }
    }
    let running = case["layout"]["balance"] == "running";
    let both_ends = !case["opening"].is_null() && !case["closing"].is_null();
    let expected = if running || both_ends { json!(true) } else { Value::Null };
    if summary["reconciles"] != expected {
        errors.push(format!("reconciles {} where {expected} was due", summary["reconciles"]));
    }
    errors
}

#[tokio::test]
async fn every_statement_of_the_variety_set_is_read_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let cases = generate(dir.path(), &[Kind::Statements]);
    assert_eq!(cases.len(), 3 * PER_WRITER);
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for case in &cases {
        let file = case["file"].as_str().unwrap();
        let pdf = std::fs::read(dir.path().join(file)).unwrap();
        let body = json!({ "file": { "data": b64(&pdf), "filename": file } });
        let errors = match call(&Context::new(), "/v1/pdf/bank-statement", body).await {
            Ok(answer) => statement_errors(case, &answer),
            Err(e) => vec![format!("refused: {e}")],
        };
        tally.add(case, errors.is_empty());
        if !errors.is_empty() {
            failures.push(format!("{file} {}: {}", case["layout"], errors.join("; ")));
        }
    }
    // The set covers what it claims to: every writer and every value of every dimension.
    for key in [
        "writer=reportlab",
        "writer=libreoffice",
        "writer=chromium",
        "amounts=debit_credit",
        "amounts=signed",
        "balance=none",
        "pages=two",
        "numbers=space",
        "numbers=apostrophe",
        "negatives=trailing",
        "negatives=parentheses",
        "currency=suffix",
        "header=boxed",
        "header=underlined",
        "ends=both",
        "ends=none",
        "date_format=MMM DD, YYYY",
        "date_format=DD-MMM-YY",
        "date_format=YYYY-MM-DD",
        "date_format=DD.MM.YYYY",
        "date_format=MM/DD/YYYY",
    ] {
        assert!(tally.0.get(key).is_some_and(|(_, n)| *n >= 3), "the set has fewer than 3 cases of {key}");
    }
    eprintln!("bank-statement on {} variety statements, read exactly per layout:\n{}", cases.len(), tally.table());
    assert!(failures.is_empty(), "{} of {} statements failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// Passes and scores per writer and table style.
fn by_layout(scores: &[(String, String, f64)]) -> String {
    let mut groups: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for (writer, style, s) in scores {
        groups.entry((writer.clone(), style.clone())).or_default().push(*s);
    }
    groups
        .iter()
        .map(|((w, t), v)| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let min = v.iter().copied().fold(f64::MAX, f64::min);
            format!("  {w:12} {t:14} {:2} files  mean {mean:.3}  min {min:.3}\n", v.len())
        })
        .collect()
}

#[tokio::test]
async fn word_files_of_the_variety_reports_keep_every_word_in_reading_order() {
    let dir = tempfile::tempdir().unwrap();
    let cases = generate(dir.path(), &[Kind::Reports]);
    let mut scores = Vec::new();
    let mut low = Vec::new();
    for case in &cases {
        let file = case["file"].as_str().unwrap();
        let (read, _) = docx_of(&std::fs::read(dir.path().join(file)).unwrap(), json!({})).await;
        let s = text_similarity(&text_of(&read), case["text"].as_str().unwrap());
        if s < 0.9 {
            low.push(format!("{file} {}: {s:.3}", case["layout"]));
        }
        scores.push((
            case["writer"].as_str().unwrap().to_string(),
            case["layout"]["table"].as_str().unwrap().to_string(),
            s,
        ));
    }
    let mean = scores.iter().map(|s| s.2).sum::<f64>() / scores.len() as f64;
    let table = by_layout(&scores);
    eprintln!("to-docx on {} variety reports: mean text similarity {mean:.3}\n{table}", scores.len());
    assert!(low.is_empty(), "below 0.9:\n{}\n{table}", low.join("\n"));
    assert!(mean >= 0.97, "mean text similarity {mean:.3} < 0.97\n{table}");
}

/// The lowest mean share of cells each writer's tables of a style may score: what they
/// score now, less about 0.03. Fully ruled tables (boxed, merged header cells) are read
/// nearly whole; tables with a rule under the header only (ruled) or none are found by the
/// alignment of their text, where a left-aligned label column beside right-aligned figures
/// still joins into one cell.
fn table_floor(writer: &str, style: &str) -> f64 {
    match (writer, style) {
        ("reportlab", "boxed") => 0.97,
        ("reportlab", "merged_header") => 0.95,
        ("chromium", "boxed") => 0.94,
        ("chromium", "merged_header") => 0.92,
        ("libreoffice", "boxed") => 0.88,
        ("libreoffice", "merged_header") => 0.85,
        ("libreoffice", "ruled") => 0.8,
        ("libreoffice", "unruled") => 0.73,
        ("chromium", "ruled") => 0.56,
        ("chromium", "unruled") => 0.52,
        _ => 0.5,
    }
}

#[tokio::test]
async fn the_variety_tables_are_found_with_their_cells() {
    let dir = tempfile::tempdir().unwrap();
    let cases = generate(dir.path(), &[Kind::Tables, Kind::Reports]);
    let mut scores = Vec::new();
    for case in &cases {
        let file = case["file"].as_str().unwrap();
        let found = grids(&tables_of(&std::fs::read(dir.path().join(file)).unwrap(), file).await);
        for expected in case["tables"].as_array().unwrap() {
            let expected: Grid = serde_json::from_value(expected.clone()).unwrap();
            let s = best(&expected, &found);
            scores.push((
                case["writer"].as_str().unwrap().to_string(),
                case["layout"]["table"].as_str().unwrap().to_string(),
                s.cells,
            ));
        }
    }
    let table = by_layout(&scores);
    eprintln!("tables on the variety set, share of cells found:\n{table}");
    let mut groups: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for (w, t, s) in &scores {
        groups.entry((w.as_str(), t.as_str())).or_default().push(*s);
    }
    let failures: Vec<String> = groups
        .iter()
        .filter_map(|((w, t), v)| {
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            (mean < table_floor(w, t)).then(|| format!("{w} {t}: {mean:.3} < {:.2}", table_floor(w, t)))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}\n{table}");
}

#[tokio::test]
async fn markdown_of_the_variety_reports_keeps_their_text_and_headings() {
    let dir = tempfile::tempdir().unwrap();
    let cases = generate(dir.path(), &[Kind::Reports]);
    let (mut text, mut headings) = (Vec::new(), Vec::new());
    for case in &cases {
        let file = case["file"].as_str().unwrap();
        let answer = markdown_of(&std::fs::read(dir.path().join(file)).unwrap(), file).await;
        let truth = std::fs::read_to_string(dir.path().join(file.replace(".pdf", ".md"))).unwrap();
        let s = score(answer["markdown"].as_str().unwrap(), &truth);
        let group = format!("{}-column", case["layout"]["columns"]);
        text.push((case["writer"].as_str().unwrap().to_string(), group.clone(), s.text));
        headings.push((case["writer"].as_str().unwrap().to_string(), group, s.headings));
    }
    let mean = |v: &[(String, String, f64)]| v.iter().map(|s| s.2).sum::<f64>() / v.len() as f64;
    let (text_table, headings_table) = (by_layout(&text), by_layout(&headings));
    eprintln!(
        "to-markdown on {} variety reports: text {:.3}, headings {:.3}\ntext:\n{text_table}headings:\n{headings_table}",
        cases.len(),
        mean(&text),
        mean(&headings)
    );
    assert!(mean(&text) >= MARKDOWN_TEXT, "mean text {:.3} < {MARKDOWN_TEXT}\n{text_table}", mean(&text));
    assert!(
        mean(&headings) >= MARKDOWN_HEADINGS,
        "mean heading F1 {:.3} < {MARKDOWN_HEADINGS}\n{headings_table}",
        mean(&headings)
    );
}

/// The Markdown floors on the variety reports: what they score now, less about 0.02.
const MARKDOWN_TEXT: f64 = 0.97;
const MARKDOWN_HEADINGS: f64 = 0.97;
