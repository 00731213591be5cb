//! One local server per user and data folder: the server that serves a data folder holds a
//! lock in the runtime folder and writes its address beside it, so the desktop app, the CLI
//! and `paperchain mcp --stdio` use it instead of starting a second engine (and a second
//! writer of the same ledger).
//!
//! The files are `serve-<key>.lock` and `serve-<key>.json` in the runtime folder
//! ([`runtime_dir`]), `<key>` naming the data folder. The lock is an OS file lock, so it is
//! released when the process ends however it ends; an address file whose lock nobody holds
//! is a leftover of a killed server and is ignored, then replaced by the next one.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The folder for the lock and address files: `PAPERCHAIN_RUNTIME_DIR`, else
/// `$XDG_RUNTIME_DIR/paperchain`, else `run` in the data folder.
pub fn runtime_dir(data_dir: &Path) -> PathBuf {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = env("PAPERCHAIN_RUNTIME_DIR") {
        return dir;
    }
    match env("XDG_RUNTIME_DIR") {
        Some(dir) => dir.join("paperchain"),
        None => data_dir.join("run"),
    }
}

/// A running local server, as its address file describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instance {
    /// Its process id.
    pub pid: u32,
    /// Its base URL, without a trailing slash.
    pub base_url: String,
    /// The data folder it serves (its ledger, its file links).
    pub data_dir: PathBuf,
    /// The Paperchain version it runs.
    pub version: String,
    /// Unix time, in seconds, when it started serving.
    pub started_at: u64,
}

/// The lock of a data folder's server, held while it serves; dropping it removes the
/// address file and releases the lock.
#[derive(Debug)]
pub struct InstanceLock {
    // Held open for the lock; closed on drop, which releases it.
    _lock: File,
    address: PathBuf,
    published: bool,
}

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// Another server serves this data folder.
    #[error(
        "Paperchain is already serving {data} on {url} (process {pid}); use that one, or stop it first \
         (`paperchain service stop` if it runs as the background service)",
        data = .0.data_dir.display(), url = .0.base_url, pid = .0.pid
    )]
    Running(Instance),
    /// Another process holds the lock but has not written its address yet (it is starting).
    #[error("another Paperchain server is starting for {0}; wait for it, or stop it first")]
    Starting(PathBuf),
    /// The runtime folder or the lock file could not be used.
    #[error("the runtime folder {dir}: {source}", dir = .dir.display())]
    Io { dir: PathBuf, source: std::io::Error },
}

/// A short name of `data_dir` (16 hex digits): the same folder named two ways (relative,
/// through a link) has one key. The lock and address files carry it, and so does the
/// desktop app's single-instance name.
pub fn key(data_dir: &Path) -> String {
    let canonical = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    hex::encode(&digest[..8])
}

/// The file names of a data folder's lock and address, in `runtime`.
fn paths(runtime: &Path, data_dir: &Path) -> (PathBuf, PathBuf) {
    let key = key(data_dir);
    (runtime.join(format!("serve-{key}.lock")), runtime.join(format!("serve-{key}.json")))
}

