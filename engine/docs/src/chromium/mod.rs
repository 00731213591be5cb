//! Web pages to PDF with Debian's Chromium, driven over the DevTools protocol ([`cdp`]).
//!
//! One browser is kept warm, in a bubblewrap box with no network at all
//! ([`crate::sandbox`]): every request a page makes is paused by the protocol's Fetch
//! domain and answered by us, through the same SSRF-safe fetcher as every URL input (the
//! page and each subresource and redirect reach public addresses only), or refused. Each
//! call gets a fresh browser context (no cookies, cache or storage of another call), which
//! is disposed of at the end. A page that does not finish loading, or printing, within
//! its time is cut off; a browser that stops answering is killed and started again on the
//! next call.

pub mod cdp;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use crate::error::{EngineError, ErrorKind};
use crate::fetch::SafeFetcher;
use crate::sandbox::Layout;
use cdp::{CdpError, Connection};

/// Longest a page may take to load (its load event) and print, both together, unless the
/// host says otherwise: a page built to lay out for minutes is stopped within it.
pub const PAGE_TIMEOUT: Duration = Duration::from_secs(25);
/// Most requests a page may make; later ones are refused.
pub const MAX_REQUESTS: usize = 500;
/// Most bytes all of a page's subresources may bring together.
pub const MAX_SUBRESOURCE_BYTES: u64 = 100 * 1024 * 1024;
/// Most pages a printed PDF may have.
pub const MAX_PAGES: u64 = 2_000;
/// The address an `html` input is served at inside the browser: a name that never resolves.
pub const DOCUMENT_URL: &str = "https://document.invalid/";
/// How long after the load event late requests (fonts, lazy images) are waited for.
const SETTLE: Duration = Duration::from_millis(100);
/// Longest a protocol command other than loading and printing may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The Chromium program: `PAPERCHAIN_CHROMIUM`, else Debian's `/usr/lib/chromium/chromium`
/// (the real binary behind the `chromium` script), checked once a process.
pub fn program() -> Result<&'static PathBuf, EngineError> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    crate::native::load_once(
        &FOUND,
        || {
            let given = std::env::var_os("PAPERCHAIN_CHROMIUM")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/usr/lib/chromium/chromium"));
            let program = given.canonicalize().map_err(|e| {
                format!(
                    "no Chromium at {} ({e}); install Debian's chromium package (cargo xtask setup does), or set \
                     PAPERCHAIN_CHROMIUM to the browser's binary",
                    given.display()
                )
            })?;
            crate::sandbox::bwrap()?;
            Ok(program)
        },
        "Chromium cannot be run; HTML to PDF answers 503",
        |why| crate::native::unavailable(format!("HTML to PDF is not available on this server: {why}")),
    )
}

/// Checks that Chromium and the box can run, off the async threads.
pub async fn ensure_available() -> Result<(), EngineError> {
    crate::native::ensure(program).await
}

/// A running browser.
struct Browser {
    child: Child,
    cdp: Connection,
    /// The box's root (profile, /tmp), removed with the browser.
    _root: tempfile::TempDir,
    /// The root's `lock`, locked while this process uses the root: a process's browser is
    /// not dropped when the process exits, so the next browser started on this machine
    /// removes the roots nobody holds any more ([`remove_stale_roots`]).
    _in_use: std::fs::File,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The warm browser of a process, started on first use and again after it stops; kept in
/// the route state.
pub struct BrowserHost {
    browser: Mutex<Option<Arc<Browser>>>,
    spawner: crate::sandbox::Spawner,
    /// Browsers started so far (for tests).
    started: std::sync::atomic::AtomicU64,
    /// Longest a page may take to load, and then to print.
    page_timeout: Duration,
}

impl Default for BrowserHost {
    fn default() -> Self {
        BrowserHost::with_page_timeout(PAGE_TIMEOUT)
    }
}

impl BrowserHost {
    /// A host whose pages may take `page_timeout` to load and to print (tests shorten it).
    pub fn with_page_timeout(page_timeout: Duration) -> BrowserHost {
        BrowserHost {
            browser: Mutex::new(None),
            spawner: crate::sandbox::Spawner::new("chromium-start"),
            started: Default::default(),
            page_timeout,
        }
    }

