//! CMS (RFC 5652) as PAdES uses it: the detached `SignedData` a signature's `/Contents`
//! holds, built for signing and read for validation, with the ESS signing-certificate-v2
//! attribute and the digest and signature algorithms both sides know.

use ::cms::cert::{CertificateChoices, IssuerAndSerialNumber};
use ::cms::content_info::{CmsVersion, ContentInfo};
use ::cms::signed_data::{
    CertificateSet, EncapsulatedContentInfo, SignedData, SignerIdentifier, SignerInfo, SignerInfos,
};
use aws_lc_rs::digest;
use aws_lc_rs::signature::{self, UnparsedPublicKey, VerificationAlgorithm};
use const_oid::ObjectIdentifier;
use const_oid::db::{rfc5911, rfc5912};
use der::asn1::{OctetString, SetOfVec};
use der::{Any, Decode as _, Encode as _, Sequence};
use x509_cert::Certificate;
use x509_cert::attr::{Attribute, Attributes};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};

/// `id-data`: the type of the signed content (the document's bytes, detached).
pub const ID_DATA: ObjectIdentifier = rfc5911::ID_DATA;
/// `id-signedData`.
pub const ID_SIGNED_DATA: ObjectIdentifier = rfc5911::ID_SIGNED_DATA;
/// The content-type attribute.
pub const CONTENT_TYPE: ObjectIdentifier = rfc5911::ID_CONTENT_TYPE;
/// The message-digest attribute.
pub const MESSAGE_DIGEST: ObjectIdentifier = rfc5911::ID_MESSAGE_DIGEST;
/// The signing-time attribute (CMS signers other than PAdES write it).
pub const SIGNING_TIME: ObjectIdentifier = rfc5911::ID_SIGNING_TIME;
/// ESS signing-certificate-v2 (RFC 5035), which PAdES requires.
pub const SIGNING_CERTIFICATE_V2: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.47");
/// ESS signing-certificate (v1, SHA-1).
pub const SIGNING_CERTIFICATE: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.12");
/// The signature time-stamp unsigned attribute (RFC 3161 appendix A).
pub const SIGNATURE_TIME_STAMP: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.2.14");
/// `id-ct-TSTInfo`, the content of a time-stamp token.
pub const ID_CT_TST_INFO: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.16.1.4");

/// `ecdsa-with-SHA1`, of old signatures.
const ECDSA_WITH_SHA_1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.1");

/// A digest algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digest {
    /// SHA-1: read in old signatures only.
    Sha1,
    /// SHA-256.
    Sha256,
    /// SHA-384.
    Sha384,
    /// SHA-512.
    Sha512,
}

impl Digest {
    /// The algorithm of an OID, if known.
    pub fn from_oid(oid: &ObjectIdentifier) -> Option<Digest> {
        Some(match *oid {
            rfc5912::ID_SHA_1 => Digest::Sha1,
            rfc5912::ID_SHA_256 => Digest::Sha256,
            rfc5912::ID_SHA_384 => Digest::Sha384,
            rfc5912::ID_SHA_512 => Digest::Sha512,
            _ => return None,
        })
    }

    /// Its OID.
    pub fn oid(self) -> ObjectIdentifier {
        match self {
            Digest::Sha1 => rfc5912::ID_SHA_1,
            Digest::Sha256 => rfc5912::ID_SHA_256,
            Digest::Sha384 => rfc5912::ID_SHA_384,
            Digest::Sha512 => rfc5912::ID_SHA_512,
        }
    }

    /// Its name as reports give it.
    pub fn name(self) -> &'static str {
        match self {
            Digest::Sha1 => "sha1",
            Digest::Sha256 => "sha256",
            Digest::Sha384 => "sha384",
            Digest::Sha512 => "sha512",
        }
    }

    /// Its identifier, parameters absent (RFC 5754).
    pub fn identifier(self) -> AlgorithmIdentifierOwned {
        AlgorithmIdentifierOwned { oid: self.oid(), parameters: None }
    }

    fn algorithm(self) -> &'static digest::Algorithm {
        match self {
            Digest::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            Digest::Sha256 => &digest::SHA256,
            Digest::Sha384 => &digest::SHA384,
            Digest::Sha512 => &digest::SHA512,
        }
    }

    /// The digest of the concatenation of `parts`.
    pub fn of(self, parts: &[&[u8]]) -> Vec<u8> {
        let mut context = digest::Context::new(self.algorithm());
        for part in parts {
            context.update(part);
        }
        context.finish().as_ref().to_vec()
    }
}

/// A signature algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignatureAlgorithm {
    /// RSA PKCS#1 v1.5 with this digest.
    RsaPkcs1(Digest),
    /// RSA-PSS with this digest (MGF1 with the same one).
    RsaPss(Digest),
    /// ECDSA with this digest.
    Ecdsa(Digest),
}

