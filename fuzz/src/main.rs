//! `paperchain-fuzz`: the supervisor (the default), its worker, and the replay of saved
//! cases. `cargo xtask fuzz` builds and runs it.
//!
//! The supervisor starts a worker, which fuzzes in process until the time is up. A worker
//! that dies (abort, signal) or that its watchdog ends (a call over the time cap, memory
//! over the cap) leaves the case it was running in `current.json`; the supervisor saves it
//! as a regression input and starts a new worker. Panics, internal errors and answers
//! whose files do not open are saved by the worker itself, which goes on.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use base64::Engine as _;
use clap::{Args, Parser, Subcommand};
use paperchain_fuzz::mutate::{self, Rng};
use paperchain_fuzz::seeds::{self, Pools};
use paperchain_fuzz::{Case, Finding, Verdict};
use serde_json::{Value, json};

/// The exit code of a worker its watchdog ended (`died.json` says why).
const WATCHDOG_EXIT: i32 = 86;

#[derive(Parser)]
#[command(name = "paperchain-fuzz", about = "Mutation fuzzing of every route's prepare and run, in process")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Fuzz until a time (the supervisor starts this).
    Worker {
        #[command(flatten)]
        run: RunArgs,
        /// When to stop, in milliseconds since the Unix epoch.
        #[arg(long)]
        until_ms: u64,
        /// Where to write the statistics.
        #[arg(long)]
        stats: PathBuf,
    },
    /// Run saved cases (regression inputs) once each and say how each ended: exit 0 when
    /// every one was answered properly.
    Replay {
        #[command(flatten)]
        caps: Caps,
        /// Regression files (`tests/regressions/*.json`).
        files: Vec<PathBuf>,
    },
}

#[derive(Args, Clone)]
struct Caps {
    /// Seconds a call may take before it is a hang.
    #[arg(long, default_value_t = paperchain_fuzz::TIME_CAP.as_secs())]
    time_cap: u64,
    /// Resident memory the process may hold, in MiB.
    #[arg(long, default_value_t = paperchain_fuzz::MEMORY_CAP_BYTES >> 20)]
    memory_cap_mib: u64,
    /// Add the route that fails on request (the fuzzer's own tests).
    #[arg(long, hide = true)]
    selftest: bool,
}

#[derive(Args, Clone)]
struct RunArgs {
    /// How long to fuzz, in seconds.
    #[arg(long, default_value_t = 300)]
    seconds: u64,
    /// The shared corpus (seed files).
    #[arg(long, env = "PAPERCHAIN_CORPUS")]
    corpus: Option<PathBuf>,
    /// Where to save findings as regression inputs.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/regressions"))]
    regressions: PathBuf,
    /// Working folder (the current case, worker logs, statistics).
    #[arg(long)]
    work: Option<PathBuf>,
    /// Seed of the random choices (default: the time); a run is repeated from its seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Only these routes (operation names, comma-separated).
    #[arg(long, value_delimiter = ',')]
    routes: Vec<String>,
    #[command(flatten)]
    caps: Caps,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => supervise(cli.run),
        Some(Command::Worker { run, until_ms, stats }) => work(run, until_ms, &stats).map(|()| ExitCode::SUCCESS),
        Some(Command::Replay { caps, files }) => replay(caps, &files),
    };
    result.unwrap_or_else(|error| {
        eprintln!("paperchain-fuzz: {error:#}");
        ExitCode::from(2)
    })
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn work_dir(run: &RunArgs) -> PathBuf {
    run.work.clone().unwrap_or_else(|| std::env::temp_dir().join("paperchain-fuzz"))
}

// ---------------------------------------------------------------------------------------
// The supervisor.

