//! `paperchain wallet`: the paying client's key (`paperchain_wallet::keys`): create, import,
//! show, remove. It never prints a key.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use paperchain_wallet::keys::{self, KeyConfig, KeyError, Status, Store};
use zeroize::Zeroizing;

/// Where the key goes, said once for every subcommand's help.
const STORES: &str = "\
The key is kept in the OS keyring (Secret Service, macOS Keychain, Windows Credential
Manager) when one answers, else in an encrypted V3 keystore file (<data dir>/wallet/keystore.json).
Environment:
  PAPERCHAIN_WALLET_STORE          auto (default), keyring or keystore
  PAPERCHAIN_WALLET_KEYSTORE       the keystore file's path
  PAPERCHAIN_WALLET_PASSWORD_FILE  a file holding the keystore's password
  PAPERCHAIN_WALLET_PASSWORD       the keystore's password (else you are asked in a terminal)
  PAPERCHAIN_WALLET_ACCOUNT        the keyring entry's user (default: wallet)";

#[derive(clap::Subcommand)]
pub enum WalletCommand {
    /// Create a new random key and print its address and where it is kept.
    #[command(after_help = STORES)]
    New,
    /// Import a key: a private key (64 hex digits) from standard input, or a V3 keystore file
    /// (Foundry's `cast wallet`, geth) with --keystore.
    #[command(after_help = STORES)]
    Import {
        /// A V3 keystore file to import; its password is read like the wallet's (password
        /// file, environment, prompt). Without it, the private key is read from standard input.
        #[arg(long, value_name = "FILE")]
        keystore: Option<PathBuf>,
    },
    /// Print the wallet's address.
    #[command(after_help = STORES)]
    Address,
    /// Where the key is kept, its address, and whether an OS keyring answers.
    #[command(after_help = STORES)]
    Status {
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete the key (asks first, unless --yes). Keep a copy: a deleted key cannot be recovered.
    #[command(after_help = STORES)]
    Remove {
        /// Do not ask (required when standard input is not a terminal).
        #[arg(long)]
        yes: bool,
    },
    /// The Solana key, which pays on Solana networks (kept in the OS keyring only).
    #[command(subcommand)]
    Solana(SolanaCommand),
    /// Files kept in the OS keyring for local calls, such as a signing certificate: a call names
    /// one as `{"keyring": "NAME"}` instead of sending it, and it never leaves this machine.
    #[command(subcommand)]
    File(FileCommand),
}

/// `paperchain wallet file …`.
#[derive(clap::Subcommand)]
pub enum FileCommand {
    /// Keep FILE as NAME. A PKCS#12 file (.p12, .pfx) is checked to open with its password, asked
    /// without echo in a terminal or read as the first line of standard input.
    Add {
        /// 1 to 64 letters, digits, '-', '_' and '.'.
        name: String,
        /// The file (64 KiB at most).
        file: PathBuf,
        /// Replace a file kept under that name.
        #[arg(long)]
        replace: bool,
    },
    /// Say whether a file is kept as NAME, its name and size (and a certificate's subject).
    Show {
        /// The name it is kept under.
        name: String,
    },
    /// Delete the file kept as NAME (asks first, unless --yes).
    Remove {
        /// The name it is kept under.
        name: String,
        /// Do not ask (required when standard input is not a terminal).
        #[arg(long)]
        yes: bool,
    },
}

/// `paperchain wallet solana …`.
#[derive(clap::Subcommand)]
pub enum SolanaCommand {
    /// Create a new random Solana key and print its address.
    New,
    /// Import a Solana key from standard input: base58 of the 64-byte keypair (what Phantom
    /// and Solflare export) or of its 32-byte secret, or a `solana-keygen` JSON key file.
    Import,
    /// Print the Solana key's address.
    Address,
    /// Delete the Solana key (asks first, unless --yes).
    Remove {
        /// Do not ask (required when standard input is not a terminal).
        #[arg(long)]
        yes: bool,
    },
}

/// Runs `cmd` with the key store configured from the environment and `data_dir`. Blocking:
/// the keyring client runs its own executor, so the work runs on a thread of its own and this
/// may be called from `main` inside a tokio runtime as well as outside one.
pub fn run(cmd: WalletCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let cfg = KeyConfig::from_env(data_dir);
    std::thread::scope(|scope| {
        scope
            .spawn(|| run_blocking(cmd, &cfg))
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the wallet command panicked")))
    })
}

fn run_blocking(cmd: WalletCommand, cfg: &KeyConfig) -> anyhow::Result<ExitCode> {
    match cmd {
        WalletCommand::New => {
            let wallet = keys::create(cfg)?;
            print_wallet("created", wallet.address(), wallet.store());
            Ok(ExitCode::SUCCESS)
        }
        WalletCommand::Import { keystore: Some(file) } => {
            let password = cfg.password.read(&format!("the keystore {}", file.display()))?;
            let wallet = keys::import_keystore(cfg, &file, &password)?;
            drop(password);
            print_wallet("imported", wallet.address(), wallet.store());
            if let Store::Keystore { .. } = wallet.store() {
                println!("the keystore file keeps the password of {}", file.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        WalletCommand::Import { keystore: None } => {
            let key = read_private_key()?;
            let wallet = keys::import_private_key(cfg, &key)?;
            drop(key);
            print_wallet("imported", wallet.address(), wallet.store());
            Ok(ExitCode::SUCCESS)
        }
        WalletCommand::Address => {
            let status = keys::status(cfg);
            match (status.address, &status.store) {
                (Some(address), Some(_)) => println!("{address}"),
                // A keystore file without an address field: its address needs the password.
                (None, Some(_)) => println!("{}", keys::load(cfg)?.address()),
                (_, None) => return Err(no_wallet(&status).into()),
            }
            Ok(ExitCode::SUCCESS)
        }
        WalletCommand::Status { json } => {
            let status = keys::status(cfg);
            let config = config_status();
            let waiting = paperchain_wallet::client::user_config(cfg, Default::default(), false)
                .ok()
                .and_then(|live| live.unconfirmed());
            if json {
                let mut value = serde_json::to_value(&status)?;
                value["config"] = serde_json::json!({
                    "file": config.file,
                    "problem": config.problem,
                    "unconfirmed": waiting.as_ref().map(|w| serde_json::json!({"changes": w.changes, "reason": w.reason})),
                });
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                print_status(&status);
                match (&config.problem, &waiting) {
                    (Some(problem), _) => println!("policy:   NOT FOLLOWED: {problem}"),
                    (None, None) => println!("policy:   {} (followed)", config.file.display()),
                    (None, Some(waiting)) => println!(
                        "policy:   {} (followed as far as you confirmed it)\n{}\n{}",
                        config.file.display(),
                        crate::money_cmd::waiting_text(waiting),
                        crate::money_cmd::WHERE_TO_CONFIRM
                    ),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        WalletCommand::Remove { yes } => remove(cfg, yes),
        WalletCommand::Solana(cmd) => solana(cmd, cfg),
        WalletCommand::File(cmd) => kept_file(cmd, cfg),
    }
}

fn kept_file(cmd: FileCommand, cfg: &KeyConfig) -> anyhow::Result<ExitCode> {
    match cmd {
        FileCommand::Add { name, file, replace } => {
            let bytes = Zeroizing::new(std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?);
            let filename = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| name.clone());
            let pkcs12 = is_pkcs12(&file, &bytes);
            let password = if pkcs12 {
                let line =
                    read_secret(&format!("Password of {} (not shown): ", file.display()), "wallet file add NAME FILE")?;
                let password = Zeroizing::new(line.trim_end_matches(['\r', '\n']).to_string());
                let identity = paperchain_engine::pdf::sign::identity::Identity::from_pkcs12(&bytes, &password, "FILE")
                    .map_err(|e| {
                        anyhow::anyhow!(
                            "{}: {}",
                            file.display(),
                            e.message.trim_start_matches("FILE/password: ").trim_start_matches("FILE: ")
                        )
                    })?;
                println!("certificate: {}", paperchain_engine::pdf::sign::chain::subject(identity.certificate()));
                Some(password)
            } else {
                None
            };
            let store =
                keys::keep_file(cfg, &name, &bytes, &filename, password.as_deref().map(String::as_str), replace)?;
            println!("kept {filename} as {name:?} in the {store}");
            println!(
                "a local call names it as {{\"keyring\": \"{name}\"}} where a file goes; it never leaves this machine"
            );
        }
        FileCommand::Show { name } => match keys::load_file(cfg, &name)? {
            Some(kept) => {
                println!(
                    "{name:?}: {} ({} bytes{})",
                    kept.filename,
                    kept.bytes.len(),
                    if kept.password.is_some() { ", with its password" } else { "" }
                );
                if let Some(password) = &kept.password
                    && let Ok(identity) =
                        paperchain_engine::pdf::sign::identity::Identity::from_pkcs12(&kept.bytes, password, "")
                {
                    println!("certificate: {}", paperchain_engine::pdf::sign::chain::subject(identity.certificate()));
                }
            }
            None => bail!("no file is kept as {name:?}"),
        },
        FileCommand::Remove { name, yes } => {
            if keys::load_file(cfg, &name)?.is_none() {
                bail!("no file is kept as {name:?}");
            }
            if !yes && !confirm(&format!("Delete the file kept as {name:?}?"))? {
                println!("kept");
                return Ok(ExitCode::FAILURE);
            }
            keys::remove_file(cfg, &name)?;
            println!("removed {name:?}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether a file is a PKCS#12 file: by its extension, else by its first bytes (a DER
/// sequence whose first element is the version 3).
fn is_pkcs12(path: &Path, bytes: &[u8]) -> bool {
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase());
    if matches!(ext.as_deref(), Some("p12" | "pfx")) {
        return true;
    }
    bytes.first() == Some(&0x30) && bytes.windows(3).take(8).any(|w| w == [0x02, 0x01, 0x03])
}

fn solana(cmd: SolanaCommand, cfg: &KeyConfig) -> anyhow::Result<ExitCode> {
    let print = |what: &str, wallet: &keys::SolanaWallet| {
        println!("{what} Solana key {}", wallet.address());
        println!("stored in the {}", wallet.store());
    };
    match cmd {
        SolanaCommand::New => print("created", &keys::create_solana(cfg)?),
        SolanaCommand::Import => {
            let key = read_secret("Solana key (base58, or a key file's JSON; not shown): ", "wallet solana import")?;
            let wallet = keys::import_solana(cfg, &key)?;
            drop(key);
            print("imported", &wallet);
        }
        SolanaCommand::Address => println!("{}", keys::load_solana(cfg)?.address()),
        SolanaCommand::Remove { yes } => {
            if !yes {
                let wallet = keys::load_solana(cfg)?;
                if !confirm(&format!("Delete the Solana key of {} from the {}?", wallet.address(), wallet.store()))? {
                    println!("nothing removed");
                    return Ok(ExitCode::FAILURE);
                }
            }
            match keys::remove_solana(cfg)? {
                Some(store) => println!("removed the Solana key from the {store}"),
                None => println!("no Solana key to remove"),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks `question` on the terminal; `true` when the answer is `yes`.
fn confirm(question: &str) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!("refusing to remove the key without --yes: standard input is not a terminal to confirm on");
    }
    print!("{question} Without a copy elsewhere it is lost for good. Type `yes`: ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).context("reading the confirmation")?;
    Ok(answer.trim() == "yes")
}

fn print_wallet(what: &str, address: alloy::primitives::Address, store: &Store) {
    println!("{what} wallet {address}");
    println!("stored in the {store}");
}

/// The private key: asked without echo in a terminal, else the first line of standard input.
fn read_private_key() -> anyhow::Result<Zeroizing<String>> {
    read_secret("Private key (64 hex digits; not shown): ", "wallet import")
}

/// A key asked with `prompt` without echo in a terminal, else the first line of standard
/// input (a key file's JSON array is one line too).
fn read_secret(prompt: &str, command: &str) -> anyhow::Result<Zeroizing<String>> {
    let stdin = std::io::stdin();
    let key = if stdin.is_terminal() {
        Zeroizing::new(rpassword::prompt_password(prompt).context("reading the key from the terminal")?)
    } else {
        // Room for a key and a line ending, so the line is not copied while it is read.
        let mut line = Zeroizing::new(String::with_capacity(512));
        stdin.lock().read_line(&mut line).context("reading the key from standard input")?;
        line
    };
    if key.trim().is_empty() {
        bail!("no key was given: pipe it in (`paperchain {command} < key.txt`) or run in a terminal");
    }
    Ok(key)
}

fn no_wallet(status: &Status) -> KeyError {
    let path = status.keystore_path.display();
    let looked = match &status.keyring_unavailable_reason {
        Some(reason) => format!("no keystore file at {path}; the keyring cannot be used: {reason}"),
        None => format!("nothing in the keyring, no keystore file at {path}"),
    };
    KeyError::NoWallet { looked }
}

/// Whether `config.toml` is a configuration Paperchain follows.
struct ConfigStatus {
    file: PathBuf,
    /// Why it is not followed: running servers keep their last valid configuration.
    problem: Option<String>,
}

fn config_status() -> ConfigStatus {
    let file = paperchain_wallet::config::config_file();
    let problem = paperchain_wallet::config::ClientConfig::load().err().map(|e| {
        format!(
            "{e}. Running Paperchain servers keep following the last valid configuration they read; new \
             processes refuse to start until the file is fixed (`paperchain config show`)"
        )
    });
    ConfigStatus { file, problem }
}

fn print_status(status: &Status) {
    match (&status.store, status.address) {
        (Some(store), Some(address)) => println!("wallet:   {address} in the {store}"),
        (Some(store), None) => println!("wallet:   in the {store} (address shown by `paperchain wallet address`)"),
        (None, _) => println!("wallet:   no wallet: paperchain wallet new | import"),
    }
    match (status.keyring_available, status.keyring_backend, &status.keyring_unavailable_reason) {
        (true, Some(backend), _) => println!("keyring:  {backend} answers"),
        (_, _, Some(reason)) => println!("keyring:  not available: {reason}"),
        _ => println!("keyring:  not available"),
    }
    let exists = if status.keystore_exists { "exists" } else { "not there" };
    println!("keystore: {} ({exists})", status.keystore_path.display());
    println!("store:    {} ({})", status.choice, keys::ENV_STORE);
    for note in &status.notes {
        println!("note:     {note}");
    }
}

fn remove(cfg: &KeyConfig, yes: bool) -> anyhow::Result<ExitCode> {
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!("refusing to remove the key without --yes: standard input is not a terminal to confirm on");
        }
        let status = keys::status(cfg);
        let Some(store) = &status.store else {
            println!("no wallet to remove");
            return Ok(ExitCode::SUCCESS);
        };
        let whose = status.address.map(|a| format!("the key of {a}")).unwrap_or_else(|| "the key".into());
        if !confirm(&format!("Delete {whose} from the {store}?"))? {
            println!("nothing removed");
            return Ok(ExitCode::FAILURE);
        }
    }
    match keys::remove(cfg)? {
        Some(store) => println!("removed the key from the {store}"),
        None => println!("no wallet to remove"),
    }
    Ok(ExitCode::SUCCESS)
}
