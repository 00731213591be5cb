//! The generated tool list, snapshot-tested: a change to any route's name, description,
//! price, schemas or annotations shows here for review (`cargo insta review`).

use std::sync::Arc;

use paperchain_engine::evm::Chains;
use paperchain_engine::{Context, Family};

#[test]
fn the_tool_list() {
    // No chain configuration from the environment: the snapshot lists the default chains.
    let chains = Chains::try_from_vars(|_| None).unwrap();
    let ctx = Context { chains: Arc::new(chains), ..Context::new() };
    let tools =
        paperchain_mcp::tools::tools(&paperchain_engine::catalog::standard(), &[Family::Chain, Family::Docs], &ctx);
    // The snapshot stays in `tests/snapshots/` under the name it had when this file was a test
    // binary of its own; insta's default here, a module of the `it` binary, would be
    // `tests/it/snapshots/it__tools_snapshot__tools.snap`.
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!("tools_snapshot__tools", tools);
    });
}

/// Some agents refuse a tool whose input schema has `oneOf`, `anyOf` or `allOf` at its top
/// (rules between fields are said with `if`/`then`/`else` and `not`), and want an object.
#[test]
fn no_tool_input_schema_has_a_combinator_at_its_top() {
    let tools = paperchain_mcp::tools::tools(
        &paperchain_engine::catalog::standard(),
        &[Family::Chain, Family::Docs],
        &Context::new(),
    );
    assert!(!tools.is_empty());
    for tool in &tools {
        let schema = tool.input_schema.as_ref();
        assert_eq!(schema.get("type").and_then(|t| t.as_str()), Some("object"), "{}", tool.name);
        for keyword in ["oneOf", "anyOf", "allOf"] {
            assert!(!schema.contains_key(keyword), "{} has {keyword} at its top", tool.name);
        }
    }
}

/// The compact surface agents get by default (`/mcp`, `paperchain mcp --stdio`): three
/// tools whose descriptions list every operation with its price.
#[test]
fn the_compact_tool_list() {
    let tools =
        paperchain_mcp::compact::tools(&paperchain_engine::catalog::standard(), &[Family::Chain, Family::Docs], true);
    insta::with_settings!({ snapshot_path => "../snapshots", prepend_module_to_snapshot => false }, {
        insta::assert_json_snapshot!("tools_snapshot__compact_tools", tools);
    });
}

/// What the compact tools ask for reads in every function-calling dialect: objects at the
/// top, no type written as a list (the nullable form some model providers reject), no
/// combinators, no references.
#[test]
fn the_compact_tool_schemas_are_portable() {
    fn walk(schema: &serde_json::Value, at: &str) {
        match schema {
            serde_json::Value::Object(map) => {
                assert!(!map.get("type").is_some_and(|t| t.is_array()), "{at}: a type list");
                for keyword in ["oneOf", "anyOf", "allOf", "$ref", "$defs"] {
                    assert!(!map.contains_key(keyword), "{at}: {keyword}");
                }
                for (key, value) in map {
                    walk(value, &format!("{at}/{key}"));
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, at)),
            _ => {}
        }
    }
    let catalog = paperchain_engine::catalog::standard();
    let families = [Family::Chain, Family::Docs];
    let mut tools = paperchain_mcp::compact::tools(&catalog, &families, true);
    tools.extend(paperchain_mcp::compact::money_tools(&catalog, &families));
    for tool in &tools {
        let schema = serde_json::Value::Object(tool.input_schema.as_ref().clone());
        assert_eq!(schema["type"], "object", "{}", tool.name);
        walk(&schema, &tool.name);
        assert!(tool.output_schema.is_none(), "{}: a run tool's result is its operation's", tool.name);
    }
}
