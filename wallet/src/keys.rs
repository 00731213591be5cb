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

use std::fmt;
use std::io::{IsTerminal as _, Read as _, Write as _};
use std::path::{Path, PathBuf};

use alloy::primitives::Address;
use alloy::signers::local::{LocalSignerError, PrivateKeySigner};
use serde::Serialize;
use serde_json::{Map, Value};
use zeroize::{Zeroize as _, Zeroizing};

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
// The Solana key.

/// The wallet's Solana key (Ed25519), kept in the OS keyring beside the EVM key: entry
/// service `paperchain`, user `<account>.solana`, secret the base58 of its 64-byte keypair
/// (secret then public key, the form Solana wallets export). Only the keyring holds it: with
/// `PAPERCHAIN_WALLET_STORE=keystore` there is no Solana key. Its `Debug` shows the
/// address, never the key.
pub struct SolanaWallet {
    key: paperchain_protocol::svm::SigningKey,
    backend: &'static str,
}

impl SolanaWallet {
    /// The address (base58).
    pub fn address(&self) -> String {
        paperchain_protocol::svm::to_base58(&paperchain_protocol::svm::address_of(&self.key))
    }

    /// The signing key (for Solana payments).
    pub fn key(&self) -> &paperchain_protocol::svm::SigningKey {
        &self.key
    }

    /// Where it is kept.
    pub fn store(&self) -> Store {
        Store::Keyring { backend: self.backend }
    }
}

impl fmt::Debug for SolanaWallet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SolanaWallet").field("address", &self.address()).finish_non_exhaustive()
    }
}

fn solana_account(cfg: &KeyConfig) -> String {
    format!("{}.solana", cfg.account)
}

/// The keyring entry of the Solana key, or why there is none.
fn solana_keyring(cfg: &KeyConfig) -> Result<(keyring::Entry, &'static str), KeyError> {
    cfg.check()?;
    if cfg.store == StoreChoice::Keystore {
        return Err(KeyError::Config(format!(
            "a Solana key is kept in the OS keyring only, and {ENV_STORE}=keystore does not use it"
        )));
    }
    match open_keyring(&solana_account(cfg)) {
        KeyringState::Available { entry, backend } => Ok((entry, backend)),
        KeyringState::Unavailable(reason) => Err(KeyError::NoKeyring(reason)),
    }
}

fn read_solana(
    entry: &keyring::Entry,
    cfg: &KeyConfig,
) -> Result<Option<paperchain_protocol::svm::SigningKey>, KeyError> {
    let account = solana_account(cfg);
    let Some(secret) = read_secret(entry, &account).map_err(KeyringFailure::into_required)? else { return Ok(None) };
    parse_solana_key(&secret).map(Some).map_err(|_| {
        KeyError::Keyring(format!(
            "the keyring entry {KEYRING_SERVICE}/{account} does not hold a Solana key; remove it (`paperchain wallet solana remove`) or fix it"
        ))
    })
}

/// The Solana key. Blocking.
pub fn load_solana(cfg: &KeyConfig) -> Result<SolanaWallet, KeyError> {
    let (entry, backend) = solana_keyring(cfg)?;
    match read_solana(&entry, cfg)? {
        Some(key) => Ok(SolanaWallet { key, backend }),
        None => Err(KeyError::NoWallet {
            looked: format!("no Solana key in the {backend}: {KEYRING_SERVICE}/{}", solana_account(cfg)),
        }),
    }
}

/// A new random Solana key in the keyring. Refuses with [`KeyError::SolanaExists`] when
/// there is one. Blocking.
pub fn create_solana(cfg: &KeyConfig) -> Result<SolanaWallet, KeyError> {
    store_solana(cfg, paperchain_protocol::svm::SigningKey::from_bytes(&rand::random::<[u8; 32]>()))
}

/// Stores the Solana key `text`: base58 of the 64-byte keypair (what Phantom and Solflare
/// export) or of the 32-byte secret, or the JSON array of 64 numbers of a `solana-keygen`
/// file. Refuses with [`KeyError::SolanaExists`] when there is one. The error for a
/// malformed key never repeats it. Blocking.
pub fn import_solana(cfg: &KeyConfig, text: &str) -> Result<SolanaWallet, KeyError> {
    store_solana(cfg, parse_solana_key(text)?)
}

