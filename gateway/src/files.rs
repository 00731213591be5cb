//! 24-hour file links (`output: "url"`): files kept on disk under an unguessable id,
//! served at `GET /v1/files/{id}`, deleted after expiry. They survive a restart.
//!
//! An id is 256 random bits. Each file is written whole under a temporary name and
//! renamed, its metadata last, so a link serves a complete file or none, and only a file
//! of the size stored. A call whose files cannot all be kept keeps none (a full disk is
//! 503 `insufficient_storage`). The HTTP API, the MCP tools and the hosted paywall (before
//! it settles) all store through [`FileStore::links`]; the server sweeps expired files
//! every ten minutes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use paperchain_engine::output::{FileLink, OutputMode};
use paperchain_engine::{EngineError, ErrorKind, FileSet, OutFile, Reply};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// How long a link lives.
pub const LINK_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// What is known of a stored file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredMeta {
    /// File name offered to the user.
    pub filename: String,
    /// Media type.
    pub media_type: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Hex SHA-256.
    pub sha256: String,
    /// Expiry, Unix seconds.
    pub expires_at: i64,
}

impl StoredMeta {
    /// Expiry as RFC 3339.
    pub fn expires_at_rfc3339(&self) -> String {
        OffsetDateTime::from_unix_timestamp(self.expires_at)
            .ok()
            .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
            .unwrap_or_default()
    }
}

/// The directory of linked files.
#[derive(Clone, Debug)]
pub struct FileStore {
    dir: PathBuf,
    ttl: Duration,
}

impl FileStore {
    /// Opens (creating, owner-only) the store at `dir`.
    pub fn open(dir: impl Into<PathBuf>, ttl: Duration) -> std::io::Result<FileStore> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(FileStore { dir, ttl })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stores `file`; returns its id (64 hex characters, 256 random bits) and metadata.
    pub async fn put(&self, file: OutFile) -> std::io::Result<(String, StoredMeta)> {
        // Hashing tens of megabytes is CPU work: off the async threads.
        let (file, sha256) = tokio::task::spawn_blocking(move || {
            let sha256 = file.sha256();
            (file, sha256)
        })
        .await
        .map_err(std::io::Error::other)?;
        let mut raw = [0u8; 32];
        rand::rng().fill_bytes(&mut raw);
        let id = hex::encode(raw);
        let expires_at = OffsetDateTime::now_utc().unix_timestamp() + self.ttl.as_secs() as i64;
        let meta = StoredMeta {
            filename: file.filename.clone(),
            media_type: file.media_type.clone(),
            bytes: file.bytes.len() as u64,
            sha256,
            expires_at,
        };
        // Data first, metadata last, each written whole under a temporary name and then
        // renamed into place: a file is served only once both are complete. A write that
        // fails (a full disk) leaves nothing behind.
        let json = serde_json::to_vec(&meta).map_err(std::io::Error::other)?;
        let written = async {
            write_then_rename(&self.dir.join(format!("{id}.bin")), &file.bytes).await?;
            write_then_rename(&self.dir.join(format!("{id}.json")), &json).await
        };
        if let Err(e) = written.await {
            self.remove(&id).await;
            return Err(e);
        }
        Ok((id, meta))
    }

    /// Stores every file of `set` for 24 hours and describes its link under `base_url`
    /// (`output: "url"`); the report of a one-file result goes on its link. The HTTP API
    /// and the MCP tools deliver links through this one function, and the hosted service
    /// stores through it before it settles a payment ([`FileStore::keep`]); links stored
    /// already are passed on. All or nothing: when one file cannot be stored, those stored
    /// before it are deleted, and a full disk is 503 `insufficient_storage`.
    pub async fn links(&self, base_url: &str, set: FileSet) -> Result<Vec<FileLink>, EngineError> {
        if let Some(links) = set.links {
            return Ok(links);
        }
        let report = if set.bundle.is_some() { None } else { set.report };
        let mut links: Vec<FileLink> = Vec::with_capacity(set.files.len());
        let mut stored: Vec<String> = Vec::with_capacity(set.files.len());
        for file in set.files {
            let (id, meta) = match self.put(file).await {
                Ok(put) => put,
                Err(e) => {
                    for id in &stored {
                        self.delete(id).await;
                    }
                    return Err(storage_error(&e));
                }
            };
            stored.push(id.clone());
            links.push(FileLink {
                url: format!("{base_url}/v1/files/{id}"),
                expires_at: meta.expires_at_rfc3339(),
                filename: meta.filename,
                media_type: meta.media_type,
                bytes: meta.bytes,
                sha256: meta.sha256,
                report: None,
            });
        }
        if let [link] = links.as_mut_slice() {
            link.report = report;
        }
        Ok(links)
    }

