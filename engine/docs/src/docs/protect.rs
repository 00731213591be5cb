//! `POST /v1/pdf/protect`: encrypt a PDF with a password (AES-256, security handler R6).

use qpdf::{EncryptionParams, EncryptionParamsR6, PrintPermission};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use lopdf::Document;

use crate::context::{Context, Limits, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::qpdf::{self as qp, QpdfSource, WriteOptions};
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::price::Price;

/// Longest password AES-256 encryption uses: 127 bytes of UTF-8. PDF 2.0 readers cut a
/// longer one there, but qpdf's writer hashes it whole, so it would open nowhere.
const MAX_PASSWORD_BYTES: usize = 127;

/// Fields of `/v1/pdf/protect` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtectOptions {
    /// Password that opens the document: 1 to 127 characters and at most 127 bytes of UTF-8 (127 ASCII characters, fewer of other scripts), no NUL.
    pub user_password: Password,
    /// Password that grants full rights (changing the permissions); 1 to 127 characters,
    /// different from `user_password`. When omitted a random one is used and never returned,
    /// so the permissions below cannot be lifted.
    #[serde(default)]
    pub owner_password: Option<Password>,
    /// What a reader opening with the user password may do; everything when omitted.
    #[serde(default)]
    pub permissions: Permissions,
}

/// A password; its `Debug` form never shows it.
#[derive(Clone, Deserialize, JsonSchema)]
#[serde(transparent)]
// The byte limit is a rule no pattern holds: the format `pdf-password` names it.
pub struct Password(
    #[schemars(
        length(min = 1, max = MAX_PASSWORD_BYTES),
        regex(pattern = r"^[^\x00]*$"),
        extend("format" = "pdf-password")
    )]
    pub String,
);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<hidden>")
    }
}

/// Permissions of a reader who opened the document with the user password.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    /// Printing: `none`, `low` (low resolution only) or `high` (default).
    #[serde(default)]
    pub print: PrintLevel,
    /// Changing the document's content (default true).
    #[serde(default = "yes")]
    pub modify: bool,
    /// Copying or extracting text and images (default true). Accessibility tools may always extract.
    #[serde(default = "yes")]
    pub copy: bool,
    /// Adding or changing comments and filling forms (default true).
    #[serde(default = "yes")]
    pub annotate: bool,
    /// Filling in existing form fields, even when `annotate` is false (default true).
    #[serde(default = "yes")]
    pub fill_forms: bool,
    /// Inserting, rotating, deleting pages and making bookmarks (default true).
    #[serde(default = "yes")]
    pub assemble: bool,
}

fn yes() -> bool {
    true
}

impl Default for Permissions {
    fn default() -> Self {
        Permissions {
            print: PrintLevel::High,
            modify: true,
            copy: true,
            annotate: true,
            fill_forms: true,
            assemble: true,
        }
    }
}

/// A print permission.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PrintLevel {
    /// No printing.
    None,
    /// Low-resolution printing only.
    Low,
    /// Full-quality printing.
    #[default]
    High,
}

/// A checked protect call.
pub struct ProtectCall {
    source: QpdfSource,
    params: EncryptionParamsR6,
    output: OutputMode,
}

/// The route.
pub struct ProtectRoute;

impl Route for ProtectRoute {
    type Input = PdfJob<ProtectOptions>;
    type Prepared = ProtectCall;
    type Output = NoJson;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<ProtectOptions>, ctx: &Context) -> Result<ProtectCall, EngineError> {
        let params = encryption(&input.options)?;
        let source = QpdfSource::load(&input.file, "/file", ctx).await?;
        Ok(ProtectCall { source, params, output: input.output })
    }

    fn quote(call: &ProtectCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: ProtectCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let limits = ctx.limits;
        blocking(move || {
            let ProtectCall { source, params, output } = call;
            let pdf = source.reopen(&limits)?;
            let options = WriteOptions { encryption: Some(EncryptionParams::R6(params)), ..WriteOptions::default() };
            let bytes = qp::write(&pdf, options).map_err(|e| e.under(&source.field))?;
            let name = derived_name(&source.filename, "protected", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output)))
        })
        .await
    }
}

