//! The wallet's key store (`paperchain_wallet::keys`) against a real Secret Service
//! (gnome-keyring, unlocked, on a private D-Bus session bus: `paperchain_testkit::keyring`)
//! and without one (a bus with nothing on it, or no bus), and its V3 keystore files.
//!
//! Whatever touches the keyring runs in a child process: this test binary run again on
//! [`child_process_step_helper_runs_only_when_a_test_spawns_it`] with the session's
//! environment (`HOME`, `XDG_*`, `DBUS_SESSION_BUS_ADDRESS`) and `PAPERCHAIN_WALLET_*`
//! variables, so the test process's own environment is never changed and every read is a
//! new process reading what another one wrote. The child prints one JSON line, which the test
//! reads. Tests that never leave the keystore file run in-process.
//!
//! gnome-keyring, dbus-daemon, dbus-send and secret-tool come from `cargo xtask setup`;
//! without them these tests fail saying so.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use alloy::primitives::Address;
use alloy::signers::local::PrivateKeySigner;
use paperchain_testkit::keyring::{NoSecretService, SecretService, Session, secret_tool};
use paperchain_wallet::keys::{self, KeyConfig, KeyError, PasswordSource, Store, StoreChoice};
use serde_json::{Value, json};
use zeroize::Zeroizing;

/// Set in a child: which step to run.
const STEP_VAR: &str = "PAPERCHAIN_KEYRING_TEST_STEP";
/// Set in a child: the data folder `KeyConfig::from_env` gets.
const DATA_DIR_VAR: &str = "PAPERCHAIN_KEYRING_TEST_DATA_DIR";
/// Set in a child for `import-keystore`: the file to import.
const IMPORT_VAR: &str = "PAPERCHAIN_KEYRING_TEST_IMPORT";
/// What starts the child's answer on its standard output.
const ANSWER: &str = "paperchain-keyring-step: ";
/// The spec's PBKDF2 test vector (Web3 Secret Storage), password "testpassword".
const PBKDF2_VECTOR: &str = r#"{
  "crypto": {
    "cipher": "aes-128-ctr",
    "cipherparams": {"iv": "6087dab2f9fdbbfaddc31a909735c1e6"},
    "ciphertext": "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46",
    "kdf": "pbkdf2",
    "kdfparams": {"c": 262144, "dklen": 32, "prf": "hmac-sha256",
      "salt": "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd"},
    "mac": "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2"
  },
  "id": "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  "version": 3
}"#;
/// The private key in [`PBKDF2_VECTOR`].
const PBKDF2_VECTOR_KEY: &str = "7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d";

/// Not a check of its own: the body of the child processes the tests below start (this
/// binary, run with `--exact` on this name and [`STEP_VAR`] set). Run by the harness without
/// that variable, it returns at once.
#[test]
fn child_process_step_helper_runs_only_when_a_test_spawns_it() {
    let Ok(step) = std::env::var(STEP_VAR) else { return };
    let data_dir = PathBuf::from(std::env::var_os(DATA_DIR_VAR).expect("the data folder is given"));
    let cfg = KeyConfig::from_env(&data_dir);
    let answer = match step.as_str() {
        "status" => json!({"status": keys::status(&cfg)}),
        "create" => outcome(keys::create(&cfg)),
        "load" => outcome(keys::load(&cfg)),
        "load-in-spawn-blocking" => {
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            let result = runtime.block_on(async move {
                tokio::task::spawn_blocking(move || keys::load(&cfg)).await.expect("the blocking task ends")
            });
            outcome(result)
        }
        "import-hex" => {
            let mut line = Zeroizing::new(String::new());
            std::io::stdin().read_line(&mut line).expect("the key is on stdin");
            outcome(keys::import_private_key(&cfg, &line))
        }
        "import-keystore" => {
            let file = PathBuf::from(std::env::var_os(IMPORT_VAR).expect("the file to import is given"));
            let result = cfg
                .password
                .read(&format!("the keystore {}", file.display()))
                .and_then(|password| keys::import_keystore(&cfg, &file, &password));
            outcome(result)
        }
        "solana-create" => solana_outcome(keys::create_solana(&cfg)),
        "solana-load" => solana_outcome(keys::load_solana(&cfg)),
        "solana-import" => {
            let mut line = Zeroizing::new(String::new());
            std::io::stdin().read_line(&mut line).expect("the key is on stdin");
            solana_outcome(keys::import_solana(&cfg, &line))
        }
        "solana-remove" => match keys::remove_solana(&cfg) {
            Ok(removed) => json!({"removed": removed.map(|s| s.to_string())}),
            Err(e) => error_json(&e),
        },
        "seal-create" | "seal-read" => match keys::seal_key(&cfg, step == "seal-create") {
            // The secret itself, only to compare with what secret-tool reads.
            Ok(Some(seal)) => json!({"store": seal.store().to_string(), "hex": hex::encode(seal.bytes())}),
            Ok(None) => json!({"store": null}),
            Err(e) => error_json(&e),
        },
        "remove" => match keys::remove(&cfg) {
            Ok(removed) => json!({"removed": removed.map(|s| s.to_string())}),
            Err(e) => error_json(&e),
        },
        other => panic!("unknown step {other}"),
    };
    // On a line of its own: libtest has already printed `test <name> ... ` without a newline.
    println!("\n{ANSWER}{answer}");
}

