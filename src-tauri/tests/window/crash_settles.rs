//! The app killed in the middle of a paid call settles the payment when it starts again.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::support::*;

/// A proxy in front of the sandbox at `upstream` that passes calls on, until the sandbox
/// has answered (and settled) the first paid one: then it says so on the channel and
/// never answers. Plain HTTP/1.1, its requests one after another on each connection.
fn stalling_proxy(upstream: &str) -> (String, mpsc::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (settled, told) = mpsc::channel();
    let upstream = upstream.to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (upstream, settled) = (upstream.clone(), settled.clone());
            std::thread::spawn(move || pass_on(stream, &upstream, &settled));
        }
    });
    (base, told)
}

/// Passes each request on `stream` on to `upstream`, and its answer back (see
/// [`stalling_proxy`]).
fn pass_on(stream: TcpStream, upstream: &str, settled: &mpsc::Sender<()>) {
    use std::io::{BufRead as _, Read as _, Write as _};
    let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut words = line.split_whitespace();
        let (method, target) = (words.next().unwrap().to_string(), words.next().unwrap().to_string());
        let mut headers = Vec::new();
        loop {
            let mut header = String::new();
            reader.read_line(&mut header).unwrap();
            let Some((name, value)) = header.trim_end().split_once(':') else { break };
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        assert!(!headers.iter().any(|(name, _)| name == "transfer-encoding"), "a body of known length: {headers:?}");
        let length = headers.iter().find(|(name, _)| name == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let paid = headers.iter().any(|(name, _)| name == "payment-signature");
        let mut request = ureq::http::Request::builder().method(method.as_str()).uri(format!("{upstream}{target}"));
        for (name, value) in &headers {
            if !["host", "content-length", "connection", "keep-alive"].contains(&name.as_str()) {
                request = request.header(name, value);
            }
        }
        let answer = match body.is_empty() {
            true => http().run(request.body(()).unwrap()),
            false => http().run(request.body(body).unwrap()),
        };
        let mut answer = answer.unwrap_or_else(|e| panic!("{method} {upstream}{target}: {e}"));
        let bytes = answer.body_mut().with_config().limit(256 * 1024 * 1024).read_to_vec().unwrap();
        if paid {
            let _ = settled.send(());
            loop {
                std::thread::park();
            }
        }
        let mut head = format!("HTTP/1.1 {}\r\n", answer.status());
        for (name, value) in answer.headers() {
            if !["content-length", "transfer-encoding", "connection", "keep-alive"].contains(&name.as_str()) {
                head.push_str(&format!("{name}: {}\r\n", value.to_str().unwrap()));
            }
        }
        head.push_str(&format!("content-length: {}\r\n\r\n", bytes.len()));
        if writer.write_all(head.as_bytes()).and_then(|()| writer.write_all(&bytes)).is_err() {
            return;
        }
    }
}

/// A JSON-RPC call to the node at `url`; its result.
fn json_rpc(url: &str, method: &str, params: Value) -> Value {
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = json_of(http().post(url).send_json(&request).unwrap());
    assert!(answer.get("error").is_none(), "{method}: {answer}");
    answer["result"].clone()
}

/// What `who` holds of the sandbox's USDC, in its smallest unit: the token's `balanceOf`.
fn usdc_balance(sandbox: &Value, who: &str) -> u128 {
    let data = format!("0x70a08231{:0>64}", who.trim_start_matches("0x").to_ascii_lowercase());
    let call = json!([{ "to": sandbox["token"], "data": data }, "latest"]);
    let held = json_rpc(sandbox["rpc_url"].as_str().unwrap(), "eth_call", call);
    let digits = held.as_str().unwrap().trim_start_matches("0x").trim_start_matches('0');
    if digits.is_empty() { 0 } else { u128::from_str_radix(digits, 16).unwrap() }
}

/// Whether transaction `tx` of the sandbox's chain succeeded (`None`: no such transaction).
fn tx_succeeded(sandbox: &Value, tx: &str) -> Option<bool> {
    let receipt = json_rpc(sandbox["rpc_url"].as_str().unwrap(), "eth_getTransactionReceipt", json!([tx]));
    receipt.get("status").and_then(Value::as_str).map(|status| status == "0x1")
}

fn balance_body() -> Value {
    json!({"chain": "base", "address": "0x000000000000000000000000000000000000dEaD"})
}

#[test]
fn an_app_killed_during_a_paid_call_settles_the_payment_when_it_starts_again() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (_display, display) = start_display();
    let bus_dir = home.join("bus");
    std::fs::create_dir_all(&bus_dir).unwrap();
    let (_bus, bus) = start_session_bus(&bus_dir);
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    // What both runs of the app say.
    let log = std::fs::File::create(artifacts.join("app-killed-mid-payment.log")).unwrap();
    let (_sandbox, sandbox) = start_sandbox(&paperchain_binary(), &home.join("sandbox"), free_port());
    // The user's wallet pays the sandbox through a proxy that never passes on the answer
    // to the paid call.
    let (proxy, settled) = stalling_proxy(sandbox["base_url"].as_str().unwrap());
    let listen = free_port();
    let user = Desktop::new(home, &display, &bus, listen, &sandbox);
    user.set_up_wallet(&sandbox, &proxy);
    let mut app = user.start_app(&log);
    let payer = sandbox["payer"].as_str().unwrap();
    let before = usdc_balance(&sandbox, payer);
    let service = sandbox["base_url"].as_str().unwrap();
    let quoted = json_of(http().post(format!("{service}/v1/chain/balance")).send_json(balance_body()).unwrap());
    let price: u128 = quoted["accepts"][0]["amount"].as_str().unwrap().parse().unwrap();

    // An agent's call through the app's local HTTP API, routed to the sandbox.
    let base = format!("http://127.0.0.1:{listen}");
    let agent = format!("{base}/v1/chain/balance");
    let call = std::thread::spawn(move || {
        http().post(agent).header("paperchain-route", "hosted").send_json(balance_body()).map(|a| a.status().as_u16())
    });
    settled.recv_timeout(Duration::from_secs(60)).expect("the sandbox settled the call");
    // SIGKILL: no shutdown, no flush beyond what was committed.
    app.0.kill().unwrap();
    app.0.wait().unwrap();
    let answered = call.join().unwrap();
    assert!(answered.is_err(), "the caller got no answer: {answered:?}");
    assert_eq!(usdc_balance(&sandbox, payer), before - price, "the payment settled");

    let hosted_row = || {
        let rows = user.paperchain_json(&["ledger", "--json"]);
        rows.as_array().unwrap().iter().find(|r| r["ran"] == "hosted").cloned().expect("the call's row")
    };
    let row = hosted_row();
    assert_eq!(row["state"], "signed", "on disk before the signature left: {row:#}");
    // Started again on the same data folder, the app's server settles the open payment
    // from the chain.
    let again = user.start_app(&log);
    let deadline = Instant::now() + Duration::from_secs(60);
    let row = loop {
        let row = hosted_row();
        if row["state"] != "signed" || Instant::now() > deadline {
            break row;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(row["state"], "paid", "{row:#}");
    let tx = row["tx"].as_str().unwrap().to_string();
    assert_eq!(tx_succeeded(&sandbox, &tx), Some(true));
    assert_eq!(row["amount"], price.to_string());
    // The reconciliation finds the transaction moved exactly that amount.
    let checks = user.paperchain_json(&["ledger", "reconcile", "--json"]);
    assert_eq!(checks[0]["verdict"], "ok", "{checks:#}");
    assert_eq!(checks[0]["tx"], tx.as_str());
    // And the restarted app serves, with a server of its own: the data folder is its.
    let claims = server_claims(&home.join("run"));
    assert_eq!(claims.len(), 1, "{claims:?}");
    let claim: Value = serde_json::from_slice(&std::fs::read(&claims[0]).unwrap()).unwrap();
    assert_eq!(
        (claim["pid"].as_u64(), claim["base_url"].as_str()),
        (Some(u64::from(again.0.id())), Some(base.as_str()))
    );
    let pdf = std::fs::read(corpus().join("pdf/sample-files/pdflatex-4-pages.pdf")).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(pdf);
    let rotate = json!({"file": {"data": data, "filename": "four.pdf"}, "degrees": 90});
    let local = http().post(format!("{base}/v1/pdf/rotate")).send_json(rotate).unwrap();
    assert_eq!(local.status(), 200);
}
