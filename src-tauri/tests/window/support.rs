//! What the window tests share: processes that stop when dropped, the X display, the
//! WebDriver session, D-Bus and the tray, the hosted sandbox, the app's home folder.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// A process stopped when the test ends, however it ends: asked first (SIGTERM), so it
/// stops what it started (tauri-driver its WebKitWebDriver) and cleans up (Xvfb its lock
/// file), killed after 5 s.
pub(crate) struct Running(pub(crate) Child);

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

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub(crate) fn wait_for_port(child: &mut Child, port: u16, what: &str) {
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
pub(crate) fn start_display() -> (Running, String) {
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
pub(crate) fn tool(name: &str) -> PathBuf {
    let tools = std::env::var_os("PAPERCHAIN_TOOLS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/paperchain/tools")))
        .expect("PAPERCHAIN_TOOLS or HOME");
    let path = tools.join("bin").join(name);
    assert!(path.is_file(), "{} is missing: `cargo xtask setup` builds it", path.display());
    path
}

/// Plain HTTP with JSON: WebDriver's wire, and the app's server.
pub(crate) fn http() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

pub(crate) fn json_of(mut response: ureq::http::Response<ureq::Body>) -> Value {
    response.body_mut().with_config().limit(256 * 1024 * 1024).read_json().expect("a JSON answer")
}

/// A W3C WebDriver session with the app.
pub(crate) struct Session {
    pub(crate) http: ureq::Agent,
    pub(crate) url: String,
}

