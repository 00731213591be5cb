//! What the app's page asks of the desktop (`/app/api/desktop`): the system's save dialog
//! for a result, and the login item that starts the app, in the tray, when the user logs in.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use paperchain_gateway::app::{Desktop, DesktopFuture};
use tauri::{AppHandle, Manager as _};
use tauri_plugin_dialog::DialogExt as _;

/// The argument a login item starts the app with: tray only, no window.
pub const HIDDEN: &str = "--hidden";

/// The title of the save dialog (tests find the dialog by it).
pub const SAVE_TITLE: &str = "Save a result";

/// The desktop side, usable once the app is built (`handle` is set in its setup).
pub struct AppDesktop {
    pub handle: Arc<OnceLock<AppHandle>>,
    pub login: LoginItem,
}

impl Desktop for AppDesktop {
    fn save(&self, name: String, bytes: bytes::Bytes) -> DesktopFuture<Option<PathBuf>> {
        let handle = self.handle.get().cloned();
        Box::pin(async move {
            let app = handle.ok_or("the app is still starting")?;
            let (answer, answered) = tokio::sync::oneshot::channel();
            let mut dialog = app.dialog().file().set_title(SAVE_TITLE).set_file_name(&name);
            if let Ok(folder) = app.path().download_dir() {
                dialog = dialog.set_directory(folder);
            }
            if let Some(window) = app.get_webview_window("main") {
                dialog = dialog.set_parent(&window);
            }
            dialog.save_file(move |path| {
                let _ = answer.send(path);
            });
            let Some(path) = answered.await.map_err(|_| "the save dialog closed without an answer")? else {
                return Ok(None);
            };
            let path = path.into_path().map_err(|e| format!("the chosen place is not a file on this machine: {e}"))?;
            tokio::task::spawn_blocking(move || {
                // Written beside it, then renamed: never a half-written file at that path.
                paperchain_wallet::config_edit::write_atomically(&path, &bytes)
                    .map(|()| Some(path.clone()))
                    .map_err(|e| format!("writing {}: {e}", path.display()))
            })
            .await
            .map_err(|_| "writing the file failed".to_string())?
        })
    }

    fn starts_at_login(&self) -> Result<bool, String> {
        Ok(self.login.file.as_deref().is_some_and(Path::exists))
    }

    fn set_start_at_login(&self, on: bool) -> Result<(), String> {
        self.login.set(on)
    }
}

/// The login item: an XDG autostart entry on Linux, a launchd agent on macOS.
pub struct LoginItem {
    /// Where it is written; `None` where the app cannot start itself at login yet.
    pub file: Option<PathBuf>,
    /// The app's own program.
    pub executable: PathBuf,
}

impl LoginItem {
    /// The login item of this program on this system.
    pub fn of_this_program() -> LoginItem {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = env("HOME");
        let file = if cfg!(target_os = "macos") {
            home.map(|h| h.join("Library/LaunchAgents/dev.paperchain.desktop.plist"))
        } else if cfg!(windows) {
            None
        } else {
            env("XDG_CONFIG_HOME")
                .or_else(|| home.map(|h| h.join(".config")))
                .map(|d| d.join("autostart/paperchain.desktop"))
        };
        let executable = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("paperchain-app"));
        LoginItem { file, executable }
    }

    fn set(&self, on: bool) -> Result<(), String> {
        let file = self.file.as_ref().ok_or("starting at login is not supported on this system yet")?;
        if !on {
            return match std::fs::remove_file(file) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("removing {}: {e}", file.display())),
                _ => Ok(()),
            };
        }
        let text = if cfg!(target_os = "macos") { self.launch_agent() } else { self.autostart_entry() };
        paperchain_wallet::config_edit::write_atomically(file, text.as_bytes())
            .map_err(|e| format!("writing {}: {e}", file.display()))
    }

    /// A Desktop Entry (freedesktop.org Desktop Entry and Autostart specifications).
    fn autostart_entry(&self) -> String {
        format!(
            "[Desktop Entry]\nType=Application\nName=Paperchain\n\
             Comment=Chain reads and document operations on this machine, for you and your agents\n\
             Exec={} {HIDDEN}\nTerminal=false\nX-GNOME-Autostart-enabled=true\n",
            exec_argument(&self.executable.to_string_lossy())
        )
    }

    fn launch_agent(&self) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
             <plist version=\"1.0\">\n<dict>\n\
             \t<key>Label</key>\n\t<string>dev.paperchain.desktop</string>\n\
             \t<key>ProgramArguments</key>\n\t<array>\n\t\t<string>{}</string>\n\t\t<string>{HIDDEN}</string>\n\t</array>\n\
             \t<key>RunAtLoad</key>\n\t<true/>\n</dict>\n</plist>\n",
            as_text(&self.executable.to_string_lossy())
        )
    }
}

/// `text` as plain text inside markup: a plist's strings, a notification's body
/// (freedesktop notification servers read a little HTML there: links, images, bold).
pub fn as_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// One argument of a Desktop Entry's `Exec` line: quoted when it has a space or a
/// reserved character, with `"`, `` ` ``, `$` and `\` escaped inside, and `%` doubled.
fn exec_argument(arg: &str) -> String {
    let arg = arg.replace('%', "%%");
    let reserved = |c: char| " \t\n\"'\\><~|&;$*?#()`".contains(c);
    if !arg.contains(reserved) {
        return arg;
    }
    let mut quoted = String::from("\"");
    for c in arg.chars() {
        if matches!(c, '"' | '`' | '$' | '\\') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_arguments_are_quoted_as_the_desktop_entry_specification_says() {
        assert_eq!(exec_argument("/usr/bin/paperchain-app"), "/usr/bin/paperchain-app");
        assert_eq!(exec_argument("/opt/My Apps/paperchain-app"), "\"/opt/My Apps/paperchain-app\"");
        assert_eq!(exec_argument("/opt/a$b\"c/x"), "\"/opt/a\\$b\\\"c/x\"");
        assert_eq!(exec_argument("/opt/100%/x"), "/opt/100%%/x");
    }

    #[test]
    fn a_callers_name_is_text_in_a_notification() {
        assert_eq!(as_text("<a href=\"https://x\">ok</a> & co"), "&lt;a href=\"https://x\"&gt;ok&lt;/a&gt; &amp; co");
        assert_eq!(as_text("Claude Desktop"), "Claude Desktop");
    }

    #[test]
    fn the_login_item_is_written_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("autostart/paperchain.desktop");
        let item = LoginItem { file: Some(file.clone()), executable: PathBuf::from("/opt/Paper chain/paperchain-app") };
        item.set(true).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
        assert!(text.contains("\nExec=\"/opt/Paper chain/paperchain-app\" --hidden\n"), "{text}");
        item.set(false).unwrap();
        assert!(!file.exists());
        // Already off: nothing to do, no error.
        item.set(false).unwrap();
        let unsupported = LoginItem { file: None, executable: PathBuf::from("x") };
        assert!(unsupported.set(true).unwrap_err().contains("not supported"));
    }
}
