//! Files on the caller's own machine, in local mode only: a file input given as
//! `{"path": …}` is read here and handed on as bytes (to the engine, or to the hosted
//! service when the call is routed), and a call may ask for its file result to be saved to
//! a path instead of sent back.
//!
//! Both stay inside the folders the user granted (`files.folders` in config.toml, the
//! app's settings, `--folder`); with none granted, a path is refused saying how to grant
//! one. A path must be absolute; it is checked after symlinks and `..` are resolved, and
//! on Linux the file actually opened is checked again (a symlink swapped in between does
//! not lead outside). Nothing is read or written before every check has passed.
//!
//! Saving never overwrites an existing file unless the call asks, and writes each file
//! to a temporary file beside it, then renames it into place: a reader sees the old file
//! or the whole new one, and a failed call leaves nothing half-written.

use std::io::{Read as _, Write as _};
use std::path::{Component, Path, PathBuf};

use base64::Engine as _;
use paperchain_engine_core::catalog::RouteEntry;
use paperchain_engine_core::input::sanitize_filename;
use paperchain_engine_core::{EngineError, ErrorKind, FileSet, OutFile, Reply};
use serde_json::{Map, Value, json};

use crate::{Outcome, REPORT_HEADER};

/// Where a call asks its file result to be saved.
#[derive(Clone, Debug)]
pub struct SaveTo {
    /// An absolute path: a file to write, or an existing folder to write the result's
    /// files into under their own names.
    pub path: String,
    /// Replace files that exist already.
    pub overwrite: bool,
    /// How the door names this in errors (`/save_to`, `Paperchain-Save-To`).
    pub field: String,
}

/// The name the engine's schemas give file inputs (`#/$defs/FileInput`).
const FILE_INPUT: &str = "FileInput";

/// How deep a request's schema is followed (a recursive schema ends here).
const MAX_DEPTH: usize = 64;

/// The body with every file input given by `path` (or `keyring`) read and given as `data`
/// instead (the file's name as `filename` when none was given; a kept file's password as
/// `password`). A body that names neither is returned as it came, unparsed.
pub(crate) async fn inline_paths(
    route: &RouteEntry,
    body: bytes::Bytes,
    folders: &[PathBuf],
    max_bytes: u64,
) -> Result<Inlined, EngineError> {
    // Most bodies name no path and no kept file: they are not parsed twice.
    if !body.windows(6).any(|w| w == b"\"path\"") && !body.windows(9).any(|w| w == b"\"keyring\"") {
        return Ok(Inlined { body, from_keyring: false });
    }
    let Ok(mut value) = serde_json::from_slice::<Value>(&body) else {
        // Not JSON: the route's own parser says so, naming the place.
        return Ok(Inlined { body, from_keyring: false });
    };
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = route.input_schema(&mut generator).to_value();
    let defs: Map<String, Value> =
        generator.definitions().iter().map(|(name, schema)| (name.clone(), schema.clone())).collect();
    let mut found = Vec::new();
    find_file_inputs(&value, &schema, &defs, "", 0, &mut found);
    found.sort();
    found.dedup();
    if found.is_empty() {
        return Ok(Inlined { body, from_keyring: false });
    }
    let mut from_keyring = false;
    for pointer in found {
        let Some(input) = value.pointer_mut(&pointer).and_then(Value::as_object_mut) else { continue };
        if input.get("keyring").is_some_and(|k| !k.is_null()) {
            inline_kept(input, &pointer).await?;
            from_keyring = true;
            continue;
        }
        // A null counts as not given.
        let Some(path) = input.get("path").filter(|p| !p.is_null()) else { continue };
        let field = format!("{pointer}/path");
        let Some(path) = path.as_str().map(str::to_string) else {
            return Err(EngineError::invalid(&field, format!("{field}: a path is a string")));
        };
        if input.get("data").is_some_and(|d| !d.is_null()) || input.get("url").is_some_and(|u| !u.is_null()) {
            return Err(EngineError::invalid(
                &pointer,
                format!("{pointer}: give one of `data`, `url` and `path`, not several"),
            ));
        }
        let granted = folders.to_vec();
        let read = {
            let field = field.clone();
            tokio::task::spawn_blocking(move || read_granted(&granted, &path, &field, max_bytes))
                .await
                .map_err(|e| EngineError::internal(format!("reading a file: {e}")))??
        };
        input.remove("path");
        input.remove("url");
        input.insert("data".into(), json!(base64::engine::general_purpose::STANDARD.encode(&read.bytes)));
        if input.get("filename").is_none_or(Value::is_null) {
            input.insert("filename".into(), json!(read.filename));
        }
    }
    serde_json::to_vec(&value)
        .map(|body| Inlined { body: bytes::Bytes::from(body), from_keyring })
        .map_err(|e| EngineError::internal(format!("writing the request again: {e}")))
}

