//! Whether the person at hand is the wallet's owner, before what loosens the spend policy is
//! confirmed ([`crate::confirmed`]): the wallet's password where the key is in a keystore
//! file; the OS's own authentication (polkit, through `pkcheck`) where it is in the keyring,
//! which has no password of its own.
//!
//! The password is taken only as the person typed it (a terminal, the app's dialog), never
//! from the environment or a password file a program running as the user could read.

use std::process::{Command, Stdio};

use zeroize::Zeroizing;

use crate::keys::{self, KeyConfig, PasswordSource, Store};

/// How the owner was checked, in words.
pub type Checked = &'static str;

/// Checks the owner: `password` (as typed) against the keystore file, or the OS's
/// authentication for a keyring wallet. Blocking (a keystore's key derivation, polkit).
pub fn check_owner(cfg: &KeyConfig, password: Option<Zeroizing<String>>) -> Result<Checked, String> {
    match keys::status(cfg).store {
        Some(Store::Keystore { path }) => {
            let password = password.filter(|p| !p.is_empty()).ok_or_else(|| {
                format!("the wallet's password is needed to confirm (its key is in {})", path.display())
            })?;
            let mut typed = cfg.clone();
            typed.password = PasswordSource::Given(password);
            keys::load(&typed).map(|_| "the wallet's password").map_err(|e| match e {
                keys::KeyError::Password(_) => "that is not the wallet's password; nothing was confirmed".to_string(),
                other => other.to_string(),
            })
        }
        Some(Store::Keyring { backend }) => os_authentication(backend),
        None => {
            Err("there is no wallet to check you against: create or import one first (paperchain wallet new)".into())
        }
    }
}

/// The polkit action asked for: the one `pkexec` asks for (an administrator's password on
/// most systems), which every polkit installation defines.
const POLKIT_ACTION: &str = "org.freedesktop.policykit.exec";

/// polkit's own authentication of the user at hand (`pkcheck` for this process): the
/// desktop's polkit agent, or at a terminal polkit's text agent (`pkttyagent`) started for
/// this process.
fn os_authentication(backend: &str) -> Result<Checked, String> {
    use std::io::IsTerminal as _;
    let pid = std::process::id().to_string();
    let agent = std::io::stdin()
        .is_terminal()
        .then(|| {
            Command::new("pkttyagent")
                .args(["--process", &pid, "--fallback"])
                .stdin(Stdio::inherit())
                .stdout(Stdio::inherit())
                .stderr(Stdio::inherit())
                .spawn()
                .ok()
        })
        .flatten();
    if agent.is_some() {
        // The agent registers itself on the system bus before it can be asked.
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let status = Command::new("pkcheck")
        .args(["--action-id", POLKIT_ACTION, "--process", &pid, "--allow-user-interaction"])
        .stdin(Stdio::inherit())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status();
    if let Some(mut agent) = agent {
        let _ = agent.kill();
        let _ = agent.wait();
    }
    match status {
        Ok(status) if status.success() => Ok("the system's authentication (polkit)"),
        Ok(status) => Err(format!(
            "the system did not confirm it is you (pkcheck: {}); nothing was confirmed",
            match status.code() {
                Some(1) => "not authorized".to_string(),
                Some(2) => "the authentication was dismissed".to_string(),
                Some(code) => format!("exit code {code}"),
                None => "stopped by a signal".to_string(),
            }
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "nothing here can check it is you: the wallet's key is in the {backend}, which has no password, and this \
             system has no polkit (pkcheck). Keep the wallet in a password-protected keystore file (PAPERCHAIN_WALLET_STORE=keystore), \
             or install polkit"
        )),
        Err(e) => Err(format!("running pkcheck: {e}")),
    }
}
