//! The `chain` group: Paperchain's chain reads (every route `cast` has an equivalent for) answered by a
//! warm `paperchain serve`, against Foundry's `cast` asking the same anvil the same question.
//!
//! Both sides reach anvil through a small counting HTTP proxy (a thread here), so the table
//! also shows how many JSON-RPC HTTP requests each answer took: a JSON-RPC batch is one
//! request. The token route must take exactly one (`../shared/spec/routebook.md`: one round trip).
//!
//! Each Paperchain call is one HTTP/1.1 request on a new connection, sent from xtask's own
//! process and timed until the whole answer is read: what an agent or an app talking to the
//! local server waits for. `cast` is a child process per question, timed whole: what its user
//! waits for. A `curl` child's own start, measured on `/healthz`, is printed beside the table
//! for whoever calls the server from a shell.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};

use super::Server;
use paperchain_testkit::anvil::AnvilProcess;
use paperchain_testkit::tools::{npm_bin, npm_program};

use super::{Outcome, Timing, time_cell};
use crate::cmd::Cmd;
use crate::project_root;

/// The fixture token, compiled by engine/tests/fixtures/contracts/build.js.
const TOKEN_ARTIFACT: &str = "engine/tests/fixtures/contracts/FixtureToken.json";
/// Its constructor and arguments: name, symbol, decimals, supply (minted to the deployer).
const TOKEN_CONSTRUCTOR: &str = "constructor(string,string,uint8,uint256)";
const TOKEN_ARGS: [&str; 4] = ["Fixture Token", "FIX", "18", "1000000000000000000000000"];
/// Said under the table.
const NOTES: &[&str] = &[
    "Paperchain: one HTTP/1.1 request per call on a new connection to a warm `paperchain serve`, sent by the \
     bench's own process and timed until the answer is read; cast: the `cast` children for the same question, \
     one after another, timed whole.",
    "token: cast has no one-shot token info; its side is `cast erc20 name`, `symbol`, `decimals` and \
     `total-supply`, four processes and four requests.",
    "tx: cast's side is `cast tx` and `cast receipt` (status and fees need both).",
    "code: Paperchain also names a proxy's implementation and admin; cast's side is `cast codesize`, \
     `cast implementation` and `cast admin`. balances: `cast balance` and one `cast call balanceOf` per token.",
    "block/by-number, status: Paperchain reads the block once; receipt and logs: Paperchain also decodes every log.",
    "RPC requests: HTTP requests to anvil through the counting proxy per call (a JSON-RPC batch is one), \
     with the JSON-RPC calls inside them in brackets.",
];

/// One question asked of both sides.
struct Case {
    route: &'static str,
    /// JSON body POSTed to `/v1/chain/<route>`.
    body: String,
    /// `cast` argument lists, run one after another (`--rpc-url` is added).
    cast: Vec<Vec<String>>,
    /// Whether the two answers agree: what was compared, or what differs.
    agree: fn(&str, &[String]) -> anyhow::Result<String>,
}

/// HTTP requests and JSON-RPC calls of each run of one side.
#[derive(Default)]
struct Counts {
    requests: Vec<u64>,
    calls: Vec<u64>,
    /// The JSON-RPC methods of the last run.
    methods: Vec<String>,
}

pub(super) struct Row {
    route: &'static str,
    paperchain: Outcome,
    cast: Outcome,
    paperchain_counts: Counts,
    cast_counts: Counts,
    /// What the check compared on every run, or why the answers disagree.
    agreed: Result<String, String>,
}

/// What the group measured, printed after the other groups' tables.
pub(super) struct Report {
    rows: Vec<Row>,
    runs: u32,
    /// Median wall time of a `curl` child asking the server's `/healthz`.
    curl: Outcome,
}