/// A body with its local files read in.
pub(crate) struct Inlined {
    /// The body, every path and kept file given as `data`.
    pub body: bytes::Bytes,
    /// Whether a file came from the keyring: such a call never leaves this machine.
    pub from_keyring: bool,
}

/// Reads the file kept in the keyring that the file input at `pointer` names and gives it as
/// `data`, with its name and password.
async fn inline_kept(input: &mut Map<String, Value>, pointer: &str) -> Result<(), EngineError> {
    let field = format!("{pointer}/keyring");
    let Some(name) = input.get("keyring").and_then(Value::as_str).map(str::to_string) else {
        return Err(EngineError::invalid(&field, format!("{field}: the name of a kept file is a string")));
    };
    if ["data", "url", "path", "password"].iter().any(|k| input.get(*k).is_some_and(|v| !v.is_null())) {
        return Err(EngineError::invalid(
            pointer,
            format!(
                "{pointer}: a kept file brings its own bytes and password; give `keyring` alone (a `filename` may go with it)"
            ),
        ));
    }
    if !paperchain_wallet::keys::valid_name(&name) {
        return Err(EngineError::invalid(
            &field,
            format!("{field}: a kept file's name is 1 to 64 letters, digits, '-', '_' and '.'"),
        ));
    }
    let keys = paperchain_wallet::keys::KeyConfig::from_env(&paperchain_engine_core::context::data_dir());
    let looked = name.clone();
    let kept = tokio::task::spawn_blocking(move || paperchain_wallet::keys::load_file(&keys, &looked))
        .await
        .map_err(|e| EngineError::internal(format!("reading the keyring: {e}")))?
        .map_err(|e| {
            EngineError::new(
                ErrorKind::Unavailable { retry_after: std::time::Duration::from_secs(5) },
                "keyring_unavailable",
                format!("{field}: the keyring cannot be read: {e}"),
            )
            .at(&field)
        })?;
    let Some(kept) = kept else {
        return Err(EngineError::invalid_with(
            "keyring_file_missing",
            &field,
            format!(
                "{field}: no file is kept as {name:?} in this machine's keyring; add it with `paperchain wallet file add {name} FILE`"
            ),
        ));
    };
    input.remove("keyring");
    input.insert("data".into(), json!(base64::engine::general_purpose::STANDARD.encode(kept.bytes.as_slice())));
    if input.get("filename").is_none_or(Value::is_null) {
        input.insert("filename".into(), json!(kept.filename));
    }
    if let Some(password) = &kept.password {
        input.insert("password".into(), json!(password.as_str()));
    }
    Ok(())
}

/// The JSON pointers of the file inputs in `value` that name a path, found by following
/// `schema` (properties, items, `$ref`, and every branch of `allOf`/`anyOf`/`oneOf` and
/// `if`/`then`/`else`: a place any branch calls a file input is one).
fn find_file_inputs(
    value: &Value,
    schema: &Value,
    defs: &Map<String, Value>,
    pointer: &str,
    depth: usize,
    found: &mut Vec<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or_default();
        if name == FILE_INPUT {
            if ["path", "keyring"].iter().any(|k| value.get(*k).is_some_and(|p| !p.is_null())) {
                found.push(pointer.to_string());
            }
            return;
        }
        if let Some(def) = defs.get(name) {
            find_file_inputs(value, def, defs, pointer, depth + 1, found);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for branch in schema.get(key).and_then(Value::as_array).into_iter().flatten() {
            find_file_inputs(value, branch, defs, pointer, depth + 1, found);
        }
    }
    for key in ["then", "else"] {
        if let Some(branch) = schema.get(key) {
            find_file_inputs(value, branch, defs, pointer, depth + 1, found);
        }
    }
    match value {
        Value::Object(object) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (key, member) in object {
                let child = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                if let Some(sub) = properties.and_then(|p| p.get(key)).or(additional) {
                    find_file_inputs(member, sub, defs, &child, depth + 1, found);
                }
            }
        }
        Value::Array(items) => {
            let prefix = schema.get("prefixItems").and_then(Value::as_array);
            let rest = schema.get("items").filter(|i| i.is_object());
            for (index, item) in items.iter().enumerate() {
                if let Some(sub) = prefix.and_then(|p| p.get(index)).or(rest) {
                    find_file_inputs(item, sub, defs, &format!("{pointer}/{index}"), depth + 1, found);
                }
            }
        }
        _ => {}
    }
}

