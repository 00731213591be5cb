//! Embeds the desktop app's web front end (`ui/dist`, built by `cargo xtask setup` with
//! `npm run build` in `ui/`) so the local server can serve it at `/app`. Without a build
//! the list is empty and `/app` says how to build it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let ui = manifest.join("../ui");
    let dist = ui.join("dist");
    let mut files = Vec::new();
    if dist.join("index.html").is_file() {
        collect(&dist, &dist, &mut files);
        println!("cargo:rerun-if-changed={}", dist.display());
    } else if ui.is_dir() {
        // Rebuilt when the front end is built (the folder then gains `dist`).
        println!("cargo:rerun-if-changed={}", ui.join("package.json").display());
        println!("cargo:rerun-if-changed={}", ui.display());
    }
    files.sort();
    let mut code = String::from(
        "/// The built front end: (path under `ui/dist`, bytes).\npub static ASSETS: &[(&str, &[u8])] = &[\n",
    );
    for (name, path) in &files {
        let _ = writeln!(code, "    ({name:?}, include_bytes!({:?})),", path.display().to_string());
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("ui_assets.rs"), code).expect("writing ui_assets.rs");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(relative) = path.strip_prefix(root) {
            let name = relative.to_string_lossy().replace('\\', "/");
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            files.push((name, path));
        }
    }
}
