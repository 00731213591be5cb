//! The address check's assessment (`precheck/1`): what [`super::contract`] read of an
//! address, scored on this check's table ([`SCORING`]) into the answer that
//! `chain/address_check.rs` serves and `chain/token_check.rs` builds on.
//!
//! The code that runs (the implementation's for a proxy) is scanned by
//! [`crate::evm::bytecode`]: SELFDESTRUCT, DELEGATECALL (a proxy's own DELEGATECALL is its
//! expected use and is not counted) and the selectors of owner powers. An upgrade key that
//! ends at an EOA is `upgradeable_single_key`. For an ERC-20 token the trade simulation's
//! buy and sell are judged: a sell that reverts after a working buy is a honeypot
//! (`sell_blocked`); the share of a quote that did not arrive is the buy or sell tax
//! (`trade_tax`, `high_trade_tax`).
//!
//! Each reason has the points of its code in [`SCORING`]; the score is their sum, capped
//! at 100. Verdict: `low` below [`super::CAUTION_FROM`], `caution` from it, `high` from
//! [`super::HIGH_FROM`]; `unknown` when the code that runs could not be checked (a proxy whose
//! implementation has no code or cannot be found). An address without code gets `low`
//! with one zero-point `externally_owned_account` reason.
//!
//! What this module must not do: read the chain (it is pure, unit-tested without one) or
//! use a route file.

use alloy::primitives::{Address, keccak256};
use schemars::JsonSchema;
use serde::Serialize;

use crate::evm::address_text;
use crate::evm::bytecode::{self, Power, Scan};
use crate::evm::trade_sim::{self, TradeOutcome, TradeSimulation};
use crate::risk::contract::{AccountKind, DELEGATION_PREFIX, Inspection, ProxyDetails, TokenDetails};
use crate::risk::{Reason, ScoreRule, Severity, Verdict, rank, rule};

/// The result schema identifier.
pub const SCHEMA: &str = "precheck/1";
/// A buy or sell tax above this many basis points is `trade_tax` (0.5%).
pub const TAX_NOTED_BPS: u64 = 50;
/// A buy or sell tax above this many basis points is `high_trade_tax` (10%).
pub const TAX_HIGH_BPS: u64 = 1_000;
/// A sell that keeps more than this many basis points of its quote is `sell_blocked` (90%).
pub const SELL_KEPT_BPS: u64 = 9_000;

/// The notice every address and token check answer carries.
pub const DISCLAIMER: &str = "Automated heuristic check, not an audit. Findings can be false positives; \
    a low verdict is not proof of safety. Strings read from the chain are untrusted data.";

/// The scoring table: every reason the address check gives. Score = min(100, sum of points).
pub const SCORING: &[ScoreRule] = &[
    rule(
        "upgradeable_single_key",
        Severity::High,
        50,
        "upgradeable proxy whose upgrade key ends at one externally owned account: one key can replace all the code",
    ),
    rule(
        "upgradeable_proxy",
        Severity::Medium,
        15,
        "upgradeable proxy whose admin is a contract (multisig, timelock; not inspected further) or is not found",
    ),
    rule(
        "implementation_not_found",
        Severity::Medium,
        20,
        "a proxy whose implementation has no code or cannot be read: the code that runs was not checked",
    ),
    rule("selfdestruct", Severity::High, 50, "the code contains SELFDESTRUCT"),
    rule(
        "delegatecall",
        Severity::Medium,
        15,
        "DELEGATECALL outside a recognised proxy: other code can run with this contract's storage and balance",
    ),
    rule("mint_function", Severity::Medium, 15, "a mint function: supply can be created (common in legitimate tokens)"),
    rule("blacklist_function", Severity::Medium, 25, "a blacklist function: chosen holders can be blocked"),
    rule("fee_setter", Severity::Medium, 25, "a fee or tax setter: transfer fees can be raised after purchase"),
    rule("pause_function", Severity::Low, 10, "a pause function: all transfers can be stopped"),
    rule(
        "eip7702_delegation",
        Severity::Medium,
        15,
        "an externally owned account whose code delegates to a contract (EIP-7702); the delegate is not scanned",
    ),
    rule(
        "sell_blocked",
        Severity::High,
        60,
        "honeypot: a simulated buy went through but selling the tokens back reverted or returned under 10% of the quote",
    ),
    rule(
        "buy_blocked",
        Severity::Medium,
        20,
        "a simulated buy through the token's pool reverted: trading is closed or restricted for new buyers",
    ),
    rule(
        "high_trade_tax",
        Severity::Medium,
        30,
        "a simulated buy or sell lost more than 10% to the token's transfer tax",
    ),
    rule("trade_tax", Severity::Low, 10, "a simulated buy or sell lost more than 0.5% (up to 10%) to a transfer tax"),
    rule(
        "externally_owned_account",
        Severity::Info,
        0,
        "no code: an externally owned account (a wallet), not risky by itself; not a contract if one was expected",
    ),
];

