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

/// `paperchain serve --hosted` with whatever `env` adds, started in a clean environment
/// (no PAPERCHAIN_* from the caller); its exit status and stderr.
fn hosted_start(args: &[&str], env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let data = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command.args(["serve", "--hosted", "--data-dir"]).arg(data.path()).args(args);
    if !args.contains(&"--listen") {
        command.args(["--listen", "127.0.0.1:0"]);
    }
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("PAPERCHAIN_") && k != "PAPERCHAIN_TOOLS") {
        command.env_remove(key);
    }
    let output = command.envs(env.iter().copied()).stdin(Stdio::null()).output().unwrap();
    (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn hosted_mode_refuses_to_start_without_what_it_needs() {
    let base = [
        ("PAPERCHAIN_PUBLIC_URL", "https://api.example.com"),
        ("PAPERCHAIN_FACILITATOR_URL", "https://facilitator.example.com"),
        ("PAPERCHAIN_PAY_TO_BASE", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"),
    ];
    for (missing, says) in [
        ("PAPERCHAIN_PUBLIC_URL", "public base URL"),
        ("PAPERCHAIN_FACILITATOR_URL", "facilitator"),
        ("PAPERCHAIN_PAY_TO_BASE", "paid to"),
    ] {
        let env: Vec<_> = base.iter().copied().filter(|(k, _)| *k != missing).collect();
        let (status, stderr) = hosted_start(&[], &env);
        assert!(!status.success(), "{missing}: started anyway");
        assert!(stderr.contains(says), "{missing}: {stderr}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("paperchain.toml");
    std::fs::write(&file, "[hosted]\npay_to = 3\n").unwrap();
    let (status, stderr) = hosted_start(&["--config", file.to_str().unwrap()], &base);
    assert!(!status.success());
    assert!(stderr.contains("paperchain.toml"), "the file is named: {stderr}");
    let (status, stderr) = hosted_start(&["--sandbox", "--listen", "0.0.0.0:0"], &[]);
    assert!(!status.success());
    assert!(stderr.contains("127.0.0.1"), "{stderr}");
}

#[test]
fn the_sandbox_prints_where_everything_is_first() {
    let data = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["serve", "--hosted", "--sandbox", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    let line: serde_json::Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    let sandbox = &line["sandbox"];
    for key in ["base_url", "rpc_url", "token", "payer", "payer_private_key", "pay_to"] {
        assert!(sandbox[key].is_string(), "{key}: {line}");
    }
    assert_eq!(sandbox["chain_id"], 8453);
    assert_eq!(sandbox["token"], "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913");
    for key in ["base_url", "rpc_url"] {
        assert!(sandbox[key].as_str().unwrap().starts_with("http://127.0.0.1:"), "{key}: {line}");
    }
    // The server answers an unpaid call with the 402 of the hosted service.
    let base = sandbox["base_url"].as_str().unwrap().trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&base).unwrap();
    let body = br#"{"chain": "base"}"#;
    let head = format!(
        "POST /v1/chain/gas HTTP/1.1\r\nHost: {base}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = String::new();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 402"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("payment-required:"), "{answer}");
    // SIGTERM: the server stops its anvil on the way out (SIGKILL would leave it running).
    assert!(Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the sandbox server did not stop after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}
