//! The `wallet` group: the paying client's own cost on a paid call, everything but the
//! server and the chain.
//!
//! The wallet's `client` bench (wallet/benches/client.rs) times `PayingClient::call` (a
//! whole x402 v2 exchange: the 402 read, the policy's choice, the ledger's rows, the
//! EIP-3009 signature, the paid request, the settlement read) against a loopback server
//! that answers at once, and the bare transport of the same two requests made with plain
//! reqwest; the difference is the client's. It times a second paid side paying with x402
//! `upto` (a Permit2 signature and one chain read of Permit2's allowance), and a third paying
//! over an x402 `batch-settlement` channel (one deposit, then a voucher a call), against the
//! same bare transport. It runs twice: with the ledger on the bench
//! folder's disk, and on a memory file system (/dev/shm, when it is tmpfs), where a flush
//! costs nothing, so the table shows what the disk adds to the ledger's FULL commits.

use std::path::Path;

use anyhow::{Context as _, ensure};

use super::paywall::{
    MEMORY_FOLDER, Percentiles, Removed, filesystem_of, first_chars, print_table, result_line, store_label,
};
use crate::cargo;

/// Timed calls of each side.
const CALLS: u32 = 2000;

/// What the group measured, printed after the other groups' tables.
pub(super) struct Report {
    rows: Vec<Row>,
}

/// One run of the bench: where the ledger was, and its figures or why there are none.
struct Row {
    /// Where the ledger was: `/tmp/paperchain-bench-1 (ext4)`.
    store: String,
    outcome: Result<Figures, String>,
}

struct Figures {
    calls: u64,
    paid: Percentiles,
    bare: Percentiles,
    /// Paid minus bare, figure by figure.
    own: Percentiles,
    /// Paid with `upto` minus bare.
    own_upto: Percentiles,
    /// Paid over a `batch-settlement` channel minus bare.
    own_batch: Percentiles,
}

pub(super) fn measure(dir: &Path) -> anyhow::Result<Report> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut stores = vec![(store_label(dir), dir.to_path_buf())];
    let memory = Path::new(MEMORY_FOLDER).join(format!("paperchain-bench-{}", std::process::id()));
    let _memory = Removed(memory.clone());
    if filesystem_of(Path::new(MEMORY_FOLDER)).as_deref() == Some("tmpfs") {
        std::fs::create_dir_all(&memory).with_context(|| format!("creating {}", memory.display()))?;
        stores.push((store_label(&memory), memory));
    }
    let mut rows = Vec::new();
    for (store, folder) in stores {
        println!("bench: wallet: {CALLS} paid calls against the bare transport, ledger on {store}");
        let outcome = run_bench(&folder).map_err(|e| {
            eprintln!("  failed: {e:#}");
            format!("{e:#}")
        });
        rows.push(Row { store, outcome });
    }
    Ok(Report { rows })
}

/// `cargo bench` of the wallet's client bench with its ledger in `folder`; its figures.
fn run_bench(folder: &Path) -> anyhow::Result<Figures> {
    let calls = CALLS.to_string();
    let output = cargo()
        .args(["bench", "-p", "paperchain-wallet", "--bench", "client", "--", "--calls", &calls, "--dir"])
        .arg(folder)
        .read_stdout()?;
    let results: Vec<(String, u64, Percentiles)> = output.lines().filter_map(parse_result).collect();
    let side = |name: &str| {
        results
            .iter()
            .find(|(side, ..)| side == name)
            .with_context(|| format!("the wallet bench printed no `{name}` result:\n{output}"))
    };
    let (paid, bare, own) = (side("paid")?, side("bare")?, side("own")?);
    let (own_upto, own_batch) = (side("own_upto")?, side("own_batch")?);
    ensure!(paid.1 == bare.1, "the wallet bench timed {} paid calls and {} bare ones", paid.1, bare.1);
    Ok(Figures { calls: paid.1, paid: paid.2, bare: bare.2, own: own.2, own_upto: own_upto.2, own_batch: own_batch.2 })
}

/// `result side=paid calls=2000 p50_us=1.0 p99_us=2.0 max_us=3.0 mean_us=1.5`.
fn parse_result(line: &str) -> Option<(String, u64, Percentiles)> {
    let (fields, percentiles) = result_line(line)?;
    Some((fields.get("side")?.to_string(), fields.get("calls")?.parse().ok()?, percentiles))
}

