//! `paperchain call` through the local server that already serves this data folder (the
//! desktop app, `paperchain serve`, the background service): one engine and one writer of
//! the ledger per user. The call goes to that server's HTTP API, which runs it or routes
//! it as its configuration says (a payment above the approval threshold waits where that
//! server asks: the app's dialog); its answer becomes the same result a call run here
//! gives, written by the same code.

use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use indicatif::{ProgressBar, ProgressStyle};
use paperchain_engine::catalog::RouteEntry;
use paperchain_engine::output::{OutFile, OutputMode};
use paperchain_engine::{FileSet, Reply};
use paperchain_gateway::routed;
use paperchain_server::instance::Instance;
use paperchain_wallet::client::HostedAnswer;
use reqwest::header::{CONTENT_TYPE, HeaderMap, USER_AGENT};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::call::{CallArgs, Outcome};

/// The `User-Agent` these calls carry: the ledger's client of the call.
fn user_agent() -> String {
    format!("paperchain-cli/{}", env!("CARGO_PKG_VERSION"))
}

/// Sends the call to `server`; its result, or the exit code of its error (2 for what the
/// caller can fix, 1 otherwise), said on stderr.
/// `unpack`: the input asks for a list of files ([`crate::call::unpack_into_folder`]), to
/// be written one by one.
pub async fn call(
    server: &Instance,
    entry: &RouteEntry,
    input: Value,
    args: &CallArgs,
    unpack: bool,
) -> anyhow::Result<Outcome> {
    let info = entry.info();
    // Loopback: no proxy may stand between the CLI and its own server.
    let http = reqwest::Client::builder().no_proxy().build().context("the HTTP client")?;
    let mut request = http
        .post(format!("{}{}", server.base_url, info.path))
        .header(USER_AGENT, user_agent())
        .header(CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&input)?);
    if let Some(mode) = &args.route {
        request = request.header(routed::ROUTE_HEADER, mode);
    }
    if args.quote {
        request = request.header(routed::QUOTE_HEADER, "only");
    }

    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(format!("{} on the local server at {}", info.operation, server.base_url));
    bar.enable_steady_tick(Duration::from_millis(120));
    let sent = async {
        let response = request.send().await?;
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        Ok::<_, reqwest::Error>((status, headers, response.bytes().await?))
    }
    .await;
    bar.finish_and_clear();
    let (status, headers, body) = sent.with_context(|| {
        format!(
            "the local server at {} (process {}) did not answer; `--standalone` runs the call in this process",
            server.base_url, server.pid
        )
    })?;

    if !(200..300).contains(&status) {
        eprintln!("{}", error_line(status, &body));
        let input_error = matches!(status, 400 | 404 | 413 | 415 | 422);
        return Ok(Err(std::process::ExitCode::from(if input_error { 2 } else { 1 })));
    }
    if let Some(line) = where_it_ran(&headers) {
        eprintln!("{line}");
    }
    let answer = HostedAnswer {
        status,
        headers: headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str().to_string(), value.to_str().ok()?.to_string())))
            .collect(),
        body,
        paid: None,
        call_id: String::new(),
    };
    // A file answer gets the name it offers only when that is a safe one, as from the
    // hosted service.
    let reply = paperchain_calls::routed::answer_reply(&answer).map_err(|(_, message)| anyhow!(message))?;
    match reply {
        Reply::Json(value) if unpack => Ok(Ok(files_of(value)?)),
        reply => Ok(Ok(reply)),
    }
}

/// An error answer as the CLI says errors: `error [code]: message (field /x)`.
fn error_line(status: u16, body: &[u8]) -> String {
    let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error = &value["error"];
    match (error["code"].as_str(), error["message"].as_str()) {
        (Some(code), Some(message)) => {
            let field =
                error["field"].as_str().filter(|f| !f.is_empty()).map(|f| format!(" (field {f})")).unwrap_or_default();
            format!("error [{code}]: {}{field}", paperchain_wallet::clean(message, 2000))
        }
        _ => {
            let text = paperchain_wallet::clean(&String::from_utf8_lossy(body), 500);
            format!("error: the local server answered {status}: {text}")
        }
    }
}

/// What the server says of a call it sent on to the hosted service.
fn where_it_ran(headers: &HeaderMap) -> Option<String> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if text(routed::RAN_HEADER) != Some("hosted") {
        return None;
    }
    let Some(paid) = text(routed::PAID_HEADER) else {
        return Some("ran on the hosted service: nothing paid".into());
    };
    let note = text(routed::PAYMENT_HEADER)
        .and_then(|t| serde_json::from_str::<paperchain_calls::routed::PaymentNote>(t).ok());
    Some(match note {
        Some(note) if !note.transaction.is_empty() => {
            format!("ran on the hosted service: paid {paid} on {}, transaction {}", note.network, note.transaction)
        }
        Some(note) => format!(
            "ran on the hosted service: paid {paid} on {}, transaction not shown yet (`paperchain ledger reconcile` \
             finds it)",
            note.network
        ),
        None => format!("ran on the hosted service: paid {paid}"),
    })
}

