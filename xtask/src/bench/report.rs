//! The tables the benchmarks print: the document groups' tables with their notes, a
//! warm server against a cold program, and the cells (times, memory, sizes) they are made
//! of.
//!
//! What this module must not do: run or check anything; it only prints what was measured.

use std::time::Duration;

use super::compare::{Outcome, Row, Timing};

/// The document groups' tables and what their columns mean.
pub(super) fn print_documents(rows: &[Row], runs: u32, memory: bool) {
    print_tables(rows);
    println!();
    println!(
        "Median (minimum) wall time of {} runs after one warm-up, each side a fresh process. Peak RSS: {}.",
        runs,
        if memory {
            "/usr/bin/time -f %M around each child, highest of the runs"
        } else {
            "not measured (no /usr/bin/time)"
        }
    );
    println!(
        "Output: the size of the PDFs, images or JSON answers written (a ZIP's, unpacked), after each passed the checks above; \
         the ratios are paperchain/other, below 1 where Paperchain is faster or smaller."
    );
}

/// One table per kind of operation (rows of one table are measured one after another),
/// each followed by its notes.
fn print_tables(rows: &[Row]) {
    for table in rows.chunk_by(|a, b| a.table == b.table) {
        let Some(first) = table.first() else { continue };
        println!("\n{}: Paperchain against {}", first.table, first.tool);
        print_table(table, first.tool);
        let mut notes: Vec<&str> = table.iter().filter_map(|row| row.note).collect();
        notes.dedup();
        for note in notes {
            println!("Note: {note}");
        }
    }
}

pub(super) fn print_table(rows: &[Row], tool: &str) {
    let header = [
        "operation".to_string(),
        "paperchain ms median (min)".into(),
        format!("{tool} ms median (min)"),
        format!("time paperchain/{tool}"),
        "paperchain peak RSS".into(),
        format!("{tool} peak RSS"),
        format!("output paperchain / {tool}"),
        format!("size paperchain/{tool}"),
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|row| {
            let (time_ratio, sizes, size_ratio) = match (&row.paperchain, &row.reference) {
                (Ok(ours), Ok(theirs)) => (
                    format!("{:.2}x", ours.median.as_secs_f64() / theirs.median.as_secs_f64()),
                    format!("{} / {}", size_text(ours.output_bytes), size_text(theirs.output_bytes)),
                    format!("{:.2}x", ours.output_bytes as f64 / theirs.output_bytes.max(1) as f64),
                ),
                _ => ("-".into(), "-".into(), "-".into()),
            };
            [
                row.operation.clone(),
                time_cell(&row.paperchain),
                time_cell(&row.reference),
                time_ratio,
                memory_cell(&row.paperchain),
                memory_cell(&row.reference),
                sizes,
                size_ratio,
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
    line(&header);
    line(&widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>());
    for row in &cells {
        line(row);
    }
}

/// Median (min) in ms, or the start of why there is none (the full text is under the table).
pub(super) fn time_cell(outcome: &Outcome) -> String {
    match outcome {
        Ok(t) => format!("{} ({})", t.median.as_millis(), t.min.as_millis()),
        Err(e) => {
            let short: String = e.lines().next().unwrap_or_default().chars().take(60).collect();
            let more = if short.len() < e.len() { "…" } else { "" };
            format!("FAILED: {short}{more}")
        }
    }
}

fn memory_cell(outcome: &Outcome) -> String {
    match outcome {
        Ok(Timing { peak_rss_kib: Some(kib), .. }) => format!("{:.0} MiB", *kib as f64 / 1024.0),
        _ => "-".into(),
    }
}

/// A size in MiB, or in KiB below one MiB, where compressed outputs of small inputs land.
pub(super) fn size_text(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes as f64 >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    }
}

/// The `p` quantile (0 to 1) of `times`, which must not be empty.
pub(super) fn percentile(times: &[Duration], p: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The table of a warm server against a cold program: each side's count, p50 and p95 (and
/// max), then how much faster the warm p50 is.
pub(super) fn print_warm_cold(sides: [(&str, &Result<Vec<Duration>, String>); 2], what: &str, target: &str) {
    println!("| side | {what} | p50 ms | p95 ms | max ms |");
    println!("|---|---|---|---|---|");
    for (name, times) in sides {
        match times {
            Ok(times) => println!(
                "| {name} | {} | {} | {} | {} |",
                times.len(),
                percentile(times, 0.5).as_millis(),
                percentile(times, 0.95).as_millis(),
                times.iter().max().map_or(0, Duration::as_millis)
            ),
            Err(e) => println!("| {name} | failed: {e} | | | |"),
        }
    }
    if let [(_, Ok(warm)), (_, Ok(cold))] = sides {
        println!(
            "Warm p50 is {:.1}x faster than cold{target}.",
            percentile(cold, 0.5).as_secs_f64() / percentile(warm, 0.5).as_secs_f64()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_kib_below_one_mib() {
        assert_eq!(size_text(2148), "2 KiB");
        assert_eq!(size_text(1_793_479), "1.7 MiB");
    }

    #[test]
    fn median_of_even_and_odd_runs() {
        let ms = |v: &[u64]| v.iter().map(|&m| Duration::from_millis(m)).collect::<Vec<_>>();
        let t = Timing::of(&ms(&[30, 10, 20]), None, 0);
        assert_eq!((t.median, t.min), (Duration::from_millis(20), Duration::from_millis(10)));
        assert_eq!(Timing::of(&ms(&[40, 10, 20, 30]), None, 0).median, Duration::from_millis(25));
    }
}
