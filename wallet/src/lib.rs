//! The paying client: what a caller does when a hosted service answers 402.
//!
//! [`x402_client`] reads the PaymentRequired a 402 carries, keeps only the requirements the
//! caller allows (networks, the most it will pay), and signs exactly the one it chose
//! through the protocol crate; then it reads the settlement of the paid answer. It works
//! against any x402 v2 server, not only Paperchain's.
//!
//! What this crate must not do: depend on the server (`paperchain-gateway`), log or return
//! a key or a signature in an error.

pub mod x402_client;
