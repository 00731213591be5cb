//! The README's curl examples, run as written against `paperchain serve`; and
//! docs/settings.md against the environment variables the code reads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use paperchain_testkit::corpus::corpus;
use paperchain_testkit::pdf::qpdf_pages_of as qpdf_pages;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn examples() -> Vec<String> {
    let readme = std::fs::read_to_string(paperchain_testkit::workspace_root().join("README.md")).unwrap();
    let start = readme.find("<!-- readme-examples:start -->").expect("README marks its examples");
    let end = readme.find("<!-- readme-examples:end -->").unwrap();
    readme[start..end].split("```sh\n").skip(1).map(|block| block.split("```").next().unwrap().to_string()).collect()
}

#[test]
fn readme_examples_work_as_written() {
    let work = tempfile::tempdir().unwrap();
    std::fs::copy(corpus().join("pdf/sample-files/pdflatex-4-pages.pdf"), work.path().join("a.pdf")).unwrap();
    std::fs::copy(corpus().join("pdf/sample-files/pdflatex-outline.pdf"), work.path().join("b.pdf")).unwrap();

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_paperchain"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(work.path().join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }

    let blocks = examples();
    assert_eq!(blocks.len(), 5, "merge, inspect, markdown, split, url");
    let mut outputs = Vec::new();
    for block in &blocks {
        let script = block.replace("http://127.0.0.1:8402", &format!("http://127.0.0.1:{port}"));
        let out = Command::new("bash")
            .arg("-euo")
            .arg("pipefail")
            .arg("-c")
            .arg(&script)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README example failed:\n{script}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    assert_eq!(qpdf_pages(&work.path().join("merged.pdf")), 6, "4 pages of a.pdf and 2 of b.pdf");
    let report: serde_json::Value = serde_json::from_str(&outputs[1]).unwrap();
    assert_eq!(report["page_count"], 6);
    let markdown = std::fs::read_to_string(work.path().join("merged.md")).unwrap();
    assert!(markdown.split_whitespace().count() > 100, "the merged PDF's text: {markdown}");
    assert!(!markdown.contains("no text layer"), "{markdown}");
    let zip = std::fs::read(work.path().join("pages.zip")).unwrap();
    assert_eq!(zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap().len(), 6);
    assert_eq!(qpdf_pages(&work.path().join("rotated.pdf")), 6);
}

/// The members of the workspace, as the root Cargo.toml lists them.
fn workspace_members(manifest: &str) -> Vec<String> {
    // The key `members` at the start of a line.
    let start = manifest
        .match_indices("members")
        .map(|(at, _)| at)
        .find(|&at| {
            let before = manifest[..at].trim_end_matches([' ', '\t']);
            before.is_empty() || before.ends_with('\n')
        })
        .expect("the root Cargo.toml lists its members");
    let list = &manifest[start..];
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    list.lines()
        .flat_map(|line| line.split('#').next().unwrap_or("").split(','))
        .map(|member| member.trim().trim_matches('"').to_string())
        .filter(|member| !member.is_empty())
        .collect()
}

/// The `.rs` files under `dir`, every level down.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The contents of the string literals of Rust source `code` (plain, byte and raw strings,
/// escapes left as written); comments and character literals are skipped.
fn string_literals(code: &str) -> Vec<&str> {
    let b = code.as_bytes();
    let ident = |i: usize| b[i].is_ascii_alphanumeric() || b[i] == b'_';
    let mut literals = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => i = code[i..].find('\n').map_or(b.len(), |n| i + n),
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            // A character literal ('"', '\'', '\u{22}') is skipped; 'a (a lifetime) is not one.
            b'\'' => {
                let next = code[i + 1..].chars().next();
                if next == Some('\\') {
                    i += 3;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                } else if let Some(c) = next
                    && code[i + 1 + c.len_utf8()..].starts_with('\'')
                {
                    i += 2 + c.len_utf8();
                } else {
                    i += 1;
                }
            }
            // r"…", r#"…"#, br"…": no escapes, ended by the quote and as many hashes.
            b'r' if (i == 0 || !ident(i - 1) || (matches!(b[i - 1], b'b' | b'c') && (i == 1 || !ident(i - 2))))
                && code[i + 1..].trim_start_matches('#').starts_with('"') =>
            {
                let hashes = code[i + 1..].len() - code[i + 1..].trim_start_matches('#').len();
                let start = i + 2 + hashes;
                let close = format!("\"{}", "#".repeat(hashes));
                let end = code[start..].find(&close).map_or(b.len(), |n| start + n);
                literals.push(&code[start..end]);
                i = end + close.len();
            }
            b'"' => {
                let start = i + 1;
                let mut end = start;
                while end < b.len() && b[end] != b'"' {
                    end += if b[end] == b'\\' { 2 } else { 1 };
                }
                let end = end.min(b.len());
                literals.push(&code[start..end]);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    literals
}

/// Adds the `PAPERCHAIN_` names in `text` to `names`: `PAPERCHAIN_` and what follows of
/// capitals, digits and `_`, not glued to a word before it. A name that ends in `_` is a
/// prefix the code completes (`PAPERCHAIN_RPC_{}`) or a pattern (`PAPERCHAIN_RPC_<NAME>`);
/// `PAPERCHAIN_` alone names no variable.
fn variable_names(text: &str, names: &mut BTreeSet<String>) {
    const PREFIX: &str = "PAPERCHAIN_";
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find(PREFIX).map(|n| from + n) {
        let mut end = at + PREFIX.len();
        while end < b.len() && (b[end].is_ascii_uppercase() || b[end].is_ascii_digit() || b[end] == b'_') {
            end += 1;
        }
        let glued = at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        if !glued && end > at + PREFIX.len() {
            names.insert(text[at..end].to_string());
        }
        from = end;
    }
}

/// Whether `name` is in `names`, or follows a pattern of `names` (a name ending in `_`).
fn covered(name: &str, names: &BTreeSet<String>) -> bool {
    names.contains(name) || names.iter().any(|p| p.ends_with('_') && name.starts_with(p.as_str()))
}

#[test]
fn settings_reference_lists_every_variable_the_code_reads() {
    let root = paperchain_testkit::workspace_root();
    let members = workspace_members(&std::fs::read_to_string(root.join("Cargo.toml")).unwrap());
    for expected in ["engine", "cli", "xtask", "testkit"] {
        assert!(members.iter().any(|m| m == expected), "{expected} is not among the members read: {members:?}");
    }
    let mut files = Vec::new();
    for member in &members {
        let dir = root.join(member);
        assert!(dir.join("Cargo.toml").is_file(), "the member {member} is not a crate folder at {}", dir.display());
        rust_files(&dir.join("src"), &mut files);
        if dir.join("build.rs").is_file() {
            files.push(dir.join("build.rs"));
        }
    }
    let mut in_code = BTreeSet::new();
    for file in &files {
        let code = std::fs::read_to_string(file).unwrap();
        for literal in string_literals(&code) {
            variable_names(literal, &mut in_code);
        }
    }
    for sure in ["PAPERCHAIN_LISTEN", "PAPERCHAIN_RPC_", "PAPERCHAIN_WALLET_PASSWORD"] {
        assert!(in_code.contains(sure), "{sure} not found in the {} files read: {in_code:?}", files.len());
    }

    let settings = std::fs::read_to_string(root.join("docs/settings.md")).unwrap();
    let mut in_doc = BTreeSet::new();
    variable_names(&settings, &mut in_doc);

    let undocumented: Vec<&String> = in_code.iter().filter(|name| !covered(name, &in_doc)).collect();
    assert!(
        undocumented.is_empty(),
        "docs/settings.md does not list these variables the code reads (a name ending in `_` is completed by the \
         code: list it as a pattern such as `PAPERCHAIN_RPC_<NAME>`): {undocumented:?}"
    );
    let unread: Vec<&String> = in_doc.iter().filter(|name| !covered(name, &in_code)).collect();
    assert!(unread.is_empty(), "docs/settings.md lists these variables no crate's code reads: {unread:?}");
}