impl SignatureAlgorithm {
    /// The digest it hashes the signed bytes with.
    pub fn digest(self) -> Digest {
        match self {
            SignatureAlgorithm::RsaPkcs1(d) | SignatureAlgorithm::RsaPss(d) | SignatureAlgorithm::Ecdsa(d) => d,
        }
    }

    /// Its name as reports give it.
    pub fn name(self) -> String {
        match self {
            SignatureAlgorithm::RsaPkcs1(d) => format!("rsa-pkcs1-{}", d.name()),
            SignatureAlgorithm::RsaPss(d) => format!("rsa-pss-{}", d.name()),
            SignatureAlgorithm::Ecdsa(d) => format!("ecdsa-{}", d.name()),
        }
    }

    /// The identifier written when signing: `sha256WithRSAEncryption` (NULL parameters)
    /// or `ecdsa-with-SHA256`/`SHA384` (none).
    pub fn identifier(self) -> AlgorithmIdentifierOwned {
        let (oid, null) = match self {
            SignatureAlgorithm::RsaPkcs1(Digest::Sha384) => (rfc5912::SHA_384_WITH_RSA_ENCRYPTION, true),
            SignatureAlgorithm::RsaPkcs1(Digest::Sha512) => (rfc5912::SHA_512_WITH_RSA_ENCRYPTION, true),
            SignatureAlgorithm::RsaPkcs1(_) | SignatureAlgorithm::RsaPss(_) => {
                (rfc5912::SHA_256_WITH_RSA_ENCRYPTION, true)
            }
            SignatureAlgorithm::Ecdsa(Digest::Sha384) => (rfc5912::ECDSA_WITH_SHA_384, false),
            SignatureAlgorithm::Ecdsa(Digest::Sha512) => (rfc5912::ECDSA_WITH_SHA_512, false),
            SignatureAlgorithm::Ecdsa(_) => (rfc5912::ECDSA_WITH_SHA_256, false),
        };
        AlgorithmIdentifierOwned { oid, parameters: null.then(Any::null) }
    }

    /// The algorithm of a signature identifier; `digest` is the signer's digest
    /// algorithm, which a bare `rsaEncryption` or `id-ecPublicKey` leaves to it.
    pub fn from_identifier(id: &AlgorithmIdentifierOwned, digest: Digest) -> Option<SignatureAlgorithm> {
        use SignatureAlgorithm::{Ecdsa, RsaPkcs1, RsaPss};
        Some(match id.oid {
            rfc5912::RSA_ENCRYPTION => RsaPkcs1(digest),
            rfc5912::SHA_1_WITH_RSA_ENCRYPTION => RsaPkcs1(Digest::Sha1),
            rfc5912::SHA_256_WITH_RSA_ENCRYPTION => RsaPkcs1(Digest::Sha256),
            rfc5912::SHA_384_WITH_RSA_ENCRYPTION => RsaPkcs1(Digest::Sha384),
            rfc5912::SHA_512_WITH_RSA_ENCRYPTION => RsaPkcs1(Digest::Sha512),
            rfc5912::ID_RSASSA_PSS => RsaPss(pss_digest(id).unwrap_or(digest)),
            rfc5912::ID_EC_PUBLIC_KEY => Ecdsa(digest),
            ECDSA_WITH_SHA_1 => Ecdsa(Digest::Sha1),
            rfc5912::ECDSA_WITH_SHA_256 => Ecdsa(Digest::Sha256),
            rfc5912::ECDSA_WITH_SHA_384 => Ecdsa(Digest::Sha384),
            rfc5912::ECDSA_WITH_SHA_512 => Ecdsa(Digest::Sha512),
            _ => return None,
        })
    }

