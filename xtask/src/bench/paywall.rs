//! The `paywall` group: what hosted mode's paywall costs.
//!
//! 1. Unpaid calls: a release `paperchain serve --hosted --sandbox` answers 402 (with the
//!    exact quote in `PAYMENT-REQUIRED`) to 64 keep-alive connections at once, for a chain
//!    route whose quote reads no chain (`/v1/chain/gas`: `prepare` only looks the chain name
//!    up) and for a document route whose quote parses a small PDF (`/v1/pdf/inspect`).
//!    Every answer is checked: status 402 with a `PAYMENT-REQUIRED` header, and on each
//!    connection's first answer the header decodes to the body.
//! 2. The paywall's own cost on a paid call, the facilitator excluded: the gateway's
//!    `paywall` bench (hosted/benches/paywall.rs) serves the same inputs in process in
//!    local mode and in hosted mode paid through a facilitator that answers at once; the
//!    difference is the paywall's.
//!
//! The load generator is here, on std threads, one blocking keep-alive connection each
//! writing prepared request bytes and reading answers by their Content-Length: xtask has no
//! HTTP client or async runtime, and the leaner the client, the more of the machine is left
//! to the server it shares the cores with. The CPU time each side used is shown beside the
//! figures so that sharing can be judged.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use paperchain_testkit::tools::npm_program;
use paperchain_testkit::{b64, b64_decode};

use crate::cargo;
use crate::cmd::Cmd;

/// Concurrent keep-alive connections of the unpaid load.
const CONNECTIONS: usize = 64;
/// Load before the measured window: connections open, caches and allocator warm.
const WARM_UP: Duration = Duration::from_secs(3);
/// The measured window of each route.
const WINDOW: Duration = Duration::from_secs(10);
/// Timed paid calls of each side of each route in the in-process bench.
const PAID_CALLS: u32 = 3000;

/// One unpaid route driven over HTTP.
struct Case {
    path: &'static str,
    body: String,
    /// What its quote does, said in the table.
    quote: &'static str,
}

/// The one-page PDF the document case sends; the in-process bench sends the same file.
const ONE_PAGE_PDF: &str = "hosted/benches/one-page.pdf";