    /// The process id of the running browser's box, if one runs (for tests that kill it).
    pub fn pid(&self) -> Option<u32> {
        self.browser.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_ref().map(|b| b.child.id())
    }

    /// Browsers started so far.
    pub fn started(&self) -> u64 {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The running browser, started when there is none or the last one stopped.
    fn browser(&self) -> Result<Arc<Browser>, EngineError> {
        let mut slot = self.browser.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(browser) = slot.as_ref().filter(|b| !b.cdp.is_closed()) {
            return Ok(Arc::clone(browser));
        }
        *slot = None;
        let program = program()?.clone();
        let browser = self.spawner.run(move || start(&program)).and_then(|started| started).map_err(|why| {
            tracing::error!(reason = %why, "Chromium could not be started");
            crate::native::unavailable(format!("Chromium could not be started: {why}"))
        })?;
        self.started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let browser = Arc::new(browser);
        *slot = Some(Arc::clone(&browser));
        Ok(browser)
    }

    /// Drops `browser` if it is still the current one (it stopped answering).
    fn discard(&self, browser: &Arc<Browser>) {
        let mut slot = self.browser.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.as_ref().is_some_and(|b| Arc::ptr_eq(b, browser)) {
            *slot = None;
        }
    }
}

/// The prefix of a browser's folder in the temporary folder.
const ROOT_PREFIX: &str = "paperchain-chromium-";

/// How old a browser's folder must be before another process may take it for left over:
/// past the moment its own process locks it.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// Removes the browser folders of processes that are gone: those whose `lock` nobody holds,
/// older than [`STALE_AFTER`]. A folder without a `lock` is left alone.
fn remove_stale_roots(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else { return };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(ROOT_PREFIX) {
            continue;
        }
        let Ok(lock) = std::fs::File::open(entry.path().join("lock")) else { continue };
        let old =
            lock.metadata().and_then(|m| m.modified()).is_ok_and(|at| at.elapsed().is_ok_and(|age| age > STALE_AFTER));
        if old && lock.try_lock().is_ok() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Starts a browser in a new box and waits until it answers.
fn start(program: &Path) -> Result<Browser, String> {
    remove_stale_roots(&std::env::temp_dir());
    let root = tempfile::Builder::new()
        .prefix(ROOT_PREFIX)
        .tempdir()
        .map_err(|e| format!("cannot make the browser's folder: {e}"))?;
    let in_use = std::fs::File::create(root.path().join("lock"))
        .and_then(|lock| lock.lock().map(|()| lock))
        .map_err(|e| format!("cannot lock the browser's folder: {e}"))?;
    for dir in ["tmp", "home", "profile"] {
        std::fs::create_dir_all(root.path().join(dir))
            .map_err(|e| format!("cannot make the browser's folders: {e}"))?;
    }
    let (to_browser_read, to_browser) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let (from_browser, from_browser_write) = std::io::pipe().map_err(|e| format!("cannot make a pipe: {e}"))?;
    let layout = Layout { read_only: vec![program.parent().unwrap_or(Path::new("/usr")).to_path_buf()] };
    let mut command = crate::sandbox::command(
        root.path(),
        &layout,
        program,
        &[
            "--headless",
            // The box is the sandbox: Chromium's own needs namespaces the box does not give it.
            "--no-sandbox",
            "--remote-debugging-pipe",
            "--user-data-dir=/box/profile",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-sync",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-default-apps",
            "--disable-dev-shm-usage",
            "--mute-audio",
            "--hide-scrollbars",
            "about:blank",
        ],
    )?;
    use std::os::fd::AsRawFd;
    let (read_fd, write_fd) = (to_browser_read.as_raw_fd(), from_browser_write.as_raw_fd());
    // SAFETY: between fork and exec only async-signal-safe calls: dup2 and fcntl.
    unsafe {
        command.pre_exec(move || {
            for (fd, target) in [(read_fd, 3), (write_fd, 4)] {
                if fd == target {
                    // Already in place: only its close-on-exec flag must go.
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(fd, target) == -1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
    let child = command.spawn().map_err(|e| format!("cannot start Chromium: {e}"))?;
    drop(to_browser_read);
    drop(from_browser_write);
    let cdp = Connection::new(to_browser, from_browser);
    let mut browser = Browser { child, cdp, _root: root, _in_use: in_use };
    let started = Instant::now();
    match browser.cdp.call(None, "Browser.getVersion", json!({}), Duration::from_secs(30)) {
        Ok(_) => Ok(browser),
        Err(e) => {
            let _ = browser.child.kill();
            Err(format!("Chromium did not answer after {} ms: {e}", started.elapsed().as_millis()))
        }
    }
}

/// What a page is made of.
pub enum Page {
    /// HTML given in the call, served at [`DOCUMENT_URL`].
    Html(String),
    /// A page fetched already (the fetcher checked it): its URL after redirects, type and body.
    Fetched { url: String, content_type: Option<String>, body: Vec<u8> },
}

/// How the printed page is laid out.
#[derive(Clone, Copy, Debug)]
pub struct PrintLayout {
    /// Paper width and height, in inches.
    pub paper_in: (f64, f64),
    /// Landscape orientation.
    pub landscape: bool,
    /// Margins top, right, bottom, left, in inches.
    pub margins_in: [f64; 4],
    /// Print backgrounds (colours and images).
    pub background: bool,
}

/// What printing did.
pub struct Printed {
    /// The PDF.
    pub pdf: Vec<u8>,
    /// Requests the page made that were answered.
    pub loaded: usize,
    /// Requests refused (an address that is not public, network not allowed, over a cap), by URL.
    pub refused: Vec<String>,
}

/// What subresources may reach.
pub struct Network<'a> {
    /// The fetcher to answer them with; `None`: every request is refused.
    pub fetcher: Option<&'a SafeFetcher>,
    /// The runtime the fetcher runs on.
    pub runtime: tokio::runtime::Handle,
}

/// Prints `page`. Blocking: call it off the async threads, with `network.runtime` a
/// handle to the runtime the call came from.
pub fn print(
    host: &BrowserHost,
    page: &Page,
    network: &Network<'_>,
    layout: &PrintLayout,
) -> Result<Printed, EngineError> {
    let browser = host.browser()?;
    let result = print_with(&browser, page, network, layout, host.page_timeout);
    if browser.cdp.is_closed() || matches!(&result, Err(Failure::Unresponsive(_))) {
        host.discard(&browser);
    }
    result.map_err(|failure| match failure {
        Failure::Page(error) => error,
        Failure::Unresponsive(why) => {
            tracing::error!(reason = %why, "the browser stopped answering; it is restarted on the next call");
            EngineError::new(
                ErrorKind::Unavailable { retry_after: Duration::from_secs(1) },
                "engine_failed",
                "the browser stopped during the call; a new one is started, send the call again",
            )
        }
    })
}

enum Failure {
    /// The page's fault (too slow, too large): the browser is fine.
    Page(EngineError),
    /// The browser did not answer a command it always answers.
    Unresponsive(String),
}

impl From<CdpError> for Failure {
    fn from(error: CdpError) -> Failure {
        Failure::Unresponsive(error.to_string())
    }
}

fn page_timeout(what: &str, limit: Duration) -> Failure {
    Failure::Page(EngineError::invalid_with(
        "page_timeout",
        "",
        format!(
            "the page did not finish {what} within {} s for loading and printing together (a script that never \
             stops, resources that never come, or a layout too large)",
            limit.as_secs_f64()
        ),
    ))
}

fn print_with(
    browser: &Browser,
    page: &Page,
    network: &Network<'_>,
    layout: &PrintLayout,
    limit: Duration,
) -> Result<Printed, Failure> {
    let cdp = &browser.cdp;
    let context = cdp.call(None, "Target.createBrowserContext", json!({ "disposeOnDetach": true }), COMMAND_TIMEOUT)?;
    let context_id = context["browserContextId"].as_str().unwrap_or_default().to_string();
    let result = (|| {
        let target = cdp.call(
            None,
            "Target.createTarget",
            json!({ "url": "about:blank", "browserContextId": context_id }),
            COMMAND_TIMEOUT,
        )?;
        let target_id = target["targetId"].as_str().unwrap_or_default().to_string();
        let attached = cdp.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
            COMMAND_TIMEOUT,
        )?;
        let session = attached["sessionId"].as_str().unwrap_or_default().to_string();
        let events = cdp.subscribe(&session);
        let printed = load_and_print(cdp, &session, &events, page, network, layout, limit);
        cdp.forget(&session);
        printed
    })();
    // Disposing of the context closes its page and stops its scripts, whatever happened.
    let disposed =
        cdp.call(None, "Target.disposeBrowserContext", json!({ "browserContextId": context_id }), COMMAND_TIMEOUT);
    match (result, disposed) {
        (Ok(printed), Ok(_)) => Ok(printed),
        (Ok(_), Err(e)) => Err(e.into()),
        (Err(failure), _) => Err(failure),
    }
}

fn load_and_print(
    cdp: &Connection,
    session: &str,
    events: &std::sync::mpsc::Receiver<Value>,
    page: &Page,
    network: &Network<'_>,
    layout: &PrintLayout,
    limit: Duration,
) -> Result<Printed, Failure> {
    let session = Some(session);
    cdp.call(session, "Fetch.enable", json!({ "patterns": [{ "urlPattern": "*" }] }), COMMAND_TIMEOUT)?;
    cdp.call(session, "Page.enable", json!({}), COMMAND_TIMEOUT)?;
    let document_url = match page {
        Page::Html(_) => DOCUMENT_URL.to_string(),
        Page::Fetched { url, .. } => url.clone(),
    };
    // Not waited for: the navigation's own request is paused until we answer it below.
    let navigated = cdp.send(session, "Page.navigate", json!({ "url": document_url }))?;
    let mut printed = Printed { pdf: Vec::new(), loaded: 0, refused: Vec::new() };
    let mut requests = 0usize;
    let mut subresource_bytes = 0u64;
    let load_deadline = Instant::now() + limit;
    let mut settle_until: Option<Instant> = None;
    let mut document_served = false;
    loop {
        if let Err(stopped) = crate::cancel::check() {
            // The context is disposed of by the caller: the page's scripts stop with it.
            return Err(Failure::Page(stopped));
        }
        let deadline = settle_until.unwrap_or(load_deadline).min(load_deadline);
        // At most 100 ms at a time, to look at the call's stop signal between events.
        let Some(event) = cdp::next_event(events, deadline.min(Instant::now() + Duration::from_millis(100))) else {
            if Instant::now() < deadline && !cdp.is_closed() {
                continue;
            }
            if settle_until.is_some() {
                break;
            }
            if cdp.is_closed() {
                return Err(Failure::Unresponsive("the browser stopped while the page loaded".into()));
            }
            return Err(page_timeout("loading", limit));
        };
        match event["method"].as_str().unwrap_or_default() {
            "Fetch.requestPaused" => {
                let params = &event["params"];
                let request_id = params["requestId"].as_str().unwrap_or_default().to_string();
                let url = params["request"]["url"].as_str().unwrap_or_default().to_string();
                let method = params["request"]["method"].as_str().unwrap_or_default();
                requests += 1;
                let answer = if !document_served && url == document_url {
                    document_served = true;
                    Ok(match page {
                        Page::Html(html) => (Some("text/html; charset=utf-8".to_string()), html.as_bytes().to_vec()),
                        Page::Fetched { content_type, body, .. } => (content_type.clone(), body.clone()),
                    })
                } else if requests > MAX_REQUESTS {
                    Err(format!("more than {MAX_REQUESTS} requests"))
                } else if method != "GET" {
                    Err(format!("{method} requests are not made"))
                } else if let Some(fetcher) = network.fetcher {
                    match network.runtime.block_on(fetcher.fetch(&url)) {
                        Ok(fetched) => {
                            subresource_bytes += fetched.bytes.len() as u64;
                            if subresource_bytes > MAX_SUBRESOURCE_BYTES {
                                Err(format!("past {} MiB of resources", MAX_SUBRESOURCE_BYTES >> 20))
                            } else {
                                Ok((fetched.content_type, fetched.bytes))
                            }
                        }
                        Err(e) => Err(e.to_string()),
                    }
                } else {
                    Err("the call does not allow network access".to_string())
                };
                match answer {
                    Ok((content_type, body)) => {
                        let mut headers = vec![json!({ "name": "Cache-Control", "value": "no-store" })];
                        if let Some(content_type) = content_type {
                            headers.push(json!({ "name": "Content-Type", "value": content_type }));
                        }
                        let body = base64::engine::general_purpose::STANDARD.encode(body);
                        cdp.send(
                            session,
                            "Fetch.fulfillRequest",
                            json!({ "requestId": request_id, "responseCode": 200, "responseHeaders": headers, "body": body }),
                        )?;
                        printed.loaded += 1;
                    }
                    Err(why) => {
                        tracing::debug!(url = %url, reason = %why, "a page's request was refused");
                        cdp.send(
                            session,
                            "Fetch.failRequest",
                            json!({ "requestId": request_id, "errorReason": "BlockedByClient" }),
                        )?;
                        // The list travels in the report header: 20 URLs of at most 200 characters.
                        if printed.refused.len() < 20 {
                            printed.refused.push(url.chars().take(200).collect());
                        }
                    }
                }
                if settle_until.is_some() {
                    settle_until = Some(Instant::now() + SETTLE);
                }
            }
            "Page.loadEventFired" => settle_until = Some(Instant::now() + SETTLE),
            _ => {}
        }
    }
    // The navigation itself answered long ago; an error there (a refused document) shows here.
    if let Ok(Ok(answer)) = navigated.try_recv()
        && let Some(error) = answer.get("errorText").and_then(Value::as_str)
    {
        return Err(Failure::Page(EngineError::invalid_with(
            "fetch_failed",
            "",
            format!("the page did not load: {error}"),
        )));
    }
    let (width, height) = layout.paper_in;
    let [top, right, bottom, left] = layout.margins_in;
    let params = json!({
        "landscape": layout.landscape,
        "printBackground": layout.background,
        "paperWidth": width,
        "paperHeight": height,
        "marginTop": top,
        "marginRight": right,
        "marginBottom": bottom,
        "marginLeft": left,
        "preferCSSPageSize": false,
    });
    // What is left of the page's one deadline, whatever loading took.
    let left = load_deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
    let answer = match cdp.call_stoppable(session, "Page.printToPDF", params, left) {
        Ok(answer) => answer,
        Err(CdpError::Timeout) => return Err(page_timeout("printing", limit)),
        Err(CdpError::Stopped) => {
            return Err(Failure::Page(
                crate::cancel::check().err().unwrap_or_else(|| EngineError::internal("printing was stopped")),
            ));
        }
        Err(CdpError::Protocol(why)) => {
            return Err(Failure::Page(EngineError::invalid_with(
                "conversion_failed",
                "",
                format!("the page could not be printed: {why}"),
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let data = answer["data"].as_str().unwrap_or_default();
    printed.pdf = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| Failure::Unresponsive(format!("the printed PDF is not base64: {e}")))?;
    Ok(printed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_folders_of_gone_browsers_are_removed() {
        let temp = tempfile::tempdir().unwrap();
        let root = |name: &str, lock: Option<Duration>| {
            let dir = temp.path().join(format!("{ROOT_PREFIX}{name}"));
            std::fs::create_dir_all(dir.join("profile")).unwrap();
            lock.map(|age| {
                let file = std::fs::File::create(dir.join("lock")).unwrap();
                file.set_modified(std::time::SystemTime::now() - age).unwrap();
                file
            })
        };
        let hour = Duration::from_secs(3600);
        drop(root("gone", Some(hour)));
        let held = root("running", Some(hour)).unwrap();
        held.lock().unwrap();
        drop(root("starting", Some(Duration::ZERO)));
        root("older-kind", None);
        std::fs::create_dir_all(temp.path().join("someone-else")).unwrap();
        remove_stale_roots(temp.path());
        let mut left: Vec<String> =
            std::fs::read_dir(temp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        left.sort();
        let expected = ["older-kind", "running", "starting"].map(|n| format!("{ROOT_PREFIX}{n}"));
        assert_eq!(left, [&expected[..], &["someone-else".to_string()]].concat());
        drop(held);
    }
}
