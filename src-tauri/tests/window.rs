//! The desktop app in a real window: the app's program as built, on an Xvfb display, driven
//! through tauri-driver and WebKitGTK's own WebKitWebDriver (Debian's `webkit2gtk-driver`),
//! as a user would: it starts, its server answers on localhost, a PDF chosen in the window
//! is rotated and saved through the system's save dialog (answered with xdotool), start at
//! login is switched on and off; an agent's call above the approval threshold raises a
//! native notification (read back from a real notification server, dunst) and the
//! window's dialog, and once approved is paid to the hosted sandbox; closing the window
//! keeps the server serving, a second launch brings the window back, and the tray menu
//! (clicked over D-Bus, as a panel does) opens it and quits; a screenshot of each screen
//! is kept in `src-tauri/test-artifacts/`.
//!
//! And the app killed (SIGKILL) in the middle of an agent's paid call, once the hosted
//! sandbox has settled it but before the answer reached the app: started again, its
//! server settles the payment its ledger left open, from the chain.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// A process stopped when the test ends, however it ends: asked first (SIGTERM), so it
/// stops what it started (tauri-driver its WebKitWebDriver) and cleans up (Xvfb its lock
/// file), killed after 5 s.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        // Ended already (killed by the test): its process id may be another's now.
        if let Ok(Some(_)) = self.0.try_wait() {
            return;
        }
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_for_port(child: &mut Child, port: u16, what: &str) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited ({status})");
        }
        assert!(started.elapsed() < Duration::from_secs(30), "{what} did not listen on {port} within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An X display of its own: the first free number from 90 up.
fn start_display() -> (Running, String) {
    for n in 90..190 {
        if Path::new(&format!("/tmp/.X{n}-lock")).exists() {
            continue;
        }
        let mut child = Command::new("Xvfb")
            .args([&format!(":{n}"), "-screen", "0", "1400x1000x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb (Debian's xvfb; `cargo xtask setup` installs it)");
        let socket = PathBuf::from(format!("/tmp/.X11-unix/X{n}"));
        let started = Instant::now();
        while !socket.exists() && started.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = child.try_wait() {
                break; // taken by another one a moment ago: the next number
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if socket.exists() && child.try_wait().unwrap().is_none() {
            return (Running(child), format!(":{n}"));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("no free X display between :90 and :189");
}

// `tool`, `corpus` and `start_session_bus` do what testkit's `tools`, `corpus` and
// `keyring` do: testkit as a dependency here, even without its features, would change the
// features of crates the app shares (flate2's default backend) and rebuild them all.
fn tool(name: &str) -> PathBuf {
    let tools = std::env::var_os("PAPERCHAIN_TOOLS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/paperchain/tools")))
        .expect("PAPERCHAIN_TOOLS or HOME");
    let path = tools.join("bin").join(name);
    assert!(path.is_file(), "{} is missing: `cargo xtask setup` builds it", path.display());
    path
}

/// Plain HTTP with JSON: WebDriver's wire, and the app's server.
fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

fn json_of(mut response: ureq::http::Response<ureq::Body>) -> Value {
    response.body_mut().with_config().limit(256 * 1024 * 1024).read_json().expect("a JSON answer")
}

/// A W3C WebDriver session with the app.
struct Session {
    http: ureq::Agent,
    url: String,
}

impl Session {
    fn start(driver: &str, application: &Path, args: &[&str]) -> Session {
        let http = http();
        // Ready once WebKitWebDriver behind it is.
        let started = Instant::now();
        while !http
            .get(format!("{driver}/status"))
            .call()
            .ok()
            .map(json_of)
            .is_some_and(|s| s["value"]["ready"] == true)
        {
            assert!(started.elapsed() < Duration::from_secs(30), "the WebDriver server was not ready within 30 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "tauri:options": { "application": application, "args": args },
        }}});
        let answer = json_of(http.post(format!("{driver}/session")).send_json(&capabilities).unwrap());
        let id = answer["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {answer}"));
        Session { url: format!("{driver}/session/{id}"), http }
    }

    fn post(&self, path: &str, body: Value) -> Value {
        let answer = json_of(self.http.post(format!("{}{path}", self.url)).send_json(&body).unwrap());
        assert!(answer["value"].get("error").is_none(), "POST {path}: {answer}");
        answer["value"].clone()
    }

    fn get(&self, path: &str) -> Value {
        let answer = json_of(self.http.get(format!("{}{path}", self.url)).call().unwrap());
        assert!(answer["value"].get("error").is_none(), "GET {path}: {answer}");
        answer["value"].clone()
    }

    /// Runs `script` in the page (`arguments[…]` are `args`) and returns its value.
    fn script(&self, script: &str, args: Value) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": args }))
    }

    /// The first element matching `css`, if there is one now.
    fn find(&self, css: &str) -> Option<String> {
        let found = self.post("/elements", json!({ "using": "css selector", "value": css }));
        let first = found.as_array()?.first()?.as_object()?.values().next()?.as_str()?;
        Some(first.to_string())
    }

    /// The first element matching `css`, waiting up to `timeout` for it.
    fn wait_for(&self, css: &str, timeout: Duration) -> String {
        let started = Instant::now();
        loop {
            if let Some(element) = self.find(css) {
                return element;
            }
            if started.elapsed() > timeout {
                self.screenshot("failed-waiting");
                panic!("no {css} within {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn click(&self, element: &str) {
        self.post(&format!("/element/{element}/click"), json!({}));
    }

    fn send_keys(&self, element: &str, text: &str) {
        self.post(&format!("/element/{element}/value"), json!({ "text": text }));
    }

    fn text(&self, element: &str) -> String {
        self.get(&format!("/element/{element}/text")).as_str().unwrap_or_default().to_string()
    }

    /// Waits until `css`'s text contains `wanted`; the text it has then.
    fn wait_for_text(&self, css: &str, wanted: &str, timeout: Duration) -> String {
        let started = Instant::now();
        loop {
            let text = self.text(&self.wait_for(css, timeout));
            if text.contains(wanted) {
                return text;
            }
            if started.elapsed() > timeout {
                self.screenshot("failed-waiting-text");
                panic!("{css} says {text:?}, not {wanted:?}, after {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Chooses the option whose text contains `text` in the select labelled `label`, as
    /// a user's choice does (the change is announced to the page).
    fn select_by_label(&self, label: &str, text: &str) {
        let chosen = self.script(
            "const [label, text] = arguments;
             const l = [...document.querySelectorAll('label')].find((x) => x.textContent.trim().startsWith(label));
             const select = l && document.getElementById(l.htmlFor);
             const option = select && [...select.options].find((o) => o.textContent.includes(text));
             if (!option) return null;
             select.value = option.value;
             select.dispatchEvent(new Event('input', { bubbles: true }));
             select.dispatchEvent(new Event('change', { bubbles: true }));
             return option.value;",
            json!([label, text]),
        );
        assert!(chosen.is_string(), "an option {text:?} under {label:?}");
    }

    /// The window as the user sees it, kept as `test-artifacts/<name>.png`.
    fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.get("/screenshot");
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "a PNG");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-artifacts");
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join(format!("{name}.png"));
        std::fs::write(&file, bytes).unwrap();
        file
    }

    /// Scrolls `css` to the top of the window, for a screenshot of it.
    fn show(&self, css: &str) {
        self.script("document.querySelector(arguments[0]).scrollIntoView({ block: 'start' })", json!([css]));
    }

    fn open(&self, screen: &str, ready: &str) {
        self.click(&self.wait_for(&format!("nav a[href='#/{screen}']"), Duration::from_secs(10)));
        self.wait_for(ready, Duration::from_secs(30));
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Ends the app too.
        let _ = self.http.delete(&self.url).call();
    }
}

/// Answers the system save dialog titled `title` with `path`, as a user typing it does.
fn answer_save_dialog(display: &str, title: &str, path: &Path) {
    let xdotool = |args: &[&str]| {
        let out =
            Command::new("xdotool").args(args).env("DISPLAY", display).output().expect("xdotool (Debian's xdotool)");
        assert!(out.status.success(), "xdotool {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let started = Instant::now();
    let window = loop {
        let found = Command::new("xdotool")
            .args(["search", "--name", title])
            .env("DISPLAY", display)
            .output()
            .expect("xdotool");
        let ids = String::from_utf8_lossy(&found.stdout).trim().to_string();
        if let Some(id) = ids.lines().last().filter(|id| !id.is_empty()) {
            break id.to_string();
        }
        assert!(started.elapsed() < Duration::from_secs(30), "no window titled {title:?} within 30 s");
        std::thread::sleep(Duration::from_millis(200));
    };
    // The dialog opens with the proposed name selected in its name field.
    std::thread::sleep(Duration::from_millis(500));
    xdotool(&["windowfocus", "--sync", &window]);
    xdotool(&["key", "--clearmodifiers", "ctrl+a"]);
    xdotool(&["type", "--delay", "20", &path.display().to_string()]);
    xdotool(&["key", "Return"]);
}

/// A private D-Bus session bus, as a desktop session has (the single-instance name and the
/// tray's menu live on it), listening in `dir`; nothing is activated on it on demand.
fn start_session_bus(dir: &Path) -> (Running, String) {
    let config = dir.join("bus.conf");
    std::fs::write(
        &config,
        format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*"/><allow receive_sender="*"/><allow own="*"/></policy>
</busconfig>
"#,
            dir.join("bus").display()
        ),
    )
    .unwrap();
    let mut daemon = Command::new("dbus-daemon");
    daemon.arg(format!("--config-file={}", config.display())).args(["--nofork", "--nopidfile", "--print-address=1"]);
    let (running, address) = first_line(daemon, "dbus-daemon (Debian's dbus-daemon; `cargo xtask setup` installs it)");
    assert!(address.starts_with("unix:"), "dbus-daemon printed {address:?}");
    (running, address.trim().to_string())
}

/// Starts `command` and reads the first line it prints (where it is, what it serves).
fn first_line(mut command: Command, what: &str) -> (Running, String) {
    use std::io::BufRead as _;
    let mut child =
        command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (Running(child), line)
}

/// `dbus-send --print-reply` on the session bus at `bus`; what it printed.
fn dbus_send(bus: &str, args: &[&str]) -> String {
    try_dbus_send(bus, args).unwrap_or_else(|e| panic!("dbus-send {args:?}: {e}"))
}

fn try_dbus_send(bus: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new("dbus-send")
        .args(["--session", "--print-reply"])
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .output()
        .expect("dbus-send (Debian's dbus-bin)");
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

/// The session bus connections of process `pid`.
fn bus_names_of(bus: &str, pid: u32) -> Vec<String> {
    let names =
        dbus_send(bus, &["--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"]);
    names
        .lines()
        .filter_map(|l| l.trim().strip_prefix("string \"").and_then(|n| n.strip_suffix('"')))
        .filter(|n| n.starts_with(':'))
        .filter(|n| {
            // Names listed a moment ago may be gone (the listing dbus-send's own is).
            let owner = try_dbus_send(
                bus,
                &[
                    "--dest=org.freedesktop.DBus",
                    "/org/freedesktop/DBus",
                    "org.freedesktop.DBus.GetConnectionUnixProcessID",
                    &format!("string:{n}"),
                ],
            );
            owner.is_ok_and(|o| o.lines().any(|l| l.trim() == format!("uint32 {pid}")))
        })
        .map(str::to_string)
        .collect()
}

/// Clicks the item labelled `label` in the tray menu of process `pid`, as a panel's tray
/// does: the menu is the StatusNotifierItem's, exported with the dbusmenu protocol under
/// `/org/ayatana/NotificationItem/<id>/Menu`.
fn click_tray_item(bus: &str, pid: u32, label: &str) {
    for name in bus_names_of(bus, pid) {
        let dest = format!("--dest={name}");
        // The app has several connections; the tray's is the one with the item.
        let Ok(items) = try_dbus_send(
            bus,
            &[&dest, "/org/ayatana/NotificationItem", "org.freedesktop.DBus.Introspectable.Introspect"],
        ) else {
            continue;
        };
        let Some(node) = items.split("<node name=\"").nth(1).and_then(|rest| rest.split('"').next()) else {
            continue;
        };
        let menu = format!("/org/ayatana/NotificationItem/{node}/Menu");
        let layout =
            dbus_send(bus, &[&dest, &menu, "com.canonical.dbusmenu.GetLayout", "int32:0", "int32:-1", "array:string:"]);
        // Each item is `struct { int32 <id>, {properties}, [children] }`.
        let (mut id, mut after_struct, mut found) = (None, false, None);
        for line in layout.lines().map(str::trim) {
            if after_struct && let Some(n) = line.strip_prefix("int32 ") {
                id = n.parse::<i32>().ok();
            }
            after_struct = line.ends_with("struct {");
            if line.ends_with(&format!("string \"{label}\"")) {
                found = id;
                break;
            }
        }
        let id = found.unwrap_or_else(|| panic!("no tray item {label:?} in {layout}"));
        dbus_send(
            bus,
            &[
                &dest,
                &menu,
                "com.canonical.dbusmenu.Event",
                &format!("int32:{id}"),
                "string:clicked",
                "variant:int32:0",
                "uint32:0",
            ],
        );
        return;
    }
    panic!("process {pid} has no tray menu on the session bus");
}

/// The X windows titled exactly `title` that are shown now.
fn shown_windows(display: &str, title: &str) -> Vec<String> {
    let out = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", &format!("^{title}$")])
        .env("DISPLAY", display)
        .output()
        .expect("xdotool");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).filter(|l| !l.is_empty()).collect()
}

/// Waits until `title` is shown (`true`) or hidden (`false`); its windows then.
fn wait_until_shown(display: &str, title: &str, shown: bool) -> Vec<String> {
    let started = Instant::now();
    loop {
        let windows = shown_windows(display, title);
        if windows.is_empty() != shown {
            return windows;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{title:?} not {} within 30 s",
            ["hidden", "shown"][shown as usize]
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Asks each of `windows` (the X windows a title names: which of them the toolkit takes
/// the request on is not fixed) to close, as [`close_window`] does.
fn close_windows(display: &str, windows: &[String]) {
    for window in windows {
        close_window(display, window);
    }
}

/// Asks `window` to close as a window manager's close button does: the ICCCM
/// `WM_DELETE_WINDOW` message (python3-xlib: xdotool's `windowclose` destroys the window).
fn close_window(display: &str, window: &str) {
    const SCRIPT: &str = "
import sys
from Xlib import X, display, protocol
d = display.Display()
w = d.create_resource_object('window', int(sys.argv[1]))
protocols, delete = d.intern_atom('WM_PROTOCOLS'), d.intern_atom('WM_DELETE_WINDOW')
w.send_event(protocol.event.ClientMessage(window=w, client_type=protocols, data=(32, [delete, X.CurrentTime, 0, 0, 0])))
d.flush()
";
    // Debian's Python, which has Debian's python3-xlib (not whichever python3 is first on the PATH).
    let out = Command::new("/usr/bin/python3")
        .args(["-c", SCRIPT, window])
        .env("DISPLAY", display)
        .output()
        .expect("Debian's /usr/bin/python3");
    assert!(out.status.success(), "closing {window}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The hosted sandbox (`paperchain serve --hosted --sandbox`: a local chain, a test USDC,
/// the facilitator in process) the app's wallet pays in this test; its first stdout line.
fn start_sandbox(paperchain: &Path, data: &Path, port: u16) -> (Running, Value) {
    let mut sandbox = Command::new(paperchain);
    sandbox
        .args(["serve", "--hosted", "--sandbox", "--listen", &format!("127.0.0.1:{port}")])
        .env("PAPERCHAIN_DATA_DIR", data)
        .env("PAPERCHAIN_LOG", "warn");
    let (running, line) = first_line(sandbox, "paperchain serve --hosted --sandbox");
    let line: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("the sandbox's first line {line:?}: {e}"));
    (running, line["sandbox"].clone())
}

/// The `paperchain` the workspace's tests built beside this app (`cargo xtask test` runs
/// those first): it runs the sandbox, and sets up and reads the user's wallet and ledger.
fn paperchain_binary() -> PathBuf {
    let paperchain = Path::new(env!("CARGO_BIN_EXE_paperchain-app")).with_file_name("paperchain");
    assert!(
        paperchain.is_file(),
        "{} is missing: build the workspace first (cargo xtask test does)",
        paperchain.display()
    );
    paperchain
}

/// A desktop session of its own, for the app and for `paperchain` run as its user: a home
/// (its configuration, data and runtime folders, the keystore's password), the display,
/// the session bus, the address the app's server listens on, the sandbox's chain as Base.
struct Desktop {
    home: PathBuf,
    display: String,
    bus: String,
    listen: u16,
    rpc: String,
}

impl Desktop {
    fn new(home: &Path, display: &str, bus: &str, listen: u16, sandbox: &Value) -> Desktop {
        std::fs::write(home.join("password"), "correct horse battery staple").unwrap();
        Desktop {
            home: home.to_path_buf(),
            display: display.to_string(),
            bus: bus.to_string(),
            listen,
            rpc: sandbox["rpc_url"].as_str().unwrap().to_string(),
        }
    }

    fn apply(&self, command: &mut Command) {
        let home = &self.home;
        command
            .env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_DOWNLOAD_DIR", home.join("Downloads"))
            .env("PAPERCHAIN_RUNTIME_DIR", home.join("run"))
            .env("PAPERCHAIN_LISTEN", format!("127.0.0.1:{}", self.listen))
            .env("PAPERCHAIN_WALLET_STORE", "keystore")
            .env("PAPERCHAIN_WALLET_PASSWORD_FILE", home.join("password"))
            .env("PAPERCHAIN_RPC_BASE", &self.rpc)
            .env("PAPERCHAIN_LOG", "info,lopdf=off")
            .env("GDK_BACKEND", "x11")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("PAPERCHAIN_DATA_DIR")
            .env_remove("PAPERCHAIN_CLIENT_CONFIG")
            .env_remove("PAPERCHAIN_CHAINS")
            .env_remove("PAPERCHAIN_WALLET_PASSWORD")
            .env_remove("PAPERCHAIN_SERVICE_URL")
            .env_remove("PAPERCHAIN_ROUTE");
    }

    /// Runs `paperchain args…` as this user with `stdin`; what it printed on stdout,
    /// once it succeeded.
    fn paperchain(&self, args: &[&str], stdin: &str) -> Vec<u8> {
        use std::io::Write as _;
        let mut command = Command::new(paperchain_binary());
        self.apply(&mut command);
        let mut child =
            command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "paperchain {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    }

    fn paperchain_json(&self, args: &[&str]) -> Value {
        let out = self.paperchain(args, "");
        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("paperchain {args:?}: {e}"))
    }

    /// The sandbox payer's key imported into the wallet, and its calls routed to `service`
    /// with a day cap on Base (a main network: nothing is paid there without one).
    fn set_up_wallet(&self, sandbox: &Value, service: &str) {
        let imported =
            self.paperchain(&["wallet", "import"], &format!("{}\n", sandbox["payer_private_key"].as_str().unwrap()));
        let payer = sandbox["payer"].as_str().unwrap();
        assert!(String::from_utf8_lossy(&imported).contains(payer), "the address is shown");
        self.paperchain(&["config", "set", "service.url", service], "");
        self.paperchain(&["config", "set", "policy.networks.\"eip155:8453\"", "1.00"], "");
        self.paperchain(&["config", "set", "policy.per_call", "0.05"], "");
    }

    /// The app's program, started in this session; what it says goes to `log`.
    fn start_app(&self, log: &std::fs::File) -> Running {
        let mut app = Command::new(env!("CARGO_BIN_EXE_paperchain-app"));
        self.apply(&mut app);
        let mut app = app
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log.try_clone().unwrap())
            .spawn()
            .expect("the app");
        wait_for_port(&mut app, self.listen, "the app");
        // Started once its server has claimed the data folder (after it listens).
        let started = Instant::now();
        while !server_claims(&self.home.join("run")).iter().any(|claim| {
            let claim: Option<Value> = std::fs::read(claim).ok().and_then(|c| serde_json::from_slice(&c).ok());
            claim.is_some_and(|c| c["pid"] == app.id())
        }) {
            if let Ok(Some(status)) = app.try_wait() {
                panic!("the app exited ({status})");
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the app's server claimed no data folder within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        Running(app)
    }
}

/// The address files of the local servers in the runtime folder `dir`: each server's claim
/// on its data folder.
fn server_claims(dir: &Path) -> Vec<PathBuf> {
    let files = std::fs::read_dir(dir).into_iter().flatten().map(|e| e.unwrap().path());
    files.filter(|p| p.extension().is_some_and(|x| x == "json")).collect()
}

/// `dunstctl` (the notification server's control) on the session bus at `bus`.
fn dunstctl(bus: &str, args: &[&str]) -> String {
    let out = Command::new("dunstctl").args(args).env("DBUS_SESSION_BUS_ADDRESS", bus).output().expect("dunstctl");
    assert!(out.status.success(), "dunstctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Waits for the notification server to show one notification, closes it, and returns
/// its summary and body as the server received them.
fn shown_notification(bus: &str) -> (String, String) {
    let started = Instant::now();
    while dunstctl(bus, &["count", "displayed"]) == "0" {
        assert!(started.elapsed() < Duration::from_secs(30), "no notification shown within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    dunstctl(bus, &["close-all"]);
    let started = Instant::now();
    loop {
        let history: Value = serde_json::from_str(&dunstctl(bus, &["history"])).unwrap();
        if let Some(shown) = history["data"][0].as_array().and_then(|all| all.first()) {
            let text = |field: &str| shown[field]["data"].as_str().unwrap_or_default().to_string();
            return (text("summary"), text("body"));
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the closed notification is not in the history");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Micro-dollars as the app writes them: at least two decimals, no trailing zeros beyond.
fn dollars(micros: u64) -> String {
    let text = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    format!("{whole}.{:0<2}", fraction.trim_end_matches('0'))
}

fn qpdf(args: &[&str], file: &Path) -> String {
    let out = Command::new("qpdf").args(args).arg(file).output().expect("qpdf");
    assert!(out.status.success(), "qpdf {args:?} {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn corpus() -> PathBuf {
    if let Some(dir) = std::env::var_os("PAPERCHAIN_CORPUS") {
        return PathBuf::from(dir);
    }
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    assert!(beside.is_dir(), "the corpus: set PAPERCHAIN_CORPUS, or put shared/corpus beside the clone");
    beside
}

#[test]
fn the_app_starts_serves_and_saves_a_rotated_pdf_in_a_real_window() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (_display, display) = start_display();
    let listen = free_port();
    let (driver_port, native_port) = (free_port(), free_port());
    // What the driver, WebKitWebDriver and the app say, kept beside the screenshots.
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let log = std::fs::File::create(artifacts.join("app.log")).unwrap();
    let bus_dir = home.join("bus");
    std::fs::create_dir_all(&bus_dir).unwrap();
    let (_bus, bus) = start_session_bus(&bus_dir);
    // A notification server on that bus and display, as a desktop has.
    let dunst = Command::new("dunst")
        .env("DISPLAY", &display)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dunst (Debian's dunst; `cargo xtask setup` installs it)");
    let _dunst = Running(dunst);
    // The hosted service the wallet pays: the sandbox, run by the `paperchain` the
    // workspace's tests built beside this app (`cargo xtask test` runs those first).
    let app = Path::new(env!("CARGO_BIN_EXE_paperchain-app"));
    let paperchain = paperchain_binary();
    let (_sandbox, sandbox) = start_sandbox(&paperchain, &home.join("sandbox"), free_port());
    // A desktop session of its own: a home, the display, the session bus.
    let user = Desktop::new(home, &display, &bus, listen, &sandbox);
    let session_env = |command: &mut Command| user.apply(command);
    // The user's wallet holds the sandbox payer's key and pays the sandbox, with a day cap
    // on Base; a payment above half the price of a gas read waits for approval.
    let service = sandbox["base_url"].as_str().unwrap().to_string();
    let quoted = json_of(http().post(format!("{service}/v1/chain/gas")).send_json(json!({"chain": "base"})).unwrap());
    let price: u64 = quoted["accepts"][0]["amount"].as_str().unwrap().parse().unwrap();
    user.set_up_wallet(&sandbox, &service);
    user.paperchain(&["config", "set", "policy.approve_above", &dollars(price / 2)], "");
    // The app inherits the driver's environment.
    let mut driver = Command::new(tool("tauri-driver"));
    driver
        .args(["--port", &driver_port.to_string(), "--native-port", &native_port.to_string()])
        .args(["--native-driver", "/usr/bin/WebKitWebDriver"])
        .stdout(log.try_clone().unwrap())
        .stderr(log.try_clone().unwrap());
    session_env(&mut driver);
    let mut driver = driver.spawn().expect("tauri-driver");
    wait_for_port(&mut driver, driver_port, "tauri-driver");
    let _driver = Running(driver);
    let session = Session::start(&format!("http://127.0.0.1:{driver_port}"), app, &[]);

    // The window shows the app of its own server, which answers on localhost.
    session.wait_for("[data-testid=dropzone]", Duration::from_secs(60));
    let shown = session.get("/url");
    let base = format!("http://127.0.0.1:{listen}");
    assert_eq!(shown.as_str().unwrap().split('#').next(), Some(format!("{base}/app/").as_str()));
    let openapi = json_of(http().get(format!("{base}/openapi.json")).call().unwrap());
    assert!(openapi["paths"]["/v1/pdf/rotate"].is_object(), "the server's OpenAPI has the routes");
    // It claimed the data folder: `paperchain` and the MCP relay find it by this file.
    let claims = server_claims(&home.join("run"));
    assert_eq!(claims.len(), 1, "{claims:?}");
    let claim: Value = serde_json::from_slice(&std::fs::read(&claims[0]).unwrap()).unwrap();
    assert_eq!(claim["base_url"], base);
    assert_ne!(claim["pid"], std::process::id());
    let token = session.script("return document.querySelector('meta[name=paperchain-token]').content", json!([]));
    let desktop = json_of(
        http()
            .get(format!("{base}/app/api/session"))
            .header("x-paperchain-token", token.as_str().unwrap())
            .call()
            .unwrap(),
    );
    assert_eq!(desktop["desktop"], true, "the page is told it is in the desktop app: {desktop}");
    session.screenshot("01-documents");

    // A PDF chosen in the window, rotated.
    let pdf = std::fs::canonicalize(corpus().join("pdf/sample-files/pdflatex-4-pages.pdf")).unwrap();
    session.send_keys(&session.wait_for("#file-picker", Duration::from_secs(5)), &pdf.display().to_string());
    session.wait_for("#operation", Duration::from_secs(10));
    session.select_by_label("Operation", "/v1/pdf/rotate");
    session.wait_for("form.route-form", Duration::from_secs(10));
    session.wait_for(".thumbnails button", Duration::from_secs(60));
    session.select_by_label("Degrees", "90");
    session.screenshot("02-rotate-form");
    session.click(&session.wait_for("form.route-form button[type=submit]", Duration::from_secs(5)));
    let save = session.wait_for(".results .result button.primary", Duration::from_secs(60));
    session.wait_for(".results .thumbnails figure", Duration::from_secs(60));
    session.show(".results");
    session.screenshot("03-rotate-result");

    // Saved where the user says in the system's dialog.
    let chosen = home.join("Documents/rotated by the app.pdf");
    std::fs::create_dir_all(chosen.parent().unwrap()).unwrap();
    session.click(&save);
    answer_save_dialog(&display, "Save a result", &chosen);
    let said = session.wait_for_text("[data-testid=saved]", "Saved to", Duration::from_secs(30));
    assert!(said.contains(&chosen.display().to_string()), "{said}");
    qpdf(&["--check"], &chosen);
    assert_eq!(qpdf(&["--show-npages"], &chosen), "4");
    let pages = Command::new("pdfinfo").args(["-f", "1", "-l", "4"]).arg(&chosen).output().unwrap();
    let rotations = String::from_utf8_lossy(&pages.stdout)
        .lines()
        .filter(|l| l.contains("rot:"))
        .map(|l| l.ends_with(" 90"))
        .collect::<Vec<_>>();
    assert_eq!(rotations, vec![true; 4], "every page turned by 90 degrees");
    let leftovers: Vec<_> =
        std::fs::read_dir(chosen.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "nothing but the saved file beside it: {leftovers:?}");
    session.show(".results");
    session.screenshot("04-saved");

    // The other screens.
    session.open("chain", "#chain-query");
    session.screenshot("05-chain");
    session.open("spend", "table.ledger");
    session.wait_for_text("table.ledger", "Paperchain app", Duration::from_secs(10));
    session.screenshot("06-wallet-and-spend");
    session.show("table.ledger");
    session.screenshot("06-ledger");
    session.open("agents", "#start-at-login");
    session.screenshot("07-agents");

    // Start at login, switched on and off from the Agents screen.
    let entry = home.join("config/autostart/paperchain.desktop");
    session.click(&session.wait_for("#start-at-login", Duration::from_secs(5)));
    session.wait_for_text("#login-status", "starts at login", Duration::from_secs(10));
    let text = std::fs::read_to_string(&entry).expect("the autostart entry");
    assert!(text.contains(&format!("\nExec={} --hidden\n", app.display())), "{text}");
    session.screenshot("08-start-at-login");
    session.click(&session.wait_for("#start-at-login", Duration::from_secs(5)));
    session.wait_for_text("#login-status", "no longer", Duration::from_secs(10));
    assert!(!entry.exists(), "the autostart entry is removed");

    // An agent's call routed to the sandbox costs more than the user approves without
    // asking: a native notification says who asks for what, and the window's dialog
    // lets the user approve it; the call then goes on and is paid.
    let agent = format!("{base}/v1/chain/gas");
    let call = std::thread::spawn(move || {
        let answer = http()
            .post(agent)
            .header("user-agent", "test-agent <b>1.0</b>")
            .header("paperchain-route", "hosted")
            .send_json(json!({"chain": "base"}))
            .unwrap();
        let paid = answer.headers().get("paperchain-paid").map(|v| v.to_str().unwrap().to_string());
        (answer.status().as_u16(), paid)
    });
    let (summary, body) = shown_notification(&bus);
    assert_eq!(summary, "A payment waits for your approval");
    let host = service.trim_start_matches("http://").rsplit_once(':').unwrap().0.to_string();
    let amount = format!("${}", dollars(price));
    assert!(body.contains("test-agent &lt;b&gt;1.0&lt;/b&gt; asks to pay"), "the caller's name as text: {body}");
    assert!(body.contains(&amount) && body.contains("get_gas_price") && body.contains(&host), "{body}");
    let dialog = session.wait_for("dialog.approval[open]", Duration::from_secs(30));
    let said = session.text(&dialog);
    assert!(said.contains("test-agent <b>1.0</b>") && said.contains(&amount), "{said}");
    session.screenshot("10-approval");
    session.click(&session.wait_for("dialog.approval[open] button.primary", Duration::from_secs(5)));
    let (status, paid) = call.join().unwrap();
    assert_eq!(status, 200, "the approved call went on");
    assert!(paid.is_some_and(|p| p.ends_with(" USDC")), "and was paid");

    // Closing the window hides it; the server goes on serving the user's agents.
    let window = wait_until_shown(&display, "Paperchain", true);
    close_windows(&display, &window);
    wait_until_shown(&display, "Paperchain", false);
    let still = http().get(format!("{base}/openapi.json")).call().unwrap();
    assert_eq!(still.status(), 200, "the server serves with the window closed");

    // A second launch brings that window back and ends: no second app, server or claim.
    let mut second = Command::new(app);
    session_env(&mut second);
    let mut second = second.stdout(log.try_clone().unwrap()).stderr(log.try_clone().unwrap()).spawn().unwrap();
    let started = Instant::now();
    let ended = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the second launch did not end within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(ended.success(), "the second launch: {ended}");
    assert_eq!(wait_until_shown(&display, "Paperchain", true), window, "the same window, shown again");
    let claims_now = server_claims(&home.join("run"));
    assert_eq!(claims_now, claims, "still the first app's server");
    let claim_now: Value = serde_json::from_slice(&std::fs::read(&claims[0]).unwrap()).unwrap();
    assert_eq!(claim_now, claim, "still the first app's server");
    session.screenshot("09-shown-again");

    // "Open Paperchain" in the tray brings a closed window back; "Quit Paperchain" ends the
    // app, its server (the port closes) and its claim on the data folder.
    let pid = u32::try_from(claim["pid"].as_u64().unwrap()).unwrap();
    close_windows(&display, &window);
    wait_until_shown(&display, "Paperchain", false);
    click_tray_item(&bus, pid, "Open Paperchain");
    wait_until_shown(&display, "Paperchain", true);
    click_tray_item(&bus, pid, "Quit Paperchain");
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", listen)).is_ok() || claims[0].exists() || alive(pid) {
        assert!(started.elapsed() < Duration::from_secs(30), "the app still runs 30 s after Quit");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether process `pid` runs (a zombie, ended but not yet waited for, does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}

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