/// A file read from a granted folder.
pub struct ReadFile {
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// Its name (the last part of its path).
    pub filename: String,
}

/// Reads the file at `text` (an absolute path) when it lies inside one of `folders`,
/// once symlinks and `..` are resolved; errors name `field`.
pub fn read_granted(folders: &[PathBuf], text: &str, field: &str, max_bytes: u64) -> Result<ReadFile, EngineError> {
    let granted = granted_folders(folders, field)?;
    let path = absolute(text, field)?;
    let real = match std::fs::canonicalize(&path) {
        Ok(real) => real,
        // Whether a file exists is said only inside the granted folders.
        Err(e) if inside(&lexical(&path), &granted) => {
            return Err(EngineError::invalid_with("path_not_found", field, format!("{field}: {text}: {e}")));
        }
        Err(_) => return Err(not_granted(field, text, &granted)),
    };
    if !inside(&real, &granted) {
        return Err(not_granted(field, text, &granted));
    }
    let mut file = open_no_follow(&real).map_err(|e| {
        EngineError::invalid_with("path_not_readable", field, format!("{field}: {text} cannot be opened ({e})"))
    })?;
    if !opened_inside(&file, &granted) {
        return Err(not_granted(field, text, &granted));
    }
    let meta = file.metadata().map_err(|e| EngineError::internal(format!("{field}: {e}")))?;
    if !meta.is_file() {
        return Err(EngineError::invalid_with("not_a_file", field, format!("{field}: {text} is not a file")));
    }
    if meta.len() > max_bytes {
        return Err(too_large(field, max_bytes));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file).take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| {
        EngineError::invalid_with("path_not_readable", field, format!("{field}: reading {text} failed ({e})"))
    })?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_large(field, max_bytes));
    }
    let filename = real.file_name().map(|n| sanitize_filename(&n.to_string_lossy())).unwrap_or_default();
    Ok(ReadFile { bytes, filename })
}

impl std::fmt::Debug for ReadFile {
    // Never print a file's bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadFile").field("bytes", &self.bytes.len()).field("filename", &self.filename).finish()
    }
}

fn too_large(field: &str, max: u64) -> EngineError {
    EngineError::too_large(
        "file_too_large",
        Some(field.to_string()),
        format!("{field}: the file is larger than {} MiB", max / (1024 * 1024)),
    )
}

/// Where a result is saved, checked before the call runs (so a call whose result could
/// not be kept neither runs nor pays).
#[derive(Debug)]
pub(crate) struct Target {
    /// The folder written into (its real path).
    folder: PathBuf,
    /// The file's name in it; `None`: each result file under its own name.
    name: Option<String>,
    overwrite: bool,
    field: String,
}

/// Checks that a call of `route` with `body` has a file result to save, and where
/// ([`check_target`]).
pub(crate) fn check_save(
    route: &RouteEntry,
    body: &[u8],
    folders: &[PathBuf],
    save: &SaveTo,
) -> Result<Target, EngineError> {
    let field = save.field.as_str();
    let info = route.info();
    if !info.produces.files() {
        return Err(EngineError::invalid(
            field,
            format!("{field}: {} answers JSON, not a file; there is nothing to save", info.operation),
        ));
    }
    let output = serde_json::from_slice::<Value>(body).ok().and_then(|v| v.get("output").cloned());
    if let Some(output) = output.filter(|o| !o.is_null() && o != "file") {
        return Err(EngineError::invalid(
            field,
            format!("{field}: saving writes the files themselves; leave `output` out (it is {output})"),
        ));
    }
    check_target(folders, save)
}

