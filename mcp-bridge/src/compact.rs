//! The compact tool surface: every operation of the catalog behind three tools, so the whole
//! list fits in an agent's context (a few KB, where one tool per route is hundreds).
//!
//! - `chain_read` and `document_operation`, one per family: `{"operation": …, "input": …}`
//!   runs one operation with exactly the input, validation, errors, price and routing of its
//!   own tool (the call goes to the same call path). The description lists the family's
//!   operations, each with what it does and its price, so an agent knows what exists
//!   without asking.
//! - `describe_operation`: one operation's full description, price, input schema and output
//!   schema, on demand.
//!
//! The per-route tools ([`crate::tools`]) stay available (`/mcp/full`, `/mcp/chain`,
//! `/mcp/docs`; `paperchain mcp --stdio --tools full`).

use std::sync::Arc;

use paperchain_engine::catalog::RouteEntry;
use paperchain_engine::{Catalog, Family};
use paperchain_wallet::config::ClientConfig;
use paperchain_wallet::ledger::Spent;
use paperchain_wallet::money::Dollars;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

use crate::tools::{self, UNTRUSTED, dollars};

/// The tool that describes one operation.
pub const DESCRIBE: &str = "describe_operation";
/// The tool that shows the spend limits and what is left of them (servers with a wallet).
pub const BUDGET: &str = "wallet_budget";
/// The tool that asks the hosted service what a call would cost (servers with a wallet).
pub const QUOTE: &str = "quote_operation";

/// The tool that runs the operations of `family`.
pub fn run_tool_name(family: Family) -> &'static str {
    match family {
        Family::Chain => "chain_read",
        Family::Docs => "document_operation",
    }
}

/// The family whose operations the tool `name` runs, when it is a run tool.
pub fn family_of_tool(name: &str) -> Option<Family> {
    [Family::Chain, Family::Docs].into_iter().find(|family| run_tool_name(*family) == name)
}

/// The compact tools of `families`: one run tool per family, then `describe_operation`.
/// With `local_files` (a local server) file inputs may be paths and results may be saved.
pub fn tools(catalog: &Catalog, families: &[Family], local_files: bool) -> Vec<Tool> {
    let mut tools: Vec<Tool> = families.iter().map(|family| run_tool(catalog, *family, local_files)).collect();
    tools.push(describe_tool(catalog, families));
    tools
}

fn routes_of<'a>(catalog: &'a Catalog, families: &[Family]) -> impl Iterator<Item = &'a RouteEntry> {
    let families = families.to_vec();
    catalog.routes().filter(move |r| families.contains(&r.info().family))
}

fn run_tool(catalog: &Catalog, family: Family, local_files: bool) -> Tool {
    let routes: Vec<&RouteEntry> = routes_of(catalog, &[family]).collect();
    let (what, files) = match family {
        Family::Chain => ("Reads public blockchain data (EVM chains, Solana, Hyperliquid)", false),
        Family::Docs => ("Works on documents (PDF, Office, HTML, images)", true),
    };
    let mut text = format!(
        "{what}: runs one operation, `input` being that operation's input. Call `{DESCRIBE}` for an \
         operation's input fields before its first use. Free when run locally; the price is the hosted \
         service's, paid only when a call is routed there.\n\nOperations:\n"
    );
    for route in &routes {
        let info = route.info();
        let summary = info.summary.trim_end_matches('.');
        text.push_str(&format!("- {}: {summary} (${})\n", info.operation, dollars(info.base_price.units())));
    }
    if files && local_files {
        text.push_str(&format!("\n{}\n", tools::LOCAL_FILES));
    } else if files {
        text.push_str(
            "\nFile inputs are `{\"data\": base64, \"filename\"}` or `{\"url\"}`; files come back as embedded \
             resources, or as links valid 24 hours with `\"output\": \"url\"`.\n",
        );
    }
    text.push('\n');
    text.push_str(UNTRUSTED);
    let operations: Vec<&str> = routes.iter().map(|r| r.info().operation).collect();
    let mut input = json!({
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": operations, "description": "The operation to run."},
            "input": {
                "type": "object",
                "description": format!("The operation's input, as `{DESCRIBE}` gives its schema."),
            },
        },
        "required": ["operation", "input"],
        "additionalProperties": false,
    });
    if files && local_files {
        tools::add_save_properties(&mut input);
    }
    let reads_only = routes.iter().all(|r| !r.info().produces.files());
    let annotations = ToolAnnotations::with_title(what.to_string())
        .open_world(routes.iter().any(|r| r.info().open_world))
        .read_only(reads_only);
    let annotations = if reads_only { annotations } else { annotations.destructive(false).idempotent(true) };
    Tool::new(run_tool_name(family), text, Arc::new(object(input))).with_annotations(annotations)
}

fn describe_tool(catalog: &Catalog, families: &[Family]) -> Tool {
    let operations: Vec<&str> = routes_of(catalog, families).map(|r| r.info().operation).collect();
    let input = json!({
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": operations, "description": "The operation to describe."},
        },
        "required": ["operation"],
        "additionalProperties": false,
    });
    let text = "Describes one operation: what it does, its price on the hosted service, the tool that runs \
                it, and the JSON Schemas of its input and of its result.";
    Tool::new(DESCRIBE, text, Arc::new(object(input)))
        .with_annotations(ToolAnnotations::with_title("Describe an operation").read_only(true).open_world(false))
}

