//! Hosted mode: the x402 v2 paywall, free pools, MPP and the sandbox.

pub mod bazaar;
pub mod config;
pub mod facilitator;
pub mod http;
pub mod mpp;
pub mod paywall;
pub mod sandbox;
pub mod store;
