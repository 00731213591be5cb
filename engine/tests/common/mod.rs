//! Helpers shared by the engine's integration tests.

#![allow(dead_code)]

pub mod anvil;
pub mod http;
pub mod route;
