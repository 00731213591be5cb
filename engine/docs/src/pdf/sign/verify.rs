//! Validating a PDF's signatures: for each, what it covers, whether those bytes are
//! intact and the signature mathematically valid, who signed (and whether a path leads
//! from them to a trust root given), when (the signer's claim and an RFC 3161 time
//! stamp), and what later revisions changed.

use std::collections::{BTreeMap, HashMap, HashSet};

use ::cms::signed_data::{SignedData, SignerInfo};
use der::Encode as _;
use der::asn1::OctetString;
use lopdf::xref::XrefEntry;
use lopdf::{Dictionary, Document, Object, ObjectId};
use schemars::JsonSchema;
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use x509_cert::Certificate;

use crate::context::Limits;
use crate::pdf::sign::chain::{self, PathCheck};
use crate::pdf::sign::cms::{self, Digest, SignatureAlgorithm};
use crate::pdf::sign::fields::{self, SignatureField};
use crate::pdf::sign::timestamp;
use crate::pdf::{self, dates};

/// A time as RFC 3339 (UTC, seconds).
pub fn rfc3339(at: OffsetDateTime) -> String {
    at.replace_nanosecond(0).unwrap_or(at).format(&Rfc3339).unwrap_or_default()
}

/// One signature's validation.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SignatureReport {
    /// The signature field's full name.
    pub field: String,
    /// `signature` (approval or certification) or `document_time_stamp` (ETSI.RFC3161).
    pub kind: &'static str,
    /// The verdict: `valid` (intact, valid, trusted, nothing but signatures, form filling or annotations since),
    /// `unknown_signer` (as valid, but no trust roots were given), `untrusted` (no path to a trust root given,
    /// or a certificate not valid then), `modified` (later revisions changed the document beyond that),
    /// `invalid` (the signed bytes changed or the signature does not verify), `unreadable`.
    pub status: &'static str,
    /// The verdict in a sentence.
    pub summary: String,
    /// 1-based page of the widget, if a page shows it.
    pub page: Option<u32>,
    /// Whether the widget has an area on the page.
    pub visible: bool,
    /// `/SubFilter`: `ETSI.CAdES.detached` (PAdES), `adbe.pkcs7.detached`, `adbe.pkcs7.sha1`, `ETSI.RFC3161`.
    pub sub_filter: Option<String>,
    /// The signer's certificate.
    pub signer: Option<Signer>,
    /// When the signer says it signed (`/M`, or the signing-time attribute): a claim, not proof.
    pub signing_time: Option<String>,
    /// The RFC 3161 time stamp of the signature, if any: proof of when.
    pub time_stamp: Option<TimeStampReport>,
    /// What the signature covers.
    pub coverage: Coverage,
    /// Whether the covered bytes are those signed (the digest matches).
    pub intact: bool,
    /// Whether the signature over them verifies with the signer's key.
    pub valid: bool,
    /// Whether a path leads from the signer to a trust root given, every certificate valid at the validation
    /// time; null when no roots were given.
    pub trusted: Option<bool>,
    /// The certificate path, signer first, as far as it was built.
    pub path: Vec<String>,
    /// The time the certificates were checked at: the time stamp's when it is valid, else now.
    pub validated_at: String,
    /// The digest algorithm.
    pub digest_algorithm: Option<String>,
    /// The signature algorithm.
    pub signature_algorithm: Option<String>,
    /// Changes made by revisions after this signature.
    pub modifications: Modifications,
    /// For a certification signature, the changes it allows (`/DocMDP` P: 1 none, 2 form filling and
    /// signing, 3 also annotations).
    pub certification: Option<u8>,
    /// Everything found wrong, in sentences.
    pub problems: Vec<String>,
}

/// A signer's certificate.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Signer {
    /// The subject's common name.
    pub common_name: String,
    /// The whole subject (RFC 4514).
    pub subject: String,
    /// The issuer (RFC 4514).
    pub issuer: String,
    /// The serial number, hex.
    pub serial: String,
    /// Valid from (RFC 3339).
    pub valid_from: String,
    /// Valid until (RFC 3339).
    pub valid_until: String,
}

/// A signature time stamp.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TimeStampReport {
    /// When the authority saw the signature (RFC 3339).
    pub time: Option<String>,
    /// The authority's certificate subject.
    pub authority: Option<String>,
    /// Whether the token stamps this signature and its own signature verifies.
    pub valid: bool,
    /// Whether the authority's path leads to a trust root given; null without roots.
    pub trusted: Option<bool>,
    /// What is wrong, if anything.
    pub problem: Option<String>,
}

/// What a signature covers.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Coverage {
    /// `/ByteRange`.
    pub byte_range: Vec<i64>,
    /// The file's size in bytes.
    pub file_size: usize,
    /// Whether the signature covers the whole file but its own value.
    pub whole_file: bool,
    /// Whether the covered bytes end with a complete revision (`%%EOF`).
    pub whole_revision: bool,
    /// The revision signed (1 is the original file).
    pub revision: usize,
    /// Revisions appended after it.
    pub revisions_after: usize,
}

