//! `paperchain service install | uninstall | start | stop | status`: `paperchain serve` as
//! the user's background service, a systemd user unit on Linux and a launchd agent on
//! macOS, started at login.
//!
//! The service serves the same folders as the shell that installed it: the `PAPERCHAIN_*`
//! and `XDG_*` folder variables set at install time go in an environment file beside the
//! configuration (`service.env`, this user only), never a password or a secret.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use clap::Subcommand;

/// The systemd unit's name, and the launchd agent's label.
const UNIT: &str = "paperchain.service";
const LABEL: &str = "dev.paperchain.serve";

#[derive(clap::Args)]
pub struct ServiceArgs {
    #[command(subcommand)]
    command: ServiceCommand,
}

#[derive(Subcommand)]
enum ServiceCommand {
    /// Write the service (systemd user unit, or launchd agent), enable it at login and
    /// start it.
    Install {
        /// Address the service listens on.
        #[arg(long, default_value = "127.0.0.1:8402")]
        listen: SocketAddr,
        /// Write and enable it, but do not start it now.
        #[arg(long)]
        no_start: bool,
    },
    /// Stop the service, disable it and remove its files.
    Uninstall,
    /// Start the installed service.
    Start,
    /// Stop the service (it starts again at the next login).
    Stop,
    /// Whether the service is installed, enabled and running, and where the local server is.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The environment variables the service inherits from the installing shell: the folders
/// and settings, never a password or a secret (those stay in the keyring or their files).
pub fn inherited_environment(vars: impl Iterator<Item = (String, String)>) -> Vec<(String, String)> {
    let mut kept: Vec<(String, String)> = vars
        .filter(|(name, value)| {
            let setting = name.starts_with("PAPERCHAIN_")
                && !["PASSWORD", "SECRET", "TOKEN", "TEST", "LISTEN"].iter().any(|word| name.contains(word));
            let folder = matches!(name.as_str(), "XDG_DATA_HOME" | "XDG_CONFIG_HOME");
            (setting || folder) && !value.is_empty() && !value.contains(['\n', '\r', '\0'])
        })
        .collect();
    kept.sort();
    kept
}

/// A value in double quotes as systemd's environment files and unit lines read it.
fn systemd_quote(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            // A `$` would be expanded in ExecStart; `%` is a unit specifier.
            '$' => out.push_str("$$"),
            '%' => out.push_str("%%"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The systemd user unit running `exe serve --listen listen`.
pub fn systemd_unit(exe: &Path, listen: SocketAddr, env_file: &Path) -> String {
    format!(
        "[Unit]\n\
         Description=Paperchain: chain reads and document operations on this machine\n\
         Documentation=https://github.com/paperchain/paperchain\n\
         \n\
         [Service]\n\
         Type=simple\n\
         EnvironmentFile=-{env}\n\
         ExecStart={exe} serve --listen {listen}\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         # A clean stop lets calls in flight finish.\n\
         KillSignal=SIGINT\n\
         TimeoutStopSec=150\n\
         NoNewPrivileges=yes\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
        env = env_file.display(),
        exe = systemd_quote(&exe.display().to_string()),
    )
}

/// The environment file's text.
pub fn environment_file(vars: &[(String, String)]) -> String {
    let mut text =
        String::from("# Written by `paperchain service install`: the settings of the shell that installed it.\n");
    for (name, value) in vars {
        let _ = writeln!(text, "{name}={}", systemd_quote(value).replace("$$", "$").replace("%%", "%"));
    }
    text
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The launchd agent running `exe serve --listen listen` at login, its log in `log`.
pub fn launchd_plist(exe: &Path, listen: SocketAddr, vars: &[(String, String)], log: &Path) -> String {
    let string = |s: &str| format!("<string>{}</string>", xml_escape(s));
    let mut env = String::new();
    for (name, value) in vars {
        let _ = write!(env, "\n    <key>{}</key>{}", xml_escape(name), string(value));
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n\
         \x20 <key>Label</key>{label}\n\
         \x20 <key>ProgramArguments</key>\n  <array>{exe}{serve}{flag}{listen}</array>\n\
         \x20 <key>EnvironmentVariables</key>\n  <dict>{env}\n  </dict>\n\
         \x20 <key>RunAtLoad</key><true/>\n\
         \x20 <key>KeepAlive</key>\n  <dict><key>SuccessfulExit</key><false/></dict>\n\
         \x20 <key>StandardOutPath</key>{log}\n\
         \x20 <key>StandardErrorPath</key>{log}\n\
         </dict>\n</plist>\n",
        label = string(LABEL),
        exe = string(&exe.display().to_string()),
        serve = string("serve"),
        flag = string("--listen"),
        listen = string(&listen.to_string()),
        log = string(&log.display().to_string()),
    )
}

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).context("HOME is not set")
}

/// Where the service's files go on this system.
struct Files {
    /// The unit or the agent.
    service: PathBuf,
    /// The environment file (systemd only; launchd keeps it in the agent).
    env: Option<PathBuf>,
}

fn files() -> anyhow::Result<Files> {
    if cfg!(target_os = "macos") {
        return Ok(Files { service: home()?.join("Library/LaunchAgents").join(format!("{LABEL}.plist")), env: None });
    }
    let config = match std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => home()?.join(".config"),
    };
    Ok(Files {
        service: config.join("systemd/user").join(UNIT),
        env: Some(paperchain_wallet::config::config_dir().join("service.env")),
    })
}

/// Writes `text` to `path` whole (a partial file renamed into place), readable by this
/// user only.
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().context("a file without a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let partial = path.with_extension("partial");
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(true).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&partial).with_context(|| format!("writing {}", partial.display()))?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&partial, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Runs the service manager; `Err` carries what it said.
fn manager(args: &[&str]) -> Result<String, String> {
    let (program, args): (&str, Vec<&str>) = match cfg!(target_os = "macos") {
        true => ("launchctl", args.to_vec()),
        false => ("systemctl", [&["--user"][..], args].concat()),
    };
    match Command::new(program).args(&args).output() {
        Ok(out) if out.status.success() => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
        Ok(out) => {
            let said = [out.stderr, out.stdout].concat();
            Err(format!("`{program} {}`: {}", args.join(" "), String::from_utf8_lossy(&said).trim()))
        }
        Err(e) => Err(format!("`{program}`: {e}")),
    }
}

/// What `systemctl --user is-enabled|is-active` says of the unit (it exits non-zero for
/// "disabled" and "inactive", which are answers, not failures).
fn unit_state(question: &str) -> String {
    match Command::new("systemctl").args(["--user", question, UNIT]).output() {
        Ok(out) if !out.stdout.trim_ascii().is_empty() => String::from_utf8_lossy(out.stdout.trim_ascii()).into_owned(),
        Ok(out) => format!("unknown ({})", String::from_utf8_lossy(out.stderr.trim_ascii())),
        Err(e) => format!("unknown (systemctl: {e})"),
    }
}

/// launchd's domain of this user's session: `gui/<uid>` (the owner of the home folder).
fn launchd_domain() -> String {
    use std::os::unix::fs::MetadataExt as _;
    let uid = home().and_then(|h| Ok(std::fs::metadata(h)?.uid())).unwrap_or(0);
    format!("gui/{uid}")
}

pub fn run(args: ServiceArgs, data_dir: &Path) -> anyhow::Result<()> {
    let files = files()?;
    let macos = cfg!(target_os = "macos");
    match args.command {
        ServiceCommand::Install { listen, no_start } => {
            let exe = std::env::current_exe().context("finding this program's path")?;
            let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
            let vars = inherited_environment(std::env::vars());
            if macos {
                let log = home()?.join("Library/Logs/paperchain.log");
                write_private(&files.service, &launchd_plist(&exe, listen, &vars, &log))?;
            } else {
                let env = files.env.as_deref().context("no environment file")?;
                write_private(env, &environment_file(&vars))?;
                write_private(&files.service, &systemd_unit(&exe, listen, env))?;
            }
            println!("wrote {}", files.service.display());
            if let Some(env) = &files.env {
                println!("wrote {} ({} settings of this shell)", env.display(), vars.len());
            }
            let started = match (macos, no_start) {
                (true, true) => Ok(String::new()),
                (true, false) => manager(&["bootstrap", &launchd_domain(), &files.service.display().to_string()]),
                (false, no_start) => manager(&["daemon-reload"]).and_then(|_| match no_start {
                    true => manager(&["enable", UNIT]),
                    false => manager(&["enable", "--now", UNIT]),
                }),
            };
            match started {
                Ok(_) if no_start => println!("enabled at login; start it with `paperchain service start`"),
                Ok(_) => println!("started; it serves http://{listen} and starts again at each login"),
                Err(e) => anyhow::bail!(
                    "the service is written but the service manager refused it: {e}\n\
                     (on a machine without a user session manager, run `paperchain serve` instead)"
                ),
            }
            Ok(())
        }
        ServiceCommand::Uninstall => {
            if !files.service.exists() {
                println!("not installed ({} does not exist)", files.service.display());
                return Ok(());
            }
            // Stopping may fail when the manager never loaded it; the files go regardless.
            let stopped = match macos {
                true => manager(&["bootout", &format!("{}/{LABEL}", launchd_domain())]),
                false => manager(&["disable", "--now", UNIT]),
            };
            if let Err(e) = stopped {
                eprintln!("note: {e}");
            }
            std::fs::remove_file(&files.service).with_context(|| format!("removing {}", files.service.display()))?;
            if let Some(env) = &files.env {
                let _ = std::fs::remove_file(env);
            }
            if !macos {
                let _ = manager(&["daemon-reload"]);
            }
            println!("removed {}", files.service.display());
            Ok(())
        }
        ServiceCommand::Start | ServiceCommand::Stop => {
            anyhow::ensure!(
                files.service.exists(),
                "the service is not installed ({} does not exist); `paperchain service install` first",
                files.service.display()
            );
            let start = matches!(args.command, ServiceCommand::Start);
            let target = format!("{}/{LABEL}", launchd_domain());
            let result = match (macos, start) {
                (true, true) => manager(&["kickstart", &target]),
                (true, false) => manager(&["kill", "SIGINT", &target]),
                (false, true) => manager(&["start", UNIT]),
                (false, false) => manager(&["stop", UNIT]),
            };
            result.map_err(|e| anyhow::anyhow!(e))?;
            println!("{}", if start { "started" } else { "stopped" });
            Ok(())
        }
        ServiceCommand::Status { json } => {
            let installed = files.service.exists();
            let (enabled, active) = match (installed, macos) {
                (false, _) => (None, None),
                (true, true) => {
                    let loaded = manager(&["print", &format!("{}/{LABEL}", launchd_domain())]).is_ok();
                    (Some(loaded.to_string()), Some(loaded.to_string()))
                }
                (true, false) => (Some(unit_state("is-enabled")), Some(unit_state("is-active"))),
            };
            let runtime = paperchain_server::instance::runtime_dir(data_dir);
            let running = paperchain_server::instance::find(&runtime, data_dir);
            if json {
                let status = serde_json::json!({
                    "installed": installed, "file": files.service, "enabled": enabled, "active": active,
                    "data_dir": data_dir, "server": running,
                });
                println!("{}", serde_json::to_string_pretty(&status)?);
                return Ok(());
            }
            match installed {
                true => println!("service: installed ({})", files.service.display()),
                false => println!("service: not installed"),
            }
            if let (Some(enabled), Some(active)) = (enabled, active) {
                println!("enabled: {enabled}\nactive: {active}");
            }
            match running {
                Some(server) => println!(
                    "server: {} (process {}, version {}) serves {}",
                    server.base_url,
                    server.pid,
                    server.version,
                    server.data_dir.display()
                ),
                None => println!("server: none serves {}", data_dir.display()),
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_settings_and_folders_are_inherited_never_secrets() {
        let vars = [
            ("PAPERCHAIN_RPC_BASE", "https://rpc.example/key"),
            ("PAPERCHAIN_WALLET_PASSWORD", "hunter2"),
            ("PAPERCHAIN_MPP_SECRET", "s"),
            ("PAPERCHAIN_LISTEN", "0.0.0.0:1"),
            ("PAPERCHAIN_DATA_DIR", "/data"),
            ("PAPERCHAIN_CHAINS", "a\nb"),
            ("XDG_CONFIG_HOME", "/cfg"),
            ("PATH", "/bin"),
        ];
        let kept = inherited_environment(vars.iter().map(|(n, v)| (n.to_string(), v.to_string())));
        let names: Vec<_> = kept.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["PAPERCHAIN_DATA_DIR", "PAPERCHAIN_RPC_BASE", "XDG_CONFIG_HOME"]);
    }

    #[test]
    fn quoting_keeps_values_whole() {
        assert_eq!(systemd_quote(r#"/a b/"c"\$HOME%i"#), r#""/a b/\"c\"\\$$HOME%%i""#);
        let text = environment_file(&[("PAPERCHAIN_RPC_BASE".into(), "https://x/?a=1&b=$2".into())]);
        assert!(text.ends_with("PAPERCHAIN_RPC_BASE=\"https://x/?a=1&b=$2\"\n"), "{text}");
    }
}
