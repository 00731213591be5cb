//! Certificate paths: from a signer's certificate up to one of the trust roots the caller
//! gives, each certificate's signature checked with its issuer's key, each one valid at
//! the time asked, issuers allowed to issue and the signer allowed to sign.
//! Revocation (CRL, OCSP) is not checked: nothing is fetched.

use der::Encode as _;
use time::OffsetDateTime;
use x509_cert::Certificate;
use x509_cert::ext::pkix::name::DirectoryString;
use x509_cert::ext::pkix::{BasicConstraints, KeyUsage};

use crate::pdf::sign::cms::{Digest, SignatureAlgorithm};

/// Most certificates in a path.
const MAX_PATH: usize = 10;

/// What the path check found.
#[derive(Clone, Debug)]
pub struct PathCheck {
    /// The path's subjects, signer first, up to the root when one was reached.
    pub path: Vec<String>,
    /// Whether the path ends at one of the trust roots and every check passed.
    pub trusted: bool,
    /// Why not, in a sentence.
    pub problem: Option<String>,
}

/// A certificate's subject as a string (RFC 4514).
pub fn subject(cert: &Certificate) -> String {
    cert.tbs_certificate().subject().to_string()
}

/// The common name of a certificate's subject, else the whole subject.
pub fn common_name(cert: &Certificate) -> String {
    cert.tbs_certificate()
        .subject()
        .common_name()
        .ok()
        .flatten()
        .map(|cn| match cn {
            DirectoryString::PrintableString(s) => s.to_string(),
            DirectoryString::Utf8String(s) => s.to_string(),
            DirectoryString::TeletexString(s) => s.to_string(),
            DirectoryString::BmpString(s) => s.to_string(),
        })
        .unwrap_or_else(|| subject(cert))
}

/// The validity period as UTC times.
pub fn validity(cert: &Certificate) -> (OffsetDateTime, OffsetDateTime) {
    let v = cert.tbs_certificate().validity();
    let at = |t: &x509_cert::time::Time| {
        OffsetDateTime::from_unix_timestamp(t.to_unix_duration().as_secs() as i64).unwrap_or(OffsetDateTime::UNIX_EPOCH)
    };
    (at(&v.not_before), at(&v.not_after))
}

/// Whether `issuer`'s key signed `cert`.
pub fn signed_by(cert: &Certificate, issuer: &Certificate) -> bool {
    let Ok(tbs) = cert.tbs_certificate().to_der() else { return false };
    let Some(algorithm) = SignatureAlgorithm::from_identifier(cert.signature_algorithm(), Digest::Sha256) else {
        return false;
    };
    let Some(signature) = cert.signature().as_bytes() else { return false };
    algorithm.verify(issuer.tbs_certificate().subject_public_key_info(), &tbs, signature)
}

/// Builds and checks the path of `signer`, issuers taken from `pool` (the certificates
/// the signature carries) and `roots`, at time `at`.
pub fn check(signer: &Certificate, pool: &[Certificate], roots: &[Certificate], at: OffsetDateTime) -> PathCheck {
    let mut path = vec![signer.clone()];
    let mut problem = None;
    if let Ok(Some((_, usage))) = signer.tbs_certificate().get_extension::<KeyUsage>()
        && !(usage.digital_signature() || usage.non_repudiation())
    {
        problem = Some(format!(
            "the signer's certificate ({}) may not make signatures (its key usage lacks digitalSignature and nonRepudiation)",
            common_name(signer)
        ));
    }
    let mut anchored = false;
    while path.len() <= MAX_PATH {
        let current = path.last().expect("the path starts with the signer");
        let (from, until) = validity(current);
        if problem.is_none() && (at < from || at > until) {
            problem = Some(format!(
                "the certificate of {} is not valid at {} (valid from {} until {})",
                common_name(current),
                crate::pdf::sign::verify::rfc3339(at),
                crate::pdf::sign::verify::rfc3339(from),
                crate::pdf::sign::verify::rfc3339(until),
            ));
        }
        if roots.contains(current) {
            anchored = true;
            break;
        }
        let issuer_name = current.tbs_certificate().issuer();
        let root = roots.iter().find(|r| r.tbs_certificate().subject() == issuer_name && signed_by(current, r));
        if let Some(root) = root {
            if problem.is_none() {
                problem = issuer_problem(root);
            }
            path.push(root.clone());
            anchored = true;
            let (from, until) = validity(root);
            if problem.is_none() && (at < from || at > until) {
                problem = Some(format!(
                    "the trust root {} is not valid at {}",
                    common_name(root),
                    crate::pdf::sign::verify::rfc3339(at)
                ));
            }
            break;
        }
        let next = pool
            .iter()
            .find(|c| c.tbs_certificate().subject() == issuer_name && !path.contains(c) && signed_by(current, c));
        match next {
            Some(next) => {
                if problem.is_none() {
                    problem = issuer_problem(next);
                }
                path.push(next.clone());
            }
            None => {
                if current.tbs_certificate().subject() == issuer_name && signed_by(current, current) {
                    problem.get_or_insert_with(|| {
                        format!("the path ends at {}, which is not one of the trust roots given", common_name(current))
                    });
                } else {
                    problem.get_or_insert_with(|| {
                        format!(
                            "the issuer of {} ({issuer_name}) is neither in the signature nor among the trust roots",
                            common_name(current)
                        )
                    });
                }
                break;
            }
        }
    }
    if !anchored && problem.is_none() {
        problem = Some("the certificate path is longer than 10 certificates".to_string());
    }
    PathCheck { path: path.iter().map(subject).collect(), trusted: anchored && problem.is_none(), problem }
}

/// Why `issuer` may not issue certificates, if it may not.
fn issuer_problem(issuer: &Certificate) -> Option<String> {
    let ca = issuer.tbs_certificate().get_extension::<BasicConstraints>().ok().flatten().is_some_and(|(_, b)| b.ca);
    // Version 1 roots have no extensions; they are trusted as they were given.
    let v1 = issuer.tbs_certificate().extensions().is_none();
    if !ca && !v1 {
        return Some(format!("{} issued a certificate but is not a certification authority", common_name(issuer)));
    }
    if let Ok(Some((_, usage))) = issuer.tbs_certificate().get_extension::<KeyUsage>()
        && !usage.key_cert_sign()
    {
        return Some(format!("{} issued a certificate but its key usage lacks keyCertSign", common_name(issuer)));
    }
    None
}
