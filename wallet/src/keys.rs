//! The wallet's key: where it is kept, and the only code that reads or writes it.
//!
//! One private key, kept in one of two stores:
//!
//! - the OS keyring (Secret Service on Linux and the BSDs, the macOS Keychain, the Windows
//!   Credential Manager): entry service `paperchain`, user [`KeyConfig::account`], secret the
//!   `0x`-prefixed hex private key. No password: the OS unlocks it with the session.
//! - a V3 keystore file (the format of geth and Foundry's `cast wallet`), encrypted with a
//!   password that comes from [`PasswordSource`] (a file, an environment variable or a
//!   prompt; never a command-line argument). It carries an `address` field, so the address is
//!   known without the password.
//!
//! [`StoreChoice::Auto`] (the default) uses the keystore file when there is one at
//! [`KeyConfig::keystore_path`] (the user chose it once), else the keyring when a keyring
//! service answers, else the keystore file. A build whose keyring is the `keyring` crate's
//! mock store (an OS without a supported keyring) treats the keyring as absent: nothing is
//! ever stored there.
//!
//! Every function here is **blocking**: the keyring calls run their own executor (keyring 3's
//! Secret Service client blocks on zbus), and keystore files are scrypt- or PBKDF2-derived.
//! Callers in async code wrap them in `tokio::task::spawn_blocking`, never call them on a
//! runtime's worker thread.
//!
//! Key material is held as a [`PrivateKeySigner`]; its hex form exists only in
//! [`Zeroizing`] strings dropped as soon as the key is stored or parsed. No error, log line or
//! `Debug` output here contains a key or a password.
//!
//! This file is the key store's interface and its choices; beside it, `os_keyring` (the OS
//! keyring), `keystore` (V3 keystore files and the private files they are written to) and
//! `solana` (the Solana key, kept in the keyring), `kept_files` (files such as a signing
//! identity kept in the keyring for local calls), `seal_key` (the secret that seals the
//! confirmed configuration).

mod kept_files;
mod keystore;
mod os_keyring;
mod seal_key;
mod solana;

use std::fmt;
use std::io::{IsTerminal as _, Read as _};
use std::path::{Path, PathBuf};

use alloy::primitives::Address;
use alloy::signers::local::PrivateKeySigner;
use serde::Serialize;
use serde_json::Value;
use zeroize::{Zeroize as _, Zeroizing};

pub use self::kept_files::{KeptFile, MAX_KEPT_BYTES, keep_file, load_file, remove_file, valid_name};
use self::keystore::{
    decrypt_keystore_json, encrypt_to_json, json_address, load_keystore, read_keystore_json, sync_parent,
    write_new_keystore,
};
use self::os_keyring::{
    KeyringFailure, KeyringState, delete_entry, entry_name, keyring_backend, keyring_error_text, keyring_required,
    open_keyring, read_entry,
};
pub use self::seal_key::{SealKey, seal_file, seal_key};
pub use self::solana::{SolanaWallet, create_solana, import_solana, load_solana, remove_solana};

/// The keyring entry's service name.
pub const KEYRING_SERVICE: &str = "paperchain";
/// The keyring entry's user name unless [`ENV_ACCOUNT`] says otherwise.
pub const DEFAULT_ACCOUNT: &str = "wallet";
/// Which store: `auto`, `keyring` or `keystore`.
pub const ENV_STORE: &str = "PAPERCHAIN_WALLET_STORE";
/// The keyring entry's user name.
pub const ENV_ACCOUNT: &str = "PAPERCHAIN_WALLET_ACCOUNT";
/// The keystore file's path.
pub const ENV_KEYSTORE: &str = "PAPERCHAIN_WALLET_KEYSTORE";
/// A file holding the keystore's password (its first line; a final newline is not part of it).
pub const ENV_PASSWORD_FILE: &str = "PAPERCHAIN_WALLET_PASSWORD_FILE";
/// The keystore's password itself.
pub const ENV_PASSWORD: &str = "PAPERCHAIN_WALLET_PASSWORD";

