//! The one error type of every operation: a stable code, a human message, and the JSON
//! pointer of the input field at fault. Front doors map [`ErrorKind`] to their statuses.
//!
//! Codes are stable, and every one is listed with its meaning in [`CODES`], which the
//! OpenAPI document (`x-error-codes`) and llms.txt publish. A refusal that depends on the
//! document or the chain rather than on the request's form (a page the document lacks,
//! an address that is not a token) has a code of its own, never the generic
//! `invalid_input`. [`ErrorKind::Internal`] is never caused by input alone; the HTTP and
//! MCP doors log its message and answer without it.

use std::borrow::Cow;
use std::time::Duration;

/// What went wrong, in the terms a front door needs to choose a status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is invalid (HTTP 422).
    InvalidInput,
    /// A referenced thing does not exist (HTTP 404).
    NotFound,
    /// The input is too large (HTTP 413).
    TooLarge,
    /// An upstream refused us for rate (HTTP 429).
    RateLimited { retry_after: Duration },
    /// An upstream answer could not be used (HTTP 502).
    BadUpstream,
    /// The service or an upstream is unavailable (HTTP 503).
    Unavailable { retry_after: Duration },
    /// An upstream or the operation took too long (HTTP 504).
    Timeout,
    /// A defect on our side (HTTP 500). Never caused by input alone.
    Internal,
    /// The caller went away or asked to stop the call, and its work was stopped (499, the
    /// status proxies record for a client that closed its request; nobody reads the answer).
    Cancelled,
}

/// An operation's failure: kind, stable snake_case code, message, and the field at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EngineError {
    /// The kind, which decides the status.
    pub kind: ErrorKind,
    /// A stable snake_case code (listed in [`CODES`]).
    pub code: Cow<'static, str>,
    /// A sentence for a person.
    pub message: String,
    /// JSON pointer of the input field at fault (`/files/1/pages`), if any.
    pub field: Option<String>,
}