fn cases() -> anyhow::Result<Vec<Case>> {
    let path = crate::project_root().join(ONE_PAGE_PDF);
    let pdf = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(vec![
        Case { path: "/v1/chain/gas", body: r#"{"chain":"base"}"#.into(), quote: "chain name looked up, no RPC" },
        Case {
            path: "/v1/pdf/inspect",
            body: format!(r#"{{"file":{{"data":"{}"}}}}"#, b64(&pdf)),
            quote: "base64 decoded, 1-page PDF parsed",
        },
    ])
}

/// What the group measured, printed after the other groups' tables.
pub(super) struct Report {
    cores: usize,
    load: Vec<LoadRow>,
    /// Rows of the in-process bench, or why there are none.
    paid: Result<Vec<PaidRow>, String>,
}

struct LoadRow {
    /// Where the server's SQLite store was.
    store: String,
    path: &'static str,
    quote: &'static str,
    request_bytes: usize,
    outcome: Result<Load, String>,
}

struct Load {
    requests: usize,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
    /// CPU seconds the load generator (this process) and the server used in the window.
    client_cpu: Option<f64>,
    server_cpu: Option<f64>,
    /// CPU seconds every other process of the machine used in the window (builds, say).
    other_cpu: Option<f64>,
    /// Size of one 402 (head and body) and the price it quotes in the token's units.
    answer_bytes: usize,
    amount: String,
}

/// One route of the in-process bench: local mode and hosted mode (paid).
struct PaidRow {
    /// Where the SQLite store was.
    store: String,
    path: String,
    calls: u64,
    local: Percentiles,
    hosted: Percentiles,
}

#[derive(Clone, Copy, Default)]
pub(super) struct Percentiles {
    pub(super) p50_us: f64,
    pub(super) p99_us: f64,
    pub(super) max_us: f64,
    pub(super) mean_us: f64,
}

pub(super) fn measure(paperchain: &Path, tools: &Path, dir: &Path) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    // Every call commits a ledger row; a 402's without a flush (synchronous=NORMAL), a paid
    // call's claim, finish and row with one each (FULL). A memory file system, where a flush
    // costs nothing, shows what the disk adds.
    let mut stores = vec![(store_label(dir), dir.to_path_buf())];
    let memory = Path::new(MEMORY_FOLDER).join(format!("paperchain-bench-{}", std::process::id()));
    let _memory = Removed(memory.clone());
    if filesystem_of(Path::new(MEMORY_FOLDER)).as_deref() == Some("tmpfs") {
        std::fs::create_dir_all(&memory).with_context(|| format!("creating {}", memory.display()))?;
        stores.push((store_label(&memory), memory));
    }
    let mut load = Vec::new();
    for (store, folder) in &stores {
        let server = Server::start(paperchain, tools, dir, &folder.join("data"))?;
        println!("bench: paywall: hosted sandbox at http://{}, store on {store}", server.addr);
        for case in cases()? {
            println!("bench: paywall: unpaid {}, {CONNECTIONS} connections, store on {store}", case.path);
            let request = request_bytes(&server.addr, &case);
            let outcome = drive_case(&server, &request).map_err(|e| {
                eprintln!("  failed: {e:#}");
                format!("{e:#}")
            });
            let (path, quote, request_bytes) = (case.path, case.quote, request.len());
            load.push(LoadRow { store: store.clone(), path, quote, request_bytes, outcome });
        }
        // The server (and its anvil) stop here: what follows gets the machine to itself.
    }
    let mut paid = Ok(Vec::new());
    for (store, folder) in &stores {
        println!("bench: paywall: paid calls in process, local mode against hosted mode, store on {store}");
        match paid_calls(store, folder) {
            Ok(rows) => {
                if let Ok(all) = &mut paid {
                    all.extend(rows);
                }
            }
            Err(e) => {
                eprintln!("  failed: {e:#}");
                paid = Err(format!("store on {store}: {e:#}"));
            }
        }
    }
    Ok(Report { cores, load, paid })
}

/// A memory file system on Linux.
pub(super) const MEMORY_FOLDER: &str = "/dev/shm";

/// A folder removed when dropped.
pub(super) struct Removed(pub(super) PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `/tmp (ext4)`: a folder and its file system's type.
pub(super) fn store_label(folder: &Path) -> String {
    let parent = folder.parent().unwrap_or(folder);
    match filesystem_of(folder) {
        Some(kind) => format!("{} ({kind})", parent.display()),
        None => parent.display().to_string(),
    }
}

/// The type of the file system holding `path`: the longest mount point of /proc/mounts
/// that contains it.
pub(super) fn filesystem_of(path: &Path) -> Option<String> {
    let path = std::path::absolute(path).ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, point, kind) = (fields.next()?, fields.next()?, fields.next()?);
            path.starts_with(point).then(|| (point.len(), kind.to_string()))
        })
        .max_by_key(|(length, _)| *length)
        .map(|(_, kind)| kind)
}

/// Warm-up, then the measured window, on fresh connections each.
fn drive_case(server: &Server, request: &[u8]) -> anyhow::Result<Load> {
    let warm = drive(server.addr, request, WARM_UP).context("warming up")?;
    ensure!(warm.failures.is_empty(), "warming up: {}", warm.failures[0]);
    let ticks = clock_ticks();
    let (client_before, server_before, busy_before) =
        (cpu_ticks(std::process::id()), cpu_ticks(server.pid()), busy_ticks());
    let run = drive(server.addr, request, WINDOW)?;
    let (client_after, server_after, busy_after) =
        (cpu_ticks(std::process::id()), cpu_ticks(server.pid()), busy_ticks());
    let cpu = |before: Option<u64>, after: Option<u64>| Some(after?.saturating_sub(before?) as f64 / ticks);
    let (client_cpu, server_cpu) = (cpu(client_before, client_after), cpu(server_before, server_after));
    let other_cpu =
        cpu(busy_before, busy_after).zip(client_cpu.zip(server_cpu)).map(|(all, (c, s))| (all - c - s).max(0.0));
    if let Some(first) = run.failures.first() {
        bail!("{} of {} answers were wrong; the first: {first}", run.failures.len(), run.latencies.len());
    }
    let mut latencies = run.latencies;
    ensure!(!latencies.is_empty(), "no answer in {} s", WINDOW.as_secs());
    latencies.sort();
    let load = Load {
        requests: latencies.len(),
        elapsed: run.elapsed,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        max: latencies[latencies.len() - 1],
        client_cpu,
        server_cpu,
        other_cpu,
        answer_bytes: run.answer_bytes,
        amount: run.amount,
    };
    eprintln!(
        "  {} answers in {:.2} s: {:.0}/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, all 402 with PAYMENT-REQUIRED",
        load.requests,
        load.elapsed.as_secs_f64(),
        load.requests as f64 / load.elapsed.as_secs_f64(),
        ms(load.p50),
        ms(load.p99),
        ms(load.max)
    );
    Ok(load)
}