/// What later revisions changed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Modifications {
    /// The highest kind of change: `none`, `lta_updates` (validation data, document time stamps),
    /// `form_filling` (field values, signatures), `annotations`, `other` (content, pages, anything else).
    pub level: &'static str,
    /// The changes, one sentence each (at most 50).
    pub changes: Vec<String>,
}

/// Kinds of change, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    None,
    LtaUpdates,
    FormFilling,
    Annotations,
    Other,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::LtaUpdates => "lta_updates",
            Level::FormFilling => "form_filling",
            Level::Annotations => "annotations",
            Level::Other => "other",
        }
    }
}

/// Most signatures validated in one call: each hashes the file and reads its signed
/// revision, so a file of thousands of signature fields cannot make a call do that
/// thousands of times.
pub const MAX_SIGNATURES: usize = 50;

/// Most certificates of one signature looked at when a path is built.
const MAX_CERTIFICATES: usize = 100;

/// The signed fields of `doc`, in the form's order.
pub fn signed_fields(doc: &Document) -> Vec<SignatureField> {
    fields::signature_fields(doc).into_iter().filter(|f| f.signed).collect()
}

/// Validates the first [`MAX_SIGNATURES`] signatures of the file `bytes` (which `doc` was
/// read from) against `roots` at `now`.
pub fn verify(
    bytes: &[u8],
    doc: &Document,
    roots: &[Certificate],
    now: OffsetDateTime,
    limits: &Limits,
) -> Vec<SignatureReport> {
    let pages: HashMap<ObjectId, u32> = doc.get_pages().into_iter().map(|(n, id)| (id, n)).collect();
    let eofs = eof_ends(bytes);
    signed_fields(doc)
        .into_iter()
        .take(MAX_SIGNATURES)
        .map(|field| {
            let mut report = one(bytes, doc, &field, roots, now, &eofs, limits);
            report.page = field.page.and_then(|p| pages.get(&p).copied());
            report
        })
        .collect()
}

/// The offsets just past each `%%EOF` marker (and the end of its line).
fn eof_ends(bytes: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut from = 0;
    while let Some(i) = bytes[from..].windows(5).position(|w| w == b"%%EOF") {
        let mut end = from + i + 5;
        while end < bytes.len() && matches!(bytes[end], b'\r' | b'\n') {
            end += 1;
        }
        ends.push(end);
        from = from + i + 5;
    }
    ends
}

/// The signature dictionary of a field.
fn signature_dict<'a>(doc: &'a Document, field: &SignatureField) -> Option<&'a Dictionary> {
    let dict = doc.get_dictionary(field.id).ok()?;
    doc.dereference(dict.get(b"V").ok()?).ok()?.1.as_dict().ok()
}

fn name_of(dict: &Dictionary, key: &[u8]) -> Option<String> {
    dict.get(key).ok().and_then(|o| o.as_name().ok()).map(|n| String::from_utf8_lossy(n).into_owned())
}