    /// Whether `signature` over `message` was made by the key of `spki`.
    pub fn verify(self, spki: &SubjectPublicKeyInfoOwned, message: &[u8], signature: &[u8]) -> bool {
        let key = spki.subject_public_key.raw_bytes();
        let curve = spki.algorithm.parameters.as_ref().and_then(|p| p.decode_as::<ObjectIdentifier>().ok());
        let algorithm: &dyn VerificationAlgorithm = match (self, spki.algorithm.oid, curve) {
            (SignatureAlgorithm::RsaPkcs1(d), rfc5912::RSA_ENCRYPTION, _) => match d {
                Digest::Sha1 => &signature::RSA_PKCS1_1024_8192_SHA1_FOR_LEGACY_USE_ONLY,
                Digest::Sha256 => &signature::RSA_PKCS1_1024_8192_SHA256_FOR_LEGACY_USE_ONLY,
                Digest::Sha384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                Digest::Sha512 => &signature::RSA_PKCS1_1024_8192_SHA512_FOR_LEGACY_USE_ONLY,
            },
            (SignatureAlgorithm::RsaPss(d), rfc5912::RSA_ENCRYPTION | rfc5912::ID_RSASSA_PSS, _) => match d {
                Digest::Sha256 => &signature::RSA_PSS_2048_8192_SHA256,
                Digest::Sha384 => &signature::RSA_PSS_2048_8192_SHA384,
                Digest::Sha512 => &signature::RSA_PSS_2048_8192_SHA512,
                Digest::Sha1 => return false,
            },
            (SignatureAlgorithm::Ecdsa(d), rfc5912::ID_EC_PUBLIC_KEY, Some(curve)) => match (curve, d) {
                (rfc5912::SECP_256_R_1, Digest::Sha1) => &signature::ECDSA_P256_SHA1_ASN1,
                (rfc5912::SECP_256_R_1, Digest::Sha256) => &signature::ECDSA_P256_SHA256_ASN1,
                (rfc5912::SECP_256_R_1, Digest::Sha384) => &signature::ECDSA_P256_SHA384_ASN1,
                (rfc5912::SECP_256_R_1, Digest::Sha512) => &signature::ECDSA_P256_SHA512_ASN1,
                (rfc5912::SECP_384_R_1, Digest::Sha256) => &signature::ECDSA_P384_SHA256_ASN1,
                (rfc5912::SECP_384_R_1, Digest::Sha384) => &signature::ECDSA_P384_SHA384_ASN1,
                (rfc5912::SECP_384_R_1, Digest::Sha512) => &signature::ECDSA_P384_SHA512_ASN1,
                (rfc5912::SECP_521_R_1, Digest::Sha256) => &signature::ECDSA_P521_SHA256_ASN1,
                (rfc5912::SECP_521_R_1, Digest::Sha384) => &signature::ECDSA_P521_SHA384_ASN1,
                (rfc5912::SECP_521_R_1, Digest::Sha512) => &signature::ECDSA_P521_SHA512_ASN1,
                _ => return false,
            },
            _ => return false,
        };
        UnparsedPublicKey::new(algorithm, key).verify(message, signature).is_ok()
    }
}

/// The hash of RSA-PSS parameters (`RSASSA-PSS-params`' first field), when given.
fn pss_digest(id: &AlgorithmIdentifierOwned) -> Option<Digest> {
    #[derive(Sequence)]
    struct PssParams {
        #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
        hash: Option<AlgorithmIdentifierOwned>,
        #[asn1(context_specific = "1", tag_mode = "EXPLICIT", optional = "true")]
        mask: Option<Any>,
        #[asn1(context_specific = "2", tag_mode = "EXPLICIT", optional = "true")]
        salt: Option<u32>,
        #[asn1(context_specific = "3", tag_mode = "EXPLICIT", optional = "true")]
        trailer: Option<u32>,
    }
    let params: PssParams = id.parameters.as_ref()?.decode_as().ok()?;
    // Absent, the hash is SHA-1.
    params.hash.map_or(Some(Digest::Sha1), |h| Digest::from_oid(&h.oid))
}

/// ESS `SigningCertificateV2`.
#[derive(Clone, Debug, Sequence)]
pub struct SigningCertificateV2 {
    /// The signer's certificate first.
    pub certs: Vec<EssCertIdV2>,
    /// Policies (unused).
    #[asn1(optional = "true")]
    pub policies: Option<Any>,
}

/// ESS `ESSCertIDv2`.
#[derive(Clone, Debug, Sequence)]
pub struct EssCertIdV2 {
    /// The hash algorithm, absent for the default SHA-256.
    #[asn1(optional = "true")]
    pub hash_algorithm: Option<AlgorithmIdentifierOwned>,
    /// The hash of the certificate's DER.
    pub cert_hash: OctetString,
    /// The certificate's issuer and serial number.
    #[asn1(optional = "true")]
    pub issuer_serial: Option<IssuerSerial>,
}

/// ESS `IssuerSerial`.
#[derive(Clone, Debug, Sequence)]
pub struct IssuerSerial {
    /// The issuer's name, as a directory name.
    pub issuer: Vec<GeneralName>,
    /// The serial number.
    pub serial_number: SerialNumber,
}

/// One attribute of one value.
pub fn attribute(oid: ObjectIdentifier, value: Any) -> Attribute {
    let mut values = SetOfVec::new();
    values.insert(value).expect("one value");
    Attribute { oid, values }
}