fn supervise(run: RunArgs) -> anyhow::Result<ExitCode> {
    let work = work_dir(&run);
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    std::fs::create_dir_all(&run.regressions).with_context(|| format!("creating {}", run.regressions.display()))?;
    let seed = run.seed.unwrap_or_else(now_ms);
    let started = Instant::now();
    let until_ms = now_ms() + run.seconds * 1000;
    let before: HashSet<PathBuf> = regression_files(&run.regressions)?.into_iter().collect();
    println!("fuzz: {} s, seed {seed}, work folder {}", run.seconds, work.display());

    let mut workers = 0u64;
    while now_ms() + 1000 < until_ms {
        let stats = work.join(format!("stats-{workers}.json"));
        let log = std::fs::File::create(work.join(format!("worker-{workers}.log")))?;
        let current = work.join("current.json");
        let _ = std::fs::remove_file(&current);
        let _ = std::fs::remove_file(work.join("died.json"));
        let mut args = vec![
            "worker".into(),
            "--until-ms".into(),
            until_ms.to_string(),
            "--stats".into(),
            stats.display().to_string(),
            "--seed".into(),
            (seed + workers).to_string(),
            "--work".into(),
            work.display().to_string(),
            "--regressions".into(),
            run.regressions.display().to_string(),
            "--time-cap".into(),
            run.caps.time_cap.to_string(),
            "--memory-cap-mib".into(),
            run.caps.memory_cap_mib.to_string(),
        ];
        if let Some(corpus) = &run.corpus {
            args.extend(["--corpus".into(), corpus.display().to_string()]);
        }
        if !run.routes.is_empty() {
            args.extend(["--routes".into(), run.routes.join(",")]);
        }
        if run.caps.selftest {
            args.push("--selftest".into());
        }
        let mut command = std::process::Command::new(std::env::current_exe()?);
        command.args(&args).stdout(log.try_clone()?).stderr(log).process_group(0);
        // LibreOffice's own bound on a conversion comes before the hang cap, so a conversion
        // LibreOffice cannot finish is its answer (504), not a hang of ours.
        if std::env::var_os("PAPERCHAIN_OFFICE_TIMEOUT_S").is_none() {
            command.env("PAPERCHAIN_OFFICE_TIMEOUT_S", (run.caps.time_cap / 2).max(1).to_string());
        }
        let mut child = command.spawn().context("starting a worker")?;
        let status = child.wait()?;
        // What the worker started (LibreOffice, Chromium) goes with it.
        if let Ok(group) = i32::try_from(child.id()) {
            // SAFETY: kill(2) with a negative pid signals the group the worker led, no other.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        workers += 1;
        if status.success() {
            break;
        }
        let case = std::fs::read(&current).ok().and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
        let finding = match status.code() {
            Some(WATCHDOG_EXIT) => {
                let died: Value = serde_json::from_slice(&std::fs::read(work.join("died.json"))?)?;
                Finding {
                    kind: died["kind"].as_str().unwrap_or("hang").into(),
                    detail: died["detail"].as_str().unwrap_or("").into(),
                }
            }
            Some(code) => Finding { kind: "crash".into(), detail: format!("the worker exited with {code}") },
            None => Finding {
                kind: "crash".into(),
                detail: format!("the worker was killed by signal {}", status.signal().unwrap_or(0)),
            },
        };
        let Some(case) = case else {
            anyhow::bail!(
                "a worker ended ({}) before its first case; its log: {}",
                finding.detail,
                work.join(format!("worker-{}.log", workers - 1)).display()
            );
        };
        let case = Case::from_record(&case)?;
        let (saved, new) = save_finding(&run.regressions, &case, &finding)?;
        if new {
            println!("fuzz: {} in {}: {} ({})", finding.kind, case.route, finding.detail, saved.display());
        }
    }

    let stats = merge_stats(&work, workers)?;
    report(&stats, started.elapsed(), workers);
    let after = regression_files(&run.regressions)?;
    let new: Vec<&PathBuf> = after.iter().filter(|p| !before.contains(*p)).collect();
    if new.is_empty() {
        println!("fuzz: no new finding");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("fuzz: {} new finding(s), saved as regression inputs:", new.len());
        for path in new {
            println!("  {}", path.display());
        }
        Ok(ExitCode::FAILURE)
    }
}

fn regression_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    Ok(files)
}

/// Saves `case` as `<kind>-<route>-<hash of the finding>.json` in `dir`, unless the same
/// finding is saved already (a defect found again is not saved twice).
fn save_finding(dir: &Path, case: &Case, finding: &Finding) -> anyhow::Result<(PathBuf, bool)> {
    use sha2::Digest as _;
    // Line and column numbers stay (they tell defects apart); addresses and sizes in
    // messages do not change the name.
    let signature: String = finding.detail.chars().filter(|c| !c.is_ascii_digit() || finding.kind == "panic").collect();
    let hash = sha2::Sha256::digest(format!("{}\n{}\n{}", case.route, finding.kind, signature));
    let path = dir.join(format!("{}-{}-{}.json", finding.kind, case.route, &hex::encode(hash)[..12]));
    if path.exists() {
        return Ok((path, false));
    }
    let record = case.to_record(Some(finding));
    let part = path.with_extension("json.part");
    std::fs::write(&part, serde_json::to_vec_pretty(&record)?)?;
    std::fs::rename(&part, &path)?;
    Ok((path, true))
}

// ---------------------------------------------------------------------------------------
// Statistics.

