//! File inputs: inline base64 or a public URL, decoded and size-checked.
//!
//! A [`FileInput`] gives exactly one of `data`, `url` and `path`, which its schema states
//! (`oneOf`) as `prepare` checks it; a URL is fetched through the context's SSRF-safe
//! fetcher. A `path` names a file on the caller's own machine: a local server's call path
//! reads it (inside the folders the user granted) and hands the engine its bytes, so the
//! engine itself never opens a path and refuses one that reaches it (a hosted service). Errors name the field (`/file/data`, `/files/2/url`). Its `Debug` never shows
//! the bytes or the password, so a logged input leaks neither.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::fetch::FetchError;

/// A file: `data` (base64, optionally a `data:` URL) with an optional `filename`, a
/// public `url`, or, on a Paperchain running on your own machine, the `path` of a file in
/// a folder you granted. An encrypted PDF takes its `password` here too.
/// Give exactly one of `data`, `url` and `path` (a null counts as not given).
#[derive(Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [
    { "required": ["data"], "properties": { "data": { "type": "string" } } },
    { "required": ["url"], "properties": { "url": { "type": "string" } } },
    { "required": ["path"], "properties": { "path": { "type": "string" } } }
]))]
pub struct FileInput {
    /// The file's bytes, base64 (standard or URL-safe alphabet, padding optional).
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub data: Option<String>,
    /// A public http(s) URL to fetch the file from instead of `data`.
    #[serde(default)]
    pub url: Option<String>,
    /// Local servers only: the absolute path of a file inside a folder the user granted
    /// (`files.folders` in config.toml, `--folder`), instead of `data`.
    #[serde(default)]
    #[schemars(length(min = 1))]
    pub path: Option<String>,
    /// Local servers only: the name of a file kept in this machine's keyring with its password
    /// (`paperchain wallet file add`), such as a signing certificate, instead of `data`. It never leaves the
    /// machine.
    #[serde(default)]
    #[schemars(length(min = 1, max = 64))]
    pub keyring: Option<String>,
    /// The file's name, used to name outputs.
    #[serde(default)]
    pub filename: Option<String>,
    /// Password of an encrypted PDF (user or owner password).
    #[serde(default)]
    pub password: Option<String>,
}

impl std::fmt::Debug for FileInput {
    // Never print file bytes or passwords.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileInput")
            .field("data_len", &self.data.as_ref().map(String::len))
            .field("url", &self.url)
            .field("path", &self.path)
            .field("filename", &self.filename)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .finish()
    }
}

/// A file input's bytes, once decoded or fetched.
pub struct FileBytes {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// A file name: the one given, the URL's, or `fallback`.
    pub filename: String,
    /// The password given with the file.
    pub password: Option<String>,
}

impl FileInput {
    /// Decodes or fetches the file; errors name `field` (a JSON pointer such as `/file`).
    pub async fn resolve(&self, ctx: &Context, field: &str, fallback_name: &str) -> Result<FileBytes, EngineError> {
        let max = ctx.limits.max_file_bytes;
        if self.path.is_some() {
            // A local server's call path has read it already; only a hosted service gets here.
            return Err(EngineError::invalid_with(
                "path_not_here",
                format!("{field}/path"),
                format!(
                    "{field}/path: a path is read only by Paperchain on your own machine (paperchain serve, \
                     the app, MCP over stdio); here send the file as `data` or `url`"
                ),
            ));
        }
        if self.keyring.is_some() {
            // A local server's call path has read it from the keyring already.
            return Err(EngineError::invalid_with(
                "keyring_not_here",
                format!("{field}/keyring"),
                format!(
                    "{field}/keyring: a file kept in the keyring is used only by Paperchain on your own machine \
                     (paperchain serve, the app, MCP over stdio), and never sent elsewhere; here send the file as `data`"
                ),
            ));
        }
        let (bytes, fetched_name) = match (&self.data, &self.url) {
            (Some(_), Some(_)) => {
                return Err(EngineError::invalid(field, format!("{field}: give either `data` or `url`, not both")));
            }
            (None, None) => {
                return Err(EngineError::invalid(
                    format!("{field}/data"),
                    format!("{field}: a file needs `data` (base64), `url` or, on your own machine, `path`"),
                ));
            }
            (Some(data), None) => (decode_base64(data, max, &format!("{field}/data"))?, None),
            (None, Some(url)) => {
                let fetched = ctx.fetcher.fetch(url).await.map_err(|e| fetch_error(e, &format!("{field}/url")))?;
                (fetched.bytes, fetched.filename)
            }
        };
        if bytes.is_empty() {
            return Err(EngineError::invalid_with("empty_file", field, format!("{field}: the file is empty")));
        }
        if bytes.len() as u64 > max {
            return Err(file_too_large(field, max));
        }
        let filename = self
            .filename
            .clone()
            .or(fetched_name)
            .map(|n| sanitize_filename(&n))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| fallback_name.to_string());
        Ok(FileBytes { bytes, filename, password: self.password.clone() })
    }
}

