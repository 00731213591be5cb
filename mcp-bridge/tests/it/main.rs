//! The MCP bridge's integration tests, as one test binary (the whole stack is linked once,
//! not once per file): a module per area, and the helpers they share in `common`.

mod common;

mod mcp_compact;
mod mcp_hosted;
mod mcp_http;
mod mcp_tasks;
mod mcp_ts_sdk;
mod tools_snapshot;