/// Validates one signature.
fn one(
    bytes: &[u8],
    doc: &Document,
    field: &SignatureField,
    roots: &[Certificate],
    now: OffsetDateTime,
    eofs: &[usize],
    limits: &Limits,
) -> SignatureReport {
    let visible = field.rect.is_some_and(|r| r.width() > 0.0 && r.height() > 0.0);
    let mut report = SignatureReport {
        field: field.name.clone(),
        kind: "signature",
        status: "unreadable",
        summary: String::new(),
        page: None,
        visible,
        sub_filter: None,
        signer: None,
        signing_time: None,
        time_stamp: None,
        coverage: Coverage {
            byte_range: Vec::new(),
            file_size: bytes.len(),
            whole_file: false,
            whole_revision: false,
            revision: 0,
            revisions_after: 0,
        },
        intact: false,
        valid: false,
        trusted: None,
        path: Vec::new(),
        validated_at: rfc3339(now),
        digest_algorithm: None,
        signature_algorithm: None,
        modifications: Modifications { level: "none", changes: Vec::new() },
        certification: None,
        problems: Vec::new(),
    };
    let Some(sig) = signature_dict(doc, field) else {
        report.problems.push("the signature dictionary cannot be read".to_string());
        return finish(report);
    };
    report.sub_filter = name_of(sig, b"SubFilter");
    if name_of(sig, b"Type").as_deref() == Some("DocTimeStamp") || report.sub_filter.as_deref() == Some("ETSI.RFC3161")
    {
        report.kind = "document_time_stamp";
    }
    report.signing_time =
        sig.get(b"M").ok().and_then(|m| pdf::text_string(doc, m)).and_then(|m| dates::parse_pdf_date(&m)).map(rfc3339);
    report.certification = certification(doc, sig);

    // The byte range: two runs around the value, inside the file.
    let range: Vec<i64> = match sig.get(b"ByteRange").and_then(Object::as_array) {
        Ok(items) => items.iter().filter_map(|o| o.as_i64().ok()).collect(),
        Err(_) => Vec::new(),
    };
    report.coverage.byte_range = range.clone();
    let [a, b, c, d] = range[..] else {
        report.problems.push("the byte range is not four numbers".to_string());
        return finish(report);
    };
    let len = bytes.len() as i64;
    if a != 0 || b < 0 || c < b || d < 0 || c.checked_add(d).is_none_or(|end| end > len) {
        report.problems.push(format!("the byte range [{a} {b} {c} {d}] does not fit in the file of {len} bytes"));
        return finish(report);
    }
    let (b, c, d) = (b as usize, c as usize, d as usize);
    let end = c + d;
    report.coverage.whole_file = end == bytes.len();
    report.coverage.whole_revision = eofs.contains(&end) || bytes[..end].trim_ascii_end().ends_with(b"%%EOF");
    report.coverage.revision = eofs.iter().filter(|e| **e <= end).count().max(1);
    report.coverage.revisions_after = eofs.iter().filter(|e| **e > end).count();
    // The gap holds exactly the hex string of /Contents.
    let gap = &bytes[b..c];
    let value = match (gap.first(), gap.last()) {
        (Some(b'<'), Some(b'>')) => hex_value(&gap[1..gap.len() - 1]),
        _ => None,
    };
    let Some(value) = value else {
        report.problems.push("the bytes the signature leaves out are not its /Contents value alone".to_string());
        return finish(report);
    };
    let signed: [&[u8]; 2] = [&bytes[..b], &bytes[c..end]];

    let data = match cms::read_signed_data(strip_padding(&value)) {
        Ok(data) => data,
        Err(e) => {
            report.problems.push(format!("the signature value is not readable CMS: {e}"));
            return finish(report);
        }
    };
    let mut certs = cms::certificates(&data);
    certs.truncate(MAX_CERTIFICATES);
    let Some(info) = data.signer_infos.0.iter().next() else {
        report.problems.push("the CMS has no signer".to_string());
        return finish(report);
    };
    let Some(signer_cert) = cms::signer_certificate(info, &certs) else {
        report.problems.push("the CMS does not carry the signer's certificate".to_string());
        return finish(report);
    };
    let (from, until) = chain::validity(signer_cert);
    report.signer = Some(Signer {
        common_name: chain::common_name(signer_cert),
        subject: chain::subject(signer_cert),
        issuer: signer_cert.tbs_certificate().issuer().to_string(),
        serial: hex::encode(signer_cert.tbs_certificate().serial_number().as_bytes()),
        valid_from: rfc3339(from),
        valid_until: rfc3339(until),
    });

    if report.kind == "document_time_stamp" {
        check_document_time_stamp(&mut report, &value, &signed, info, signer_cert);
    } else {
        check_signature(&mut report, &signed, &data, info, signer_cert);
    }

    // The time the certificates are checked at, and the time stamp.
    let mut at = now;
    if report.kind == "signature" {
        if let Some(attrs) = &info.unsigned_attrs
            && let Some(token) = cms::attribute_value(attrs, cms::SIGNATURE_TIME_STAMP)
        {
            let stamp = check_time_stamp(token, info.signature.as_bytes(), roots, now);
            if stamp.valid
                && let Some(time) = stamp.time.as_deref().and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            {
                at = time;
            }
            if !stamp.valid {
                report
                    .problems
                    .push(format!("the time stamp is not valid: {}", stamp.problem.clone().unwrap_or_default()));
            }
            report.time_stamp = Some(stamp);
        }
    } else if let Some(time) = report.signing_time.as_deref().and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok()) {
        at = time;
    }
    report.validated_at = rfc3339(at);
    if roots.is_empty() {
        report.path = vec![chain::subject(signer_cert)];
    } else {
        let PathCheck { path, trusted, problem } = chain::check(signer_cert, &certs, roots, at);
        report.path = path;
        report.trusted = Some(trusted);
        if let Some(problem) = problem {
            report.problems.push(problem);
        }
    }

    if report.intact && report.coverage.revisions_after > 0 && !report.coverage.whole_file {
        report.modifications = modifications(bytes, end, doc, limits);
    }
    finish(report)
}

/// `value` without the zeros a reserved `/Contents` is padded with after the DER: the
/// outer header's definite length says where it ends (an indefinite BER length is kept whole).
fn strip_padding(value: &[u8]) -> &[u8] {
    let end = (|| {
        let first = *value.get(1)?;
        let (header, length) = if first < 0x80 {
            (2, first as usize)
        } else {
            let n = (first & 0x7F) as usize;
            if n == 0 || n > 4 {
                return None;
            }
            let length = value.get(2..2 + n)?.iter().fold(0usize, |acc, b| acc << 8 | *b as usize);
            (2 + n, length)
        };
        let end = header.checked_add(length)?;
        (end <= value.len()).then_some(end)
    })();
    &value[..end.unwrap_or(value.len())]
}