/// Source verification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Verification {
    /// `skipped` (no verifier is reachable).
    pub status: String,
    /// Why.
    pub reason: String,
}

/// What the code lets someone do, as far as the scan can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Capabilities {
    /// The address holds code.
    pub is_contract: bool,
    /// The code can be replaced (a recognised proxy).
    pub upgradeable: bool,
    /// A mint function.
    pub mint: bool,
    /// A blacklist function.
    pub blacklist: bool,
    /// A fee or tax setter.
    pub fee_setter: bool,
    /// A pause function.
    pub pause: bool,
    /// SELFDESTRUCT in the code that runs.
    pub selfdestruct: bool,
    /// DELEGATECALL in the code that runs (a proxy's own is not counted).
    pub delegatecall: bool,
}

/// A known selector the scan found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SelectorFound {
    /// 0x and 8 hex digits.
    pub selector: String,
    /// The signature it is known as.
    pub signature: String,
    /// `mint`, `blacklist`, `fee_setter` or `pause`.
    pub power: String,
}

/// The bytecode scan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DeepScan {
    /// A scan ran (false for accounts without code and proxies whose implementation has none).
    pub performed: bool,
    /// Address whose code was scanned (the implementation for a proxy), lower-case.
    pub scanned_address: Option<String>,
    /// Size of the scanned code in bytes.
    pub code_size: u64,
    /// keccak-256 of the scanned code.
    pub code_hash: Option<String>,
    /// Known selectors found.
    pub selectors: Vec<SelectorFound>,
}

/// A check that did not run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Skipped {
    /// `source_verification` or `trade_simulation`.
    pub check: String,
    /// Why it did not run.
    pub reason: String,
}

/// Answer of `/v1/check/address` (`precheck/1`).
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct AddressCheckOutput {
    /// Result schema identifier, `precheck/1`.
    #[schemars(extend("const" = "precheck/1"))]
    pub schema: String,
    /// The call succeeded.
    pub ok: bool,
    /// Chain checked.
    pub chain: String,
    /// Address checked, lower-case.
    pub address: String,
    /// `low`, `caution`, `high` or `unknown`.
    pub verdict: Verdict,
    /// Sum of the reasons' points, capped at 100.
    #[schemars(range(min = 0, max = 100))]
    pub risk_score: u32,
    /// Findings, highest points first.
    pub reasons: Vec<Reason>,
    /// Block number at which the check ran.
    pub checked_at_block: u64,
    /// Duration of the check in milliseconds.
    pub latency_ms: u64,
    /// Heuristic-not-an-audit notice.
    pub disclaimer: String,
    /// Proxy details.
    pub proxy: ProxyDetails,
    /// Source verification status.
    pub verification: Verification,
    /// Powers found in the code.
    pub capabilities: Capabilities,
    /// ERC-20 details; null for an address without code.
    pub token: Option<TokenDetails>,
    /// The bytecode scan.
    pub deep_scan: DeepScan,
    /// Checks that did not run, with why.
    pub skipped: Vec<Skipped>,
}

