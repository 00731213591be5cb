//! The signer's identity: a private key and its certificate chain, read from a PKCS#12
//! file (`.p12`, `.pfx`), and signing with that key.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeyPair as RsaKeyPair;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _, RSA_PKCS1_SHA256,
};
use der::{Decode as _, Encode as _};
use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};
use x509_cert::Certificate;

use crate::error::EngineError;
use crate::pdf::sign::cms::{Digest, SignatureAlgorithm};

/// A private key that signs.
enum Key {
    /// RSA, PKCS#1 v1.5 with SHA-256 (what every reader validates).
    Rsa(RsaKeyPair),
    /// ECDSA on P-256 (SHA-256) or P-384 (SHA-384).
    Ecdsa(EcdsaKeyPair, SignatureAlgorithm),
}

/// A key and the certificates that vouch for it, signer first.
pub struct Identity {
    key: Key,
    /// The signer's certificate, then the issuers the file holds (in path order where
    /// they form one).
    pub chain: Vec<Certificate>,
}

impl std::fmt::Debug for Identity {
    // The key is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity").field("certificates", &self.chain.len()).finish()
    }
}

impl Identity {
    /// Reads a PKCS#12 file; errors name `field` (the file input) and, for the password,
    /// `{field}/password`. The password is never quoted.
    pub fn from_pkcs12(bytes: &[u8], password: &str, field: &str) -> Result<Identity, EngineError> {
        let store = KeyStore::from_pkcs12(bytes, password, Pkcs12ImportPolicy::Relaxed).map_err(|e| {
            let text = e.to_string();
            if text.to_ascii_lowercase().contains("mac") {
                let code = if password.is_empty() { "password_required" } else { "wrong_password" };
                EngineError::invalid_with(
                    code,
                    format!("{field}/password"),
                    format!("{field}/password: the password does not open this PKCS#12 file"),
                )
            } else {
                EngineError::invalid_with(
                    "invalid_certificate",
                    field,
                    format!("{field}: not a PKCS#12 file (.p12, .pfx) that can be read: {text}"),
                )
            }
        })?;
        let chains: Vec<_> = store
            .entries()
            .filter_map(|(_, entry)| match entry {
                KeyStoreEntry::PrivateKeyChain(chain) => Some(chain),
                _ => None,
            })
            .collect();
        let [chain] = chains.as_slice() else {
            let found = chains.len();
            return Err(EngineError::invalid_with(
                "invalid_certificate",
                field,
                format!("{field}: the PKCS#12 file must hold exactly one private key, it holds {found}"),
            ));
        };
        let mut certs = Vec::new();
        for cert in chain.certs() {
            certs.push(Certificate::from_der(cert.as_der()).map_err(|e| {
                EngineError::invalid_with(
                    "invalid_certificate",
                    field,
                    format!("{field}: a certificate of the PKCS#12 file cannot be read: {e}"),
                )
            })?);
        }
        let key = key_from_pkcs8(chain.key().as_der()).ok_or_else(|| {
            EngineError::invalid_with(
                "invalid_certificate",
                field,
                format!("{field}: the private key is neither RSA (2048 bits or more) nor ECDSA on P-256 or P-384"),
            )
        })?;
        let public = match &key {
            Key::Rsa(pair) => pair.public_key().as_ref().to_vec(),
            Key::Ecdsa(pair, _) => pair.public_key().as_ref().to_vec(),
        };
        // The signer's certificate is the one of the key; the others follow in path order.
        let Some(leaf) = certs
            .iter()
            .position(|c| c.tbs_certificate().subject_public_key_info().subject_public_key.raw_bytes() == public)
        else {
            return Err(EngineError::invalid_with(
                "invalid_certificate",
                field,
                format!("{field}: the PKCS#12 file has no certificate for its private key"),
            ));
        };
        let mut ordered = vec![certs.remove(leaf)];
        while let Some(next) = certs
            .iter()
            .position(|c| c.tbs_certificate().subject() == ordered.last().unwrap().tbs_certificate().issuer())
        {
            ordered.push(certs.remove(next));
        }
        ordered.extend(certs);
        Ok(Identity { key, chain: ordered })
    }

    /// The signer's certificate.
    pub fn certificate(&self) -> &Certificate {
        &self.chain[0]
    }

    /// The DER of every certificate, signer first.
    pub fn chain_der(&self) -> Vec<Vec<u8>> {
        self.chain.iter().map(|c| c.to_der().expect("a decoded certificate encodes")).collect()
    }

    /// The digest the signature is made with.
    pub fn digest(&self) -> Digest {
        self.algorithm().digest()
    }

    /// The algorithm written in the signature.
    pub fn algorithm(&self) -> SignatureAlgorithm {
        match &self.key {
            Key::Rsa(_) => SignatureAlgorithm::RsaPkcs1(Digest::Sha256),
            Key::Ecdsa(_, algorithm) => *algorithm,
        }
    }

    /// Signs `message` (the DER of the signed attributes).
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, EngineError> {
        let failed = |_| EngineError::internal("the private key could not sign");
        match &self.key {
            Key::Rsa(pair) => {
                let mut signature = vec![0; pair.public_modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), message, &mut signature).map_err(failed)?;
                Ok(signature)
            }
            Key::Ecdsa(pair, _) => Ok(pair.sign(&SystemRandom::new(), message).map_err(failed)?.as_ref().to_vec()),
        }
    }
}

/// An RSA or ECDSA key from PKCS#8 DER.
fn key_from_pkcs8(der: &[u8]) -> Option<Key> {
    if let Ok(pair) = RsaKeyPair::from_pkcs8(der) {
        return (pair.public_modulus_len() >= 256).then_some(Key::Rsa(pair));
    }
    if let Ok(pair) = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, der) {
        return Some(Key::Ecdsa(pair, SignatureAlgorithm::Ecdsa(Digest::Sha256)));
    }
    if let Ok(pair) = EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_ASN1_SIGNING, der) {
        return Some(Key::Ecdsa(pair, SignatureAlgorithm::Ecdsa(Digest::Sha384)));
    }
    None
}