/// Hex digits (whitespace allowed) as bytes; None if anything else is there.
fn hex_value(text: &[u8]) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
    if digits.len() % 2 == 1 {
        let mut padded = digits;
        padded.push(b'0');
        return hex::decode(padded).ok();
    }
    hex::decode(digits).ok()
}

/// The `/DocMDP` permissions of a certification signature.
fn certification(doc: &Document, sig: &Dictionary) -> Option<u8> {
    let references = doc.dereference(sig.get(b"Reference").ok()?).ok()?.1.as_array().ok()?;
    references.iter().find_map(|r| {
        let r = doc.dereference(r).ok()?.1.as_dict().ok()?;
        if name_of(r, b"TransformMethod").as_deref() != Some("DocMDP") {
            return None;
        }
        let params =
            r.get(b"TransformParams").ok().and_then(|p| doc.dereference(p).ok()).and_then(|(_, p)| p.as_dict().ok());
        Some(params.and_then(|p| p.get(b"P").ok()).and_then(|p| p.as_i64().ok()).unwrap_or(2).clamp(1, 3) as u8)
    })
}

/// Integrity and validity of an approval or certification signature.
fn check_signature(
    report: &mut SignatureReport,
    signed: &[&[u8]; 2],
    data: &SignedData,
    info: &SignerInfo,
    signer: &Certificate,
) {
    let Some(digest) = Digest::from_oid(&info.digest_alg.oid) else {
        report.problems.push(format!("the digest algorithm {} is not supported", info.digest_alg.oid));
        return;
    };
    report.digest_algorithm = Some(digest.name().to_string());
    let Some(algorithm) = SignatureAlgorithm::from_identifier(&info.signature_algorithm, digest) else {
        report.problems.push(format!("the signature algorithm {} is not supported", info.signature_algorithm.oid));
        return;
    };
    report.signature_algorithm = Some(algorithm.name());
    let document_digest = digest.of(signed.as_slice());
    // adbe.pkcs7.sha1 signs the SHA-1 of the document, carried inside the CMS.
    let content = data
        .encap_content_info
        .econtent
        .as_ref()
        .and_then(|c| c.decode_as::<OctetString>().ok())
        .map(|o| o.as_bytes().to_vec());
    let content_digest = match &content {
        Some(inner) => {
            report.intact = *inner == Digest::Sha1.of(signed.as_slice());
            digest.of(&[inner])
        }
        None => document_digest,
    };
    let message: Vec<u8> = match &info.signed_attrs {
        Some(attrs) => {
            let claimed =
                cms::attribute_value(attrs, cms::MESSAGE_DIGEST).and_then(|a| a.decode_as::<OctetString>().ok());
            let matches = claimed.as_ref().is_some_and(|c| c.as_bytes() == content_digest.as_slice());
            report.intact = if content.is_some() { report.intact && matches } else { matches };
            if report.signing_time.is_none() {
                report.signing_time = cms::attribute_value(attrs, cms::SIGNING_TIME)
                    .and_then(|a| a.decode_as::<x509_cert::time::Time>().ok())
                    .and_then(|t| OffsetDateTime::from_unix_timestamp(t.to_unix_duration().as_secs() as i64).ok())
                    .map(rfc3339);
            }
            if let Some(ess) = cms::attribute_value(attrs, cms::SIGNING_CERTIFICATE_V2) {
                let named = ess.decode_as::<cms::SigningCertificateV2>().ok().and_then(|e| e.certs.into_iter().next());
                let ok = named.is_some_and(|id| {
                    let algorithm =
                        id.hash_algorithm.as_ref().map_or(Some(Digest::Sha256), |a| Digest::from_oid(&a.oid));
                    algorithm.is_some_and(|a| a.of(&[&cms::der_of(signer)]) == id.cert_hash.as_bytes())
                });
                if !ok {
                    report.problems.push(
                        "the signing-certificate attribute names another certificate than the signer's".to_string(),
                    );
                    report.intact = false;
                }
            }
            match attrs.to_der() {
                Ok(der) => der,
                Err(_) => return,
            }
        }
        None => {
            report.intact = content.is_none() || report.intact;
            signed.concat()
        }
    };
    if !report.intact {
        report.problems.push("the signed bytes have changed since they were signed".to_string());
    }
    report.valid =
        algorithm.verify(signer.tbs_certificate().subject_public_key_info(), &message, info.signature.as_bytes());
    if !report.valid {
        report.problems.push("the signature does not verify with the signer's public key".to_string());
    }
}