fn outcome(result: Result<keys::Wallet, KeyError>) -> Value {
    match result {
        Ok(wallet) => json!({
            "address": wallet.address().to_string(),
            "store": wallet.store().to_string(),
            "store_json": wallet.store(),
            "debug": format!("{wallet:?}"),
        }),
        Err(e) => error_json(&e),
    }
}

fn solana_outcome(result: Result<keys::SolanaWallet, KeyError>) -> Value {
    match result {
        Ok(wallet) => {
            json!({"address": wallet.address(), "store": wallet.store().to_string(), "debug": format!("{wallet:?}")})
        }
        Err(e) => error_json(&e),
    }
}

fn error_json(e: &KeyError) -> Value {
    json!({"error": e.to_string(), "error_debug": format!("{e:?}"), "kind": kind(e)})
}

fn kind(e: &KeyError) -> &'static str {
    match e {
        KeyError::NoWallet { .. } => "NoWallet",
        KeyError::Exists { .. } => "Exists",
        KeyError::NoKeyring(_) => "NoKeyring",
        KeyError::Keyring(_) => "Keyring",
        KeyError::Password(_) => "Password",
        KeyError::BadKey(_) => "BadKey",
        KeyError::BadKeystore { .. } => "BadKeystore",
        KeyError::Io { .. } => "Io",
        KeyError::Config(_) => "Config",
        KeyError::SolanaExists { .. } => "SolanaExists",
    }
}

/// One child process: `step` in `session`, with the wallet variables `vars` (every other
/// `PAPERCHAIN_WALLET_*` removed) and `stdin`; its answer.
fn step(session: &Session, data_dir: &Path, step: &str, vars: &[(&str, OsString)], stdin: Option<&str>) -> Value {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut command = Command::new(exe);
    // The test's name in this binary: its module, then the function.
    command.args(["--exact", "keyring::child_process_step_helper_runs_only_when_a_test_spawns_it", "--nocapture"]);
    command.args(["--test-threads", "1"]);
    session.apply(&mut command);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("PAPERCHAIN_WALLET_") {
            command.env_remove(key);
        }
    }
    command.env(STEP_VAR, step).env(DATA_DIR_VAR, data_dir);
    command.envs(vars.iter().map(|(k, v)| (*k, v)));
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().expect("the test binary starts again");
    {
        let mut input = child.stdin.take().expect("stdin is piped");
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).expect("the child reads its stdin");
        }
    }
    let out = child.wait_with_output().expect("the child ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answers: Vec<&str> = stdout.lines().filter_map(|l| l.split_once(ANSWER).map(|(_, a)| a)).collect();
    assert!(
        out.status.success() && answers.len() == 1,
        "step {step} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(answers[0]).expect("the answer is JSON")
}

/// A keyring account no other test (or user) has.
fn unique_account(name: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("test-{name}-{}-{nanos}", std::process::id())
}

fn var(key: &str, value: impl Into<OsString>) -> (&str, OsString) {
    (key, value.into())
}

/// The private key's hex digits (no 0x), for the scans.
fn key_digits(signer: &PrivateKeySigner) -> Zeroizing<String> {
    Zeroizing::new(hex::encode(signer.to_bytes()))
}

/// Panics when any regular file under `root` holds the key (`digits`, 64 hex digits) in
/// clear: the digits in lower or upper case, with or without 0x, or its 32 raw bytes.
fn assert_key_in_no_file(root: &Path, digits: &str) {
    let raw = hex::decode(digits).unwrap();
    let needles: Vec<Vec<u8>> = vec![digits.to_lowercase().into_bytes(), digits.to_uppercase().into_bytes(), raw];
    let mut files = Vec::new();
    collect_files(root, &mut files);
    assert!(!files.is_empty(), "no file under {}", root.display());
    for file in &files {
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        for needle in &needles {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_slice()),
                "{} holds the private key in clear",
                file.display()
            );
        }
    }
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let meta = path.symlink_metadata().unwrap();
        if meta.is_dir() {
            collect_files(&path, files);
        } else if meta.is_file() {
            files.push(path);
        }
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn write_password_file(dir: &Path, password: &str) -> PathBuf {
    let path = dir.join("wallet-password");
    std::fs::write(&path, format!("{password}\n")).unwrap();
    path
}

