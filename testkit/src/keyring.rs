//! A real Secret Service for the keyring tests, and sessions without one (std only).
//!
//! [`SecretService::start`] makes a temporary home, starts a private D-Bus session bus on a
//! socket inside it (`dbus-daemon` with a configuration of its own: no service activation,
//! so nothing else is started behind the test's back) and an unlocked `gnome-keyring-daemon
//! --components=secrets` on that bus, its keyring files under the temporary home. Dropping it
//! kills both daemons and removes the folder.
//!
//! [`NoSecretService::empty_bus`] is a session bus on which nothing provides
//! `org.freedesktop.secrets`; [`NoSecretService::no_bus`] points `DBUS_SESSION_BUS_ADDRESS` at
//! a socket that is not there.
//!
//! The environment is the child processes' only: [`Session::apply`] sets `HOME`, the XDG
//! folders and `DBUS_SESSION_BUS_ADDRESS` on a [`Command`]; the test process's own
//! environment is never changed (no `set_var` in a multi-threaded test).
//!
//! The programs come from Debian packages `cargo xtask setup` installs (`dbus-daemon`,
//! `dbus-bin`, `gnome-keyring`, `libsecret-tools`); without them these functions panic
//! saying so: a keyring test fails, never skips.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{BufRead as _, BufReader, Write as _};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long the bus and gnome-keyring may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The password gnome-keyring's login keyring is created and unlocked with.
pub const KEYRING_PASSWORD: &str = "paperchain-test-keyring";

/// The Secret Service's well-known bus name.
pub const SECRETS_BUS_NAME: &str = "org.freedesktop.secrets";

/// A temporary folder and the environment a child process gets in it (a home, XDG folders,
/// a D-Bus address); removed when dropped, after the daemons that use it.
pub struct Session {
    root: PathBuf,
    bus_address: String,
}

impl Session {
    /// A new temporary folder; the bus address is set by the caller.
    fn create() -> Session {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let name =
            format!("paperchain-keyring-{}-{}-{nanos:x}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        // /tmp rather than a long $TMPDIR: the bus socket's path must fit a sockaddr_un.
        let base = if Path::new("/tmp").is_dir() { PathBuf::from("/tmp") } else { std::env::temp_dir() };
        let root = base.join(name);
        for dir in ["home/.local/share", "home/.config", "home/.cache", "run", "log"] {
            create_private_dir(&root.join(dir))
                .unwrap_or_else(|e| panic!("creating {}: {e}", root.join(dir).display()));
        }
        Session { root, bus_address: String::new() }
    }

    /// The temporary home (`HOME`; `XDG_DATA_HOME` is its `.local/share`, where gnome-keyring
    /// keeps its keyrings).
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    /// The whole temporary folder: the home, the runtime folder (`XDG_RUNTIME_DIR`, the bus
    /// socket) and the daemons' logs.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `DBUS_SESSION_BUS_ADDRESS` the children get.
    pub fn bus_address(&self) -> &str {
        &self.bus_address
    }

    /// The environment a child gets: `HOME`, `XDG_DATA_HOME`, `XDG_CONFIG_HOME`,
    /// `XDG_CACHE_HOME`, `XDG_RUNTIME_DIR`, `DBUS_SESSION_BUS_ADDRESS`.
    pub fn envs(&self) -> Vec<(&'static str, OsString)> {
        let home = self.home();
        vec![
            ("HOME", home.clone().into()),
            ("XDG_DATA_HOME", home.join(".local/share").into()),
            ("XDG_CONFIG_HOME", home.join(".config").into()),
            ("XDG_CACHE_HOME", home.join(".cache").into()),
            ("XDG_RUNTIME_DIR", self.root.join("run").into()),
            ("DBUS_SESSION_BUS_ADDRESS", self.bus_address.clone().into()),
        ]
    }

    /// Sets [`Session::envs`] on `command`, and removes what would lead it to another
    /// session's keyring or prompter (`DISPLAY`, `WAYLAND_DISPLAY`, `GNOME_KEYRING_CONTROL`…).
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        for key in ["DISPLAY", "WAYLAND_DISPLAY", "GNOME_KEYRING_CONTROL", "SSH_AUTH_SOCK", "XDG_SESSION_ID"] {
            command.env_remove(key);
        }
        command.envs(self.envs())
    }