/// Integrity and validity of a document time stamp (the token stamps the covered bytes).
fn check_document_time_stamp(
    report: &mut SignatureReport,
    token: &[u8],
    signed: &[&[u8]; 2],
    info: &SignerInfo,
    signer: &Certificate,
) {
    let token = strip_padding(token);
    match timestamp::token_info(token) {
        Ok(tst) => {
            let digest = Digest::from_oid(&tst.imprint.hash_algorithm.oid);
            report.digest_algorithm = digest.map(|d| d.name().to_string());
            report.intact = digest.is_some_and(|d| d.of(signed.as_slice()) == tst.imprint.hashed_message.as_bytes());
            report.signing_time = Some(rfc3339(tst.time));
            if !report.intact {
                report.problems.push("the time-stamped bytes have changed since they were stamped".to_string());
            }
        }
        Err(e) => report.problems.push(e),
    }
    match token_signature(token, info, signer) {
        Ok(algorithm) => {
            report.signature_algorithm = Some(algorithm);
            report.valid = true;
        }
        Err(e) => report.problems.push(e),
    }
}

/// Checks a token's own signature (over its signed attributes, whose message digest is
/// the TSTInfo's); the algorithm's name.
fn token_signature(token: &[u8], info: &SignerInfo, signer: &Certificate) -> Result<String, String> {
    let content = timestamp::tst_info_bytes(token).ok_or("the token's TSTInfo is missing")?;
    let digest = Digest::from_oid(&info.digest_alg.oid).ok_or("the token's digest algorithm is not supported")?;
    let algorithm = SignatureAlgorithm::from_identifier(&info.signature_algorithm, digest)
        .ok_or("the token's signature algorithm is not supported")?;
    let attrs = info.signed_attrs.as_ref().ok_or("the token has no signed attributes")?;
    let claimed = cms::attribute_value(attrs, cms::MESSAGE_DIGEST)
        .and_then(|a| a.decode_as::<OctetString>().ok())
        .ok_or("the token has no message digest")?;
    if claimed.as_bytes() != digest.of(&[&content]).as_slice() {
        return Err("the token's TSTInfo does not match its signature".to_string());
    }
    let der = attrs.to_der().map_err(|e| e.to_string())?;
    if !algorithm.verify(signer.tbs_certificate().subject_public_key_info(), &der, info.signature.as_bytes()) {
        return Err("the token's signature does not verify with the authority's key".to_string());
    }
    Ok(algorithm.name())
}

/// Checks a signature time stamp token over `signature` (the stamped signature value).
fn check_time_stamp(token: &der::Any, signature: &[u8], roots: &[Certificate], now: OffsetDateTime) -> TimeStampReport {
    let mut report = TimeStampReport { time: None, authority: None, valid: false, trusted: None, problem: None };
    let result = (|| -> Result<(), String> {
        let token = token.to_der().map_err(|e| e.to_string())?;
        let tst = timestamp::token_info(&token)?;
        report.time = Some(rfc3339(tst.time));
        let data = cms::read_signed_data(&token)?;
        let mut certs = cms::certificates(&data);
        certs.truncate(MAX_CERTIFICATES);
        let info = data.signer_infos.0.iter().next().ok_or("the token has no signer")?;
        let authority =
            cms::signer_certificate(info, &certs).ok_or("the token does not carry the authority's certificate")?;
        report.authority = Some(chain::subject(authority));
        let digest =
            Digest::from_oid(&tst.imprint.hash_algorithm.oid).ok_or("the token's hash algorithm is not supported")?;
        if digest.of(&[signature]) != tst.imprint.hashed_message.as_bytes() {
            return Err("the token stamps another signature value".to_string());
        }
        token_signature(&token, info, authority)?;
        report.valid = true;
        if !roots.is_empty() {
            let check = chain::check(authority, &certs, roots, tst.time.min(now));
            report.trusted = Some(check.trusted);
            if let Some(problem) = check.problem {
                return Err(format!("the time-stamp authority: {problem}"));
            }
        }
        Ok(())
    })();
    if let Err(problem) = result {
        report.problem = Some(problem);
    }
    report
}

