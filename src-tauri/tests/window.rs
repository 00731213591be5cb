//! The desktop app in a real window: the app's program as built, on an Xvfb display, driven
//! through tauri-driver and WebKitGTK's own WebKitWebDriver (Debian's `webkit2gtk-driver`),
//! as a user would: it starts, its server answers on localhost, a PDF chosen in the window
//! is rotated and saved through the system's save dialog (answered with xdotool), start at
//! login is switched on and off; a screenshot of each screen is kept in
//! `src-tauri/test-artifacts/`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// A process stopped when the test ends, however it ends: asked first (SIGTERM), so it
/// stops what it started (tauri-driver its WebKitWebDriver) and cleans up (Xvfb its lock
/// file), killed after 5 s.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
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

// `tool` and `corpus` find what testkit's helpers find: testkit as a dependency here would
// bring its hosted-mode features into the app's build and rebuild the crates they share.
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
    // The app inherits the driver's environment: a home of its own, the tools setup put.
    let mut driver = Command::new(tool("tauri-driver"))
        .args(["--port", &driver_port.to_string(), "--native-port", &native_port.to_string()])
        .args(["--native-driver", "/usr/bin/WebKitWebDriver"])
        .env("DISPLAY", &display)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_DOWNLOAD_DIR", home.join("Downloads"))
        .env("PAPERCHAIN_RUNTIME_DIR", home.join("run"))
        .env("PAPERCHAIN_LISTEN", format!("127.0.0.1:{listen}"))
        .env("PAPERCHAIN_WALLET_STORE", "keystore")
        .env("PAPERCHAIN_LOG", "info,lopdf=off")
        .env("GDK_BACKEND", "x11")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("PAPERCHAIN_DATA_DIR")
        .env_remove("PAPERCHAIN_CLIENT_CONFIG")
        .env_remove("PAPERCHAIN_CHAINS")
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("tauri-driver");
    wait_for_port(&mut driver, driver_port, "tauri-driver");
    let _driver = Running(driver);
    let app = Path::new(env!("CARGO_BIN_EXE_paperchain-app"));
    let session = Session::start(&format!("http://127.0.0.1:{driver_port}"), app, &[]);

    // The window shows the app of its own server, which answers on localhost.
    session.wait_for("[data-testid=dropzone]", Duration::from_secs(60));
    let shown = session.get("/url");
    let base = format!("http://127.0.0.1:{listen}");
    assert_eq!(shown.as_str().unwrap().split('#').next(), Some(format!("{base}/app/").as_str()));
    let openapi = json_of(http().get(format!("{base}/openapi.json")).call().unwrap());
    assert!(openapi["paths"]["/v1/pdf/rotate"].is_object(), "the server's OpenAPI has the routes");
    // It claimed the data folder: `paperchain` and the MCP relay find it by this file.
    let claims: Vec<_> = std::fs::read_dir(home.join("run"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
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
}
