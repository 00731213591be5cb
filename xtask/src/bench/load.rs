//! The `load` group: a release `paperchain serve` under many connections at once, measured
//! from outside by wrk (a Debian package that `cargo xtask setup` installs).
//!
//! 1. Four runs of `--load-seconds` (default 60) at 256 connections, each on a fresh
//!    server: a light document route (`/v1/pdf/inspect` of a one-page PDF), a chain route
//!    on a local anvil (`/v1/chain/balance`), unpaid calls in hosted mode (402 with the
//!    quote, `/v1/chain/calldata`), and a heavy route (`/v1/pdf/to-images` of an 18-page
//!    PDF), where the answer past the bound on heavy work is 503 `busy` with Retry-After.
//!    Every answer's status is checked by a Lua hook in wrk (and a 503's body for `busy`):
//!    any other answer, socket error or timeout is a failure of the bench.
//! 2. A soak of `--soak-minutes` (default 10): a local server with a mix of light routes
//!    (documents and chain reads on anvil) and a hosted server answering unpaid calls,
//!    each driven by its own wrk at 128 connections, while both servers' resident memory
//!    is sampled every second. The growth from the end of the first minute (caches and
//!    allocator warm) to the end must stay under 10%.
//!
//! Peak RSS is the server's `VmHWM` (`/proc/PID/status`), a fresh process for each run.
//! wrk and the servers share the machine's cores; the CPU each used is shown beside the
//! figures.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use paperchain_testkit::anvil::AnvilProcess;
use paperchain_testkit::b64;
use paperchain_testkit::tools::npm_program;

use super::paywall::{self, clock_ticks, cpu_ticks, first_chars, print_table};

/// Concurrent connections of each timed run.
const CONNECTIONS: usize = 256;
/// Connections of each of the soak's two load generators.
const SOAK_CONNECTIONS: usize = 128;
/// A request wrk has not seen answered in this time is a timeout (an error).
const WRK_TIMEOUT: &str = "10s";
/// The same for heavy calls, which may wait in the queue behind renders of many pages
/// (the server's own limit is its request timeout, 120 s).
const WRK_HEAVY_TIMEOUT: &str = "60s";
/// The soak's allowed growth of resident memory after its first minute.
const SOAK_GROWTH_LIMIT: f64 = 0.10;
/// The soak's first minute, after which its resident memory is the baseline.
const SOAK_WARM: Duration = Duration::from_secs(60);
/// The PDF the light document calls send.
const ONE_PAGE_PDF: &str = "hosted/benches/one-page.pdf";
/// The PDF the heavy calls render (18 pages, from the corpus).
const HEAVY_PDF: &str = "docling/pdf/sources/redp5110_sampled.pdf";

/// How long the group runs.
#[derive(Clone, Copy)]
pub(super) struct Durations {
    /// Each timed run.
    pub(super) run: Duration,
    /// The soak.
    pub(super) soak: Duration,
}

/// One request of a run's mix.
struct Request {
    path: &'static str,
    body: String,
}

/// What a run's answers must be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Every answer 200.
    Ok,
    /// Every answer 402 (unpaid calls in hosted mode).
    PaymentRequired,
    /// 200, or 503 `busy` once the heavy work's workers and queue are full.
    OkOrBusy,
}

impl Expect {
    fn said(self) -> &'static str {
        match self {
            Expect::Ok => "all 200",
            Expect::PaymentRequired => "all 402",
            Expect::OkOrBusy => "200 or 503 busy",
        }
    }
}

/// What wrk reported of a run, from the Lua hook's `paperchain:` lines.
#[derive(Debug, Default, PartialEq)]
struct Wrk {
    requests: u64,
    duration: Duration,
    p50_us: u64,
    p90_us: u64,
    p99_us: u64,
    max_us: u64,
    /// Answers of an unexpected status (or a 503 that is not `busy`).
    unexpected: u64,
    /// 503 `busy` answers (allowed where [`Expect::OkOrBusy`]).
    busy: u64,
    /// Socket errors: connect, read, write, timeout.
    socket_errors: [u64; 4],
    /// The first unexpected answer: its status and the start of its body.
    first_unexpected: Option<String>,
}

