//! The brands the URL check knows (wallets, exchanges, DeFi apps, NFT markets, explorers
//! and a few general brands) with their official domains, and the lookups over them: the
//! brand whose official domain a host is under, the brand named in a user name or path,
//! and the drainer words of a host once brand names are set aside.
//!
//! What this module must not do: score or word findings (that is the route's), or use a
//! route file.

use super::letters::words;
use super::{CONTEXT_WORDS, DRAINER_WORDS, RISKY_TLDS, registrable, under};

/// How a brand's name is matched in other domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BrandMatch {
    /// A coined name (`metamask`): found inside labels, and its look-alikes are flagged
    /// (one edit away, for names of 6 letters or more).
    Coined,
    /// An everyday word (`safe`, `base`, `ledger`): flagged only as a whole label or
    /// hyphen-separated word of a host that also has a wallet or drainer word, a risky TLD
    /// or a free hosting suffix, or when spelled with look-alike Unicode letters.
    Word,
}

/// One brand: its display name, the names matched in hosts, its official domains, and
/// whether its name on any country TLD (not a risky one) is taken as its own.
#[derive(Clone, Copy, Debug)]
pub struct Brand {
    /// Display name.
    pub name: &'static str,
    /// Lower-case names matched in hosts.
    pub keys: &'static [&'static str],
    /// How the keys are matched.
    pub matching: BrandMatch,
    /// Official registrable domains (their subdomains are official too).
    pub official: &'static [&'static str],
    /// `name.<ccTLD>` (and `name.co.<cc>`, `name.com.<cc>`) is the brand's own.
    pub country_domains: bool,
}

const fn brand(
    name: &'static str,
    keys: &'static [&'static str],
    matching: BrandMatch,
    official: &'static [&'static str],
) -> Brand {
    Brand { name, keys, matching, official, country_domains: false }
}

const fn global_brand(
    name: &'static str,
    keys: &'static [&'static str],
    matching: BrandMatch,
    official: &'static [&'static str],
) -> Brand {
    Brand { name, keys, matching, official, country_domains: true }
}

use BrandMatch::{Coined, Word};

/// The brands recognised, with their official domains. Written by hand; a domain is
/// listed only where it is the brand's well-known address.
pub const BRANDS: &[Brand] = &[
    // Wallets.
    brand("MetaMask", &["metamask"], Coined, &["metamask.io", "metamask.github.io"]),
    brand("Ledger", &["ledger"], Word, &["ledger.com"]),
    brand("Trezor", &["trezor"], Coined, &["trezor.io"]),
    brand("Phantom", &["phantom"], Word, &["phantom.app"]),
    brand("Rainbow", &["rainbow"], Word, &["rainbow.me"]),
    brand("WalletConnect", &["walletconnect"], Coined, &["walletconnect.com", "walletconnect.org", "reown.com"]),
    brand("Trust Wallet", &["trustwallet"], Coined, &["trustwallet.com"]),
    brand("MyEtherWallet", &["myetherwallet"], Coined, &["myetherwallet.com"]),
    brand("Rabby", &["rabby"], Coined, &["rabby.io"]),
    brand("Safe", &["safe"], Word, &["safe.global", "gnosis-safe.io"]),
    // Exchanges.
    brand("Coinbase", &["coinbase"], Coined, &["coinbase.com"]),
    brand("Binance", &["binance"], Coined, &["binance.com", "binance.us", "bnbchain.org"]),
    brand("Kraken", &["kraken"], Word, &["kraken.com"]),
    brand("KuCoin", &["kucoin"], Coined, &["kucoin.com"]),
    brand("OKX", &["okx"], Coined, &["okx.com"]),
    brand("Bybit", &["bybit"], Coined, &["bybit.com"]),
    brand("Bitget", &["bitget"], Coined, &["bitget.com"]),
    // DeFi apps and networks.
    brand("Uniswap", &["uniswap"], Coined, &["uniswap.org"]),
    brand("PancakeSwap", &["pancakeswap"], Coined, &["pancakeswap.finance"]),
    brand("SushiSwap", &["sushiswap"], Coined, &["sushi.com"]),
    brand("1inch", &["1inch"], Coined, &["1inch.io"]),
    brand("Lido", &["lido"], Word, &["lido.fi"]),
    brand("Aave", &["aave"], Coined, &["aave.com"]),
    brand("Curve", &["curve"], Word, &["curve.fi", "curve.finance"]),
    brand("LayerZero", &["layerzero"], Coined, &["layerzero.network"]),
    brand("EigenLayer", &["eigenlayer"], Coined, &["eigenlayer.xyz"]),
    brand("DeBank", &["debank"], Coined, &["debank.com"]),
    brand("Revoke.cash", &["revokecash"], Coined, &["revoke.cash"]),
    brand("Arbitrum", &["arbitrum"], Coined, &["arbitrum.io", "arbitrum.foundation"]),
    brand("Optimism", &["optimism"], Word, &["optimism.io"]),
    brand("Base", &["base"], Word, &["base.org"]),
    brand("Polygon", &["polygon"], Word, &["polygon.technology"]),
    brand("Ethereum", &["ethereum"], Word, &["ethereum.org"]),
    // NFT markets.
    brand("OpenSea", &["opensea"], Coined, &["opensea.io"]),
    brand("Blur", &["blur"], Word, &["blur.io"]),
    brand("Magic Eden", &["magiceden"], Coined, &["magiceden.io"]),
    // Explorers.
    brand("Etherscan", &["etherscan"], Coined, &["etherscan.io"]),
    brand("BaseScan", &["basescan"], Coined, &["basescan.org"]),
    brand("PolygonScan", &["polygonscan"], Coined, &["polygonscan.com"]),
    brand("Arbiscan", &["arbiscan"], Coined, &["arbiscan.io"]),
    brand("BscScan", &["bscscan"], Coined, &["bscscan.com"]),
    // General brands.
    global_brand("Google", &["google"], Coined, &["google.com"]),
    brand("Apple", &["apple", "icloud"], Word, &["apple.com", "icloud.com"]),
    brand("GitHub", &["github"], Coined, &["github.com"]),
    global_brand("PayPal", &["paypal"], Coined, &["paypal.com", "paypal.me"]),
    brand("Microsoft", &["microsoft"], Coined, &["microsoft.com", "live.com", "office.com", "microsoftonline.com"]),
    global_brand("Amazon", &["amazon"], Word, &["amazon.com"]),
];