/// `outcome` with its file result saved to `target`: the answer becomes the JSON of the
/// files written. A JSON answer (a route that reads, or an error) stays as it is; a hosted
/// answer keeps its payment headers.
pub(crate) async fn save_outcome(outcome: Outcome, target: Target) -> Outcome {
    match outcome {
        Outcome::Local(Ok(Reply::Files(set)), call_id) => Outcome::Local(save_blocking(target, set).await, call_id),
        Outcome::Hosted(Ok(mut answer)) if answer.status < 300 => {
            let Ok(Reply::Files(set)) = crate::routed::answer_reply(&answer) else {
                return Outcome::Hosted(Ok(answer));
            };
            match save_blocking(target, set).await {
                Ok(Reply::Json(saved)) => {
                    answer.headers.retain(|(name, _)| {
                        !matches!(name.as_str(), "content-type" | "content-disposition" | "content-length")
                            && name != REPORT_HEADER
                    });
                    answer.headers.push(("content-type".into(), "application/json".into()));
                    answer.body = saved.to_string().into();
                    Outcome::Hosted(Ok(answer))
                }
                Ok(Reply::Files(_)) => Outcome::Hosted(Ok(answer)),
                // Paid for: a result that cannot be saved is answered as it came, not lost.
                Err(error) => {
                    tracing::error!(error = %error.message, "a paid result could not be saved; answered instead");
                    Outcome::Hosted(Ok(answer))
                }
            }
        }
        other => other,
    }
}

async fn save_blocking(target: Target, set: FileSet) -> Result<Reply<Value>, EngineError> {
    tokio::task::spawn_blocking(move || target.save(set).map(Reply::Json))
        .await
        .map_err(|e| EngineError::internal(format!("saving the result: {e}")))?
}

/// Checks `save` against the granted folders: an existing folder inside them, or a file
/// whose folder is inside them and which does not exist unless `overwrite`.
pub(crate) fn check_target(folders: &[PathBuf], save: &SaveTo) -> Result<Target, EngineError> {
    let field = save.field.as_str();
    let granted = granted_folders(folders, field)?;
    let path = absolute(&save.path, field)?;
    if let Ok(real) = std::fs::canonicalize(&path)
        && real.is_dir()
    {
        if !inside(&real, &granted) {
            return Err(not_granted(field, &save.path, &granted));
        }
        return Ok(Target { folder: real, name: None, overwrite: save.overwrite, field: field.into() });
    }
    if save.path.ends_with('/') {
        return Err(EngineError::invalid_with(
            "path_not_found",
            field,
            format!("{field}: there is no folder {}", save.path),
        ));
    }
    let (Some(parent), Some(Component::Normal(name))) = (path.parent(), path.components().next_back()) else {
        return Err(EngineError::invalid(field, format!("{field}: {} names no file", save.path)));
    };
    let name = name.to_string_lossy().into_owned();
    let folder = match std::fs::canonicalize(parent) {
        Ok(folder) if folder.is_dir() => folder,
        _ if !inside(&lexical(parent), &granted) => return Err(not_granted(field, &save.path, &granted)),
        _ => {
            return Err(EngineError::invalid_with(
                "path_not_found",
                field,
                format!("{field}: there is no folder {}", parent.display()),
            ));
        }
    };
    if !inside(&folder, &granted) {
        return Err(not_granted(field, &save.path, &granted));
    }
    let target = Target { folder, name: Some(name), overwrite: save.overwrite, field: field.into() };
    target.refuse_existing(target.name.as_deref().unwrap_or_default())?;
    Ok(target)
}