impl Session {
    pub(crate) fn start(driver: &str, application: &Path, args: &[&str]) -> Session {
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

    pub(crate) fn post(&self, path: &str, body: Value) -> Value {
        let answer = json_of(self.http.post(format!("{}{path}", self.url)).send_json(&body).unwrap());
        assert!(answer["value"].get("error").is_none(), "POST {path}: {answer}");
        answer["value"].clone()
    }

    pub(crate) fn get(&self, path: &str) -> Value {
        let answer = json_of(self.http.get(format!("{}{path}", self.url)).call().unwrap());
        assert!(answer["value"].get("error").is_none(), "GET {path}: {answer}");
        answer["value"].clone()
    }

    /// Runs `script` in the page (`arguments[…]` are `args`) and returns its value.
    pub(crate) fn script(&self, script: &str, args: Value) -> Value {
        self.post("/execute/sync", json!({ "script": script, "args": args }))
    }

    /// The first element matching `css`, if there is one now.
    pub(crate) fn find(&self, css: &str) -> Option<String> {
        let found = self.post("/elements", json!({ "using": "css selector", "value": css }));
        let first = found.as_array()?.first()?.as_object()?.values().next()?.as_str()?;
        Some(first.to_string())
    }

    /// The first element matching `css`, waiting up to `timeout` for it.
    pub(crate) fn wait_for(&self, css: &str, timeout: Duration) -> String {
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

    pub(crate) fn click(&self, element: &str) {
        self.post(&format!("/element/{element}/click"), json!({}));
    }

    pub(crate) fn send_keys(&self, element: &str, text: &str) {
        self.post(&format!("/element/{element}/value"), json!({ "text": text }));
    }

    pub(crate) fn text(&self, element: &str) -> String {
        self.get(&format!("/element/{element}/text")).as_str().unwrap_or_default().to_string()
    }

    /// Waits until `css`'s text contains `wanted`; the text it has then.
    pub(crate) fn wait_for_text(&self, css: &str, wanted: &str, timeout: Duration) -> String {
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
    pub(crate) fn select_by_label(&self, label: &str, text: &str) {
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
    pub(crate) fn screenshot(&self, name: &str) -> PathBuf {
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
    pub(crate) fn show(&self, css: &str) {
        self.script("document.querySelector(arguments[0]).scrollIntoView({ block: 'start' })", json!([css]));
    }

    pub(crate) fn open(&self, screen: &str, ready: &str) {
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
pub(crate) fn answer_save_dialog(display: &str, title: &str, path: &Path) {
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
pub(crate) fn start_session_bus(dir: &Path) -> (Running, String) {
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
pub(crate) fn first_line(mut command: Command, what: &str) -> (Running, String) {
    use std::io::BufRead as _;
    let mut child =
        command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (Running(child), line)
}

/// `dbus-send --print-reply` on the session bus at `bus`; what it printed.
pub(crate) fn dbus_send(bus: &str, args: &[&str]) -> String {
    try_dbus_send(bus, args).unwrap_or_else(|e| panic!("dbus-send {args:?}: {e}"))
}

pub(crate) fn try_dbus_send(bus: &str, args: &[&str]) -> Result<String, String> {
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
pub(crate) fn bus_names_of(bus: &str, pid: u32) -> Vec<String> {
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
pub(crate) fn click_tray_item(bus: &str, pid: u32, label: &str) {
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
pub(crate) fn shown_windows(display: &str, title: &str) -> Vec<String> {
    let out = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", &format!("^{title}$")])
        .env("DISPLAY", display)
        .output()
        .expect("xdotool");
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).filter(|l| !l.is_empty()).collect()
}

/// Waits until `title` is shown (`true`) or hidden (`false`); its windows then.
pub(crate) fn wait_until_shown(display: &str, title: &str, shown: bool) -> Vec<String> {
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
pub(crate) fn close_windows(display: &str, windows: &[String]) {
    for window in windows {
        close_window(display, window);
    }
}

/// Asks `window` to close as a window manager's close button does: the ICCCM
/// `WM_DELETE_WINDOW` message (python3-xlib: xdotool's `windowclose` destroys the window).
pub(crate) fn close_window(display: &str, window: &str) {
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
pub(crate) fn start_sandbox(paperchain: &Path, data: &Path, port: u16) -> (Running, Value) {
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
pub(crate) fn paperchain_binary() -> PathBuf {
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
pub(crate) struct Desktop {
    pub(crate) home: PathBuf,
    pub(crate) display: String,
    pub(crate) bus: String,
    pub(crate) listen: u16,
    pub(crate) rpc: String,
}

impl Desktop {
    pub(crate) fn new(home: &Path, display: &str, bus: &str, listen: u16, sandbox: &Value) -> Desktop {
        std::fs::write(home.join("password"), "correct horse battery staple").unwrap();
        Desktop {
            home: home.to_path_buf(),
            display: display.to_string(),
            bus: bus.to_string(),
            listen,
            rpc: sandbox["rpc_url"].as_str().unwrap().to_string(),
        }
    }

    pub(crate) fn apply(&self, command: &mut Command) {
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
    pub(crate) fn paperchain(&self, args: &[&str], stdin: &str) -> Vec<u8> {
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

    pub(crate) fn paperchain_json(&self, args: &[&str]) -> Value {
        let out = self.paperchain(args, "");
        serde_json::from_slice(&out).unwrap_or_else(|e| panic!("paperchain {args:?}: {e}"))
    }

    /// The sandbox payer's key imported into the wallet, and its calls routed to `service`
    /// with a day cap on Base (a main network: nothing is paid there without one).
    pub(crate) fn set_up_wallet(&self, sandbox: &Value, service: &str) {
        let imported =
            self.paperchain(&["wallet", "import"], &format!("{}\n", sandbox["payer_private_key"].as_str().unwrap()));
        let payer = sandbox["payer"].as_str().unwrap();
        assert!(String::from_utf8_lossy(&imported).contains(payer), "the address is shown");
        self.paperchain(&["config", "set", "service.url", service], "");
        self.paperchain(&["config", "set", "policy.networks.\"eip155:8453\"", "1.00"], "");
        self.paperchain(&["config", "set", "policy.per_call", "0.05"], "");
    }

    /// The app's program, started in this session; what it says goes to `log`.
    pub(crate) fn start_app(&self, log: &std::fs::File) -> Running {
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
pub(crate) fn server_claims(dir: &Path) -> Vec<PathBuf> {
    let files = std::fs::read_dir(dir).into_iter().flatten().map(|e| e.unwrap().path());
    files.filter(|p| p.extension().is_some_and(|x| x == "json")).collect()
}

/// `dunstctl` (the notification server's control) on the session bus at `bus`.
pub(crate) fn dunstctl(bus: &str, args: &[&str]) -> String {
    let out = Command::new("dunstctl").args(args).env("DBUS_SESSION_BUS_ADDRESS", bus).output().expect("dunstctl");
    assert!(out.status.success(), "dunstctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Waits for the notification server to show one notification, closes it, and returns
/// its summary and body as the server received them.
pub(crate) fn shown_notification(bus: &str) -> (String, String) {
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
pub(crate) fn dollars(micros: u64) -> String {
    let text = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    format!("{whole}.{:0<2}", fraction.trim_end_matches('0'))
}

pub(crate) fn qpdf(args: &[&str], file: &Path) -> String {
    let out = Command::new("qpdf").args(args).arg(file).output().expect("qpdf");
    assert!(out.status.success(), "qpdf {args:?} {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub(crate) fn corpus() -> PathBuf {
    if let Some(dir) = std::env::var_os("PAPERCHAIN_CORPUS") {
        return PathBuf::from(dir);
    }
    let beside = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus");
    assert!(beside.is_dir(), "the corpus: set PAPERCHAIN_CORPUS, or put shared/corpus beside the clone");
    beside
}

/// Whether process `pid` runs (a zombie, ended but not yet waited for, does not).
pub(crate) fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(')').map(|(_, rest)| rest.trim_start().starts_with('Z')))
        .is_some_and(|zombie| !zombie)
}
