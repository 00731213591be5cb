//! The shared document corpus: `$PAPERCHAIN_CORPUS`, else `shared/corpus` beside the clone
//! (`../shared/corpus` from the workspace root). Its PDFs are under `pdf/`.

use std::path::PathBuf;

/// The corpus folder; panics, saying how to point at it, when it has no `pdf/` folder.
pub fn corpus() -> PathBuf {
    let dir = std::env::var_os("PAPERCHAIN_CORPUS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("../shared/corpus"));
    assert!(dir.join("pdf").is_dir(), "the test corpus is missing at {}; set PAPERCHAIN_CORPUS", dir.display());
    dir
}

/// The bytes of corpus file `relative` (under `pdf/`).
pub fn corpus_file(relative: &str) -> Vec<u8> {
    let path = corpus().join("pdf").join(relative);
    std::fs::read(&path).unwrap_or_else(|e| panic!("the test corpus file {}: {e}", path.display()))
}

/// A file input (`{"data": base64, "filename": its file name}`) of corpus file `relative`.
#[cfg(feature = "suite")]
pub fn file_input(relative: &str) -> serde_json::Value {
    serde_json::json!({
        "data": crate::b64(&corpus_file(relative)),
        "filename": std::path::Path::new(relative).file_name().expect("a file name").to_string_lossy(),
    })
}