fn address_of(value: &Value) -> Address {
    value["address"].as_str().unwrap_or_else(|| panic!("no address in {value}")).parse().unwrap()
}

#[test]
fn a_key_stored_in_gnome_keyring_by_one_process_is_read_by_another() {
    let service = SecretService::start();
    let data = service.home().join(".local/share/paperchain");
    let account = unique_account("roundtrip");
    let vars = [var("PAPERCHAIN_WALLET_ACCOUNT", &account)];

    let status = step(&service, &data, "status", &vars, None)["status"].clone();
    assert_eq!(status["keyring_available"], true, "{status}");
    assert_eq!(status["keyring_backend"], "Secret Service", "{status}");
    assert!(status["store"].is_null() && status["keyring_unavailable_reason"].is_null(), "{status}");

    let signer = PrivateKeySigner::random();
    let digits = key_digits(&signer);
    let imported = step(&service, &data, "import-hex", &vars, Some(&format!("0x{}\n", *digits)));
    assert_eq!(imported["store"], "Secret Service (keyring)", "{imported}");
    assert_eq!(imported["store_json"], json!({"kind": "keyring", "backend": "Secret Service"}));
    assert_eq!(address_of(&imported), signer.address());
    assert!(!imported["debug"].as_str().unwrap().contains(&*digits), "the Debug output shows the key");

    // A new process reads it back, also from a tokio runtime's blocking pool.
    for read in ["load", "load-in-spawn-blocking"] {
        let loaded = step(&service, &data, read, &vars, None);
        assert_eq!(address_of(&loaded), signer.address(), "{read}: {loaded}");
        assert_eq!(loaded["store"], "Secret Service (keyring)", "{read}: {loaded}");
    }
    let status = step(&service, &data, "status", &vars, None)["status"].clone();
    assert_eq!(status["store"], json!({"kind": "keyring", "backend": "Secret Service"}), "{status}");
    assert_eq!(status["address"].as_str().unwrap().parse::<Address>().unwrap(), signer.address());

    // libsecret's secret-tool, an independent reader, finds the 0x-hex key under service/user.
    let lookup = secret_tool(&service, &["lookup", "service", "paperchain", "username", &account]);
    assert!(lookup.status.success(), "secret-tool lookup failed: {}", String::from_utf8_lossy(&lookup.stderr));
    assert!(lookup.stdout == format!("0x{}", *digits).as_bytes(), "secret-tool reads another secret");

    // A second wallet is refused, naming the first.
    let again = step(&service, &data, "create", &vars, None);
    assert_eq!(again["kind"], "Exists", "{again}");
    let message = again["error"].as_str().unwrap();
    assert!(
        message.contains(&signer.address().to_string()) && message.contains("Secret Service (keyring)"),
        "{message}"
    );

    // Nothing fell back to a keystore file, and no file of the session holds the key in clear.
    assert!(!data.join("wallet/keystore.json").exists());
    let keyrings = service.home().join(".local/share/keyrings");
    assert!(keyrings.join("login.keyring").is_file(), "gnome-keyring kept no keyring file in the temporary home");
    assert_key_in_no_file(service.root(), &digits);
}

