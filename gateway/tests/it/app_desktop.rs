//! `/app/api/desktop`: what the app's page asks of the desktop app around the server, here
//! a desktop that answers its save dialog with a chosen path (or a cancel) and keeps its
//! login item in a folder. The real one (src-tauri) is tested in its window.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use paperchain_engine::Context;
use paperchain_gateway::ServerConfig;
use paperchain_gateway::app::{Desktop, DesktopFuture};
use paperchain_gateway::server::HttpServer;
use paperchain_testkit::server::spawn_router;
use serde_json::{Value, json};

/// The user's answers: where the next save goes (`None`: cancelled), and the login item.
struct Answers {
    save_to: Mutex<Option<PathBuf>>,
    asked: Mutex<Vec<String>>,
    login: Mutex<bool>,
}

struct FakeDesktop(Arc<Answers>);

impl Desktop for FakeDesktop {
    fn save(&self, name: String, bytes: Bytes) -> DesktopFuture<Option<PathBuf>> {
        let answers = self.0.clone();
        Box::pin(async move {
            answers.asked.lock().unwrap().push(name);
            let Some(path) = answers.save_to.lock().unwrap().clone() else { return Ok(None) };
            std::fs::write(&path, &bytes).map_err(|e| e.to_string())?;
            Ok(Some(path))
        })
    }

    fn starts_at_login(&self) -> Result<bool, String> {
        Ok(*self.0.login.lock().unwrap())
    }

    fn set_start_at_login(&self, on: bool) -> Result<(), String> {
        *self.0.login.lock().unwrap() = on;
        Ok(())
    }
}

#[tokio::test]
async fn the_page_saves_through_the_desktop_and_switches_its_login_item() {
    let dir = tempfile::tempdir().unwrap();
    let answers = Arc::new(Answers { save_to: Mutex::new(None), asked: Mutex::new(vec![]), login: Mutex::new(false) });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = ServerConfig::local(dir.path().to_path_buf());
    config.listen = addr;
    config.request_timeout = Duration::from_secs(30);
    let router = HttpServer::new(config, Context::new())
        .desktop(Arc::new(FakeDesktop(answers.clone())))
        .mount(paperchain_gateway::app::mount)
        .router(addr)
        .unwrap();
    let _task = spawn_router(listener, router);
    let base = format!("http://{addr}");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let page = http.get(format!("{base}/app/")).send().await.unwrap().text().await.unwrap();
    let token = page
        .split("name=\"paperchain-token\" content=\"")
        .nth(1)
        .map(|t| t[..64].to_string())
        .expect("the app's page carries its token (ui/ is built by `cargo xtask setup`)");
    let api = |path: &str| format!("{base}/app/api{path}");
    // A request of the app's page, which sends the token.
    let post = |path: &str| http.post(api(path)).header("x-paperchain-token", &token);

    // Nothing without the token.
    let bare = http.post(api("/desktop/save?name=a.pdf")).body("x").send().await.unwrap();
    assert_eq!(bare.status(), 403);
    let session: Value =
        http.get(api("/session")).header("x-paperchain-token", &token).send().await.unwrap().json().await.unwrap();
    assert_eq!(session["desktop"], true);

    // Saved whole where the user chose.
    let chosen = dir.path().join("chosen.pdf");
    *answers.save_to.lock().unwrap() = Some(chosen.clone());
    let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let saved = post("/desktop/save?name=Relev%C3%A9%20rotated.pdf").body(bytes.clone()).send().await.unwrap();
    assert_eq!(saved.status(), 200);
    let saved: Value = saved.json().await.unwrap();
    assert_eq!(saved["saved"], json!(chosen));
    assert_eq!(std::fs::read(&chosen).unwrap(), bytes, "the bytes arrive whole");
    assert_eq!(answers.asked.lock().unwrap().last().unwrap(), "Relevé rotated.pdf", "the dialog proposes the name");

    // Cancelled: nothing saved, and the page is told.
    *answers.save_to.lock().unwrap() = None;
    let cancelled: Value = post("/desktop/save?name=b.pdf").body("x").send().await.unwrap().json().await.unwrap();
    assert_eq!(cancelled["saved"], Value::Null);

    // A name with a folder in it, or none, is refused, naming the field; the dialog never opens.
    let asked = answers.asked.lock().unwrap().len();
    for query in ["name=..%2Fescape.pdf", "name=", "other=x", ""] {
        let refused = post(&format!("/desktop/save?{query}")).body("x").send().await.unwrap();
        assert_eq!(refused.status(), 422, "{query}");
        let body: Value = refused.json().await.unwrap();
        assert_eq!(body["error"]["field"], "/name", "{query}: {body}");
    }
    assert_eq!(answers.asked.lock().unwrap().len(), asked);

    // The login item, on and off; a wrong body names what is wrong.
    for on in [true, false] {
        let changed: Value =
            post("/desktop").json(&json!({ "start_at_login": on })).send().await.unwrap().json().await.unwrap();
        assert_eq!(changed["start_at_login"], on);
        assert_eq!(*answers.login.lock().unwrap(), on);
    }
    let wrong = post("/desktop").json(&json!({ "start_at_login": "yes" })).send().await.unwrap();
    assert_eq!(wrong.status(), 422);
    assert!(wrong.text().await.unwrap().contains("start_at_login"));
}
