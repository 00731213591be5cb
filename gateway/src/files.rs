//! 24-hour file links (`output: "url"`): files kept on disk under an unguessable id,
//! served at `GET /v1/files/{id}`, deleted after expiry. They survive a restart.

use std::path::{Path, PathBuf};
use std::time::Duration;

use paperchain_engine::OutFile;
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
        // Data first, metadata last, each renamed into place: a file is served only once
        // both are complete.
        let data = self.dir.join(format!("{id}.bin"));
        let data_tmp = self.dir.join(format!("{id}.bin.part"));
        tokio::fs::write(&data_tmp, &file.bytes).await?;
        tokio::fs::rename(&data_tmp, &data).await?;
        let meta_path = self.dir.join(format!("{id}.json"));
        let meta_tmp = self.dir.join(format!("{id}.json.part"));
        let json = serde_json::to_vec(&meta).map_err(std::io::Error::other)?;
        tokio::fs::write(&meta_tmp, json).await?;
        tokio::fs::rename(&meta_tmp, &meta_path).await?;
        Ok((id, meta))
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
        for ext in ["json", "bin"] {
            let _ = tokio::fs::remove_file(self.dir.join(format!("{id}.{ext}"))).await;
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
}