/// The operation, as a pipeline step (the last one: its result is encrypted).
pub struct Protect;

impl Transform for Protect {
    type Options = ProtectOptions;
    type Plan = EncryptionParamsR6;

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "protected";
    const LAST: bool = true;

    fn check(options: &ProtectOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        encryption(options)?;
        Ok(pages)
    }

    fn plan(options: ProtectOptions, _: &Document, _: &Limits) -> Result<EncryptionParamsR6, EngineError> {
        encryption(&options)
    }

    fn apply(params: EncryptionParamsR6, mut doc: Document, limits: &Limits) -> Result<Pdf, EngineError> {
        let options = WriteOptions { encryption: Some(EncryptionParams::R6(params)), ..WriteOptions::default() };
        Ok(Pdf::Bytes(qp::rewrite(&mut doc, options, limits)?))
    }
}

const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/protect",
    operation: "password_protect_pdf",
    family: Family::Docs,
    summary: "Encrypt a PDF with a password",
    description: "Encrypts a PDF with AES-256 (PDF 2.0 security handler, revision 6) so that it opens only \
        with `user_password`, and restricts what readers may do (print, modify, copy, annotate, fill forms, \
        assemble). Without `owner_password` a random owner password is used and never returned, so the \
        restrictions cannot be lifted. An encrypted input opens with its `password` and gets the new \
        passwords. output=url gives a 24 h link.",
    base_price: Price::micros(2_000),
    price_rule: PAGE_EDIT_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
    holds_secrets: false,
    accepts: crate::catalog::accepts::PDF,
};

/// The encryption the options ask for; every password problem names its field.
fn encryption(options: &ProtectOptions) -> Result<EncryptionParamsR6, EngineError> {
    let user = check_password(&options.user_password.0, "/user_password")?;
    let owner = match &options.owner_password {
        Some(owner) => {
            let owner = check_password(&owner.0, "/owner_password")?;
            if owner == user {
                return Err(EngineError::invalid(
                    "/owner_password",
                    "/owner_password: must differ from user_password, or the permissions would not be enforced",
                ));
            }
            owner.to_string()
        }
        None => random_password(),
    };
    let p = &options.permissions;
    Ok(EncryptionParamsR6 {
        user_password: user.to_string(),
        owner_password: owner,
        // PDF 2.0 deprecates the accessibility bit: readers always allow it.
        allow_accessibility: true,
        allow_extract: p.copy,
        allow_assemble: p.assemble,
        allow_annotate_and_form: p.annotate,
        allow_form_filling: p.fill_forms,
        allow_modify_other: p.modify,
        allow_print: match p.print {
            PrintLevel::None => PrintPermission::None,
            PrintLevel::Low => PrintPermission::Low,
            PrintLevel::High => PrintPermission::Full,
        },
        encrypt_metadata: true,
    })
}

/// Checks a new password; the message never quotes it.
fn check_password<'a>(password: &'a str, field: &str) -> Result<&'a str, EngineError> {
    if password.is_empty() {
        return Err(EngineError::invalid(field, format!("{field}: must not be empty")));
    }
    if password.len() > MAX_PASSWORD_BYTES {
        return Err(EngineError::invalid(
            field,
            format!(
                "{field}: {} bytes of UTF-8; at most 127 are allowed (127 ASCII characters, fewer of other scripts)",
                password.len()
            ),
        ));
    }
    if password.contains('\0') {
        return Err(EngineError::invalid(field, format!("{field}: must not contain the NUL character")));
    }
    Ok(password)
}

