//! `paperchain mcp --stdio` when a local server already runs: the messages of standard
//! input are relayed to its MCP endpoint, its answers written to standard output. One
//! engine and one ledger serve the desktop agent, the app and the CLI alike.
//!
//! Each message is one POST in the session the server opened at `initialize` (its
//! `Mcp-Session-Id`, closed when standard input ends): a request gets its response (or a
//! JSON-RPC error naming what failed), a notification gets nothing. An answer that comes
//! as an event stream is relayed message by message as it arrives, so a request the
//! server sends mid-call (asking the user to approve a payment) reaches the client, whose
//! reply is relayed back like any message; so is what the server sends on the session's own
//! stream (`GET`), opened once the session is set up. Requests run side by side; messages are written
//! whole, one per line. The MCP client's name from `initialize` goes as the user agent, so
//! the server's ledger records which agent called.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::{Mutex, mpsc};

/// The all-families MCP endpoint of a server whose base URL is `base_url`, on the compact
/// surface or the full one.
pub fn endpoint_of(base_url: &str, surface: crate::Surface) -> String {
    let path = match surface {
        crate::Surface::Compact => crate::http::ALL_ENDPOINT,
        crate::Surface::Full => crate::http::FULL_ENDPOINT,
    };
    format!("{}{path}", base_url.trim_end_matches('/'))
}

/// What the relay learns from the conversation and sends along with every later message.
#[derive(Default)]
struct Session {
    client_name: Option<String>,
    protocol_version: Option<String>,
    /// The server's session (`Mcp-Session-Id`), when it keeps one.
    id: Option<String>,
}

/// The header naming the server's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// Relays stdin to `endpoint` and the answers to stdout until stdin closes and every
/// request in flight is answered.
pub async fn relay_stdio(endpoint: String) -> std::io::Result<()> {
    relay(endpoint, tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`relay_stdio`] over any pair of streams.
pub async fn relay(
    endpoint: String,
    input: impl tokio::io::AsyncRead + Unpin,
    mut output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let http = reqwest::Client::builder()
        // A loopback server: a proxy from the environment must not see these calls.
        .no_proxy()
        .build()
        .map_err(std::io::Error::other)?;
    let session = Arc::new(Mutex::new(Session::default()));
    let (answers, mut to_write) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(line) = to_write.recv().await {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
            output.flush().await?;
        }
        Ok::<(), std::io::Error>(())
    });
    let mut lines = tokio::io::BufReader::new(input).lines();
    let mut in_flight = tokio::task::JoinSet::new();
    let mut server_stream: Option<tokio::task::JoinHandle<()>> = None;
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(&line) {
            Ok(message) => message,
            Err(e) => {
                let _ = answers.send(error_line(&Value::Null, -32700, format!("not JSON: {e}")));
                continue;
            }
        };
        let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
        let is_initialized = message.get("method").and_then(Value::as_str) == Some("notifications/initialized");
        if is_initialize {
            let name = message.pointer("/params/clientInfo/name").and_then(Value::as_str);
            session.lock().await.client_name = name.map(|n| n.chars().take(200).collect());
        }
        let task = forward(http.clone(), endpoint.clone(), session.clone(), message, answers.clone());
        if is_initialize {
            // Everything after depends on the version the server chose.
            task.await;
        } else if is_initialized {
            // The session is set up: the server's own stream opens beside the calls.
            task.await;
            server_stream.get_or_insert_with(|| {
                tokio::spawn(relay_server_stream(http.clone(), endpoint.clone(), session.clone(), answers.clone()))
            });
        } else {
            in_flight.spawn(task);
        }
    }
    while in_flight.join_next().await.is_some() {}
    if let Some(stream) = server_stream {
        stream.abort();
    }
    // The client is gone: so is its session on the server.
    if let Some(id) = session.lock().await.id.clone() {
        let _ = http.delete(&endpoint).header(SESSION_HEADER, id).send().await;
    }
    drop(answers);
    writer.await.map_err(std::io::Error::other)?
}