/// The secret that seals the confirmed configuration is kept where the key is: in the
/// keyring when one answers (read back by secret-tool, never replaced once made), else in a
/// 0600 file beside the keystore.
#[test]
fn the_seal_of_the_confirmed_configuration_is_kept_in_the_key_store() {
    let service = SecretService::start();
    let data = service.home().join(".local/share/paperchain");
    let account = unique_account("seal");
    let vars = [var("PAPERCHAIN_WALLET_ACCOUNT", &account)];
    assert_eq!(step(&service, &data, "seal-read", &vars, None), json!({"store": null}), "none until made");
    let made = step(&service, &data, "seal-create", &vars, None);
    assert_eq!(made["store"], "Secret Service (keyring)", "{made}");
    let hex = made["hex"].as_str().unwrap().to_string();
    assert_eq!(hex.len(), 64);
    for again in ["seal-create", "seal-read"] {
        assert_eq!(step(&service, &data, again, &vars, None)["hex"], hex.as_str(), "{again}: the same secret");
    }
    let lookup =
        secret_tool(&service, &["lookup", "service", "paperchain", "username", &format!("{account}.policy-seal")]);
    assert!(lookup.status.success(), "secret-tool lookup failed: {}", String::from_utf8_lossy(&lookup.stderr));
    assert_eq!(String::from_utf8_lossy(&lookup.stdout), hex);
    assert!(!data.join("wallet/policy-seal.key").exists(), "nothing fell back to a file");

    let session = NoSecretService::empty_bus();
    let data = session.root().join("data");
    let made = step(&session, &data, "seal-create", &vars, None);
    let file = data.join("wallet/policy-seal.key");
    assert_eq!(made["store"], format!("keystore file {}", file.display()), "{made}");
    assert_eq!(mode(&file) & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), made["hex"].as_str().unwrap());
    assert_eq!(step(&session, &data, "seal-create", &vars, None)["hex"], made["hex"], "not replaced");
}

#[test]
fn a_solana_key_lives_in_the_keyring_beside_the_evm_key() {
    let service = SecretService::start();
    let data = service.home().join(".local/share/paperchain");
    let account = unique_account("solana");
    let vars = [var("PAPERCHAIN_WALLET_ACCOUNT", &account)];
    assert_eq!(step(&service, &data, "solana-load", &vars, None)["kind"], "NoWallet");

    // A keypair as Phantom exports it: base58 of secret then public key.
    let key = paperchain_protocol::exact_svm::SigningKey::from_bytes(&rand::random::<[u8; 32]>());
    let exported = paperchain_protocol::exact_svm::to_base58(&key.to_keypair_bytes());
    let address = paperchain_protocol::exact_svm::to_base58(key.verifying_key().as_bytes());
    let imported = step(&service, &data, "solana-import", &vars, Some(&format!("{exported}\n")));
    assert_eq!(imported["address"], address, "{imported}");
    assert_eq!(imported["store"], "Secret Service (keyring)");
    assert!(!imported["debug"].as_str().unwrap().contains(&exported));
    // Another process reads it back; the EVM entry is untouched (there is none).
    assert_eq!(step(&service, &data, "solana-load", &vars, None)["address"], address);
    assert_eq!(step(&service, &data, "load", &vars, None)["kind"], "NoWallet");
    // libsecret's own reader finds it under <account>.solana.
    let lookup = secret_tool(&service, &["lookup", "service", "paperchain", "username", &format!("{account}.solana")]);
    assert!(lookup.stdout == exported.as_bytes(), "secret-tool reads another secret");
    // A second one is refused naming the first; a wrong keypair is refused without repeating it.
    let again = step(&service, &data, "solana-create", &vars, None);
    assert_eq!(again["kind"], "SolanaExists", "{again}");
    assert!(again["error"].as_str().unwrap().contains(&address));
    let mut mismatched = key.to_keypair_bytes();
    mismatched[40] ^= 1;
    let mismatched = paperchain_protocol::exact_svm::to_base58(&mismatched);
    let bad = step(&service, &data, "solana-import", &vars, Some(&format!("{mismatched}\n")));
    assert_eq!(bad["kind"], "BadKey", "{bad}");
    assert!(!bad["error"].as_str().unwrap().contains(&mismatched));
    // A solana-keygen file imports too, once the first is removed.
    assert_eq!(step(&service, &data, "solana-remove", &vars, None)["removed"], "Secret Service (keyring)");
    let file = serde_json::to_string(&key.to_keypair_bytes().to_vec()).unwrap();
    assert_eq!(step(&service, &data, "solana-import", &vars, Some(&format!("{file}\n")))["address"], address);
    // The keystore store keeps no Solana key, and says so.
    let keystore = [var("PAPERCHAIN_WALLET_ACCOUNT", &account), var("PAPERCHAIN_WALLET_STORE", "keystore")];
    let refused = step(&service, &data, "solana-load", &keystore, None);
    assert!(refused["error"].as_str().unwrap().contains("OS keyring only"), "{refused}");
    // No file of the session holds the secret: not its raw bytes or hex, not its base58.
    assert_key_in_no_file(service.root(), &hex::encode(key.to_bytes()));
    let mut files = Vec::new();
    collect_files(service.root(), &mut files);
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!bytes.windows(exported.len()).any(|w| w == exported.as_bytes()), "{} holds the key", file.display());
    }
}