fn store_solana(cfg: &KeyConfig, key: paperchain_protocol::svm::SigningKey) -> Result<SolanaWallet, KeyError> {
    let (entry, backend) = solana_keyring(cfg)?;
    if let Some(existing) = read_solana(&entry, cfg)? {
        let address = SolanaWallet { key: existing, backend }.address();
        return Err(KeyError::SolanaExists { address, store: Store::Keyring { backend } });
    }
    let secret = Zeroizing::new(paperchain_protocol::svm::to_base58(&key.to_keypair_bytes()));
    let name = format!("{KEYRING_SERVICE}/{}", solana_account(cfg));
    entry
        .set_password(&secret)
        .map_err(|e| KeyError::Keyring(format!("storing the Solana key in {name}: {}", keyring_error_text(&e))))?;
    drop(secret);
    // Read back: a keyring that accepts a secret and keeps nothing must not lose the key.
    match read_solana(&entry, cfg)? {
        Some(stored) if stored.verifying_key() == key.verifying_key() => Ok(SolanaWallet { key, backend }),
        _ => Err(KeyError::Keyring(format!("the Solana key written to {name} does not read back as written"))),
    }
}

/// Deletes the Solana key; `None` when there was none. Blocking.
pub fn remove_solana(cfg: &KeyConfig) -> Result<Option<Store>, KeyError> {
    let (entry, backend) = solana_keyring(cfg)?;
    delete_entry(&entry, backend).map_err(KeyringFailure::into_required)
}