/// The verdict from the findings.
fn finish(mut report: SignatureReport) -> SignatureReport {
    let modified = report.modifications.level == "other"
        || report.certification.is_some_and(|p| {
            let allowed = match p {
                1 => Level::LtaUpdates,
                2 => Level::FormFilling,
                _ => Level::Annotations,
            };
            level_of(report.modifications.level) > allowed
        });
    let who = report.signer.as_ref().map_or("an unknown signer".to_string(), |s| s.common_name.clone());
    let stamp_trusted = report.time_stamp.as_ref().is_none_or(|t| t.valid && t.trusted != Some(false));
    (report.status, report.summary) = if report.signer.is_none() && !report.intact {
        ("unreadable", format!("The signature in {} cannot be read: {}.", report.field, report.problems.join("; ")))
    } else if !report.intact || !report.valid {
        ("invalid", format!("The signature of {who} is not valid: {}.", report.problems.join("; ")))
    } else if modified {
        (
            "modified",
            format!(
                "The signature of {who} is intact, but the document was changed after signing beyond what it allows ({}).",
                report.modifications.level
            ),
        )
    } else if report.trusted == Some(false) || !stamp_trusted {
        (
            "untrusted",
            format!("The signature of {who} is intact and valid, but not trusted: {}.", report.problems.join("; ")),
        )
    } else if report.trusted.is_none() {
        (
            "unknown_signer",
            format!("The signature of {who} is intact and valid; no trust roots were given to check who signed."),
        )
    } else {
        ("valid", format!("The signature of {who} is intact, valid and trusted."))
    };
    report
}

fn level_of(name: &str) -> Level {
    match name {
        "none" => Level::None,
        "lta_updates" => Level::LtaUpdates,
        "form_filling" => Level::FormFilling,
        "annotations" => Level::Annotations,
        _ => Level::Other,
    }
}

/// What the revisions after byte `end` changed, the document as signed read from the
/// bytes up to there.
fn modifications(bytes: &[u8], end: usize, doc: &Document, limits: &Limits) -> Modifications {
    let Ok(before) = pdf::open(&bytes[..end], None, limits) else {
        return Modifications {
            level: "other",
            changes: vec!["the signed revision cannot be read on its own".to_string()],
        };
    };
    let offset_of = |number: u32| match doc.reference_table.get(number) {
        Some(XrefEntry::Normal { offset, .. }) => Some(*offset as usize),
        _ => None,
    };
    let mut changed: Vec<ObjectId> = Vec::new();
    for (number, entry) in &doc.reference_table.entries {
        let later = match entry {
            XrefEntry::Normal { offset, .. } => *offset as usize >= end,
            XrefEntry::Compressed { container, .. } => offset_of(*container).is_some_and(|o| o >= end),
            _ => false,
        };
        if later {
            let generation = match entry {
                XrefEntry::Normal { generation, .. } => *generation,
                _ => 0,
            };
            changed.push((*number, generation));
        }
    }
    let context = Context::of(doc);
    let mut level = Level::None;
    let mut changes = BTreeMap::new();
    for id in changed {
        let Some(after) = doc.objects.get(&id) else { continue };
        let previous = before.objects.get(&id);
        if previous == Some(after) {
            continue;
        }
        let (kind, what) = context.classify(doc, &before, id, previous, after);
        if kind == Level::None {
            continue;
        }
        level = level.max(kind);
        changes.insert(id, what);
    }
    Modifications { level: level.name(), changes: changes.into_values().take(50).collect() }
}

/// What the final document says about objects, for telling changes apart.
struct Context {
    catalog: Option<ObjectId>,
    form: Option<ObjectId>,
    info: Option<ObjectId>,
    metadata: Option<ObjectId>,
    pages: HashMap<ObjectId, u32>,
    signature_parts: HashSet<ObjectId>,
    field_parts: HashSet<ObjectId>,
    annotations: HashSet<ObjectId>,
    widget_appearances: HashSet<ObjectId>,
    annotation_appearances: HashSet<ObjectId>,
    dss: HashSet<ObjectId>,
}

impl Context {
    fn of(doc: &Document) -> Context {
        let catalog = doc.trailer.get(b"Root").and_then(Object::as_reference).ok();
        let catalog_dict = catalog.and_then(|id| doc.get_dictionary(id).ok());
        let form = catalog_dict.and_then(|c| c.get(b"AcroForm").ok()).and_then(|o| o.as_reference().ok());
        let info = doc.trailer.get(b"Info").and_then(Object::as_reference).ok();
        let metadata = catalog_dict.and_then(|c| c.get(b"Metadata").ok()).and_then(|o| o.as_reference().ok());
        let pages: HashMap<ObjectId, u32> = doc.get_pages().into_iter().map(|(n, id)| (id, n)).collect();
        let mut signature_parts = HashSet::new();
        for field in fields::signature_fields(doc) {
            signature_parts.insert(field.id);
            signature_parts.insert(field.widget);
            signature_parts.extend(field.value);
        }
        let mut field_parts = HashSet::new();
        let mut annotations = HashSet::new();
        let mut widget_appearances = HashSet::new();
        let mut annotation_appearances = HashSet::new();
        for page in pages.keys() {
            let annots = doc
                .get_dictionary(*page)
                .ok()
                .and_then(|d| d.get(b"Annots").ok())
                .and_then(|o| doc.dereference(o).ok())
                .and_then(|(_, o)| o.as_array().ok())
                .cloned()
                .unwrap_or_default();
            for annot in annots.iter().filter_map(|o| o.as_reference().ok()) {
                let Ok(dict) = doc.get_dictionary(annot) else { continue };
                let widget = name_of(dict, b"Subtype").as_deref() == Some("Widget");
                let streams = appearance_streams(doc, dict);
                // What an appearance draws with (fonts, images, forms) belongs to it.
                let mut reached = HashSet::new();
                for stream in &streams {
                    collect_references(doc, &Object::Reference(*stream), 6, &mut reached);
                }
                if widget {
                    field_parts.insert(annot);
                    if let Ok(parent) = dict.get(b"Parent").and_then(Object::as_reference) {
                        field_parts.insert(parent);
                    }
                    widget_appearances.extend(reached);
                } else {
                    annotations.insert(annot);
                    annotation_appearances.extend(reached);
                    if let Ok(popup) = dict.get(b"Popup").and_then(Object::as_reference) {
                        annotations.insert(popup);
                    }
                }
            }
        }
        let mut dss = HashSet::new();
        if let Some(Ok(root)) = catalog_dict.map(|c| c.get(b"DSS")) {
            collect_references(doc, root, 4, &mut dss);
        }
        Context {
            catalog,
            form,
            info,
            metadata,
            pages,
            signature_parts,
            field_parts,
            annotations,
            widget_appearances,
            annotation_appearances,
            dss,
        }
    }