fn file_too_large(field: &str, max: u64) -> EngineError {
    EngineError::too_large(
        "file_too_large",
        Some(field.to_string()),
        format!("{field}: the file is larger than {} MiB", max / (1024 * 1024)),
    )
}

/// Decodes base64 in either alphabet, with or without padding or line breaks, or a
/// `data:…;base64,` URL; refuses more than `max` decoded bytes before decoding.
pub fn decode_base64(text: &str, max: u64, field: &str) -> Result<Vec<u8>, EngineError> {
    let payload = match text.strip_prefix("data:") {
        Some(rest) => match rest.split_once(";base64,") {
            Some((_, payload)) => payload,
            None => {
                return Err(EngineError::invalid_with(
                    "invalid_base64",
                    field,
                    format!("{field}: a data: URL must be base64 (`data:<type>;base64,…`)"),
                ));
            }
        },
        None => text,
    };
    let compact: String = payload.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if (compact.len() as u64 / 4) * 3 > max + 3 {
        return Err(file_too_large(field.trim_end_matches("/data"), max));
    }
    let trimmed = compact.trim_end_matches('=');
    let engine = if trimmed.contains(['-', '_']) {
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
    } else {
        &base64::engine::general_purpose::STANDARD_NO_PAD
    };
    engine
        .decode(trimmed)
        .map_err(|e| EngineError::invalid_with("invalid_base64", field, format!("{field}: not valid base64 ({e})")))
}

/// Keeps a name safe to use in a Content-Disposition header or as a ZIP member: no
/// directories, no control characters, at most 200 characters.
pub fn sanitize_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = base.chars().filter(|c| !c.is_control() && *c != '"').take(200).collect();

    cleaned.trim().trim_start_matches('.').to_string()
}

pub fn fetch_error(err: FetchError, field: &str) -> EngineError {
    let message = format!("{field}: {err}");
    match err {
        FetchError::InvalidUrl(_) => EngineError::invalid(field, message),
        FetchError::Blocked(_) => EngineError::invalid_with("blocked_target", field, message),
        FetchError::TooLarge { .. } => EngineError::too_large("file_too_large", Some(field.to_string()), message),
        FetchError::Timeout => EngineError::new(ErrorKind::Timeout, "timeout", message).at(field),
        FetchError::TooManyRedirects { .. } | FetchError::Status(_) | FetchError::Network(_) => {
            EngineError::invalid_with("fetch_failed", field, message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_both_alphabets_and_data_urls() {
        let max = 1024;
        assert_eq!(decode_base64("aGVsbG8=", max, "/f").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVsbG8", max, "/f").unwrap(), b"hello");
        assert_eq!(decode_base64("aGVs\nbG8=", max, "/f").unwrap(), b"hello");
        assert_eq!(decode_base64("data:application/pdf;base64,aGVsbG8=", max, "/f").unwrap(), b"hello");
        assert_eq!(decode_base64("-_8", max, "/f").unwrap(), vec![0xfb, 0xff]);
        assert_eq!(decode_base64("+/8", max, "/f").unwrap(), vec![0xfb, 0xff]);
    }

    #[test]
    fn refuses_bad_base64_naming_the_field() {
        let e = decode_base64("not base64!", 1024, "/file/data").unwrap_err();
        assert_eq!(e.code, "invalid_base64");
        assert_eq!(e.field.as_deref(), Some("/file/data"));
    }

    #[test]
    fn refuses_oversize_before_decoding() {
        let e = decode_base64(&"A".repeat(4000), 1000, "/file/data").unwrap_err();
        assert_eq!(e.code, "file_too_large");
        assert_eq!(e.kind, ErrorKind::TooLarge);
    }

    #[test]
    fn sanitizes_names() {
        assert_eq!(sanitize_filename("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_filename("a\"b\r\n.pdf"), "ab.pdf");
        assert_eq!(sanitize_filename("C:\\x\\report.pdf"), "report.pdf");
        assert_eq!(sanitize_filename(".hidden"), "hidden");
    }
}