impl Target {
    /// Refuses to replace `name` in the folder unless asked (a folder is never replaced).
    fn refuse_existing(&self, name: &str) -> Result<(), EngineError> {
        let field = &self.field;
        let path = self.folder.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                Err(EngineError::invalid_with("file_exists", field, format!("{field}: {} is a folder", path.display())))
            }
            Ok(_) if !self.overwrite => Err(EngineError::invalid_with(
                "file_exists",
                field,
                format!("{field}: {} exists already; ask to overwrite it, or name another file", path.display()),
            )),
            _ => Ok(()),
        }
    }

    /// Writes the files of `set`: one file (or the ZIP of several) under the target's name,
    /// or each file under its own name into the target folder. Returns the answer a door
    /// gives: the files' names, sizes, hashes and `file://` URIs, and the report.
    pub(crate) fn save(&self, set: FileSet) -> Result<Value, EngineError> {
        let report = if set.bundle.is_some() { None } else { set.report.clone() };
        let files: Vec<(String, OutFile)> = match &self.name {
            Some(name) => vec![(name.clone(), set.into_single_file()?)],
            None => {
                let mut used = std::collections::HashSet::new();
                set.files
                    .into_iter()
                    .map(|file| {
                        let mut name = sanitize_filename(&file.filename);
                        if name.is_empty() {
                            name = "result".into();
                        }
                        let name = paperchain_engine_core::output::unique_name(&name, &mut used);
                        (name, file)
                    })
                    .collect()
            }
        };
        for (name, _) in &files {
            self.refuse_existing(name)?;
        }
        let mut written: Vec<PathBuf> = Vec::new();
        let mut items = Vec::with_capacity(files.len());
        for (name, file) in &files {
            let path = self.folder.join(name);
            match self.write_one(&path, &file.bytes) {
                Ok(()) => written.push(path.clone()),
                Err(error) => {
                    // All or nothing: the files of this call written so far go again.
                    if !self.overwrite {
                        written.iter().for_each(|p| drop(std::fs::remove_file(p)));
                    }
                    return Err(error);
                }
            }
            let uri = url::Url::from_file_path(&path).map(String::from).unwrap_or_default();
            items.push(json!({
                "filename": name,
                "media_type": file.media_type,
                "bytes": file.bytes.len() as u64,
                "sha256": file.sha256(),
                "uri": uri,
            }));
        }
        let mut answer = json!({ "files": items });
        if let Some(report) = report {
            answer["report"] = report;
        }
        Ok(answer)
    }

    fn write_one(&self, path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
        let field = &self.field;
        let failed = |e: &dyn std::fmt::Display| {
            EngineError::invalid_with(
                "path_not_writable",
                field,
                format!("{field}: writing {} failed ({e})", path.display()),
            )
        };
        let mut temp = tempfile::Builder::new()
            .prefix(".paperchain-")
            .suffix(".part")
            .tempfile_in(&self.folder)
            .map_err(|e| failed(&e))?;
        temp.write_all(bytes).map_err(|e| failed(&e))?;
        temp.as_file().sync_all().map_err(|e| failed(&e))?;
        set_mode(temp.as_file(), path);
        let persisted = if self.overwrite { temp.persist(path) } else { temp.persist_noclobber(path) };
        persisted.map(drop).map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                EngineError::invalid_with(
                    "file_exists",
                    field,
                    format!("{field}: {} exists already; ask to overwrite it, or name another file", path.display()),
                )
            } else {
                failed(&e.error)
            }
        })
    }
}

/// A new file is readable by others as a file saved by an editor is (0644); a replaced one
/// keeps its permissions.
#[cfg(unix)]
fn set_mode(file: &std::fs::File, replacing: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(replacing).map(|m| m.permissions().mode() & 0o777).unwrap_or(0o644);
    let _ = file.set_permissions(std::fs::Permissions::from_mode(mode));
}

#[cfg(not(unix))]
fn set_mode(_: &std::fs::File, _: &Path) {}

/// The granted folders that exist, as real paths; an error saying how to grant one when
/// none is granted.
fn granted_folders(folders: &[PathBuf], field: &str) -> Result<Vec<PathBuf>, EngineError> {
    if folders.is_empty() {
        return Err(EngineError::invalid_with(
            "no_folder_granted",
            field,
            format!(
                "{field}: no folder is granted to local calls, so no path is taken. Grant one with \
                 `paperchain config add files.folders ~/Documents` (or in the app's settings), then give \
                 a path inside it; or send the file as `data`"
            ),
        ));
    }
    Ok(folders.iter().filter_map(|f| std::fs::canonicalize(f).ok()).collect())
}