#[derive(Default)]
struct RouteStats {
    runs: u64,
    spent: Duration,
    answers: BTreeMap<String, u64>,
    findings: u64,
    kept: u64,
}

fn stats_json<'a>(stats: impl Iterator<Item = (&'a str, &'a RouteStats)>) -> Value {
    let routes: serde_json::Map<String, Value> = stats
        .map(|(route, s)| {
            (
                route.to_owned(),
                json!({
                    "runs": s.runs, "spent_ms": s.spent.as_millis() as u64, "answers": s.answers,
                    "findings": s.findings, "kept": s.kept,
                }),
            )
        })
        .collect();
    json!({ "routes": routes })
}

fn merge_stats(work: &Path, workers: u64) -> anyhow::Result<BTreeMap<String, RouteStats>> {
    let mut merged: BTreeMap<String, RouteStats> = BTreeMap::new();
    for k in 0..workers {
        let Ok(bytes) = std::fs::read(work.join(format!("stats-{k}.json"))) else { continue };
        let value: Value = serde_json::from_slice(&bytes)?;
        for (route, s) in value["routes"].as_object().into_iter().flatten() {
            let entry = merged.entry(route.clone()).or_default();
            entry.runs += s["runs"].as_u64().unwrap_or(0);
            entry.spent += Duration::from_millis(s["spent_ms"].as_u64().unwrap_or(0));
            entry.findings += s["findings"].as_u64().unwrap_or(0);
            entry.kept += s["kept"].as_u64().unwrap_or(0);
            for (answer, n) in s["answers"].as_object().into_iter().flatten() {
                *entry.answers.entry(answer.clone()).or_default() += n.as_u64().unwrap_or(0);
            }
        }
    }
    Ok(merged)
}

fn report(stats: &BTreeMap<String, RouteStats>, elapsed: Duration, workers: u64) {
    let runs: u64 = stats.values().map(|s| s.runs).sum();
    println!();
    println!("| route | runs | runs/s | ok | distinct answers | inputs kept | findings |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (route, s) in stats {
        let secs = s.spent.as_secs_f64().max(1e-9);
        println!(
            "| {route} | {} | {:.1} | {} | {} | {} | {} |",
            s.runs,
            s.runs as f64 / secs,
            s.answers.get("ok").copied().unwrap_or(0),
            s.answers.len(),
            s.kept,
            s.findings
        );
    }
    println!();
    println!(
        "fuzz: {runs} runs of {} routes in {:.0} s ({:.1}/s), {workers} worker(s)",
        stats.len(),
        elapsed.as_secs_f64(),
        runs as f64 / elapsed.as_secs_f64().max(1e-9)
    );
}

// ---------------------------------------------------------------------------------------
// The worker.

/// What the watchdog watches: the call running and since when.
#[derive(Default)]
struct Watch {
    /// Since when, which route, and the resident bytes when it began.
    running: Option<(Instant, String, u64)>,
}

/// Starts the watchdog: past the time cap with a call running, or past the memory cap, it
/// says why on stderr and in `died.json` in `work` (a worker's parent reads it; a replay
/// has none) and ends the process with [`WATCHDOG_EXIT`].
fn start_watchdog(caps: &Caps, work: Option<PathBuf>) -> Arc<Mutex<Watch>> {
    let watch = Arc::new(Mutex::new(Watch::default()));
    let shared = watch.clone();
    let time_cap = Duration::from_secs(caps.time_cap);
    let memory_cap = caps.memory_cap_mib << 20;
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let resident = paperchain_fuzz::resident_bytes();
            let over_time = shared
                .lock()
                .ok()
                .and_then(|w| w.running.as_ref().filter(|r| r.0.elapsed() > time_cap).map(|r| r.1.clone()));
            let died = if resident > memory_cap {
                let before = shared.lock().ok().and_then(|w| w.running.as_ref().map(|r| r.2)).unwrap_or(0);
                let detail =
                    format!("over {} MiB resident ({} MiB when the call began)", memory_cap >> 20, before >> 20);
                Some(json!({ "kind": "memory", "detail": detail }))
            } else {
                over_time.map(
                    |route| json!({ "kind": "hang", "detail": format!("{route} ran past {} s", time_cap.as_secs()) }),
                )
            };
            if let Some(died) = died {
                eprintln!("watchdog: {died}");
                if let Some(work) = &work {
                    let _ = std::fs::write(work.join("died.json"), died.to_string());
                }
                std::process::exit(WATCHDOG_EXIT);
            }
        }
    });
    watch
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?)
}

