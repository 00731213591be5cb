//! The paying client as the CLI, `serve` and `mcp --stdio` set it up: the user's
//! configuration, the ledger in the data folder, the key from the wallet's store, and who
//! can approve a payment above the threshold. Payments a crash left open are settled by
//! the process that owns the ledger (`paperchain_server::settle_open_payments`).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::Arc;

use paperchain_engine::Context;
use paperchain_wallet::client::{Approval, Approver, BoxFuture, NobodyToAsk, Overrides, PayingClient};

/// Where local mode sends calls, over `config.toml` and the environment
/// (`serve` and `mcp --stdio`; `call` has `--route` for one call).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RoutingArgs {
    /// The hosted service routed calls go to (over service.url and PAPERCHAIN_SERVICE_URL).
    #[arg(long, value_name = "URL")]
    pub service_url: Option<String>,
    /// Where routes run unless config.toml names the route: local, hosted or auto (over
    /// routing.default and PAPERCHAIN_ROUTE).
    #[arg(long = "route", value_name = "MODE", value_parser = ["local", "hosted", "auto"])]
    pub default_route: Option<String>,
    /// A folder whose files calls may read by path (`{"path": …}`) and save results into,
    /// besides config.toml's files.folders (absolute or `~/…`; repeatable, or several after
    /// one --folder, or none: an MCP bundle's empty folder list passes a bare --folder).
    #[arg(long = "folder", value_name = "DIR", num_args = 0..)]
    pub folders: Vec<String>,
}

/// The paying client for this user, with `approver`; `routing` overrides the configuration.
pub async fn client(
    data_dir: &Path,
    ctx: &Context,
    approver: Arc<dyn Approver>,
    routing: &RoutingArgs,
) -> anyhow::Result<Arc<PayingClient>> {
    let overrides = Overrides {
        service_url: routing.service_url.clone(),
        default_route: routing.default_route.clone(),
        folders: routing.folders.clone(),
    };
    Ok(Arc::new(PayingClient::for_user(data_dir, ctx.chains.clone(), approver, overrides).await?))
}

/// Asks at the terminal; refuses when there is none. `bar`, a progress spinner on the same
/// terminal, is hidden while the question waits.
pub struct TerminalApprover {
    /// The spinner to hide while asking.
    pub bar: Option<indicatif::ProgressBar>,
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, approval: &'a Approval) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
                return NobodyToAsk.approve(approval).await;
            }
            let question = format!(
                "{} on {} costs {} ({}), above policy.approve_above. Pay it? [y/N] ",
                approval.route, approval.host, approval.dollars, approval.description
            );
            let bar = self.bar.clone();
            let answer = tokio::task::spawn_blocking(move || {
                let ask = || {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(question.as_bytes());
                    let _ = err.flush();
                    let mut line = String::new();
                    std::io::stdin().lock().read_line(&mut line).map(|_| line)
                };
                match bar {
                    Some(bar) => bar.suspend(ask),
                    None => ask(),
                }
            })
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("reading the answer: {e}"))?;
            if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
                Ok(())
            } else {
                Err(format!("the user did not approve {}", approval.description))
            }
        })
    }
}