fn absolute(text: &str, field: &str) -> Result<PathBuf, EngineError> {
    let path = PathBuf::from(text);
    if text.is_empty() || !path.is_absolute() {
        return Err(EngineError::invalid_with(
            "path_not_absolute",
            field,
            format!("{field}: `{text}` is not an absolute path (paths are read as the user's, from `/`)"),
        ));
    }
    Ok(path)
}

fn not_granted(field: &str, text: &str, granted: &[PathBuf]) -> EngineError {
    let list = granted.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ");
    EngineError::invalid_with(
        "path_not_granted",
        field,
        format!(
            "{field}: {text} is outside the folders granted to local calls ({list}); move the file into one, \
             or grant its folder with `paperchain config add files.folders <folder>`"
        ),
    )
}

/// `path` with `.` and `..` taken away by their names alone (for a path that does not exist).
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn inside(path: &Path, granted: &[PathBuf]) -> bool {
    granted.iter().any(|folder| path.starts_with(folder))
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // No following a last symlink swapped in; no waiting on a named pipe.
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::open(path)
}

/// Whether the file opened is inside the granted folders, by the kernel's own name for it
/// (Linux); elsewhere the check made before opening stands.
#[cfg(target_os = "linux")]
fn opened_inside(file: &std::fs::File, granted: &[PathBuf]) -> bool {
    use std::os::fd::AsRawFd as _;
    match std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
        Ok(real) => inside(&real, granted),
        Err(_) => true,
    }
}

