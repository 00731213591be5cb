//! Changes to `config.toml` made by the user (`paperchain config set|add|unset`, the
//! desktop app): one key at a time, comments and layout kept, the whole file checked to be a
//! configuration the client follows before it replaces the old one (whole or not at all).

use std::path::Path;

use crate::config::{ClientConfig, ConfigError};

/// One change to a key.
#[derive(Clone, Debug)]
pub enum Change {
    /// Sets the value (dollar amounts and modes are written as strings).
    Set(String),
    /// Adds a value to a list (policy.hosts, policy.payees).
    Add(String),
    /// Removes the key.
    Unset,
}

/// Splits `policy.networks."eip155:8453"` into its parts.
pub fn key_path(key: &str) -> Result<Vec<String>, ConfigError> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in key.chars() {
        match c {
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    if quoted || parts.iter().any(String::is_empty) {
        return Err(ConfigError(format!(
            "`{key}` is not a key path (write it like policy.per_day or 'policy.networks.\"eip155:8453\"')"
        )));
    }
    Ok(parts)
}

/// The file's text with `change` made to `key`, checked to be a configuration the client
/// follows.
pub fn edited(text: &str, file: &Path, key: &str, change: &Change) -> Result<String, ConfigError> {
    let mut doc: toml_edit::DocumentMut =
        text.parse().map_err(|e| ConfigError(format!("{} is not TOML: {e}", file.display())))?;
    let path = key_path(key)?;
    let (last, tables) = path.split_last().ok_or_else(|| ConfigError("empty key".into()))?;
    let mut table = doc.as_table_mut();
    for part in tables {
        let entry = table.entry(part).or_insert(toml_edit::table());
        // An inline table becomes an ordinary one so a nested key can be set.
        if let Some(inline) = entry.as_inline_table().cloned() {
            *entry = toml_edit::Item::Table(inline.into_table());
        }
        table =
            entry.as_table_mut().ok_or_else(|| ConfigError(format!("`{part}` in `{key}` is a value, not a table")))?;
    }
    match change {
        Change::Unset => {
            if table.remove(last).is_none() {
                return Err(ConfigError(format!("`{key}` is not set in {}", file.display())));
            }
        }
        Change::Set(value) => {
            table.insert(last, toml_edit::value(value.as_str()));
        }
        Change::Add(value) => {
            let item = table.entry(last).or_insert(toml_edit::value(toml_edit::Array::new()));
            let list = item.as_array_mut().ok_or_else(|| ConfigError(format!("`{key}` is not a list")))?;
            if !list.iter().any(|v| v.as_str() == Some(value)) {
                list.push(value.as_str());
            }
        }
    }
    let new_text = doc.to_string();
    // The whole file must still be a configuration the client follows.
    ClientConfig::parse(&new_text, Some(file)).map_err(|e| ConfigError(format!("not changed: {e}")))?;
    Ok(new_text)
}

/// Makes `change` to `key` in `file` (created when missing).
pub fn edit_file(file: &Path, key: &str, change: &Change) -> Result<(), ConfigError> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(ConfigError(format!("reading {}: {e}", file.display()))),
    };
    let new_text = edited(&text, file, key, change)?;
    write_atomically(file, new_text.as_bytes()).map_err(|e| ConfigError(format!("writing {}: {e}", file.display())))
}

/// Writes `bytes` to `file` whole or not at all: a temporary file in the same folder
/// (created when missing), synced, then renamed over `file`.
pub fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let partial = dir.join(format!(".{name}.{}.partial", std::process::id()));
    let written = (|| {
        let mut out = std::fs::File::create(&partial)?;
        out.write_all(bytes)?;
        out.sync_all()?;
        std::fs::rename(&partial, file)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_keeps_comments_and_a_bad_one_changes_nothing() {
        let file = Path::new("config.toml");
        let text = "# mine\n[policy]\nper_day = \"1.00\" # a day\n";
        let out = edited(text, file, "policy.per_call", &Change::Set("0.05".into())).unwrap();
        assert!(out.contains("# mine") && out.contains("# a day") && out.contains("per_call = \"0.05\""), "{out}");
        let out = edited(&out, file, "policy.networks.\"eip155:8453\"", &Change::Set("2.00".into())).unwrap();
        assert!(out.contains("\"eip155:8453\" = \"2.00\""), "{out}");
        let bad = edited(&out, file, "policy.per_day", &Change::Set("lots".into())).unwrap_err();
        assert!(bad.0.starts_with("not changed:"), "{bad}");
        assert!(edited(&out, file, "policy.nothing", &Change::Unset).is_err());
        assert!(key_path("policy..x").is_err());
    }
}
