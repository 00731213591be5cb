//! `POST /v1/pdf/unlock`: remove the password (the encryption) from a protected PDF.

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

/// A checked unlock call.
pub struct UnlockCall {
    source: QpdfSource,
    output: OutputMode,
}

/// The route's description, shared by the route and the pipeline step.
const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/unlock",
    operation: "unlock_pdf",
    family: Family::Docs,
    summary: "Remove the password from a protected PDF",
    description: "Opens an encrypted PDF with the password given in the file's `password` (user or owner \
        password) and writes it without encryption, so it opens without a password and carries no \
        restrictions. Pages and content are unchanged. A file that is not encrypted is returned unchanged. \
        output=url gives a 24 h link.",
    base_price: Price::micros(2_000),
    price_rule: PAGE_EDIT_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
    holds_secrets: false,
    accepts: crate::catalog::accepts::PDF,
};

/// The route.
pub struct UnlockRoute;

impl Route for UnlockRoute {
    type Input = PdfJob<UnlockOptions>;
    type Prepared = UnlockCall;
    type Output = NoJson;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<UnlockOptions>, ctx: &Context) -> Result<UnlockCall, EngineError> {
        let source = QpdfSource::load(&input.file, "/file", ctx).await?;
        Ok(UnlockCall { source, output: input.output })
    }

    fn quote(call: &UnlockCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: UnlockCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let limits = ctx.limits;
        blocking(move || {
            let UnlockCall { source, output } = call;
            let name = derived_name(&source.filename, "unlocked", "pdf");
            if !source.encrypted && !source.recovered {
                // Nothing to remove: the file as given is the unlocked file.
                return Ok(Reply::Files(FileSet::single(OutFile::pdf(name, source.bytes), output)));
            }
            if !source.encrypted && declares_encryption(&source.bytes) {
                // Damaged where qpdf would have found its encryption: what it read is
                // still encrypted data, and writing it out "unlocked" would be garbage.
                return Err(EngineError::invalid_with(
                    "damaged_pdf",
                    source.field.clone(),
                    format!(
                        "{}: the PDF declares encryption (/Encrypt) but is too damaged for it to be read; \
                         it cannot be unlocked",
                        source.field
                    ),
                ));
            }
            // Encrypted, or damaged without encryption: written again by qpdf, repaired.
            let pdf = source.reopen(&limits)?;
            let options = WriteOptions { decrypt: true, ..WriteOptions::default() };
            let bytes = qp::write(&pdf, options).map_err(|e| e.under(&source.field))?;
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output)))
        })
        .await
    }
}

/// Whether a PDF's bytes name an encryption dictionary (`/Encrypt` followed by a
/// delimiter), as a trailer of an encrypted file does.
fn declares_encryption(bytes: &[u8]) -> bool {
    bytes
        .windows(9)
        .any(|w| &w[..8] == b"/Encrypt" && matches!(w[8], b' ' | b'\n' | b'\r' | b'\t' | b'/' | b'<' | b'['))
        || bytes.ends_with(b"/Encrypt")
}

/// Fields of `/v1/pdf/unlock` besides `file`: none (the password is the file's).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnlockOptions {}

/// The operation, as a pipeline step: the pipeline opened the file with its password,
/// and its result is written without encryption, so the step only says so.
pub struct Unlock;

impl Transform for Unlock {
    type Options = UnlockOptions;
    type Plan = ();

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "unlocked";

    fn plan(_: UnlockOptions, _: &Document, _: &Limits) -> Result<(), EngineError> {
        Ok(())
    }

