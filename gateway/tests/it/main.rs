//! The gateway's integration tests, as one test binary (the whole stack is linked once, not
//! once per file): a module per area, and the helpers they share in `common`.

mod common;

mod app_desktop;
mod bad_input;
mod chain_config_served;
mod chain_http;
mod conformance;
mod http;
mod schema_rules;
mod service_docs;
mod url_inputs;
