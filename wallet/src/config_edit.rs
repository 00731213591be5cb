//! Changes to `config.toml` made by the user (`paperchain config set|add|unset`, the
//! desktop app): one key at a time, comments and layout kept, the whole file checked to be a
//! configuration the client follows before it replaces the old one (whole or not at all).

use std::path::Path;

use crate::config::{Asset, ClientConfig, ConfigError, same_address};

/// One change to a key.
#[derive(Clone, Debug)]
pub enum Change {
    /// Sets the value (dollar amounts and modes are written as strings).
    Set(String),
    /// Adds a value to a list (policy.hosts, policy.payees, files.folders).
    Add(String),
    /// Removes the key.
    Unset,
    /// Removes a value from a list (a granted folder matches however it is written:
    /// `~/Documents` and `/home/me/Documents` are one folder).
    Remove(String),
    /// Adds an asset to `policy.assets` (a list of tables), once.
    AddAsset(Asset),
}

/// An asset as `paperchain config add --asset` takes it: `network,address,symbol,decimals`
/// (`eip155:8453,0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913,USDC,6`).
pub fn parse_asset(text: &str) -> Result<Asset, ConfigError> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let [network, address, symbol, decimals] = parts.as_slice() else {
        return Err(ConfigError(format!(
            "--asset: `{text}` is not network,address,symbol,decimals \
             (eip155:8453,0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913,USDC,6)"
        )));
    };
    if symbol.is_empty() || symbol.len() > 16 || !symbol.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
        return Err(ConfigError(format!("--asset: the symbol `{symbol}` is not 1 to 16 letters and digits")));
    }
    let decimals = decimals
        .parse::<u8>()
        .map_err(|_| ConfigError(format!("--asset: the decimals `{decimals}` are not a whole number from 0 to 30")))?;
    let asset =
        Asset { network: network.to_string(), address: address.to_string(), symbol: symbol.to_string(), decimals };
    crate::config::check_asset(&asset).map_err(|e| ConfigError(format!("--asset: {e}")))?;
    Ok(asset)
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
    if let Change::AddAsset(asset) = change {
        add_asset(&mut doc, asset)?;
        return checked(doc.to_string(), file);
    }
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
        Change::Remove(value) => {
            let list = table
                .get_mut(last)
                .and_then(|item| item.as_array_mut())
                .ok_or_else(|| ConfigError(format!("`{key}` is not a list in {}", file.display())))?;
            let same = |entry: &str| {
                entry == value
                    || (path == ["files", "folders"]
                        && crate::config::granted_folder(entry).ok() == crate::config::granted_folder(value).ok())
            };
            let before = list.len();
            list.retain(|v| !v.as_str().is_some_and(same));
            if list.len() == before {
                return Err(ConfigError(format!("`{value}` is not in {key}")));
            }
        }
        Change::AddAsset(_) => unreachable!("added above"),
    }
    checked(doc.to_string(), file)
}

/// `new_text`, when the whole file is still a configuration the client follows.
fn checked(new_text: String, file: &Path) -> Result<String, ConfigError> {
    ClientConfig::parse(&new_text, Some(file)).map_err(|e| ConfigError(format!("not changed: {e}")))?;
    Ok(new_text)
}