/// The nearest-rank percentile of sorted times.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (sorted.len() as f64 * q).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct Drive {
    latencies: Vec<Duration>,
    elapsed: Duration,
    /// What was wrong with answers, one line each.
    failures: Vec<String>,
    answer_bytes: usize,
    amount: String,
}

/// [`CONNECTIONS`] threads each send `request` on their own keep-alive connection, one
/// after another, until `window` has passed; every answer is timed and checked.
fn drive(addr: SocketAddr, request: &[u8], window: Duration) -> anyhow::Result<Drive> {
    let streams: Vec<TcpStream> = (0..CONNECTIONS)
        .map(|_| {
            let stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
            stream.set_nodelay(true)?;
            stream.set_read_timeout(Some(Duration::from_secs(30)))?;
            Ok(stream)
        })
        .collect::<anyhow::Result<_>>()?;
    // All connections are open before the clock starts.
    let start = Arc::new(Barrier::new(CONNECTIONS + 1));
    let request: Arc<[u8]> = request.into();
    let workers: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            let (start, request) = (start.clone(), request.clone());
            std::thread::spawn(move || -> anyhow::Result<Connection> {
                start.wait();
                let deadline = Instant::now() + window;
                connection(stream, &request, deadline)
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let mut drive = Drive {
        latencies: Vec::new(),
        elapsed: Duration::ZERO,
        failures: Vec::new(),
        answer_bytes: 0,
        amount: String::new(),
    };
    let mut errors = Vec::new();
    for worker in workers {
        match worker.join() {
            Ok(Ok(done)) => {
                drive.latencies.extend(done.latencies);
                drive.failures.extend(done.failures);
                drive.answer_bytes = drive.answer_bytes.max(done.answer_bytes);
                if drive.amount.is_empty() {
                    drive.amount = done.amount;
                }
            }
            Ok(Err(e)) => errors.push(format!("{e:#}")),
            Err(_) => errors.push("a load thread panicked".into()),
        }
    }
    drive.elapsed = began.elapsed();
    if let Some(first) = errors.first() {
        bail!("{} of {CONNECTIONS} connections failed; the first: {first}", errors.len());
    }
    Ok(drive)
}

/// What one connection saw.
struct Connection {
    latencies: Vec<Duration>,
    failures: Vec<String>,
    answer_bytes: usize,
    amount: String,
}

fn connection(stream: TcpStream, request: &[u8], deadline: Instant) -> anyhow::Result<Connection> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(64 * 1024, stream);
    let mut seen = Connection { latencies: Vec::new(), failures: Vec::new(), answer_bytes: 0, amount: String::new() };
    let mut answer = Answer::default();
    while Instant::now() < deadline {
        let sent = Instant::now();
        writer.write_all(request).context("sending a request")?;
        read_answer(&mut reader, &mut answer).context("reading an answer")?;
        seen.latencies.push(sent.elapsed());
        let first = seen.latencies.len() == 1;
        if let Err(e) = check(&answer, first) {
            seen.failures.push(e);
        } else if first {
            seen.answer_bytes = answer.head_bytes + answer.body.len();
            seen.amount = json_string(&String::from_utf8_lossy(&answer.body), "amount").unwrap_or_default();
        }
    }
    Ok(seen)
}

/// An HTTP/1.1 answer as the checks need it; reused from call to call.
#[derive(Default)]
struct Answer {
    status: String,
    payment_required: Option<String>,
    head_bytes: usize,
    body: Vec<u8>,
}

fn read_answer(reader: &mut impl BufRead, answer: &mut Answer) -> anyhow::Result<()> {
    answer.payment_required = None;
    answer.head_bytes = 0;
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        let read = reader.read_line(&mut line)?;
        ensure!(read > 0, "the server closed the connection");
        answer.head_bytes += read;
        let text = line.trim_end();
        if text.is_empty() {
            break;
        }
        if answer.head_bytes == read {
            answer.status = text.to_string();
        } else if let Some((name, value)) = text.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().context("a bad Content-Length")?);
            } else if name.eq_ignore_ascii_case("payment-required") {
                answer.payment_required = Some(value.to_string());
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                bail!("a {value} answer: the load generator reads Content-Length bodies only");
            }
        }
    }
    answer.body.resize(length.context("an answer without Content-Length")?, 0);
    reader.read_exact(&mut answer.body)?;
    Ok(())
}