fn reason(code: &str, message: String) -> Reason {
    let rule = SCORING.iter().find(|r| r.code == code);
    Reason {
        code: code.to_string(),
        severity: rule.map_or(Severity::Info, |r| r.severity),
        points: rule.map_or(0, |r| r.points),
        message,
    }
}

fn power_name(power: Power) -> &'static str {
    match power {
        Power::Mint => "mint",
        Power::Blacklist => "blacklist",
        Power::FeeSetter => "fee_setter",
        Power::Pause => "pause",
    }
}

/// Turns what was read into the answer (pure: unit-tested without a chain).
pub fn assess(chain: &str, address: Address, inspection: Inspection, latency_ms: u64) -> AddressCheckOutput {
    let Inspection { block, code, proxy, implementation_code, mut token, trade } = inspection;
    let mut reasons = Vec::new();
    let mut capabilities = Capabilities { is_contract: !code.is_empty(), ..Default::default() };
    let mut deep_scan = DeepScan::default();
    let mut unknown = false;

    if code.is_empty() {
        reasons.push(reason(
            "externally_owned_account",
            "No code at this address: an externally owned account (a wallet), not risky by itself. If you \
                expected a token or contract here, this is not one."
                .into(),
        ));
    } else if let Some(delegate) = code.strip_prefix(&DELEGATION_PREFIX[..]).filter(|d| d.len() == 20) {
        reasons.push(reason(
            "eip7702_delegation",
            format!(
                "An externally owned account delegating its code to 0x{} (EIP-7702); calls to it run that code.",
                hex::encode(delegate)
            ),
        ));
    } else {
        let scanned = if proxy.is_proxy {
            capabilities.upgradeable = true;
            match (&proxy.admin_kind, &proxy.admin, &proxy.admin_owner) {
                (Some(AccountKind::Eoa), Some(admin), _) => reasons.push(reason(
                    "upgradeable_single_key",
                    format!("Upgradeable proxy whose admin {admin} is an externally owned account: one key can replace the code."),
                )),
                (Some(AccountKind::Contract), Some(admin), Some(owner)) => reasons.push(reason(
                    "upgradeable_single_key",
                    format!("Upgradeable proxy whose admin contract {admin} is owned by the externally owned account {owner}: one key can replace the code."),
                )),
                (_, Some(admin), _) => reasons.push(reason(
                    "upgradeable_proxy",
                    format!("Upgradeable proxy whose admin {admin} is a contract (a multisig or timelock is not inspected further)."),
                )),
                _ => reasons.push(reason(
                    "upgradeable_proxy",
                    "Upgradeable proxy whose upgrade key was not found (no admin slot, no owner()).".into(),
                )),
            }
            match (&implementation_code, &proxy.implementation) {
                (Some(implementation_code), Some(implementation)) => {
                    Some((implementation_code, implementation.clone()))
                }
                _ => {
                    unknown = true;
                    let which = proxy.implementation.clone().unwrap_or_else(|| "(not found)".into());
                    reasons.push(reason(
                        "implementation_not_found",
                        format!("Proxy implementation {which} has no code or could not be read: the code that runs was not checked."),
                    ));
                    None
                }
            }
        } else {
            Some((&code, address_text(&address)))
        };
        if let Some((scanned_code, scanned_address)) = scanned {
            let scan: Scan = bytecode::scan(scanned_code);
            deep_scan = DeepScan {
                performed: true,
                scanned_address: Some(scanned_address.clone()),
                code_size: scanned_code.len() as u64,
                code_hash: Some(format!("{}", keccak256(scanned_code))),
                selectors: scan
                    .selectors
                    .iter()
                    .map(|s| SelectorFound {
                        selector: format!("0x{:08x}", s.selector),
                        signature: s.signature.to_string(),
                        power: power_name(s.power).to_string(),
                    })
                    .collect(),
            };
            capabilities.selfdestruct = scan.selfdestruct;
            capabilities.delegatecall = scan.delegatecall;
            capabilities.mint = scan.has(Power::Mint);
            capabilities.blacklist = scan.has(Power::Blacklist);
            capabilities.fee_setter = scan.has(Power::FeeSetter);
            capabilities.pause = scan.has(Power::Pause);
            let at = if proxy.is_proxy { format!(" (implementation {scanned_address})") } else { String::new() };
            if scan.selfdestruct {
                reasons.push(reason("selfdestruct", format!("The code{at} contains SELFDESTRUCT.")));
            }
            if scan.delegatecall {
                reasons.push(reason(
                    "delegatecall",
                    format!("The code{at} uses DELEGATECALL outside a recognised proxy pattern."),
                ));
            }
            for (power, code) in [
                (Power::Mint, "mint_function"),
                (Power::Blacklist, "blacklist_function"),
                (Power::FeeSetter, "fee_setter"),
                (Power::Pause, "pause_function"),
            ] {
                let signatures: Vec<&str> =
                    scan.selectors.iter().filter(|s| s.power == power).map(|s| s.signature).collect();
                if !signatures.is_empty() {
                    reasons.push(reason(code, format!("The code{at} has {}.", signatures.join(", "))));
                }
            }
        }
    }

    let simulation_skipped = match (&mut token, trade) {
        (Some(details), Some(TradeOutcome::Ran(simulation))) if details.is_erc20 => {
            reasons.extend(trade_reasons(&simulation));
            details.simulation = Some(*simulation);
            None
        }
        (Some(details), Some(TradeOutcome::Skipped(reason))) if details.is_erc20 => Some(reason),
        (Some(details), _) if details.is_erc20 => Some(format!("no DEX router is known for the {chain} chain")),
        _ => Some("not an ERC-20 token".to_string()),
    };

    let risk_score = rank(&mut reasons);
    let verdict = if unknown { Verdict::Unknown } else { Verdict::from_score(risk_score) };
    let mut skipped = vec![Skipped {
        check: "source_verification".into(),
        reason: "no source verifier is reachable from this server".into(),
    }];
    if let Some(reason) = simulation_skipped {
        skipped.push(Skipped { check: "trade_simulation".into(), reason });
    }
    AddressCheckOutput {
        schema: SCHEMA.to_string(),
        ok: true,
        chain: chain.to_string(),
        address: address_text(&address),
        verdict,
        risk_score,
        reasons,
        checked_at_block: block,
        latency_ms,
        disclaimer: DISCLAIMER.to_string(),
        proxy,
        verification: Verification {
            status: "skipped".into(),
            reason: "no source verifier is reachable from this server".into(),
        },
        capabilities,
        token,
        deep_scan,
        skipped,
    }
}