    /// `program` with [`Session::apply`]'s environment.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut command = Command::new(program);
        self.apply(&mut command);
        command
    }

    /// What the daemons wrote to their logs, for a failure message.
    fn logs(&self) -> String {
        let mut text = String::new();
        for name in ["dbus-daemon.log", "gnome-keyring.log"] {
            if let Ok(log) = std::fs::read_to_string(self.root.join("log").join(name))
                && !log.trim().is_empty()
            {
                text.push_str(&format!("\n--- {name}:\n{}", log.trim_end()));
            }
        }
        text
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A private D-Bus session bus, killed when dropped.
struct SessionBus {
    child: Child,
}

impl SessionBus {
    /// Starts `dbus-daemon` listening on `<root>/run/bus`; its address.
    fn start(session_root: &Path) -> Result<(SessionBus, String), String> {
        let socket = session_root.join("run/bus");
        let config = session_root.join("bus.conf");
        // A session bus with no <servicedir>: nothing is activated on demand (in particular no
        // gnome-keyring from /usr/share/dbus-1/services when a test wants none).
        let text = format!(
            r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
            socket.display()
        );
        std::fs::write(&config, text).map_err(|e| format!("writing {}: {e}", config.display()))?;
        let log = log_file(session_root, "dbus-daemon.log")?;
        let mut child = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nopidfile", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| missing("dbus-daemon", "dbus-daemon", &e))?;
        // It prints its address once it listens. Read on a thread so a silent daemon times out.
        let stdout = child.stdout.take().expect("dbus-daemon's stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut bus = SessionBus { child };
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(line) if line.trim().starts_with("unix:") => Ok((bus, line.trim().to_string())),
            Ok(line) => {
                let status = bus.child.try_wait().ok().flatten();
                Err(format!("dbus-daemon printed {line:?} instead of its address (exit: {status:?})"))
            }
            Err(_) => Err(format!("dbus-daemon did not print its address within {} s", START_TIMEOUT.as_secs())),
        }
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running Secret Service: gnome-keyring, unlocked, on a private session bus, with its files
/// in a temporary home. Both daemons are killed and the folder removed when dropped. Use
/// [`Session::apply`] (through `Deref`) to give a child process its environment.
pub struct SecretService {
    keyring: Child,
    _bus: SessionBus,
    // Dropped last: the daemons' folders.
    session: Session,
}

impl SecretService {
    /// Starts it; panics, saying what is missing (`cargo xtask setup` installs it), when it
    /// cannot.
    pub fn start() -> SecretService {
        SecretService::try_start().unwrap_or_else(|e| panic!("cannot start a Secret Service for the test: {e}"))
    }

    /// Starts it, or says why not.
    pub fn try_start() -> Result<SecretService, String> {
        let mut session = Session::create();
        let (bus, address) = SessionBus::start(session.root()).map_err(|e| format!("{e}{}", session.logs()))?;
        session.bus_address = address;
        let log = log_file(session.root(), "gnome-keyring.log")?;
        let log_err = log.try_clone().map_err(|e| format!("opening the log: {e}"))?;
        // --unlock reads the login keyring's password from stdin until EOF, creating that
        // keyring (the default collection) when the home has none.
        let mut keyring = session
            .command("gnome-keyring-daemon")
            .args(["--foreground", "--unlock", "--components=secrets"])
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| missing("gnome-keyring-daemon", "gnome-keyring", &e))?;
        let fed = keyring.stdin.take().expect("stdin is piped").write_all(KEYRING_PASSWORD.as_bytes());
        // stdin is closed here (the handle was taken and dropped): gnome-keyring reads to EOF.
        let mut service = SecretService { keyring, _bus: bus, session };
        fed.map_err(|e| format!("giving gnome-keyring-daemon its password: {e}"))?;
        service.wait_until_on_bus()?;
        Ok(service)
    }

    /// Waits until `org.freedesktop.secrets` has an owner on the bus.
    fn wait_until_on_bus(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.keyring.try_wait() {
                return Err(format!("gnome-keyring-daemon exited ({status}) before it was on the bus{}", self.logs()));
            }
            if name_has_owner(&self.session, SECRETS_BUS_NAME)? {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "gnome-keyring-daemon did not take {SECRETS_BUS_NAME} on the bus within {} s{}",
                    START_TIMEOUT.as_secs(),
                    self.logs()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// gnome-keyring-daemon's process id.
    pub fn keyring_pid(&self) -> u32 {
        self.keyring.id()
    }
}

impl Deref for SecretService {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Drop for SecretService {
    fn drop(&mut self) {
        let _ = self.keyring.kill();
        let _ = self.keyring.wait();
    }
}

/// A session with no Secret Service: a bus with nothing on it, or no bus at all.
pub struct NoSecretService {
    _bus: Option<SessionBus>,
    session: Session,
}

impl NoSecretService {
    /// A private session bus on which nothing provides `org.freedesktop.secrets` (and nothing
    /// is activated). Panics, saying what is missing, when it cannot start.
    pub fn empty_bus() -> NoSecretService {
        let mut session = Session::create();
        let (bus, address) = SessionBus::start(session.root())
            .unwrap_or_else(|e| panic!("cannot start a D-Bus session bus for the test: {e}{}", session.logs()));
        session.bus_address = address;
        assert!(
            !name_has_owner(&session, SECRETS_BUS_NAME).unwrap_or_else(|e| panic!("{e}")),
            "{SECRETS_BUS_NAME} has an owner on a bus that should have none"
        );
        NoSecretService { _bus: Some(bus), session }
    }

    /// `DBUS_SESSION_BUS_ADDRESS` names a socket that is not there (in the temporary folder).
    pub fn no_bus() -> NoSecretService {
        let mut session = Session::create();
        session.bus_address = format!("unix:path={}", session.root().join("run/no-bus-here").display());
        NoSecretService { _bus: None, session }
    }
}

impl Deref for NoSecretService {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

/// Whether `name` has an owner on the session's bus (through `dbus-send`).
fn name_has_owner(session: &Session, name: &str) -> Result<bool, String> {
    let out = session
        .command("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner",
        ])
        .arg(format!("string:{name}"))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| missing("dbus-send", "dbus-bin", &e))?;
    if !out.status.success() {
        return Err(format!(
            "dbus-send NameHasOwner failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).contains("boolean true"))
}

/// Runs `secret-tool` (libsecret's, an independent reader of the keyring) in `session` with
/// `args`; its standard output. Panics, saying how to install it, when it is missing.
pub fn secret_tool(session: &Session, args: &[&str]) -> std::process::Output {
    session
        .command("secret-tool")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}", missing("secret-tool", "libsecret-tools", &e)))
}

fn missing(program: &str, package: &str, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::NotFound {
        format!("{program} is not installed (Debian package {package}); run `cargo xtask setup`")
    } else {
        format!("starting {program}: {e}")
    }
}

fn log_file(session_root: &Path, name: &str) -> Result<File, String> {
    let path = session_root.join("log").join(name);
    File::create(&path).map_err(|e| format!("creating {}: {e}", path.display()))
}

fn create_private_dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(path)
}