/// A Solana key from text (see [`import_solana`]). Errors say what is wrong without
/// repeating the input.
fn parse_solana_key(text: &str) -> Result<paperchain_protocol::svm::SigningKey, KeyError> {
    let text = text.trim();
    let bytes: Zeroizing<Vec<u8>> = if text.starts_with('[') {
        let numbers: Zeroizing<Vec<u64>> = Zeroizing::new(
            serde_json::from_str(text)
                .map_err(|_| KeyError::BadKey("a key file's JSON is an array of 64 numbers from 0 to 255".into()))?,
        );
        let bytes: Option<Vec<u8>> = numbers.iter().map(|n| u8::try_from(*n).ok()).collect();
        Zeroizing::new(bytes.ok_or_else(|| KeyError::BadKey("a key file's numbers are bytes, 0 to 255".into()))?)
    } else {
        Zeroizing::new(
            bs58::decode(text)
                .into_vec()
                .map_err(|_| KeyError::BadKey("a Solana key is base58 (or a key file's JSON array)".into()))?,
        )
    };
    let seed: [u8; 32] = match bytes.len() {
        32 | 64 => bytes[..32].try_into().expect("32 bytes"),
        n => return Err(KeyError::BadKey(format!("a Solana key is 64 bytes (or its 32-byte secret); this is {n}"))),
    };
    let key = paperchain_protocol::svm::SigningKey::from_bytes(&seed);
    if bytes.len() == 64 && key.verifying_key().as_bytes() != &bytes[32..] {
        return Err(KeyError::BadKey("the keypair's public half is not the public key of its secret half".into()));
    }
    Ok(key)
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

// ---------------------------------------------------------------------------------------
// The OS keyring.

/// The keyring this build uses on this OS; `None` where the `keyring` crate falls back to
/// its mock store.
fn keyring_backend() -> Option<&'static str> {
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

enum KeyringState {
    Available { entry: keyring::Entry, backend: &'static str },
    Unavailable(String),
}

/// The keyring entry of `account`, unless this build's keyring is the mock store (which keeps
/// nothing) or the entry cannot be made. Whether the service answers is found by the first
/// call ([`read_entry`]).
fn open_keyring(account: &str) -> KeyringState {
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
fn keyring_required(cfg: &KeyConfig) -> Result<(keyring::Entry, &'static str), KeyError> {
    match open_keyring(&cfg.account) {
        KeyringState::Available { entry, backend } => Ok((entry, backend)),
        KeyringState::Unavailable(reason) => Err(KeyError::NoKeyring(reason)),
    }
}

enum KeyringFailure {
    /// No keyring service answers (no session bus, no Secret Service on it, locked).
    Unavailable(String),
    /// It answered, and failed.
    Failed(String),
}

impl KeyringFailure {
    /// The error when the keyring was required.
    fn into_required(self) -> KeyError {
        match self {
            KeyringFailure::Unavailable(reason) => KeyError::NoKeyring(reason),
            KeyringFailure::Failed(message) => KeyError::Keyring(message),
        }
    }
}

/// The key in the entry; `None` when there is no entry.
fn read_entry(entry: &keyring::Entry, account: &str) -> Result<Option<PrivateKeySigner>, KeyringFailure> {
    let Some(secret) = read_secret(entry, account)? else { return Ok(None) };
    parse_private_key(&secret).map(Some).map_err(|_| {
        KeyringFailure::Failed(format!(
            "the keyring entry {KEYRING_SERVICE}/{account} does not hold a private key; remove it (`paperchain wallet remove`) or fix it"
        ))
    })
}

/// The secret in the entry; `None` when there is no entry.
fn read_secret(entry: &keyring::Entry, account: &str) -> Result<Option<Zeroizing<String>>, KeyringFailure> {
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
fn delete_entry(entry: &keyring::Entry, backend: &'static str) -> Result<Option<Store>, KeyringFailure> {
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

fn entry_name(cfg: &KeyConfig) -> String {
    format!("{KEYRING_SERVICE}/{}", cfg.account)
}

/// A keyring error and its causes as one line. Safe to show: `BadEncoding`'s bytes are
/// never printed by its `Display`, and no other variant carries a secret.
fn keyring_error_text(e: &keyring::Error) -> String {
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

// ---------------------------------------------------------------------------------------
// The keystore file.

/// The keystore file's key, `None` when there is no file.
fn load_keystore(cfg: &KeyConfig) -> Result<Option<Wallet>, KeyError> {
    let path = &cfg.keystore_path;
    let Some((json, normalized)) = read_keystore_json(path)? else { return Ok(None) };
    let password = cfg.password.read(&format!("the keystore file {}", path.display()))?;
    let signer = decrypt_keystore_json(path, &json, normalized, &password)?;
    Ok(Some(Wallet { signer, store: Store::Keystore { path: path.clone() } }))
}

/// The keystore at `path` as V3 JSON checked and normalised (a geth `Crypto` key renamed
/// `crypto`, an `id` added when missing), and whether it needed normalising; `None` when
/// there is no file.
fn read_keystore_json(path: &Path) -> Result<Option<(Value, bool)>, KeyError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(format!("reading the keystore file {}", path.display()))(e)),
    };
    let mut text = Vec::new();
    file.take(MAX_KEYSTORE_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(io_error(format!("reading the keystore file {}", path.display())))?;
    let bad = |reason: String| KeyError::BadKeystore { path: path.to_path_buf(), reason };
    if text.len() as u64 > MAX_KEYSTORE_BYTES {
        return Err(bad(format!("it is larger than {MAX_KEYSTORE_BYTES} bytes; a keystore is under 1 KiB")));
    }
    let json: Value = serde_json::from_slice(&text).map_err(|e| bad(format!("it is not JSON ({e})")))?;
    normalize_keystore(json).map(Some).map_err(bad)
}

/// Checks a V3 keystore (so that decryption can neither panic nor run away) and normalises it.
fn normalize_keystore(mut json: Value) -> Result<(Value, bool), String> {
    let mut changed = false;
    let object = json.as_object_mut().ok_or("it is not a JSON object")?;
    if object.get("version").and_then(Value::as_u64) != Some(3) {
        return Err("it is not a version 3 keystore (its `version` is not 3)".into());
    }
    if !object.contains_key("crypto")
        && let Some(crypto) = object.remove("Crypto")
    {
        object.insert("crypto".into(), crypto);
        changed = true;
    }
    let crypto = object.get("crypto").and_then(Value::as_object).ok_or("it has no `crypto` object")?;
    let text = |map: &Map<String, Value>, key: &str| -> Result<String, String> {
        map.get(key).and_then(Value::as_str).map(str::to_string).ok_or(format!("`{key}` is missing or not a string"))
    };
    let hex_field = |map: &Map<String, Value>, key: &str, len: Option<usize>| -> Result<(), String> {
        let bytes = hex::decode(text(map, key)?).map_err(|_| format!("`{key}` is not hex"))?;
        match len {
            Some(len) if bytes.len() != len => Err(format!("`{key}` is {} bytes, not {len}", bytes.len())),
            _ if bytes.is_empty() => Err(format!("`{key}` is empty")),
            _ => Ok(()),
        }
    };
    let number = |map: &Map<String, Value>, key: &str, range: std::ops::RangeInclusive<u64>| -> Result<u64, String> {
        let value = map.get(key).and_then(Value::as_u64).ok_or(format!("`{key}` is missing or not a whole number"))?;
        if !range.contains(&value) {
            return Err(format!("`{key}` is {value}, outside {}..={}", range.start(), range.end()));
        }
        Ok(value)
    };
    let cipher = text(crypto, "cipher")?;
    if cipher != "aes-128-ctr" {
        return Err(format!("its cipher is {cipher}; only aes-128-ctr is supported"));
    }
    let cipherparams = crypto.get("cipherparams").and_then(Value::as_object).ok_or("it has no `cipherparams`")?;
    hex_field(cipherparams, "iv", Some(16))?;
    hex_field(crypto, "ciphertext", Some(32))?;
    hex_field(crypto, "mac", Some(32))?;
    let kdfparams = crypto.get("kdfparams").and_then(Value::as_object).ok_or("it has no `kdfparams`")?;
    number(kdfparams, "dklen", 32..=32)?;
    hex_field(kdfparams, "salt", None)?;
    match text(crypto, "kdf")?.as_str() {
        "scrypt" => {
            let n = number(kdfparams, "n", 2..=1 << 24)?;
            let r = number(kdfparams, "r", 1..=64)?;
            number(kdfparams, "p", 1..=16)?;
            if !n.is_power_of_two() {
                return Err(format!("scrypt's n is {n}, not a power of two"));
            }
            if 128 * n * r > MAX_SCRYPT_MEMORY {
                return Err(format!("its scrypt parameters need more than {} MiB", MAX_SCRYPT_MEMORY >> 20));
            }
        }
        "pbkdf2" => {
            number(kdfparams, "c", 1..=MAX_PBKDF2_ROUNDS)?;
            let prf = text(kdfparams, "prf")?;
            if prf != "hmac-sha256" {
                return Err(format!("its PBKDF2 uses {prf}; only hmac-sha256 is supported"));
            }
        }
        other => return Err(format!("its kdf is {other}; only scrypt and pbkdf2 are supported")),
    }
    if !object.get("id").and_then(Value::as_str).is_some_and(is_uuid) {
        object.insert("id".into(), Value::String(random_uuid()));
        changed = true;
    }
    if object.get("address").is_some_and(|a| !a.is_null()) && json_address(&json).is_none() {
        return Err("its `address` field is not an address".into());
    }
    Ok((json, changed))
}

/// The `address` field of a keystore (geth: 40 hex digits without `0x`; `0x` accepted).
fn json_address(json: &Value) -> Option<Address> {
    let text = json.get("address")?.as_str()?;
    let digits = text.strip_prefix("0x").unwrap_or(text);
    let bytes: [u8; 20] = hex::decode(digits).ok()?.try_into().ok()?;
    Some(Address::from(bytes))
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn random_uuid() -> String {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex = hex::encode(bytes);
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// Decrypts the checked keystore `json` read from `path`. alloy reads a file: `path` itself
/// when the JSON is as read (`normalized` false), else a copy of `json` in a private
/// temporary folder (a geth `Crypto` key renamed, an `id` added).
fn decrypt_keystore_json(
    path: &Path,
    json: &Value,
    normalized: bool,
    password: &str,
) -> Result<PrivateKeySigner, KeyError> {
    let bad = |reason: String| KeyError::BadKeystore { path: path.to_path_buf(), reason };
    let mut work = None;
    let source = if normalized {
        let dir = PrivateDir::create(&std::env::temp_dir(), "paperchain-keystore")?;
        let copy = dir.path.join("keystore.json");
        write_file_0600(&copy, &serde_json::to_vec(json).map_err(|e| bad(e.to_string()))?)?;
        work = Some(dir);
        copy
    } else {
        path.to_path_buf()
    };
    let signer = PrivateKeySigner::decrypt_keystore(&source, password).map_err(|e| match e {
        // eth-keystore's MacMismatch (the crate is not re-exported): the password is wrong.
        LocalSignerError::EthKeystoreError(inner) if inner.to_string() == "Mac Mismatch" => {
            KeyError::Password(format!("wrong password for the keystore file {}", path.display()))
        }
        other => bad(format!("it cannot be decrypted ({other})")),
    })?;
    drop(work);
    if let Some(address) = json_address(json)
        && address != signer.address()
    {
        return Err(bad(format!(
            "its address field says {address} but its key is that of {}; the file was changed",
            signer.address()
        )));
    }
    Ok(signer)
}

/// A V3 keystore of `signer` encrypted with `password` by alloy (scrypt), with its `address`
/// field. Encrypted in a private folder beside `dest`.
fn encrypt_to_json(dest: &Path, signer: &PrivateKeySigner, password: &str) -> Result<Value, KeyError> {
    let folder = parent_folder(dest);
    create_folder(folder)?;
    let work = PrivateDir::create(folder, ".keystore")?;
    let key = Zeroizing::new(signer.to_bytes().0);
    let mut rng = alloy::signers::k256::elliptic_curve::rand_core::OsRng;
    PrivateKeySigner::encrypt_keystore(&work.path, &mut rng, key.as_slice(), password, Some("keystore.json")).map_err(
        |e| KeyError::Io { what: "encrypting the keystore".into(), source: std::io::Error::other(e.to_string()) },
    )?;
    drop(key);
    let written = work.path.join("keystore.json");
    let text = std::fs::read(&written).map_err(io_error(format!("reading {}", written.display())))?;
    let mut json: Value = serde_json::from_slice(&text)
        .map_err(|e| KeyError::BadKeystore { path: written.clone(), reason: format!("alloy wrote no JSON ({e})") })?;
    json["address"] = Value::String(hex::encode(signer.address()));
    Ok(json)
}

/// Writes the keystore `json` to `path` atomically (a 0600 temporary file in the same folder,
/// then linked into place), never over an existing file.
fn write_new_keystore(path: &Path, json: &Value, address: Address) -> Result<(), KeyError> {
    let folder = parent_folder(path);
    create_folder(folder)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "keystore".into());
    let temp = folder.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    let mut text = serde_json::to_vec_pretty(json)
        .map_err(|e| KeyError::BadKeystore { path: path.to_path_buf(), reason: e.to_string() })?;
    text.push(b'\n');
    write_file_0600(&temp, &text)?;
    let placed = match std::fs::hard_link(&temp, path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        // A file system without hard links: rename, after checking nothing is there.
        Err(_) if path.symlink_metadata().is_err() => std::fs::rename(&temp, path).map(|()| true),
        Err(_) => Ok(false),
    };
    let _ = std::fs::remove_file(&temp);
    match placed {
        Ok(true) => {
            sync_parent(path);
            Ok(())
        }
        Ok(false) => Err(KeyError::Exists {
            address: read_keystore_json(path)
                .ok()
                .flatten()
                .and_then(|(json, _)| json_address(&json))
                .or(Some(address)),
            store: Store::Keystore { path: path.to_path_buf() },
        }),
        Err(e) => Err(io_error(format!("writing the keystore file {}", path.display()))(e)),
    }
}

fn parent_folder(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Creates `folder` and its missing parents, 0700 on Unix. An existing folder is left as it is.
fn create_folder(folder: &Path) -> Result<(), KeyError> {
    if folder.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(folder).map_err(io_error(format!("creating the folder {}", folder.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700))
            .map_err(io_error(format!("making {} private", folder.display())))?;
    }
    Ok(())
}

/// Creates `path` (which must not exist), 0600 on Unix, with `bytes`, flushed to disk.
fn write_file_0600(path: &Path, bytes: &[u8]) -> Result<(), KeyError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let result = options.open(path).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    result.map_err(|e| {
        let _ = std::fs::remove_file(path);
        io_error(format!("writing {}", path.display()))(e)
    })
}

/// Flushes the folder holding `path`, so a rename or removal survives a crash (Unix).
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Ok(folder) = std::fs::File::open(parent_folder(path)) {
        let _ = folder.sync_all();
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// A folder only its owner can enter, removed with its content when dropped.
struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    fn create(parent: &Path, prefix: &str) -> Result<PrivateDir, KeyError> {
        let path = parent.join(format!("{prefix}-{:016x}.tmp", rand::random::<u64>()));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&path).map_err(io_error(format!("creating the folder {}", path.display())))?;
        Ok(PrivateDir { path })
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
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

    #[test]
    fn malformed_keystores_are_refused_before_decryption() {
        let good = serde_json::json!({
            "version": 3, "id": "3198bc9c-6672-5ab3-d995-4942343ae5b6",
            "Crypto": {"cipher": "aes-128-ctr", "cipherparams": {"iv": "6087dab2f9fdbbfaddc31a909735c1e6"},
              "ciphertext": "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46", "kdf": "pbkdf2",
              "kdfparams": {"c": 262144, "dklen": 32, "prf": "hmac-sha256", "salt": "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd"},
              "mac": "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2"}
        });
        let (normal, changed) = normalize_keystore(good.clone()).unwrap();
        assert!(changed && normal.get("crypto").is_some() && normal.get("Crypto").is_none());
        let mut short_iv = good.clone();
        short_iv["Crypto"]["cipherparams"]["iv"] = "6087".into();
        assert!(normalize_keystore(short_iv).unwrap_err().contains("`iv` is 2 bytes"));
        let mut huge = good.clone();
        huge["Crypto"]["kdf"] = "scrypt".into();
        huge["Crypto"]["kdfparams"] = serde_json::json!({"dklen": 32, "n": 1 << 24, "r": 8, "p": 1, "salt": "ab"});
        assert!(normalize_keystore(huge).unwrap_err().contains("MiB"));
        let mut dklen = good;
        dklen["Crypto"]["kdfparams"]["dklen"] = 16.into();
        assert!(normalize_keystore(dklen).unwrap_err().contains("dklen"));
    }
}
