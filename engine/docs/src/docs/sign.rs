//! `POST /v1/pdf/sign`: sign a PDF, PAdES baseline B-B, or B-T with an RFC 3161 time
//! stamp when a time-stamp authority is named. The signature is an incremental update:
//! the signed bytes are the file as it came, so earlier signatures stay valid. The key and
//! its certificates come from a PKCS#12 file. The signing itself is [`crate::pdf::sign`]'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::{FileInput, fetch_error};
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::sign::cms::{self, SignedParts};
use crate::pdf::sign::identity::Identity;
use crate::pdf::sign::{self, Placement, chain, timestamp, verify::rfc3339};
use crate::pdf::{self};
use crate::price::Price;

/// Longest reason, location or contact text.
const MAX_TEXT: usize = 500;
/// Bytes reserved for a time-stamp token (the authority's certificates included).
const TOKEN_ROOM: usize = 16 * 1024;

/// Request of `/v1/pdf/sign`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignInput {
    /// The PDF to sign. An encrypted PDF is refused: unlock it first.
    pub file: FileInput,
    /// The signer's key and certificate chain: a PKCS#12 file (.p12, .pfx) with its password in `password`
    /// beside its data. RSA (2048 bits or more) and ECDSA P-256 and P-384 keys.
    pub certificate: FileInput,
    /// The signature field: an empty signature field of the document to sign (its full name), or the name of a
    /// new field. Default: a new field `Signature1` (or the next free number).
    #[serde(default)]
    #[schemars(
        length(min = 1, max = 200),
        regex(
            pattern = r"^[^\u0000-\u001F\u007F-\u009F]*[^\s\u0000-\u001F\u007F-\u009F][^\u0000-\u001F\u007F-\u009F]*$"
        )
    )]
    pub field: Option<String>,
    /// The 1-based page of a new field. Default 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Makes a new signature visible in this box: `[left, top, right, bottom]` in points from the visible page's top
    /// left corner. It shows who signed, when, and the reason and location. Without it the signature is invisible.
    #[serde(default)]
    pub box_pt: Option<[f64; 4]>,
    /// Why the document is signed (`/Reason`), e.g. "I approve this contract".
    #[serde(default)]
    #[schemars(length(max = 500))]
    pub reason: Option<String>,
    /// Where it was signed (`/Location`).
    #[serde(default)]
    #[schemars(length(max = 500))]
    pub location: Option<String>,
    /// How to reach the signer (`/ContactInfo`).
    #[serde(default)]
    #[schemars(length(max = 500))]
    pub contact_info: Option<String>,
    /// An RFC 3161 time-stamp authority (http or https URL): the signature is time-stamped there, making it PAdES
    /// B-T. Without it, B-B.
    #[serde(default)]
    #[schemars(length(max = 2000), regex(pattern = r"^[Hh][Tt][Tt][Pp][Ss]?://\S+$"))]
    pub timestamp_url: Option<String>,
    /// How to deliver the PDF.
    #[serde(default)]
    pub output: OutputMode,
}

/// What the signing did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SignReport {
    /// The signature field's full name.
    pub field: String,
    /// The 1-based page of its widget.
    pub page: Option<u32>,
    /// Whether it shows on the page.
    pub visible: bool,
    /// PAdES baseline level: `B-B`, or `B-T` with a time stamp.
    pub level: &'static str,
    /// The signer's common name.
    pub signer: String,
    /// The signer's subject (RFC 4514).
    pub subject: String,
    /// The signature algorithm.
    pub algorithm: String,
    /// The time written in the signature (`/M`).
    pub signed_at: String,
    /// The time the authority stamped, for B-T.
    pub time_stamp: Option<String>,
    /// The signed file's size: the signature covers every byte of it.
    pub bytes: usize,
    /// Whether the file was rewritten before signing: its cross-reference data was damaged (or listed objects at
    /// the wrong places) and it had no signature to keep. Otherwise the original bytes come first, unchanged.
    pub rewritten: bool,
}

/// A checked call.
pub struct SignCall {
    bytes: Vec<u8>,
    filename: String,
    page_count: u32,
    identity: Identity,
    placement: Placement,
    timestamp_url: Option<String>,
    output: OutputMode,
}

impl std::fmt::Debug for SignCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignCall").field("filename", &self.filename).field("pages", &self.page_count).finish()
    }
}

/// The route.
pub struct SignRoute;