/// `describe_operation`'s answer for the per-route tool `full` of `route`.
pub fn describe(route: &RouteEntry, full: &Tool) -> CallToolResult {
    let info = route.info();
    CallToolResult::structured(json!({
        "operation": info.operation,
        "run_with": {"tool": run_tool_name(info.family), "arguments": {"operation": info.operation, "input": "…"}},
        "family": info.family.as_str(),
        "summary": info.summary,
        "description": full.description,
        "price_usd": dollars(info.base_price.units()),
        "http": {"method": "POST", "path": info.path},
        "input_schema": full.input_schema.as_ref(),
        "output_schema": full.output_schema.as_deref(),
    }))
}

/// The read-only money tools of a server that pays (local mode with a wallet):
/// `wallet_budget` and `quote_operation`. None of them changes the policy; nothing does
/// over MCP.
pub fn money_tools(catalog: &Catalog, families: &[Family]) -> Vec<Tool> {
    let operations: Vec<&str> = routes_of(catalog, families).map(|r| r.info().operation).collect();
    let budget = Tool::new(
        BUDGET,
        "The spend limits the user set for calls routed to the hosted service (per call, per day, per \
         session, for this client, per network), what was spent against them today, and what is left. \
         Read-only: the user changes limits in Paperchain's settings, never through a tool.",
        Arc::new(object(json!({"type": "object", "properties": {}, "additionalProperties": false}))),
    )
    .with_annotations(ToolAnnotations::with_title("Spend limits and what is left").read_only(true).open_world(false));
    let quote = Tool::new(
        QUOTE,
        "What the hosted service would charge for one operation with this input, and whether the spend \
         limits would let it be paid; nothing is run, signed or paid.",
        Arc::new(object(json!({
            "type": "object",
            "properties": {
                "operation": {"type": "string", "enum": operations, "description": "The operation."},
                "input": {"type": "object", "description": "The operation's input."},
            },
            "required": ["operation", "input"],
            "additionalProperties": false,
        }))),
    )
    .with_annotations(ToolAnnotations::with_title("Quote a call").read_only(true).open_world(true));
    vec![budget, quote]
}

/// `wallet_budget`'s answer: the limits of `config`, what `spent` counted, what is left,
/// and what the settings file loosens that waits for the user (`waiting`).
pub fn budget(
    config: &ClientConfig,
    spent: &Spent,
    client: Option<&str>,
    waiting: Option<&paperchain_wallet::live::Unconfirmed>,
) -> CallToolResult {
    let policy = &config.policy;
    let text = |d: Option<Dollars>| d.map(|d| d.to_string());
    let left = |cap: Option<Dollars>, used: Dollars| {
        cap.map(|cap| Dollars::from_micros(cap.micros().saturating_sub(used.micros())).to_string())
    };
    let client_cap = client.and_then(|c| policy.clients.get(c)).copied();
    let networks: serde_json::Map<String, Value> = policy
        .networks
        .iter()
        .map(|(network, cap)| {
            let used = spent.networks.get(network).copied().unwrap_or_default();
            let entry = json!({"cap": cap.to_string(), "spent": used.to_string(), "left": left(Some(*cap), used)});
            (network.clone(), entry)
        })
        .collect();
    CallToolResult::structured(json!({
        "routing": {"default": config.default_route.as_str(), "service": config.service_url},
        "per_call": text(policy.per_call),
        "approve_above": text(policy.approve_above),
        "today": {"cap": text(policy.per_day), "spent": spent.today.to_string(), "left": left(policy.per_day, spent.today)},
        "this_session": {
            "cap": text(policy.per_session),
            "spent": spent.session.to_string(),
            "left": left(policy.per_session, spent.session),
        },
        "this_client_today": {
            "client": client,
            "cap": text(client_cap),
            "spent": spent.client.to_string(),
            "left": left(client_cap, spent.client),
        },
        "networks_today": networks,
        "limits_are_set_by": "the user, in Paperchain's settings (`paperchain config`, the app); no tool changes them",
        // A raised limit is followed only once the user confirms it (their password).
        "waiting_for_the_user": waiting.map(|w| json!({
            "changes": w.changes,
            "why_nothing_is_confirmed": w.reason,
            "confirmed_by": "the user: `paperchain config confirm` at a terminal, or Settings in the app",
        })),
    }))
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("a tool schema is written as an object"),
    }
}

/// Where the operation and input of a run tool's arguments are, or the tool error naming
/// the argument that is wrong.
pub fn operation_and_input(arguments: &JsonObject) -> Result<(&str, Value), (&'static str, String)> {
    let operation = match arguments.get("operation") {
        Some(Value::String(name)) => name.as_str(),
        Some(_) => return Err(("/operation", "/operation: must be the name of an operation".into())),
        None => return Err(("/operation", "/operation: missing: name the operation to run".into())),
    };
    let input = match arguments.get("input") {
        Some(Value::Object(input)) => Value::Object(input.clone()),
        Some(_) => return Err(("/input", "/input: must be an object, the operation's input".into())),
        None => return Err(("/input", "/input: missing: give the operation's input (an object)".into())),
    };
    let known = ["operation", "input", tools::SAVE_TO, tools::OVERWRITE];
    if let Some(extra) = arguments.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(("/", format!("unknown argument `{extra}`: the arguments are `operation` and `input`")));
    }
    Ok((operation, input))
}
