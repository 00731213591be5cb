//! The command line of the in-process benches (`hosted/benches/paywall.rs`,
//! `wallet/benches/client.rs`), std only: `--calls N`, `--dir FOLDER`, `--bench` (timed
//! run; without it a smoke test), and nextest's `--list` answered with one test.

use std::path::PathBuf;

/// What a bench was asked to do.
pub struct BenchArgs {
    /// A timed run (`cargo bench`), or a smoke test (`cargo test`, nextest).
    pub bench: bool,
    /// Timed calls of each side: `--calls`, else `default_calls` for a timed run, else 3.
    pub calls: usize,
    /// Where the bench's files go: `--dir`, else the system's temporary folder.
    pub parent: PathBuf,
}

impl BenchArgs {
    /// This process's arguments; `None` when nextest only asked for the list of tests
    /// (`name: test` was printed). Exits with status 2, saying why, on a malformed option.
    pub fn from_env(name: &str, default_calls: usize) -> Option<BenchArgs> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if args.iter().any(|a| a == "--list") {
            // nextest asks what to run: one smoke test, nothing ignored.
            if !args.iter().any(|a| a == "--ignored") {
                println!("{name}: test");
            }
            return None;
        }
        let bench = args.iter().any(|a| a == "--bench");
        let value = |flag: &str| args.iter().position(|a| a == flag).map(|i| args.get(i + 1).cloned());
        let fail = |message: &str| -> ! {
            eprintln!("error: {message}");
            std::process::exit(2)
        };
        let calls = match value("--calls") {
            Some(text) => text
                .and_then(|n| n.parse().ok())
                .filter(|&n: &usize| n > 0)
                .unwrap_or_else(|| fail("--calls takes a positive number")),
            None if bench => default_calls,
            None => 3,
        };
        let parent = match value("--dir") {
            Some(dir) => dir.map(PathBuf::from).unwrap_or_else(|| fail("--dir takes a folder")),
            None => std::env::temp_dir(),
        };
        Some(BenchArgs { bench, calls, parent })
    }
}