/// Every error code with its meaning, for the OpenAPI document and llms.txt.
pub const CODES: &[(&str, &str)] = &[
    ("invalid_json", "the body is not valid JSON"),
    ("invalid_input", "a field is missing, of the wrong type, out of range, or not allowed"),
    ("unknown_field", "the body has a field the route does not take"),
    ("invalid_pages", "a page selection cannot be parsed"),
    ("page_out_of_range", "a page selection names a page the document does not have"),
    ("empty_file", "a file input has no bytes"),
    ("invalid_base64", "a file's data is not valid base64"),
    ("not_a_pdf", "a file input is not a PDF"),
    ("damaged_pdf", "a PDF is too damaged to read"),
    ("password_required", "a PDF is encrypted and no password was given"),
    ("wrong_password", "the password given does not open the PDF"),
    ("blocked_target", "a URL input points to an address that may not be fetched"),
    ("fetch_failed", "a URL input could not be fetched"),
    ("file_too_large", "a file is larger than the limit"),
    ("memory_budget", "the input needs more memory than one call may use (PAPERCHAIN_CALL_MEMORY_MIB)"),
    ("too_many_values", "the body holds more JSON values (numbers, strings, lists, objects) than the route takes"),
    ("path_not_here", "a file path or a place to save to was given to a service that is not on the caller's machine"),
    (
        "approval_not_waiting",
        "an MCP call repeated with a requestState that names no call waiting for its user's answer (answered \
         already, expired, or another call's)",
    ),
    ("keyring_not_here", "a file kept in the keyring was named on a service that is not on the caller's machine"),
    (
        "keyring_unavailable",
        "the keyring holding a file named as kept there cannot be read (no Secret Service, or locked)",
    ),
    ("keyring_file_missing", "no file is kept in this machine's keyring under the name given"),
    ("no_folder_granted", "a file path was given, and no folder is granted to local calls (files.folders)"),
    ("path_not_absolute", "a file path is not absolute"),
    ("path_not_granted", "a file path, once its links and `..` are resolved, is outside the granted folders"),
    ("path_not_found", "no file or folder at a path inside the granted folders"),
    ("path_not_readable", "the file at a path cannot be opened or read"),
    ("not_a_file", "a path names a folder or a device, not a file"),
    ("file_exists", "the file a result is saved to exists already, and overwriting was not asked"),
    ("path_not_writable", "a result could not be written to the path asked"),
    ("not_an_office_file", "a file input is not the Office Open XML document the route takes (.xlsx, .docx, .pptx)"),
    ("damaged_office_file", "an Office file's ZIP or XML is too damaged to read"),
    ("decompression_bomb", "a compressed file expands past the size or ratio limits"),
    ("xml_doctype", "an XML part declares a document type (the start of an entity-expansion bomb)"),
    ("conversion_failed", "the converter could not open the file: damaged, or not what its contents claim"),
    ("missing_keys", "the data lacks keys the template uses; all of them are listed"),
    ("invalid_template", "the template has a placeholder or section that cannot be filled"),
    ("page_timeout", "a web page did not finish loading or printing in its time"),
    ("unsupported_format", "a file is in a format the route does not read"),
    ("unknown_language", "an OCR language is not installed on this server (the message lists the installed ones)"),
    ("no_pages_to_read", "every page selected for OCR already has text (force reads them anyway)"),
    ("unknown_sheet", "a workbook has no worksheet of the name given"),
    ("no_tables", "no table was found on the pages read"),
    ("no_transactions", "no dated transactions were found in the statement"),
    ("no_text_layer", "the pages read have no text, and OCR found none"),
    ("no_attachments", "the PDF has no attachments to extract"),
    ("no_pages_left", "the pages named are every page of the document, and one must remain"),
    ("form_mismatch", "the values do not fit the document's form: a field it lacks, a choice it does not offer"),
    (
        "option_not_applicable",
        "an option for another kind of file or column than the one given (pages or a password for a non-PDF, JPEG \
         quality for PNG, a currency for a column of another type)",
    ),
    ("margins_too_large", "crop margins that leave less than 1 pt of a page of this document"),
    ("not_a_token", "the address is not an ERC-20 token on that chain: no code, or it does not answer as one"),
    ("not_a_collection", "the contract is neither an ERC-721 nor an ERC-1155 collection on that chain"),
    ("unknown_market", "the venue has no market of that symbol"),
    (
        "inconsistent_fields",
        "fields well formed one by one contradict each other: a range that ends before it starts, a token paired \
         with itself, a row with another count of cells than the columns",
    ),
    ("too_many_cells", "the sheets asked for hold more cells than one call reads"),
    ("too_many_pages", "a PDF, a page selection or a result has more pages than the limit"),
    ("too_many_logs", "a log query matches more logs than one call answers; narrow its block range or filters"),
    ("output_too_large", "the result would be larger than the limit"),
    ("too_many_images", "the pages chosen draw more distinct images than one call writes"),
    ("no_bookmarks", "the document has no bookmark at the level asked for that opens a page"),
    (
        "font_not_embedded",
        "PDF/A needs every font drawn with embedded, and one is not and has no installed font of the same metrics; \
         the message names each font and page",
    ),
    (
        "invalid_invoice",
        "the invoice XML is not a Factur-X / ZUGFeRD invoice, lacks fields its profile requires or its totals do not \
         add up; every problem is listed",
    ),
    ("invalid_certificate", "a certificate or PKCS#12 file cannot be read, or holds no usable key and certificate"),
    ("encrypted_pdf", "the route cannot work on an encrypted PDF; unlock it first"),
    ("already_signed", "the signature field named is signed already"),
    ("not_a_signature_field", "the field named is a form field of another type than signature"),
    ("no_signatures", "the PDF has no signatures"),
    (
        "timestamp_failed",
        "the time-stamp authority refused the request or answered with something other than a valid time stamp",
    ),
    ("too_complex", "a page draws more objects, or more image data, than one call looks at"),
    ("body_too_large", "the request body is larger than the limit"),
    ("unsupported_media_type", "the body is not application/json"),
    ("not_found", "no such route or file, or the chain has no such record (a receipt, a block)"),
    ("method_not_allowed", "the route exists but takes POST"),
    ("forbidden_host", "the Host header is not a loopback name"),
    ("forbidden_origin", "an MCP request from a web page of another origin"),
    ("timeout", "the operation took longer than the limit"),
    ("cancelled", "the caller went away or cancelled the call, and its work was stopped"),
    ("upstream_error", "an upstream answer could not be used"),
    (
        "rate_limited",
        "an upstream (a chain node, the funding venue) refused the request for rate; retry after Retry-After",
    ),
    (
        "insufficient_storage",
        "the server has no room left to keep the result files (output url); retry after Retry-After seconds",
    ),
    ("busy", "every worker of the route is busy and its queue is full; retry after Retry-After seconds"),
    ("engine_failed", "the external engine stopped during the call; it was restarted, send the call again"),
    ("unavailable", "the service or an upstream is unavailable"),
    ("internal", "a defect on our side"),
];