/// A 402 with a PAYMENT-REQUIRED header; on `thorough` answers, the header must decode to
/// the body, an x402 v2 PaymentRequired with a price.
fn check(answer: &Answer, thorough: bool) -> Result<(), String> {
    let body = || String::from_utf8_lossy(&answer.body).chars().take(200).collect::<String>();
    if !answer.status.starts_with("HTTP/1.1 402 ") {
        return Err(format!("{}: {}", answer.status, body()));
    }
    let Some(header) = &answer.payment_required else {
        return Err(format!("a 402 without PAYMENT-REQUIRED: {}", body()));
    };
    if thorough {
        let decoded = b64_decode(header).ok_or("PAYMENT-REQUIRED is not base64")?;
        if decoded != answer.body {
            return Err("PAYMENT-REQUIRED does not decode to the 402's body".into());
        }
        let text = String::from_utf8_lossy(&decoded);
        if !text.contains(r#""x402Version":2"#) || json_string(&text, "amount").is_none() {
            return Err(format!("not an x402 v2 PaymentRequired with a price: {}", body()));
        }
    }
    Ok(())
}

fn request_bytes(addr: &SocketAddr, case: &Case) -> Vec<u8> {
    format!(
        "POST {} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
        case.path,
        case.body.len(),
        case.body
    )
    .into_bytes()
}

/// `cargo bench` of the hosted crate's in-process paywall bench; its `result` lines.
fn paid_calls(store: &str, folder: &Path) -> anyhow::Result<Vec<PaidRow>> {
    let calls = PAID_CALLS.to_string();
    let output = cargo()
        .args(["bench", "-p", "paperchain-hosted", "--bench", "paywall", "--", "--calls", &calls, "--dir"])
        .arg(folder)
        .read_stdout()?;
    let results: Vec<(String, String, u64, Percentiles)> = output.lines().filter_map(parse_result).collect();
    let mut rows = Vec::new();
    for (path, mode, calls, local) in &results {
        if mode != "local" {
            continue;
        }
        let hosted = results
            .iter()
            .find(|(p, m, ..)| p == path && m == "hosted")
            .with_context(|| format!("the paywall bench printed no hosted result for {path}"))?;
        rows.push(PaidRow { store: store.into(), path: path.clone(), calls: *calls, local: *local, hosted: hosted.3 });
    }
    ensure!(!rows.is_empty(), "the paywall bench printed no results:\n{output}");
    Ok(rows)
}

/// `result route=/v1/x mode=local calls=3000 p50_us=1.0 p99_us=2.0 max_us=3.0 mean_us=1.5`.
fn parse_result(line: &str) -> Option<(String, String, u64, Percentiles)> {
    let (fields, percentiles) = result_line(line)?;
    let calls = fields.get("calls")?.parse().ok()?;
    Some((fields.get("route")?.to_string(), fields.get("mode")?.to_string(), calls, percentiles))
}

