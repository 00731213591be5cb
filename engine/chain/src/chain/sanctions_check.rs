//! `POST /v1/check/sanctions`: one address against the digital-currency addresses of OFAC's
//! SDN list (Specially Designated Nationals and Blocked Persons), with the list's date.
//!
//! The list is the bundled one, or the one `paperchain sanctions refresh` wrote from the
//! official SDN XML when that is as new or newer ([`crate::sanctions`]). The address is read
//! in the syntax it is written in and compared as that syntax demands: EVM hex addresses
//! (checksummed or not), bech32 and cashaddr addresses case-insensitively, base58 ones
//! (Bitcoin legacy, Tron, Litecoin, Solana, Monero, XRP…) exactly. An EVM address listed
//! for one asset (ETH, USDT, ARB…) matches whatever chain the caller has in mind: the same
//! key controls it on every EVM chain, so the route takes no chain.
//!
//! A listed address gives one `sanctioned_address` reason (severity high, 100 points) per
//! listed entity and the verdict `high`; an address not listed gives no reason, score 0 and
//! `low`. This is a lookup in one list: not a full sanctions screening (no other lists, no
//! names, no ownership or control), and it traces no funds.
//!
//! No chain is read; the answer depends only on the address and the list in use.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::output::Reply;
use crate::price::Price;
use crate::risk::{Reason, ScoreRule, Severity, Verdict, rank, reason_from, rule};
use crate::sanctions::{self, ListInUse, SanctionsState};

/// The longest address accepted.
pub const MAX_ADDRESS_CHARS: usize = 128;

/// The scoring table: every reason this route gives. Score = min(100, sum of points).
pub const SCORING: &[ScoreRule] = &[rule(
    "sanctioned_address",
    Severity::High,
    100,
    "the address is listed on OFAC's SDN list: dealing with it is prohibited for US persons",
)];

const DISCLAIMER: &str = "A lookup of one address in OFAC's SDN list of digital currency addresses as of the \
    list's date, not a full sanctions screening: no other list, no names, no owners or controllers, no tracing \
    of funds. An address that is not listed is not cleared.";

/// Request of `/v1/check/sanctions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SanctionsInput {
    /// The address to screen, in any format the SDN list uses: EVM (`0x` and 40 hex digits, any case or checksummed), Bitcoin (base58 or bech32), Tron, Litecoin, Bitcoin Cash (cashaddr, with or without `bitcoincash:`), Solana, Monero, XRP… At most 128 printable ASCII characters; surrounding spaces are ignored.
    #[schemars(regex(pattern = address_pattern()))]
    pub address: String,
}

/// A listing of the address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SanctionsMatch {
    /// The asset it is listed for (from the SDN feature `Digital Currency Address - <asset>`): `ETH`, `XBT`, `USDT`, `TRX`…
    pub asset: String,
    /// The address as the list writes it.
    pub address: String,
    /// The listed entity's primary name.
    pub entity: String,
    /// The SDN entry's unique id; null when the list in use does not carry it (the bundled list does not).
    pub uid: Option<u64>,
    /// The sanctions programs the entity is listed under (`CYBER2`, `DPRK3`, `RUSSIA-EO14024`…).
    pub programs: Vec<String>,
}

/// The list screened against.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ListInfo {
    /// `OFAC SDN`.
    pub name: String,
    /// `bundled` (shipped with this version) or `refreshed` (written by `paperchain sanctions refresh`).
    pub source: String,
    /// Where the list's data came from.
    pub origin: String,
    /// The SDN list's date of issue, YYYY-MM-DD.
    pub date: String,
    /// Days from that date to today (UTC).
    pub age_days: i64,
    /// Addresses in the list.
    pub entries: u64,
}

/// What `prepare` takes, as a JSON Schema pattern: 1 to [`MAX_ADDRESS_CHARS`] printable
/// ASCII characters, with blanks around them.
fn address_pattern() -> String {
    let blank = crate::patterns::white_space!();
    format!("^[{blank}]*[!-~]{{1,{MAX_ADDRESS_CHARS}}}[{blank}]*$")
}

