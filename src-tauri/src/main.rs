//! The Paperchain desktop app: the local server in this process (or the one already
//! running for this user's data folder), its app at `/app/` in a window, and a tray icon.
//! Closing the window keeps the server serving the user's agents; "Quit" in the tray
//! stops it.
//!
//! Must not: hold route, payment or UI logic. The server is `paperchain-server`'s, the
//! screens are `ui/`'s, served by the server and shown here as any browser would.

#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod desktop;

/// Every allocation counted, and charged to the call it is made for (a call's memory budget:
/// `paperchain_engine::memory`).
#[global_allocator]
static ALLOCATOR: paperchain_engine::memory::Counting = paperchain_engine::memory::Counting;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use anyhow::Context as _;
use paperchain_server::instance::{self, Instance};
use paperchain_server::{Options, Server};
use paperchain_wallet::approvals::ApprovalQueue;
use paperchain_wallet::client::{Overrides, PayingClient};
use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager as _, RunEvent, WebviewUrl, WebviewWindowBuilder, WindowEvent};
use tauri_plugin_notification::NotificationExt as _;

/// The server the window shows: this process's, or the one already running.
enum Backend {
    /// This process's server, and the payments waiting for the user's approval there.
    Own(Box<Server>, Arc<ApprovalQueue>),
    Running(Instance),
}

impl Backend {
    fn base_url(&self) -> String {
        match self {
            Backend::Own(server, _) => server.base_url().to_string(),
            Backend::Running(instance) => instance.base_url.clone(),
        }
    }
}

/// Starts the local server for `data_dir`, unless one already serves it.
async fn start_backend(data_dir: &Path, desktop: desktop::AppDesktop) -> anyhow::Result<Backend> {
    let runtime = instance::runtime_dir(data_dir);
    if let Some(running) = instance::find(&runtime, data_dir) {
        tracing::info!(url = %running.base_url, pid = running.pid, "using the running local server");
        return Ok(Backend::Running(running));
    }
    // The same settings `paperchain serve` reads from the environment.
    let http = paperchain_server::local_config_from_env(data_dir.to_path_buf())?;
    let ctx = paperchain_engine::Context::try_new()?;
    // Payments above policy.approve_above wait for the user in the window.
    let approvals = Arc::new(ApprovalQueue::new(paperchain_server::approval_wait_from_env()?));
    let client = PayingClient::for_user(data_dir, ctx.chains.clone(), approvals.clone(), Overrides::default()).await?;
    let options = Options {
        ctx: Some(ctx),
        client: Some(Arc::new(client)),
        approvals: Some(approvals.clone()),
        desktop: Some(Arc::new(desktop)),
        ..Options::local(http)
    };
    match paperchain_server::start(options).await {
        Ok(server) => Ok(Backend::Own(Box::new(server), approvals)),
        // Started by another process a moment ago: use it.
        Err(e) if e.running().is_some() => Ok(Backend::Running(e.running().cloned().context("a running server")?)),
        Err(e) => Err(e.into()),
    }
}

