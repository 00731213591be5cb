//! V3 keystore files (geth's and Foundry's format): read within a size bound, normalised
//! and checked before decryption (KDF parameters bounded), decrypted, encrypted, and
//! written as a new private file (mode 0600, in a folder created private, synced).
//!
//! What this module must not do: decrypt a file whose KDF asks for more than its bounds,
//! replace an existing keystore file, or leave a key in memory that is not zeroized.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use alloy::primitives::Address;
use alloy::signers::local::{LocalSignerError, PrivateKeySigner};
use serde_json::{Map, Value};
use zeroize::Zeroizing;

use super::{KeyConfig, KeyError, MAX_KEYSTORE_BYTES, MAX_PBKDF2_ROUNDS, MAX_SCRYPT_MEMORY, Store, Wallet, io_error};

/// The keystore file's key, `None` when there is no file.
pub(super) fn load_keystore(cfg: &KeyConfig) -> Result<Option<Wallet>, KeyError> {
    let path = &cfg.keystore_path;
    let Some((json, normalized)) = read_keystore_json(path)? else { return Ok(None) };
    let password = cfg.password.read(&format!("the keystore file {}", path.display()))?;
    let signer = decrypt_keystore_json(path, &json, normalized, &password)?;
    Ok(Some(Wallet { signer, store: Store::Keystore { path: path.clone() } }))
}

/// The keystore at `path` as V3 JSON checked and normalised (a geth `Crypto` key renamed
/// `crypto`, an `id` added when missing), and whether it needed normalising; `None` when
/// there is no file.
pub(super) fn read_keystore_json(path: &Path) -> Result<Option<(Value, bool)>, KeyError> {
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
pub(super) fn json_address(json: &Value) -> Option<Address> {
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
pub(super) fn decrypt_keystore_json(
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
pub(super) fn encrypt_to_json(dest: &Path, signer: &PrivateKeySigner, password: &str) -> Result<Value, KeyError> {
    let folder = parent_folder(dest);
    create_private_folder(folder)?;
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
pub(super) fn write_new_keystore(path: &Path, json: &Value, address: Address) -> Result<(), KeyError> {
    let folder = parent_folder(path);
    create_private_folder(folder)?;
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
pub(super) fn create_private_folder(folder: &Path) -> Result<(), KeyError> {
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

/// Writes `bytes` to `path` (0600), unless a file is there already, which is left as it is:
/// written to a temporary file and linked into place, so a reader never sees half of it.
pub(super) fn write_private_file(path: &Path, bytes: &[u8]) -> Result<(), KeyError> {
    let folder = parent_folder(path);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
    let temp = folder.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    write_file_0600(&temp, bytes)?;
    let placed = match std::fs::hard_link(&temp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(_) if path.symlink_metadata().is_err() => std::fs::rename(&temp, path),
        Err(_) => Ok(()),
    };
    let _ = std::fs::remove_file(&temp);
    placed.map_err(io_error(format!("writing {}", path.display())))?;
    sync_parent(path);
    Ok(())
}

/// Flushes the folder holding `path`, so a rename or removal survives a crash (Unix).
pub(super) fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Ok(folder) = std::fs::File::open(parent_folder(path)) {
        let _ = folder.sync_all();
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// A folder only its owner can enter, removed with its content when dropped.
struct PrivateDir {
    pub(super) path: PathBuf,
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
