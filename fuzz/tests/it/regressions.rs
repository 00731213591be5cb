//! Every input the fuzzer saved (`tests/regressions/*.json`: a route, a body, and the
//! defect it once caused) is now answered properly: `paperchain-fuzz replay` runs them all
//! under the fuzzer's time and memory caps and fails on any panic, internal error, answer
//! that does not open, hang, memory overrun or crash.

use std::process::Command;

#[test]
fn every_saved_finding_is_answered_properly_now() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no regression inputs in {}", dir.display());
    let output = Command::new(env!("CARGO_BIN_EXE_paperchain-fuzz")).arg("replay").args(&files).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{said}");
    // Each file was run and answered.
    assert_eq!(said.matches("  answered: ").count(), files.len(), "{said}");
}
