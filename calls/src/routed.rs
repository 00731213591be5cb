//! Local mode's calls, for every front door: where each runs (the engine here, or the
//! hosted service paid by the wallet), its ledger row, and the hosted service's answer as
//! the reply a local run gives.
//!
//! A route runs `local`, `hosted` or `auto` (local, then hosted when the engine cannot: a
//! missing external tool, an unreachable RPC), as the user's configuration says per route;
//! a call may ask for another mode (the `Paperchain-Route` header, `paperchain call
//! --route`). Every call, local or hosted, gets a ledger row; a hosted answer is passed on
//! as the service gave it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use paperchain_engine_core::cancel::{self, Stop};
use paperchain_engine_core::catalog::{Admission, RouteEntry};
use paperchain_engine_core::output::OutputMode;
use paperchain_engine_core::{Context, EngineError, ErrorKind, Family, FileSet, OutFile, Reply};
use paperchain_wallet::client::{Approver, HostedAnswer, PayingClient, Quote, Request};
use paperchain_wallet::config::RouteMode;
use paperchain_wallet::ledger::{Caller, Finish, NewCall};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::{Outcome, REPORT_HEADER, status_of};

/// What the `Paperchain-Payment` answer header says of a paid call, as JSON.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PaymentNote {
    /// Atomic units of the asset.
    pub amount: String,
    /// CAIP-2 network.
    pub network: String,
    /// Who paid.
    pub payer: String,
    /// Who was paid.
    pub payee: String,
    /// The settlement's transaction (empty when the chain has not shown it yet).
    pub transaction: String,
}

impl PaymentNote {
    /// The note of `paid`.
    pub fn of(paid: &paperchain_wallet::client::Paid) -> PaymentNote {
        PaymentNote {
            amount: paid.amount.clone(),
            network: paid.network.clone(),
            payer: paid.payer.clone(),
            payee: paid.payee.clone(),
            transaction: paid.tx.clone(),
        }
    }
}

/// One local-mode call with a JSON body.
pub(crate) struct LocalCall<'a> {
    pub route: &'a RouteEntry,
    pub body: bytes::Bytes,
    pub caller: Caller,
    pub mode: Option<RouteMode>,
    pub quote_only: bool,
    pub admission: Admission,
    pub approver: Option<Arc<dyn Approver>>,
    pub stop: Stop,
}

/// Whether the engine's failure means it cannot do this call here (so `auto` goes hosted):
/// a missing tool or upstream, an upstream that refuses or talks nonsense, and for chain
/// reads an RPC that does not answer in time. Input errors never go hosted.
fn cannot_run_here(error: &EngineError, family: Family) -> bool {
    match error.kind {
        ErrorKind::Unavailable { .. } | ErrorKind::BadUpstream | ErrorKind::RateLimited { .. } => true,
        ErrorKind::Timeout => family == Family::Chain,
        _ => false,
    }
}

/// Runs `call` where it belongs; `client` is `None` when no wallet is set up (then every
/// call runs here, unrecorded).
pub(crate) async fn run(
    client: Option<&Arc<PayingClient>>,
    ctx: &Context,
    call: LocalCall<'_>,
    timeout: Duration,
) -> Outcome {
    let Some(client) = client else {
        return Outcome::Local(local(&call, ctx, &call.stop, timeout).await, None);
    };
    let info = call.route.info();
    let mode = mode_for(Some(client), call.route, call.mode);
    let request = Request {
        operation: info.operation,
        path: info.path,
        body: call.body.clone(),
        caller: &call.caller,
        approver: call.approver.clone(),
        stop: call.stop.clone(),
    };
    if call.quote_only {
        return Outcome::Quote(Box::new(client.quote(&request).await));
    }
    if mode == RouteMode::Hosted {
        return Outcome::Hosted(client.call(&request).await);
    }
    let ledger = client.ledger();
    let new = NewCall {
        caller: &call.caller,
        route: info.operation,
        ran: "local",
        service: None,
        input_bytes: call.body.len(),
    };
    let call_id = match ledger.start(&new).await {
        Ok(id) => Some(id),
        Err(e) => {
            tracing::error!(error = %e, "the ledger cannot record a call");
            None
        }
    };
    let started = Instant::now();
    // A time-out here stops the work here only: `auto` may then send the call to the hosted service.
    let here = call.stop.child();
    let outcome = local(&call, ctx, &here, timeout).await;
    if let Some(call_id) = &call_id {
        let finish = match &outcome {
            Ok(reply) => Finish {
                status: 200,
                duration: started.elapsed(),
                output_sha256: Some(reply_sha256(reply)),
                error: None,
                stopped: None,
            },
            Err(error) => Finish {
                status: status_of(&error.kind),
                duration: started.elapsed(),
                output_sha256: None,
                error: Some(format!("{}: {}", error.code, error.message)),
                stopped: here.why(),
            },
        };
        if let Err(e) = ledger.finish(call_id, &finish).await {
            tracing::error!(error = %e, "the ledger cannot record a call");
        }
    }
    match outcome {
        Err(error) if mode == RouteMode::Auto && cannot_run_here(&error, info.family) => {
            tracing::info!(route = info.operation, reason = %error.message, "auto: running on the hosted service");
            Outcome::Hosted(client.call(&request).await)
        }
        outcome => Outcome::Local(outcome, call_id),
    }
}

