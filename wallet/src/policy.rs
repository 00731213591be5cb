//! The spend policy's decision on one 402: which requirement, if any, may be paid.
//!
//! Everything here is decided before a signature exists: the host, then each offer's
//! scheme, network, asset, payee and amount against the per-call cap. The caps that add
//! calls up (day, session, client, network) are checked when the amount is reserved in the
//! ledger, atomically ([`crate::ledger::Ledger::reserve`]).

use paperchain_protocol::x402::{
    EIP2612_GAS_SPONSORING, Offer, PaymentRequired, SCHEME_BATCH, SCHEME_EXACT, SCHEME_UPTO,
};

use crate::config::{Asset, ClientConfig, TEST_NETWORKS, is_address_of, same_address};
use crate::money::{Dollars, format_atomic};

/// The requirement the policy allows, with what it costs.
#[derive(Clone, Debug)]
pub struct Selected {
    /// The `accepts` entry to sign: read, and exactly as the server sent it.
    pub requirement: Offer,
    /// `exact`, `upto` (then `atomic` is the most it may charge: what is reserved and
    /// checked against the caps), or `batch-settlement` (a voucher of `atomic` over a
    /// channel, with a deposit when the channel is short).
    pub scheme: &'static str,
    /// Its amount in the asset's atomic units.
    pub atomic: u128,
    /// The same in micro-dollars (rounded up).
    pub dollars: Dollars,
    /// The asset paid in.
    pub asset: Asset,
    /// CAIP-2 network.
    pub network: String,
    /// The address paid.
    pub payee: String,
    /// Whether the user must approve it first.
    pub needs_approval: bool,
}

impl Selected {
    /// "0.002 USDC on eip155:8453 to 0x…"; "up to 0.043 USDC …" for `upto`.
    pub fn describe(&self) -> String {
        format!(
            "{}{} {} on {} to {}",
            if self.scheme == SCHEME_UPTO { "up to " } else { "" },
            format_atomic(self.atomic, self.asset.decimals),
            self.asset.symbol,
            self.network,
            self.payee
        )
    }
}

/// Why nothing may be paid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The host is not one the policy pays.
    #[error(
        "{0} is not a hosted service this wallet pays: add it to policy.hosts (paperchain config add policy.hosts {0})"
    )]
    Host(String),
    /// No offer passes; one reason per offer.
    #[error("no payment option is allowed by the spend policy: {0}")]
    Offers(String),
    /// A cap that adds calls up would be passed.
    #[error("{0}")]
    Cap(String),
    /// The user said no, or nothing could ask.
    #[error("{0}")]
    Approval(String),
    /// No spend policy is confirmed by its owner.
    #[error("{0}")]
    Unconfirmed(String),
}

/// The longest an authorization may stay usable: a hosted call that takes longer is not
/// one this wallet pays for.
pub const MAX_TIMEOUT_SECONDS: u64 = 3600;

