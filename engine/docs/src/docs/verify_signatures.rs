//! `POST /v1/pdf/verify-signatures`: validates every signature of a PDF: what it covers,
//! whether it is intact and valid, who signed and whether a path leads from them to the
//! trust roots given, when (claimed, and proven by a time stamp), and what later
//! revisions changed. The checks are [`crate::pdf::sign::verify`]'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use x509_cert::Certificate;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::Reply;
use crate::pdf::sign::verify::{self, SignatureReport};
use crate::pdf::{self};
use crate::price::Price;

/// Most trust-root files.
const MAX_ROOT_FILES: usize = 20;
/// Most certificates among them.
const MAX_ROOTS: usize = 200;

/// Request of `/v1/pdf/verify-signatures`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifySignaturesInput {
    /// The signed PDF (an encrypted one takes its password beside its data).
    pub file: FileInput,
    /// The certificates you trust (up to 20 files, each PEM with one or more certificates, or one DER
    /// certificate): a signature is `valid` only when a path leads from its signer to one of them. Without
    /// them, intact and valid signatures are `unknown_signer`.
    #[serde(default)]
    #[schemars(length(max = 20))]
    pub trust_roots: Vec<FileInput>,
}

/// The signatures of a PDF.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VerifySignaturesReport {
    /// How many signatures (document time stamps included) the PDF has.
    pub count: usize,
    /// Signatures past the first 50, which are counted but not validated.
    pub not_checked: usize,
    /// Whether it has signatures and every one is `valid`.
    pub all_valid: bool,
    /// How many trust-root certificates were read.
    pub trust_roots: usize,
    /// Each signature, in the form's order.
    pub signatures: Vec<SignatureReport>,
}

/// A checked call.
pub struct VerifyCall {
    bytes: Vec<u8>,
    doc: lopdf::Document,
    page_count: u32,
    roots: Vec<Certificate>,
}

impl std::fmt::Debug for VerifyCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyCall").field("bytes", &self.bytes.len()).field("roots", &self.roots.len()).finish()
    }
}

/// The route.
pub struct VerifySignaturesRoute;

impl Route for VerifySignaturesRoute {
    type Input = VerifySignaturesInput;
    type Prepared = VerifyCall;
    type Output = VerifySignaturesReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/verify-signatures",
        operation: "verify_pdf_signatures",
        family: Family::Docs,
        summary: "Validate a PDF's signatures: signer, time, coverage, integrity, trust, later changes",
        description: "Validates every signature and document time stamp of a PDF (PAdES, adbe.pkcs7.detached and \
            sha1, ETSI.RFC3161). For each: the field and page; the signer's certificate; the time the signer claims \
            and the time an RFC 3161 time stamp proves; what the byte range covers (the whole file, a whole \
            revision, how many revisions came after); whether the covered bytes are intact and the signature \
            verifies with the signer's key; whether a path leads from the signer to the trust roots given (every \
            certificate's signature, validity at the time-stamped time or now, CA and key-usage constraints; \
            revocation is not checked); and what later revisions changed, from none through validation data, form \
            filling and annotations to other changes, against a certification signature's permissions. A verdict \
            per signature: valid, unknown_signer, untrusted, modified, invalid or unreadable, with the problems in \
            sentences. A PDF without signatures answers count 0; past 50 signatures the rest are counted, not \
            validated.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: VerifySignaturesInput, ctx: &Context) -> Result<VerifyCall, EngineError> {
        if input.trust_roots.len() > MAX_ROOT_FILES {
            return Err(EngineError::invalid(
                "/trust_roots",
                format!("/trust_roots: at most {MAX_ROOT_FILES} files (a PEM file holds many certificates)"),
            ));
        }
        let mut roots = Vec::new();
        for (i, root) in input.trust_roots.iter().enumerate() {
            let field = format!("/trust_roots/{i}");
            if root.password.is_some() {
                return Err(EngineError::invalid_with(
                    "option_not_applicable",
                    format!("{field}/password"),
                    format!("{field}/password: a certificate file has no password"),
                ));
            }
            let file = root.resolve(ctx, &field, "root.pem").await?;
            roots.extend(read_certificates(&file.bytes, &field)?);
            if roots.len() > MAX_ROOTS {
                return Err(EngineError::invalid(
                    "/trust_roots",
                    format!("/trust_roots: at most {MAX_ROOTS} certificates"),
                ));
            }
        }
        let file = input.file.resolve(ctx, "/file", "document.pdf").await?;
        let limits = ctx.limits;
        blocking(move || {
            let doc = pdf::open(&file.bytes, file.password.as_deref(), &limits).map_err(|e| e.under("/file"))?;
            let page_count = pdf::page_count(&doc);
            Ok(VerifyCall { bytes: file.bytes, doc, page_count, roots })
        })
        .await
    }

    fn quote(call: &VerifyCall) -> Price {
        page_edit_price(call.page_count)
    }

    async fn run(call: VerifyCall, ctx: &Context) -> Result<Reply<VerifySignaturesReport>, EngineError> {
        let limits = ctx.limits;
        blocking(move || {
            let count = verify::signed_fields(&call.doc).len();
            let signatures = verify::verify(&call.bytes, &call.doc, &call.roots, pdf::dates::now(), &limits);
            let not_checked = count - signatures.len();
            Ok(Reply::Json(VerifySignaturesReport {
                count,
                not_checked,
                all_valid: !signatures.is_empty() && not_checked == 0 && signatures.iter().all(|s| s.status == "valid"),
                trust_roots: call.roots.len(),
                signatures,
            }))
        })
        .await
    }
}

/// The certificates of a PEM file (one or more), or of one DER certificate.
fn read_certificates(bytes: &[u8], field: &str) -> Result<Vec<Certificate>, EngineError> {
    use der::Decode as _;
    let bad = |detail: String| {
        EngineError::invalid_with(
            "invalid_certificate",
            field,
            format!("{field}: not an X.509 certificate in PEM or DER: {detail}"),
        )
    };
    if bytes.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
        let certs = Certificate::load_pem_chain(bytes).map_err(|e| bad(e.to_string()))?;
        if certs.is_empty() {
            return Err(bad("no certificate in the file".to_string()));
        }
        return Ok(certs);
    }
    Certificate::from_der(bytes).map(|c| vec![c]).map_err(|e| bad(e.to_string()))
}