/// Appends `asset` to `[[policy.assets]]`; one already listed (the same network and
/// address) is refused, naming it.
fn add_asset(doc: &mut toml_edit::DocumentMut, asset: &Asset) -> Result<(), ConfigError> {
    let policy = doc.entry("policy").or_insert(toml_edit::table());
    if let Some(inline) = policy.as_inline_table().cloned() {
        *policy = toml_edit::Item::Table(inline.into_table());
    }
    let policy = policy.as_table_mut().ok_or_else(|| ConfigError("`policy` is a value, not a table".into()))?;
    let assets = policy.entry("assets").or_insert(toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()));
    if let Some(inline) = assets.as_array().cloned() {
        // `assets = [{…}]` written inline: kept, as a list of tables.
        let mut tables = toml_edit::ArrayOfTables::new();
        for value in inline.iter() {
            let table = value
                .as_inline_table()
                .ok_or_else(|| ConfigError("policy.assets holds something that is not a table".into()))?;
            tables.push(table.clone().into_table());
        }
        *assets = toml_edit::Item::ArrayOfTables(tables);
    }
    let tables =
        assets.as_array_of_tables_mut().ok_or_else(|| ConfigError("policy.assets is not a list of tables".into()))?;
    let listed = tables.iter().any(|t| {
        t.get("network").and_then(|n| n.as_str()) == Some(asset.network.as_str())
            && t.get("address")
                .and_then(|a| a.as_str())
                .is_some_and(|a| same_address(&asset.network, a, &asset.address))
    });
    if listed {
        return Err(ConfigError(format!(
            "not changed: {} on {} is already in policy.assets",
            asset.address, asset.network
        )));
    }
    let mut table = toml_edit::Table::new();
    table.insert("network", toml_edit::value(asset.network.as_str()));
    table.insert("address", toml_edit::value(asset.address.as_str()));
    table.insert("symbol", toml_edit::value(asset.symbol.as_str()));
    table.insert("decimals", toml_edit::value(i64::from(asset.decimals)));
    tables.push(table);
    Ok(())
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
    fn granted_folders_are_added_and_removed_however_they_are_written() {
        let file = Path::new("config.toml");
        let home = std::env::var("HOME").unwrap();
        let out = edited("", file, "files.folders", &Change::Add("~/Documents".into())).unwrap();
        let out = edited(&out, file, "files.folders", &Change::Add("/srv/scans".into())).unwrap();
        let config = ClientConfig::parse(&out, None).unwrap();
        assert_eq!(config.folders, [Path::new(&home).join("Documents"), "/srv/scans".into()]);
        let out = edited(&out, file, "files.folders", &Change::Remove(format!("{home}/Documents"))).unwrap();
        assert_eq!(ClientConfig::parse(&out, None).unwrap().folders, [Path::new("/srv/scans")]);
        let missing = edited(&out, file, "files.folders", &Change::Remove("/elsewhere".into())).unwrap_err();
        assert!(missing.0.contains("not in files.folders"), "{missing}");
        let wide = edited(&out, file, "files.folders", &Change::Add("/".into())).unwrap_err();
        assert!(wide.0.contains("too much"), "{wide}");
        let relative = edited(&out, file, "files.folders", &Change::Add("Documents".into())).unwrap_err();
        assert!(relative.0.contains("not an absolute path"), "{relative}");
    }

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

    #[test]
    fn an_asset_is_added_as_a_table_once_and_a_wrong_one_names_its_part() {
        let file = Path::new("config.toml");
        let asset = parse_asset("eip155:8453, 0x1111111111111111111111111111111111111111 ,EURC,6").unwrap();
        let out =
            edited("[policy]\nper_day = \"1\"\n", file, "policy.assets", &Change::AddAsset(asset.clone())).unwrap();
        let config = ClientConfig::parse(&out, None).unwrap();
        assert_eq!(config.policy.assets, vec![asset.clone()]);
        assert!(out.contains("[[policy.assets]]"), "{out}");
        let upper = Asset { address: asset.address.to_uppercase().replace("0X", "0x"), ..asset };
        let twice = edited(&out, file, "policy.assets", &Change::AddAsset(upper)).unwrap_err();
        assert!(twice.0.contains("already in policy.assets"), "{twice}");
        // Inline tables already there are kept.
        let inline = "[policy]\nassets = [{ network = \"eip155:1\", address = \"0x2222222222222222222222222222222222222222\", decimals = 6 }]\n";
        let asset = parse_asset("eip155:1,0x3333333333333333333333333333333333333333,USDT,6").unwrap();
        let out = edited(inline, file, "policy.assets", &Change::AddAsset(asset)).unwrap();
        assert_eq!(ClientConfig::parse(&out, None).unwrap().policy.assets.len(), 2, "{out}");
        for (text, names) in [
            ("eip155:8453,0x11,USDC,6", "not an address"),
            ("base,0x1111111111111111111111111111111111111111,USDC,6", "CAIP-2"),
            ("eip155:8453,0x1111111111111111111111111111111111111111,USDC,many", "decimals"),
            ("eip155:8453,0x1111111111111111111111111111111111111111,,6", "symbol"),
            ("eip155:8453,0x1111111111111111111111111111111111111111,USDC", "network,address,symbol,decimals"),
        ] {
            let error = parse_asset(text).unwrap_err().0;
            assert!(error.contains(names), "{text}: {error}");
        }
    }
}
