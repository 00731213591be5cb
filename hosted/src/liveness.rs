//! Which runs (server processes) sharing a store file are alive, so that the claims of a
//! run that died are known to be dead at once, not after a timeout.
//!
//! Each run holds an exclusive lock on a file of its own, `<store>.runs/<run id>.lock`, for
//! as long as it has the store open; the kernel lets the lock go when the process ends,
//! however it ends (kill -9 included). A claim records the run that made it. A claim whose
//! run's file is unlocked, or gone, belongs to a dead run. SQLite files are shared by
//! processes of one machine only, so one machine's locks are the whole truth.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// This run's lock, held until dropped.
#[derive(Debug)]
pub struct RunLock {
    id: String,
    /// The lock file, locked; `None` for a store in memory (never shared).
    held: Option<(PathBuf, File)>,
}

impl RunLock {
    /// A new run of the store at `store`: a fresh id, its lock file created and locked.
    pub fn acquire(store: &Path) -> std::io::Result<RunLock> {
        let id = hex::encode(rand::random::<[u8; 8]>());
        let dir = runs_dir(store);
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{id}.lock"));
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
        file.try_lock().map_err(|e| match e {
            TryLockError::Error(e) => e,
            TryLockError::WouldBlock => std::io::Error::other(format!("{} is locked already", path.display())),
        })?;
        Ok(RunLock { id, held: Some((path, file)) })
    }

    /// A run of a store in memory: an id, nothing on disk.
    pub fn in_memory() -> RunLock {
        RunLock { id: hex::encode(rand::random::<[u8; 8]>()), held: None }
    }

    /// The run's id, as claims record it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether run `id` of the store this run belongs to is gone: its lock file missing or
    /// unlocked. This run is never gone; a store in memory has no other run.
    pub fn is_gone(&self, id: &str) -> bool {
        if id == self.id {
            return false;
        }
        let Some((own, _)) = &self.held else { return false };
        // Anything else in the column is not a run of ours.
        if !is_run_id(id) {
            return true;
        }
        let path = own.with_file_name(format!("{id}.lock"));
        let Ok(file) = OpenOptions::new().write(true).open(&path) else { return true };
        match file.try_lock() {
            Ok(()) => true,
            Err(TryLockError::WouldBlock) => false,
            // Cannot tell: taken as alive (its claims wait, the safe side).
            Err(TryLockError::Error(_)) => false,
        }
    }

    /// Deletes the lock files of every run that is gone (call after their claims were
    /// abandoned: a run with no file left counts as gone too).
    pub fn sweep(&self) {
        let Some((own, _)) = &self.held else { return };
        let Some(dir) = own.parent() else { return };
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else { continue };
            if self.is_gone(id) {
                self.forget(id);
            }
        }
    }

    /// Deletes the lock file of a run that is gone.
    fn forget(&self, id: &str) {
        if let Some((own, _)) = &self.held
            && id != self.id
            && is_run_id(id)
        {
            let _ = std::fs::remove_file(own.with_file_name(format!("{id}.lock")));
        }
    }
}

/// Run ids are 16 hex digits.
fn is_run_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Drop for RunLock {
    fn drop(&mut self) {
        if let Some((path, file)) = self.held.take() {
            // A clean stop: the file goes, then the lock with the handle.
            let _ = std::fs::remove_file(&path);
            drop(file);
        }
    }
}

/// `<store>.runs`, beside the store file.
fn runs_dir(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(".runs");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_alive_while_its_lock_is_held_and_gone_after() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("hosted.sqlite");
        let first = RunLock::acquire(&store).unwrap();
        let second = RunLock::acquire(&store).unwrap();
        assert_ne!(first.id(), second.id());
        assert!(!second.is_gone(first.id()));
        assert!(!first.is_gone(first.id()));
        let first_id = first.id().to_owned();
        drop(first);
        assert!(second.is_gone(&first_id));
        // A killed run leaves its file behind, unlocked, until a sweep.
        let files = |dir: &Path| std::fs::read_dir(dir).unwrap().count();
        std::fs::write(runs_dir(&store).join("00000000000000bb.lock"), b"").unwrap();
        assert_eq!(files(&runs_dir(&store)), 2);
        assert!(second.is_gone("00000000000000bb"));
        second.sweep();
        assert_eq!(files(&runs_dir(&store)), 1, "only the live run's file is left");
        assert!(second.is_gone("not a run id"));
        assert!(second.is_gone("0123456789abcdef"));
    }

    #[test]
    fn a_process_killed_with_its_lock_held_leaves_it_unlocked() {
        // A child process holds a lock on a run's file, as a server does, and is killed -9.
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("hosted.sqlite");
        let observer = RunLock::acquire(&store).unwrap();
        let id = "00000000000000aa";
        let path = runs_dir(&store).join(format!("{id}.lock"));
        let hold = "import fcntl, sys, time\nf = open(sys.argv[1], 'w')\nfcntl.flock(f, fcntl.LOCK_EX)\ntime.sleep(60)";
        let mut child = std::process::Command::new("python3").args(["-c", hold]).arg(&path).spawn().unwrap();
        // Until the child holds it, the run looks gone; wait for it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while observer.is_gone(id) {
            assert!(std::time::Instant::now() < deadline, "the child never took the lock");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !observer.is_gone(id) {
            assert!(std::time::Instant::now() < deadline, "the lock outlived its holder");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
