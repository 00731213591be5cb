//! File results a local server keeps for a while instead of embedding them in the tool
//! result: a large file answered as a blob would fill the agent's conversation, so it comes
//! back as a `resource_link` to `paperchain://results/<id>/<name>`, which `resources/read`
//! reads from here.
//!
//! Kept in memory, bounded: at most [`Kept::MAX_BYTES`] in all, each file for
//! [`Kept::TTL`]; past either, the oldest go first. The id is random, so a link cannot be
//! guessed from the file.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use paperchain_engine::OutFile;

/// The prefix of a kept file's URI.
pub const SCHEME: &str = "paperchain://results/";

/// Files kept for `resources/read`.
#[derive(Default)]
pub struct Kept {
    files: Mutex<VecDeque<KeptFile>>,
}

struct KeptFile {
    uri: String,
    media_type: String,
    bytes: Vec<u8>,
    kept_at: Instant,
}

impl Kept {
    /// Most bytes kept in all.
    pub const MAX_BYTES: usize = 512 * 1024 * 1024;
    /// How long a file is kept.
    pub const TTL: Duration = Duration::from_secs(3600);

    /// Keeps `file`; its URI. Room is made by letting the oldest files go; a file larger
    /// than all that may be kept is kept alone.
    pub fn keep(&self, file: OutFile) -> String {
        let id: [u8; 16] = rand::random();
        let uri = format!("{SCHEME}{}/{}", hex::encode(id), crate::results::encode_segment(&file.filename));
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        expire(&mut files);
        let mut total: usize = files.iter().map(|f| f.bytes.len()).sum();
        while total + file.bytes.len() > Self::MAX_BYTES && !files.is_empty() {
            match files.pop_front() {
                Some(oldest) => total -= oldest.bytes.len(),
                None => break,
            }
        }
        files.push_back(KeptFile {
            uri: uri.clone(),
            media_type: file.media_type,
            bytes: file.bytes,
            kept_at: Instant::now(),
        });
        uri
    }

    /// The media type and bytes kept under `uri`, while they are kept.
    pub fn read(&self, uri: &str) -> Option<(String, Vec<u8>)> {
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        expire(&mut files);
        files.iter().find(|f| f.uri == uri).map(|f| (f.media_type.clone(), f.bytes.clone()))
    }
}

fn expire(files: &mut VecDeque<KeptFile>) {
    while files.front().is_some_and(|f| f.kept_at.elapsed() > Kept::TTL) {
        files.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_files_are_read_back_by_their_uri_only() {
        let kept = Kept::default();
        let uri = kept.keep(OutFile::pdf("a b.pdf", b"%PDF-1".to_vec()));
        assert!(uri.starts_with(SCHEME) && uri.ends_with("/a%20b.pdf"), "{uri}");
        assert_eq!(kept.read(&uri), Some(("application/pdf".into(), b"%PDF-1".to_vec())));
        let other = kept.keep(OutFile::pdf("a b.pdf", b"%PDF-1".to_vec()));
        assert_ne!(uri, other, "the same file kept twice has two ids");
        assert_eq!(kept.read(&format!("{SCHEME}00/a%20b.pdf")), None);
    }
}