/// The signed attributes of a PAdES signature: content type, message digest and the
/// signer's certificate (ESS v2, SHA-256). No signing time: PAdES puts it in `/M`.
pub fn pades_attributes(message_digest: &[u8], signer: &Certificate) -> der::Result<Attributes> {
    let der = signer.to_der()?;
    let ess = SigningCertificateV2 {
        certs: vec![EssCertIdV2 {
            hash_algorithm: None,
            cert_hash: OctetString::new(Digest::Sha256.of(&[&der]))?,
            issuer_serial: Some(IssuerSerial {
                issuer: vec![GeneralName::DirectoryName(signer.tbs_certificate().issuer().clone())],
                serial_number: signer.tbs_certificate().serial_number().clone(),
            }),
        }],
        policies: None,
    };
    let mut attrs = SetOfVec::new();
    attrs.insert(attribute(CONTENT_TYPE, Any::encode_from(&ID_DATA)?))?;
    attrs.insert(attribute(MESSAGE_DIGEST, Any::encode_from(&OctetString::new(message_digest)?)?))?;
    attrs.insert(attribute(SIGNING_CERTIFICATE_V2, Any::encode_from(&ess)?))?;
    Ok(attrs)
}

/// What goes into a `SignedData` beside the algorithms.
pub struct SignedParts<'a> {
    /// Signer first.
    pub chain: &'a [Certificate],
    /// The digest algorithm.
    pub digest: Digest,
    /// The signature algorithm.
    pub algorithm: SignatureAlgorithm,
    /// The signed attributes.
    pub signed: Attributes,
    /// The signature over their DER.
    pub signature: Vec<u8>,
    /// Unsigned attributes (the time-stamp token).
    pub unsigned: Option<Attributes>,
}

/// The DER of a detached `SignedData` in its `ContentInfo`.
pub fn signed_data(parts: SignedParts<'_>) -> der::Result<Vec<u8>> {
    let signer = &parts.chain[0];
    let sid = SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
        issuer: signer.tbs_certificate().issuer().clone(),
        serial_number: signer.tbs_certificate().serial_number().clone(),
    });
    let info = SignerInfo {
        version: CmsVersion::V1,
        sid,
        digest_alg: parts.digest.identifier(),
        signed_attrs: Some(parts.signed),
        signature_algorithm: parts.algorithm.identifier(),
        signature: OctetString::new(parts.signature)?,
        unsigned_attrs: parts.unsigned,
    };
    let mut certificates = SetOfVec::new();
    for cert in parts.chain {
        certificates.insert(CertificateChoices::Certificate(cert.clone()))?;
    }
    let mut digests = SetOfVec::new();
    digests.insert(parts.digest.identifier())?;
    let mut infos = SetOfVec::new();
    infos.insert(info)?;
    let data = SignedData {
        version: CmsVersion::V1,
        digest_algorithms: digests,
        encap_content_info: EncapsulatedContentInfo { econtent_type: ID_DATA, econtent: None },
        certificates: Some(CertificateSet(certificates)),
        crls: None,
        signer_infos: SignerInfos(infos),
    };
    ContentInfo { content_type: ID_SIGNED_DATA, content: Any::encode_from(&data)? }.to_der()
}

/// A `SignedData` read from a `ContentInfo` (DER, else BER as some signers write it).
pub fn read_signed_data(bytes: &[u8]) -> Result<SignedData, String> {
    let info = ContentInfo::from_der(bytes)
        .or_else(|_| ContentInfo::from_ber(bytes))
        .map_err(|e| format!("not a CMS ContentInfo: {e}"))?;
    if info.content_type != ID_SIGNED_DATA {
        return Err(format!("a CMS {} rather than SignedData", info.content_type));
    }
    info.content.decode_as::<SignedData>().map_err(|e| format!("the SignedData cannot be read: {e}"))
}

/// The certificates a `SignedData` carries.
pub fn certificates(data: &SignedData) -> Vec<Certificate> {
    data.certificates
        .iter()
        .flat_map(|set| set.0.iter())
        .filter_map(|choice| match choice {
            CertificateChoices::Certificate(cert) => Some(cert.clone()),
            _ => None,
        })
        .collect()
}

/// The certificate a signer info names, among `certs`.
pub fn signer_certificate<'c>(info: &SignerInfo, certs: &'c [Certificate]) -> Option<&'c Certificate> {
    certs.iter().find(|cert| match &info.sid {
        SignerIdentifier::IssuerAndSerialNumber(id) => {
            cert.tbs_certificate().issuer() == &id.issuer && cert.tbs_certificate().serial_number() == &id.serial_number
        }
        SignerIdentifier::SubjectKeyIdentifier(ski) => cert
            .tbs_certificate()
            .get_extension::<x509_cert::ext::pkix::SubjectKeyIdentifier>()
            .ok()
            .flatten()
            .is_some_and(|(_, own)| own == *ski),
    })
}

/// The single value of attribute `oid` among `attrs`.
pub fn attribute_value(attrs: &Attributes, oid: ObjectIdentifier) -> Option<&Any> {
    attrs.iter().find(|a| a.oid == oid).and_then(|a| a.values.iter().next())
}

/// The DER of a certificate.
pub fn der_of(cert: &Certificate) -> Vec<u8> {
    cert.to_der().expect("a decoded certificate encodes")
}