impl EngineError {
    /// An error of `kind` with `code` and `message`, no field.
    pub fn new(kind: ErrorKind, code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        EngineError { kind, code: code.into(), message: message.into(), field: None }
    }

    /// Invalid input at `field` (a JSON pointer), code `invalid_input`.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, "invalid_input", message).at(field)
    }

    /// Invalid input with a specific code.
    pub fn invalid_with(code: &'static str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, code, message).at(field)
    }

    /// Input too large, with a specific code.
    pub fn too_large(code: &'static str, field: Option<String>, message: impl Into<String>) -> Self {
        EngineError { field, ..Self::new(ErrorKind::TooLarge, code, message) }
    }

    /// A defect on our side; the message is for logs and says nothing of the input.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, "internal", message)
    }

    /// The same error, naming `field`.
    pub fn at(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// The same error with its field nested under `prefix` (`/file` + `/password`).
    /// A message that starts with the field (`/password: …`) is nested the same way.
    pub fn under(mut self, prefix: &str) -> Self {
        if let Some(inner) = self.field.as_deref()
            && !inner.is_empty()
            && self.message.strip_prefix(inner).is_some_and(|rest| rest.starts_with(':'))
        {
            self.message = format!("{prefix}{}", self.message);
        }
        self.field = Some(match self.field.take() {
            Some(inner) => format!("{prefix}{inner}"),
            None => prefix.to_string(),
        });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The string literal that starts `text`, if one does.
    fn literal(text: &str) -> Option<&str> {
        let rest = text.trim_start().strip_prefix('"')?;
        rest.find('"').map(|end| &rest[..end])
    }

    #[test]
    fn every_code_the_routes_answer_is_published() {
        // The core and the two crates of routes, which answer with the core's errors.
        let engine = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files: Vec<_> = ["core", "chain", "docs"].iter().map(|krate| engine.join(krate).join("src")).collect();
        let mut used = Vec::new();
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).unwrap().map(|entry| entry.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for opener in ["invalid_with(", "too_large(", "EngineError::new(ErrorKind::"] {
                for (at, _) in text.match_indices(opener) {
                    let after = &text[at + opener.len()..];
                    let after =
                        if opener.ends_with("ErrorKind::") { &after[after.find(',').unwrap() + 1..] } else { after };
                    // Codes are snake_case; anything else is this test's own text.
                    if let Some(code) = literal(after)
                        .filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
                    {
                        used.push((code.to_string(), path.display().to_string()));
                    }
                }
            }
        }
        assert!(used.len() > 50, "the scan found {} codes", used.len());
        let missing: Vec<String> = used
            .into_iter()
            .filter(|(code, _)| !CODES.iter().any(|(c, _)| c == code))
            .map(|(code, file)| format!("`{code}` ({file})"))
            .collect();
        assert!(missing.is_empty(), "not in CODES: {}", missing.join(", "));
    }
}
