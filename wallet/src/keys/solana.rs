//! The wallet's Solana key (Ed25519), kept in the OS keyring beside the EVM key: created,
//! imported from a wallet's export, loaded and removed. Only the keyring holds it.
//!
//! What this module must not do: write the key anywhere but the keyring, or show it (its
//! `Debug` shows the address).

use std::fmt;

use zeroize::Zeroizing;

use super::os_keyring::{KeyringFailure, KeyringState, delete_entry, keyring_error_text, open_keyring, read_secret};
use super::{ENV_STORE, KEYRING_SERVICE, KeyConfig, KeyError, Store, StoreChoice};

/// The wallet's Solana key (Ed25519), kept in the OS keyring beside the EVM key: entry
/// service `paperchain`, user `<account>.solana`, secret the base58 of its 64-byte keypair
/// (secret then public key, the form Solana wallets export). Only the keyring holds it: with
/// `PAPERCHAIN_WALLET_STORE=keystore` there is no Solana key. Its `Debug` shows the
/// address, never the key.
pub struct SolanaWallet {
    key: paperchain_protocol::exact_svm::SigningKey,
    backend: &'static str,
}

impl SolanaWallet {
    /// The address (base58).
    pub fn address(&self) -> String {
        paperchain_protocol::exact_svm::to_base58(&paperchain_protocol::exact_svm::address_of(&self.key))
    }

    /// The signing key (for Solana payments).
    pub fn key(&self) -> &paperchain_protocol::exact_svm::SigningKey {
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
) -> Result<Option<paperchain_protocol::exact_svm::SigningKey>, KeyError> {
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
    store_solana(cfg, paperchain_protocol::exact_svm::SigningKey::from_bytes(&rand::random::<[u8; 32]>()))
}

/// Stores the Solana key `text`: base58 of the 64-byte keypair (what Phantom and Solflare
/// export) or of the 32-byte secret, or the JSON array of 64 numbers of a `solana-keygen`
/// file. Refuses with [`KeyError::SolanaExists`] when there is one. The error for a
/// malformed key never repeats it. Blocking.
pub fn import_solana(cfg: &KeyConfig, text: &str) -> Result<SolanaWallet, KeyError> {
    store_solana(cfg, parse_solana_key(text)?)
}

fn store_solana(cfg: &KeyConfig, key: paperchain_protocol::exact_svm::SigningKey) -> Result<SolanaWallet, KeyError> {
    let (entry, backend) = solana_keyring(cfg)?;
    if let Some(existing) = read_solana(&entry, cfg)? {
        let address = SolanaWallet { key: existing, backend }.address();
        return Err(KeyError::SolanaExists { address, store: Store::Keyring { backend } });
    }
    let secret = Zeroizing::new(paperchain_protocol::exact_svm::to_base58(&key.to_keypair_bytes()));
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
fn parse_solana_key(text: &str) -> Result<paperchain_protocol::exact_svm::SigningKey, KeyError> {
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
    let key = paperchain_protocol::exact_svm::SigningKey::from_bytes(&seed);
    if bytes.len() == 64 && key.verifying_key().as_bytes() != &bytes[32..] {
        return Err(KeyError::BadKey("the keypair's public half is not the public key of its secret half".into()));
    }
    Ok(key)
}