/// Where a call of `route` runs: the mode it asked for, else the configuration's; with no
/// wallet, here.
pub(crate) fn mode_for(client: Option<&Arc<PayingClient>>, route: &RouteEntry, asked: Option<RouteMode>) -> RouteMode {
    let info = route.info();
    match client {
        None => RouteMode::Local,
        // A caller's key goes to another server only when the call itself says so: not by the
        // configuration's default, nor by `auto` when this server is busy or a step fails.
        Some(_) if info.holds_secrets => match asked {
            Some(RouteMode::Hosted) => RouteMode::Hosted,
            _ => RouteMode::Local,
        },
        Some(client) => asked.unwrap_or_else(|| client.config().mode_of(info.operation, info.path)),
    }
}

/// Whether a call runs here and nowhere else (not a quote, not hosted, not `auto`, which
/// goes hosted when this server is busy): then a front door takes its place at the
/// heavy-work gate before it reads the body ([`RouteEntry::admit`]).
pub(crate) fn runs_here_only(
    client: Option<&Arc<PayingClient>>,
    route: &RouteEntry,
    asked: Option<RouteMode>,
    quote_only: bool,
) -> bool {
    !quote_only && mode_for(client, route, asked) == RouteMode::Local
}

/// Runs `call` here, within `timeout`; stopped by the time-out or by `stop` (the call's
/// own or a child of it), its work stops too ([`cancel::bounded`]).
async fn local(
    call: &LocalCall<'_>,
    ctx: &Context,
    stop: &Stop,
    timeout: Duration,
) -> Result<Reply<Value>, EngineError> {
    cancel::bounded(stop, timeout, async {
        let prepared = call.route.prepare_admitted(call.admission.clone(), &call.body, ctx).await?;
        prepared.run(ctx.clone()).await
    })
    .await
}

/// SHA-256 of a reply: of its JSON text, or of its files' bytes in order.
pub fn reply_sha256(reply: &Reply<Value>) -> String {
    let mut hash = Sha256::new();
    match reply {
        Reply::Json(value) => hash.update(value.to_string().as_bytes()),
        Reply::Files(set) => set.files.iter().for_each(|f| hash.update(&f.bytes)),
    }
    hex::encode(hash.finalize())
}

/// A hosted 2xx answer as the reply a local run gives: its JSON, or its one file (name from
/// `Content-Disposition`, report from `Paperchain-Report`). A 4xx/5xx answer gives its
/// status and the service's message.
pub fn answer_reply(answer: &HostedAnswer) -> Result<Reply<Value>, (u16, String)> {
    let media_type = answer.header("content-type").unwrap_or("application/octet-stream").to_string();
    let is_json = media_type.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
    if answer.status >= 400 {
        let message = serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&answer.body).into_owned());
        let message = paperchain_wallet::clean(&message, 2000);
        return Err((answer.status, format!("the hosted service answered {}: {message}", answer.status)));
    }
    if is_json {
        return serde_json::from_slice(&answer.body)
            .map(Reply::Json)
            .map_err(|_| (502, "the hosted service's JSON cannot be read".to_string()));
    }
    let offered = answer
        .header("content-disposition")
        .and_then(|d| d.split("filename=\"").nth(1).and_then(|rest| rest.split('"').next()));
    let filename = safe_filename(offered, &media_type);
    let mut set = FileSet::single(OutFile { filename, media_type, bytes: answer.body.to_vec() }, OutputMode::File);
    set.report = answer.header(REPORT_HEADER).and_then(|r| serde_json::from_str(r).ok());
    Ok(Reply::Files(set))
}