/// 32 characters from the system's random source: an owner password nobody is told.
fn random_password() -> String {
    use base64::Engine as _;
    let mut seed = [0u8; 24];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed));
    if from_os.is_err() {
        // No /dev/urandom (not Unix): std's hasher keys are seeded from the OS per process.
        use sha2::{Digest, Sha256};
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = Sha256::new();
        for _ in 0..4 {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos(),
            );
            hasher.update(h.finish().to_le_bytes());
        }
        seed.copy_from_slice(&hasher.finalize()[..24]);
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(seed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::qpdf::testing::*;
    use serde_json::{Value, json};

    async fn protect(body: Value) -> Result<OutFile, EngineError> {
        run_single::<ProtectRoute>(&body).await
    }

    fn show_encryption(bytes: &[u8], password: &str) -> (i32, String) {
        let file = temp_pdf(bytes);
        qpdf_cli(&["--show-encryption", &format!("--password={password}"), file.path().to_str().unwrap()])
    }

    #[tokio::test]
    async fn encrypts_with_aes256_and_the_permissions_asked() {
        let body = json!({
            "file": file_json(&sample_pdf(3), "report.pdf", None),
            "user_password": "open sesame",
            "owner_password": "the owner",
            "permissions": { "print": "low", "modify": false, "copy": false, "assemble": false },
        });
        let out = protect(body).await.unwrap();
        assert_eq!(out.filename, "report-protected.pdf");
        let (code, text) = show_encryption(&out.bytes, "open sesame");
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("R = 6"), "{text}");
        let file = temp_pdf(&out.bytes);
        let (code, json) =
            qpdf_cli(&["--json", "--json-key=encrypt", "--password=open sesame", file.path().to_str().unwrap()]);
        assert_eq!(code, 0, "{json}");
        let json: Value = serde_json::from_str(&json).unwrap();
        let params = &json["encrypt"]["parameters"];
        assert_eq!(
            (params["V"].as_i64(), params["R"].as_i64(), params["bits"].as_i64()),
            (Some(5), Some(6), Some(256))
        );
        assert!(text.contains("AESv3"), "{text}");
        assert!(text.contains("print low resolution: allowed"), "{text}");
        assert!(text.contains("print high resolution: not allowed"), "{text}");
        assert!(text.contains("modify other: not allowed"), "{text}");
        assert!(text.contains("extract for any purpose: not allowed"), "{text}");
        assert!(text.contains("modify annotations: allowed"), "{text}");
        assert!(text.contains("modify forms: allowed"), "{text}");
        assert!(text.contains("modify document assembly: not allowed"), "{text}");
        assert_qpdf_check(&out.bytes, Some("open sesame"));
        assert_qpdf_check(&out.bytes, Some("the owner"));
        assert_eq!(qpdf_pages(&out.bytes, Some("open sesame")), 3);
        let (code, text) = qpdf_cli(&["--check", "--password=wrong", file.path().to_str().unwrap()]);
        assert_ne!(code, 0, "{text}");
        assert!(text.contains("invalid password"), "{text}");
        // Without a password the file does not open either.
        let (code, _) = qpdf_cli(&["--check", file.path().to_str().unwrap()]);
        assert_ne!(code, 0);
    }

    #[tokio::test]
    async fn defaults_allow_everything_with_a_hidden_owner_password() {
        let body = json!({ "file": file_json(&sample_pdf(1), "a.pdf", None), "user_password": "u" });
        let out = protect(body).await.unwrap();
        let (code, text) = show_encryption(&out.bytes, "u");
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("R = 6"), "{text}");
        assert!(text.contains("print high resolution: allowed"), "{text}");
        assert!(text.contains("modify other: allowed"), "{text}");
        assert!(text.contains("extract for any purpose: allowed"), "{text}");
        // The user password gives user rights only: the owner password is another one.
        assert!(text.contains("Supplied password is user password"), "{text}");
        assert_qpdf_check(&out.bytes, Some("u"));
        let (a, b) = (random_password(), random_password());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }

    #[tokio::test]
    async fn print_none_is_written() {
        let body = json!({
            "file": file_json(&sample_pdf(1), "a.pdf", None),
            "user_password": "u",
            "permissions": { "print": "none" },
        });
        let out = protect(body).await.unwrap();
        let (_, text) = show_encryption(&out.bytes, "u");
        assert!(text.contains("print low resolution: not allowed"), "{text}");
        assert!(text.contains("print high resolution: not allowed"), "{text}");
    }

    #[tokio::test]
    async fn re_encrypts_an_encrypted_input() {
        let bytes = std::fs::read(corpus("enc-XI-R6,V5,U=view,O=master.pdf")).unwrap();
        let body = json!({ "file": file_json(&bytes, "enc.pdf", Some("view")), "user_password": "fresh" });
        let out = protect(body).await.unwrap();
        assert_qpdf_check(&out.bytes, Some("fresh"));
        let file = temp_pdf(&out.bytes);
        let (code, _) = qpdf_cli(&["--check", "--password=view", file.path().to_str().unwrap()]);
        assert_ne!(code, 0, "the old password no longer opens it");
        assert_eq!(qpdf_pages(&out.bytes, Some("fresh")), 30);
        let bytes = std::fs::read(corpus("encrypted-40-bit-R3.pdf")).unwrap();
        let body = json!({ "file": file_json(&bytes, "enc.pdf", None), "user_password": "fresh" });
        let e = protect(body).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("password_required", Some("/file/password")));
    }

    #[tokio::test]
    async fn input_errors_name_their_fields() {
        let file = file_json(&sample_pdf(1), "a.pdf", None);
        let cases = [
            (json!({ "file": file, "user_password": "" }), "invalid_input", "/user_password"),
            (json!({ "file": file, "user_password": "x".repeat(128) }), "invalid_input", "/user_password"),
            (json!({ "file": file, "user_password": "a", "owner_password": "" }), "invalid_input", "/owner_password"),
            (json!({ "file": file, "user_password": "a", "owner_password": "a" }), "invalid_input", "/owner_password"),
            (
                json!({ "file": file, "user_password": "a", "permissions": { "print": "sometimes" } }),
                "invalid_input",
                "/permissions/print",
            ),
            (
                json!({ "file": file, "user_password": "a", "permissions": { "share": true } }),
                "unknown_field",
                "/permissions/share",
            ),
            (
                json!({ "file": file, "user_password": "a", "permissions": { "copy": "no" } }),
                "invalid_input",
                "/permissions/copy",
            ),
            (json!({ "file": file }), "invalid_input", "/user_password"),
            (json!({ "file": file_json(b"not a pdf", "a.pdf", None), "user_password": "a" }), "not_a_pdf", "/file"),
        ];
        for (body, code, field) in cases {
            let e = protect(body.clone()).await.unwrap_err();
            assert_eq!((e.code.as_ref(), e.field.as_deref()), (code, Some(field)), "{body}: {}", e.message);
        }
        let e = protect(json!({ "file": file, "user_password": "a", "owner_password": "a" })).await.unwrap_err();
        assert!(!e.message.contains("\"a\""));
        // 127 bytes are allowed, of whatever script.
        for password in ["x".repeat(127), format!("{}x", "é".repeat(63))] {
            let out = protect(json!({ "file": file, "user_password": password })).await.unwrap();
            assert_qpdf_check(&out.bytes, Some(&password));
        }
        let e = protect(json!({ "file": file, "user_password": "é".repeat(64) })).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/user_password"));
    }

    #[tokio::test]
    async fn prices_by_page_count() {
        let input: PdfJob<ProtectOptions> = crate::catalog::parse_body(
            &serde_json::to_vec(&json!({ "file": file_json(&sample_pdf(60), "a.pdf", None), "user_password": "u" }))
                .unwrap(),
        )
        .unwrap();
        let call = ProtectRoute::prepare(input, &Context::new()).await.unwrap();
        assert_eq!(ProtectRoute::quote(&call), page_edit_price(60));
    }
}
