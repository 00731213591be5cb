//! The OS keyring (Secret Service on Linux and the BSDs, the macOS Keychain, the Windows
//! Credential Manager) as the key store uses it: whether a service answers and why not,
//! the entry of an account, and reading, writing and deleting its secret with errors said
//! in words.
//!
//! What this module must not do: put a key or a secret in an error or a log line, or treat
//! the `keyring` crate's mock store as a keyring.

use std::path::PathBuf;

use alloy::signers::local::PrivateKeySigner;
use zeroize::{Zeroize as _, Zeroizing};

use super::{KEYRING_SERVICE, KeyConfig, KeyError, Store, parse_private_key};

/// The keyring this build uses on this OS; `None` where the `keyring` crate falls back to
/// its mock store.
pub(super) fn keyring_backend() -> Option<&'static str> {
    if cfg!(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd")) {
        Some("Secret Service")
    } else if cfg!(target_os = "macos") {
        Some("macOS Keychain")
    } else if cfg!(target_os = "windows") {
        Some("Windows Credential Manager")
    } else {
        None
    }
}

pub(super) enum KeyringState {
    Available { entry: keyring::Entry, backend: &'static str },
    Unavailable(String),
}

/// The keyring entry of `account`, unless this build's keyring is the mock store (which keeps
/// nothing) or the entry cannot be made. Whether the service answers is found by the first
/// call ([`read_entry`]).
pub(super) fn open_keyring(account: &str) -> KeyringState {
    let Some(backend) = keyring_backend() else {
        return KeyringState::Unavailable("this OS has no keyring this build supports".into());
    };
    let entry = match keyring::Entry::new(KEYRING_SERVICE, account) {
        Ok(entry) => entry,
        Err(e) => {
            return KeyringState::Unavailable(format!("the keyring refuses the entry: {}", keyring_error_text(&e)));
        }
    };
    if entry.get_credential().is::<keyring::mock::MockCredential>() {
        return KeyringState::Unavailable("this build's keyring is the mock store, which keeps nothing".into());
    }
    KeyringState::Available { entry, backend }
}

/// The keyring, or [`KeyError::NoKeyring`].
pub(super) fn keyring_required(cfg: &KeyConfig) -> Result<(keyring::Entry, &'static str), KeyError> {
    match open_keyring(&cfg.account) {
        KeyringState::Available { entry, backend } => Ok((entry, backend)),
        KeyringState::Unavailable(reason) => Err(KeyError::NoKeyring(reason)),
    }
}

pub(super) enum KeyringFailure {
    /// No keyring service answers (no session bus, no Secret Service on it, locked).
    Unavailable(String),
    /// It answered, and failed.
    Failed(String),
}

impl KeyringFailure {
    /// The error when the keyring was required.
    pub(super) fn into_required(self) -> KeyError {
        match self {
            KeyringFailure::Unavailable(reason) => KeyError::NoKeyring(reason),
            KeyringFailure::Failed(message) => KeyError::Keyring(message),
        }
    }
}

/// The key in the entry; `None` when there is no entry.
pub(super) fn read_entry(entry: &keyring::Entry, account: &str) -> Result<Option<PrivateKeySigner>, KeyringFailure> {
    let Some(secret) = read_secret(entry, account)? else { return Ok(None) };
    parse_private_key(&secret).map(Some).map_err(|_| {
        KeyringFailure::Failed(format!(
            "the keyring entry {KEYRING_SERVICE}/{account} does not hold a private key; remove it (`paperchain wallet remove`) or fix it"
        ))
    })
}

/// The secret in the entry; `None` when there is no entry.
pub(super) fn read_secret(entry: &keyring::Entry, account: &str) -> Result<Option<Zeroizing<String>>, KeyringFailure> {
    match entry.get_password() {
        Ok(secret) => Ok(Some(Zeroizing::new(secret))),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(keyring::Error::BadEncoding(mut bytes)) => {
            bytes.zeroize();
            Err(KeyringFailure::Failed(format!(
                "the keyring entry {KEYRING_SERVICE}/{account} does not hold a private key (not UTF-8)"
            )))
        }
        Err(keyring::Error::Ambiguous(items)) => Err(KeyringFailure::Failed(format!(
            "{} keyring entries match {KEYRING_SERVICE}/{account}; remove the extra ones (seahorse, secret-tool)",
            items.len()
        ))),
        Err(e @ (keyring::Error::PlatformFailure(_) | keyring::Error::NoStorageAccess(_))) => {
            Err(KeyringFailure::Unavailable(unavailable_reason(&e)))
        }
        Err(e) => Err(KeyringFailure::Failed(keyring_error_text(&e))),
    }
}

/// Deletes the entry; `None` when there was none.
pub(super) fn delete_entry(entry: &keyring::Entry, backend: &'static str) -> Result<Option<Store>, KeyringFailure> {
    match entry.delete_credential() {
        Ok(()) => Ok(Some(Store::Keyring { backend })),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(keyring::Error::Ambiguous(items)) => Err(KeyringFailure::Failed(format!(
            "{} keyring entries match; remove them with seahorse or secret-tool",
            items.len()
        ))),
        Err(e @ (keyring::Error::PlatformFailure(_) | keyring::Error::NoStorageAccess(_))) => {
            Err(KeyringFailure::Unavailable(unavailable_reason(&e)))
        }
        Err(e) => Err(KeyringFailure::Failed(keyring_error_text(&e))),
    }
}

pub(super) fn entry_name(cfg: &KeyConfig) -> String {
    format!("{KEYRING_SERVICE}/{}", cfg.account)
}

/// A keyring error and its causes as one line. Safe to show: `BadEncoding`'s bytes are
/// never printed by its `Display`, and no other variant carries a secret.
pub(super) fn keyring_error_text(e: &keyring::Error) -> String {
    if let keyring::Error::BadEncoding(_) = e {
        return "the entry is not UTF-8".into();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Why the keyring does not answer, in words a user can act on.
fn unavailable_reason(e: &keyring::Error) -> String {
    let detail = keyring_error_text(e);
    if cfg!(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd")) {
        let bus = std::env::var("DBUS_SESSION_BUS_ADDRESS").ok().filter(|a| !a.is_empty());
        if bus.is_none() && !default_session_socket().is_some_and(|socket| socket.exists()) {
            return "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus is not there)"
                .into();
        }
        if let Some(path) = bus.as_deref().and_then(unix_socket_path)
            && !path.exists()
        {
            return format!(
                "no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS names {}, which is not there",
                path.display()
            );
        }
        if detail.contains("ServiceUnknown")
            || detail.contains("not provided by any .service files")
            || detail.contains("no secret service provider")
        {
            return "no Secret Service on the D-Bus session bus (nothing provides org.freedesktop.secrets)".into();
        }
        if let keyring::Error::NoStorageAccess(_) = e {
            return format!("the Secret Service is locked and was not unlocked ({detail})");
        }
        return format!("the Secret Service does not answer: {detail}");
    }
    if let keyring::Error::NoStorageAccess(_) = e {
        return format!("the keyring is locked or access was refused ({detail})");
    }
    format!("the keyring does not answer: {detail}")
}

/// Where zbus looks for the session bus when `DBUS_SESSION_BUS_ADDRESS` is not set:
/// `$XDG_RUNTIME_DIR/bus`, else `/run/user/<uid>/bus`.
fn default_session_socket() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR") {
        return Some(PathBuf::from(dir).join("bus"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        // The effective uid, as the owner of this process's /proc entry (Linux).
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        Some(PathBuf::from(format!("/run/user/{uid}/bus")))
    }
    #[cfg(not(unix))]
    None
}

/// The socket path of a `unix:path=…` D-Bus address (the first one of a list).
fn unix_socket_path(address: &str) -> Option<PathBuf> {
    let first = address.split(';').next()?;
    let params = first.strip_prefix("unix:")?;
    params.split(',').find_map(|kv| kv.strip_prefix("path=")).map(PathBuf::from)
}
