//! The server library's integration tests, as one test binary: a module per area.

mod lifecycle;