/// Sends one message and queues the answers it gets.
async fn forward(
    http: reqwest::Client,
    endpoint: String,
    session: Arc<Mutex<Session>>,
    message: Value,
    answers: mpsc::UnboundedSender<String>,
) {
    let id = message.get("id").cloned();
    let mut request = http
        .post(&endpoint)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, text/event-stream")
        .body(message.to_string());
    {
        let session = session.lock().await;
        if let Some(name) = &session.client_name {
            request = request.header(http::header::USER_AGENT, name.as_str());
        }
        if let Some(version) = &session.protocol_version {
            request = request.header("mcp-protocol-version", version.as_str());
        }
        if let Some(id) = &session.id {
            request = request.header(SESSION_HEADER, id.as_str());
        }
    }
    let fail = |text: String| {
        // Only a request is owed an answer.
        if let Some(id) = &id {
            let _ = answers.send(error_line(id, -32603, text));
        }
    };
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(e) => {
            return fail(format!(
                "the Paperchain server at {endpoint} did not answer ({e}); is it still running? \
                 Restart the agent to use a new one"
            ));
        }
    };
    if let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        session.lock().await.id = Some(id.to_string());
    }
    let status = response.status();
    let is_sse = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let emit = |answer: Value| {
        let session = session.clone();
        let answers = answers.clone();
        async move {
            if let Some(version) = answer.pointer("/result/protocolVersion").and_then(Value::as_str) {
                session.lock().await.protocol_version = Some(version.to_string());
            }
            let _ = answers.send(answer.to_string());
        }
    };
    if is_sse {
        // Message by message as the events arrive: one may be a request the client must
        // answer before the call can end.
        let (relayed, broke) = relay_events(&mut response, &session, &answers).await;
        match broke {
            Some(e) if !relayed => fail(format!("the Paperchain server at {endpoint} broke off: {e}")),
            _ if !relayed && !status.is_success() => fail(format!("the Paperchain server answered {status}")),
            _ => {}
        }
        return;
    }
    let body = match response.text().await {
        Ok(body) => body,
        Err(e) => return fail(format!("the Paperchain server at {endpoint} broke off its answer: {e}")),
    };
    let messages: Vec<Value> = serde_json::from_str::<Value>(&body).into_iter().filter(|v| !v.is_null()).collect();
    if messages.is_empty() {
        if !status.is_success() {
            let text: String = body.chars().take(300).collect();
            fail(format!("the Paperchain server answered {status}: {text}"));
        }
        return;
    }
    for answer in messages {
        emit(answer).await;
    }
}

/// Relays each JSON-RPC message of an event stream as it arrives (noting the protocol
/// version an `initialize` answer names); whether any was, and the error that cut the
/// stream short, if one did.
async fn relay_events(
    response: &mut reqwest::Response,
    session: &Mutex<Session>,
    answers: &mpsc::UnboundedSender<String>,
) -> (bool, Option<reqwest::Error>) {
    let (mut pending, mut relayed) = (Vec::new(), false);
    let mut broke = None;
    loop {
        let last = match response.chunk().await {
            Ok(Some(chunk)) => {
                pending.extend(chunk.iter().filter(|b| **b != b'\r'));
                false
            }
            Ok(None) => true,
            Err(e) => {
                broke = Some(e);
                true
            }
        };
        let mut events = Vec::new();
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            events.push(pending.drain(..end + 2).collect::<Vec<u8>>());
        }
        if last {
            events.push(std::mem::take(&mut pending));
        }
        for event in events {
            for data in sse_data(&String::from_utf8_lossy(&event)) {
                let Ok(message) = serde_json::from_str::<Value>(&data) else { continue };
                if let Some(version) = message.pointer("/result/protocolVersion").and_then(Value::as_str) {
                    session.lock().await.protocol_version = Some(version.to_string());
                }
                relayed = true;
                let _ = answers.send(message.to_string());
            }
        }
        if last {
            return (relayed, broke);
        }
    }
}

/// The server's own stream of a session (`GET` on the endpoint): what it sends the client
/// outside any one call's answer, such as a request to open an approval page. Relayed until
/// the server ends it or the relay stops.
async fn relay_server_stream(
    http: reqwest::Client,
    endpoint: String,
    session: Arc<Mutex<Session>>,
    answers: mpsc::UnboundedSender<String>,
) {
    let (id, version) = {
        let session = session.lock().await;
        (session.id.clone(), session.protocol_version.clone())
    };
    let Some(id) = id else { return };
    let mut request = http.get(&endpoint).header(http::header::ACCEPT, "text/event-stream").header(SESSION_HEADER, id);
    if let Some(version) = version {
        request = request.header("mcp-protocol-version", version);
    }
    match request.send().await {
        Ok(mut response) if response.status().is_success() => {
            let _ = relay_events(&mut response, &session, &answers).await;
        }
        // A server that offers no such stream sends everything in the calls' answers.
        _ => {}
    }
}

/// The `data` of each event of a `text/event-stream` body.
fn sse_data(body: &str) -> impl Iterator<Item = String> {
    body.split("\n\n").filter_map(|event| {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        (!data.is_empty()).then(|| data.join("\n"))
    })
}

fn error_line(id: &Value, code: i64, message: String) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_stream_data_is_read_per_event() {
        let body = "event: message\ndata: {\"a\":1}\n\nid: 2\ndata:{\"b\":\ndata: 2}\n\n: comment\n\n";
        assert_eq!(sse_data(body).collect::<Vec<_>>(), vec!["{\"a\":1}", "{\"b\":\n2}"]);
    }
}