#[test]
fn a_key_created_in_the_keyring_is_removed_and_a_foundry_keystore_imported_into_it() {
    let service = SecretService::start();
    let data = service.home().join(".local/share/paperchain");
    let account = unique_account("create");
    let vars = [var("PAPERCHAIN_WALLET_ACCOUNT", &account), var("PAPERCHAIN_WALLET_STORE", "keyring")];

    let created = step(&service, &data, "create", &vars, None);
    assert_eq!(created["store"], "Secret Service (keyring)", "{created}");
    let address = address_of(&created);
    let status = step(&service, &data, "status", &vars, None)["status"].clone();
    assert_eq!(status["address"].as_str().unwrap().parse::<Address>().unwrap(), address, "{status}");
    let lookup = secret_tool(&service, &["lookup", "service", "paperchain", "username", &account]);
    let stored = Zeroizing::new(String::from_utf8(lookup.stdout).unwrap());
    assert!(stored.starts_with("0x") && stored.len() == 66, "the entry is not a 0x-hex key");
    assert_eq!(stored.parse::<PrivateKeySigner>().unwrap().address(), address);

    let removed = step(&service, &data, "remove", &vars, None);
    assert_eq!(removed, json!({"removed": "Secret Service (keyring)"}));
    let lookup = secret_tool(&service, &["lookup", "service", "paperchain", "username", &account]);
    assert!(lookup.stdout.is_empty(), "the entry is still in the keyring");
    let status = step(&service, &data, "status", &vars, None)["status"].clone();
    assert!(status["store"].is_null() && status["address"].is_null(), "{status}");
    assert_eq!(step(&service, &data, "load", &vars, None)["kind"], "NoWallet");
    assert_eq!(step(&service, &data, "remove", &vars, None), json!({"removed": null}));

    // A keystore as Foundry's `cast wallet` writes it (alloy/eth-keystore: scrypt, no
    // address field), imported into the keyring with its password from the password file.
    let foundry = PrivateKeySigner::random();
    let folder = service.root().join("foundry");
    std::fs::create_dir(&folder).unwrap();
    let mut rng = alloy::signers::k256::elliptic_curve::rand_core::OsRng;
    PrivateKeySigner::encrypt_keystore(&folder, &mut rng, foundry.to_bytes(), "foundry password", Some("key.json"))
        .unwrap();
    let password_file = write_password_file(service.root(), "foundry password");
    let vars = [
        var("PAPERCHAIN_WALLET_ACCOUNT", &account),
        var("PAPERCHAIN_WALLET_PASSWORD_FILE", &password_file),
        var(IMPORT_VAR, folder.join("key.json")),
    ];
    let imported = step(&service, &data, "import-keystore", &vars, None);
    assert_eq!(imported["store"], "Secret Service (keyring)", "{imported}");
    assert_eq!(address_of(&imported), foundry.address());
    let lookup = secret_tool(&service, &["lookup", "service", "paperchain", "username", &account]);
    assert_eq!(
        String::from_utf8(lookup.stdout).unwrap().parse::<PrivateKeySigner>().unwrap().address(),
        foundry.address()
    );
    assert_key_in_no_file(service.root(), &key_digits(&foundry));
}