impl Route for SignRoute {
    type Input = SignInput;
    type Prepared = SignCall;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/sign",
        operation: "sign_pdf",
        family: Family::Docs,
        summary: "Sign a PDF (PAdES B-B, or B-T with a time stamp) with a PKCS#12 certificate",
        description: "Signs a PDF with the key and certificate chain of a PKCS#12 file (.p12, .pfx; its password beside \
            its data): a CMS detached signature (ETSI.CAdES.detached, SHA-256, the signing-certificate-v2 attribute) \
            that readers such as Acrobat and validators such as pyHanko accept as PAdES baseline B-B. With \
            timestamp_url the signature is time-stamped by that RFC 3161 authority (PAdES B-T). The signature is \
            appended as an incremental update, so earlier signatures stay valid. It fills an empty signature field \
            named in `field`, or adds a new field on `page`: invisible, or visible in `box_pt` showing who signed, \
            when, the reason and location. The report (Paperchain-Report header for output=file, `report` field \
            for base64 and url) names the field, signer, level and times.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: true,
        holds_secrets: true,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: SignInput, ctx: &Context) -> Result<SignCall, EngineError> {
        for (value, field) in
            [(&input.reason, "/reason"), (&input.location, "/location"), (&input.contact_info, "/contact_info")]
        {
            if value.as_ref().is_some_and(|v| v.chars().count() > MAX_TEXT) {
                return Err(EngineError::invalid(field, format!("{field}: at most {MAX_TEXT} characters")));
            }
        }
        if let Some(name) = &input.field
            && (name.trim().is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control))
        {
            return Err(EngineError::invalid(
                "/field",
                "/field: a field name of 1 to 200 characters, no control characters",
            ));
        }
        if input.page == Some(0) {
            return Err(EngineError::invalid("/page", "/page: pages are numbered from 1"));
        }
        if let Some(url) = &input.timestamp_url {
            let url = url.to_ascii_lowercase();
            let scheme = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
            if !scheme.is_some_and(|rest| !rest.is_empty() && !rest.contains(char::is_whitespace))
                || url.chars().count() > 2000
            {
                return Err(EngineError::invalid(
                    "/timestamp_url",
                    "/timestamp_url: the time-stamp authority's http or https URL",
                ));
            }
        }
        let p12 = input.certificate.resolve(ctx, "/certificate", "certificate.p12").await?;
        let password = p12.password.clone().unwrap_or_default();
        let identity = blocking(move || Identity::from_pkcs12(&p12.bytes, &password, "/certificate")).await?;
        let file = input.file.resolve(ctx, "/file", "document.pdf").await?;
        if file.password.is_some() {
            return Err(encrypted());
        }
        let limits = ctx.limits;
        let (bytes, filename, page_count) = blocking(move || {
            let doc = pdf::open(&file.bytes, None, &limits).map_err(|e| match e.code.as_ref() {
                "password_required" | "wrong_password" => encrypted(),
                _ => e.under("/file"),
            })?;
            if doc.trailer.has(b"Encrypt") || doc.encryption_state.is_some() {
                return Err(encrypted());
            }
            Ok((file.bytes, file.filename, pdf::page_count(&doc)))
        })
        .await?;
        let signer = chain::common_name(identity.certificate());
        let reserve = identity.chain_der().iter().map(Vec::len).sum::<usize>()
            + 4096
            + if input.timestamp_url.is_some() { TOKEN_ROOM } else { 0 };
        let placement = Placement {
            field: input.field.map(|f| f.trim().to_string()),
            page: input.page.unwrap_or(1),
            box_pt: input.box_pt,
            reason: input.reason,
            location: input.location,
            contact: input.contact_info,
            signer,
            at: pdf::dates::now(),
            reserve,
        };
        Ok(SignCall {
            bytes,
            filename,
            page_count,
            identity,
            placement,
            timestamp_url: input.timestamp_url,
            output: input.output,
        })
    }

    fn quote(call: &SignCall) -> Price {
        page_edit_price(call.page_count)
    }

    async fn run(call: SignCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let SignCall { bytes, filename, identity, placement, timestamp_url, output, .. } = call;
        let limits = ctx.limits;
        let at = placement.at;
        // The field, the reserved room, and the signature over the signed attributes.
        let (prepared, identity, signed, signature, rewritten) = blocking(move || {
            let (prepared, rewritten) = append_field(bytes, &placement, &limits)?;
            let digest = prepared.digest(identity.digest());
            let signed = cms::pades_attributes(&digest, identity.certificate())
                .map_err(|e| EngineError::internal(format!("encoding the signed attributes: {e}")))?;
            let der = der::Encode::to_der(&signed).map_err(|e| EngineError::internal(e.to_string()))?;
            let signature = identity.sign(&der)?;
            Ok((prepared, identity, signed, signature, rewritten))
        })
        .await?;

        // B-T: the authority stamps the signature value.
        let mut stamped_at = None;
        let unsigned = match &timestamp_url {
            Some(url) => {
                let imprint = cms::Digest::Sha256.of(&[&signature]);
                let nonce: u64 = rand_nonce();
                let request = timestamp::request(cms::Digest::Sha256, &imprint, nonce);
                let answer = ctx
                    .fetcher
                    .post(url, "application/timestamp-query", request)
                    .await
                    .map_err(|e| fetch_error(e, "/timestamp_url"))?;
                // 422 like a URL that cannot be fetched: the authority named is the caller's choice, and a
                // failure here must not send the call (and its key) to another server.
                let token = timestamp::token_from_response(&answer.bytes, &imprint, nonce).map_err(|e| {
                    EngineError::invalid_with("timestamp_failed", "/timestamp_url", format!("/timestamp_url: {e}"))
                })?;
                stamped_at = timestamp::token_info(&token).ok().map(|t| rfc3339(t.time));
                let any = timestamp::token_any(&token).map_err(|e| EngineError::internal(e.to_string()))?;
                let mut attrs = der::asn1::SetOfVec::new();
                attrs
                    .insert(cms::attribute(cms::SIGNATURE_TIME_STAMP, any))
                    .map_err(|e| EngineError::internal(e.to_string()))?;
                Some(attrs)
            }
            None => None,
        };

        blocking(move || {
            let algorithm = identity.algorithm();
            let cms = cms::signed_data(SignedParts {
                chain: &identity.chain,
                digest: identity.digest(),
                algorithm,
                signed,
                signature,
                unsigned,
            })
            .map_err(|e| EngineError::internal(format!("encoding the signature: {e}")))?;
            if cms.len() > prepared.room() {
                return Err(EngineError::invalid_with(
                    "timestamp_failed",
                    "/timestamp_url",
                    "/timestamp_url: the time-stamp token is larger than the room reserved for it (16 KiB)",
                ));
            }
            let report = SignReport {
                field: prepared.field.clone(),
                page: prepared.page,
                visible: prepared.visible,
                level: if stamped_at.is_some() { "B-T" } else { "B-B" },
                signer: chain::common_name(identity.certificate()),
                subject: chain::subject(identity.certificate()),
                algorithm: algorithm.name(),
                signed_at: rfc3339(at),
                time_stamp: stamped_at,
                bytes: 0,
                rewritten,
            };
            let mut signed_file = prepared.finish(&cms)?;
            let report = SignReport { bytes: signed_file.len(), ..report };
            if signed_file.len() > pdf::MAX_OUTPUT_BYTES {
                return Err(pdf::output_too_large());
            }
            signed_file.shrink_to_fit();
            let name = derived_name(&filename, "signed", "pdf");
            let report = serde_json::to_value(&report).map_err(|e| EngineError::internal(e.to_string()))?;
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, signed_file), output).with_report(report)))
        })
        .await
    }
}