fn open_lock(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).truncate(false).read(true).write(true).open(path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // Only this user may place an address here that its clients would then trust.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Takes the lock of `data_dir`'s server, in `runtime`. A server that is starting at the
/// same moment gets a few hundred milliseconds to write its address, so the error can say
/// where it is.
pub fn claim(runtime: &Path, data_dir: &Path) -> Result<InstanceLock, ClaimError> {
    let io = |source| ClaimError::Io { dir: runtime.to_path_buf(), source };
    create_private_dir(runtime).map_err(io)?;
    let (lock_path, address) = paths(runtime, data_dir);
    let lock = open_lock(&lock_path).map_err(io)?;
    for attempt in 0..10 {
        match lock.try_lock() {
            Ok(()) => {
                // A leftover of a server killed outright: nobody holds its lock any more.
                let _ = std::fs::remove_file(&address);
                return Ok(InstanceLock { _lock: lock, address, published: false });
            }
            Err(TryLockError::WouldBlock) => {
                if let Some(instance) = read_address(&address) {
                    return Err(ClaimError::Running(instance));
                }
                if attempt < 9 {
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
    }
    Err(ClaimError::Starting(data_dir.to_path_buf()))
}

impl InstanceLock {
    /// Writes the address file (whole or not at all, readable by this user only).
    pub fn publish(&mut self, instance: &Instance) -> std::io::Result<()> {
        let text = serde_json::to_vec_pretty(instance).map_err(std::io::Error::other)?;
        let partial = self.address.with_extension("json.partial");
        let mut options = OpenOptions::new();
        options.create(true).truncate(true).write(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&partial)?;
        file.write_all(&text)?;
        file.sync_all()?;
        std::fs::rename(&partial, &self.address)?;
        self.published = true;
        Ok(())
    }
}

impl Drop for InstanceLock {
    fn drop(&mut self) {
        if self.published {
            let _ = std::fs::remove_file(&self.address);
        }
    }
}

fn read_address(path: &Path) -> Option<Instance> {
    let text = std::fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The server serving `data_dir`, when one runs: its address file is there and its lock is
/// held.
pub fn find(runtime: &Path, data_dir: &Path) -> Option<Instance> {
    let (lock_path, address) = paths(runtime, data_dir);
    let instance = read_address(&address)?;
    let lock = File::open(&lock_path).ok()?;
    match lock.try_lock_shared() {
        // Nobody serves: the address is a leftover.
        Ok(()) => None,
        Err(TryLockError::WouldBlock) => Some(instance),
        Err(TryLockError::Error(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(data_dir: &Path) -> Instance {
        Instance {
            pid: std::process::id(),
            base_url: "http://127.0.0.1:8402".into(),
            data_dir: data_dir.to_path_buf(),
            version: "test".into(),
            started_at: 1,
        }
    }

    #[test]
    fn a_second_claim_names_the_first_server_and_a_dropped_lock_frees_the_folder() {
        let runtime = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut first = claim(runtime.path(), data.path()).unwrap();
        assert_eq!(find(runtime.path(), data.path()), None, "nothing published yet");
        first.publish(&instance(data.path())).unwrap();
        assert_eq!(find(runtime.path(), data.path()), Some(instance(data.path())));
        match claim(runtime.path(), data.path()) {
            Err(ClaimError::Running(found)) => assert_eq!(found, instance(data.path())),
            other => panic!("expected Running, got {other:?}"),
        }
        // Another data folder is another server.
        let other = tempfile::tempdir().unwrap();
        let _second = claim(runtime.path(), other.path()).unwrap();
        drop(first);
        assert_eq!(find(runtime.path(), data.path()), None);
        let leftovers: Vec<_> = std::fs::read_dir(runtime.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".json"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        claim(runtime.path(), data.path()).unwrap();
    }

    #[test]
    fn an_address_whose_lock_nobody_holds_is_a_leftover() {
        let runtime = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let (_, address) = paths(runtime.path(), data.path());
        std::fs::write(&address, serde_json::to_vec(&instance(data.path())).unwrap()).unwrap();
        assert_eq!(find(runtime.path(), data.path()), None);
        let lock = claim(runtime.path(), data.path()).unwrap();
        assert!(!address.exists(), "the leftover is removed when the next server claims the folder");
        drop(lock);
    }

    #[test]
    fn a_held_lock_without_an_address_is_a_server_starting() {
        let runtime = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let _first = claim(runtime.path(), data.path()).unwrap();
        assert!(matches!(claim(runtime.path(), data.path()), Err(ClaimError::Starting(_))));
    }

    #[test]
    fn the_same_folder_named_two_ways_is_one_key() {
        let runtime = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let twice = data.path().join("sub/..");
        std::fs::create_dir(data.path().join("sub")).unwrap();
        assert_eq!(paths(runtime.path(), data.path()), paths(runtime.path(), &twice));
    }
}