#[cfg(not(target_os = "linux"))]
fn opened_inside(_: &std::fs::File, _: &[PathBuf]) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperchain_engine_core::ErrorKind;

    fn folders() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let granted = root.path().join("granted");
        let outside = root.path().join("outside");
        std::fs::create_dir_all(&granted).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(granted.join("in.pdf"), b"%PDF-in").unwrap();
        std::fs::write(outside.join("secret.pdf"), b"%PDF-secret").unwrap();
        (root, granted, outside)
    }

    fn code(error: EngineError) -> (String, Option<String>) {
        (error.code.to_string(), error.field)
    }

    #[test]
    fn reads_inside_the_granted_folders_only() {
        let (_root, granted, outside) = folders();
        let grant = vec![granted.clone()];
        let ok = read_granted(&grant, granted.join("in.pdf").to_str().unwrap(), "/file/path", 1024).unwrap();
        assert_eq!(ok.bytes, b"%PDF-in");
        assert_eq!(ok.filename, "in.pdf");

        let escape = format!("{}/../outside/secret.pdf", granted.display());
        let error = read_granted(&grant, &escape, "/file/path", 1024).unwrap_err();
        assert_eq!(code(error), ("path_not_granted".into(), Some("/file/path".into())));

        std::os::unix::fs::symlink(outside.join("secret.pdf"), granted.join("link.pdf")).unwrap();
        let error = read_granted(&grant, granted.join("link.pdf").to_str().unwrap(), "/f/path", 1024).unwrap_err();
        assert_eq!(error.code, "path_not_granted");

        std::os::unix::fs::symlink(&outside, granted.join("dir")).unwrap();
        let error =
            read_granted(&grant, granted.join("dir/secret.pdf").to_str().unwrap(), "/f/path", 1024).unwrap_err();
        assert_eq!(error.code, "path_not_granted");

        // Whether a file outside exists is not told.
        let missing = read_granted(&grant, outside.join("nope.pdf").to_str().unwrap(), "/f/path", 1024);
        assert_eq!(missing.unwrap_err().code, "path_not_granted");
        let missing = read_granted(&grant, granted.join("nope.pdf").to_str().unwrap(), "/f/path", 1024);
        assert_eq!(missing.unwrap_err().code, "path_not_found");
    }

    #[test]
    fn refuses_what_is_not_a_granted_file() {
        let (_root, granted, _outside) = folders();
        let grant = vec![granted.clone()];
        assert_eq!(read_granted(&[], "/etc/passwd", "/f/path", 1024).unwrap_err().code, "no_folder_granted");
        assert_eq!(read_granted(&grant, "in.pdf", "/f/path", 1024).unwrap_err().code, "path_not_absolute");
        assert_eq!(read_granted(&grant, granted.to_str().unwrap(), "/f/path", 1024).unwrap_err().code, "not_a_file");
        let big = read_granted(&grant, granted.join("in.pdf").to_str().unwrap(), "/f/path", 3).unwrap_err();
        assert_eq!(big.code, "file_too_large");
        assert_eq!(big.kind, ErrorKind::TooLarge);
    }

    #[test]
    fn saves_atomically_and_never_overwrites_unasked() {
        let (_root, granted, outside) = folders();
        let grant = vec![granted.clone()];
        let save =
            |path: &Path, overwrite| SaveTo { path: path.display().to_string(), overwrite, field: "/save_to".into() };
        let one = || FileSet::single(OutFile::pdf("rotated.pdf", b"%PDF-new".to_vec()), Default::default());

        let target = check_target(&grant, &save(&granted.join("out.pdf"), false)).unwrap();
        let answer = target.save(one()).unwrap();
        assert_eq!(std::fs::read(granted.join("out.pdf")).unwrap(), b"%PDF-new");
        assert_eq!(answer["files"][0]["filename"], "out.pdf");
        assert!(answer["files"][0]["uri"].as_str().unwrap().starts_with("file:///"), "{answer}");

        let error = check_target(&grant, &save(&granted.join("in.pdf"), false)).unwrap_err();
        assert_eq!(code(error), ("file_exists".into(), Some("/save_to".into())));
        assert_eq!(std::fs::read(granted.join("in.pdf")).unwrap(), b"%PDF-in");
        check_target(&grant, &save(&granted.join("in.pdf"), true)).unwrap().save(one()).unwrap();
        assert_eq!(std::fs::read(granted.join("in.pdf")).unwrap(), b"%PDF-new");

        let error = check_target(&grant, &save(&outside.join("x.pdf"), false)).unwrap_err();
        assert_eq!(error.code, "path_not_granted");
        let error = check_target(&grant, &save(&granted.join("../outside/x.pdf"), false)).unwrap_err();
        assert_eq!(error.code, "path_not_granted");
        std::os::unix::fs::symlink(&outside, granted.join("away")).unwrap();
        let error = check_target(&grant, &save(&granted.join("away/x.pdf"), false)).unwrap_err();
        assert_eq!(error.code, "path_not_granted");
        assert!(!outside.join("x.pdf").exists());

        // A folder takes each file under its own name; no temporary file stays.
        let pages = FileSet::several(
            vec![OutFile::pdf("a.pdf", b"1".to_vec()), OutFile::pdf("a.pdf", b"2".to_vec())],
            Default::default(),
            "pages.zip",
        );
        let sub = granted.join("pages");
        std::fs::create_dir(&sub).unwrap();
        let answer = check_target(&grant, &save(&sub, false)).unwrap().save(pages).unwrap();
        assert_eq!(answer["files"].as_array().unwrap().len(), 2);
        let mut names: Vec<String> =
            std::fs::read_dir(&sub).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["a (2).pdf", "a.pdf"]);
    }

    #[test]
    fn file_inputs_are_found_through_the_schema() {
        let defs: Map<String, Value> = serde_json::from_value(json!({
            "FileInput": { "type": "object" },
            "Step": { "oneOf": [ { "properties": { "image": { "$ref": "#/$defs/FileInput" } } } ] }
        }))
        .unwrap();
        let schema = json!({
            "properties": {
                "file": { "$ref": "#/$defs/FileInput" },
                "files": { "items": { "$ref": "#/$defs/FileInput" } },
                "steps": { "items": { "$ref": "#/$defs/Step" } },
                "note": { "type": "object", "properties": { "path": { "type": "string" } } }
            }
        });
        let value = json!({
            "file": { "path": "/a" },
            "files": [ { "data": "x" }, { "path": "/b" }, { "path": null, "data": "y" } ],
            "steps": [ { "image": { "path": "/c" } } ],
            "note": { "path": "/not-a-file" }
        });
        let mut found = Vec::new();
        find_file_inputs(&value, &schema, &defs, "", 0, &mut found);
        assert_eq!(found, ["/file", "/files/1", "/steps/0/image"]);
    }
}
