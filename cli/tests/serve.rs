//! `paperchain serve` as a process: it stops on SIGTERM after finishing the call in flight.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn sigterm_finishes_the_call_in_flight_then_exits_cleanly() {
    let data = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => break stream,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("the server did not start: {e}"),
        }
    };
    // Half a request: the call is in flight when the signal arrives.
    let body = br#"{"file": {"data": "JVBERi0xLjQK"}, "degrees": 90}"#;
    let head = format!(
        "POST /v1/pdf/rotate HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let killed = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(killed.success());
    std::thread::sleep(Duration::from_millis(300));
    stream.write_all(&body[10..]).unwrap();
    let mut answer = String::new();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 422"), "the call in flight was answered: {answer}");
    assert!(answer.contains("\"damaged_pdf\"") || answer.contains("\"code\""), "{answer}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the server did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
    let mut log = String::new();
    server.stderr.take().unwrap().read_to_string(&mut log).unwrap();
    assert!(log.contains("shutting down"), "{log}");
    // New connections are refused once it has stopped.
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn a_malformed_chain_configuration_stops_serve_with_a_message_naming_it() {
    for (chains, expected) in [
        ("arbitrum", "PAPERCHAIN_CHAINS: entry `arbitrum`: expected `name=chain_id`"),
        ("base=8453", "PAPERCHAIN_CHAINS: entry `base=8453`: `base` is a built-in chain"),
        ("arbitrum=42161", "PAPERCHAIN_RPC_ARBITRUM: not set; the chain `arbitrum=42161` added in PAPERCHAIN_CHAINS"),
    ] {
        let data = tempfile::tempdir().unwrap();
        let mut server = Command::new(env!("CARGO_BIN_EXE_paperchain"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .env("PAPERCHAIN_CHAINS", chains)
            .env_remove("PAPERCHAIN_RPC_ARBITRUM")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = server.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = server.kill();
                let _ = server.wait();
                panic!("{chains}: the server started");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut log = String::new();
        server.stderr.take().unwrap().read_to_string(&mut log).unwrap();
        assert!(!status.success(), "{chains}: {status:?}");
        assert!(log.contains(&format!("error: {expected}")), "{chains}: {log}");
    }
}
