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

/// The Office files of the corpus under `corpus` (DOCX, XLSX, PPTX, ODT, ODS, ODP of the
/// `office/` set and of docling's sources), sorted.
pub fn office_files(corpus: &std::path::Path) -> Vec<PathBuf> {
    const DIRS: &[&str] = &[
        "office/docx",
        "office/xlsx",
        "office/pptx",
        "docling/docx/sources",
        "docling/xlsx/sources",
        "docling/pptx/sources",
        "docling/odf/sources",
    ];
    let mut files: Vec<PathBuf> = DIRS
        .iter()
        .flat_map(|dir| std::fs::read_dir(corpus.join(dir)).into_iter().flatten().flatten().map(|e| e.path()))
        .filter(|path| {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            ["docx", "xlsx", "pptx", "odt", "ods", "odp"].contains(&ext)
        })
        .collect();
    files.sort();
    files
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