    /// The kind of one change and a sentence for it.
    fn classify(
        &self,
        doc: &Document,
        before: &Document,
        id: ObjectId,
        previous: Option<&Object>,
        after: &Object,
    ) -> (Level, String) {
        let n = id.0;
        let type_name =
            after.as_dict().ok().or_else(|| after.as_stream().ok().map(|s| &s.dict)).and_then(|d| name_of(d, b"Type"));
        match type_name.as_deref() {
            Some("XRef" | "ObjStm") => return (Level::None, String::new()),
            Some("DocTimeStamp") => return (Level::LtaUpdates, format!("object {n}: a document time stamp")),
            Some("Sig") => return (Level::FormFilling, format!("object {n}: a signature")),
            _ => {}
        }
        if self.dss.contains(&id) {
            return (Level::LtaUpdates, format!("object {n}: validation data (DSS)"));
        }
        // The document information and its XMP twin: every writer updates them.
        if Some(id) == self.info || Some(id) == self.metadata {
            return (Level::None, String::new());
        }
        if self.signature_parts.contains(&id) {
            return (Level::FormFilling, format!("object {n}: a signature field"));
        }
        if Some(id) == self.catalog {
            let same = same_except(previous, after, &[b"AcroForm", b"DSS", b"Extensions", b"Version", b"Metadata"]);
            return if same {
                (Level::FormFilling, format!("object {n}: the catalog's form or validation data"))
            } else {
                (Level::Other, format!("object {n}: the document catalog changed"))
            };
        }
        if Some(id) == self.form {
            let same = same_except(previous, after, &[b"Fields", b"SigFlags", b"DR", b"DA", b"NeedAppearances"]);
            let removed = removed_references(doc, before, previous, after, b"Fields");
            return if same && !removed {
                (Level::FormFilling, format!("object {n}: the form's field list"))
            } else {
                (Level::Other, format!("object {n}: the form changed"))
            };
        }
        if let Some(page) = self.pages.get(&id) {
            if !same_except(previous, after, &[b"Annots"]) {
                return (Level::Other, format!("object {n}: page {page} changed"));
            }
            return self.annots_change(doc, before, previous, after, *page, n);
        }
        if self.field_parts.contains(&id) {
            return if previous.is_some() && same_except(previous, after, &[b"V", b"AS", b"AP", b"MK"]) {
                (Level::FormFilling, format!("object {n}: a form field's value"))
            } else {
                (Level::Other, format!("object {n}: a form field was added or changed"))
            };
        }
        if self.widget_appearances.contains(&id) {
            return (Level::FormFilling, format!("object {n}: a field's appearance"));
        }
        if self.annotations.contains(&id) || self.annotation_appearances.contains(&id) {
            return (Level::Annotations, format!("object {n}: an annotation"));
        }
        // An annotation array of a page, or the form's field array.
        if let Ok(array) = after.as_array() {
            for (page_id, page) in &self.pages {
                let annots = doc.get_dictionary(*page_id).ok().and_then(|d| d.get(b"Annots").ok());
                if annots.and_then(|o| o.as_reference().ok()) == Some(id) {
                    return self.annots_change(doc, before, previous, after, *page, n);
                }
            }
            let fields = self.form.and_then(|f| doc.get_dictionary(f).ok()).and_then(|f| f.get(b"Fields").ok());
            if fields.and_then(|o| o.as_reference().ok()) == Some(id) {
                let old: HashSet<ObjectId> = previous
                    .and_then(|p| p.as_array().ok())
                    .map(|a| a.iter().filter_map(|o| o.as_reference().ok()).collect())
                    .unwrap_or_default();
                let added_only_signatures = old.iter().all(|o| array.contains(&Object::Reference(*o)))
                    && array
                        .iter()
                        .filter_map(|o| o.as_reference().ok())
                        .filter(|o| !old.contains(o))
                        .all(|o| self.signature_parts.contains(&o));
                return if added_only_signatures {
                    (Level::FormFilling, format!("object {n}: the form's field list"))
                } else {
                    (Level::Other, format!("object {n}: the form's fields changed"))
                };
            }
        }
        match previous {
            None => (Level::Other, format!("object {n}: added")),
            Some(_) => (Level::Other, format!("object {n}: changed")),
        }
    }