/// A bench's `result key=value …` line: its fields by key, and its timings.
pub(super) fn result_line(line: &str) -> Option<(ResultFields<'_>, Percentiles)> {
    let fields = ResultFields(line.strip_prefix("result ")?);
    let number = |key: &str| fields.get(key)?.parse::<f64>().ok();
    let percentiles = Percentiles {
        p50_us: number("p50_us")?,
        p99_us: number("p99_us")?,
        max_us: number("max_us")?,
        mean_us: number("mean_us")?,
    };
    Some((fields, percentiles))
}

/// The `key=value` fields of a `result` line.
pub(super) struct ResultFields<'a>(&'a str);

impl<'a> ResultFields<'a> {
    /// The value of `key`.
    pub(super) fn get(&self, key: &str) -> Option<&'a str> {
        self.0.split_whitespace().find_map(|f| f.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
    }
}

impl Report {
    pub(super) fn print(&self) {
        println!(
            "\npaywall: unpaid calls (402) to a release `paperchain serve --hosted --sandbox`, {CONNECTIONS} keep-alive \
             connections, {} s after {} s of warm-up",
            WINDOW.as_secs(),
            WARM_UP.as_secs()
        );
        let header = [
            "route (quote)",
            "store on",
            "answers",
            "answers/s",
            "p50 ms",
            "p99 ms",
            "max ms",
            "402 + PAYMENT-REQUIRED",
            "server CPU",
            "load generator CPU",
            "other processes' CPU",
        ];
        let cores = self.cores as f64;
        let share = |cpu: Option<f64>, elapsed: Duration| match cpu {
            Some(seconds) => {
                format!("{:.0}% of {} cores", 100.0 * seconds / (elapsed.as_secs_f64() * cores), self.cores)
            }
            None => "-".into(),
        };
        let rows: Vec<Vec<String>> = self
            .load
            .iter()
            .map(|row| {
                let name = format!("{} ({})", row.path, row.quote);
                match &row.outcome {
                    Ok(load) => vec![
                        name,
                        row.store.clone(),
                        load.requests.to_string(),
                        format!("{:.0}", load.requests as f64 / load.elapsed.as_secs_f64()),
                        format!("{:.2}", ms(load.p50)),
                        format!("{:.2}", ms(load.p99)),
                        format!("{:.2}", ms(load.max)),
                        "all".into(),
                        share(load.server_cpu, load.elapsed),
                        share(load.client_cpu, load.elapsed),
                        share(load.other_cpu, load.elapsed),
                    ],
                    Err(e) => {
                        let mut cells = vec![name, row.store.clone(), format!("FAILED: {}", first_chars(e, 60))];
                        cells.resize(header.len(), "-".into());
                        cells
                    }
                }
            })
            .collect();
        print_table(&header, &rows);
        println!(
            "Client and server share this machine's {} cores: the load generator (xtask, one thread and one \
             connection per concurrent call) takes CPU the server would otherwise have, so the answers/s are a \
             lower bound for a server with the machine to itself. CPU: user and system time from /proc over the \
             window; other processes' is the machine's busy time (/proc/stat) less the two sides', and takes CPU \
             from both.",
            self.cores
        );
        println!(
            "Latency: from writing a request to reading its whole answer, every answer of the window; each answer's \
             status and header checked, and on each connection's first answer the header decoded and compared with \
             the body. A 402 is no ledger row: it adds to a count per hour, route and outcome, written every 5 s \
             (synchronous=NORMAL, WAL); the memory file system shows what the disk adds."
        );
        let mut said = Vec::new();
        for row in &self.load {
            if let Ok(load) = &row.outcome
                && !said.contains(&row.path)
            {
                said.push(row.path);
                println!(
                    "{}: {} B request, {} B answer, quoting {} units (6 decimals) on each",
                    row.path, row.request_bytes, load.answer_bytes, load.amount
                );
            }
        }

        println!(
            "\npaywall: its own cost on a paid call (x402), facilitator excluded: the same call in process, in local \
             mode and in hosted mode"
        );
        let header = [
            "route",
            "store on",
            "calls each",
            "local p50 µs",
            "local p99 µs",
            "hosted p50 µs",
            "hosted p99 µs",
            "paywall p50 µs",
            "paywall p99 µs",
            "local / hosted mean µs",
        ];
        match &self.paid {
            Ok(rows) => {
                let cells: Vec<Vec<String>> = rows
                    .iter()
                    .map(|row| {
                        vec![
                            row.path.clone(),
                            row.store.clone(),
                            row.calls.to_string(),
                            format!("{:.0}", row.local.p50_us),
                            format!("{:.0}", row.local.p99_us),
                            format!("{:.0}", row.hosted.p50_us),
                            format!("{:.0}", row.hosted.p99_us),
                            format!("{:+.0}", row.hosted.p50_us - row.local.p50_us),
                            format!("{:+.0}", row.hosted.p99_us - row.local.p99_us),
                            format!("{:.0} / {:.0}", row.local.mean_us, row.hosted.mean_us),
                        ]
                    })
                    .collect();
                print_table(&header, &cells);
                if let Some(worst) = rows.iter().map(|r| r.hosted.max_us).reduce(f64::max) {
                    println!("Slowest hosted call: {:.1} ms.", worst / 1e3);
                }
            }
            Err(e) => println!("FAILED: {}", first_chars(e, 200)),
        }
        println!(
            "hosted/benches/paywall.rs, one call at a time through the whole axum router (no socket), the two modes \
             alternating in blocks of 50. Hosted: a valid-looking PAYMENT-SIGNATURE per call (a new nonce each, \
             so the replay guard accepts it) and a facilitator that answers verify and settle at once; the paywall \
             columns are hosted minus local: payment decoding, requirement matching, the SQLite claim, finish and \
             ledger row (three commits, synchronous=FULL, WAL; on the memory file system their flushes cost \
             nothing), the paid call's task, the receipt. Quoting is not in the difference: local mode prepares the input too."
        );
    }