/// The largest keystore file read (a V3 keystore is under 1 KiB).
const MAX_KEYSTORE_BYTES: u64 = 64 * 1024;
/// The most memory a keystore's scrypt parameters may ask for (geth's standard is 256 MiB).
const MAX_SCRYPT_MEMORY: u64 = 1 << 30;
/// The most PBKDF2 rounds a keystore may ask for (geth's standard is 262,144).
const MAX_PBKDF2_ROUNDS: u64 = 10_000_000;

/// Where the wallet's key is kept and how to unlock it.
#[derive(Clone, Debug)]
pub struct KeyConfig {
    /// Keyring entry: service `paperchain`, user = `account` (default `wallet`; tests use a
    /// unique one).
    pub account: String,
    /// The V3 keystore file used when no keyring service is there (default
    /// `<data dir>/wallet/keystore.json`).
    pub keystore_path: PathBuf,
    /// Which store.
    pub store: StoreChoice,
    /// Where the keystore's password comes from.
    pub password: PasswordSource,
}

impl KeyConfig {
    /// The configuration the environment asks for: [`ENV_STORE`] (`auto`, `keyring`,
    /// `keystore`; default `auto`), [`ENV_ACCOUNT`] (default `wallet`), [`ENV_KEYSTORE`]
    /// (default `<data_dir>/wallet/keystore.json`), and the password from
    /// [`PasswordSource::standard`]. Empty variables count as unset. An unknown store name is
    /// kept as [`StoreChoice::Invalid`], which every operation refuses with a message naming
    /// the variable.
    pub fn from_env(data_dir: &Path) -> KeyConfig {
        let var = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty());
        let store = match var(ENV_STORE) {
            None => StoreChoice::Auto,
            Some(value) => {
                let value = value.to_string_lossy().into_owned();
                value.parse().unwrap_or(StoreChoice::Invalid(value))
            }
        };
        KeyConfig {
            account: var(ENV_ACCOUNT)
                .map(|a| a.to_string_lossy().into_owned())
                .unwrap_or_else(|| DEFAULT_ACCOUNT.to_string()),
            keystore_path: var(ENV_KEYSTORE)
                .map(PathBuf::from)
                .unwrap_or_else(|| data_dir.join("wallet").join("keystore.json")),
            store,
            password: PasswordSource::standard(var(ENV_PASSWORD_FILE).map(PathBuf::from)),
        }
    }

    /// An error when this configuration cannot be followed.
    fn check(&self) -> Result<(), KeyError> {
        if let StoreChoice::Invalid(value) = &self.store {
            return Err(KeyError::Config(format!("{ENV_STORE} is `{value}`; it must be auto, keyring or keystore")));
        }
        if self.account.is_empty() {
            return Err(KeyError::Config(format!("the keyring account is empty; set {ENV_ACCOUNT} or leave it unset")));
        }
        Ok(())
    }
}

/// Which store holds the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreChoice {
    /// The keystore file when one exists at the configured path; else the keyring when a
    /// keyring service answers; else the keystore file.
    Auto,
    /// Only the OS keyring; an error ([`KeyError::NoKeyring`]) when no keyring service answers.
    Keyring,
    /// Only the keystore file (never asks the keyring anything).
    Keystore,
    /// A value of [`ENV_STORE`] that is none of the above: every operation refuses it.
    Invalid(String),
}

impl std::str::FromStr for StoreChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<StoreChoice, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(StoreChoice::Auto),
            "keyring" => Ok(StoreChoice::Keyring),
            "keystore" => Ok(StoreChoice::Keystore),
            _ => Err(format!("`{s}` is not a store: auto, keyring or keystore")),
        }
    }
}

impl fmt::Display for StoreChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreChoice::Auto => "auto",
            StoreChoice::Keyring => "keyring",
            StoreChoice::Keystore => "keystore",
            StoreChoice::Invalid(value) => value,
        })
    }
}

