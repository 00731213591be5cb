//! Tests across crates and against other software, as one test binary: a module per area.
//! The scripts node runs stay in `tests/interop/`.

mod interop_x402_fetch;
mod paying_client;