/// Ordinary words one edit from a brand's name, never taken for a look-alike.
pub(crate) const NEAR_MISS_WORDS: &[&str] = &["finance", "tresor", "paypay", "goggles", "kraker"];

/// The brand whose official domain `host` is or is under.
pub(crate) fn official_brand(host: &str) -> Option<(&'static Brand, &str)> {
    for brand in BRANDS {
        if let Some(domain) = under(host, brand.official) {
            return Some((brand, domain));
        }
        if brand.country_domains {
            let registrable = registrable(host);
            let (label, suffix) = registrable.split_once('.').unwrap_or((registrable, ""));
            let tld = suffix.rsplit('.').next().unwrap_or_default();
            let second = suffix.split('.').next().unwrap_or_default();
            let country = tld.len() == 2
                && !RISKY_TLDS.contains(&tld)
                && (suffix == tld || (suffix.matches('.').count() == 1 && matches!(second, "co" | "com")));
            if brand.keys.contains(&label) && country {
                return Some((brand, registrable));
            }
        }
    }
    None
}

pub(crate) fn is_context_word(word: &str) -> bool {
    CONTEXT_WORDS.contains(&word) || DRAINER_WORDS.contains(&word)
}

/// Drainer words in a host's labels: whole hyphen-separated words, or inside a label for
/// words of five letters or more (`claimportal`).
pub(crate) fn host_drainer_words(labels: &[&str]) -> Vec<&'static str> {
    let mut found = Vec::new();
    for label in labels {
        // A brand's own name is not a drainer word (`walletconnect`).
        let mut label = label.to_string();
        for key in BRANDS.iter().flat_map(|b| b.keys).filter(|k| k.len() >= 5) {
            label = label.replace(key, "-");
        }
        for word in DRAINER_WORDS {
            let hit = label.split('-').any(|part| part == *word)
                || (word.len() >= 5 && label.contains(word))
                || (*word == "connectwallet" && label.contains("connect") && label.contains("wallet"));
            if hit && !found.contains(word) {
                found.push(*word);
            }
        }
    }
    found
}

/// Brands whose names are everywhere in ordinary paths and queries.
const GENERAL_BRANDS: &[&str] = &["Google", "Apple", "GitHub", "PayPal", "Microsoft", "Amazon"];

/// Whether `text` names `domain` (not as the end of a longer name: `database.org` does not
/// name `base.org`).
fn mentions_domain(text: &str, domain: &str) -> bool {
    text.match_indices(domain).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + domain.len()..].chars().next();
        let joins = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-');
        !joins(before) && !joins(after)
    })
}

/// Brands named in text that is not the host (a user name; a path, where the general
/// brands are not looked for).
pub(crate) fn brand_named_in(text: &str, general: bool) -> Option<(&'static Brand, String)> {
    let lower = text.to_ascii_lowercase();
    let brands = || BRANDS.iter().filter(move |b| general || !GENERAL_BRANDS.contains(&b.name));
    for brand in brands() {
        if let Some(domain) = brand.official.iter().find(|d| mentions_domain(&lower, d)) {
            return Some((brand, (*domain).to_string()));
        }
    }
    let words = words(&lower);
    for brand in brands().filter(|b| b.matching == Coined) {
        if let Some(key) = brand.keys.iter().find(|k| words.iter().any(|w| w == *k || (k.len() >= 5 && w.contains(*k))))
        {
            return Some((brand, (*key).to_string()));
        }
    }
    None
}
