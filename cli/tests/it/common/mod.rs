//! A user's home for the tests that run `paperchain` as that user: a keystore wallet with
//! the sandbox payer's key, a configuration pointing at the hosted sandbox, `paperchain serve`.

use std::io::Write as _;
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use std::io::Read as _;

use paperchain_testkit::sandbox::HostedServer;

pub mod procs;
use serde_json::Value;

/// The wallet's password in every home.
pub const PASSWORD: &str = "correct horse battery staple";

/// `command` as a user with no wallet and no configuration, whose data and runtime folders
/// are in `data`: what a fresh machine has.
pub fn unconfigured<'a>(command: &'a mut Command, data: &std::path::Path) -> &'a mut Command {
    command
        .env("PAPERCHAIN_DATA_DIR", data)
        .env("PAPERCHAIN_RUNTIME_DIR", data.join("run"))
        .env("XDG_CONFIG_HOME", data.join("config"))
        .env("PAPERCHAIN_WALLET_STORE", "keystore")
        .env_remove("PAPERCHAIN_CLIENT_CONFIG")
        .env_remove("PAPERCHAIN_SERVICE_URL")
        .env_remove("PAPERCHAIN_ROUTE")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
}

/// A user's home: config, data and the keystore's password file, all in a temporary folder.
pub struct Home {
    pub dir: tempfile::TempDir,
    /// The RPC endpoint the engine reads Base from (the sandbox chain's, unless a test
    /// makes the local engine unable to reach it).
    pub rpc: String,
}

impl Home {
    pub fn new(hosted: &HostedServer) -> Home {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("password"), PASSWORD).unwrap();
        Home { dir, rpc: hosted.chain.rpc_url().to_string() }
    }

    pub fn apply(&self, command: &mut Command) {
        let home = self.dir.path();
        command
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("PAPERCHAIN_WALLET_STORE", "keystore")
            .env("PAPERCHAIN_WALLET_PASSWORD_FILE", home.join("password"))
            .env("PAPERCHAIN_RPC_BASE", &self.rpc)
            .env_remove("PAPERCHAIN_WALLET_PASSWORD")
            .env_remove("PAPERCHAIN_DATA_DIR")
            .env_remove("PAPERCHAIN_CLIENT_CONFIG")
            .env_remove("PAPERCHAIN_SERVICE_URL")
            .env_remove("PAPERCHAIN_ROUTE")
            .env_remove("PAPERCHAIN_CHAINS")
            .env_remove("DBUS_SESSION_BUS_ADDRESS");
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_paperchain"));
        command.args(args);
        self.apply(&mut command);
        command
    }

    /// Runs `paperchain args…` with `stdin`; panics unless it succeeds.
    pub fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child =
            self.command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "paperchain {args:?}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// `paperchain args…` on a terminal (util-linux `script` gives it one), with `typed`
    /// waiting in the terminal's input: whether it succeeded, and its output, terminal and all.
    pub fn on_a_terminal(&self, args: &[&str], typed: &str) -> (bool, String) {
        let mut command = env!("CARGO_BIN_EXE_paperchain").to_string();
        for arg in args {
            command += &format!(" '{}'", arg.replace('\'', "'\\''"));
        }
        let mut script = Command::new("script");
        script.args(["-qec", &command, "/dev/null"]);
        self.apply(&mut script);
        let mut child = script.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(typed.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        drop(stdin);
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.success(), text)
    }

    /// `paperchain config confirm` at a terminal, the wallet's password typed.
    pub fn confirm(&self) -> String {
        let (confirmed, text) = self.on_a_terminal(&["config", "confirm"], &format!("{PASSWORD}\n"));
        assert!(confirmed && text.contains("Confirmed (the wallet's password)"), "{text}");
        text
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args, "");
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// The sandbox payer's key imported, and the client pointed at `service` with a day cap
    /// on Base (a main network: nothing is paid there without one).
    pub fn set_up(&self, hosted: &HostedServer, service: &str) {
        let imported = self.run(&["wallet", "import"], &format!("{}\n", hosted.chain.payer_private_key()));
        let payer = hosted.chain.payer().to_checksum(None);
        assert!(String::from_utf8_lossy(&imported.stdout).contains(&payer), "the address is shown");
        let status = String::from_utf8_lossy(&self.run(&["wallet", "status"], "").stdout).to_string();
        assert!(status.contains("keystore"), "status names the store: {status}");
        self.run(&["config", "set", "service.url", service], "");
        self.run(&["config", "set", "policy.networks.\"eip155:8453\"", "1.00"], "");
        self.run(&["config", "set", "policy.per_call", "0.05"], "");
    }

    pub fn serve(&self) -> Server {
        self.serve_with(&[])
    }

    /// `paperchain serve` with these settings in its environment besides the home's.
    pub fn serve_with(&self, env: &[(&str, &str)]) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // Its log, at debug level, stays in the home: no key may appear in it.
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("serve-{port}.log")))
            .unwrap();
        let mut child = self
            .command(&["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env("PAPERCHAIN_LOG", "debug,lopdf=off")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        wait_until_listening(&mut child, port);
        Server { child, base: format!("http://127.0.0.1:{port}") }
    }
}

pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `child` (a `paperchain serve` with its standard error piped) listens on
/// `port`; panics with what it said if it exits first, or after 30 s.
pub fn wait_until_listening(child: &mut Child, port: u16) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            panic!("paperchain serve exited ({status}): {stderr}");
        }
        assert!(started.elapsed() < Duration::from_secs(30), "paperchain serve did not listen within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The token the page at `/app/` of the server at `base` carries, which its calls to
/// `/app/api/…` send as `x-paperchain-token`.
pub async fn app_token(base: &str) -> String {
    let page = reqwest::get(format!("{base}/app/")).await.unwrap().text().await.unwrap();
    let token = page.split("name=\"paperchain-token\" content=\"").nth(1).and_then(|t| t.split('"').next());
    token.unwrap_or_else(|| panic!("no token in the app's page: {page}")).to_string()
}

/// One session of the official MCP TypeScript SDK client following `plan`
/// (`tests/interop/mcp-sdk-session.mjs`): its JSON line. Panics unless it ends within `timeout`.
pub async fn ts_sdk_session(plan: &Value, timeout: Duration, label: &str) -> Value {
    let plan = plan.to_string();
    paperchain_testkit::node::NodeRun {
        script: paperchain_testkit::node::interop_script("mcp-sdk-session.mjs"),
        args: Vec::new(),
        stdin: Some(plan.as_bytes()),
        env: Vec::new(),
        timeout,
        label,
    }
    .last_json_line(&paperchain_testkit::tools::tools_dir())
    .await
}

/// `paperchain serve` for a user with no wallet whose folders are in `data`, with `env`.
pub fn unconfigured_server(data: &std::path::Path, env: &[(&str, &str)]) -> Server {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_paperchain"));
    unconfigured(&mut command, data);
    let mut child = command
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_listening(&mut child, port);
    // Its log goes on to `serve.log` in `data`: a pipe nobody read would stop the server
    // once full.
    if let Some(mut pipe) = child.stderr.take() {
        let mut log = std::fs::File::create(data.join("serve.log")).unwrap();
        std::thread::spawn(move || std::io::copy(&mut pipe, &mut log));
    }
    Server { child, base: format!("http://127.0.0.1:{port}") }
}