/// Answer of `/v1/check/sanctions`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SanctionsOutput {
    /// The address as compared: lower-case for `evm`, `bech32` and `cashaddr` (without `bitcoincash:`), as given otherwise.
    pub address: String,
    /// How the address was read and compared: `evm`, `bech32` and `cashaddr` case-insensitively; `base58` (Bitcoin legacy, Tron, Litecoin, Solana, Monero, XRP…) and `other` exactly.
    #[schemars(extend("enum" = ["evm", "bech32", "cashaddr", "base58", "other"]))]
    pub format: String,
    /// The address is on the list.
    pub sanctioned: bool,
    /// Its listings (one per asset and entity); empty when it is not listed.
    pub matches: Vec<SanctionsMatch>,
    /// The list used.
    pub list: ListInfo,
    /// `high` when listed, else `low`.
    pub verdict: Verdict,
    /// 100 when listed, else 0.
    #[schemars(range(min = 0, max = 100))]
    pub risk_score: u32,
    /// One `sanctioned_address` reason per listed entity; empty when not listed.
    pub reasons: Vec<Reason>,
    /// What this check is not.
    pub disclaimer: String,
}

/// A checked request.
pub struct SanctionsRequest {
    address: String,
}

/// The route.
pub struct SanctionsRoute;

impl Route for SanctionsRoute {
    type Input = SanctionsInput;
    type Prepared = SanctionsRequest;
    type Output = SanctionsOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/check/sanctions",
        operation: "screen_sanctions",
        family: Family::Chain,
        summary: "Address against the bundled OFAC SDN digital-currency list, with the list's date",
        description: "Screens one address (EVM, Bitcoin, Tron, Litecoin, Bitcoin Cash, Solana, Monero, XRP and \
            the other formats the list uses) against the digital currency addresses of OFAC's SDN list: the list \
            shipped with this version, or a newer one refreshed from the official SDN XML. EVM addresses match in \
            any case or checksum, on every EVM chain; base58 addresses match exactly. A listed address answers \
            each listing (asset, entity, SDN uid when known, programs), the verdict high and a sanctioned_address \
            reason; the answer always says which list and date were used. A list lookup only: not a full \
            sanctions screening, and no tracing of funds.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SanctionsInput, _: &Context) -> Result<SanctionsRequest, EngineError> {
        let address = input.address.trim();
        if address.is_empty() {
            return Err(EngineError::invalid("/address", "/address: give the address to screen"));
        }
        if address.chars().count() > MAX_ADDRESS_CHARS {
            return Err(EngineError::invalid(
                "/address",
                format!("/address: {} characters; an address has at most {MAX_ADDRESS_CHARS}", address.chars().count()),
            ));
        }
        if let Some(c) = address.chars().find(|c| !c.is_ascii_graphic()) {
            return Err(EngineError::invalid(
                "/address",
                format!("/address: {c:?} cannot be part of an address (printable ASCII without spaces only)"),
            ));
        }
        Ok(SanctionsRequest { address: address.to_string() })
    }

    fn quote(_: &SanctionsRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SanctionsRequest, ctx: &Context) -> Result<Reply<SanctionsOutput>, EngineError> {
        let in_use = ctx.state.get_or_insert_with(SanctionsState::default).list();
        let today = time::OffsetDateTime::now_utc().date();
        Ok(Reply::Json(screen(&request.address, &in_use, today)))
    }
}