    /// `(whether Paperchain is at fault, what failed)`, for the bench's failure list.
    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        let mut failures: Vec<(bool, String)> = self
            .load
            .iter()
            .filter_map(|row| {
                let error = row.outcome.as_ref().err()?;
                Some((true, format!("paywall, unpaid {}, store on {}: {error}", row.path, row.store)))
            })
            .collect();
        if let Err(e) = &self.paid {
            failures.push((true, format!("paywall, paid calls in process: {e}")));
        }
        failures
    }
}

pub(super) fn print_table(header: &[&str], rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            let cells = rows.iter().filter_map(|r| r.get(i)).map(|c| c.chars().count());
            cells.max().unwrap_or(0).max(header[i].chars().count())
        })
        .collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, &w)| format!("{c:<w$}")).collect();
        println!("| {} |", padded.join(" | "));
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    line(&widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>());
    for row in rows {
        line(row);
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

pub(super) fn first_chars(text: &str, n: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let short: String = line.chars().take(n).collect();
    if short.len() < text.len() { format!("{short}…") } else { short }
}

/// User and system CPU time of a process so far, in clock ticks (`/proc/PID/stat`).
pub(super) fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses; utime and
    // stime are fields 14 and 15 of the whole line, 12 and 13 after it.
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// Busy time of the whole machine so far, in clock ticks: every CPU's time (`/proc/stat`)
/// but idle and I/O wait.
fn busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let times: Vec<u64> =
        stat.lines().next()?.strip_prefix("cpu ")?.split_whitespace().map(|t| t.parse().ok()).collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq; steal (the hypervisor's) is no process's
    // here, and guest time is inside user already.
    let (idle, iowait) = (*times.get(3)?, *times.get(4)?);
    Some(times.iter().take(7).sum::<u64>() - idle - iowait)
}

/// Clock ticks a second of `/proc` times.
pub(super) fn clock_ticks() -> f64 {
    Cmd::new("getconf").arg("CLK_TCK").quiet().read().ok().and_then(|t| t.trim().parse().ok()).unwrap_or(100.0)
}

/// The first string value of `"key"` in a JSON text (escapes left as they are).
fn json_string(json: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{key}\":\"");
    let start = json.find(&quoted)? + quoted.len();
    let end = json[start..].find('"')?;
    Some(json[start..start + end].to_string())
}

