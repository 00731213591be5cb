//! `paperchain ledger`, `paperchain spend`, `paperchain config` and `paperchain wallet
//! balance`: what was called and paid, the settings that decide it, and what the wallet holds.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use paperchain_engine::Context;
use paperchain_wallet::config::{ClientConfig, config_file};
use paperchain_wallet::config_edit::{self, Change};
use paperchain_wallet::ledger::{Ledger, Row, now_ms};
use paperchain_wallet::live::{LiveConfig, Unconfirmed};
use paperchain_wallet::money::{Dollars, format_atomic};

#[derive(clap::Args)]
pub struct LedgerArgs {
    #[command(subcommand)]
    command: Option<LedgerCommand>,
    /// Only calls since a date (`2026-11-01`) or for a span back from now (`24h`, `7d`).
    #[arg(long, global = true)]
    since: Option<String>,
    /// Print CSV.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum LedgerCommand {
    /// Checks every paid or pending row against the chain: the transaction moved exactly the
    /// amount from the payer to the payee; a pending authorization used, unused or expired.
    Reconcile {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The wallet's batch-settlement payment channels: deposited, refunded, charged by
    /// vouchers, and what is left; --close asks each channel's service to claim what was
    /// charged and refund the rest to the wallet.
    Channels {
        /// Close every channel with something left.
        #[arg(long)]
        close: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(clap::Args)]
pub struct SpendArgs {
    /// Only payments since a date (`2026-11-01`) or a span back from now (`24h`, `7d`).
    #[arg(long)]
    since: Option<String>,
    /// Group by: day, route, client or network (default: each in turn).
    #[arg(long, value_parser = ["day", "route", "client", "network"])]
    by: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
#[command(after_help = "\
Keys are dotted paths into config.toml; quote a part with dots or colons in it:
  paperchain config set service.url https://api.paperchain.example
  paperchain config set policy.per_day 1.00
  paperchain config set 'policy.networks.\"eip155:8453\"' 2.00
  paperchain config set routing.routes.rotate_pdf_pages hosted
  paperchain config add policy.hosts mirror.example.com
  paperchain config add files.folders ~/Documents
  paperchain config add --asset eip155:8453,0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42,EURC,6
  paperchain config unset policy.approve_above
Every change is checked as a whole before the file is replaced. A change that loosens the
spend policy (a higher cap, a new host, payee, asset or network, a route sent to the hosted
service) waits until you confirm it: `paperchain config confirm` at a terminal (with the
wallet's password, or the system's authentication for a keyring wallet), or the app.")]
pub struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(clap::Subcommand)]
enum ConfigCommand {
    /// Prints the file, and where it is.
    Show,
    /// Sets a value (dollar amounts and modes are written as strings).
    Set { key: String, value: String },
    /// Adds a value to a list (policy.hosts, policy.payees, files.folders), or an asset to policy.assets.
    Add {
        #[arg(required_unless_present = "asset", requires = "value")]
        key: Option<String>,
        value: Option<String>,
        /// An asset paid in: network,address,symbol,decimals.
        #[arg(long, value_name = "NETWORK,ADDRESS,SYMBOL,DECIMALS", conflicts_with = "key")]
        asset: Option<String>,
    },
    /// Removes a key.
    Unset { key: String },
    /// Confirms what the file loosens, after checking it is you (at a terminal).
    Confirm,
    /// Puts the file back as you last confirmed it, taking back what waits.
    Discard,
}

/// Unix milliseconds of `--since`.
fn since_ms(since: Option<&str>) -> anyhow::Result<i64> {
    let Some(text) = since.map(str::trim) else { return Ok(0) };
    let span = |unit: char, ms: i64| -> Option<i64> {
        text.strip_suffix(unit).and_then(|n| n.parse::<i64>().ok()).map(|n| now_ms() - n.saturating_mul(ms))
    };
    if let Some(ms) = span('h', 3_600_000).or_else(|| span('d', 86_400_000)).or_else(|| span('m', 60_000)) {
        return Ok(ms);
    }
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(text, &format)
        .map_err(|_| anyhow!("--since `{text}`: write a date (2026-11-01) or a span (24h, 7d)"))?;
    Ok(date.midnight().assume_utc().unix_timestamp() * 1000)
}

async fn ledger(data_dir: &Path) -> anyhow::Result<Ledger> {
    Ledger::open_in(data_dir).await.context("opening the ledger")
}

fn amount_text(row: &Row) -> String {
    match (&row.amount, row.decimals, &row.symbol) {
        (Some(amount), Some(decimals), Some(symbol)) if row.micros > 0 || row.state == "paid" => {
            let atomic = amount.parse::<u128>().unwrap_or(0);
            format!("{} {symbol}", format_atomic(atomic, u8::try_from(decimals).unwrap_or(6)))
        }
        _ => String::new(),
    }
}

pub async fn run_ledger(args: LedgerArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let ledger = ledger(data_dir).await?;
    if let Some(LedgerCommand::Channels { close, json }) = args.command {
        return channels(ledger, data_dir, close, json).await;
    }
    if let Some(LedgerCommand::Reconcile { json }) = args.command {
        let ctx = Context::try_new()?;
        let now = paperchain_wallet::ledger::now_secs();
        let checks = paperchain_wallet::reconcile::reconcile(&ledger, &ctx.chains, &ctx.solana, now).await?;
        let bad = checks.iter().filter(|c| matches!(c.verdict.as_str(), "mismatch" | "unknown")).count();
        if json {
            println!("{}", serde_json::to_string_pretty(&checks)?);
        } else {
            for check in &checks {
                println!(
                    "{:<38} {:<10} {:<9} {} {}",
                    check.call_id,
                    check.was,
                    check.verdict,
                    check.tx.as_deref().unwrap_or("-"),
                    check.detail
                );
            }
            println!(
                "{} payments checked, {} agree with the chain, {bad} do not or cannot be checked",
                checks.len(),
                checks.len() - bad
            );
        }
        ledger.close().await;
        return Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let rows = ledger.rows(since_ms(args.since.as_deref())?).await?;
    ledger.close().await;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if args.csv {
        let mut out = csv_line(&[
            "at",
            "call_id",
            "front_door",
            "client",
            "route",
            "ran",
            "service",
            "duration_ms",
            "status",
            "input_bytes",
            "output_sha256",
            "state",
            "quote",
            "amount",
            "asset",
            "network",
            "payer",
            "payee",
            "tx",
            "error",
        ]);
        for r in &rows {
            let number = |n: Option<i64>| n.map(|n| n.to_string()).unwrap_or_default();
            let text = |t: &Option<String>| t.clone().unwrap_or_default();
            out.push_str(&csv_line(&[
                &r.at,
                &r.call_id,
                &r.front_door,
                &text(&r.client),
                &r.route,
                &r.ran,
                &text(&r.service),
                &number(r.duration_ms),
                &number(r.status),
                &r.input_bytes.to_string(),
                &text(&r.output_sha256),
                &r.state,
                &text(&r.quote),
                &text(&r.amount),
                &text(&r.asset),
                &text(&r.network),
                &text(&r.payer),
                &text(&r.payee),
                &text(&r.tx),
                &text(&r.error),
            ]));
        }
        print!("{out}");
    } else {
        println!(
            "{:<20} {:<5} {:<26} {:<6} {:>6} {:>7} {:<9} {:<14} TRANSACTION",
            "AT", "DOOR", "ROUTE", "RAN", "STATUS", "MS", "STATE", "PAID"
        );
        for r in &rows {
            println!(
                "{:<20} {:<5} {:<26} {:<6} {:>6} {:>7} {:<9} {:<14} {}",
                r.at.trim_end_matches('Z').replace('T', " "),
                r.front_door,
                r.route,
                r.ran,
                r.status.map(|s| s.to_string()).unwrap_or_default(),
                r.duration_ms.map(|s| s.to_string()).unwrap_or_default(),
                r.state,
                amount_text(r),
                r.tx.as_deref().unwrap_or("")
            );
        }
        println!("{} calls", rows.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// One CSV record (RFC 4180), a field starting with `=`, `+`, `-`, `@`, a tab or a carriage
/// return prefixed with `'` so a spreadsheet does not run it.
fn csv_line(fields: &[&str]) -> String {
    let quoted: Vec<String> = fields
        .iter()
        .map(|f| {
            let risky = f.starts_with(['=', '+', '-', '@', '\t', '\r']);
            if risky || f.contains([',', '"', '\n', '\r']) {
                format!("\"{}{}\"", if risky { "'" } else { "" }, f.replace('"', "\"\""))
            } else {
                f.to_string()
            }
        })
        .collect();
    format!("{}\r\n", quoted.join(","))
}

pub async fn run_spend(args: SpendArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let ledger = ledger(data_dir).await?;
    let rows = ledger.rows(since_ms(args.since.as_deref())?).await?;
    ledger.close().await;
    let groups: Vec<&str> = match args.by.as_deref() {
        Some(by) => vec![by],
        None => vec!["day", "route", "client", "network"],
    };
    let mut report = serde_json::Map::new();
    for by in &groups {
        // Paid money, and money signed whose fate the chain has not told yet.
        let mut totals: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        for r in rows.iter().filter(|r| matches!(r.state.as_str(), "paid" | "signed" | "unsettled")) {
            let key = match *by {
                "day" => r.at.get(..10).unwrap_or_default().to_string(),
                "route" => r.route.clone(),
                "client" => r.client.clone().unwrap_or_else(|| "(unnamed)".into()),
                _ => r.network.clone().unwrap_or_default(),
            };
            let entry = totals.entry(key).or_default();
            let micros = u64::try_from(r.micros).unwrap_or(0);
            if r.state == "paid" {
                entry.0 += micros;
                entry.2 += 1;
            } else {
                entry.1 += micros;
            }
        }
        if args.json {
            let list: Vec<_> = totals
                .iter()
                .map(|(k, (paid, pending, calls))| {
                    serde_json::json!({"key": k, "paid": Dollars::from_micros(*paid).to_string(),
                        "paid_micros": paid, "pending_micros": pending, "paid_calls": calls})
                })
                .collect();
            report.insert((*by).to_string(), serde_json::Value::Array(list));
        } else {
            println!("BY {}", by.to_uppercase());
            for (key, (paid, pending, calls)) in &totals {
                let pending = if *pending > 0 {
                    format!("  (+{} pending)", Dollars::from_micros(*pending))
                } else {
                    String::new()
                };
                println!("  {key:<44} {:>12}  {calls} calls{pending}", Dollars::from_micros(*paid).to_string());
            }
            if totals.is_empty() {
                println!("  nothing paid");
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// `paperchain config …`. Blocking (the key store, a keystore's key derivation).
pub fn run_config(args: ConfigArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let keys = paperchain_wallet::keys::KeyConfig::from_env(data_dir);
    match args.command {
        ConfigCommand::Confirm => return confirm(&keys),
        ConfigCommand::Discard => {
            let live = user_config(&keys, false)?;
            let waiting = live.unconfirmed();
            live.discard()?;
            match waiting {
                Some(waiting) if !waiting.changes.is_empty() => {
                    println!("Taken back: {}", waiting.changes.join("; "));
                }
                _ => println!("Nothing waited for you to confirm."),
            }
            println!("{} is as you last confirmed it.", config_file().display());
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let file = config_file();
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(anyhow!("reading {}: {e}", file.display())),
    };
    if let ConfigCommand::Show = args.command {
        println!("# {}", file.display());
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    let (key, change) = match &args.command {
        ConfigCommand::Set { key, value } => (key.as_str(), Change::Set(value.clone())),
        ConfigCommand::Add { key: Some(key), value: Some(value), .. } => (key.as_str(), Change::Add(value.clone())),
        ConfigCommand::Add { asset: Some(asset), .. } => {
            ("policy.assets", Change::AddAsset(config_edit::parse_asset(asset)?))
        }
        ConfigCommand::Add { .. } => unreachable!("clap asks for a key and value, or --asset"),
        ConfigCommand::Unset { key } => (key.as_str(), Change::Unset),
        ConfigCommand::Show | ConfigCommand::Confirm | ConfigCommand::Discard => unreachable!("answered above"),
    };
    let new_text = config_edit::edited(&text, &file, key, &change)?;
    write_atomically(&file, new_text.as_bytes())?;
    println!("{key} changed in {}", file.display());
    if let Some(waiting) = user_config(&keys, false)?.unconfirmed() {
        println!("{}\n{WHERE_TO_CONFIRM}", waiting_text(&waiting));
    }
    Ok(ExitCode::SUCCESS)
}

fn user_config(keys: &paperchain_wallet::keys::KeyConfig, adopt: bool) -> anyhow::Result<LiveConfig> {
    Ok(paperchain_wallet::client::user_config(keys, Default::default(), adopt)?)
}

/// Where a change that waits is confirmed.
pub const WHERE_TO_CONFIRM: &str = "Confirm at a terminal with `paperchain config confirm`, or in the app (Settings); \
     `paperchain config discard` takes it back.";

/// What waits for the owner, one line each.
pub fn waiting_text(waiting: &Unconfirmed) -> String {
    let mut text = String::from("Not followed until you confirm it:");
    if let Some(reason) = &waiting.reason {
        text += &format!("\n  ({reason})");
    }
    for change in &waiting.changes {
        text += &format!("\n  {change}");
    }
    text
}

/// `paperchain config confirm`: shows what the file loosens, checks the owner at the
/// terminal, and seals the file as shown.
fn confirm(keys: &paperchain_wallet::keys::KeyConfig) -> anyhow::Result<ExitCode> {
    let live = user_config(keys, true)?;
    let Some(waiting) = live.unconfirmed() else {
        println!("Nothing to confirm: {} loosens nothing you confirmed.", config_file().display());
        return Ok(ExitCode::SUCCESS);
    };
    println!("{}", waiting_text(&waiting));
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(anyhow!(
            "confirming needs you at a terminal (or the app): nothing was confirmed, and the change keeps waiting"
        ));
    }
    let password = match paperchain_wallet::keys::status(keys).store {
        // Asked on the terminal only: never the environment or a password file.
        Some(paperchain_wallet::keys::Store::Keystore { .. }) => {
            Some(paperchain_wallet::keys::PasswordSource::Prompt.read("the wallet, to confirm")?)
        }
        _ => None,
    };
    let checked = paperchain_wallet::owner::check_owner(keys, password).map_err(|e| anyhow!(e))?;
    live.confirm(&waiting)?;
    println!("Confirmed ({checked}): every running Paperchain follows it from its next call.");
    Ok(ExitCode::SUCCESS)
}

/// Writes `bytes` to `file` whole or not at all: a temporary file in the same folder
/// (created when missing), synced, then renamed over `file`.
pub fn write_atomically(file: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    config_edit::write_atomically(file, bytes).with_context(|| format!("writing {}", file.display()))
}

/// `paperchain wallet balance`: USDC and gas on every network the wallet may pay on whose
/// chain has an RPC endpoint configured.
pub async fn balance(data_dir: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let key_config = paperchain_wallet::keys::KeyConfig::from_env(data_dir);
    let status = tokio::task::spawn_blocking(move || paperchain_wallet::keys::status(&key_config)).await?;
    let address = status.address.ok_or_else(|| anyhow!("no wallet: paperchain wallet new | import"))?;
    let config = ClientConfig::load()?;
    let ctx = Context::try_new()?;
    let lines: Vec<serde_json::Value> = paperchain_wallet::chain::wallet_balances(&config, &ctx.chains, address)
        .await
        .iter()
        .map(|line| serde_json::to_value(line).unwrap_or_default())
        .collect();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"address": address.to_checksum(None), "balances": lines})
            )?
        );
    } else {
        println!("{}", address.to_checksum(None));
        for l in &lines {
            match l["error"].as_str() {
                Some(e) => println!(
                    "  {:<14} {:<10} cannot read: {e}",
                    l["network"].as_str().unwrap_or(""),
                    l["chain"].as_str().unwrap_or("")
                ),
                None => println!(
                    "  {:<14} {:<10} {} {}  gas {}",
                    l["network"].as_str().unwrap_or(""),
                    l["chain"].as_str().unwrap_or(""),
                    l["balance"].as_str().unwrap_or(""),
                    l["symbol"].as_str().unwrap_or(""),
                    l["gas"].as_str().unwrap_or("")
                ),
            }
        }
        if lines.is_empty() {
            println!("  no configured network has an RPC endpoint (PAPERCHAIN_RPC_BASE, PAPERCHAIN_RPC_POLYGON)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `paperchain ledger channels [--close]`.
async fn channels(ledger: Ledger, data_dir: &Path, close: bool, json: bool) -> anyhow::Result<ExitCode> {
    let text = |amount: u128, channel: &paperchain_wallet::channels::Channel| {
        format!("{} {}", format_atomic(amount, channel.decimals), channel.symbol)
    };
    let mut failed = 0;
    let mut closed = Vec::new();
    if close {
        ledger.close().await;
        let ctx = Context::try_new()?;
        let nobody = std::sync::Arc::new(paperchain_wallet::client::NobodyToAsk);
        let client = crate::paying::client(data_dir, &ctx, nobody, &crate::paying::RoutingArgs::default()).await?;
        for (channel, result) in client.close_channels().await? {
            match result {
                Ok(done) => {
                    if !json {
                        println!("{}: {} refunded in {}", channel.id, text(done.refunded, &channel), done.tx);
                    }
                    closed.push(serde_json::json!({"channel": channel.id, "refunded": done.refunded.to_string(), "tx": done.tx}));
                }
                Err(why) => {
                    failed += 1;
                    eprintln!("{}: not closed: {why}", channel.id);
                    closed.push(serde_json::json!({"channel": channel.id, "error": why}));
                }
            }
        }
        let channels = paperchain_wallet::channels::list(client.ledger()).await?;
        print_channels(&channels, json, &closed, text);
    } else {
        let channels = paperchain_wallet::channels::list(&ledger).await?;
        ledger.close().await;
        print_channels(&channels, json, &closed, text);
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_channels(
    channels: &[paperchain_wallet::channels::Channel],
    json: bool,
    closed: &[serde_json::Value],
    text: impl Fn(u128, &paperchain_wallet::channels::Channel) -> String,
) {
    if json {
        let listed: Vec<_> = channels
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.id, "host": c.host, "network": c.network, "payer": c.payer, "symbol": c.symbol,
                    "deposited": c.deposited.to_string(), "refunded": c.refunded.to_string(),
                    "charged": c.charged.to_string(), "claimed": c.claimed.to_string(),
                    "unspent": c.unspent().to_string(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"channels": listed, "closed": closed}))
                .unwrap_or_default()
        );
        return;
    }
    if channels.is_empty() {
        println!("no payment channels");
    }
    for c in channels {
        println!(
            "{} {} on {}: deposited {}, refunded {}, charged {} (claimed {} when last reconciled), left {}",
            c.id,
            c.host,
            c.network,
            text(c.deposited, c),
            text(c.refunded, c),
            text(c.charged, c),
            text(c.claimed, c),
            text(c.unspent(), c)
        );
    }
}
