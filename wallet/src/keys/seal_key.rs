//! The secret that seals the confirmed configuration ([`crate::confirmed`]): 32 random
//! bytes, kept where the wallet's key is kept. In the OS keyring (entry service
//! `paperchain`, user `<account>.policy-seal`, the secret as hex) when a keyring answers and
//! the store is not `keystore`; otherwise in `policy-seal.key` (0600) beside the keystore
//! file.
//!
//! What this module must not do: show the secret (its `Debug` shows nothing of it), or
//! replace a secret that exists (a second process creating one at the same time reads the
//! first one's back).

use std::fmt;
use std::path::PathBuf;

use zeroize::Zeroizing;

use super::keystore::{create_private_folder, write_private_file};
use super::os_keyring::{KeyringState, keyring_error_text, open_keyring, read_secret};
use super::{KEYRING_SERVICE, KeyConfig, KeyError, Store, StoreChoice, io_error};

/// The sealing secret.
pub struct SealKey {
    secret: Zeroizing<[u8; 32]>,
    store: Store,
}

impl SealKey {
    /// The secret's bytes (for the HMAC).
    pub fn bytes(&self) -> &[u8; 32] {
        &self.secret
    }

    /// Where it is kept.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealKey").field("store", &self.store).finish_non_exhaustive()
    }
}

fn seal_account(cfg: &KeyConfig) -> String {
    format!("{}.policy-seal", cfg.account)
}

/// The file that holds the secret where no keyring does.
pub fn seal_file(cfg: &KeyConfig) -> PathBuf {
    cfg.keystore_path.parent().map(|p| p.to_path_buf()).unwrap_or_default().join("policy-seal.key")
}

fn parse(text: &str) -> Option<Zeroizing<[u8; 32]>> {
    let mut secret = Zeroizing::new([0u8; 32]);
    hex::decode_to_slice(text.trim(), secret.as_mut()).ok()?;
    Some(secret)
}

/// The sealing secret; `None` when there is none yet and `create` is false. With `create`,
/// a new one is made and stored when there is none. Blocking.
pub fn seal_key(cfg: &KeyConfig, create: bool) -> Result<Option<SealKey>, KeyError> {
    cfg.check()?;
    if cfg.store != StoreChoice::Keystore
        && let KeyringState::Available { entry, backend } = open_keyring(&seal_account(cfg))
    {
        let account = seal_account(cfg);
        let name = format!("{KEYRING_SERVICE}/{account}");
        let read = |entry: &keyring::Entry| -> Result<Option<SealKey>, KeyError> {
            match read_secret(entry, &account) {
                Ok(None) => Ok(None),
                Ok(Some(text)) => parse(&text)
                    .map(|secret| Some(SealKey { secret, store: Store::Keyring { backend } }))
                    .ok_or_else(|| KeyError::Keyring(format!("the keyring entry {name} does not hold a seal"))),
                Err(failure) => Err(failure.into_required()),
            }
        };
        match read(&entry) {
            Ok(Some(key)) => return Ok(Some(key)),
            Ok(None) if !create => return Ok(None),
            Ok(None) => {
                let text = Zeroizing::new(hex::encode(rand::random::<[u8; 32]>()));
                entry.set_password(&text).map_err(|e| {
                    KeyError::Keyring(format!("storing the seal in {name}: {}", keyring_error_text(&e)))
                })?;
                // What is there now is the secret: another process's, if it stored one first.
                return read(&entry)?
                    .map(Some)
                    .ok_or_else(|| KeyError::Keyring(format!("the seal written to {name} does not read back")));
            }
            // Only an explicit keyring store insists on the keyring; auto falls back to the file.
            Err(KeyError::NoKeyring(reason)) if cfg.store == StoreChoice::Keyring => {
                return Err(KeyError::NoKeyring(reason));
            }
            Err(KeyError::NoKeyring(_)) => {}
            Err(e) => return Err(e),
        }
    }
    let file = seal_file(cfg);
    let store = Store::Keystore { path: file.clone() };
    let read = || -> Result<Option<SealKey>, KeyError> {
        match std::fs::read_to_string(&file) {
            Ok(text) => parse(&Zeroizing::new(text))
                .map(|secret| Some(SealKey { secret, store: store.clone() }))
                .ok_or_else(|| KeyError::BadKeystore { path: file.clone(), reason: "it does not hold a seal".into() }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(format!("reading {}", file.display()))(e)),
        }
    };
    match read()? {
        Some(key) => Ok(Some(key)),
        None if !create => Ok(None),
        None => {
            if let Some(folder) = file.parent() {
                create_private_folder(folder)?;
            }
            let text = Zeroizing::new(hex::encode(rand::random::<[u8; 32]>()));
            // Never over an existing file: a second process's secret wins and is read back.
            write_private_file(&file, text.as_bytes())?;
            read()?
                .map(Some)
                .ok_or_else(|| io_error(format!("reading {}", file.display()))(std::io::ErrorKind::NotFound.into()))
        }
    }
}