    /// A change to a page's annotations: what was added decides.
    fn annots_change(
        &self,
        doc: &Document,
        before: &Document,
        previous: Option<&Object>,
        after: &Object,
        page: u32,
        n: u32,
    ) -> (Level, String) {
        let list = |doc: &Document, object: Option<&Object>| -> Vec<ObjectId> {
            let object = match object {
                Some(Object::Dictionary(d)) => d.get(b"Annots").ok(),
                other => other,
            };
            object
                .and_then(|o| doc.dereference(o).ok())
                .and_then(|(_, o)| o.as_array().ok())
                .map(|a| a.iter().filter_map(|o| o.as_reference().ok()).collect())
                .unwrap_or_default()
        };
        let old = list(before, previous);
        let new = list(doc, Some(after));
        if old.iter().any(|o| !new.contains(o)) {
            return (Level::Other, format!("object {n}: annotations of page {page} were removed"));
        }
        let added: Vec<&ObjectId> = new.iter().filter(|o| !old.contains(o)).collect();
        if added.iter().all(|o| self.signature_parts.contains(o)) {
            (Level::FormFilling, format!("object {n}: a signature field on page {page}"))
        } else if added.iter().all(|o| self.signature_parts.contains(o) || self.annotations.contains(o)) {
            (Level::Annotations, format!("object {n}: annotations added to page {page}"))
        } else {
            (Level::Other, format!("object {n}: fields added to page {page}"))
        }
    }
}

/// Whether two dictionaries (or streams' dictionaries) are the same but for `keys`.
fn same_except(previous: Option<&Object>, after: &Object, keys: &[&[u8]]) -> bool {
    let dict = |o: &Object| o.as_dict().ok().cloned().or_else(|| o.as_stream().ok().map(|s| s.dict.clone()));
    let (Some(old), Some(new)) = (previous.and_then(dict), dict(after)) else { return false };
    let strip = |mut d: Dictionary| {
        for key in keys {
            d.remove(key);
        }
        d
    };
    strip(old) == strip(new)
}

/// Whether a reference list at `key` lost members.
fn removed_references(
    doc: &Document,
    before: &Document,
    previous: Option<&Object>,
    after: &Object,
    key: &[u8],
) -> bool {
    let list = |doc: &Document, o: Option<&Object>| -> Vec<Object> {
        o.and_then(|o| o.as_dict().ok())
            .and_then(|d| d.get(key).ok())
            .and_then(|o| doc.dereference(o).ok())
            .and_then(|(_, o)| o.as_array().ok())
            .cloned()
            .unwrap_or_default()
    };
    let old = list(before, previous);
    let new = list(doc, Some(after));
    old.iter().any(|o| !new.contains(o))
}

/// The appearance streams an annotation refers to (normal, rollover, down; states too).
fn appearance_streams(doc: &Document, annot: &Dictionary) -> Vec<ObjectId> {
    let mut out = Vec::new();
    let Some(ap) = pdf::dict_at(doc, annot, b"AP") else { return out };
    for (_, entry) in ap.iter() {
        match entry {
            Object::Reference(id) => {
                out.push(*id);
                if let Ok(states) = doc.get_dictionary(*id) {
                    out.extend(states.iter().filter_map(|(_, o)| o.as_reference().ok()));
                }
            }
            Object::Dictionary(states) => out.extend(states.iter().filter_map(|(_, o)| o.as_reference().ok())),
            _ => {}
        }
    }
    out
}

/// Every object reachable from `object` within `depth` levels.
fn collect_references(doc: &Document, object: &Object, depth: usize, out: &mut HashSet<ObjectId>) {
    if depth == 0 {
        return;
    }
    match object {
        Object::Reference(id) => {
            if out.insert(*id)
                && let Ok(inner) = doc.get_object(*id)
            {
                collect_references(doc, inner, depth - 1, out);
            }
        }
        Object::Array(items) => items.iter().for_each(|o| collect_references(doc, o, depth, out)),
        Object::Dictionary(d) => d.iter().for_each(|(_, o)| collect_references(doc, o, depth, out)),
        Object::Stream(s) => s.dict.iter().for_each(|(_, o)| collect_references(doc, o, depth, out)),
        _ => {}
    }
}