/// Tells the user of each payment that starts waiting for approval: a notification, and
/// the window (where the approval dialog is) brought forward.
async fn announce_approvals(app: AppHandle, approvals: Arc<ApprovalQueue>) {
    let mut announced = BTreeSet::new();
    loop {
        // Woken when one is added; the look each second also catches one added between two looks.
        tokio::select! {
            () = approvals.added() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        let waiting = approvals.waiting();
        announced.retain(|id| waiting.iter().any(|w| w.id == *id));
        for w in &waiting {
            if !announced.insert(w.id) {
                continue;
            }
            // The client's name is whatever the caller sent: text, never the markup
            // notification servers read in a body.
            let who = desktop::as_text(w.client.as_deref().unwrap_or("A client"));
            let body = format!(
                "{who} asks to pay ${} for {} on {}. Approve or deny it in Paperchain.",
                desktop::as_text(&w.dollars),
                desktop::as_text(&w.route),
                desktop::as_text(&w.host)
            );
            if let Err(e) = app.notification().builder().title("A payment waits for your approval").body(&body).show() {
                tracing::warn!("showing a notification: {e}");
            }
            show_main_window(&app);
        }
    }
}

/// Shows, restores and focuses the window in one turn of the main loop: asked from another
/// thread, each step would be a message of its own, and a close handled between `show` and
/// `set_focus` (which presents the window again) would leave a window the user just closed
/// on the screen.
fn show_main_window(app: &tauri::AppHandle) {
    let handle = app.clone();
    let shown = app.run_on_main_thread(move || {
        if let Some(window) = handle.get_webview_window("main") {
            let _ = window.show();
            let _ = window.unminimize();
            let _ = window.set_focus();
        }
    });
    if let Err(e) = shown {
        tracing::warn!("showing the window: {e}");
    }
}

fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("PAPERCHAIN_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,lopdf=off")),
        )
        .init();
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<()> {
    // Started at login: the tray only, until the user opens the window.
    let hidden = std::env::args().skip(1).any(|a| a == desktop::HIDDEN);
    let data_dir = paperchain_engine::data_dir();
    let handle = Arc::new(OnceLock::new());
    let desktop = desktop::AppDesktop { handle: handle.clone(), login: desktop::LoginItem::of_this_program() };
    // On the app's async runtime, which keeps running the server's tasks afterwards.
    let backend = tauri::async_runtime::block_on(start_backend(&data_dir, desktop))?;
    let app_url: tauri::Url = format!("{}/app/", backend.base_url()).parse().context("the server's address")?;
    let approvals = match &backend {
        Backend::Own(_, approvals) => Some(approvals.clone()),
        Backend::Running(_) => None,
    };
    let backend = Arc::new(Mutex::new(Some(backend)));
    let app = tauri::Builder::default()
        // One app per data folder: a second launch shows this one's window and ends (one
        // started at login, with the app already running, only ends).
        .plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(format!("dev.paperchain.desktop.d{}", instance::key(&data_dir)))
                .callback(|app, args, _cwd| {
                    if !args.iter().skip(1).any(|a| a == desktop::HIDDEN) {
                        show_main_window(app);
                    }
                })
                .build(),
        )
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .setup(move |app| {
            let _ = handle.set(app.handle().clone());
            WebviewWindowBuilder::new(app, "main", WebviewUrl::External(app_url.clone()))
                .title("Paperchain")
                .inner_size(1200.0, 860.0)
                .min_inner_size(760.0, 560.0)
                .visible(!hidden)
                .build()?;
            if let Some(approvals) = approvals.clone() {
                tauri::async_runtime::spawn(announce_approvals(app.handle().clone(), approvals));
            }
            let open = MenuItem::with_id(app, "open", "Open Paperchain", true, None::<&str>)?;
            let quit = MenuItem::with_id(app, "quit", "Quit Paperchain", true, None::<&str>)?;
            let menu = Menu::with_items(app, &[&open, &quit])?;
            let mut tray =
                TrayIconBuilder::with_id("main").tooltip("Paperchain").menu(&menu).on_menu_event(|app, event| {
                    match event.id().as_ref() {
                        "open" => show_main_window(app),
                        "quit" => app.exit(0),
                        _ => {}
                    }
                });
            if let Some(icon) = app.default_window_icon() {
                tray = tray.icon(icon.clone());
            }
            tray.build(app)?;
            Ok(())
        })
        .on_window_event(|window, event| {
            // Closing the window hides it: the server keeps serving the user's agents.
            if let WindowEvent::CloseRequested { api, .. } = event {
                api.prevent_close();
                let _ = window.hide();
            }
        })
        .build(tauri::generate_context!())
        .context("starting the window")?;
    app.run(move |_, event| {
        if let RunEvent::Exit = event {
            let own = backend.lock().ok().and_then(|mut b| b.take());
            if let Some(Backend::Own(server, _)) = own {
                // Calls in flight finish; the address file and the lock go.
                let _ = tauri::async_runtime::block_on(server.stop());
            }
        }
    });
    Ok(())
}
