//! The fuzzer catches each kind of defect and saves it: a route that fails on request
//! (`--selftest`) panics, fails internally, aborts, hangs and fills memory, and each shows
//! as the finding it is. And its seed bodies are valid bodies of their routes, so the
//! mutations start from inputs that reach the routes' operations.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use paperchain_fuzz::mutate::Rng;
use paperchain_fuzz::seeds::{self, PoolFile, Pools};
use paperchain_fuzz::{Case, Verdict};
use serde_json::{Value, json};

const FUZZ: &str = env!("CARGO_BIN_EXE_paperchain-fuzz");

fn corpus() -> PathBuf {
    let dir = std::env::var_os("PAPERCHAIN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    assert!(dir.join("pdf").is_dir(), "the corpus is missing at {}; set PAPERCHAIN_CORPUS", dir.display());
    dir
}

fn write_case(dir: &Path, act: &str) -> PathBuf {
    let path = dir.join(format!("{act}.json"));
    let case = Case { route: "fuzz_selftest".into(), body: serde_json::to_vec(&json!({ "act": act })).unwrap() };
    std::fs::write(&path, case.to_record(None).to_string()).unwrap();
    path
}

fn replay(args: &[&str], file: &Path) -> Output {
    Command::new(FUZZ).arg("replay").arg("--selftest").args(args).arg(file).output().unwrap()
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn replay_tells_each_kind_of_defect_from_a_proper_answer() {
    let dir = tempfile::tempdir().unwrap();
    let ok = replay(&[], &write_case(dir.path(), "ok"));
    assert!(ok.status.success(), "{}", text(&ok));
    assert!(text(&ok).contains("answered: ok"), "{}", text(&ok));

    let invalid = replay(&[], &write_case(dir.path(), "nonsense"));
    assert!(invalid.status.success(), "an input error is a proper answer: {}", text(&invalid));
    assert!(text(&invalid).contains("answered: invalid_input@/act"), "{}", text(&invalid));

    let panic = replay(&[], &write_case(dir.path(), "panic"));
    assert_eq!(panic.status.code(), Some(1), "{}", text(&panic));
    assert!(text(&panic).contains("panic: panicked at fuzz/src/selftest.rs"), "{}", text(&panic));

    let internal = replay(&[], &write_case(dir.path(), "internal"));
    assert_eq!(internal.status.code(), Some(1), "{}", text(&internal));
    assert!(text(&internal).contains("internal: internal: asked to fail"), "{}", text(&internal));

    let hang = replay(&["--time-cap", "2"], &write_case(dir.path(), "hang"));
    assert_eq!(hang.status.code(), Some(86), "{}", text(&hang));
    assert!(text(&hang).contains(r#""kind":"hang""#), "{}", text(&hang));

    let memory = replay(&["--memory-cap-mib", "400"], &write_case(dir.path(), "memory"));
    assert_eq!(memory.status.code(), Some(86), "{}", text(&memory));
    assert!(text(&memory).contains(r#""kind":"memory""#), "{}", text(&memory));
}

#[test]
fn a_fuzz_run_saves_each_defect_once_and_goes_on_after_a_worker_dies() {
    let regressions = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let output = Command::new(FUZZ)
        .args(["--selftest", "--routes", "fuzz_selftest", "--seconds", "12", "--seed", "7"])
        .arg("--corpus")
        .arg(corpus())
        .arg("--regressions")
        .arg(regressions.path())
        .arg("--work")
        .arg(work.path())
        .output()
        .unwrap();
    let said = text(&output);
    assert_eq!(output.status.code(), Some(1), "new findings fail the run: {said}");
    let mut saved: Vec<String> = std::fs::read_dir(regressions.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    saved.sort();
    let kinds: Vec<&str> = saved.iter().map(|name| name.split('-').next().unwrap()).collect();
    // One file per defect, however often it was found again.
    assert_eq!(kinds, ["crash", "internal", "panic"], "{saved:?}\n{said}");
    for name in &saved {
        let record: Value = serde_json::from_slice(&std::fs::read(regressions.path().join(name)).unwrap()).unwrap();
        assert_eq!(record["route"], "fuzz_selftest");
        let act = record["body"]["act"].as_str().unwrap();
        let expected = match record["finding"].as_str().unwrap() {
            "crash" => "abort",
            kind => kind,
        };
        assert_eq!(act, expected, "{record}");
    }
    // Workers were started again after each abort, and the runs of all of them counted.
    let workers: u64 = said
        .lines()
        .find_map(|line| line.split(" worker(s)").next().filter(|_| line.contains(" worker(s)")))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no worker count in: {said}"));
    assert!(workers >= 2, "{said}");
    let runs: u64 = said
        .lines()
        .find_map(|line| line.strip_prefix("| fuzz_selftest | "))
        .and_then(|rest| rest.split(" |").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no runs in: {said}"));
    assert!(runs > workers, "{said}");
}

/// A known-good file of each kind, so that every seed is run as the valid body it is meant
/// to be.
fn good_pools(corpus: &Path) -> Pools {
    let mut pools = Pools::default();
    let first = |dir: &str, ext: &str| -> PoolFile {
        let mut files: Vec<PathBuf> = std::fs::read_dir(corpus.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        files.sort();
        let path = files.first().unwrap_or_else(|| panic!("no .{ext} in {dir}"));
        PoolFile { name: path.file_name().unwrap().to_string_lossy().into_owned(), bytes: std::fs::read(path).unwrap() }
    };
    let pdf = PoolFile {
        name: "pdflatex-4-pages.pdf".into(),
        bytes: std::fs::read(corpus.join("pdf/sample-files/pdflatex-4-pages.pdf")).unwrap(),
    };
    pools.add("pdf", pdf.clone());
    pools.add("markdown", pdf);
    let docx = first("office/docx", "docx");
    pools.add("docx", docx.clone());
    pools.add("office", docx);
    pools.add("xlsx", first("office/xlsx", "xlsx"));
    pools.add("pptx", first("office/pptx", "pptx"));
    let pdf = |kind: &'static str, relative: &str, pools: &mut Pools| {
        let path = corpus.join(relative);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        pools.add(kind, PoolFile { name, bytes: std::fs::read(&path).unwrap() });
    };
    pdf("form_pdf", "pdf/sample-files/libreoffice-form.pdf", &mut pools);
    pdf("attached_pdf", "pdf/sample-files/with-attachment.pdf", &mut pools);
    pdf("table_pdf", "tables/camelot/12s0324.pdf", &mut pools);
    pools
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_seed_body_is_a_valid_body_of_its_route() {
    let corpus = corpus();
    let catalog = Arc::new(paperchain_fuzz::catalog(false));
    let ctx = paperchain_fuzz::offline_context();
    let mut pools = good_pools(&corpus);
    seeds::add_derived(&catalog, &ctx, &mut pools).await.unwrap();
    let mut rng = Rng::new(1);
    let mut wrong = Vec::new();
    assert!(!pools.of("statement_pdf").is_empty(), "Chromium drew no statement");
    assert!(!pools.bodies("fill_pdf_form").is_empty(), "no form body was made");
    for route in catalog.routes() {
        let operation = route.info().operation;
        for template in [seeds::templates(operation), pools.bodies(operation).to_vec()].concat() {
            let body = seeds::fill(&mut rng, template, &pools);
            let case = Case { route: operation.into(), body: serde_json::to_vec(&body).unwrap() };
            let verdict = paperchain_fuzz::run_case(&catalog, &ctx, &case).await;
            // Chain routes reach their closed upstream (503), URL inputs the fetcher's refusal
            // of a loopback address; documents are answered.
            let fine = match &verdict {
                Verdict::Answered(answer) => {
                    answer == "ok" || answer == "unavailable" || answer.starts_with("blocked_target@/url")
                }
                Verdict::Finding(_) => false,
            };
            if !fine {
                wrong.push(format!("{operation}: {verdict:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "seeds that are not valid bodies:\n{}", wrong.join("\n"));
}