/// Kept inputs per route, at most.
const KEPT_PER_ROUTE: usize = 32;
/// The largest input kept, in bytes of its body.
const MAX_KEPT_INPUT: usize = 2 << 20;
/// The bytes of every kept input together, at most.
const MAX_KEPT_BYTES: usize = 256 << 20;

/// A route being fuzzed.
struct Target {
    operation: String,
    templates: Vec<Value>,
    /// Bodies that drew an answer the route had not given before.
    kept: Vec<(Value, usize)>,
    stats: RouteStats,
}

fn work(run: RunArgs, until_ms: u64, stats_path: &Path) -> anyhow::Result<()> {
    paperchain_fuzz::capture_panics();
    let work = work_dir(&run);
    let corpus = run.corpus.clone().context("no corpus: pass --corpus or set PAPERCHAIN_CORPUS")?;
    let runtime = runtime()?;
    let catalog = Arc::new(paperchain_fuzz::catalog(run.caps.selftest));
    let ctx = paperchain_fuzz::offline_context();
    let mut pools = Pools::load(&corpus)?;
    runtime.block_on(seeds::add_derived(&catalog, &ctx, &mut pools))?;
    let mut targets: Vec<Target> = catalog
        .routes()
        .map(|r| r.info().operation)
        .filter(|op| run.routes.is_empty() || run.routes.iter().any(|r| r == op))
        .map(|op| Target {
            operation: op.to_owned(),
            templates: [seeds::templates(op), pools.bodies(op).to_vec()].concat(),
            kept: Vec::new(),
            stats: RouteStats::default(),
        })
        .collect();
    anyhow::ensure!(!targets.is_empty(), "no route matches --routes {}", run.routes.join(","));
    let watch = start_watchdog(&run.caps, Some(work.clone()));
    let mut rng = Rng::new(run.seed.unwrap_or_else(now_ms));
    let mut last_stats = Instant::now();
    let mut kept_bytes = 0usize;

    while now_ms() < until_ms {
        // The route that has had the least time so far: slow routes get fewer runs, not less time.
        let index = (0..targets.len()).min_by_key(|&i| (targets[i].stats.spent, rng.bits() % 4)).unwrap_or(0);
        let target = &mut targets[index];
        // A route's time includes making its inputs (decoding, mutating and encoding files).
        let started = Instant::now();
        let (body, raw) = next_input(&mut rng, target, &pools);
        let case = Case { route: target.operation.clone(), body: raw };
        let current = match body.is_some() {
            // The body is JSON already: written as it is, not parsed again.
            true => {
                let route = serde_json::to_vec(&case.route)?;
                [&br#"{"route":"#[..], &route, &br#","body":"#[..], &case.body, b"}"].concat()
            }
            false => serde_json::to_vec(&case.to_record(None))?,
        };
        std::fs::write(work.join("current.json"), current)?;
        watch.lock().expect("watch").running =
            Some((Instant::now(), case.route.clone(), paperchain_fuzz::resident_bytes()));
        let verdict = runtime.block_on(paperchain_fuzz::run_case(&catalog, &ctx, &case));
        watch.lock().expect("watch").running = None;
        target.stats.spent += started.elapsed();
        target.stats.runs += 1;
        match verdict {
            Verdict::Answered(answer) => {
                let count = target.stats.answers.entry(answer).or_default();
                *count += 1;
                // Kept inputs are bounded in number and bytes: they are the worker's own memory,
                // which the memory cap counts too.
                let size = case.body.len();
                if *count == 1
                    && size <= MAX_KEPT_INPUT
                    && let Some(body) = body
                {
                    target.stats.kept += 1;
                    if target.kept.len() < KEPT_PER_ROUTE && kept_bytes + size <= MAX_KEPT_BYTES {
                        target.kept.push((body, size));
                        kept_bytes += size;
                    } else if !target.kept.is_empty() {
                        let slot = rng.below(target.kept.len());
                        kept_bytes = kept_bytes + size - target.kept[slot].1;
                        target.kept[slot] = (body, size);
                    }
                }
            }
            Verdict::Finding(finding) => {
                target.stats.findings += 1;
                let (path, new) = save_finding(&run.regressions, &case, &finding)?;
                if new {
                    println!("{} in {}: {} ({})", finding.kind, case.route, finding.detail, path.display());
                }
            }
        }
        // Often at first: a worker that dies early still has its runs counted.
        if last_stats.elapsed() > Duration::from_secs(1) || targets.iter().map(|t| t.stats.runs).sum::<u64>() < 50 {
            write_stats(stats_path, &targets)?;
            last_stats = Instant::now();
        }
    }
    write_stats(stats_path, &targets)
}

fn write_stats(path: &Path, targets: &[Target]) -> anyhow::Result<()> {
    let stats = stats_json(targets.iter().map(|t| (t.operation.as_str(), &t.stats)));
    let part = path.with_extension("part");
    std::fs::write(&part, stats.to_string())?;
    std::fs::rename(&part, path)?;
    Ok(())
}

/// The next input of `target`: a kept body or a template with corpus files, mutated one to
/// three times (one time in ten a template is run as it is). Gives the body as JSON too
/// when it still is JSON.
fn next_input(rng: &mut Rng, target: &Target, pools: &Pools) -> (Option<Value>, Vec<u8>) {
    let from_kept = !target.kept.is_empty() && rng.one_in(2);
    let mut body = if from_kept {
        rng.pick(&target.kept).0.clone()
    } else {
        let template = rng.pick(&target.templates).clone();
        seeds::fill(rng, template, pools)
    };
    if from_kept || !rng.one_in(10) {
        for _ in 0..1 + rng.below(3) {
            let mut files = Vec::new();
            file_inputs(&body, String::new(), &mut files);
            if !files.is_empty() && rng.below(3) < 2 {
                let at = rng.pick(&files).clone();
                mutate_file(rng, &mut body, &at, pools);
            } else {
                mutate::json(rng, &mut body);
            }
        }
    }
    let raw = serde_json::to_vec(&body).unwrap_or_default();
    if rng.one_in(25) {
        let mut raw = raw;
        mutate::bytes(rng, &mut raw, b"{}[]\",:0123456789truefalsenull");
        return (serde_json::from_slice(&raw).ok(), raw);
    }
    (Some(body), raw)
}

/// The JSON pointers of the file inputs (`{"data": base64, "filename": …}`) in `value`.
fn file_inputs(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if mutate::is_file_input(map) {
                out.push(at.clone());
            }
            for (key, child) in map {
                file_inputs(child, format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                file_inputs(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// A mutation of a file's bytes, with a donor file of the same kind for splices.
type Mutator = fn(&mut Rng, &mut Vec<u8>, &[u8]);

/// Mutates the bytes of the file input at `at`: as a PDF, a ZIP or plain bytes, by what
/// they start with; another corpus file of the kind gives spliced bytes.
fn mutate_file(rng: &mut Rng, body: &mut Value, at: &str, pools: &Pools) {
    let Some(input) = body.pointer_mut(at) else { return };
    let Some(encoded) = input["data"].as_str() else { return };
    let Ok(mut bytes) = base64::engine::general_purpose::STANDARD.decode(encoded) else { return };
    let (kind, mutator): (&str, Mutator) = if bytes.starts_with(b"%PDF") {
        ("pdf", mutate::pdf)
    } else if bytes.starts_with(b"PK") {
        ("office", mutate::zip)
    } else {
        ("markdown", mutate::bytes)
    };
    let donors = pools.of(kind);
    let donor = if donors.is_empty() { &[][..] } else { &rng.pick(donors).bytes[..] };
    let donor = donor.to_vec();
    mutator(rng, &mut bytes, &donor);
    input["data"] = json!(base64::engine::general_purpose::STANDARD.encode(&bytes));
}

// ---------------------------------------------------------------------------------------
// Replay.

fn replay(caps: Caps, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    paperchain_fuzz::capture_panics();
    // A replay the watchdog ends leaves nothing behind: it keeps no folder.
    let watch = start_watchdog(&caps, None);
    let runtime = runtime()?;
    let catalog = Arc::new(paperchain_fuzz::catalog(caps.selftest));
    let ctx = paperchain_fuzz::offline_context();
    let mut failed = 0;
    for file in files {
        let record: Value = serde_json::from_slice(&std::fs::read(file).with_context(|| file.display().to_string())?)
            .with_context(|| format!("{} is not JSON", file.display()))?;
        let case = Case::from_record(&record).with_context(|| file.display().to_string())?;
        println!("{}: {}", file.display(), case.route);
        watch.lock().expect("watch").running =
            Some((Instant::now(), case.route.clone(), paperchain_fuzz::resident_bytes()));
        let verdict = runtime.block_on(paperchain_fuzz::run_case(&catalog, &ctx, &case));
        watch.lock().expect("watch").running = None;
        match verdict {
            Verdict::Answered(answer) => println!("  answered: {answer}"),
            Verdict::Finding(finding) => {
                failed += 1;
                println!("  {}: {}", finding.kind, finding.detail);
            }
        }
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
