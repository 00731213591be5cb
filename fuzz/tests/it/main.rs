//! The fuzzer's integration tests, as one test binary: a module per area. The saved
//! regression inputs stay in `fuzz/tests/regressions/`.

mod harness;
mod regressions;