/// Chooses what to pay of the PaymentRequired `required`, sent by `host`: the cheapest
/// offer the policy allows, its most for an `upto` one. Of two as cheap, a
/// `batch-settlement` one when `policy.channel_deposit` allows channels (a voucher, no
/// transaction per call), then an `upto` one (it never charges more) when the service
/// submits the permit Permit2 needs (`eip2612GasSponsoring`), else the server's order.
pub fn select(config: &ClientConfig, host: &str, required: &PaymentRequired) -> Result<Selected, Refusal> {
    if let Some(why) = &config.policy.locked {
        return Err(Refusal::Unconfirmed(why.clone()));
    }
    let host = host.to_ascii_lowercase();
    // The hosts listed, or when none is, the configured service's; and the confirmed
    // configuration's too, while the file says more than it.
    let allowed = |config: &ClientConfig| crate::confirmed::paid_hosts(config).contains(&host);
    if !allowed(config) || config.ceiling.as_deref().is_some_and(|c| !allowed(c)) {
        return Err(Refusal::Host(host));
    }
    let assets = config.assets();
    let policy = &config.policy;
    let mut refused = Vec::new();
    let mut best: Option<Selected> = None;
    for offer in &required.accepts {
        let network = offer.network().to_string();
        let mut refuse = |why: String| refused.push(format!("{network}: {why}"));
        // The scheme first: another scheme's offer has fields of its own.
        let scheme = match offer.raw.get("scheme").and_then(|s| s.as_str()) {
            Some(SCHEME_EXACT) => SCHEME_EXACT,
            Some(SCHEME_UPTO) if network.starts_with("eip155:") => SCHEME_UPTO,
            Some(SCHEME_UPTO) => {
                refuse("scheme `upto` is paid on EVM networks only".into());
                continue;
            }
            Some(SCHEME_BATCH) if !network.starts_with("eip155:") => {
                refuse("scheme `batch-settlement` is paid on EVM networks only".into());
                continue;
            }
            Some(SCHEME_BATCH) if policy.channel_deposit.is_none() => {
                refuse(
                    "scheme `batch-settlement` opens a payment channel: set policy.channel_deposit to use one".into(),
                );
                continue;
            }
            Some(SCHEME_BATCH) => SCHEME_BATCH,
            other => {
                let shown = other.map_or_else(|| "(none)".to_string(), |s| format!("`{}`", crate::clean(s, 80)));
                refuse(format!("scheme {shown} is not `exact`, `upto` or `batch-settlement`"));
                continue;
            }
        };
        if !network.starts_with("eip155:") && !network.starts_with("solana:") {
            refuse("this wallet pays on EVM and Solana networks only".into());
            continue;
        }
        if !TEST_NETWORKS.contains(&network.as_str()) && !policy.networks.contains_key(&network) {
            refuse(format!(
                "a main network: nothing is paid there until a day cap is set for it (policy.networks.\"{network}\")"
            ));
            continue;
        }
        let terms = match &offer.terms {
            Ok(terms) => terms,
            Err(why) => {
                refuse(format!("the offer does not read: {}", crate::clean(why, 200)));
                continue;
            }
        };
        let asset_address = terms.asset.as_str();
        let Some(asset) =
            assets.iter().find(|a| a.network == network && same_address(&network, &a.address, asset_address))
        else {
            refuse(format!("asset {asset_address} is not one this wallet pays in (policy.assets)"));
            continue;
        };
        if !is_address_of(&network, &terms.pay_to) {
            refuse(format!("payTo {:?} is not an address", crate::clean(&terms.pay_to, 80)));
            continue;
        }
        let payee = terms.pay_to.clone();
        if !(1..=MAX_TIMEOUT_SECONDS).contains(&terms.max_timeout_seconds) {
            refuse(format!(
                "maxTimeoutSeconds {} is not between 1 and {MAX_TIMEOUT_SECONDS}: an authorization is not left open \
                 that long",
                terms.max_timeout_seconds
            ));
            continue;
        }
        let pays = |policy: &crate::config::PolicyConfig| {
            policy.payees.is_empty() || policy.payees.iter().any(|p| same_address(&network, p, &payee))
        };
        if !pays(policy) || config.ceiling.as_deref().is_some_and(|c| !pays(&c.policy)) {
            refuse(format!("payee {payee} is not in policy.payees"));
            continue;
        }
        let Some(atomic) = terms.amount.parse::<u128>().ok().filter(|a| *a > 0) else {
            refuse(format!("the amount {:?} is not a positive whole number", crate::clean(&terms.amount, 80)));
            continue;
        };
        let Some(dollars) = Dollars::of_atomic(atomic, asset.decimals) else {
            refuse("the amount is beyond any cap".into());
            continue;
        };
        if let Some(cap) = policy.per_call
            && dollars > cap
        {
            refuse(format!("{dollars} is more than the {cap} allowed per call (policy.per_call)"));
            continue;
        }
        if scheme == SCHEME_BATCH && policy.channel_deposit.is_some_and(|cap| cap < dollars) {
            refuse(format!("{dollars} is more than policy.channel_deposit lets a payment channel hold"));
            continue;
        }
        // Of two as cheap: a channel's voucher (no transaction per call), then a sponsored
        // `upto`, then the server's order.
        let sponsored = required.extensions.contains_key(EIP2612_GAS_SPONSORING);
        let rank = |scheme: &str| match scheme {
            SCHEME_BATCH => 2,
            SCHEME_UPTO if sponsored => 1,
            _ => 0,
        };
        let preferred = |b: &Selected| b.dollars < dollars || (b.dollars == dollars && rank(b.scheme) >= rank(scheme));
        if best.as_ref().is_some_and(preferred) {
            continue;
        }
        best = Some(Selected {
            requirement: offer.clone(),
            scheme,
            atomic,
            dollars,
            asset: asset.clone(),
            network: network.clone(),
            payee,
            needs_approval: policy.approve_above.is_some_and(|limit| dollars > limit),
        });
    }
    match best {
        Some(selected) => Ok(selected),
        None if refused.is_empty() => Err(Refusal::Offers("the server offered no way to pay".into())),
        None => Err(Refusal::Offers(refused.join("; "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A PaymentRequired offering `accepts`.
    fn offering(accepts: Value) -> PaymentRequired {
        serde_json::from_value(json!({"x402Version": 2, "accepts": accepts})).unwrap()
    }

    const BASE_USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
    const POLYGON_USDC: &str = "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359";
    const PAYEE: &str = "0x1111111111111111111111111111111111111111";

    fn offer(network: &str, asset: &str, amount: &str) -> Value {
        json!({"scheme": "exact", "network": network, "amount": amount, "asset": asset, "payTo": PAYEE,
               "maxTimeoutSeconds": 300, "extra": {"name": "USD Coin", "version": "2"}})
    }

    fn config(text: &str) -> ClientConfig {
        ClientConfig::parse(&format!("[service]\nurl = \"https://api.example.test\"\n{text}"), None).unwrap()
    }

    #[test]
    fn a_main_network_needs_a_cap() {
        let required = offering(json!([offer("eip155:8453", BASE_USDC, "2000")]));
        let error = select(&config(""), "api.example.test", &required).unwrap_err().to_string();
        assert!(error.contains("main network"), "{error}");
        let chosen =
            select(&config("[policy]\nnetworks = {\"eip155:8453\" = \"1\"}"), "api.example.test", &required).unwrap();
        assert_eq!((chosen.atomic, chosen.dollars.micros()), (2_000, 2_000));
        assert_eq!(chosen.describe(), format!("0.002 USDC on eip155:8453 to {PAYEE}"));
    }

    #[test]
    fn each_refusal_names_its_reason() {
        let c = config(
            "[policy]\nper_call = \"0.01\"\npayees = [\"0x2222222222222222222222222222222222222222\"]\n\
             networks = {\"eip155:8453\" = \"1\", \"eip155:137\" = \"1\"}",
        );
        assert_eq!(select(&c, "evil.test", &offering(json!([]))).unwrap_err(), Refusal::Host("evil.test".into()));
        let mut long = offer("eip155:8453", BASE_USDC, "1");
        long["payTo"] = json!("0x2222222222222222222222222222222222222222");
        long["maxTimeoutSeconds"] = json!(86400);
        let required = offering(json!([
            offer("eip155:8453", BASE_USDC, "2000"),
            offer("eip155:8453", "0x9999999999999999999999999999999999999999", "1"),
            json!({"scheme": "stream", "network": "eip155:137"}),
            json!({"scheme": "exact", "network": "eip155:8453", "asset": BASE_USDC, "amount": "1", "payTo": "nobody"}),
            long,
            offer("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", "x", "1"),
            offer("bip122:000000000019d6689c085ae165831e93", "x", "1"),
        ]));
        let error = select(&c, "api.example.test", &required).unwrap_err().to_string();
        for part in [
            "payee 0x1111",
            "asset 0x9999",
            "scheme `stream` is not `exact`, `upto` or `batch-settlement`",
            "EVM and Solana networks only",
            "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp: a main network",
            "payTo \"nobody\"",
            "maxTimeoutSeconds 86400",
        ] {
            assert!(error.contains(part), "{part}: {error}");
        }
        let c = config("[policy]\nper_call = \"0.001\"\nnetworks = {\"eip155:8453\" = \"1\"}");
        let error = select(&c, "api.example.test", &offering(json!([offer("eip155:8453", BASE_USDC, "2000")])))
            .unwrap_err()
            .to_string();
        assert!(error.contains("$0.002 is more than the $0.001 allowed per call"), "{error}");
    }

    #[test]
    fn an_upto_offer_is_held_to_the_caps_by_its_most_and_wins_a_tie_when_its_permit_is_sponsored() {
        let c = config("[policy]\nper_call = \"0.05\"\nnetworks = {\"eip155:8453\" = \"1\"}");
        let upto = |amount: &str| {
            let mut offer = offer("eip155:8453", BASE_USDC, amount);
            offer["scheme"] = json!("upto");
            offer
        };
        let both = json!([offer("eip155:8453", BASE_USDC, "43000"), upto("43000")]);
        let plain = select(&c, "api.example.test", &offering(both.clone())).unwrap();
        assert_eq!(plain.scheme, SCHEME_EXACT, "without a sponsored permit the server's order holds");
        let mut sponsored = offering(both);
        sponsored.extensions.insert(EIP2612_GAS_SPONSORING.into(), json!({"info": {"version": "1"}}));
        let chosen = select(&c, "api.example.test", &sponsored).unwrap();
        assert_eq!((chosen.scheme, chosen.atomic), (SCHEME_UPTO, 43_000));
        assert_eq!(chosen.describe(), format!("up to 0.043 USDC on eip155:8453 to {PAYEE}"));
        // Its most is what the per-call cap sees.
        let error = select(&c, "api.example.test", &offering(json!([upto("50001")]))).unwrap_err().to_string();
        assert!(error.contains("$0.050001 is more than the $0.05 allowed per call"), "{error}");
        let mut solana = upto("1");
        solana["network"] = json!("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
        let error = select(&c, "api.example.test", &offering(json!([solana]))).unwrap_err().to_string();
        assert!(error.contains("`upto` is paid on EVM networks only"), "{error}");
    }

    #[test]
    fn a_batch_offer_is_taken_only_with_a_channel_deposit_and_wins_a_tie() {
        let batch = {
            let mut offer = offer("eip155:8453", BASE_USDC, "2000");
            offer["scheme"] = json!("batch-settlement");
            offer
        };
        let both = offering(json!([offer("eip155:8453", BASE_USDC, "2000"), batch.clone()]));
        let plain = config("[policy]\nnetworks = {\"eip155:8453\" = \"1\"}");
        assert_eq!(select(&plain, "api.example.test", &both).unwrap().scheme, SCHEME_EXACT, "no channel without a cap");
        let error = select(&plain, "api.example.test", &offering(json!([batch.clone()]))).unwrap_err().to_string();
        assert!(error.contains("set policy.channel_deposit"), "{error}");
        let channels = config("[policy]\nchannel_deposit = \"0.5\"\nnetworks = {\"eip155:8453\" = \"1\"}");
        let chosen = select(&channels, "api.example.test", &both).unwrap();
        assert_eq!((chosen.scheme, chosen.atomic), (SCHEME_BATCH, 2000));
        // A call dearer than a channel may hold is not paid over one.
        let small = config("[policy]\nchannel_deposit = \"0.001\"\nnetworks = {\"eip155:8453\" = \"1\"}");
        assert_eq!(select(&small, "api.example.test", &both).unwrap().scheme, SCHEME_EXACT);
        let mut solana = batch;
        solana["network"] = json!("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1");
        let error = select(&channels, "api.example.test", &offering(json!([solana]))).unwrap_err().to_string();
        assert!(error.contains("`batch-settlement` is paid on EVM networks only"), "{error}");
    }

    #[test]
    fn the_cheapest_allowed_offer_wins_and_approval_is_flagged() {
        let c = config(
            "[policy]\napprove_above = \"0.0015\"\nhosts = [\"mirror.example.test\", \"api.example.test\"]\n\
             networks = {\"eip155:8453\" = \"1\", \"eip155:137\" = \"1\"}",
        );
        let required =
            offering(json!([offer("eip155:8453", BASE_USDC, "2000"), offer("eip155:137", POLYGON_USDC, "1000")]));
        let chosen = select(&c, "mirror.example.test", &required).unwrap();
        assert_eq!(chosen.network, "eip155:137");
        assert!(!chosen.needs_approval);
        let required = offering(json!([offer("eip155:8453", BASE_USDC, "2000")]));
        assert!(select(&c, "API.example.test", &required).unwrap().needs_approval);
        // Once hosts are listed, the service's own host must be among them.
        let c = config("[policy]\nhosts = [\"mirror.example.test\"]\nnetworks = {\"eip155:8453\" = \"1\"}");
        assert_eq!(select(&c, "api.example.test", &required).unwrap_err(), Refusal::Host("api.example.test".into()));
    }
}