    fn apply(_: (), doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        Ok(Pdf::Doc(doc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::qpdf::testing::*;
    use serde_json::json;

    async fn unlock(bytes: &[u8], password: Option<&str>) -> Result<OutFile, EngineError> {
        run_single::<UnlockRoute>(&json!({ "file": file_json(bytes, "locked.pdf", password) })).await
    }

    fn assert_unlocked(out: &OutFile, pages: u32) {
        let file = temp_pdf(&out.bytes);
        let (code, text) = qpdf_cli(&["--show-encryption", file.path().to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("File is not encrypted"), "{text}");
        assert_qpdf_check(&out.bytes, None);
        assert_eq!(qpdf_pages(&out.bytes, None), pages);
    }

    fn corpus_bytes(name: &str) -> Vec<u8> {
        std::fs::read(corpus(name)).unwrap()
    }

    #[tokio::test]
    async fn unlocks_with_the_user_or_the_owner_password() {
        let bytes = corpus_bytes("enc-XI-R6,V5,U=view,O=master.pdf");
        let pages = qpdf_pages(&bytes, Some("view"));
        let out = unlock(&bytes, Some("view")).await.unwrap();
        assert_eq!(out.filename, "locked-unlocked.pdf");
        assert_unlocked(&out, pages);
        assert_unlocked(&unlock(&bytes, Some("master")).await.unwrap(), pages);
    }

    #[tokio::test]
    async fn unlocks_the_encrypted_corpus_files() {
        for (name, password) in [
            ("enc-XI-R6,V5,O=master.pdf", None),
            ("enc-XI-R6,V5,O=master.pdf", Some("master")),
            ("V4-aes.pdf", None),
            ("20-pages.pdf", Some("user")),
        ] {
            let bytes = corpus_bytes(name);
            let pages = qpdf_pages(&bytes, password);
            let out = unlock(&bytes, password).await.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_unlocked(&out, pages);
        }
        let bytes = std::fs::read("/work/shared/corpus/pdf/sample-files/libreoffice-writer-password.pdf").unwrap();
        let pages = qpdf_pages(&bytes, Some("openpassword"));
        assert_unlocked(&unlock(&bytes, Some("openpassword")).await.unwrap(), pages);
    }

    #[tokio::test]
    async fn unlocks_rc4_files() {
        let plain = temp_pdf(&sample_pdf(2));
        for bits in ["40", "128"] {
            let locked = tempfile::Builder::new().suffix(".pdf").tempfile().unwrap();
            let (code, text) = qpdf_cli(&[
                "--allow-weak-crypto",
                "--encrypt",
                "user",
                "owner",
                bits,
                "--",
                plain.path().to_str().unwrap(),
                locked.path().to_str().unwrap(),
            ]);
            assert!(code == 0 || code == 3, "{text}");
            let bytes = std::fs::read(locked.path()).unwrap();
            let out = unlock(&bytes, Some("user")).await.unwrap();
            assert_unlocked(&out, 2);
            assert_unlocked(&unlock(&bytes, Some("owner")).await.unwrap(), 2);
            let e = unlock(&bytes, None).await.unwrap_err();
            assert_eq!((e.code.as_ref(), e.field.as_deref()), ("password_required", Some("/file/password")));
        }
    }

    #[tokio::test]
    async fn password_errors_name_the_password_field() {
        let bytes = corpus_bytes("enc-XI-R6,V5,U=view,O=master.pdf");
        let e = unlock(&bytes, None).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("password_required", Some("/file/password")));
        let e = unlock(&bytes, Some("")).await.unwrap_err();
        assert_eq!(e.code, "password_required");
        let e = unlock(&bytes, Some("guess-42")).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("wrong_password", Some("/file/password")));
        assert!(!e.message.contains("guess-42"));
        // The corpus README says its password is empty; qpdf refuses the empty one.
        let e = unlock(&corpus_bytes("encrypted-40-bit-R3.pdf"), None).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("password_required", Some("/file/password")));
    }

    #[tokio::test]
    async fn returns_an_unencrypted_file_unchanged() {
        let bytes = sample_pdf(2);
        let out = unlock(&bytes, None).await.unwrap();
        assert_eq!(out.bytes, bytes);
        let out = unlock(&bytes, Some("ignored")).await.unwrap();
        assert_eq!(out.bytes, bytes);
    }

    /// `bytes` with its cross-reference table's offset pointing nowhere: qpdf reads it only
    /// by rebuilding the table.
    fn broken_xref(bytes: &[u8]) -> Vec<u8> {
        let at = bytes.windows(9).rposition(|w| w == b"startxref").unwrap() + 9;
        let end = at + bytes[at..].iter().position(|&b| b == b'%').unwrap();
        [&bytes[..at], b"\n999999\n".as_slice(), &bytes[end..]].concat()
    }

    #[tokio::test]
    async fn a_damaged_unencrypted_file_comes_back_repaired_not_as_given() {
        let damaged = broken_xref(&sample_pdf(2));
        let out = unlock(&damaged, None).await.unwrap();
        assert_ne!(out.bytes, damaged);
        assert_unlocked(&out, 2);
    }

    #[tokio::test]
    async fn a_file_too_damaged_for_its_encryption_to_be_read_is_refused() {
        // Its trailer (and /Encrypt) unreachable: qpdf reads the objects as if plain.
        let bytes = corpus_bytes("20-pages.pdf");
        let trailer = bytes.windows(7).rposition(|w| w == b"trailer").unwrap();
        let mut damaged = bytes.clone();
        damaged[trailer..trailer + 7].copy_from_slice(b"garbage");
        let damaged = broken_xref(&damaged);
        match unlock(&damaged, None).await {
            Err(e) => assert!(
                ["damaged_pdf", "password_required"].contains(&e.code.as_ref()) && e.field.as_deref().is_some(),
                "{e:?}"
            ),
            Ok(out) => {
                panic!("a file whose encryption cannot be read was returned as unlocked ({} bytes)", out.bytes.len())
            }
        }
        assert!(declares_encryption(&bytes));
        assert!(!declares_encryption(&sample_pdf(1)));
    }

    #[tokio::test]
    async fn refuses_what_is_not_a_pdf() {
        let e = unlock(b"plain text", None).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_pdf", Some("/file")));
        let e = run_single::<UnlockRoute>(&json!({ "file": file_json(&sample_pdf(1), "a.pdf", None), "pages": "1" }))
            .await
            .unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("unknown_field", Some("/pages")));
    }
}
