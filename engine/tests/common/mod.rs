//! Helpers shared by the engine's integration tests.

#![allow(dead_code)]

pub mod anvil;