pub(super) fn measure(paperchain: &Path, tools: &Path, runs: u32, dir: &Path) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let cast = npm_bin(tools, "cast");
    ensure!(cast.is_file(), "cast is not installed at {}; run `cargo xtask setup`", cast.display());
    let binary = npm_program(tools, "anvil", "PAPERCHAIN_ANVIL").map_err(anyhow::Error::msg)?;
    eprintln!("$ {} --host 127.0.0.1 --port 0 --chain-id 1", binary.display());
    let anvil = AnvilProcess::spawn(&binary, 1, &[])?;
    let proxy = Proxy::start(anvil.port)?;
    let chain = format!("http://127.0.0.1:{}", proxy.port);
    let direct = format!("http://127.0.0.1:{}", anvil.port);
    println!("bench: anvil at {direct}, counting proxy at {chain}");

    // Set-up talks to anvil directly, so the proxy counts only the timed questions.
    // `--rpc-url` belongs to the subcommand: it follows it.
    let cast_cmd =
        |command: &str, url: &str| Cmd::new(&cast).env("NO_PROXY", "127.0.0.1").args([command, "--rpc-url", url]);
    let accounts = cast_cmd("rpc", &direct).arg("eth_accounts").read()?;
    let addresses: Vec<&str> = accounts.split('"').filter(|s| s.starts_with("0x")).collect();
    let (&[owner, receiver], _) = addresses.split_first_chunk::<2>().context("anvil has no dev accounts")?;
    let artifact = project_root().join(TOKEN_ARTIFACT);
    let artifact = std::fs::read_to_string(&artifact).with_context(|| format!("reading {}", artifact.display()))?;
    let bytecode = json_field(&artifact, "bytecode").context("the token artifact has no bytecode")?;
    let send = cast_cmd("send", &direct).args(["--json", "--unlocked", "--from", owner]);
    let deployed = send.clone().args(["--create", &bytecode, TOKEN_CONSTRUCTOR]).args(TOKEN_ARGS).read()?;
    let token = json_field(&deployed, "contractAddress").context("cast send --create printed no contractAddress")?;
    let sent = send.args([&token, "transfer(address,uint256)", receiver, "12345"]).read()?;
    let tx = json_field(&sent, "transactionHash").context("cast send printed no transactionHash")?;
    ensure!(json_field(&sent, "status").as_deref() == Some("0x1"), "the token transfer {tx} failed");
    println!("bench: token {token} deployed, transfer {tx}");

    let server = Server::start(paperchain, dir, &[("PAPERCHAIN_RPC_ETHEREUM", chain.as_str())])?;
    let cases = cases(owner, receiver, &token, &tx);
    let mut rows = Vec::new();
    for case in &cases {
        rows.push(measure_case(case, runs, &server, &Cast { program: &cast, url: &chain }, &proxy));
    }
    let curl = curl_floor(&server, runs);
    Ok(Report { rows, runs, curl })
}

