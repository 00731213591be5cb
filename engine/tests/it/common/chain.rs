//! A context over one test chain, and Foundry's `cast` to compare answers with.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use paperchain_engine::Context;
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_testkit::tools::cast_binary;

/// A context whose only chain is `ethereum` (id 1) at `url`, with short timeouts.
pub fn ethereum(url: &str) -> Context {
    let timeouts = ChainTimeouts { total: Duration::from_secs(5), attempt: Duration::from_secs(2) };
    let mut ctx = Context::new();
    ctx.chains = Arc::new(Chains::new(vec![ChainConfig::new("ethereum", 1, vec![url.parse().unwrap()])], timeouts));
    ctx
}

/// `cast <args> --rpc-url <rpc>`, its trimmed standard output; panics when cast fails.
pub fn cast(rpc: &str, args: &[&str]) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--rpc-url", rpc]);
    cast_offline(&all)
}

/// `cast <args>` for a command that reads no chain, its trimmed standard output.
pub fn cast_offline(args: &[&str]) -> String {
    let output = Command::new(cast_binary()).args(args).output().expect("running cast");
    assert!(output.status.success(), "cast {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}
