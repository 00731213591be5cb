//! The paying client's integration tests, as one test binary: a module per area. The keyring
//! tests run this binary again as their child processes (`keyring::child_process_step_…`).

mod keyring;
mod pays_the_sandbox;
