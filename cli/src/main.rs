//! `paperchain`: chain reads and document operations on your own machine.
//!
//! The binary is a thin front door: it parses arguments and prints. `serve` starts the
//! server library (`paperchain-server`), `mcp --stdio` the MCP bridge, `routes` lists the
//! catalog, `call` runs one operation (here or routed); `wallet`, `ledger`, `spend` and
//! `config` are the paying client's. Everything else lives in the engine and the wallet.

mod call;

/// Every allocation counted, and charged to the call it is made for (a call's memory budget:
/// `paperchain_engine::memory`).
#[global_allocator]
static ALLOCATOR: paperchain_engine::memory::Counting = paperchain_engine::memory::Counting;
mod call_server;
mod money_cmd;
mod paying;
mod sanctions_cmd;
mod service_cmd;
mod wallet_cmd;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use paperchain_engine::{Context, Family};
use paperchain_gateway::ServerConfig;
use paperchain_mcp::Surface;
use paperchain_server::SandboxOptions;
use paperchain_server::{HostedMode, Options};
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::NobodyToAsk;

const ABOUT: &str = "Chain reads and document operations on your own machine.";

const LONG_ABOUT: &str = "\
Chain reads and document operations on your own machine.

Paperchain serves the same routes as the hosted pay-per-call service, locally and free:
an HTTP API on 127.0.0.1:8402 (`paperchain serve`), or one operation at a time from
the shell (`paperchain call`). `paperchain routes` lists every operation and its price
on the hosted service. A call routed there is paid by the wallet (`paperchain wallet`)
within the spend policy you set (`paperchain config`), and every call is in the ledger
(`paperchain ledger`, `paperchain spend`).";

const EXAMPLES: &str = "\
Examples:
  paperchain serve
      Serve the HTTP API on http://127.0.0.1:8402 (OpenAPI at /openapi.json).
  paperchain routes
      List every operation, its path and its hosted price.
  paperchain call inspect_pdf_document --file file=report.pdf
      Inspect a PDF; the report is printed as JSON.
  paperchain call merge_pdf_files -f files/0/file=a.pdf -f files/1/file=b.pdf -o merged.pdf
      Merge two PDFs into merged.pdf.
  echo '{\"file\": {\"password\": \"secret\"}, \"pages\": \"1-3\"}' |
    paperchain call extract_pdf_pages --input - -f file=locked.pdf -o first.pdf
      Fields such as a password go in the JSON input; --file keeps them.
  echo '{\"every\": 1}' | paperchain call split_pdf --input - --file file=book.pdf --out pages.zip
      Split every page of book.pdf into its own PDF, all in one ZIP.";

#[derive(Parser)]
#[command(name = "paperchain", version, about = ABOUT, long_about = LONG_ABOUT, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the HTTP API and MCP (local mode: calls run here, or on the hosted service the
    /// configuration routes them to, paid by the wallet; loopback only by default).
    Serve(ServeArgs),
    /// List every route: operation, path, price.
    Routes(RoutesArgs),
    /// Run one operation and print or save its result (through the local server when one
    /// runs for this data folder, else in this process).
    Call(call::CallArgs),
    /// Serve every route as an MCP tool over stdio, for desktop agents (Claude Desktop…).
    Mcp(McpArgs),
    /// The wallet that pays hosted calls: its key in the OS keyring (or a keystore file).
    Wallet(WalletArgs),
    /// Every call made, local or hosted, and every payment; `reconcile` checks them on chain.
    Ledger(money_cmd::LedgerArgs),
    /// What was paid, by day, route, client and network.
    Spend(money_cmd::SpendArgs),
    /// The client's settings (config.toml): hosted service, routing, spend policy.
    Config(money_cmd::ConfigArgs),
    /// The OFAC SDN list of digital currency addresses that /v1/check/sanctions screens
    /// against: `refresh` it from the official XML, or see its `status`.
    Sanctions(sanctions_cmd::SanctionsArgs),
    /// `paperchain serve` as a background service started at login (a systemd user unit,
    /// or a launchd agent): install, uninstall, start, stop, status.
    Service(service_cmd::ServiceArgs),
}

#[derive(clap::Args)]
struct WalletArgs {
    #[command(subcommand)]
    command: WalletSub,
}

#[derive(Subcommand)]
enum WalletSub {
    #[command(flatten)]
    Keys(wallet_cmd::WalletCommand),
    /// USDC and gas on each network the wallet pays on (those with an RPC endpoint).
    Balance {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args)]
