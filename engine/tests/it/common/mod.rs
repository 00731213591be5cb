//! What only the engine's integration tests share: calling a route as the front doors do.
//! Everything else (anvil, fake nodes, loopback servers) is in `paperchain-testkit`.

pub mod chain;
pub mod ens;
pub mod market;
pub mod route;

/// Runs a Python `writer` (it writes into the folder it is given and prints `ok`) in a new
/// temporary folder; answers the folder and the bytes of `file` written there.
pub fn written_by(writer: &str, file: &str) -> (tempfile::TempDir, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(paperchain_testkit::tools::run_python(writer, &[dir.path()]).trim(), "ok");
    let pdf = std::fs::read(dir.path().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    (dir, pdf)
}