/// A file name a hosted service offered, made safe to write in the user's folder: letters,
/// digits, `-`, `_` and `.` only, no leading dot (no `.bashrc`), at most 100 characters,
/// the extension of its media type (no `conftest.py` for a PDF), and no Windows device
/// name; otherwise `result.<ext>`.
pub fn safe_filename(offered: Option<&str>, media_type: &str) -> String {
    let extension = match media_type.split(';').next().unwrap_or("").trim() {
        "application/pdf" => "pdf",
        "application/zip" => "zip",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "text/markdown" => "md",
        "text/csv" => "csv",
        "text/plain" => "txt",
        "application/json" => "json",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation" => "pptx",
        _ => "bin",
    };
    let stem = offered
        .and_then(|name| name.rsplit_once('.').map(|(stem, _)| stem).or(Some(name)))
        .map(|stem| {
            stem.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')).collect::<String>()
        })
        .map(|stem| stem.trim_start_matches('.').chars().take(90).collect::<String>())
        .filter(|stem| !stem.is_empty())
        .unwrap_or_else(|| "result".into());
    // Windows' device names stay devices whatever their extension.
    let device = stem.split('.').next().unwrap_or("").to_ascii_uppercase();
    let reserved = matches!(device.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (device.len() == 4
            && (device.starts_with("COM") || device.starts_with("LPT"))
            && device.as_bytes()[3].is_ascii_digit());
    if reserved { format!("file-{stem}.{extension}") } else { format!("{stem}.{extension}") }
}

/// A quote as JSON: what the service asks and what the policy would pay.
pub fn quote_json(quote: &Quote) -> Value {
    match (&quote.required, &quote.selected) {
        (None, _) => json!({ "payment_required": false }),
        (Some(required), selected) => {
            let (allowed, choice, refusal) = match selected {
                Some(Ok(selected)) => (
                    true,
                    json!({
                        "amount": selected.atomic.to_string(), "dollars": selected.dollars.to_string(),
                        "asset": selected.asset.address, "symbol": selected.asset.symbol, "network": selected.network,
                        "payee": selected.payee, "needs_approval": selected.needs_approval,
                    }),
                    Value::Null,
                ),
                Some(Err(refusal)) => (false, Value::Null, json!(refusal.to_string())),
                None => (false, Value::Null, Value::Null),
            };
            json!({
                "payment_required": true, "accepts": required.accepts, "policy_allows": allowed,
                "would_pay": choice, "refusal": refusal,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_file_names_are_made_safe() {
        assert_eq!(safe_filename(Some("rotated.pdf"), "application/pdf"), "rotated.pdf");
        assert_eq!(safe_filename(Some("../../.bashrc"), "application/pdf"), "result.pdf");
        assert_eq!(safe_filename(Some("../x/.bashrc.pdf"), "application/pdf"), "x.bashrc.pdf");
        assert_eq!(safe_filename(Some(".envrc"), "application/pdf"), "result.pdf");
        assert_eq!(safe_filename(Some("conftest.py"), "application/pdf"), "conftest.pdf");
        assert_eq!(safe_filename(Some("C:x"), "application/zip"), "Cx.zip");
        assert_eq!(safe_filename(Some("CON"), "image/png"), "file-CON.png");
        assert_eq!(safe_filename(Some("lpt1.x.pdf"), "application/pdf"), "file-lpt1.x.pdf");
        assert_eq!(safe_filename(Some("///"), "application/pdf"), "result.pdf");
        assert_eq!(safe_filename(None, "application/x-unknown"), "result.bin");
        assert_eq!(safe_filename(Some(&"a".repeat(500)), "application/pdf").len(), 94);
    }
}