    /// The files of an `output: "url"` reply stored now, their links in their place (the
    /// bytes dropped); any other reply as it is.
    pub async fn keep(
        &self,
        base_url: &str,
        reply: Reply<serde_json::Value>,
    ) -> Result<Reply<serde_json::Value>, EngineError> {
        match reply {
            Reply::Files(mut set) if set.mode == OutputMode::Url && set.links.is_none() => {
                // Stored from a copy of the set that takes its files; the set keeps the rest.
                let stored = FileSet { files: std::mem::take(&mut set.files), ..set.clone() };
                set.links = Some(self.links(base_url, stored).await?);
                Ok(Reply::Files(set))
            }
            reply => Ok(reply),
        }
    }

    /// Deletes the file `id` at once (a link given out by a call that then failed).
    pub async fn delete(&self, id: &str) {
        if valid_id(id) {
            self.remove(id).await;
        }
    }

    /// The file `id`, if it exists and has not expired (an expired one is deleted).
    pub async fn get(&self, id: &str) -> std::io::Result<Option<(StoredMeta, Vec<u8>)>> {
        if !valid_id(id) {
            return Ok(None);
        }
        let Some(meta) = self.meta(id).await? else { return Ok(None) };
        if meta.expires_at <= OffsetDateTime::now_utc().unix_timestamp() {
            self.remove(id).await;
            return Ok(None);
        }
        match tokio::fs::read(self.dir.join(format!("{id}.bin"))).await {
            // Never a file of another size than the one stored: the rest of an interrupted
            // write, or a disk that lost data, is no file at all.
            Ok(bytes) if bytes.len() as u64 != meta.bytes => {
                tracing::warn!(
                    id,
                    stored = meta.bytes,
                    found = bytes.len(),
                    "a linked file has the wrong size; deleted"
                );
                self.remove(id).await;
                Ok(None)
            }
            Ok(bytes) => Ok(Some((meta, bytes))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn meta(&self, id: &str) -> std::io::Result<Option<StoredMeta>> {
        match tokio::fs::read(self.dir.join(format!("{id}.json"))).await {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn remove(&self, id: &str) {
        for name in [format!("{id}.json"), format!("{id}.bin"), format!("{id}.json.part"), format!("{id}.bin.part")] {
            let _ = tokio::fs::remove_file(self.dir.join(name)).await;
        }
    }

    /// Deletes expired files, unreadable metadata, and leftovers of interrupted writes
    /// older than an hour. Returns how many files were deleted.
    pub async fn sweep(&self) -> std::io::Result<usize> {
        let now = OffsetDateTime::now_utc().unix_timestamp();
        let mut removed = 0;
        let mut entries = tokio::fs::read_dir(&self.dir).await?;
        while let Some(entry) = entries.next_entry().await? {
            let name = entry.file_name().to_string_lossy().into_owned();
            let age = entry
                .metadata()
                .await
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .unwrap_or_default();
            if let Some(id) = name.strip_suffix(".json") {
                let expired = self.meta(id).await.ok().flatten().is_none_or(|m| m.expires_at <= now);
                if expired {
                    self.remove(id).await;
                    removed += 1;
                }
            } else if name.ends_with(".part") && age > Duration::from_secs(3600) {
                let _ = tokio::fs::remove_file(entry.path()).await;
                removed += 1;
            } else if let Some(id) = name.strip_suffix(".bin") {
                // Data whose metadata never arrived.
                let orphan = !self.dir.join(format!("{id}.json")).exists();
                if orphan && age > Duration::from_secs(3600) {
                    let _ = tokio::fs::remove_file(entry.path()).await;
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }
}

/// Writes `bytes` to `path` through `<path>.part` and a rename; the part is deleted when the
/// write fails.
async fn write_then_rename(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    let part = PathBuf::from(part);
    let written = async {
        tokio::fs::write(&part, bytes).await?;
        tokio::fs::rename(&part, path).await
    };
    let result = written.await;
    if result.is_err() {
        let _ = tokio::fs::remove_file(&part).await;
    }
    result
}

/// Whether an error means the disk, the user's quota or the file-size limit is full
/// (Linux's ENOSPC, EDQUOT and EFBIG).
pub fn is_out_of_space(error: &std::io::Error) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    const EFBIG: i32 = 27;
    error.kind() == std::io::ErrorKind::StorageFull || matches!(error.raw_os_error(), Some(ENOSPC | EDQUOT | EFBIG))
}

/// What a failure to store a result file means for the caller: a full disk is worth
/// waiting for (503 `insufficient_storage`), anything else is a defect here (500).
pub fn storage_error(error: &std::io::Error) -> EngineError {
    if is_out_of_space(error) {
        tracing::error!(error = %error, "no room to store a result file");
        EngineError::new(
            ErrorKind::Unavailable { retry_after: STORAGE_RETRY_AFTER },
            "insufficient_storage",
            "the server has no room left to keep the result files; nothing was kept and nothing is charged. Send \
             the call again later, or ask for output \"file\" or \"base64\"",
        )
    } else {
        EngineError::internal(format!("storing a result file: {error}"))
    }
}

/// What a 503 for a full disk suggests.
const STORAGE_RETRY_AFTER: Duration = Duration::from_secs(60);

fn valid_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stores_serves_and_expires() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), LINK_TTL).unwrap();
        let (id, meta) = store.put(OutFile::pdf("a.pdf", b"%PDF-1.7 x".to_vec())).await.unwrap();
        assert_eq!(id.len(), 64);
        assert_eq!(meta.bytes, 10);
        let (meta2, bytes) = store.get(&id).await.unwrap().unwrap();
        assert_eq!(bytes, b"%PDF-1.7 x");
        assert_eq!(meta2.filename, "a.pdf");
        // A second store on the same directory (a restart) still serves it.
        let reopened = FileStore::open(dir.path(), LINK_TTL).unwrap();
        assert!(reopened.get(&id).await.unwrap().is_some());
        // Bad ids never touch the disk.
        assert!(store.get("../../etc/passwd").await.unwrap().is_none());
        assert!(store.get(&"A".repeat(64)).await.unwrap().is_none());

        let short = FileStore::open(dir.path(), Duration::from_secs(0)).unwrap();
        let (old, _) = short.put(OutFile::pdf("b.pdf", b"x".to_vec())).await.unwrap();
        assert!(short.get(&old).await.unwrap().is_none(), "expired on read");
        assert!(!dir.path().join(format!("{old}.bin")).exists(), "and deleted");
        let (old2, _) = short.put(OutFile::pdf("c.pdf", b"x".to_vec())).await.unwrap();
        assert_eq!(store.sweep().await.unwrap(), 1);
        assert!(!dir.path().join(format!("{old2}.bin")).exists());
        assert!(store.get(&id).await.unwrap().is_some(), "unexpired files survive the sweep");
    }

    #[tokio::test]
    async fn a_file_of_the_wrong_size_is_never_served() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path(), LINK_TTL).unwrap();
        let (id, _) = store.put(OutFile::pdf("a.pdf", b"%PDF-1.7 whole".to_vec())).await.unwrap();
        // What an interrupted write or a disk that lost data leaves: the start of the file.
        std::fs::write(dir.path().join(format!("{id}.bin")), b"%PDF").unwrap();
        assert!(store.get(&id).await.unwrap().is_none());
        assert!(!dir.path().join(format!("{id}.json")).exists(), "and it is deleted");
    }

    #[tokio::test]
    async fn a_deleted_link_leaves_nothing_and_a_store_that_cannot_write_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path().join("files"), LINK_TTL).unwrap();
        let (id, _) = store.put(OutFile::pdf("a.pdf", b"x".to_vec())).await.unwrap();
        store.delete(&id).await;
        assert_eq!(std::fs::read_dir(store.dir()).unwrap().count(), 0, "delete removes both files");
        std::fs::remove_dir(store.dir()).unwrap();
        std::fs::write(dir.path().join("files"), b"not a folder").unwrap();
        assert!(store.put(OutFile::pdf("b.pdf", b"y".to_vec())).await.is_err());
    }

    #[test]
    fn full_disks_and_quotas_are_out_of_space() {
        assert!(is_out_of_space(&std::io::Error::from_raw_os_error(28)));
        assert!(is_out_of_space(&std::io::Error::from_raw_os_error(122)));
        assert!(!is_out_of_space(&std::io::Error::from_raw_os_error(13)));
    }
}