impl Serialize for StoreChoice {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Where the keystore file's password comes from. Never a command-line argument.
#[derive(Clone)]
pub enum PasswordSource {
    /// The first of these that is set: a `File` always is, an `Env` when the variable is set
    /// and not empty, `Prompt` when standard input is a terminal. None set is an error naming
    /// [`ENV_PASSWORD_FILE`] and [`ENV_PASSWORD`].
    FirstOf(Vec<PasswordSource>),
    /// A file holding the password (its content without a final newline); an error when it
    /// cannot be read.
    File(PathBuf),
    /// An environment variable holding the password.
    Env(String),
    /// Asked on the terminal without echo (twice for a new keystore), only when standard input
    /// is a terminal.
    Prompt,
    /// Given by the program itself (a desktop app's own dialog, tests).
    Given(Zeroizing<String>),
}

impl fmt::Debug for PasswordSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PasswordSource::FirstOf(sources) => f.debug_tuple("FirstOf").field(sources).finish(),
            PasswordSource::File(path) => f.debug_tuple("File").field(path).finish(),
            PasswordSource::Env(key) => f.debug_tuple("Env").field(key).finish(),
            PasswordSource::Prompt => f.write_str("Prompt"),
            PasswordSource::Given(_) => f.write_str("Given(<hidden>)"),
        }
    }
}

impl PasswordSource {
    /// The usual order: the file `file` (from [`ENV_PASSWORD_FILE`]) when given, else
    /// [`ENV_PASSWORD`], else a prompt when standard input is a terminal.
    pub fn standard(file: Option<PathBuf>) -> PasswordSource {
        let mut sources: Vec<PasswordSource> = file.into_iter().map(PasswordSource::File).collect();
        sources.push(PasswordSource::Env(ENV_PASSWORD.to_string()));
        sources.push(PasswordSource::Prompt);
        PasswordSource::FirstOf(sources)
    }

    /// The password of an existing keystore; `what` names it in a prompt (`the keystore
    /// file /x/keystore.json`).
    pub fn read(&self, what: &str) -> Result<Zeroizing<String>, KeyError> {
        self.try_read(&format!("Password of {what}: "), false)?.ok_or_else(no_password)
    }

    /// The password of a new keystore: asked twice when prompted; never empty.
    pub fn read_new(&self, what: &str) -> Result<Zeroizing<String>, KeyError> {
        let password = self.try_read(&format!("New password for {what}: "), true)?.ok_or_else(no_password)?;
        if password.is_empty() {
            return Err(KeyError::Password("the password is empty; a keystore file needs one".into()));
        }
        Ok(password)
    }

    /// The password, `None` when this source is not set.
    fn try_read(&self, prompt: &str, confirm: bool) -> Result<Option<Zeroizing<String>>, KeyError> {
        match self {
            PasswordSource::FirstOf(sources) => {
                for source in sources {
                    if let Some(password) = source.try_read(prompt, confirm)? {
                        return Ok(Some(password));
                    }
                }
                Ok(None)
            }
            PasswordSource::File(path) => read_password_file(path).map(Some),
            PasswordSource::Env(key) => match std::env::var(key) {
                Ok(value) if !value.is_empty() => Ok(Some(Zeroizing::new(value))),
                Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
                Err(std::env::VarError::NotUnicode(value)) => {
                    value.into_encoded_bytes().zeroize();
                    Err(KeyError::Password(format!("{key} is not valid UTF-8")))
                }
            },
            PasswordSource::Prompt => {
                if !std::io::stdin().is_terminal() {
                    return Ok(None);
                }
                let first = prompt_password(prompt)?;
                if confirm {
                    let again = prompt_password("The same password again: ")?;
                    if *again != *first {
                        return Err(KeyError::Password("the two passwords differ; nothing was written".into()));
                    }
                }
                Ok(Some(first))
            }
            PasswordSource::Given(password) => Ok(Some(password.clone())),
        }
    }
}

fn no_password() -> KeyError {
    KeyError::Password(format!(
        "the keystore file needs a password and none was given: set {ENV_PASSWORD_FILE} to a file holding it, \
         or {ENV_PASSWORD}, or run in a terminal to be asked"
    ))
}

fn prompt_password(prompt: &str) -> Result<Zeroizing<String>, KeyError> {
    rpassword::prompt_password(prompt)
        .map(Zeroizing::new)
        .map_err(|e| KeyError::Password(format!("the password could not be read from the terminal: {e}")))
}