/// `paperchain serve --hosted --sandbox` on a free loopback port. Stopped with SIGTERM when
/// dropped, so it stops its anvil too.
pub(super) struct Server {
    child: Child,
    pub(super) addr: SocketAddr,
}

impl Server {
    /// Logs to `dir`/serve.log (appended), keeps its files and store in `data`.
    pub(super) fn start(paperchain: &Path, tools: &Path, dir: &Path, data: &Path) -> anyhow::Result<Server> {
        let anvil = npm_program(tools, "anvil", "PAPERCHAIN_ANVIL").map_err(anyhow::Error::msg)?;
        let log = dir.join("serve.log");
        eprintln!(
            "$ PAPERCHAIN_ANVIL={} {} serve --hosted --sandbox --listen 127.0.0.1:0 --data-dir {} 2>>{}",
            anvil.display(),
            paperchain.display(),
            data.display(),
            log.display()
        );
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .with_context(|| format!("opening {}", log.display()))?;
        let mut child = Command::new(paperchain)
            .args(["serve", "--hosted", "--sandbox", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data)
            .env("PAPERCHAIN_ANVIL", &anvil)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(file)
            .spawn()
            .with_context(|| format!("starting {}", paperchain.display()))?;
        let stdout = child.stdout.take().context("the server's stdout is not piped")?;
        // The first line says where it listens; the rest (how to try it) is drained unread.
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next());
            lines.for_each(drop);
        });
        let mut server = Server { child, addr: SocketAddr::from(([127, 0, 0, 1], 0)) };
        let first = match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(Some(Ok(line))) => line,
            _ => {
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                bail!("paperchain serve --hosted --sandbox printed no first line: {}", text.trim());
            }
        };
        let base_url = json_string(&first, "base_url").with_context(|| format!("no base_url in {first}"))?;
        server.addr = base_url
            .strip_prefix("http://")
            .and_then(|a| a.parse().ok())
            .with_context(|| format!("base_url {base_url} is not http://address:port"))?;
        Ok(server)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Cmd::new("kill").args(["-TERM", &pid]).quiet().output();
        let stop = Instant::now() + Duration::from_secs(10);
        while Instant::now() < stop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_answers_and_checks_them() {
        let body = r#"{"x402Version":2,"accepts":[{"amount":"1000"}]}"#;
        let wire = format!(
            "HTTP/1.1 402 Payment Required\r\ncontent-type: application/json\r\npayment-required: {}\r\n\
             content-length: {}\r\n\r\n{body}HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{{}}",
            b64(body.as_bytes()),
            body.len()
        );
        let mut reader = wire.as_bytes();
        let mut answer = Answer::default();
        read_answer(&mut reader, &mut answer).unwrap();
        assert_eq!(check(&answer, true), Ok(()));
        assert_eq!(json_string(body, "amount").as_deref(), Some("1000"));
        read_answer(&mut reader, &mut answer).unwrap();
        assert!(check(&answer, false).unwrap_err().starts_with("HTTP/1.1 200 OK"));
        assert!(read_answer(&mut reader, &mut answer).is_err());
    }

    #[test]
    fn parses_the_in_process_results() {
        let line = "result route=/v1/chain/calldata mode=hosted calls=3000 p50_us=210.5 p99_us=900.0 max_us=4000.0 mean_us=250.0";
        let (route, mode, calls, p) = parse_result(line).unwrap();
        assert_eq!((route.as_str(), mode.as_str(), calls), ("/v1/chain/calldata", "hosted", 3000));
        assert_eq!((p.p50_us, p.p99_us, p.max_us, p.mean_us), (210.5, 900.0, 4000.0, 250.0));
        assert!(parse_result("paywall bench: ledger").is_none());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let times: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(percentile(&times, 0.5), Duration::from_millis(50));
        assert_eq!(percentile(&times, 0.99), Duration::from_millis(99));
        assert_eq!(percentile(&times[..1], 0.99), Duration::from_millis(1));
    }
}