struct McpArgs {
    /// Speak MCP on standard input and output (the only transport here; over HTTP the
    /// tools are at /mcp, /mcp/full, /mcp/chain and /mcp/docs of `paperchain serve`). Logs
    /// go to stderr.
    #[arg(long, required = true)]
    stdio: bool,
    /// Which operations: the chain reads, the document operations, or all. One family is
    /// served one tool per route.
    #[arg(long, default_value = "all", value_parser = ["chain", "docs", "all"])]
    family: String,
    /// How the operations are listed: `compact` (three tools: one per family runs any of
    /// its operations, one describes an operation; a few KB for an agent's context) or
    /// `full` (one tool per route, each with its schemas). Default: compact for all
    /// families, full for one.
    #[arg(long, value_parser = ["compact", "full"])]
    tools: Option<String>,
    /// Run the engine in this process even when a local server (`paperchain serve`, the
    /// background service, the desktop app) runs; by default the tools are that server's.
    #[arg(long)]
    standalone: bool,
    #[command(flatten)]
    routing: paying::RoutingArgs,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8402", env = "PAPERCHAIN_LISTEN")]
    listen: SocketAddr,
    /// Folder for 24-hour result links (default: $XDG_DATA_HOME/paperchain).
    #[arg(long, env = "PAPERCHAIN_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Base URL written in result links and documents (default: http://LISTEN).
    #[arg(long, env = "PAPERCHAIN_PUBLIC_URL")]
    public_url: Option<String>,
    /// A host name this server answers besides localhost (repeatable). Requests whose Host
    /// header names anything else are refused, so a web page cannot reach the server by
    /// rebinding its own name to this machine. Needed with --listen 0.0.0.0 unless
    /// --public-url names the server.
    #[arg(long = "allow-host", value_name = "NAME", env = "PAPERCHAIN_ALLOW_HOSTS", value_delimiter = ',')]
    allow_hosts: Vec<String>,
    /// Seconds a call may take before it is answered with 504.
    #[arg(long, default_value_t = 120, env = "PAPERCHAIN_REQUEST_TIMEOUT")]
    request_timeout: u64,
    /// Seconds a payment above policy.approve_above waits for the user's answer in the app
    /// (at /app) before it is refused.
    #[arg(long, default_value_t = 120, env = "PAPERCHAIN_APPROVAL_WAIT")]
    approval_wait: u64,
    /// Run as the hosted service: x402 v2 paywall with exact quotes, free pools, MPP.
    /// Needs a public URL, a facilitator and an address to be paid to (--config or
    /// PAPERCHAIN_* variables; see README "Hosted mode").
    #[arg(long)]
    hosted: bool,
    /// With --hosted: a local anvil chain (chain id 8453) with a test USDC, a funded test
    /// payer and the facilitator in process; prints the details as its first line on
    /// stdout. Everything listens on 127.0.0.1.
    #[arg(long, requires = "hosted")]
    sandbox: bool,
    /// Hosted configuration file (TOML, a [hosted] table).
    #[arg(long, value_name = "FILE", env = "PAPERCHAIN_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    routing: paying::RoutingArgs,
}