fn read_password_file(path: &Path) -> Result<Zeroizing<String>, KeyError> {
    let mut bytes = Zeroizing::new(Vec::new());
    std::fs::File::open(path).and_then(|file| file.take(MAX_KEYSTORE_BYTES).read_to_end(&mut bytes)).map_err(|e| {
        KeyError::Password(format!("the password file {} ({ENV_PASSWORD_FILE}) cannot be read: {e}", path.display()))
    })?;
    // The first line: a final "\n" or "\r\n" is not part of the password.
    let end = bytes.iter().position(|&b| b == b'\n').unwrap_or(bytes.len());
    let end = if end > 0 && bytes.get(end - 1) == Some(&b'\r') { end - 1 } else { end };
    match std::str::from_utf8(&bytes[..end]) {
        Ok(text) => Ok(Zeroizing::new(text.to_string())),
        Err(_) => Err(KeyError::Password(format!("the password file {} is not UTF-8 text", path.display()))),
    }
}

/// The store that holds a key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Store {
    /// The OS keyring: `"Secret Service"`, `"macOS Keychain"` or `"Windows Credential Manager"`.
    Keyring { backend: &'static str },
    /// A V3 keystore file.
    Keystore { path: PathBuf },
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Store::Keyring { backend } => write!(f, "{backend} (keyring)"),
            Store::Keystore { path } => write!(f, "keystore file {}", path.display()),
        }
    }
}

/// The wallet's key, unlocked, and where it is kept. Its `Debug` shows the address and the
/// store, never the key.
pub struct Wallet {
    signer: PrivateKeySigner,
    store: Store,
}

impl Wallet {
    /// The wallet's address.
    pub fn address(&self) -> Address {
        self.signer.address()
    }

    /// Where the key is kept.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The signer (for x402 payments).
    pub fn signer(&self) -> &PrivateKeySigner {
        &self.signer
    }
}

impl fmt::Debug for Wallet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wallet").field("address", &self.address()).field("store", &self.store).finish_non_exhaustive()
    }
}

/// What [`status`] found, without unlocking anything.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The configured choice (`auto`, `keyring`, `keystore`).
    pub choice: StoreChoice,
    /// The store holding the key the wallet uses; `None` when there is no wallet.
    pub store: Option<Store>,
    /// The wallet's address when it can be read without a password (keyring: always; keystore
    /// file: from its `address` field). Checksummed in JSON.
    #[serde(serialize_with = "checksummed")]
    pub address: Option<Address>,
    /// Whether a keyring service answers.
    pub keyring_available: bool,
    /// The keyring this build uses on this OS, if any.
    pub keyring_backend: Option<&'static str>,
    /// Why the keyring cannot be used, when it cannot.
    pub keyring_unavailable_reason: Option<String>,
    /// The keystore file's path (whether or not it exists).
    pub keystore_path: PathBuf,
    /// Whether the keystore file exists.
    pub keystore_exists: bool,
    /// Anything else worth knowing (a keystore file without an address, a second key that the
    /// wallet does not use, an entry that cannot be read).
    pub notes: Vec<String>,
}

fn checksummed<S: serde::Serializer>(address: &Option<Address>, serializer: S) -> Result<S::Ok, S::Error> {
    match address {
        Some(address) => serializer.collect_str(address),
        None => serializer.serialize_none(),
    }
}

/// Why a key operation failed. No message contains key material or a password.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// There is no key where the configuration looks.
    #[error(
        "no wallet ({looked}); create one with `paperchain wallet new` or bring one with `paperchain wallet import`"
    )]
    NoWallet { looked: String },
    /// A key is already there; nothing was changed.
    #[error(
        "a wallet already exists: {} in the {store}; nothing was changed (to replace it, back it up, then `paperchain wallet remove`)",
        address.map_or_else(|| "address unknown".to_string(), |a| a.to_string())
    )]
    Exists { address: Option<Address>, store: Store },
    /// The configuration asks for the keyring and no keyring service answers.
    #[error(
        "the OS keyring cannot be used: {0}; start a Secret Service (gnome-keyring, KeePassXC) or set {ENV_STORE}=keystore"
    )]
    NoKeyring(String),
    /// The keyring answered but the operation failed.
    #[error("the keyring failed: {0}")]
    Keyring(String),
    /// The keystore's password is missing, wrong or unreadable.
    #[error("{0}")]
    Password(String),
    /// Not a private key (the message never repeats what was given).
    #[error("not a private key: {0}")]
    BadKey(String),
    /// A keystore file that cannot be used.
    #[error("the keystore file {} cannot be used: {reason}", path.display())]
    BadKeystore { path: PathBuf, reason: String },
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The configuration cannot be followed.
    #[error("{0}")]
    Config(String),
    /// A Solana key is already there; nothing was changed.
    #[error(
        "a Solana key already exists: {address} in the {store}; nothing was changed (to replace it, back it up, then `paperchain wallet solana remove`)"
    )]
    SolanaExists { address: String, store: Store },
}

