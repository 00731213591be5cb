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
    // A connection can be accepted by the kernel before the server takes it; one answered
    // request shows the server is serving, so the next call is really in flight.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match answer_to(port, "GET /openapi.json") {
            Some(answer) if answer.starts_with("HTTP/1.1 200") => break,
            _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            answer => panic!("the server did not start: {answer:?}"),
        }
    }
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
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

/// The whole answer to a request without a body, or `None` when the server did not answer.
fn answer_to(port: u16, request_line: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let request = format!("{request_line} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    Some(answer)
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

#[test]
fn a_second_server_for_the_same_data_folder_says_where_the_first_is_and_exits() {
    let data = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let start = |listen: &str| {
        Command::new(env!("CARGO_BIN_EXE_paperchain"))
            .args(["serve", "--listen", listen, "--data-dir"])
            .arg(data.path())
            .env("PAPERCHAIN_RUNTIME_DIR", runtime.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = start("127.0.0.1:0");
    let deadline = Instant::now() + Duration::from_secs(30);
    let instance = loop {
        if let Some(found) = paperchain_server::instance::find(runtime.path(), data.path()) {
            break found;
        }
        assert!(first.try_wait().unwrap().is_none(), "the first server exited");
        assert!(Instant::now() < deadline, "the first server wrote no address file");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(instance.pid, first.id());
    // It answers where it says it is.
    let port = instance.base_url.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());

    // Another port, the same folder: refused before it binds anything.
    let second = start("127.0.0.1:0").wait_with_output().unwrap();
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains(&format!("already serving {} on {}", data.path().display(), instance.base_url))
            && said.contains(&format!("process {}", first.id())),
        "{said}"
    );

    // The status command finds it too.
    let status = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["service", "status", "--json"])
        .env("PAPERCHAIN_DATA_DIR", data.path())
        .env("PAPERCHAIN_RUNTIME_DIR", runtime.path())
        .env("XDG_CONFIG_HOME", runtime.path().join("config"))
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["installed"], false);
    assert_eq!(status["server"]["base_url"], instance.base_url.as_str());

    // Once the first stops, the folder is free and its address gone.
    Command::new("kill").args(["-INT", &first.id().to_string()]).status().unwrap();
    assert!(first.wait().unwrap().success());
    assert_eq!(paperchain_server::instance::find(runtime.path(), data.path()), None);
    let leftovers: Vec<_> = std::fs::read_dir(runtime.path())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let mut third = start("127.0.0.1:0");
    let deadline = Instant::now() + Duration::from_secs(30);
    while paperchain_server::instance::find(runtime.path(), data.path()).is_none() {
        assert!(third.try_wait().unwrap().is_none(), "the third server exited");
        assert!(Instant::now() < deadline, "the third server wrote no address file");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = third.kill();
    let _ = third.wait();
}

#[test]
fn the_service_unit_is_one_systemd_accepts() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("config");
    let installed = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["service", "install", "--listen", "127.0.0.1:18402", "--no-start"])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", &config)
        .env("PAPERCHAIN_DATA_DIR", home.path().join("data"))
        .env("PAPERCHAIN_WALLET_PASSWORD", "never-written")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&installed.stderr);
    // Enabling needs the user's service manager; where there is none the files are still
    // written and the error says which manager refused.
    assert!(installed.status.success() || said.contains("the service manager refused it: `systemctl --user"), "{said}");
    let unit_path = config.join("systemd/user/paperchain.service");
    let unit = std::fs::read_to_string(&unit_path).unwrap();
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_paperchain")).unwrap();
    assert!(unit.contains(&format!("ExecStart=\"{}\" serve --listen 127.0.0.1:18402", exe.display())), "{unit}");
    assert!(unit.contains("WantedBy=default.target"), "{unit}");
    let env = std::fs::read_to_string(config.join("paperchain/service.env")).unwrap();
    assert!(env.contains(&format!("PAPERCHAIN_DATA_DIR=\"{}\"", home.path().join("data").display())), "{env}");
    assert!(!env.contains("never-written"), "a password never goes in the file: {env}");
    use std::os::unix::fs::PermissionsExt as _;
    for file in [&unit_path, &config.join("paperchain/service.env")] {
        assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o077, 0, "{}", file.display());
    }

    let verify = Command::new("systemd-analyze").args(["verify"]).arg(&unit_path).output().unwrap();
    assert!(
        verify.status.success() && verify.stderr.is_empty(),
        "systemd-analyze verify: {}",
        String::from_utf8_lossy(&verify.stderr)
    );

    let uninstalled = Command::new(env!("CARGO_BIN_EXE_paperchain"))
        .args(["service", "uninstall"])
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", &config)
        .output()
        .unwrap();
    assert!(uninstalled.status.success(), "{}", String::from_utf8_lossy(&uninstalled.stderr));
    assert!(!unit_path.exists() && !config.join("paperchain/service.env").exists());
}