/// The findings of a simulation that ran: a blocked trade, else the larger tax.
fn trade_reasons(simulation: &TradeSimulation) -> Vec<Reason> {
    let spent = &simulation.amount_in_wei;
    if !simulation.buy_ok {
        return vec![reason(
            "buy_blocked",
            format!("A simulated buy of the token for {spent} wei through its Uniswap V2 pool reverted."),
        )];
    }
    let mut reasons = Vec::new();
    let sell_kept = simulation.sell_tax_bps.filter(|bps| *bps > SELL_KEPT_BPS);
    match (simulation.sell_ok, sell_kept) {
        (Some(false), _) => reasons.push(reason(
            "sell_blocked",
            "Honeypot: a simulated buy went through but selling the tokens back through the same pool reverted.".into(),
        )),
        (Some(true), Some(bps)) => reasons.push(reason(
            "sell_blocked",
            format!(
                "Honeypot: a simulated buy went through but selling the tokens back kept {}% of the quoted ETH.",
                trade_sim::percent(bps)
            ),
        )),
        _ => {}
    }
    let taxes = [("buy", simulation.buy_tax_bps), ("sell", simulation.sell_tax_bps.filter(|_| sell_kept.is_none()))];
    let worst = taxes.iter().filter_map(|(_, bps)| *bps).max().unwrap_or(0);
    if worst > TAX_NOTED_BPS {
        let said: Vec<String> = taxes
            .iter()
            .filter_map(|(side, bps)| bps.map(|b| format!("{side} tax {}%", trade_sim::percent(b))))
            .collect();
        let code = if worst > TAX_HIGH_BPS { "high_trade_tax" } else { "trade_tax" };
        reasons.push(reason(code, format!("A simulated trade through Uniswap V2 measured {}.", said.join(", "))));
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::risk::HIGH_FROM;
    use crate::risk::contract::ProxyStandard;

    fn selector(sig: &str) -> [u8; 4] {
        <[u8; 4]>::try_from(&keccak256(sig)[..4]).unwrap()
    }

    #[test]
    fn scoring_table_is_consistent() {
        for (i, rule) in SCORING.iter().enumerate() {
            assert!(SCORING[..i].iter().all(|r| r.code != rule.code), "{} twice", rule.code);
            // A high-severity finding alone reaches the high verdict.
            assert_eq!(rule.severity == Severity::High, rule.points >= HIGH_FROM, "{}", rule.code);
        }
        let single_key = SCORING.iter().find(|r| r.code == "upgradeable_single_key").unwrap();
        assert_eq!(single_key.severity, Severity::High);
    }

    #[test]
    fn eoa_is_low_with_an_info_reason() {
        let out = assess("base", Address::repeat_byte(1), Inspection { block: 7, ..Default::default() }, 3);
        assert_eq!(out.verdict, Verdict::Low);
        assert_eq!(out.risk_score, 0);
        assert_eq!(out.reasons.len(), 1);
        assert_eq!(out.reasons[0].code, "externally_owned_account");
        assert!(!out.capabilities.is_contract && out.token.is_none() && !out.deep_scan.performed);
    }

    #[test]
    fn score_is_capped_and_sets_the_verdict() {
        // SELFDESTRUCT, DELEGATECALL and every power: far above 100 points.
        let mut code = vec![0xff, 0xf4];
        for sig in ["mint(address,uint256)", "blacklist(address)", "setFee(uint256)", "pause()"] {
            code.push(0x63);
            code.extend_from_slice(&selector(sig));
        }
        let inspection = Inspection { code: code.into(), ..Default::default() };
        let out = assess("ethereum", Address::repeat_byte(2), inspection, 0);
        assert_eq!(out.risk_score, 100);
        assert_eq!(out.verdict, Verdict::High);
        assert_eq!(out.reasons.len(), 6);
        assert_eq!(out.reasons[0].code, "selfdestruct");
    }

    #[test]
    fn proxy_without_implementation_code_is_unknown() {
        let proxy = ProxyDetails {
            is_proxy: true,
            standard: Some(ProxyStandard::Eip1967),
            implementation: Some(address_text(&Address::repeat_byte(3))),
            admin: None,
            ..Default::default()
        };
        let inspection = Inspection { code: vec![0xf4].into(), proxy, ..Default::default() };
        let out = assess("ethereum", Address::repeat_byte(2), inspection, 0);
        assert_eq!(out.verdict, Verdict::Unknown);
        let codes: Vec<&str> = out.reasons.iter().map(|r| r.code.as_str()).collect();
        assert_eq!(codes, vec!["implementation_not_found", "upgradeable_proxy"]);
        assert!(!out.capabilities.delegatecall);
    }

    fn token_with(trade: TradeOutcome) -> Inspection {
        let token = TokenDetails { is_erc20: true, name: None, symbol: None, decimals: Some(18), simulation: None };
        Inspection { code: vec![0x00].into(), token: Some(token), trade: Some(trade), ..Default::default() }
    }

    fn simulation(buy_bps: Option<u64>, sell_ok: Option<bool>, sell_bps: Option<u64>) -> TradeSimulation {
        TradeSimulation {
            dex: "uniswap_v2".into(),
            router: "0x01".into(),
            pair: "0x02".into(),
            weth: "0x03".into(),
            pool_weth_wei: "1".into(),
            pool_token_raw: "1".into(),
            amount_in_wei: "10000000000000000".into(),
            buy_ok: buy_bps.is_some(),
            buy_expected_raw: "1000".into(),
            buy_received_raw: "1000".into(),
            buy_tax_percent: buy_bps.map(trade_sim::percent),
            buy_gas: 1,
            sell_ok,
            sell_expected_wei: None,
            sell_received_wei: None,
            sell_tax_percent: sell_bps.map(trade_sim::percent),
            sell_gas: None,
            buy_tax_bps: buy_bps,
            sell_tax_bps: sell_bps,
        }
    }

    #[test]
    fn trade_findings_follow_the_simulation() {
        let run = |sim: TradeSimulation| {
            let out = assess("ethereum", Address::repeat_byte(4), token_with(TradeOutcome::Ran(Box::new(sim))), 0);
            assert!(out.skipped.iter().all(|s| s.check != "trade_simulation"));
            assert!(out.token.as_ref().unwrap().simulation.is_some());
            (out.reasons.iter().map(|r| r.code.clone()).collect::<Vec<_>>(), out.verdict)
        };
        assert_eq!(run(simulation(Some(0), Some(true), Some(0))), (vec![], Verdict::Low));
        // At 0.5% exactly, nothing; just above, a tax.
        assert_eq!(run(simulation(Some(50), Some(true), Some(50))), (vec![], Verdict::Low));
        assert_eq!(run(simulation(Some(51), Some(true), Some(0))), (vec!["trade_tax".into()], Verdict::Low));
        assert_eq!(run(simulation(Some(0), Some(true), Some(1001))), (vec!["high_trade_tax".into()], Verdict::Caution));
        assert_eq!(
            run(simulation(Some(300), Some(false), None)),
            (vec!["sell_blocked".into(), "trade_tax".into()], Verdict::High)
        );
        // Selling keeps over 90% of the quote: a honeypot too, and not also a tax.
        assert_eq!(run(simulation(Some(0), Some(true), Some(9500))), (vec!["sell_blocked".into()], Verdict::High));
        assert_eq!(run(simulation(None, None, None)), (vec!["buy_blocked".into()], Verdict::Caution));
    }

    #[test]
    fn a_simulation_that_did_not_run_is_skipped_with_its_reason() {
        let out = assess("base", Address::repeat_byte(5), token_with(TradeOutcome::Skipped("no pool".into())), 0);
        assert_eq!(out.skipped[1], Skipped { check: "trade_simulation".into(), reason: "no pool".into() });
        let no_dex = Inspection { trade: None, ..token_with(TradeOutcome::Skipped(String::new())) };
        let out = assess("polygon", Address::repeat_byte(5), no_dex, 0);
        assert_eq!(out.skipped[1].reason, "no DEX router is known for the polygon chain");
        assert!(out.reasons.is_empty());
    }

    #[test]
    fn eip7702_delegation_is_reported() {
        let code = [&DELEGATION_PREFIX[..], &[0x11; 20]].concat();
        let out = assess("base", Address::repeat_byte(2), Inspection { code: code.into(), ..Default::default() }, 0);
        assert_eq!(out.reasons[0].code, "eip7702_delegation");
        assert_eq!(out.verdict, Verdict::Low);
    }
}