impl Wrk {
    fn per_second(&self) -> f64 {
        self.requests as f64 / self.duration.as_secs_f64().max(1e-9)
    }

    fn errors(&self) -> u64 {
        self.unexpected + self.socket_errors.iter().sum::<u64>()
    }

    fn check(&self) -> anyhow::Result<()> {
        ensure!(self.requests > 0, "no request was answered");
        let [connect, read, write, timeout] = self.socket_errors;
        ensure!(
            self.errors() == 0,
            "{} unexpected answers (first: {}), socket errors: connect {connect}, read {read}, write {write}, \
             timeout {timeout}",
            self.unexpected,
            self.first_unexpected.as_deref().unwrap_or("-")
        );
        Ok(())
    }
}

/// One timed run.
struct Run {
    name: String,
    expect: Expect,
    outcome: Result<Measured, String>,
}

struct Measured {
    wrk: Wrk,
    peak_rss_kib: u64,
    server_cpu: Option<f64>,
    wrk_cpu: Option<f64>,
    /// anvil's CPU seconds, for the chain route.
    anvil_cpu: Option<f64>,
}

struct Soak {
    outcome: Result<SoakMeasured, String>,
}

struct SoakMeasured {
    local: Wrk,
    hosted: Wrk,
    /// (RSS after the first minute, at the end, the highest), KiB, of each server.
    local_rss: (u64, u64, u64),
    hosted_rss: (u64, u64, u64),
}

pub(super) struct Report {
    cores: usize,
    durations: Durations,
    runs: Vec<Run>,
    soak: Soak,
}

