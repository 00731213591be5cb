//! RFC 3161 time stamps: the request a signature's time stamp is asked with, the
//! authority's answer, and the `TSTInfo` a token carries.

use const_oid::ObjectIdentifier;
use der::asn1::{Int, OctetString};
use der::{Any, Decode as _, Encode as _, Reader as _, Sequence, SliceReader, Tag, Tagged as _};
use time::OffsetDateTime;
use x509_cert::spki::AlgorithmIdentifierOwned;

use crate::pdf::sign::cms::{Digest, ID_CT_TST_INFO, read_signed_data};

/// `MessageImprint`.
#[derive(Clone, Debug, Sequence)]
pub struct MessageImprint {
    /// The hash algorithm.
    pub hash_algorithm: AlgorithmIdentifierOwned,
    /// The hash of what is stamped.
    pub hashed_message: OctetString,
}

/// `TimeStampReq` (version 1, certificates asked for).
#[derive(Clone, Debug, Sequence)]
struct TimeStampReq {
    version: u8,
    message_imprint: MessageImprint,
    #[asn1(optional = "true")]
    req_policy: Option<ObjectIdentifier>,
    #[asn1(optional = "true")]
    nonce: Option<Int>,
    #[asn1(optional = "true")]
    cert_req: Option<bool>,
}

/// `TimeStampResp`.
#[derive(Clone, Debug, Sequence)]
struct TimeStampResp {
    status: Any,
    #[asn1(optional = "true")]
    token: Option<Any>,
}

/// A request for a time stamp of `digest` (made with `algorithm`), with `nonce`.
pub fn request(algorithm: Digest, digest: &[u8], nonce: u64) -> Vec<u8> {
    let request = TimeStampReq {
        version: 1,
        message_imprint: MessageImprint {
            hash_algorithm: algorithm.identifier(),
            hashed_message: OctetString::new(digest).expect("a digest is short"),
        },
        req_policy: None,
        nonce: Some(Int::new(&nonce.to_be_bytes()).expect("eight bytes make an integer")),
        cert_req: Some(true),
    };
    request.to_der().expect("a time-stamp request encodes")
}

/// What a time-stamp token says.
#[derive(Clone, Debug)]
pub struct TstInfo {
    /// The stamped hash.
    pub imprint: MessageImprint,
    /// When.
    pub time: OffsetDateTime,
    /// The nonce echoed, as unsigned big-endian bytes without leading zeros.
    pub nonce: Option<Vec<u8>>,
    /// The authority's policy.
    pub policy: ObjectIdentifier,
}

/// The token of an authority's answer, checked against the request: granted, a
/// `SignedData` of a `TSTInfo` stamping `digest` with `nonce`. The error says why not.
pub fn token_from_response(answer: &[u8], digest: &[u8], nonce: u64) -> Result<Vec<u8>, String> {
    let response = TimeStampResp::from_der(answer)
        .or_else(|_| TimeStampResp::from_ber(answer))
        .map_err(|e| format!("the answer is not an RFC 3161 TimeStampResp: {e}"))?;
    let status: u32 = response
        .status
        .decode_as::<PkiStatusInfoOwned>()
        .map(|s| s.status)
        .map_err(|e| format!("the answer's status cannot be read: {e}"))?;
    // 0 granted, 1 granted with modifications.
    if status > 1 {
        let what = match status {
            2 => "rejection",
            3 => "waiting",
            4 => "revocation warning",
            5 => "revocation notification",
            _ => "an unknown status",
        };
        return Err(format!("the time-stamp authority refused the request ({what}, status {status})"));
    }
    let token = response.token.ok_or("the time-stamp authority granted the request but sent no token")?;
    let token = token.to_der().map_err(|e| e.to_string())?;
    let info = token_info(&token)?;
    if info.imprint.hashed_message.as_bytes() != digest {
        return Err("the time stamp is of another hash than the one sent".to_string());
    }
    let sent = nonce.to_be_bytes();
    let sent: Vec<u8> = sent.iter().copied().skip_while(|b| *b == 0).collect();
    if info.nonce.as_deref() != Some(&sent[..]) {
        return Err("the time stamp does not echo the request's nonce".to_string());
    }
    Ok(token)
}

/// The `PKIStatusInfo` read from an `Any` (owned strings are not needed).
#[derive(Clone, Debug, Sequence)]
struct PkiStatusInfoOwned {
    status: u32,
    #[asn1(optional = "true")]
    status_string: Option<Any>,
    #[asn1(optional = "true")]
    fail_info: Option<der::asn1::BitString>,
}

/// The `TSTInfo` of a time-stamp token (a `ContentInfo` of `SignedData`).
pub fn token_info(token: &[u8]) -> Result<TstInfo, String> {
    let data = read_signed_data(token)?;
    if data.encap_content_info.econtent_type != ID_CT_TST_INFO {
        return Err("the token does not hold a TSTInfo".to_string());
    }
    let content = data.encap_content_info.econtent.as_ref().ok_or("the token's TSTInfo is missing")?;
    let octets: OctetString = content.decode_as().map_err(|e| format!("the token's content: {e}"))?;
    read_tst_info(octets.as_bytes()).map_err(|e| format!("the TSTInfo cannot be read: {e}"))
}

/// The bytes of a token's `TSTInfo` (what its signed message-digest attribute hashes).
pub fn tst_info_bytes(token: &[u8]) -> Option<Vec<u8>> {
    let data = read_signed_data(token).ok()?;
    let octets: OctetString = data.encap_content_info.econtent.as_ref()?.decode_as().ok()?;
    Some(octets.as_bytes().to_vec())
}

/// Reads a `TSTInfo` field by field: its optional fields are told apart by their tags.
fn read_tst_info(bytes: &[u8]) -> der::Result<TstInfo> {
    let outer = Any::from_der(bytes)?;
    let mut reader = SliceReader::new(outer.value())?;
    let _version: u8 = reader.decode()?;
    let policy: ObjectIdentifier = reader.decode()?;
    let imprint: MessageImprint = reader.decode()?;
    let _serial: Int = reader.decode()?;
    let time: Any = reader.decode()?;
    let mut nonce = None;
    while !reader.is_finished() {
        let item: Any = reader.decode()?;
        if item.tag() == Tag::Integer {
            let value = item.value();
            nonce = Some(value.iter().copied().skip_while(|b| *b == 0).collect());
        }
    }
    let time = generalized_time(time.value()).ok_or_else(|| der::Tag::GeneralizedTime.value_error())?;
    Ok(TstInfo { imprint, time, nonce, policy })
}

/// `YYYYMMDDHHMMSS[.f*]Z`, the fraction dropped.
fn generalized_time(bytes: &[u8]) -> Option<OffsetDateTime> {
    let text = std::str::from_utf8(bytes).ok()?;
    let text = text.strip_suffix('Z')?;
    let whole = text.split('.').next()?;
    if whole.len() != 14 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n = |a: usize, b: usize| whole[a..b].parse::<u32>().ok();
    let date =
        time::Date::from_calendar_date(n(0, 4)? as i32, time::Month::try_from(n(4, 6)? as u8).ok()?, n(6, 8)? as u8)
            .ok()?;
    let clock = time::Time::from_hms(n(8, 10)? as u8, n(10, 12)? as u8, n(12, 14)? as u8).ok()?;
    Some(date.with_time(clock).assume_utc())
}

/// The token as the `Any` an unsigned attribute holds.
pub fn token_any(token: &[u8]) -> der::Result<Any> {
    Any::from_der(token)
}