impl Report {
    pub(super) fn print(&self) {
        println!(
            "\nwallet: the paying client's own cost on a paid call (x402 v2), server and chain excluded: \
             PayingClient::call against the bare transport of the same two requests"
        );
        let header = [
            "ledger on",
            "calls each",
            "bare p50 µs",
            "bare p99 µs",
            "paid p50 µs",
            "paid p99 µs",
            "client p50 µs",
            "client p99 µs",
            "upto client p50 µs",
            "upto client p99 µs",
            "batch client p50 µs",
            "batch client p99 µs",
            "bare / paid mean µs",
        ];
        let cells: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| match &row.outcome {
                Ok(f) => vec![
                    row.store.clone(),
                    f.calls.to_string(),
                    format!("{:.0}", f.bare.p50_us),
                    format!("{:.0}", f.bare.p99_us),
                    format!("{:.0}", f.paid.p50_us),
                    format!("{:.0}", f.paid.p99_us),
                    format!("{:+.0}", f.own.p50_us),
                    format!("{:+.0}", f.own.p99_us),
                    format!("{:+.0}", f.own_upto.p50_us),
                    format!("{:+.0}", f.own_upto.p99_us),
                    format!("{:+.0}", f.own_batch.p50_us),
                    format!("{:+.0}", f.own_batch.p99_us),
                    format!("{:.0} / {:.0}", f.bare.mean_us, f.paid.mean_us),
                ],
                Err(e) => {
                    let mut cells = vec![row.store.clone(), format!("FAILED: {}", first_chars(e, 60))];
                    cells.resize(header.len(), "-".into());
                    cells
                }
            })
            .collect();
        print_table(&header, &cells);
        let slowest = self.rows.iter().filter_map(|r| r.outcome.as_ref().ok()).map(|f| f.paid.max_us).reduce(f64::max);
        if let Some(slowest) = slowest {
            println!("Slowest paid call: {:.1} ms.", slowest / 1e3);
        }
        println!(
            "wallet/benches/client.rs, one call at a time over keep-alive loopback connections to an in-process \
             HTTP/1.1 server that answers at once and checks nothing, the four sides (exact, upto, batch, bare) taking turns in blocks of 50. \
             Paid: PayingClient::call, a 402 then the paid request (USDC on Base Sepolia; a per-call cap, and a \
             per-day cap whose check sums the day's paid rows, so it grows by one row a paid call, warm-ups \
             included). Bare: the same two requests with plain reqwest, a fixed signed payment on the second. The \
             client columns are paid minus bare (differences of the percentiles, not percentiles of differences): \
             reading the 402, the policy, the ledger's six statements (start, quote and finish without a flush; \
             reserve in BEGIN IMMEDIATE, signing and paid with one each, synchronous=FULL, WAL; on the memory \
             file system their flushes cost nothing), the EIP-3009 signature, encoding the payment, reading the \
             settlement. The upto client columns: the same with x402 `upto` (charged 700 of at most 1000): the \
             Permit2 signature instead, plus one read of Permit2's allowance from the same loopback server as \
             JSON-RPC (answered as enough: no permit to sign), and the charge read from the settlement. The batch \
             client columns: over an x402 `batch-settlement` channel, a voucher's EIP-712 signature, the \
             channel's record and its voucher event written with the paid row, one call per channel at a time \
             (a file lock); its one deposit falls in the warm-up."
        );
    }

    /// `(whether Paperchain is at fault, what failed)`, for the bench's failure list.
    pub(super) fn failures(&self) -> Vec<(bool, String)> {
        self.rows
            .iter()
            .filter_map(|row| {
                let error = row.outcome.as_ref().err()?;
                Some((true, format!("wallet, paid calls, ledger on {}: {error}", row.store)))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_bench_results() {
        let line = "result side=own calls=2000 p50_us=410.5 p99_us=-12.0 max_us=4000.0 mean_us=450.0";
        let (side, calls, p) = parse_result(line).unwrap();
        assert_eq!((side.as_str(), calls), ("own", 2000));
        assert_eq!((p.p50_us, p.p99_us, p.max_us, p.mean_us), (410.5, -12.0, 4000.0, 450.0));
        assert!(parse_result("wallet bench: ledger has 2200 paid rows").is_none());
        assert!(parse_result("result side=paid calls=x p50_us=1 p99_us=1 max_us=1 mean_us=1").is_none());
    }
}
