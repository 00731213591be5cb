//! Files kept in the OS keyring for local calls: a signing identity (a PKCS#12 file and its
//! password) that a call names as `{"keyring": "name"}` instead of sending it. Entry
//! service `paperchain`, user `<account>.file.<name>`, secret a JSON object of the file's
//! bytes (base64), its name and its password.
//!
//! What this module must not do: write a kept file anywhere but the keyring, or show its
//! bytes or password (its `Debug` shows the name and size).

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::os_keyring::{KeyringFailure, KeyringState, delete_entry, keyring_error_text, open_keyring, read_secret};
use super::{ENV_STORE, KEYRING_SERVICE, KeyConfig, KeyError, Store, StoreChoice};

/// The largest file kept (a PKCS#12 file with its chain is a few KiB).
pub const MAX_KEPT_BYTES: usize = 64 * 1024;

/// A file kept in the keyring.
pub struct KeptFile {
    /// The bytes.
    pub bytes: Zeroizing<Vec<u8>>,
    /// The file's name as it was added.
    pub filename: String,
    /// Its password, if it has one.
    pub password: Option<Zeroizing<String>>,
}

impl fmt::Debug for KeptFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeptFile").field("filename", &self.filename).field("bytes", &self.bytes.len()).finish()
    }
}

/// The secret's JSON.
#[derive(Serialize, Deserialize)]
struct Secret {
    data: String,
    filename: String,
    #[serde(default)]
    password: Option<String>,
}

/// Whether `name` may name a kept file: 1 to 64 letters, digits, `-`, `_` and `.`.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
}

fn account(cfg: &KeyConfig, name: &str) -> String {
    format!("{}.file.{name}", cfg.account)
}

fn entry(cfg: &KeyConfig, name: &str) -> Result<(keyring::Entry, &'static str), KeyError> {
    cfg.check()?;
    if !valid_name(name) {
        return Err(KeyError::Config(format!(
            "{name:?} cannot name a kept file: use 1 to 64 letters, digits, '-', '_' and '.'"
        )));
    }
    if cfg.store == StoreChoice::Keystore {
        return Err(KeyError::Config(format!(
            "files are kept in the OS keyring only, and {ENV_STORE}=keystore does not use it"
        )));
    }
    match open_keyring(&account(cfg, name)) {
        KeyringState::Available { entry, backend } => Ok((entry, backend)),
        KeyringState::Unavailable(reason) => Err(KeyError::NoKeyring(reason)),
    }
}

/// Keeps `bytes` (named `filename`, with `password`) as `name`, replacing a file kept under
/// that name when `replace`. Blocking.
pub fn keep_file(
    cfg: &KeyConfig,
    name: &str,
    bytes: &[u8],
    filename: &str,
    password: Option<&str>,
    replace: bool,
) -> Result<Store, KeyError> {
    if bytes.is_empty() || bytes.len() > MAX_KEPT_BYTES {
        return Err(KeyError::Config(format!("a kept file has 1 to {MAX_KEPT_BYTES} bytes, this one {}", bytes.len())));
    }
    let (entry, backend) = entry(cfg, name)?;
    let label = format!("{KEYRING_SERVICE}/{}", account(cfg, name));
    if !replace && read_secret(&entry, &label).map_err(KeyringFailure::into_required)?.is_some() {
        return Err(KeyError::Config(format!("a file is kept as {name:?} already; remove it first or replace it")));
    }
    let secret = Zeroizing::new(
        serde_json::to_string(&Secret {
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
            filename: filename.to_string(),
            password: password.map(str::to_string),
        })
        .expect("a secret serialises"),
    );
    entry
        .set_password(&secret)
        .map_err(|e| KeyError::Keyring(format!("storing {name:?} in {label}: {}", keyring_error_text(&e))))?;
    match load_file(cfg, name)? {
        Some(kept) if kept.bytes.as_slice() == bytes => Ok(Store::Keyring { backend }),
        _ => Err(KeyError::Keyring(format!("the file written to {label} does not read back as written"))),
    }
}

/// The file kept as `name`; `None` when there is none. Blocking.
pub fn load_file(cfg: &KeyConfig, name: &str) -> Result<Option<KeptFile>, KeyError> {
    let (entry, _) = entry(cfg, name)?;
    let label = format!("{KEYRING_SERVICE}/{}", account(cfg, name));
    let Some(secret) = read_secret(&entry, &label).map_err(KeyringFailure::into_required)? else { return Ok(None) };
    let bad = || {
        KeyError::Keyring(format!("the keyring entry {label} does not hold a kept file; remove it and add it again"))
    };
    let parsed: Secret = serde_json::from_str(&secret).map_err(|_| bad())?;
    let bytes = Zeroizing::new(base64::engine::general_purpose::STANDARD.decode(&parsed.data).map_err(|_| bad())?);
    Ok(Some(KeptFile { bytes, filename: parsed.filename, password: parsed.password.map(Zeroizing::new) }))
}

/// Removes the file kept as `name`; `None` when there was none. Blocking.
pub fn remove_file(cfg: &KeyConfig, name: &str) -> Result<Option<Store>, KeyError> {
    let (entry, backend) = entry(cfg, name)?;
    delete_entry(&entry, backend).map_err(KeyringFailure::into_required)
}
