//! The gateway's integration tests, as one test binary (the whole stack is linked once, not
//! once per file): a module per area, and the helpers they share in `common`.

mod common;

mod app_desktop;
mod bad_input;
mod chain_config_served;
mod chain_http;
mod conformance;
mod hosted_facilitator;
mod hosted_mpp;
mod hosted_paid;
mod hosted_payment_identifier;
mod hosted_solana;
mod hosted_x402;
mod http;
mod sandbox_chain;
mod schema_rules;
mod service_docs;
mod url_inputs;
