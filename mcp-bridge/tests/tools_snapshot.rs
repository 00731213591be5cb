//! The generated tool list, snapshot-tested: a change to any route's name, description,
//! price, schemas or annotations shows here for review (`cargo insta review`).

use std::sync::Arc;

use paperchain_engine::evm::Chains;
use paperchain_engine::{Catalog, Context, Family};

#[test]
fn the_tool_list() {
    // No chain configuration from the environment: the snapshot lists the default chains.
    let chains = Chains::try_from_vars(|_| None).unwrap();
    let ctx = Context { chains: Arc::new(chains), ..Context::new() };
    let tools = paperchain_mcp::tools::tools(&Catalog::standard(), &[Family::Chain, Family::Docs], &ctx);
    insta::assert_json_snapshot!("tools", tools);
}