fn cases(owner: &str, receiver: &str, token: &str, tx: &str) -> Vec<Case> {
    let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let (owner, receiver, token, tx) = (owner.to_string(), receiver.to_string(), token.to_string(), tx.to_string());
    vec![
        Case {
            route: "balance",
            body: format!(r#"{{"chain":"ethereum","address":"{owner}"}}"#),
            cast: vec![args(&["balance", &owner])],
            agree: |ours, cast| {
                let wei = field(ours, "wei")?;
                same("wei", &wei, first_word(&cast[0]))?;
                Ok(format!("balance {wei} wei"))
            },
        },
        Case {
            route: "token",
            body: format!(r#"{{"chain":"ethereum","address":"{token}"}}"#),
            cast: ["name", "symbol", "decimals", "total-supply"].iter().map(|q| args(&["erc20", q, &token])).collect(),
            agree: |ours, cast| {
                same("name", &field(ours, "name")?, cast[0].trim())?;
                same("symbol", &field(ours, "symbol")?, cast[1].trim())?;
                same("decimals", &field(ours, "decimals")?, cast[2].trim())?;
                same("total supply", &field(ours, "total_supply_raw")?, first_word(&cast[3]))?;
                Ok("name, symbol, decimals, total supply".into())
            },
        },
        Case {
            route: "block",
            body: r#"{"chain":"ethereum"}"#.into(),
            cast: vec![args(&["block", "latest"])],
            agree: |ours, cast| {
                let number = field(ours, "number")?;
                same("number", &number, line_value(&cast[0], "number")?)?;
                same("hash", &field(ours, "hash")?, line_value(&cast[0], "hash")?)?;
                same("gas used", &field(ours, "gas_used")?, line_value(&cast[0], "gasUsed")?)?;
                Ok(format!("block {number}: number, hash, gas used"))
            },
        },
        Case {
            route: "tx",
            body: format!(r#"{{"chain":"ethereum","hash":"{tx}"}}"#),
            cast: vec![args(&["tx", &tx]), args(&["receipt", &tx])],
            agree: |ours, cast| {
                same("block", &field(ours, "block")?, line_value(&cast[1], "blockNumber")?)?;
                same("gas used", &field(ours, "gas_used")?, line_value(&cast[1], "gasUsed")?)?;
                let price = line_value(&cast[1], "effectiveGasPrice")?;
                same("effective gas price", &field(ours, "effective_gas_price_wei")?, price)?;
                same("nonce", &field(ours, "nonce")?, line_value(&cast[0], "nonce")?)?;
                let cast_from = line_value(&cast[0], "from")?.to_ascii_lowercase();
                same("from", &field(ours, "from")?.to_ascii_lowercase(), &cast_from)?;
                let status = field(ours, "status")?;
                let cast_status = line_value(&cast[1], "status")?;
                ensure!(
                    status == "success" && cast_status.starts_with("1 "),
                    "status: paperchain {status}, cast {cast_status}"
                );
                Ok("status, block, gas used, effective gas price, nonce, from".into())
            },
        },
        Case {
            route: "nonce",
            body: format!(r#"{{"chain":"ethereum","address":"{owner}"}}"#),
            cast: vec![args(&["nonce", &owner])],
            agree: |ours, cast| {
                let nonce = field(ours, "nonce")?;
                same("nonce", &nonce, first_word(&cast[0]))?;
                Ok(format!("nonce {nonce}"))
            },
        },
        Case {
            route: "storage",
            body: format!(r#"{{"chain":"ethereum","address":"{token}","slot":"2"}}"#),
            cast: vec![args(&["storage", &token, "2"])],
            agree: |ours, cast| {
                let value = field(ours, "value")?;
                same("slot 2", &value, first_word(&cast[0]))?;
                Ok(format!("slot 2 = {value}"))
            },
        },
        Case {
            route: "gas",
            body: r#"{"chain":"ethereum"}"#.into(),
            cast: vec![args(&["gas-price"])],
            agree: |ours, cast| {
                let price = field(ours, "gas_price_wei")?;
                same("gas price", &price, first_word(&cast[0]))?;
                Ok(format!("gas price {price} wei"))
            },
        },
        Case {
            route: "receipt",
            body: format!(r#"{{"chain":"ethereum","hash":"{tx}"}}"#),
            cast: vec![args(&["receipt", &tx])],
            agree: |ours, cast| {
                same("block", &field(ours, "block")?, line_value(&cast[0], "blockNumber")?)?;
                same("gas used", &field(ours, "gas_used")?, line_value(&cast[0], "gasUsed")?)?;
                Ok("block, gas used".into())
            },
        },
        Case {
            route: "logs",
            body: format!(r#"{{"chain":"ethereum","address":"{token}","from_block":0,"to_block":"latest"}}"#),
            cast: vec![args(&["logs", "--from-block", "0", "--to-block", "latest", "--address", &token])],
            agree: |ours, cast| {
                let count = field(ours, "count")?;
                let theirs = cast[0].lines().filter(|l| l.trim_start().starts_with("- address:")).count();
                same("log count", &count, &theirs.to_string())?;
                Ok(format!("{count} logs"))
            },
        },
        Case {
            route: "call",
            body: format!(
                r#"{{"chain":"ethereum","to":"{token}","signature":"balanceOf(address)(uint256)","args":["{receiver}"]}}"#
            ),
            cast: vec![args(&["call", &token, "balanceOf(address)(uint256)", &receiver])],
            agree: |ours, cast| {
                let value = field(ours, "value")?;
                same("balanceOf", &value, first_word(&cast[0]))?;
                Ok(format!("balanceOf = {value}"))
            },
        },
        Case {
            route: "code",
            body: format!(r#"{{"chain":"ethereum","address":"{token}"}}"#),
            cast: vec![args(&["codesize", &token]), args(&["implementation", &token]), args(&["admin", &token])],
            agree: |ours, cast| {
                let size = field(ours, "code_size")?;
                same("code size", &size, first_word(&cast[0]))?;
                let zero = "0x0000000000000000000000000000000000000000";
                ensure!(
                    field(ours, "proxy")? == "null" && first_word(&cast[1]) == zero && first_word(&cast[2]) == zero,
                    "proxy: paperchain says one, or cast found a slot set"
                );
                Ok(format!("{size} bytes, not a proxy"))
            },
        },
        Case {
            route: "block/by-number",
            body: r#"{"chain":"ethereum","block":1}"#.into(),
            cast: vec![args(&["block", "1"])],
            agree: |ours, cast| {
                let hash = field(ours, "hash")?;
                same("hash", &hash, line_value(&cast[0], "hash")?)?;
                same("gas used", &field(ours, "gas_used")?, line_value(&cast[0], "gasUsed")?)?;
                Ok(format!("block 1 {hash}"))
            },
        },
        Case {
            route: "fees",
            body: r#"{"chain":"ethereum","blocks":2,"percentiles":[10,50,90]}"#.into(),
            cast: vec![args(&["rpc", "eth_feeHistory", "0x2", "latest", "[10,50,90]"])],
            agree: |ours, cast| {
                let oldest = field(ours, "oldest_block")?;
                let theirs = json_field(&cast[0], "oldestBlock").context("cast printed no oldestBlock")?;
                let theirs = u64::from_str_radix(theirs.trim_start_matches("0x"), 16)?;
                same("oldest block", &oldest, &theirs.to_string())?;
                Ok(format!("oldest block {oldest}"))
            },
        },
        Case {
            route: "allowance",
            body: format!(r#"{{"chain":"ethereum","token":"{token}","owner":"{owner}","spender":"{receiver}"}}"#),
            cast: vec![args(&["call", &token, "allowance(address,address)(uint256)", &owner, &receiver])],
            agree: |ours, cast| {
                let raw = field(ours, "allowance_raw")?;
                same("allowance", &raw, first_word(&cast[0]))?;
                Ok(format!("allowance {raw}"))
            },
        },
        Case {
            route: "balances",
            body: format!(r#"{{"chain":"ethereum","address":"{receiver}","tokens":["{token}"]}}"#),
            cast: vec![
                args(&["balance", &receiver]),
                args(&["call", &token, "balanceOf(address)(uint256)", &receiver]),
            ],
            agree: |ours, cast| {
                same("native", &field(ours, "wei")?, first_word(&cast[0]))?;
                let raw = field(ours, "raw")?;
                same("token balance", &raw, first_word(&cast[1]))?;
                Ok(format!("native and token {raw}"))
            },
        },
        Case {
            route: "status",
            body: r#"{"chains":["ethereum"]}"#.into(),
            cast: vec![args(&["block", "latest"])],
            agree: |ours, cast| {
                let head = field(ours, "head_block")?;
                same("head", &head, line_value(&cast[0], "number")?)?;
                Ok(format!("head {head}"))
            },
        },
    ]
}

/// Warm-up run, then `runs` timed runs alternating the sides; every run's answers are compared.
/// `cast` reading the chain through the proxy.
struct Cast<'a> {
    program: &'a Path,
    url: &'a str,
}

/// How long a `curl` child takes for the cheapest answer the server gives: what calling it
/// from a shell adds to every figure in the table.
fn curl_floor(server: &Server, runs: u32) -> Outcome {
    let health =
        Cmd::new("curl").args(["-sSf", "--noproxy", "*", "-o", "/dev/null"]).arg(format!("{}/healthz", server.url));
    let mut times = Vec::new();
    for run in 0..=runs {
        let start = Instant::now();
        health.clone().quiet().run().map_err(|e| format!("{e:#}"))?;
        if run > 0 {
            times.push(start.elapsed());
        }
    }
    Ok(Timing::of(&times, None, 0))
}

fn measure_case(case: &Case, runs: u32, server: &Server, cast: &Cast, proxy: &Proxy) -> Row {
    println!("bench: chain: {}", case.route);
    let path = format!("/v1/chain/{}", case.route);
    let mut times: [Result<Vec<Duration>, String>; 2] = [Ok(Vec::new()), Ok(Vec::new())];
    let mut counts = [Counts::default(), Counts::default()];
    // None until both sides have answered once; the first disagreement stays.
    let mut agreed: Option<Result<String, String>> = None;
    for run in 0..=runs {
        let mut answers: [Option<Vec<String>>; 2] = [None, None];
        for side in 0..2 {
            let Ok(so_far) = &mut times[side] else { continue };
            let commands: Vec<Cmd> = case
                .cast
                .iter()
                .map(|args| {
                    // Last, after the positional arguments: `erc20 name` takes it there too.
                    Cmd::new(cast.program).env("NO_PROXY", "127.0.0.1").args(args).args(["--rpc-url", cast.url])
                })
                .collect();
            let before = proxy.snapshot();
            let start = Instant::now();
            let outputs: anyhow::Result<Vec<String>> = if side == 0 {
                post_json(server.addr, &path, &case.body).map(|answer| vec![answer])
            } else {
                commands.into_iter().map(|cmd| if run == 0 { cmd } else { cmd.quiet() }.read()).collect()
            };
            let elapsed = start.elapsed();
            let after = proxy.snapshot();
            let name = if side == 0 { "paperchain" } else { "cast" };
            match outputs {
                Ok(outputs) => {
                    if run > 0 {
                        eprintln!("  {name} run {run}/{runs}: {:.1} ms", elapsed.as_secs_f64() * 1e3);
                        so_far.push(elapsed);
                        counts[side].requests.push(after.requests - before.requests);
                        counts[side].calls.push(after.calls - before.calls);
                        counts[side].methods = proxy.methods_since(before.methods);
                    }
                    answers[side] = Some(outputs);
                }
                Err(e) => {
                    eprintln!("  {name} failed: {e:#}");
                    times[side] = Err(format!("{e:#}"));
                }
            }
        }
        if let [Some(ours), Some(theirs)] = &answers
            && !matches!(agreed, Some(Err(_)))
        {
            let ours = ours.first().map_or("", String::as_str);
            agreed = Some((case.agree)(ours, theirs).map_err(|e| {
                eprintln!("  answers differ: {e:#}\n  paperchain: {ours}\n  cast: {}", theirs.join(" | "));
                format!("{e:#}")
            }));
        }
    }
    let agreed = agreed.unwrap_or_else(|| Err("not compared: a side failed".into()));
    if let Ok(checked) = &agreed {
        eprintln!("  answers agree on every run: {checked}");
    }
    let [ours, theirs] = times;
    let [paperchain_counts, cast_counts] = counts;
    Row {
        route: case.route,
        paperchain: ours.map(|t| Timing::of(&t, None, 0)),
        cast: theirs.map(|t| Timing::of(&t, None, 0)),
        paperchain_counts,
        cast_counts,
        agreed,
    }
}

impl Report {
    pub(super) fn print(&self) {
        println!("\nchain: Paperchain (warm server) against cast 1.7.1, on anvil 1.7.1 (chain id 1)");
        let header = [
            "route",
            "paperchain ms median (min)",
            "cast ms median (min)",
            "time paperchain/cast",
            "paperchain RPC requests/call",
            "cast RPC requests/call",
            "answers",
        ];
        let cells: Vec<[String; 7]> = self
            .rows
            .iter()
            .map(|row| {
                let ratio = match (&row.paperchain, &row.cast) {
                    (Ok(ours), Ok(theirs)) => {
                        format!("{:.2}x", ours.median.as_secs_f64() / theirs.median.as_secs_f64())
                    }
                    _ => "-".into(),
                };
                [
                    row.route.to_string(),
                    precise_time_cell(&row.paperchain),
                    precise_time_cell(&row.cast),
                    ratio,
                    counts_cell(&row.paperchain_counts),
                    counts_cell(&row.cast_counts),
                    match &row.agreed {
                        Ok(_) => "agree".into(),
                        Err(_) => "DIFFER".into(),
                    },
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
        line(&header.map(String::from));
        line(&widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>());
        for row in &cells {
            line(row);
        }
        println!(
            "Median (minimum) wall time of {} runs after one warm-up call of each route; the ratio is \
             paperchain/cast, below 1 where Paperchain is faster.",
            self.runs
        );
        for note in NOTES {
            println!("Note: {note}");
        }
        match &self.curl {
            Ok(t) => println!(
                "Note: from a shell, a `curl` child adds its own start to every Paperchain figure: {:.1} ms median \
                 ({:.1} min) for the server's `/healthz` here.",
                t.median.as_secs_f64() * 1e3,
                t.min.as_secs_f64() * 1e3
            ),
            Err(e) => println!("Note: curl on `/healthz` failed: {e}"),
        }
        for row in &self.rows {
            let methods = |counts: &Counts| counts.methods.join(", ");
            println!(
                "JSON-RPC methods, {}: paperchain [{}]; cast [{}]",
                row.route,
                methods(&row.paperchain_counts),
                methods(&row.cast_counts)
            );
        }
        for row in &self.rows {
            if let Ok(checked) = &row.agreed {
                println!("Checked on every run, {}: {checked} equal on both sides", row.route);
            }
        }
    }

    /// `(whether Paperchain is at fault, what failed)`, for the bench's failure list.
    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        let mut failures = Vec::new();
        for row in &self.rows {
            let mut add = |ours: bool, what: String| failures.push((ours, format!("chain, {}: {what}", row.route)));
            if let Err(e) = &row.paperchain {
                add(true, format!("paperchain: {e}"));
            }
            if let Err(e) = &row.cast {
                add(false, format!("cast: {e}"));
            }
            if let (Ok(_), Ok(_), Err(e)) = (&row.paperchain, &row.cast, &row.agreed) {
                add(true, format!("the answers differ: {e}"));
            }
            if row.route == "token" && row.paperchain.is_ok() && row.paperchain_counts.requests.iter().any(|&n| n != 1)
            {
                let counts = counts_cell(&row.paperchain_counts);
                add(true, format!("token info must take one RPC round trip; it took {counts} requests a call"));
            }
        }
        failures
    }
}

/// Milliseconds with one decimal: these calls take a few milliseconds, where whole ones hide the ratio.
fn precise_time_cell(outcome: &Outcome) -> String {
    match outcome {
        Ok(t) => format!("{:.1} ({:.1})", t.median.as_secs_f64() * 1e3, t.min.as_secs_f64() * 1e3),
        Err(_) => time_cell(outcome),
    }
}

/// Requests per call (a range when the runs differ), with the JSON-RPC calls in brackets.
fn counts_cell(counts: &Counts) -> String {
    let range = |values: &[u64]| {
        let (min, max) = (values.iter().min(), values.iter().max());
        match (min, max) {
            (Some(min), Some(max)) if min == max => min.to_string(),
            (Some(min), Some(max)) => format!("{min}-{max}"),
            _ => "-".into(),
        }
    };
    if counts.requests.is_empty() {
        return "-".into();
    }
    format!("{} ({})", range(&counts.requests), range(&counts.calls))
}

fn same(what: &str, ours: &str, theirs: &str) -> anyhow::Result<()> {
    ensure!(ours == theirs, "{what}: paperchain {ours:?}, cast {theirs:?}");
    Ok(())
}

fn field(json: &str, key: &str) -> anyhow::Result<String> {
    json_field(json, key).with_context(|| format!("paperchain's answer has no {key}"))
}

fn first_word(text: &str) -> &str {
    text.split_whitespace().next().unwrap_or("")
}

/// The value of `key` in cast's `key   value` output.
fn line_value<'a>(text: &'a str, key: &str) -> anyhow::Result<&'a str> {
    text.lines()
        .find_map(|line| line.strip_prefix(key).filter(|rest| rest.starts_with(' ')).map(str::trim))
        .with_context(|| format!("cast printed no {key}"))
}

/// The first value of `"key"` in a JSON text, a string unquoted (escapes left as they are) or
/// another scalar as written. Enough for the flat answers compared here; xtask has no JSON crate.
fn json_field(json: &str, key: &str) -> Option<String> {
    let quoted = format!("\"{key}\"");
    let mut rest = json;
    while let Some(at) = rest.find(&quoted) {
        rest = &rest[at + quoted.len()..];
        let Some(value) = rest.trim_start().strip_prefix(':') else { continue };
        let value = value.trim_start();
        if let Some(text) = value.strip_prefix('"') {
            let mut escaped = false;
            let end = text.char_indices().find(|&(_, c)| {
                let end = c == '"' && !escaped;
                escaped = c == '\\' && !escaped;
                end
            })?;
            return Some(text[..end.0].to_string());
        }
        let end = value.find([',', '}', ']']).unwrap_or(value.len());
        return Some(value[..end].trim().to_string());
    }
    None
}

/// A forwarding HTTP/1.1 proxy to anvil that counts requests and the JSON-RPC calls in them.
/// Its threads live as long as xtask.
struct Proxy {
    port: u16,
    requests: Arc<AtomicU64>,
    calls: Arc<AtomicU64>,
    methods: Arc<Mutex<Vec<String>>>,
}

#[derive(Clone, Copy)]
struct Snapshot {
    requests: u64,
    calls: u64,
    methods: usize,
}

impl Proxy {
    fn start(upstream: u16) -> anyhow::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let proxy = Proxy {
            port: listener.local_addr()?.port(),
            requests: Arc::default(),
            calls: Arc::default(),
            methods: Arc::default(),
        };
        let (requests, calls, methods) = (proxy.requests.clone(), proxy.calls.clone(), proxy.methods.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (requests, calls, methods) = (requests.clone(), calls.clone(), methods.clone());
                std::thread::spawn(move || {
                    if let Err(e) = relay(client, upstream, |body| {
                        let text = String::from_utf8_lossy(body);
                        let names: Vec<String> = text
                            .split("\"method\"")
                            .skip(1)
                            .filter_map(|after| after.split('"').nth(1).map(String::from))
                            .collect();
                        requests.fetch_add(1, Ordering::SeqCst);
                        calls.fetch_add(names.len() as u64, Ordering::SeqCst);
                        if let Ok(mut list) = methods.lock() {
                            let name = if text.trim_start().starts_with('[') {
                                format!("batch of {}", names.join("+"))
                            } else {
                                names.join("+")
                            };
                            list.push(name);
                        }
                    }) {
                        eprintln!("  proxy: {e:#}");
                    }
                });
            }
        });
        Ok(proxy)
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            requests: self.requests.load(Ordering::SeqCst),
            calls: self.calls.load(Ordering::SeqCst),
            methods: self.methods.lock().map_or(0, |m| m.len()),
        }
    }

    /// The requests seen since a snapshot's count, one line each.
    fn methods_since(&self, from: usize) -> Vec<String> {
        self.methods.lock().map(|m| m.get(from..).unwrap_or_default().to_vec()).unwrap_or_default()
    }
}

/// Forwards one client connection's requests to anvil, one at a time (keep-alive both ways),
/// calling `count` with each request body before it is sent on.
fn relay(client: TcpStream, upstream: u16, count: impl Fn(&[u8])) -> anyhow::Result<()> {
    let server = TcpStream::connect(("127.0.0.1", upstream)).context("connecting to anvil")?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut to_client, mut to_server) = (client.try_clone()?, server.try_clone()?);
    let (mut from_client, mut from_server) = (BufReader::new(client), BufReader::new(server));
    while let Some(request) = read_message(&mut from_client)? {
        count(&request.body);
        to_server.write_all(&request.head)?;
        to_server.write_all(&request.body)?;
        let response = read_message(&mut from_server)?.context("anvil closed the connection")?;
        to_client.write_all(&response.head)?;
        to_client.write_all(&response.body)?;
    }
    Ok(())
}

/// POSTs a JSON body on a new connection and reads the whole answer, which must be a 200.
fn post_json(server: SocketAddr, path: &str, body: &str) -> anyhow::Result<String> {
    let stream = TcpStream::connect(server).with_context(|| format!("connecting to {server}"))?;
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    write!(
        writer,
        "POST {path} HTTP/1.1\r\nHost: {server}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    let answer = read_message(&mut BufReader::new(stream))?.context("the server closed the connection unanswered")?;
    let head = String::from_utf8_lossy(&answer.head);
    let chunked = head.lines().any(|l| {
        l.split_once(':').is_some_and(|(name, value)| {
            name.eq_ignore_ascii_case("transfer-encoding") && value.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = if chunked { dechunk(&answer.body)? } else { answer.body };
    let body = String::from_utf8(body).context("the answer is not UTF-8")?;
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    ensure!(status == "200", "POST {path} answered {status}: {body}");
    Ok(body)
}

/// The data of a chunked body as `read_message` keeps it (sizes, data and trailers).
fn dechunk(mut framed: &[u8]) -> anyhow::Result<Vec<u8>> {
    let mut data = Vec::new();
    loop {
        let end = framed.windows(2).position(|w| w == b"\r\n").context("a chunk size without its line end")?;
        let size = String::from_utf8_lossy(&framed[..end]);
        let size = size.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size, 16).with_context(|| format!("a bad chunk size {size:?}"))?;
        framed = &framed[end + 2..];
        if size == 0 {
            return Ok(data);
        }
        ensure!(framed.len() >= size + 2, "a chunk shorter than its size");
        data.extend_from_slice(&framed[..size]);
        framed = &framed[size + 2..];
    }
}

/// An HTTP/1.1 message as it was read: the head through its blank line, and the body (a
/// chunked body keeps its framing).
struct Message {
    head: Vec<u8>,
    body: Vec<u8>,
}

/// The next message on a connection, `None` when the peer closed it between messages.
fn read_message(reader: &mut impl BufRead) -> anyhow::Result<Option<Message>> {
    let mut head = Vec::new();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut line = Vec::new();
        if reader.read_until(b'\n', &mut line)? == 0 {
            ensure!(head.is_empty(), "the connection closed inside an HTTP head");
            return Ok(None);
        }
        head.extend_from_slice(&line);
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            break;
        }
        if let Some((name, value)) = text.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().context("a bad Content-Length")?;
            } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            let mut line = Vec::new();
            reader.read_until(b'\n', &mut line)?;
            body.extend_from_slice(&line);
            let size = String::from_utf8_lossy(&line);
            let size = size.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size, 16).with_context(|| format!("a bad chunk size {size:?}"))?;
            if size == 0 {
                // Trailers, through the blank line.
                loop {
                    let mut line = Vec::new();
                    ensure!(reader.read_until(b'\n', &mut line)? > 0, "the connection closed in a trailer");
                    body.extend_from_slice(&line);
                    if line.trim_ascii().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size + 2, 0);
            reader.read_exact(&mut body[start..])?;
        }
    } else {
        body.resize(length, 0);
        reader.read_exact(&mut body)?;
    }
    Ok(Some(Message { head, body }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dechunks_bodies() {
        let framed = b"4\r\nWiki\r\n6;ext=1\r\npedia \r\n0\r\nTrailer: x\r\n\r\n";
        assert_eq!(dechunk(framed).unwrap(), b"Wikipedia ");
        assert!(dechunk(b"9\r\nshort\r\n").is_err());
    }

    #[test]
    fn reads_json_fields() {
        let json = r#"{"chain":"ethereum","name":"A \"B\"","decimals":18,"hash":null,"x":{"wei":"5"}}"#;
        assert_eq!(json_field(json, "name").as_deref(), Some(r#"A \"B\""#));
        assert_eq!(json_field(json, "decimals").as_deref(), Some("18"));
        assert_eq!(json_field(json, "hash").as_deref(), Some("null"));
        assert_eq!(json_field(json, "wei").as_deref(), Some("5"));
        // A value equal to a key is not the key.
        assert_eq!(json_field(r#"{"a":"chain","chain":"base"}"#, "chain").as_deref(), Some("base"));
        assert_eq!(json_field(json, "symbol"), None);
    }

    #[test]
    fn reads_cast_lines() {
        let text = "blockNumber          2\nnumber               7\nstatus               1 (success)\n";
        assert_eq!(line_value(text, "number").ok(), Some("7"));
        assert_eq!(line_value(text, "status").ok(), Some("1 (success)"));
        assert!(line_value(text, "hash").is_err());
    }

    #[test]
    fn reads_http_messages_with_length_and_chunks() {
        let wire = b"POST / HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let mut reader = &wire[..];
        let first = read_message(&mut reader).ok().flatten().map(|m| m.body);
        assert_eq!(first.as_deref(), Some(&b"{}"[..]));
        let second = read_message(&mut reader).ok().flatten().map(|m| m.body);
        assert_eq!(second.as_deref(), Some(&b"3\r\nabc\r\n0\r\n\r\n"[..]));
        assert!(matches!(read_message(&mut reader), Ok(None)));
    }

    #[test]
    fn counts_cells() {
        let counts = Counts { requests: vec![1, 1], calls: vec![4, 4], methods: Vec::new() };
        assert_eq!(counts_cell(&counts), "1 (4)");
        let counts = Counts { requests: vec![2, 1], calls: vec![2, 1], methods: Vec::new() };
        assert_eq!(counts_cell(&counts), "1-2 (1-2)");
    }
}