#[test]
fn without_a_secret_service_the_keystore_file_is_used() {
    let session = NoSecretService::empty_bus();
    let data = session.root().join("data");
    let password_file = write_password_file(session.root(), "correct horse battery");
    let account = unique_account("fallback");
    let vars = [var("PAPERCHAIN_WALLET_ACCOUNT", &account)];
    let with_password =
        [var("PAPERCHAIN_WALLET_ACCOUNT", &account), var("PAPERCHAIN_WALLET_PASSWORD_FILE", &password_file)];

    let status = step(&session, &data, "status", &vars, None)["status"].clone();
    assert_eq!(status["keyring_available"], false, "{status}");
    let reason = status["keyring_unavailable_reason"].as_str().unwrap();
    assert!(reason.contains("no Secret Service on the D-Bus session bus"), "{reason}");
    assert!(status["store"].is_null(), "{status}");

    // Without a password source (stdin is no terminal), creating says which variables to set.
    let refused = step(&session, &data, "create", &vars, None);
    assert_eq!(refused["kind"], "Password", "{refused}");
    let message = refused["error"].as_str().unwrap();
    assert!(message.contains("PAPERCHAIN_WALLET_PASSWORD_FILE") && message.contains("PAPERCHAIN_WALLET_PASSWORD"));

    let created = step(&session, &data, "create", &with_password, None);
    let path = data.join("wallet/keystore.json");
    assert_eq!(created["store"], format!("keystore file {}", path.display()), "{created}");
    assert_eq!(created["store_json"], json!({"kind": "keystore", "path": path}));
    let address = address_of(&created);

    // The file: V3 JSON, scrypt, its address field, private, decryptable with the password.
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["version"], 3);
    assert_eq!(json["crypto"]["kdf"], "scrypt");
    assert_eq!(json["crypto"]["cipher"], "aes-128-ctr");
    assert_eq!(json["address"], hex::encode(address));
    #[cfg(unix)]
    {
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
    }
    let decrypted = PrivateKeySigner::decrypt_keystore(&path, "correct horse battery").unwrap();
    assert_eq!(decrypted.address(), address);
    assert_key_in_no_file(session.root(), &key_digits(&decrypted));
    let leftovers: Vec<_> =
        std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["keystore.json"], "temporary files are left beside the keystore");

    // The status reads the address without the password; loading needs it.
    let status = step(&session, &data, "status", &vars, None)["status"].clone();
    assert_eq!(status["store"], json!({"kind": "keystore", "path": path}), "{status}");
    assert_eq!(status["address"].as_str().unwrap().parse::<Address>().unwrap(), address);
    assert_eq!(address_of(&step(&session, &data, "load", &with_password, None)), address);
    let wrong = [var("PAPERCHAIN_WALLET_ACCOUNT", &account), var("PAPERCHAIN_WALLET_PASSWORD", "wrong horse")];
    let refused = step(&session, &data, "load", &wrong, None);
    assert_eq!(refused["kind"], "Password", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("wrong password"), "{refused}");
    assert!(!refused.to_string().contains("wrong horse"), "the error shows the password: {refused}");

    // A second key is refused; the keyring alone is refused with the reason.
    let again = step(&session, &data, "create", &with_password, None);
    assert_eq!(again["kind"], "Exists", "{again}");
    assert!(again["error"].as_str().unwrap().contains(&address.to_string()), "{again}");
    let only_keyring = [var("PAPERCHAIN_WALLET_ACCOUNT", &account), var("PAPERCHAIN_WALLET_STORE", "keyring")];
    let refused = step(&session, &data, "create", &only_keyring, None);
    assert_eq!(refused["kind"], "NoKeyring", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("no Secret Service"), "{refused}");

    assert_eq!(
        step(&session, &data, "remove", &vars, None),
        json!({"removed": format!("keystore file {}", path.display())})
    );
    assert!(!path.exists());
    assert_eq!(step(&session, &data, "remove", &vars, None), json!({"removed": null}));

    // No bus at all: the reason says so.
    let nothing = NoSecretService::no_bus();
    let status = step(&nothing, &data, "status", &vars, None)["status"].clone();
    assert_eq!(status["keyring_available"], false, "{status}");
    let reason = status["keyring_unavailable_reason"].as_str().unwrap();
    assert!(reason.contains("no D-Bus session bus"), "{reason}");
}