pub(super) fn measure(
    paperchain: &Path,
    tools: &Path,
    corpus: &Path,
    durations: Durations,
    dir: &Path,
) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let wrk = which("wrk").context("wrk is not installed; run `cargo xtask setup`")?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let anvil_binary = npm_program(tools, "anvil", "PAPERCHAIN_ANVIL").map_err(anyhow::Error::msg)?;
    let one_page = read(&crate::project_root().join(ONE_PAGE_PDF))?;
    let heavy_pdf = read(&corpus.join(HEAVY_PDF))?;
    let inspect = Request { path: "/v1/pdf/inspect", body: format!(r#"{{"file":{{"data":"{}"}}}}"#, b64(&one_page)) };
    let rotate =
        Request { path: "/v1/pdf/rotate", body: format!(r#"{{"file":{{"data":"{}"}},"degrees":90}}"#, b64(&one_page)) };
    // transfer(address,uint256): decoded against the bundled signatures, no chain read.
    let calldata = Request {
        path: "/v1/chain/calldata",
        body: r#"{"calldata":"0xa9059cbb000000000000000000000000d8da6bf26964af9d7eed9e03e53415d37aa960450000000000000000000000000000000000000000000000000de0b6b3a7640000"}"#.into(),
    };
    let gas = Request { path: "/v1/chain/gas", body: r#"{"chain":"base"}"#.into() };

    println!("bench: load: anvil for the chain route");
    let anvil = AnvilProcess::spawn(&anvil_binary, 1, &[])?;
    let rpc = format!("http://127.0.0.1:{}", anvil.port);
    // anvil's first dev account: funded, so the balance is a real number.
    let balance = Request {
        path: "/v1/chain/balance",
        body: r#"{"chain":"ethereum","address":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"}"#.into(),
    };
    let local_env = [("PAPERCHAIN_RPC_ETHEREUM", rpc.as_str())];

    let mut runs = Vec::new();
    let mut timed =
        |name: String, expect: Expect, start: &dyn Fn(&Path) -> anyhow::Result<Served>, mix: &[&Request]| {
            let folder = dir.join(format!("run-{}", runs.len() + 1));
            println!("bench: load: {name}, {CONNECTIONS} connections, {} s", durations.run.as_secs());
            let outcome = start(&folder)
                .and_then(|server| {
                    let script = lua_script(mix, expect);
                    let measured = drive(&wrk, &server, expect, &script, durations.run, &folder, Some(anvil.id()))?;
                    measured.wrk.check()?;
                    Ok(measured)
                })
                .map_err(|e| {
                    eprintln!("  failed: {e:#}");
                    format!("{e:#}")
                });
            if let Ok(m) = &outcome {
                eprintln!(
                    "  {} answers, {:.0}/s, p50 {:.2} ms, p99 {:.2} ms, peak RSS {} MiB{}",
                    m.wrk.requests,
                    m.wrk.per_second(),
                    m.wrk.p50_us as f64 / 1e3,
                    m.wrk.p99_us as f64 / 1e3,
                    m.peak_rss_kib / 1024,
                    if m.wrk.busy > 0 { format!(", {} busy", m.wrk.busy) } else { String::new() }
                );
            }
            runs.push(Run { name, expect, outcome });
        };
    let local = |folder: &Path| Served::local(paperchain, folder, &local_env);
    let hosted = |folder: &Path| Served::hosted(paperchain, tools, folder);
    timed("local /v1/pdf/inspect (1-page PDF)".into(), Expect::Ok, &local, &[&inspect]);
    timed("local /v1/chain/balance (anvil)".into(), Expect::Ok, &local, &[&balance]);
    timed("hosted /v1/chain/calldata, unpaid (402)".into(), Expect::PaymentRequired, &hosted, &[&calldata]);
    let to_images = Request {
        path: "/v1/pdf/to-images",
        body: format!(r#"{{"file":{{"data":"{}"}},"format":"png","dpi":150}}"#, b64(&heavy_pdf)),
    };
    timed("local /v1/pdf/to-images (18 pages, 150 dpi)".into(), Expect::OkOrBusy, &local, &[&to_images]);

    println!(
        "bench: load: soak, {} min: local mix and hosted 402s, {SOAK_CONNECTIONS} connections each",
        durations.soak.as_secs() / 60
    );
    let soak = soak(
        &wrk,
        durations.soak,
        &dir.join("soak"),
        &|folder| Served::local(paperchain, folder, &local_env),
        &[&inspect, &rotate, &calldata, &balance],
        &|folder| Served::hosted(paperchain, tools, folder),
        &[&calldata, &gas, &inspect],
    )
    .map_err(|e| {
        eprintln!("  failed: {e:#}");
        format!("{e:#}")
    });
    drop(anvil);
    Ok(Report { cores, durations, runs, soak: Soak { outcome: soak } })
}

fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

fn which(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|dir| dir.join(program)).find(|p| p.is_file())
}

/// A server under load: local (`paperchain serve`) or hosted (the sandbox).
enum Served {
    Local(super::Server),
    Hosted(paywall::Server),
}

impl Served {
    fn local(paperchain: &Path, folder: &Path, env: &[(&str, &str)]) -> anyhow::Result<Served> {
        Ok(Served::Local(super::Server::start(paperchain, folder, env)?))
    }

    fn hosted(paperchain: &Path, tools: &Path, folder: &Path) -> anyhow::Result<Served> {
        std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
        Ok(Served::Hosted(paywall::Server::start(paperchain, tools, folder, &folder.join("data"))?))
    }

    fn url(&self) -> String {
        match self {
            Served::Local(server) => server.url.clone(),
            Served::Hosted(server) => format!("http://{}", server.addr),
        }
    }

    fn pid(&self) -> u32 {
        match self {
            Served::Local(server) => server.pid(),
            Served::Hosted(server) => server.pid(),
        }
    }
}

/// wrk's Lua: the mix's requests in turn, each answer's status checked in `response`, and
/// the totals and latency percentiles printed by `done` as `paperchain: key=value` lines.
fn lua_script(mix: &[&Request], expect: Expect) -> String {
    let mut requests = String::new();
    for request in mix {
        // Long brackets: JSON and base64 never hold `]==]`.
        let _ = writeln!(requests, "  {{ path = [==[{}]==], body = [==[{}]==] }},", request.path, request.body);
    }
    let check = match expect {
        Expect::Ok => "status == 200",
        Expect::PaymentRequired => "status == 402",
        Expect::OkOrBusy => "status == 200",
    };
    let busy = if expect == Expect::OkOrBusy {
        r#"if status == 503 and string.find(body, '"code":"busy"', 1, true) then busy = busy + 1 return end"#
    } else {
        ""
    };
    format!(
        r#"-- Written by `cargo xtask bench load`.
local mix = {{
{requests}}}
local prepared = {{}}
local turn = 0
unexpected = 0
busy = 0
first_unexpected = nil

function init(args)
  for i, r in ipairs(mix) do
    prepared[i] = wrk.format("POST", r.path, {{ ["Content-Type"] = "application/json" }}, r.body)
  end
end

function request()
  turn = turn % #prepared + 1
  return prepared[turn]
end

function response(status, headers, body)
  if {check} then return end
  {busy}
  unexpected = unexpected + 1
  if first_unexpected == nil then
    first_unexpected = status .. " " .. string.sub(body or "", 1, 200)
  end
end

local threads = {{}}
function setup(thread)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local bad, heavy, first = 0, 0, nil
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("unexpected")
    heavy = heavy + thread:get("busy")
    first = first or thread:get("first_unexpected")
  end
  local e = summary.errors
  io.write(string.format("paperchain: requests=%d duration_us=%d unexpected=%d busy=%d\n",
    summary.requests, summary.duration, bad, heavy))
  io.write(string.format("paperchain: connect=%d read=%d write=%d timeout=%d\n",
    e.connect, e.read, e.write, e.timeout))
  io.write(string.format("paperchain: p50_us=%d p90_us=%d p99_us=%d max_us=%d\n",
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
  if first then io.write("paperchain: first=" .. string.gsub(first, "\n", " ") .. "\n") end
end
"#
    )
}

/// Reads the `paperchain:` lines `done` printed.
fn parse_wrk(output: &str) -> anyhow::Result<Wrk> {
    let mut wrk = Wrk::default();
    let mut seen = 0;
    for line in output.lines() {
        let Some(rest) = line.strip_prefix("paperchain: ") else { continue };
        if let Some(first) = rest.strip_prefix("first=") {
            wrk.first_unexpected = Some(first.to_string());
            continue;
        }
        for pair in rest.split_whitespace() {
            let (key, value) = pair.split_once('=').with_context(|| format!("not key=value: {pair}"))?;
            let value: u64 = value.parse().with_context(|| format!("not a number: {pair}"))?;
            seen += 1;
            match key {
                "requests" => wrk.requests = value,
                "duration_us" => wrk.duration = Duration::from_micros(value),
                "unexpected" => wrk.unexpected = value,
                "busy" => wrk.busy = value,
                "connect" => wrk.socket_errors[0] = value,
                "read" => wrk.socket_errors[1] = value,
                "write" => wrk.socket_errors[2] = value,
                "timeout" => wrk.socket_errors[3] = value,
                "p50_us" => wrk.p50_us = value,
                "p90_us" => wrk.p90_us = value,
                "p99_us" => wrk.p99_us = value,
                "max_us" => wrk.max_us = value,
                _ => seen -= 1,
            }
        }
    }
    ensure!(seen == 12, "wrk's script printed {seen} of its 12 figures:\n{output}");
    Ok(wrk)
}

/// wrk started on `server` with `script` for `duration`.
fn start_wrk(
    wrk: &Path,
    server: &Served,
    script: &Path,
    connections: usize,
    duration: Duration,
    timeout: &str,
) -> anyhow::Result<Child> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from).to_string();
    let (connections, seconds) = (connections.to_string(), format!("{}s", duration.as_secs()));
    let args = ["-t", &threads, "-c", &connections, "-d", &seconds, "--timeout", timeout, "-s"];
    eprintln!("$ wrk {} {} {}", args.join(" "), script.display(), server.url());
    Command::new(wrk)
        .args(args)
        .arg(script)
        .arg(server.url())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting wrk")
}

fn finish_wrk(child: Child) -> anyhow::Result<Wrk> {
    let output = child.wait_with_output().context("waiting for wrk")?;
    let text = String::from_utf8_lossy(&output.stdout);
    ensure!(
        output.status.success(),
        "wrk failed ({}): {}{}",
        output.status,
        text,
        String::from_utf8_lossy(&output.stderr)
    );
    parse_wrk(&text)
}

/// One timed run: wrk at [`CONNECTIONS`] against a server of its own; CPU of each side over the run.
fn drive(
    wrk: &Path,
    server: &Served,
    expect: Expect,
    script: &str,
    duration: Duration,
    folder: &Path,
    anvil: Option<u32>,
) -> anyhow::Result<Measured> {
    let path = folder.join("load.lua");
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    let ticks = clock_ticks();
    let (server_before, anvil_before) = (cpu_ticks(server.pid()), anvil.and_then(cpu_ticks));
    let timeout = if expect == Expect::OkOrBusy { WRK_HEAVY_TIMEOUT } else { WRK_TIMEOUT };
    let child = start_wrk(wrk, server, &path, CONNECTIONS, duration, timeout)?;
    let wrk_pid = child.id();
    // wrk's own CPU is read just before it ends: sampled while it runs.
    let mut wrk_cpu = None;
    let end = Instant::now() + duration;
    while Instant::now() + Duration::from_millis(500) < end {
        std::thread::sleep(Duration::from_millis(250));
        wrk_cpu = cpu_ticks(wrk_pid).or(wrk_cpu);
    }
    let result = finish_wrk(child)?;
    let cpu = |before: Option<u64>, after: Option<u64>| Some(after?.saturating_sub(before?) as f64 / ticks);
    Ok(Measured {
        peak_rss_kib: status_kib(server.pid(), "VmHWM").context("reading the server's peak RSS")?,
        server_cpu: cpu(server_before, cpu_ticks(server.pid())),
        wrk_cpu: wrk_cpu.map(|t| t as f64 / ticks),
        anvil_cpu: cpu(anvil_before, anvil.and_then(cpu_ticks)),
        wrk: result,
    })
}

/// A `kB` line of `/proc/PID/status` (`VmRSS`, `VmHWM`).
fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

type Start<'a> = &'a dyn Fn(&Path) -> anyhow::Result<Served>;

/// Both servers loaded at once for `duration`, their RSS sampled each second.
fn soak(
    wrk: &Path,
    duration: Duration,
    dir: &Path,
    local: Start,
    local_mix: &[&Request],
    hosted: Start,
    hosted_mix: &[&Request],
) -> anyhow::Result<SoakMeasured> {
    ensure!(duration > SOAK_WARM, "the soak must last longer than its first minute");
    let (local_dir, hosted_dir) = (dir.join("local"), dir.join("hosted"));
    let (local, hosted) = (local(&local_dir)?, hosted(&hosted_dir)?);
    let local_script = local_dir.join("soak.lua");
    let hosted_script = hosted_dir.join("soak.lua");
    std::fs::write(&local_script, lua_script(local_mix, Expect::Ok))?;
    std::fs::write(&hosted_script, lua_script(hosted_mix, Expect::PaymentRequired))?;
    let local_wrk = start_wrk(wrk, &local, &local_script, SOAK_CONNECTIONS, duration, WRK_TIMEOUT)?;
    let hosted_wrk = start_wrk(wrk, &hosted, &hosted_script, SOAK_CONNECTIONS, duration, WRK_TIMEOUT)?;
    let began = Instant::now();
    let mut samples: Vec<(Duration, u64, u64)> = Vec::new();
    while began.elapsed() < duration {
        std::thread::sleep(Duration::from_secs(1));
        let (l, h) = (status_kib(local.pid(), "VmRSS"), status_kib(hosted.pid(), "VmRSS"));
        let (Some(l), Some(h)) = (l, h) else { bail!("a server ended during the soak") };
        samples.push((began.elapsed(), l, h));
        if samples.len().is_multiple_of(60) {
            eprintln!("  {} s: RSS local {} MiB, hosted {} MiB", began.elapsed().as_secs(), l / 1024, h / 1024);
        }
    }
    let (local_result, hosted_result) = (finish_wrk(local_wrk)?, finish_wrk(hosted_wrk)?);
    let rss = |pick: fn(&(Duration, u64, u64)) -> u64| -> anyhow::Result<(u64, u64, u64)> {
        let base = samples.iter().find(|s| s.0 >= SOAK_WARM).map(pick).context("no sample after the first minute")?;
        let end = samples.last().map(pick).context("no sample")?;
        let peak = samples.iter().map(pick).max().unwrap_or(0);
        Ok((base, end, peak))
    };
    let measured = SoakMeasured {
        local: local_result,
        hosted: hosted_result,
        local_rss: rss(|s| s.1)?,
        hosted_rss: rss(|s| s.2)?,
    };
    measured.local.check().context("the local server's mix")?;
    measured.hosted.check().context("the hosted server's 402s")?;
    for (side, (base, end, _)) in [("local", measured.local_rss), ("hosted", measured.hosted_rss)] {
        let growth = end as f64 / base as f64 - 1.0;
        ensure!(
            growth < SOAK_GROWTH_LIMIT,
            "the {side} server's RSS grew {:.1}% after the first minute ({} to {} KiB), over the {:.0}% allowed",
            growth * 100.0,
            base,
            end,
            SOAK_GROWTH_LIMIT * 100.0
        );
    }
    Ok(measured)
}

impl Report {
    pub(super) fn print(&self) {
        println!(
            "\nload: a release `paperchain serve` under {CONNECTIONS} connections from wrk, {} s each, a fresh server \
             each",
            self.durations.run.as_secs()
        );
        let header = [
            "run",
            "answers",
            "answers/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "max ms",
            "errors",
            "answers checked",
            "peak RSS",
            "server CPU",
            "wrk CPU",
        ];
        let cores = self.cores as f64;
        let share = |cpu: Option<f64>, elapsed: Duration| match cpu {
            Some(seconds) => format!("{:.0}%", 100.0 * seconds / (elapsed.as_secs_f64() * cores)),
            None => "-".into(),
        };
        let ms = |us: u64| format!("{:.2}", us as f64 / 1e3);
        let rows: Vec<Vec<String>> = self
            .runs
            .iter()
            .map(|run| match &run.outcome {
                Ok(m) => {
                    let mut checked = run.expect.said().to_string();
                    if run.expect == Expect::OkOrBusy {
                        checked = format!("{checked} ({} busy)", m.wrk.busy);
                    }
                    let mut server = share(m.server_cpu, m.wrk.duration);
                    if let Some(anvil) = m.anvil_cpu.filter(|s| *s > 1.0) {
                        server = format!("{server} (+ anvil {})", share(Some(anvil), m.wrk.duration));
                    }
                    vec![
                        run.name.clone(),
                        m.wrk.requests.to_string(),
                        format!("{:.0}", m.wrk.per_second()),
                        ms(m.wrk.p50_us),
                        ms(m.wrk.p90_us),
                        ms(m.wrk.p99_us),
                        ms(m.wrk.max_us),
                        m.wrk.errors().to_string(),
                        checked,
                        format!("{} MiB", m.peak_rss_kib / 1024),
                        server,
                        share(m.wrk_cpu, m.wrk.duration),
                    ]
                }
                Err(e) => {
                    let mut cells = vec![run.name.clone(), format!("FAILED: {}", first_chars(e, 70))];
                    cells.resize(header.len(), "-".into());
                    cells
                }
            })
            .collect();
        print_table(&header, &rows);
        println!(
            "CPU as a share of the machine's {} cores over the run. Every answer's status is checked by wrk's Lua \
             hook; errors are unexpected answers plus socket errors and timeouts ({WRK_TIMEOUT}; {WRK_HEAVY_TIMEOUT} on the heavy route). Latency: wrk's \
             (from sending a request to its whole answer). Peak RSS: the server's VmHWM.",
            self.cores
        );
        match &self.soak.outcome {
            Ok(soak) => {
                println!(
                    "\nload: soak, {} min, two wrk processes at {SOAK_CONNECTIONS} connections each, RSS sampled \
                     every second",
                    self.durations.soak.as_secs() / 60
                );
                let header = [
                    "server",
                    "answers",
                    "answers/s",
                    "p99 ms",
                    "errors",
                    "RSS at 1 min",
                    "RSS at end",
                    "growth",
                    "peak RSS",
                ];
                let row = |name: &str, wrk: &Wrk, (base, end, peak): (u64, u64, u64)| {
                    vec![
                        name.to_string(),
                        wrk.requests.to_string(),
                        format!("{:.0}", wrk.per_second()),
                        ms(wrk.p99_us),
                        wrk.errors().to_string(),
                        format!("{:.1} MiB", base as f64 / 1024.0),
                        format!("{:.1} MiB", end as f64 / 1024.0),
                        format!("{:+.1}%", (end as f64 / base as f64 - 1.0) * 100.0),
                        format!("{:.1} MiB", peak as f64 / 1024.0),
                    ]
                };
                print_table(
                    &header,
                    &[
                        row("local: inspect, rotate, calldata, balance (anvil)", &soak.local, soak.local_rss),
                        row("hosted: unpaid calldata, gas, inspect (402)", &soak.hosted, soak.hosted_rss),
                    ],
                );
                println!(
                    "Growth: RSS at the end against RSS after the first minute; under {:.0}% passes.",
                    SOAK_GROWTH_LIMIT * 100.0
                );
            }
            Err(e) => println!("\nload: soak FAILED: {e}"),
        }
    }

    /// `(whether Paperchain is at fault, what failed)`, for the bench's failure list.
    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        let mut failures: Vec<(bool, String)> = self
            .runs
            .iter()
            .filter_map(|run| Some((true, format!("load, {}: {}", run.name, run.outcome.as_ref().err()?))))
            .collect();
        if let Err(e) = &self.soak.outcome {
            failures.push((true, format!("load, soak: {e}")));
        }
        failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_scripts_figures() {
        let output = "Running 1s test @ http://127.0.0.1:1\n\
            paperchain: requests=1000 duration_us=2000000 unexpected=2 busy=5\n\
            paperchain: connect=0 read=1 write=0 timeout=3\n\
            paperchain: p50_us=100 p90_us=200 p99_us=300 max_us=400\n\
            paperchain: first=500 {\"error\":{}}\n";
        let wrk = parse_wrk(output).unwrap();
        assert_eq!(wrk.requests, 1000);
        assert_eq!(wrk.per_second(), 500.0);
        assert_eq!((wrk.p50_us, wrk.p90_us, wrk.p99_us, wrk.max_us), (100, 200, 300, 400));
        assert_eq!((wrk.unexpected, wrk.busy, wrk.socket_errors), (2, 5, [0, 1, 0, 3]));
        assert_eq!(wrk.errors(), 6);
        assert_eq!(wrk.first_unexpected.as_deref(), Some("500 {\"error\":{}}"));
        assert!(wrk.check().unwrap_err().to_string().starts_with("2 unexpected answers (first: 500"));
        assert!(parse_wrk("paperchain: requests=1\n").is_err(), "figures missing");
    }

    #[test]
    fn the_script_checks_what_the_run_expects() {
        let request = Request { path: "/v1/x", body: "{}".into() };
        let paid = lua_script(&[&request], Expect::PaymentRequired);
        assert!(paid.contains("if status == 402 then return end"));
        assert!(!paid.contains("busy = busy + 1"));
        let heavy = lua_script(&[&request], Expect::OkOrBusy);
        assert!(heavy.contains("status == 503") && heavy.contains(r#""code":"busy""#));
        assert!(heavy.contains("{ path = [==[/v1/x]==], body = [==[{}]==] },"));
    }

    #[test]
    fn reads_proc_status_lines() {
        let pid = std::process::id();
        let rss = status_kib(pid, "VmRSS").unwrap();
        let peak = status_kib(pid, "VmHWM").unwrap();
        assert!(rss > 0 && peak >= rss, "{rss} {peak}");
        assert_eq!(status_kib(pid, "NoSuchLine"), None);
    }
}
