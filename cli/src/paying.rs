//! The paying client as the CLI, `serve` and `mcp --stdio` set it up: the user's
//! configuration, the ledger in the data folder, the key from the wallet's store, and who
//! can approve a payment above the threshold.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use paperchain_engine::Context;
use paperchain_wallet::client::{Approval, Approver, BoxFuture, ConfigSource, KeyLoader, NobodyToAsk, PayingClient};
use paperchain_wallet::config::ClientConfig;
use paperchain_wallet::keys::{self, KeyConfig};
use paperchain_wallet::ledger::Ledger;

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
}

/// The paying client for this user, with `approver`; `routing` overrides the configuration.
pub async fn client(
    data_dir: &Path,
    ctx: &Context,
    approver: Arc<dyn Approver>,
    routing: &RoutingArgs,
) -> anyhow::Result<Arc<PayingClient>> {
    if let Some(url) = &routing.service_url {
        paperchain_wallet::config::check_service_url(url).map_err(|e| anyhow::anyhow!("--service-url: {e}"))?;
    }
    // The file and the environment, then this command's own options over them: at start,
    // and again whenever the user changes the file in the app.
    let (service_url, default_route) = (routing.service_url.clone(), routing.default_route.clone());
    let source: ConfigSource = Arc::new(move || {
        let mut config = ClientConfig::load()?;
        config.apply_env(|name| match name {
            "PAPERCHAIN_SERVICE_URL" => service_url.clone(),
            "PAPERCHAIN_ROUTE" => default_route.clone(),
            _ => None,
        })?;
        Ok(config)
    });
    let config = source()?;
    let ledger = Ledger::open_in(data_dir).await.context("opening the ledger")?;
    let key_config = KeyConfig::from_env(data_dir);
    let keys: KeyLoader =
        Arc::new(move || keys::load(&key_config).map(|wallet| wallet.signer().clone()).map_err(|e| e.to_string()));
    let client = PayingClient::new(Arc::new(config), ledger, keys, approver, ctx.chains.clone());
    Ok(Arc::new(client.with_reload(source)))
}

/// A server's client, its approvals answered by `approver` (the app's queue, or nobody).
/// Payments an earlier run left open (killed mid-call, an answer lost) are settled from
/// the chain in the background as it starts.
pub async fn server_client(
    data_dir: &Path,
    ctx: &Context,
    routing: &RoutingArgs,
    approver: Arc<dyn Approver>,
) -> anyhow::Result<Arc<PayingClient>> {
    let client = client(data_dir, ctx, approver, routing).await?;
    let (ledger, chains) = (client.ledger().clone(), ctx.chains.clone());
    tokio::spawn(async move {
        let now = paperchain_wallet::ledger::now_secs();
        match paperchain_wallet::reconcile::settle_open(&ledger, &chains, now).await {
            Ok(checks) => {
                for check in checks {
                    tracing::info!(call = %check.call_id, was = %check.was, verdict = %check.verdict, tx = ?check.tx,
                        "an open payment checked on chain: {}", check.detail);
                }
            }
            Err(e) => tracing::warn!(error = %e, "open payments could not be checked on chain"),
        }
    });
    Ok(client)
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