#[test]
fn auto_keeps_using_an_existing_keystore_file_over_the_keyring() {
    let service = SecretService::start();
    let data = service.home().join(".local/share/paperchain");
    let password_file = write_password_file(service.root(), "a password");
    let account = unique_account("auto");
    let auto = [var("PAPERCHAIN_WALLET_ACCOUNT", &account), var("PAPERCHAIN_WALLET_PASSWORD_FILE", &password_file)];
    let in_file = [
        var("PAPERCHAIN_WALLET_ACCOUNT", &account),
        var("PAPERCHAIN_WALLET_PASSWORD_FILE", &password_file),
        var("PAPERCHAIN_WALLET_STORE", "keystore"),
    ];
    let in_keyring = [var("PAPERCHAIN_WALLET_ACCOUNT", &account), var("PAPERCHAIN_WALLET_STORE", "keyring")];

    let file_wallet = address_of(&step(&service, &data, "create", &in_file, None));
    let other = PrivateKeySigner::random();
    let refused = step(&service, &data, "import-hex", &auto, Some(&key_digits(&other)));
    assert_eq!(refused["kind"], "Exists", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("keystore file"), "{refused}");
    let keyring_wallet = step(&service, &data, "import-hex", &in_keyring, Some(&key_digits(&other)));
    assert_eq!(address_of(&keyring_wallet), other.address());

    let status = step(&service, &data, "status", &auto, None)["status"].clone();
    assert_eq!(status["store"]["kind"], "keystore", "{status}");
    assert_eq!(status["address"].as_str().unwrap().parse::<Address>().unwrap(), file_wallet);
    assert!(status["notes"].to_string().contains(&other.address().to_string()), "{status}");
    let loaded = step(&service, &data, "load", &auto, None);
    assert_eq!(address_of(&loaded), file_wallet, "{loaded}");
    assert!(loaded["store"].as_str().unwrap().starts_with("keystore file"), "{loaded}");

    // Removing in auto removes the file in use; the keyring's key is then the wallet's.
    let removed = step(&service, &data, "remove", &auto, None);
    assert!(removed["removed"].as_str().unwrap().starts_with("keystore file"), "{removed}");
    assert_eq!(address_of(&step(&service, &data, "load", &auto, None)), other.address());
}

fn keystore_config(dir: &Path, password: &str) -> KeyConfig {
    KeyConfig {
        account: unique_account("keystore"),
        keystore_path: dir.join("wallet/keystore.json"),
        store: StoreChoice::Keystore,
        password: PasswordSource::Given(Zeroizing::new(password.to_string())),
    }
}