#[derive(clap::Args)]
struct RoutesArgs {
    /// Only this family.
    #[arg(long, value_parser = ["chain", "docs"])]
    family: Option<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn main() -> std::process::ExitCode {
    // SAFETY: the first thing the process does, before any thread exists.
    unsafe { paperchain_engine::ocr::limit_engine_threads() };
    let cli = Cli::parse();
    // lopdf reports every oddity of a damaged file as a warning; the answer already says
    // what matters, so its own log is off unless PAPERCHAIN_LOG asks for it.
    let default_level = if matches!(cli.command, Command::Serve(_)) { "info,lopdf=off" } else { "warn,lopdf=off" };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PAPERCHAIN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve(args).await.map(|()| std::process::ExitCode::SUCCESS),
            Command::Routes(args) => routes(args).map(|()| std::process::ExitCode::SUCCESS),
            Command::Call(args) => call::run(args).await,
            Command::Mcp(args) => mcp(args).await.map(|()| std::process::ExitCode::SUCCESS),
            Command::Wallet(WalletArgs { command: WalletSub::Keys(command) }) => {
                let data_dir = data_dir();
                tokio::task::spawn_blocking(move || wallet_cmd::run(command, &data_dir)).await?
            }
            Command::Wallet(WalletArgs { command: WalletSub::Balance { json } }) => {
                money_cmd::balance(&data_dir(), json).await
            }
            Command::Ledger(args) => money_cmd::run_ledger(args, &data_dir()).await,
            Command::Spend(args) => money_cmd::run_spend(args, &data_dir()).await,
            Command::Config(args) => {
                let data_dir = data_dir();
                tokio::task::spawn_blocking(move || money_cmd::run_config(args, &data_dir)).await?
            }
            Command::Sanctions(args) => sanctions_cmd::run(args).await.map(|()| std::process::ExitCode::SUCCESS),
            Command::Service(args) => service_cmd::run(args, &data_dir()).map(|()| std::process::ExitCode::SUCCESS),
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The data folder: `PAPERCHAIN_DATA_DIR`, else `$XDG_DATA_HOME/paperchain` (the ledger,
/// the keystore file, result links).
pub fn data_dir() -> PathBuf {
    paperchain_engine::data_dir()
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let data_dir = args.data_dir.unwrap_or_else(data_dir);
    let mut http = ServerConfig::local(data_dir.clone());
    http.listen = args.listen;
    http.public_url = args.public_url;
    http.request_timeout = Duration::from_secs(args.request_timeout.max(1));
    http.allowed_hosts = args.allow_hosts;
    if args.config.is_some() && !args.hosted {
        anyhow::bail!("--config configures hosted mode; add --hosted");
    }
    let hosted = args
        .hosted
        .then(|| HostedMode { config_file: args.config, sandbox: args.sandbox.then(SandboxOptions::default) });
    // A configuration the server would not follow (a malformed PAPERCHAIN_CHAINS) stops it here.
    let ctx = Context::try_new()?;
    // Local mode routes and records every call; the hosted service is paid, it does not pay.
    // Payments above policy.approve_above wait for the user's answer in the app.
    let approvals = Arc::new(ApprovalQueue::new(Duration::from_secs(args.approval_wait.max(1))));
    let client = match hosted {
        None => Some(paying::client(&data_dir, &ctx, approvals.clone(), &args.routing).await?),
        Some(_) => None,
    };
    let runtime_dir = hosted.is_none().then(|| paperchain_server::instance::runtime_dir(&data_dir));
    let approvals = hosted.is_none().then_some(approvals);
    let options = Options { http, hosted, ctx: Some(ctx), client, runtime_dir, approvals, desktop: None };
    let server = paperchain_server::start(options).await?;
    if let Some(line) = server.sandbox() {
        print_sandbox(line, server.base_url());
    }
    server.run_until(paperchain_server::interrupted()).await.context("serving")
}

/// `paperchain mcp --stdio`: standard output carries only the protocol.
async fn mcp(args: McpArgs) -> anyhow::Result<()> {
    debug_assert!(args.stdio);
    let families = match args.family.as_str() {
        "chain" => vec![Family::Chain],
        "docs" => vec![Family::Docs],
        _ => vec![Family::Chain, Family::Docs],
    };
    let surface = match (args.tools.as_deref(), args.family.as_str()) {
        (Some("full"), _) | (None, "chain" | "docs") => Surface::Full,
        (Some(_), "chain" | "docs") => {
            anyhow::bail!("--tools compact serves every family; drop --family, or use --tools full")
        }
        _ => Surface::Compact,
    };
    let data_dir = data_dir();
    let runtime = paperchain_server::instance::runtime_dir(&data_dir);
    let running = paperchain_server::instance::find(&runtime, &data_dir).filter(|_| !args.standalone);
    if let Some(instance) = running {
        let routing = &args.routing;
        if routing.service_url.is_some() || routing.default_route.is_some() || !routing.folders.is_empty() {
            anyhow::bail!(
                "--service-url, --route and --folder set up an engine in this process, but the local server \
                 at {} (process {}) serves these tools as its configuration says (files.folders in \
                 config.toml grants folders to it); drop them, or add --standalone",
                instance.base_url,
                instance.pid
            );
        }
        let endpoint = match args.family.as_str() {
            "all" => paperchain_mcp::relay::endpoint_of(&instance.base_url, surface),
            _ => format!("{}{}", instance.base_url, paperchain_mcp::http::endpoint(families[0])),
        };
        tracing::info!(%endpoint, pid = instance.pid, "using the running local server");
        return paperchain_mcp::relay::relay_stdio(endpoint).await.context("relaying MCP to the local server");
    }
    let ctx = Context::try_new()?;
    // Nothing here can ask the user: a payment that needs approval is refused, saying so.
    let client = paying::client(&data_dir, &ctx, Arc::new(NobodyToAsk), &args.routing).await?;
    paperchain_server::serve_stdio(families, surface, ctx, client).await.context("serving MCP on stdio")
}

/// The sandbox's first stdout line (one JSON object, for scripts), then how to try it.
fn print_sandbox(line: &serde_json::Value, base_url: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let key = line["sandbox"]["payer_private_key"].as_str().unwrap_or_default();
    let _ = writeln!(out, "{line}");
    let _ = writeln!(
        out,
        "\nSandbox: test USDC on a local chain; nothing here is real money.\n\
         \nAn unpaid call answers 402 with the exact quote:\n\
         \n  curl -i -X POST {base_url}/v1/chain/gas -H 'content-type: application/json' -d '{{\"chain\": \"base\"}}'\n\
         \nOne free call a day from the pool:\n\
         \n  curl -X POST {base_url}/v1/chain/gas -H 'content-type: application/json' -H 'X-Svc-Free: 1' -d '{{\"chain\": \"base\"}}'\n\
         \nA paying client (the official x402 TypeScript client, npm @x402/fetch @x402/evm viem):\n\
         \n  import {{ wrapFetchWithPaymentFromConfig }} from \"@x402/fetch\";\n\
         \x20 import {{ ExactEvmScheme }} from \"@x402/evm\";\n\
         \x20 import {{ privateKeyToAccount }} from \"viem/accounts\";\n\
         \x20 const pay = wrapFetchWithPaymentFromConfig(fetch, {{\n\
         \x20   schemes: [{{ network: \"eip155:8453\", client: new ExactEvmScheme(privateKeyToAccount(\"{key}\")) }}],\n\
         \x20 }});\n\
         \x20 const res = await pay(\"{base_url}/v1/chain/gas\", {{ method: \"POST\",\n\
         \x20   headers: {{ \"content-type\": \"application/json\" }}, body: JSON.stringify({{ chain: \"base\" }}) }});\n"
    );
    let solana = &line["sandbox"]["solana"];
    if let (Some(secret), Some(rpc)) = (solana["payer_secret_key"].as_str(), solana["rpc_url"].as_str()) {
        let network = solana["network"].as_str().unwrap_or_default();
        let _ = writeln!(
            out,
            "On Solana (npm @x402/svm @solana/kit; the validator at {rpc} stands in for mainnet):\n\
             \n  import {{ ExactSvmScheme }} from \"@x402/svm\";\n\
             \x20 import {{ createKeyPairSignerFromBytes, getBase58Encoder }} from \"@solana/kit\";\n\
             \x20 const signer = await createKeyPairSignerFromBytes(getBase58Encoder().encode(\"{secret}\"));\n\
             \x20 const pay = wrapFetchWithPaymentFromConfig(fetch, {{\n\
             \x20   schemes: [{{ network: \"{network}\", client: new ExactSvmScheme(signer, {{ rpcUrl: \"{rpc}\" }}) }}],\n\
             \x20 }});\n\
             \nOr the paying client: paperchain wallet solana import (the payer_secret_key above), with\n\
             PAPERCHAIN_RPC_SOLANA={rpc} and PAPERCHAIN_GENESIS_SOLANA={genesis}.\n",
            genesis = solana["genesis"].as_str().unwrap_or_default(),
        );
    }
    let _ = out.flush();
}

fn routes(args: RoutesArgs) -> anyhow::Result<()> {
    let catalog = paperchain_engine::catalog::standard();
    let wanted = |family: Family| args.family.as_deref().is_none_or(|f| f == family.as_str());
    let routes: Vec<_> = catalog.routes().map(|r| r.info()).filter(|i| wanted(i.family)).collect();
    if args.json {
        let list: Vec<_> = routes
            .iter()
            .map(|i| {
                serde_json::json!({
                    "operation": i.operation, "path": i.path, "family": i.family.as_str(),
                    "price_usd": i.base_price.to_string().trim_start_matches('$'),
                    "price_rule": i.price_rule, "summary": i.summary,
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    let op_width = routes.iter().map(|i| i.operation.len()).max().unwrap_or(9).max(9);
    let path_width = routes.iter().map(|i| i.path.len()).max().unwrap_or(4).max(4);
    println!("{:<op_width$}  {:<path_width$}  {:>9}  SUMMARY", "OPERATION", "PATH", "PRICE");
    for info in &routes {
        println!(
            "{:<op_width$}  {:<path_width$}  {:>9}  {}",
            info.operation,
            info.path,
            info.base_price.to_string(),
            info.summary
        );
    }
    println!(
        "\n{} routes. Prices are the hosted service's per call (page-based routes add per page); local calls are free.",
        routes.len()
    );
    Ok(())
}