/// The file with the signature field appended and room for the signature, and whether
/// it had to be rewritten first: a file whose cross-reference data was repaired on reading,
/// or whose update some readers would not see (an object listed at another's place), is
/// rewritten as one clean revision when it holds no signature an update must keep.
fn append_field(bytes: Vec<u8>, placement: &Placement, limits: &Limits) -> Result<(sign::Prepared, bool), EngineError> {
    let doc = pdf::open(&bytes, None, limits).map_err(|e| e.under("/file"))?;
    let signed_before = sign::fields::signature_fields(&doc).iter().any(|f| f.signed);
    if doc.xref_recovery.is_none() {
        let prepared = sign::prepare(&bytes, &doc, placement)?;
        if finds_field(prepared.bytes(), &prepared.field, limits) {
            return Ok((prepared, false));
        }
    }
    if signed_before {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "/file",
            "/file: the PDF's cross-reference data is damaged, so a signature appended to it would not be found by \
             every reader, and rewriting it would break the signatures it holds",
        ));
    }
    let mut doc = doc;
    // Generation numbers start again at 0: a lone later generation reads as a broken history.
    doc.renumber_objects();
    let clean = pdf::save(&mut doc)?;
    let doc = pdf::open(&clean, None, limits).map_err(|e| e.under("/file"))?;
    let prepared = sign::prepare(&clean, &doc, placement)?;
    if !finds_field(prepared.bytes(), &prepared.field, limits) {
        return Err(EngineError::internal("the signature field of the rewritten PDF cannot be read back"));
    }
    Ok((prepared, true))
}

/// Whether the signature field `name` is read back from `bytes` with a value.
fn finds_field(bytes: &[u8], name: &str, limits: &Limits) -> bool {
    pdf::open(bytes, None, limits)
        .is_ok_and(|doc| sign::fields::signature_fields(&doc).iter().any(|f| f.name == name && f.signed))
}

/// The refusal of an encrypted PDF.
fn encrypted() -> EngineError {
    EngineError::invalid_with(
        "encrypted_pdf",
        "/file",
        "/file: the PDF is encrypted; a signature cannot be appended to it here. Remove the encryption first \
         (/v1/pdf/unlock) and sign the unlocked file",
    )
}

/// A random nonce for the time-stamp request.
fn rand_nonce() -> u64 {
    let mut bytes = [0u8; 8];
    aws_lc_rs::rand::fill(&mut bytes).expect("the system's random source works");
    u64::from_be_bytes(bytes) >> 1
}