#[test]
fn foundry_and_geth_v3_keystores_are_imported_into_the_keystore_file() {
    let dir = tempfile::tempdir().unwrap();

    // Foundry's format (eth-keystore through alloy: scrypt, no address field).
    let foundry = PrivateKeySigner::random();
    let mut rng = alloy::signers::k256::elliptic_curve::rand_core::OsRng;
    PrivateKeySigner::encrypt_keystore(dir.path(), &mut rng, foundry.to_bytes(), "foundry password", Some("cast.json"))
        .unwrap();
    let cfg = keystore_config(&dir.path().join("a"), "foundry password");
    let wallet = keys::import_keystore(&cfg, &dir.path().join("cast.json"), "foundry password").unwrap();
    assert_eq!(wallet.address(), foundry.address());
    assert_eq!(wallet.store(), &Store::Keystore { path: cfg.keystore_path.clone() });
    let json: Value = serde_json::from_slice(&std::fs::read(&cfg.keystore_path).unwrap()).unwrap();
    assert_eq!(json["address"], hex::encode(foundry.address()), "the copy carries the address");
    assert_eq!(json["crypto"]["kdf"], "scrypt");
    #[cfg(unix)]
    assert_eq!(mode(&cfg.keystore_path), 0o600);
    assert_eq!(keys::load(&cfg).unwrap().address(), foundry.address());

    // The Web3 Secret Storage PBKDF2 test vector (geth's format).
    std::fs::write(dir.path().join("geth.json"), PBKDF2_VECTOR).unwrap();
    let expected = PBKDF2_VECTOR_KEY.parse::<PrivateKeySigner>().unwrap().address();
    assert_eq!(expected, "0x008AeEda4D805471dF9b2A5B0f38A0C3bCBA786b".parse::<Address>().unwrap());
    let cfg = keystore_config(&dir.path().join("b"), "testpassword");
    let wrong = keys::import_keystore(&cfg, &dir.path().join("geth.json"), "not the password").unwrap_err();
    assert!(matches!(wrong, KeyError::Password(_)), "{wrong:?}");
    assert!(!format!("{wrong} {wrong:?}").contains("not the password"));
    assert!(!cfg.keystore_path.exists(), "a failed import wrote a file");
    let wallet = keys::import_keystore(&cfg, &dir.path().join("geth.json"), "testpassword").unwrap();
    assert_eq!(wallet.address(), expected);
    let json: Value = serde_json::from_slice(&std::fs::read(&cfg.keystore_path).unwrap()).unwrap();
    assert_eq!(json["crypto"]["kdf"], "pbkdf2");
    assert_eq!(json["address"], hex::encode(expected));
    assert_eq!(keys::load(&cfg).unwrap().address(), expected);
    assert_key_in_no_file(dir.path(), PBKDF2_VECTOR_KEY);

    // A second import is refused, naming the wallet there.
    let again = keys::import_keystore(&cfg, &dir.path().join("cast.json"), "foundry password").unwrap_err();
    assert!(matches!(&again, KeyError::Exists { address: Some(a), .. } if *a == expected), "{again:?}");
}

#[test]
fn errors_and_debug_output_never_contain_the_key_or_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = keystore_config(dir.path(), "s3cret-pass");
    let signer = PrivateKeySigner::random();
    let digits = key_digits(&signer);

    // Looks like a key, one character wrong; one digit too many; and a non-key value.
    let mut wrong_char = digits.to_string();
    wrong_char.replace_range(17..18, "g");
    let too_long = format!("{}a", *digits);
    for bad in [format!("0x{wrong_char}"), wrong_char.clone(), too_long.clone(), "0".repeat(64)] {
        let error = keys::import_private_key(&cfg, &bad).unwrap_err();
        assert!(matches!(error, KeyError::BadKey(_)), "{error:?}");
        let shown = format!("{error} {error:?}");
        let bad_digits = bad.trim_start_matches("0x");
        for window in bad_digits.as_bytes().windows(8) {
            let window = std::str::from_utf8(window).unwrap();
            if window != "00000000" {
                assert!(!shown.to_lowercase().contains(&window.to_lowercase()), "the error repeats the input: {shown}");
            }
        }
        assert!(!cfg.keystore_path.exists());
    }

    let wallet = keys::import_private_key(&cfg, &format!("0x{}", digits.to_uppercase())).unwrap();
    assert_eq!(wallet.address(), signer.address());
    let debug = format!("{wallet:?} {:?}", cfg);
    assert!(!debug.to_lowercase().contains(&*digits) && !debug.contains("s3cret-pass"), "{debug}");
    assert!(debug.contains(&signer.address().to_string().to_lowercase()), "{debug}");
    let exists = keys::import_private_key(&cfg, &digits).unwrap_err();
    let shown = format!("{exists} {exists:?}");
    assert!(!shown.to_lowercase().contains(&*digits), "{shown}");
    assert!(shown.contains(&signer.address().to_string()) && shown.contains("keystore file"), "{shown}");

    let wrong = keystore_config(dir.path(), "wrong-pass");
    let error = keys::load(&wrong).unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(matches!(error, KeyError::Password(_)) && !shown.contains("wrong-pass"), "{shown}");
    assert_key_in_no_file(dir.path(), &digits);

    assert_eq!(keys::remove(&cfg).unwrap(), Some(Store::Keystore { path: cfg.keystore_path.clone() }));
    assert!(!cfg.keystore_path.exists());
    assert_eq!(keys::remove(&cfg).unwrap(), None);
    assert!(matches!(keys::load(&cfg), Err(KeyError::NoWallet { .. })));
}