/// The answer for `address` against the list in use on `today` (pure: unit-tested without files).
pub fn screen(address: &str, in_use: &ListInUse, today: time::Date) -> SanctionsOutput {
    let ListInUse { list, origin } = in_use;
    let (normalized, format) = sanctions::normalize(address);
    let mut matches: Vec<SanctionsMatch> = list
        .lookup(&normalized)
        .into_iter()
        .map(|e| SanctionsMatch {
            asset: e.asset.clone(),
            address: e.address.clone(),
            entity: e.entity.clone(),
            uid: e.uid,
            programs: e.programs.clone(),
        })
        .collect();
    matches.sort_by(|a, b| (&a.entity, &a.asset).cmp(&(&b.entity, &b.asset)));

    let mut reasons = Vec::new();
    let entities: BTreeSet<(&str, Option<u64>)> = matches.iter().map(|m| (m.entity.as_str(), m.uid)).collect();
    for (entity, uid) in entities {
        let listed: Vec<&SanctionsMatch> = matches.iter().filter(|m| m.entity == entity && m.uid == uid).collect();
        let assets: Vec<&str> = listed.iter().map(|m| m.asset.as_str()).collect();
        let programs: BTreeSet<&str> = listed.iter().flat_map(|m| m.programs.iter().map(String::as_str)).collect();
        let uid = uid.map(|u| format!(", SDN uid {u}")).unwrap_or_default();
        let programs = if programs.is_empty() {
            String::new()
        } else {
            format!(" under {}", programs.into_iter().collect::<Vec<_>>().join(", "))
        };
        reasons.extend(reason_from(
            SCORING,
            "sanctioned_address",
            format!(
                "Listed on the OFAC SDN list of {} as a digital currency address ({}) of {entity}{uid}{programs}.",
                list.date,
                assets.join(", ")
            ),
        ));
    }
    let risk_score = rank(&mut reasons);
    SanctionsOutput {
        address: normalized,
        format: format.as_str().to_string(),
        sanctioned: !matches.is_empty(),
        matches,
        list: ListInfo {
            name: "OFAC SDN".into(),
            source: origin.as_str().to_string(),
            origin: list.source.clone(),
            date: list.date.to_string(),
            age_days: (today - list.date).whole_days(),
            entries: list.entries.len() as u64,
        },
        verdict: Verdict::from_score(risk_score),
        risk_score,
        reasons,
        disclaimer: DISCLAIMER.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sanctions::{Entry, ListOrigin, SanctionsList, parse_date};

    fn in_use() -> ListInUse {
        let entry = |asset: &str, address: &str, entity: &str, programs: &[&str]| Entry {
            asset: asset.into(),
            address: address.into(),
            uid: Some(7),
            entity: entity.into(),
            programs: programs.iter().map(|p| p.to_string()).collect(),
        };
        let list = SanctionsList::new(
            parse_date("2026-09-30").unwrap(),
            "test".into(),
            vec![
                entry("ETH", "0xAbC0000000000000000000000000000000000001", "ONE", &["CYBER2"]),
                entry("ARB", "0xabc0000000000000000000000000000000000001", "ONE", &["CYBER2"]),
                entry("XBT", "1Kuf2Rd8mDyAViwBozGTNYnvWL8uYFrkVo", "TWO", &["DPRK3", "CYBER2"]),
            ],
        );
        ListInUse { list: Arc::new(list), origin: ListOrigin::Refreshed }
    }

    #[test]
    fn scoring_table_is_consistent() {
        assert_eq!(SCORING.len(), 1);
        assert_eq!((SCORING[0].severity, SCORING[0].points), (Severity::High, 100));
    }

    #[test]
    fn a_listed_address_is_high_with_one_reason_per_entity() {
        let today = parse_date("2026-10-10").unwrap();
        let out = screen("0xABC0000000000000000000000000000000000001", &in_use(), today);
        assert!(out.sanctioned);
        assert_eq!(out.format, "evm");
        assert_eq!(out.address, "0xabc0000000000000000000000000000000000001");
        assert_eq!(out.matches.iter().map(|m| m.asset.as_str()).collect::<Vec<_>>(), ["ARB", "ETH"]);
        assert_eq!((out.verdict, out.risk_score, out.reasons.len()), (Verdict::High, 100, 1));
        assert!(
            out.reasons[0].message.contains("(ARB, ETH) of ONE, SDN uid 7 under CYBER2"),
            "{}",
            out.reasons[0].message
        );
        assert_eq!((out.list.source.as_str(), out.list.age_days, out.list.entries), ("refreshed", 10, 3));
    }

    #[test]
    fn an_address_not_listed_is_low_without_reasons() {
        let today = parse_date("2026-09-30").unwrap();
        let out = screen("1BoatSLRHtKNngkdXEeobR76b53LETtpyT", &in_use(), today);
        assert!(!out.sanctioned && out.matches.is_empty() && out.reasons.is_empty());
        assert_eq!((out.verdict, out.risk_score, out.format.as_str()), (Verdict::Low, 0, "base58"));
        assert_eq!(out.list.date, "2026-09-30");
    }
}
