//! `paperchain`: chain reads and document operations on your own machine.
//!
//! The binary is a thin front door: `serve` runs the HTTP gateway, `routes` lists the
//! catalog, `call` runs one operation in-process. Everything else lives in the engine.

mod call;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use paperchain_engine::{Catalog, Context, Family};
use paperchain_gateway::ServerConfig;

const ABOUT: &str = "Chain reads and document operations on your own machine.";

const LONG_ABOUT: &str = "\
Chain reads and document operations on your own machine.

Paperchain serves the same routes as the hosted pay-per-call service, locally and free:
an HTTP API on 127.0.0.1:8402 (`paperchain serve`), or one operation at a time from
the shell (`paperchain call`). `paperchain routes` lists every operation and its price
on the hosted service.";

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
    /// Serve the HTTP API (local mode: no payments, loopback only by default).
    Serve(ServeArgs),
    /// List every route: operation, path, price.
    Routes(RoutesArgs),
    /// Run one operation in-process and print or save its result.
    Call(call::CallArgs),
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

fn default_data_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("paperchain");
    }
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".local/share/paperchain"),
        None => std::env::temp_dir().join("paperchain"),
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let mut config = ServerConfig::local(args.data_dir.unwrap_or_else(default_data_dir));
    config.listen = args.listen;
    config.public_url = args.public_url;
    config.request_timeout = Duration::from_secs(args.request_timeout.max(1));
    config.allowed_hosts = args.allow_hosts;
    if !config.listen.ip().is_loopback() {
        tracing::warn!(listen = %config.listen, "listening beyond loopback: anyone who can reach this address can use it");
    }
    // A configuration the server would not follow (a malformed PAPERCHAIN_CHAINS) stops it here.
    let ctx = Context::try_new()?;
    paperchain_gateway::serve(config.clone(), ctx).await.with_context(|| format!("serving on {}", config.listen))
}

fn routes(args: RoutesArgs) -> anyhow::Result<()> {
    let catalog = Catalog::standard();
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