/// A child process killed when the test ends, however it ends.
struct KilledOnDrop(std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `paperchain` as a user of `data` whose local server writes its address in `runtime`.
fn as_user(data: &std::path::Path, runtime: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command
        .args(args)
        .env("PAPERCHAIN_DATA_DIR", data)
        .env("PAPERCHAIN_RUNTIME_DIR", runtime)
        .env("XDG_CONFIG_HOME", runtime.join("config"))
        .env("PAPERCHAIN_WALLET_STORE", "keystore")
        .env_remove("PAPERCHAIN_CLIENT_CONFIG")
        .env_remove("PAPERCHAIN_SERVICE_URL")
        .env_remove("PAPERCHAIN_ROUTE")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .stdin(Stdio::null());
    command
}

fn pages(file: &std::path::Path) -> String {
    let out = Command::new("qpdf").arg("--show-npages").arg(file).output().unwrap();
    assert!(out.status.success(), "qpdf --show-npages {}: {out:?}", file.display());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn call_goes_through_the_server_that_serves_the_data_folder() {
    let data = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (data, runtime, work) = (data.path(), runtime.path(), work.path());
    let pdf = work.join("in.pdf");
    std::fs::write(&pdf, paperchain_testkit::corpus::corpus_file("sample-files/pdflatex-4-pages.pdf")).unwrap();
    let file = format!("file={}", pdf.display());
    let call = |args: &[&str]| {
        let mut all = vec!["call"];
        all.extend_from_slice(args);
        as_user(data, runtime, &all).output().unwrap()
    };
    let said = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).to_string();

    let server = as_user(data, runtime, &["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed if an assertion fails before the end stops it.
    let mut server = KilledOnDrop(server);
    let deadline = Instant::now() + Duration::from_secs(30);
    let instance = loop {
        if let Some(found) = paperchain_server::instance::find(runtime, data) {
            break found;
        }
        assert!(server.0.try_wait().unwrap().is_none(), "the server exited");
        assert!(Instant::now() < deadline, "the server wrote no address file");
        std::thread::sleep(Duration::from_millis(50));
    };

    // One file: written where --out says, with what the route reports said.
    let input = work.join("rotate.json");
    std::fs::write(&input, r#"{"degrees": 90}"#).unwrap();
    let out = work.join("rotated.pdf");
    let rotated = call(&["rotate_pdf_pages", "-f", &file, "-i", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(rotated.status.success(), "{}", said(&rotated));
    assert_eq!(pages(&out), "4");
    // An existing file is kept without --force, as for a call run here.
    let again = call(&["rotate_pdf_pages", "-f", &file, "-i", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(1), "{}", said(&again));
    assert!(said(&again).contains("already exists; pass --force"), "{}", said(&again));

    // Several files into a folder: each under its own name, nothing else there.
    let parts = work.join("parts");
    std::fs::create_dir(&parts).unwrap();
    let split = work.join("split.json");
    std::fs::write(&split, r#"{"ranges": ["1-3", "4"]}"#).unwrap();
    let split = call(&["split_pdf", "-f", &file, "-i", split.to_str().unwrap(), "-o", parts.to_str().unwrap()]);
    assert!(split.status.success(), "{}", said(&split));
    let mut written: Vec<_> = std::fs::read_dir(&parts).unwrap().map(|e| e.unwrap().path()).collect();
    written.sort();
    assert_eq!(written.iter().map(|p| pages(p)).collect::<Vec<_>>(), ["3", "1"], "{written:?}");

    // JSON answers are printed; an input error names its field and exits 2.
    let inspected = call(&["inspect_pdf_document", "-f", &file]);
    assert!(inspected.status.success(), "{}", said(&inspected));
    let inspected: serde_json::Value = serde_json::from_slice(&inspected.stdout).unwrap();
    assert_eq!(inspected["page_count"], 4, "{inspected}");
    std::fs::write(&input, r#"{"degrees": 45}"#).unwrap();
    let wrong = call(&["rotate_pdf_pages", "-f", &file, "-i", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(said(&wrong).contains("(field /degrees)"), "{}", said(&wrong));

    // A link, which only a server can give, now works from the CLI.
    let linked = work.join("link.json");
    std::fs::write(&linked, r#"{"degrees": 180, "output": "url"}"#).unwrap();
    let linked = call(&["rotate_pdf_pages", "-f", &file, "-i", linked.to_str().unwrap()]);
    assert!(linked.status.success(), "{}", said(&linked));
    let link: serde_json::Value = serde_json::from_slice(&linked.stdout).unwrap();
    assert!(link["url"].as_str().unwrap().starts_with(&format!("{}/v1/files/", instance.base_url)), "{link}");

    // The server ran them: its ledger names the CLI as the client of each, through HTTP.
    let ledger = |args: &[&str]| {
        let mut all = vec!["ledger", "--json"];
        all.extend_from_slice(args);
        let out = as_user(data, runtime, &all).output().unwrap();
        assert!(out.status.success(), "{}", said(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let rows = ledger(&[]);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 6, "{rows:?}");
    for row in rows {
        assert_eq!(row["front_door"], "http", "{row}");
        assert!(row["client"].as_str().unwrap().starts_with("paperchain-cli/"), "{row}");
    }

    // --standalone runs here, as does every call once the server is gone.
    let here = call(&["inspect_pdf_document", "-f", &file, "--standalone"]);
    assert!(here.status.success(), "{}", said(&here));
    Command::new("kill").args(["-INT", &server.0.id().to_string()]).status().unwrap();
    assert!(server.0.wait().unwrap().success());
    let after = call(&["inspect_pdf_document", "-f", &file]);
    assert!(after.status.success(), "{}", said(&after));
    let rows = ledger(&[]);
    let doors: Vec<_> = rows.as_array().unwrap().iter().filter_map(|r| r["front_door"].as_str()).collect();
    assert_eq!(doors.iter().filter(|d| **d == "cli").count(), 2, "{doors:?}");
}
