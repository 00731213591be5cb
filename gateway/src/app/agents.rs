//! Adding Paperchain to Claude Desktop: its `claude_desktop_config.json` gains an
//! `mcpServers.paperchain` entry running `paperchain mcp --stdio` (which uses the running
//! server). Every other entry and key of the file is kept; a file that is not JSON is left
//! alone and the error says so.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// Claude Desktop's configuration file on this system.
pub fn claude_config_file() -> Option<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let file = "Claude/claude_desktop_config.json";
    if cfg!(target_os = "macos") {
        return env("HOME").map(|h| h.join("Library/Application Support").join(file));
    }
    if cfg!(windows) {
        return env("APPDATA").map(|d| d.join(file));
    }
    env("XDG_CONFIG_HOME").or_else(|| env("HOME").map(|h| h.join(".config"))).map(|d| d.join(file))
}

/// The `paperchain` program an agent runs: this program, or in the desktop app the
/// `paperchain` installed beside it (the app's package carries both), or the one on the
/// `PATH`.
pub fn command_line_tool() -> PathBuf {
    let name = format!("paperchain{}", std::env::consts::EXE_SUFFIX);
    let Ok(this) = std::env::current_exe() else { return PathBuf::from(name) };
    if this.file_name().is_some_and(|n| n == name.as_str()) {
        return this;
    }
    let beside = this.with_file_name(&name);
    if beside.is_file() { beside } else { PathBuf::from(name) }
}

/// The entry that runs Paperchain's MCP tools over stdio.
pub fn entry(executable: &Path) -> Value {
    json!({ "command": executable.display().to_string(), "args": ["mcp", "--stdio"] })
}

/// Whether `file` has the `paperchain` entry, and which.
pub fn installed(file: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(file).ok()?;
    let config: Value = serde_json::from_str(&text).ok()?;
    config.pointer("/mcpServers/paperchain").cloned()
}

/// Adds (or replaces) the `paperchain` entry in `file`, keeping everything else; the old
/// file is kept beside it as `.bak`.
pub fn install(file: &Path, executable: &Path) -> Result<(), String> {
    let mut config = match std::fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => json!({}),
        Ok(text) => serde_json::from_str::<Value>(&text)
            .map_err(|e| format!("{} is not JSON ({e}); fix it, or add the snippet by hand", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(format!("reading {}: {e}", file.display())),
    };
    let root = config.as_object_mut().ok_or_else(|| format!("{} is not a JSON object", file.display()))?;
    let servers = root.entry("mcpServers").or_insert_with(|| json!({}));
    let servers =
        servers.as_object_mut().ok_or_else(|| format!("mcpServers in {} is not an object", file.display()))?;
    servers.insert("paperchain".into(), entry(executable));
    if file.exists() {
        std::fs::copy(file, file.with_extension("json.bak"))
            .map_err(|e| format!("keeping a copy of {}: {e}", file.display()))?;
    }
    let text = serde_json::to_string_pretty(&config).map_err(|e| e.to_string())? + "\n";
    paperchain_wallet::config_edit::write_atomically(file, text.as_bytes())
        .map_err(|e| format!("writing {}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_is_added_beside_the_others_and_a_broken_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("Claude/claude_desktop_config.json");
        install(&file, Path::new("/opt/paperchain")).unwrap();
        assert_eq!(installed(&file).unwrap()["args"], json!(["mcp", "--stdio"]));
        std::fs::write(&file, r#"{"theme": "dark", "mcpServers": {"other": {"command": "x"}}}"#).unwrap();
        install(&file, Path::new("/opt/paperchain")).unwrap();
        let config: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(config["theme"], "dark");
        assert_eq!(config["mcpServers"]["other"]["command"], "x");
        assert_eq!(config["mcpServers"]["paperchain"]["command"], "/opt/paperchain");
        assert!(file.with_extension("json.bak").exists());
        std::fs::write(&file, "{ not json").unwrap();
        assert!(install(&file, Path::new("/opt/paperchain")).unwrap_err().contains("is not JSON"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");
    }
}