/// The files of a base64 answer (one object, or a list), each checked against the SHA-256
/// sent with it and named safely; a JSON result that holds no files stays JSON.
fn files_of(value: Value) -> anyhow::Result<Reply<Value>> {
    let (items, list) = match &value {
        Value::Array(items) => (items.iter().collect::<Vec<_>>(), true),
        Value::Object(object) if object.contains_key("data") => (vec![&value], false),
        _ => return Ok(Reply::Json(value)),
    };
    let mut files = Vec::with_capacity(items.len());
    for item in &items {
        let (Some(name), Some(data)) = (item["filename"].as_str(), item["data"].as_str()) else {
            return Ok(Reply::Json(value));
        };
        let media_type = item["media_type"].as_str().unwrap_or("application/octet-stream").to_string();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| anyhow!("the local server sent {name} in base64 that does not decode: {e}"))?;
        if item["sha256"].as_str().is_some_and(|sent| hex::encode(Sha256::digest(&bytes)) != sent) {
            bail!("{name} arrived damaged from the local server (its SHA-256 differs)");
        }
        files.push(OutFile {
            filename: paperchain_calls::routed::safe_filename(Some(name), &media_type),
            media_type,
            bytes,
        });
    }
    let report = match &value {
        Value::Object(object) => object.get("report").filter(|r| !r.is_null()).cloned(),
        _ => None,
    };
    let bundle = list.then(|| "files.zip".to_string());
    Ok(Reply::Files(FileSet { files, mode: OutputMode::File, bundle, report, links: None }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_files_are_checked_against_their_digest_and_named_safely() {
        let data = base64::engine::general_purpose::STANDARD.encode(b"%PDF-1.7");
        let good = hex::encode(Sha256::digest(b"%PDF-1.7"));
        let one = serde_json::json!({ "filename": "../x.pdf", "media_type": "application/pdf", "data": data,
            "sha256": good, "report": {"pages": 1} });
        let Reply::Files(set) = files_of(one).unwrap() else { panic!("files") };
        assert_eq!(set.files.len(), 1);
        assert_eq!((set.files[0].filename.as_str(), set.files[0].bytes.as_slice()), ("x.pdf", b"%PDF-1.7".as_slice()));
        assert_eq!(set.report, Some(serde_json::json!({"pages": 1})));
        let bad =
            serde_json::json!([{ "filename": "a.pdf", "media_type": "application/pdf", "data": data, "sha256": "00" }]);
        assert!(files_of(bad).unwrap_err().to_string().contains("damaged"));
        let plain = serde_json::json!({ "pages": 3 });
        assert!(matches!(files_of(plain.clone()).unwrap(), Reply::Json(v) if v == plain));
    }

    #[test]
    fn errors_read_as_the_cli_says_them() {
        let body = br#"{"error":{"code":"invalid_input","message":"must be 90, 180 or 270","field":"/degrees"}}"#;
        assert_eq!(error_line(422, body), "error [invalid_input]: must be 90, 180 or 270 (field /degrees)");
        assert_eq!(error_line(502, b"Bad Gateway"), "error: the local server answered 502: Bad Gateway");
    }

    #[test]
    fn a_routed_answer_says_what_it_paid() {
        let mut headers = HeaderMap::new();
        assert_eq!(where_it_ran(&headers), None);
        headers.insert(routed::RAN_HEADER, "hosted".parse().unwrap());
        assert_eq!(where_it_ran(&headers).as_deref(), Some("ran on the hosted service: nothing paid"));
        // The headers as the server writes them for a paid answer.
        let paid = paperchain_wallet::client::Paid {
            amount: "2000".into(),
            dollars: "0.002".parse().unwrap(),
            symbol: "USDC".into(),
            decimals: 6,
            network: "eip155:8453".into(),
            payer: "0x1".into(),
            payee: "0x2".into(),
            tx: "0xab".into(),
        };
        let answer = HostedAnswer {
            status: 200,
            headers: vec![],
            body: Default::default(),
            paid: Some(paid.clone()),
            call_id: "c1".into(),
        };
        let served = routed::hosted_response(answer.clone());
        assert_eq!(
            where_it_ran(served.headers()).as_deref(),
            Some("ran on the hosted service: paid 0.002 USDC on eip155:8453, transaction 0xab")
        );
        let unseen =
            HostedAnswer { paid: Some(paperchain_wallet::client::Paid { tx: String::new(), ..paid }), ..answer };
        let line = where_it_ran(routed::hosted_response(unseen).headers()).unwrap();
        assert!(line.contains("transaction not shown yet"), "{line}");
    }
}
