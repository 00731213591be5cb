//! The CLI's integration tests, as one test binary (the whole stack is linked once, not once
//! per file): a module per area, and the helpers they share in `common`. They run the
//! `paperchain` binary of the build; the visual references stay in `cli/tests/visual/`.

mod common;

mod agent_budgets;
mod app_ui;
mod approval_in_conversation;
mod call_files;
mod corpus;
mod faults;
mod hostile_files;
mod kept_files;
mod local_files;
mod mcp;
mod mcpb;
mod ocr;
mod office;
mod readme;
mod routed;
mod sanctions;
mod serve;
mod visual;
mod work_stops;