fn io_error(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> KeyError {
    let what = what.into();
    move |source| KeyError::Io { what, source }
}

/// The key from wherever the configuration says it is. Blocking.
///
/// A keystore file is decrypted with the password of [`KeyConfig::password`].
pub fn load(cfg: &KeyConfig) -> Result<Wallet, KeyError> {
    cfg.check()?;
    let path = &cfg.keystore_path;
    match cfg.store {
        StoreChoice::Keystore => load_keystore(cfg)?
            .ok_or_else(|| KeyError::NoWallet { looked: format!("no keystore file at {}", path.display()) }),
        StoreChoice::Keyring => {
            let (entry, backend) = keyring_required(cfg)?;
            match read_entry(&entry, &cfg.account).map_err(KeyringFailure::into_required)? {
                Some(signer) => Ok(Wallet { signer, store: Store::Keyring { backend } }),
                None => Err(KeyError::NoWallet { looked: format!("no entry in the {backend}: {}", entry_name(cfg)) }),
            }
        }
        StoreChoice::Auto => {
            if let Some(wallet) = load_keystore(cfg)? {
                return Ok(wallet);
            }
            match open_keyring(&cfg.account) {
                KeyringState::Available { entry, backend } => match read_entry(&entry, &cfg.account) {
                    Ok(Some(signer)) => Ok(Wallet { signer, store: Store::Keyring { backend } }),
                    Ok(None) => Err(KeyError::NoWallet {
                        looked: format!(
                            "no entry in the {backend} ({}), no keystore file at {}",
                            entry_name(cfg),
                            path.display()
                        ),
                    }),
                    Err(KeyringFailure::Failed(message)) => Err(KeyError::Keyring(message)),
                    Err(KeyringFailure::Unavailable(reason)) => Err(no_wallet_without_keyring(path, &reason)),
                },
                KeyringState::Unavailable(reason) => Err(no_wallet_without_keyring(path, &reason)),
            }
        }
        StoreChoice::Invalid(_) => unreachable!("checked above"),
    }
}

fn no_wallet_without_keyring(path: &Path, reason: &str) -> KeyError {
    KeyError::NoWallet {
        looked: format!("no keystore file at {}, and the OS keyring cannot be used: {reason}", path.display()),
    }
}

/// A new random key, stored where the configuration says (a keystore file asks for a new
/// password). Refuses with [`KeyError::Exists`] when there is a key already. Blocking.
pub fn create(cfg: &KeyConfig) -> Result<Wallet, KeyError> {
    cfg.check()?;
    let target = target_for_new(cfg)?;
    store_new(cfg, target, PrivateKeySigner::random(), None)
}

/// Stores the private key `hex` (64 hex digits, `0x`-prefixed or not; spaces around it are
/// ignored). Refuses with [`KeyError::Exists`] when there is a key already. The error for a
/// malformed key never repeats it. Blocking.
pub fn import_private_key(cfg: &KeyConfig, hex: &str) -> Result<Wallet, KeyError> {
    cfg.check()?;
    let signer = parse_private_key(hex)?;
    let target = target_for_new(cfg)?;
    store_new(cfg, target, signer, None)
}

/// Imports a V3 keystore file (Foundry's `cast wallet`, geth; scrypt or PBKDF2) unlocked
/// with `password`. Into the keyring, the key is stored; into a keystore file, the file is
/// copied as it is encrypted (same password, same KDF), with its `address` field added.
/// Refuses with [`KeyError::Exists`] when there is a key already. Blocking.
pub fn import_keystore(cfg: &KeyConfig, file: &Path, password: &str) -> Result<Wallet, KeyError> {
    cfg.check()?;
    let (json, normalized) = read_keystore_json(file)?.ok_or_else(|| KeyError::Io {
        what: format!("reading {}", file.display()),
        source: std::io::ErrorKind::NotFound.into(),
    })?;
    let signer = decrypt_keystore_json(file, &json, normalized, password)?;
    let target = target_for_new(cfg)?;
    let mut json = json;
    json["address"] = Value::String(hex::encode(signer.address()));
    store_new(cfg, target, signer, Some(json))
}

/// Deletes the key the wallet uses (the keyring entry or the keystore file). `None` when
/// there was none. In `auto`, a keystore file goes first (it is the one in use); a key that
/// was also in the keyring is then the wallet's. Blocking.
pub fn remove(cfg: &KeyConfig) -> Result<Option<Store>, KeyError> {
    cfg.check()?;
    let path = &cfg.keystore_path;
    let remove_file = || -> Result<Option<Store>, KeyError> {
        match std::fs::remove_file(path) {
            Ok(()) => {
                sync_parent(path);
                Ok(Some(Store::Keystore { path: path.clone() }))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(format!("removing {}", path.display()))(e)),
        }
    };
    match cfg.store {
        StoreChoice::Keystore => remove_file(),
        StoreChoice::Keyring => {
            let (entry, backend) = keyring_required(cfg)?;
            delete_entry(&entry, backend).map_err(KeyringFailure::into_required)
        }
        StoreChoice::Auto => {
            if path.symlink_metadata().is_ok() {
                return remove_file();
            }
            match open_keyring(&cfg.account) {
                KeyringState::Available { entry, backend } => match delete_entry(&entry, backend) {
                    Ok(removed) => Ok(removed),
                    // No keyring answers: there is no key in it to remove.
                    Err(KeyringFailure::Unavailable(_)) => Ok(None),
                    Err(KeyringFailure::Failed(message)) => Err(KeyError::Keyring(message)),
                },
                KeyringState::Unavailable(_) => Ok(None),
            }
        }
        StoreChoice::Invalid(_) => unreachable!("checked above"),
    }
}

/// Where the key is and its address when that needs no password; whether a keyring service
/// answers and why not. Never fails: what cannot be read is said in [`Status::notes`].
/// Blocking (asks the keyring even when the choice is `keystore`, to say whether it answers).
pub fn status(cfg: &KeyConfig) -> Status {
    let path = cfg.keystore_path.clone();
    let mut status = Status {
        choice: cfg.store.clone(),
        store: None,
        address: None,
        keyring_available: false,
        keyring_backend: keyring_backend(),
        keyring_unavailable_reason: None,
        keystore_exists: path.symlink_metadata().is_ok(),
        keystore_path: path.clone(),
        notes: Vec::new(),
    };
    if let Err(e) = cfg.check() {
        status.notes.push(e.to_string());
        return status;
    }
    // The keyring: whether it answers, and the address of a key in it.
    let mut keyring_key: Option<(Address, &'static str)> = None;
    match open_keyring(&cfg.account) {
        KeyringState::Available { entry, backend } => match read_entry(&entry, &cfg.account) {
            Ok(key) => {
                status.keyring_available = true;
                keyring_key = key.map(|signer| (signer.address(), backend));
            }
            Err(KeyringFailure::Unavailable(reason)) => status.keyring_unavailable_reason = Some(reason),
            Err(KeyringFailure::Failed(message)) => {
                status.keyring_available = true;
                status.notes.push(format!("the keyring entry {} cannot be read: {message}", entry_name(cfg)));
            }
        },
        KeyringState::Unavailable(reason) => status.keyring_unavailable_reason = Some(reason),
    }
    // The keystore file: its address field, no decryption.
    let mut file_address = None;
    if status.keystore_exists {
        match read_keystore_json(&path) {
            Ok(Some((json, _))) => {
                file_address = json_address(&json);
                if file_address.is_none() {
                    status.notes.push(format!(
                        "the keystore file {} has no address field; `paperchain wallet address` shows it after asking the password",
                        path.display()
                    ));
                }
            }
            Ok(None) => status.keystore_exists = false,
            Err(e) => status.notes.push(e.to_string()),
        }
    }
    if cfg.store != StoreChoice::Keyring && status.keystore_exists {
        status.store = Some(Store::Keystore { path: path.clone() });
        status.address = file_address;
        if let Some((address, backend)) = keyring_key.filter(|_| cfg.store == StoreChoice::Auto) {
            status.notes.push(format!(
                "the {backend} also holds a key ({address}); it is not used while the keystore file exists"
            ));
        }
    } else if cfg.store != StoreChoice::Keystore
        && let Some((address, backend)) = keyring_key
    {
        status.store = Some(Store::Keyring { backend });
        status.address = Some(address);
    }
    if cfg.store == StoreChoice::Keyring && status.keystore_exists {
        status
            .notes
            .push(format!("a keystore file exists at {} but {ENV_STORE}=keyring does not use it", path.display()));
    }
    status
}

// ---------------------------------------------------------------------------------------
// Storing a new key.

/// Where a new key goes.
enum Target {
    Keyring { entry: keyring::Entry, backend: &'static str },
    Keystore,
}

/// Where a new key goes, or [`KeyError::Exists`] when the configured place holds one.
fn target_for_new(cfg: &KeyConfig) -> Result<Target, KeyError> {
    let path = &cfg.keystore_path;
    let file_exists = || -> Result<(), KeyError> {
        if path.symlink_metadata().is_ok() {
            let address = read_keystore_json(path).ok().flatten().and_then(|(json, _)| json_address(&json));
            return Err(KeyError::Exists { address, store: Store::Keystore { path: path.clone() } });
        }
        Ok(())
    };
    let keyring_empty = |entry: &keyring::Entry, backend| -> Result<(), KeyError> {
        match read_entry(entry, &cfg.account) {
            Ok(None) => Ok(()),
            Ok(Some(signer)) => {
                Err(KeyError::Exists { address: Some(signer.address()), store: Store::Keyring { backend } })
            }
            Err(failure) => Err(failure.into_required()),
        }
    };
    match cfg.store {
        StoreChoice::Keystore => {
            file_exists()?;
            Ok(Target::Keystore)
        }
        StoreChoice::Keyring => {
            let (entry, backend) = keyring_required(cfg)?;
            keyring_empty(&entry, backend)?;
            Ok(Target::Keyring { entry, backend })
        }
        StoreChoice::Auto => {
            file_exists()?;
            match open_keyring(&cfg.account) {
                KeyringState::Available { entry, backend } => match read_entry(&entry, &cfg.account) {
                    Ok(None) => Ok(Target::Keyring { entry, backend }),
                    Ok(Some(signer)) => {
                        Err(KeyError::Exists { address: Some(signer.address()), store: Store::Keyring { backend } })
                    }
                    Err(KeyringFailure::Failed(message)) => Err(KeyError::Keyring(message)),
                    Err(KeyringFailure::Unavailable(_)) => Ok(Target::Keystore),
                },
                KeyringState::Unavailable(_) => Ok(Target::Keystore),
            }
        }
        StoreChoice::Invalid(_) => unreachable!("checked by the caller"),
    }
}

/// Stores `signer` at `target`. `keystore` is an already encrypted keystore (an import)
/// written as it is to a keystore file; without it a keystore file is encrypted here with a
/// new password.
fn store_new(
    cfg: &KeyConfig,
    target: Target,
    signer: PrivateKeySigner,
    keystore: Option<Value>,
) -> Result<Wallet, KeyError> {
    match target {
        Target::Keyring { entry, backend } => {
            let secret = key_hex(&signer);
            entry.set_password(&secret).map_err(|e| {
                KeyError::Keyring(format!("storing the key in {}: {}", entry_name(cfg), keyring_error_text(&e)))
            })?;
            drop(secret);
            // Read back: a keyring that accepts a secret and keeps nothing must not lose the key.
            match read_entry(&entry, &cfg.account) {
                Ok(Some(stored)) if stored.address() == signer.address() => {}
                Ok(_) => {
                    return Err(KeyError::Keyring(format!(
                        "the key written to {} does not read back as written; check the keyring",
                        entry_name(cfg)
                    )));
                }
                Err(failure) => return Err(failure.into_required()),
            }
            Ok(Wallet { signer, store: Store::Keyring { backend } })
        }
        Target::Keystore => {
            let path = &cfg.keystore_path;
            let json = match keystore {
                Some(json) => json,
                None => {
                    let password = cfg.password.read_new(&format!("the keystore file {}", path.display()))?;
                    encrypt_to_json(path, &signer, &password)?
                }
            };
            write_new_keystore(path, &json, signer.address())?;
            Ok(Wallet { signer, store: Store::Keystore { path: path.clone() } })
        }
    }
}

// ---------------------------------------------------------------------------------------
// Keys as text.

/// The signer of a private key given as 64 hex digits (`0x` optional). Errors say what is
/// wrong without repeating the input.
fn parse_private_key(text: &str) -> Result<PrivateKeySigner, KeyError> {
    let text = text.trim();
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
    let count = digits.chars().count();
    if count != 64 {
        return Err(KeyError::BadKey(format!(
            "a private key is 64 hex digits, optionally after 0x; this has {count} characters"
        )));
    }
    let mut bytes = Zeroizing::new([0u8; 32]);
    if hex::decode_to_slice(digits, &mut *bytes).is_err() {
        return Err(KeyError::BadKey("it holds a character that is not a hex digit (0-9, a-f)".into()));
    }
    PrivateKeySigner::from_slice(bytes.as_slice())
        .map_err(|_| KeyError::BadKey("it is not a secp256k1 private key (zero, or not below the curve order)".into()))
}

/// `0x` and the key's 64 lowercase hex digits, wiped when dropped.
fn key_hex(signer: &PrivateKeySigner) -> Zeroizing<String> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let bytes = Zeroizing::new(signer.to_bytes().0);
    let mut text = Zeroizing::new(String::with_capacity(66));
    text.push_str("0x");
    for byte in bytes.iter() {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_keys_parse_with_or_without_0x_and_errors_do_not_repeat_them() {
        let hex = "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d";
        let a = parse_private_key(hex).unwrap();
        let b = parse_private_key(&format!("  0x{}\n", hex.to_uppercase())).unwrap();
        assert_eq!(a.address(), b.address());
        assert_eq!(&*key_hex(&a), &format!("0x{hex}"));
        let wrong = format!("{}g{}", &hex[..10], &hex[11..]);
        let error = parse_private_key(&wrong).unwrap_err().to_string();
        assert!(!error.contains(&wrong[..20]) && !error.contains(&wrong[30..]), "{error}");
        let short = parse_private_key(&hex[1..]).unwrap_err().to_string();
        assert!(short.contains("63 characters") && !short.contains(&hex[1..20]), "{short}");
        let zero = parse_private_key(&"0".repeat(64)).unwrap_err().to_string();
        assert!(zero.contains("not a secp256k1 private key"), "{zero}");
    }

    #[test]
    fn store_names_and_choices_read_as_documented() {
        assert_eq!("Keyring".parse::<StoreChoice>(), Ok(StoreChoice::Keyring));
        assert!("vault".parse::<StoreChoice>().is_err());
        assert_eq!(Store::Keyring { backend: "Secret Service" }.to_string(), "Secret Service (keyring)");
        assert_eq!(Store::Keystore { path: "/k/ks.json".into() }.to_string(), "keystore file /k/ks.json");
        let cfg = KeyConfig {
            account: "x".into(),
            keystore_path: "/nowhere/ks.json".into(),
            store: StoreChoice::Invalid("vault".into()),
            password: PasswordSource::Given(Zeroizing::new("secret-password".into())),
        };
        assert!(!format!("{cfg:?}").contains("secret-password"));
        let error = load(&cfg).unwrap_err().to_string();
        assert!(error.contains("PAPERCHAIN_WALLET_STORE is `vault`"), "{error}");
    }
}
