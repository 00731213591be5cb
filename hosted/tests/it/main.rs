//! The hosted service's integration tests, as one test binary: the paywall over HTTP with
//! a facilitator that fails in every way, x402 on EVM and Solana, MPP, the
//! payment-identifier extension, paid calls end to end, and the sandbox chain.

mod facilitator;
mod mpp;
mod paid;
mod payment_identifier;
mod sandbox_chain;
mod solana;
mod x402;
