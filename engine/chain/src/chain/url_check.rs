//! `POST /v1/check/url`: one URL judged from its text alone, as a wallet's phishing
//! warning would judge it before a person opens it or connects a wallet. Nothing is
//! fetched and no name is resolved: the route is a pure function of the URL.
//!
//! The URL is parsed as a browser parses it (WHATWG rules, the `url` crate), so the host
//! judged is the one a browser would visit: `https://metamask.io@evil.com` goes to
//! `evil.com`, `http://3232235777/` to `192.168.1.1`, `https://evil.com\@metamask.io` to
//! `evil.com`. A URL without a scheme is read as `https://` and the answer says so.
//! `javascript:`, `vbscript:` and `data:` URLs are judged (high risk), not refused; other
//! schemes get only the checks that apply to them.
//!
//! What is checked, each finding a reason with a code and points from [`SCORING`]:
//! - the host and each parent domain against the bundled phishing/drainer list
//!   (`engine/data/phishing-domains.txt`, its date in `list_date`);
//! - brands: a table of well-known wallets, exchanges, DeFi apps, NFT markets, explorers
//!   and a few general brands with their official domains ([`BRANDS`]). A host on an
//!   official domain (or under one) is said to be official. Otherwise the host's labels
//!   are compared with the brand names: the name inside another domain
//!   (`metamask-wallet.io`, `uniswap.claim-airdrop.com`), the name on another TLD
//!   (`uniswap.app`), and look-alikes: digits and letter pairs that pass for letters
//!   (`un1swap`, `rnetamask`, `0pensea`), a letter changed, added, dropped or swapped,
//!   an official domain with a hyphen for its dot (`lido-fi.org`), and Unicode confusables (Cyrillic, Greek, Armenian letters and accented
//!   Latin ones that look like plain Latin letters: the skeleton idea of Unicode TR39,
//!   with a hand-written map of the letters that matter);
//! - IDNs: punycode labels decoded for display, labels mixing scripts, and labels written
//!   wholly in another script's look-alikes of Latin letters;
//! - the URL's form: credentials before the host, a decoy host after a backslash, IP
//!   literals (and the integer, hex and octal forms browsers still accept), non-standard
//!   ports, plain `http`;
//! - risky TLDs, URL shorteners (the destination is hidden) and free hosting platforms
//!   where anyone gets a subdomain or a page;
//! - words drainer sites use (`claim`, `airdrop`, `connect-wallet`, `rectify`, `migrate`…)
//!   in the host or path, at low weight.
//!
//! The registrable domain is found with a small hand-written list of multi-label public
//! suffixes (`co.uk`, `com.br`…) plus the hosting platforms of [`FREE_HOSTING`], which act
//! as suffixes as in the Public Suffix List's private section; every other host's suffix
//! is its last label. A clean verdict is not a guarantee: a new phishing domain with no
//! brand in its name and an ordinary TLD looks like any other site.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;
use url::{Host, Url};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::chain::address_check::{Reason, ScoreRule, Severity, Verdict, rank, reason_from, rule};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::clean_text;
use crate::output::Reply;
use crate::price::Price;

/// Longest URL read, in characters.
pub const MAX_URL_CHARS: usize = 8 * 1024;
/// Longest URL echoed in the answer, in characters.
pub const MAX_URL_SHOWN: usize = 2_048;
/// Most characters of the path and query searched for words.
const MAX_PATH_SCANNED: usize = 4_096;

/// The bundled phishing/drainer domain list.
const PHISHING_LIST: &str = include_str!("../../../data/phishing-domains.txt");
/// The list's date (its `# list-date:` line says the same; a test checks).
pub const LIST_DATE: &str = "2026-11-26";

const DISCLAIMER: &str = "Judged from the URL's text alone: the page was not fetched and the name was not resolved. \
    A low verdict is not proof of safety; new phishing domains appear every day.";

/// The scoring table: every reason this route gives. Score = min(100, sum of points).
pub const SCORING: &[ScoreRule] = &[
    rule(
        "known_phishing_domain",
        Severity::High,
        100,
        "the host or a parent domain is on the bundled phishing and wallet-drainer list",
    ),
    rule(
        "dangerous_scheme",
        Severity::High,
        80,
        "a javascript:, vbscript: or data: URL: it runs code or carries a whole page in the link itself",
    ),
    rule(
        "homoglyph_domain",
        Severity::High,
        70,
        "the host spells a brand with look-alike Unicode letters (Cyrillic, Greek, accented): an IDN homograph",
    ),
    rule(
        "lookalike_domain",
        Severity::High,
        60,
        "the host imitates a brand's name: a typo, swapped or doubled letters, or digits and letter pairs that pass for letters",
    ),
    rule(
        "brand_in_domain",
        Severity::High,
        50,
        "a brand's name inside a domain that is not the brand's (a subdomain, a compound name, a free hosting page)",
    ),
    rule("brand_other_tld", Severity::High, 50, "the brand's name on a top-level domain the brand does not use"),
    rule(
        "credentials_in_url",
        Severity::High,
        50,
        "a user name or password before the host (`https://trusted.site@evil.example`): the part before @ is not where the link goes",
    ),
    rule(
        "disguised_host",
        Severity::High,
        50,
        "a backslash ends the host early (`https://evil.example\\@trusted.site`): the name after the @ is not where the link goes",
    ),
    rule(
        "obfuscated_ip",
        Severity::High,
        50,
        "an IP address written as an integer, in hex or in octal: a form only used to hide where a link goes",
    ),
    rule(
        "not_a_link",
        Severity::Medium,
        30,
        "text a browser would not open as a link (no host, a host with spaces or characters no domain has): a mangled or disguised link",
    ),
    rule("ip_address_host", Severity::Medium, 30, "the host is a bare IP address, not a name"),
    rule(
        "mixed_script",
        Severity::Medium,
        30,
        "a label mixes letters of several scripts (Latin with Cyrillic, Greek…), which legitimate names do not do",
    ),
    rule(
        "confusable_label",
        Severity::Medium,
        30,
        "a label written entirely in non-Latin letters that look like Latin ones: it reads as a Latin word it is not",
    ),
    rule(
        "free_hosting",
        Severity::Medium,
        20,
        "a page on a platform where anyone can publish (a free subdomain, user pages, an IPFS gateway)",
    ),
    rule("url_shortener", Severity::Medium, 20, "a URL shortener: the destination is hidden until the link is opened"),
    rule("risky_tld", Severity::Low, 15, "a top-level domain much used for throwaway phishing sites"),
    rule("punycode_domain", Severity::Low, 10, "an internationalised (punycode `xn--`) domain: check how it displays"),
    rule("non_standard_port", Severity::Low, 10, "a port other than the scheme's usual one"),
    rule("plain_http", Severity::Low, 10, "plain http: the page and what is typed into it travel unencrypted"),
    rule(
        "drainer_keywords",
        Severity::Low,
        10,
        "words wallet-drainer sites use (claim, airdrop, connect wallet, rectify, migrate…) in the host or path",
    ),
    rule(
        "brand_in_path",
        Severity::Low,
        10,
        "a brand's name or domain in the path or query of a site that is not the brand's",
    ),
    rule(
        "unusual_scheme",
        Severity::Low,
        10,
        "not a web link (http or https): only the checks that apply to it were made",
    ),
    rule("official_domain", Severity::Info, 0, "the host is one of the brand's official domains or a subdomain of one"),
    rule("scheme_assumed", Severity::Info, 0, "the input had no scheme; it was read as https"),
];

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
const NEAR_MISS_WORDS: &[&str] = &["finance", "tresor", "paypay", "goggles", "kraker"];

/// Multi-label public suffixes (ICANN section), written by hand: the common second-level
/// registries of country TLDs. Any other host's public suffix is its last label.
#[rustfmt::skip]
const MULTI_LABEL_SUFFIXES: &[&str] = &[
    "co.uk", "org.uk", "me.uk", "ltd.uk", "plc.uk", "net.uk", "ac.uk", "gov.uk", "nhs.uk", "sch.uk", "police.uk",
    "com.au", "net.au", "org.au", "edu.au", "gov.au", "asn.au", "id.au", "co.nz", "org.nz", "net.nz", "ac.nz",
    "govt.nz", "co.jp", "ne.jp", "or.jp", "ac.jp", "go.jp", "gr.jp", "ed.jp", "co.kr", "or.kr", "ne.kr", "go.kr",
    "ac.kr", "com.br", "net.br", "org.br", "gov.br", "edu.br", "com.ar", "com.mx", "org.mx", "gob.mx", "co.in",
    "net.in", "org.in", "gov.in", "ac.in", "firm.in", "co.za", "org.za", "gov.za", "ac.za", "com.cn", "net.cn",
    "org.cn", "gov.cn", "edu.cn", "com.hk", "org.hk", "edu.hk", "gov.hk", "com.tw", "org.tw", "edu.tw", "com.sg",
    "edu.sg", "gov.sg", "com.my", "co.id", "or.id", "go.id", "ac.id", "co.th", "in.th", "ac.th", "go.th", "com.tr",
    "org.tr", "gov.tr", "edu.tr", "co.il", "org.il", "ac.il", "gov.il", "com.ua", "org.ua", "com.ng", "com.eg",
    "com.pk", "com.ph", "com.vn", "com.sa", "com.co", "com.pe", "com.ve", "com.uy", "com.es", "com.pl", "co.ke",
    "eu.org",
];

/// Platforms where anyone can publish: a host under one of them is a user's page (they
/// act as public suffixes for the registrable domain); a host equal to one serves
/// users' pages by path (`sites.google.com/view/…`, `ipfs.io/ipfs/…`).
#[rustfmt::skip]
pub const FREE_HOSTING: &[&str] = &[
    "vercel.app", "netlify.app", "netlify.com", "pages.dev", "workers.dev", "github.io", "gitlab.io", "web.app",
    "firebaseapp.com", "herokuapp.com", "glitch.me", "repl.co", "replit.app", "replit.dev", "onrender.com", "fly.dev",
    "azurewebsites.net", "appspot.com", "blogspot.com", "wixsite.com", "weebly.com", "webflow.io", "framer.app",
    "framer.website", "gitbook.io", "notion.site", "carrd.co", "surge.sh", "ngrok.io", "ngrok.app", "ngrok-free.app",
    "trycloudflare.com", "000webhostapp.com", "wordpress.com", "godaddysites.com", "square.site", "r2.dev",
    "githubusercontent.com", "sites.google.com", "docs.google.com", "forms.gle", "storage.googleapis.com",
    "firebasestorage.googleapis.com", "ipfs.io", "dweb.link", "cloudflare-ipfs.com", "w3s.link", "nftstorage.link",
    "gateway.pinata.cloud", "mypinata.cloud", "on-fleek.app", "fleek.co", "4everland.io", "myfilebase.com",
];

/// URL shorteners: the link does not say where it goes.
#[rustfmt::skip]
pub const SHORTENERS: &[&str] = &[
    "bit.ly", "t.co", "tinyurl.com", "goo.gl", "ow.ly", "is.gd", "v.gd", "buff.ly", "rebrand.ly", "cutt.ly",
    "shorturl.at", "t.ly", "tiny.cc", "rb.gy", "bit.do", "s.id", "lnkd.in", "shorte.st", "adf.ly", "bl.ink",
    "tiny.one", "qr.ae", "surl.li", "clck.ru", "u.to",
];

/// Top-level domains much used for throwaway phishing sites, hand-picked (cheap or free
/// registration, frequent in public phishing and drainer reports; not computed from a data set).
#[rustfmt::skip]
pub const RISKY_TLDS: &[&str] = &[
    "zip", "mov", "xyz", "top", "click", "gq", "tk", "ml", "cf", "ga", "work", "support", "country", "kim", "cam",
    "rest", "icu", "buzz", "cyou", "cfd", "sbs", "bond", "monster", "quest", "bar", "casa", "fit", "live", "site",
    "online", "fun", "best", "lol", "mom", "beauty", "hair", "skin", "makeup", "autos", "boats", "yachts", "homes",
    "motorcycles", "shop", "pw", "ws", "cc",
];

/// Words drainer and phishing sites put in hosts and paths.
#[rustfmt::skip]
const DRAINER_WORDS: &[&str] = &[
    "airdrop", "airdrops", "claim", "claims", "connectwallet", "validate", "validation", "sync", "rectify",
    "rectification", "migrate", "migration", "revoke", "restore", "recovery", "seedphrase", "mnemonic", "privatekey",
    "eligibility", "eligible", "giveaway", "whitelist", "allowlist", "presale", "bonus", "reward", "rewards",
    "unlock", "unstake", "dapp", "dapps", "wallet", "drop",
];

/// Words that, beside an everyday brand word in a host, make it a wallet or drainer site.
#[rustfmt::skip]
const CONTEXT_WORDS: &[&str] = &[
    "app", "live", "swap", "defi", "nft", "nfts", "token", "tokens", "crypto", "web3", "bridge", "stake", "staking",
    "official", "support", "secure", "security", "verify", "login", "signin", "connect", "mint", "finance", "exchange",
    "portal", "help", "desk", "auth", "account", "vault", "chain", "network", "eth", "coin", "pay",
];

/// Schemes recognised as such when the input has no `//` after them.
#[rustfmt::skip]
const KNOWN_SCHEMES: &[&str] = &[
    "http", "https", "javascript", "vbscript", "data", "blob", "file", "ftp", "ws", "wss", "mailto", "tel", "sms",
    "ipfs", "ipns", "about", "chrome", "intent", "ethereum", "wc",
];

/// Schemes that run code or carry a page in the link.
const DANGEROUS_SCHEMES: &[&str] = &["javascript", "vbscript", "data"];

/// Request of `/v1/check/url`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UrlCheckInput {
    /// The URL to judge, as received (a link in a message, a site asking to connect a wallet). At most 8,192 characters. Without a scheme it is read as `https://`. Text a browser would not open as a link is judged too (`not_a_link`). Nothing is fetched.
    #[schemars(length(min = 1, max = MAX_URL_CHARS), regex(pattern = crate::patterns::NOT_BLANK))]
    pub url: String,
}

/// What the host is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostKind {
    /// A domain name.
    Domain,
    /// An IPv4 address.
    Ipv4,
    /// An IPv6 address.
    Ipv6,
    /// No host (`javascript:`, `data:`, `mailto:`).
    None,
}

/// Answer of `/v1/check/url`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UrlCheckOutput {
    /// The URL as a browser reads it (WHATWG parsing: lower-case scheme and host, punycode host, default port dropped), any password replaced by `***`; cut to 2,048 characters.
    pub url: String,
    /// The scheme, lower-case (`https`, `http`, `javascript`…).
    pub scheme: String,
    /// Whether the input had no scheme and was read as `https://`.
    pub scheme_assumed: bool,
    /// The host a browser would connect to: ASCII, internationalised labels in punycode (`xn--`), IP addresses in standard form; null without a host.
    pub host: Option<String>,
    /// The same host in Unicode, as a browser may display it; untrusted text, with invisible and control characters written as `\u{…}`; null without a host.
    pub host_unicode: Option<String>,
    /// `domain`, `ipv4`, `ipv6` or `none`.
    pub host_kind: HostKind,
    /// The registrable domain (the label before the public suffix, with the suffix), from the bundled suffix list; null for IP addresses and URLs without a host.
    pub registrable_domain: Option<String>,
    /// The brand the host belongs to (`official`) or imitates; null when none is recognised.
    pub brand: Option<String>,
    /// Whether the host is one of the brand's official domains or under one.
    pub official: bool,
    /// The brand's official domains when the URL imitates it: where the real one is.
    pub official_domains: Vec<String>,
    /// The findings, most serious first.
    pub reasons: Vec<Reason>,
    /// Sum of the reasons' points, capped at 100.
    #[schemars(range(min = 0, max = 100))]
    pub risk_score: u32,
    /// `low` below 20, `caution` from 20, `high` from 50.
    pub verdict: Verdict,
    /// Date of the bundled phishing-domain list (YYYY-MM-DD).
    pub list_date: String,
    /// Domains on that list.
    pub list_entries: u64,
    /// What this check does not do.
    pub disclaimer: String,
}

/// A checked request: a link, or text no browser opens as one.
pub enum UrlCheckRequest {
    /// Parsed as a browser parses it.
    Link(Link),
    /// Why a browser would not open the text, and the text.
    NotALink { text: String, scheme: String, scheme_assumed: bool, why: String },
}

/// A URL as a browser reads it.
pub struct Link {
    url: Url,
    scheme_assumed: bool,
    /// The host as written in the input (before the URL standard rewrote it).
    raw_host: Option<String>,
    /// What follows a backslash and an `@` right after the host (`https://evil.example\@trusted.site`).
    behind_backslash: Option<String>,
}

/// The route.
pub struct UrlCheckRoute;

impl Route for UrlCheckRoute {
    type Input = UrlCheckInput;
    type Prepared = UrlCheckRequest;
    type Output = UrlCheckOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/check/url",
        operation: "check_url",
        family: Family::Chain,
        summary: "Judge one URL for phishing without fetching it: look-alike brands, punycode, risky TLDs, known drainer domains",
        description: "Judges one URL from its text alone, as a wallet's phishing warning would: the host and its \
            parents against a bundled phishing and drainer domain list (with its date); well-known wallet, exchange, \
            DeFi, NFT and general brands, naming the brand of an official domain and flagging its name inside other \
            domains, on other TLDs and its look-alikes (typos, digits for letters, `rn` for `m`, Cyrillic and Greek \
            homoglyphs in punycode domains); labels mixing scripts; credentials before the host and decoy hosts \
            after a backslash; IP addresses, \
            including integer and hex forms; non-standard ports; plain http; risky TLDs; URL shorteners; free \
            hosting platforms; drainer words (claim, airdrop, connect wallet). javascript: and data: URLs are judged \
            high risk. Answers the host in ASCII and Unicode, the registrable domain, the reasons with their points, \
            a 0-100 score and a verdict. Nothing is fetched or resolved; a low verdict is not proof of safety.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: UrlCheckInput, _: &Context) -> Result<UrlCheckRequest, EngineError> {
        parse_input(&input.url)
    }

    fn quote(_: &UrlCheckRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: UrlCheckRequest, _: &Context) -> Result<Reply<UrlCheckOutput>, EngineError> {
        Ok(Reply::Json(judge(&request)))
    }
}

fn invalid(why: impl std::fmt::Display) -> EngineError {
    EngineError::invalid("/url", format!("/url: {why}"))
}

/// Checks and parses the input as a browser would, `https://` first when it has no scheme.
/// Only an input that is too long or blank is refused: text a browser would not open as a
/// link is judged as such.
pub fn parse_input(input: &str) -> Result<UrlCheckRequest, EngineError> {
    let chars = input.chars().count();
    if chars > MAX_URL_CHARS {
        return Err(invalid(format!("{chars} characters, more than the limit of {MAX_URL_CHARS}")));
    }
    if input.chars().all(char::is_whitespace) {
        return Err(invalid("blank; give a URL such as https://example.com/"));
    }
    // The URL standard drops leading and trailing spaces and control characters too.
    let text = input.trim_matches(|c: char| c.is_whitespace() || c.is_control());
    let scheme_assumed = !has_scheme(text);
    let not_a_link = |why: &str| {
        let scheme =
            if scheme_assumed { "https".to_string() } else { text[..text.find(':').unwrap_or(0)].to_ascii_lowercase() };
        Ok(UrlCheckRequest::NotALink { text: text.to_string(), scheme, scheme_assumed, why: why.to_string() })
    };
    if text.is_empty() {
        return not_a_link("it is nothing but control characters");
    }
    let full = if !scheme_assumed {
        text.to_string()
    } else if let Some(rest) = text.strip_prefix("//") {
        format!("https://{rest}")
    } else if text.starts_with('/') || text.starts_with('\\') {
        return not_a_link("it is a path without a host");
    } else {
        format!("https://{text}")
    };
    let url = match Url::parse(&full) {
        Ok(url) => url,
        Err(e) => return not_a_link(unparsed(e)),
    };
    if scheme_assumed && url.host().is_none() {
        return not_a_link("no host was found in it");
    }
    let raw_host = url.host().map(|_| raw_host_text(&full));
    let behind_backslash = if url.host().is_some() { backslash_decoy(&full) } else { None };
    Ok(UrlCheckRequest::Link(Link { url, scheme_assumed, raw_host, behind_backslash }))
}

/// Why a browser refuses a URL, in plain words.
fn unparsed(error: url::ParseError) -> &'static str {
    use url::ParseError::*;
    match error {
        EmptyHost => "its host is empty",
        IdnaError | InvalidDomainCharacter => {
            "its host has characters no domain name has (a space, a symbol, a control or unassigned character)"
        }
        InvalidPort => "its port is not a number from 0 to 65535",
        InvalidIpv4Address => "its host is a malformed IPv4 address",
        InvalidIpv6Address => "its host is a malformed IPv6 address",
        RelativeUrlWithoutBase | RelativeUrlWithCannotBeABaseBase | SetHostOnCannotBeABaseUrl => {
            "it has no scheme and host"
        }
        Overflow => "it is too long",
        _ => "it is not a URL",
    }
}

/// The decoy of `https://evil.example\@trusted.site/`: browsers end the host at the
/// backslash, so what follows the `@` only looks like the host.
fn backslash_decoy(full: &str) -> Option<String> {
    let after_scheme = full.find("://").map(|i| &full[i + 3..])?;
    let end = after_scheme.find(['/', '\\', '?', '#'])?;
    let rest = after_scheme[end..].strip_prefix('\\')?;
    let decoy_end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
    let (_, decoy) = rest[..decoy_end].rsplit_once('@')?;
    (!decoy.is_empty()).then(|| decoy.to_ascii_lowercase())
}

/// Whether `text` starts with a scheme: `name://`, or a known scheme name and a colon
/// (so `localhost:8080` and `example.com:443/x` are hosts, `javascript:…` a scheme).
fn has_scheme(text: &str) -> bool {
    let Some(colon) = text.find(':') else { return false };
    let name = &text[..colon];
    let well_formed = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    well_formed && (text[colon..].starts_with("://") || KNOWN_SCHEMES.contains(&name.to_ascii_lowercase().as_str()))
}

/// The host part of `full` as written: after `scheme://` and any `user@`, before the port
/// and the path (`\` ends it too, as in browsers).
fn raw_host_text(full: &str) -> String {
    let after_scheme = full.find(':').map_or(full, |i| &full[i + 1..]);
    let authority_start = after_scheme.trim_start_matches(['/', '\\']);
    let end = authority_start.find(['/', '\\', '?', '#']).unwrap_or(authority_start.len());
    let authority = &authority_start[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if host_port.starts_with('[') {
        host_port.find(']').map_or(host_port, |i| &host_port[..=i])
    } else {
        host_port.rsplit_once(':').map_or(host_port, |(h, _)| h)
    };
    host.to_ascii_lowercase()
}

// --- The bundled lists ----------------------------------------------------------------

/// The phishing list's domains, built once.
static PHISHING: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| PHISHING_LIST.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect());

/// How many domains the bundled list holds.
pub fn list_entries() -> usize {
    PHISHING.len()
}

/// `host` itself and each parent domain, longest first (`a.b.c`, `b.c`, `c`).
fn self_and_parents(host: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(host), |h| h.split_once('.').map(|(_, rest)| rest))
}

/// The entry of `list` that `host` is or is under.
fn under<'a>(host: &str, list: &[&'a str]) -> Option<&'a str> {
    self_and_parents(host).find_map(|h| list.iter().find(|d| **d == h).copied())
}

/// The public suffix of `host` (a hosting platform, a multi-label suffix or the last label).
fn public_suffix(host: &str) -> &str {
    for candidate in self_and_parents(host).skip(1) {
        if FREE_HOSTING.contains(&candidate) || MULTI_LABEL_SUFFIXES.contains(&candidate) {
            return candidate;
        }
    }
    host.rsplit_once('.').map_or(host, |(_, tld)| tld)
}

/// The registrable domain: one label before the public suffix, with it.
fn registrable(host: &str) -> &str {
    let suffix = public_suffix(host);
    if host.len() <= suffix.len() {
        return host;
    }
    let before = &host[..host.len() - suffix.len() - 1];
    let label_start = before.rfind('.').map_or(0, |i| i + 1);
    &host[label_start..]
}

// --- Text helpers ---------------------------------------------------------------------

/// Untrusted Unicode shown safely: control, invisible and direction characters as `\u{…}`.
fn safe_display(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let invisible = matches!(c as u32, 0xAD | 0x034F | 0x061C | 0x115F | 0x1160 | 0x17B4 | 0x17B5 | 0x180B..=0x180F
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F | 0xFEFF | 0xFFA0
            | 0xFFF0..=0xFFFB | 0xE0000..=0xE0FFF);
        if c.is_control() || invisible {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The Latin letter a confusable character passes for (a hand-written part of Unicode
/// TR39's confusables: Cyrillic, Greek, Armenian and Latin look-alikes of a-z).
fn confusable(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' | 'ɑ' => 'a',
        'ь' => 'b',
        'с' | 'ϲ' | 'ᴄ' => 'c',
        'ԁ' | 'ɗ' => 'd',
        'е' | 'ё' | 'ε' | 'ҽ' => 'e',
        'ɡ' | 'ց' | 'ԍ' => 'g',
        'һ' | 'հ' => 'h',
        'і' | 'ї' | 'ι' | 'ı' | 'ɩ' => 'i',
        'ј' | 'ϳ' | 'ȷ' => 'j',
        'κ' | 'к' => 'k',
        'ӏ' | 'ǀ' | 'ⅼ' => 'l',
        'п' | 'η' | 'ո' => 'n',
        'о' | 'ο' | 'օ' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' | 'զ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'τ' => 't',
        'υ' | 'ս' => 'u',
        'ν' | 'ѵ' => 'v',
        'ԝ' | 'ω' | 'ѡ' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' | 'ү' => 'y',
        'ᴢ' => 'z',
        _ => return None,
    })
}

/// The skeleton of a label: decomposed, accents dropped, confusables mapped to the Latin
/// letters they pass for, lower-case.
fn skeleton(label: &str) -> String {
    label
        .nfd()
        .filter(|c| !matches!(*c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF))
        .flat_map(|c| confusable(c).map_or_else(|| c.to_lowercase().collect::<Vec<_>>(), |l| vec![l]))
        .collect()
}

/// An ASCII name folded as a reader's eye folds it: digits that pass for letters, `rn`
/// for `m`, `vv` for `w`, `cl` for `d`, and `i`, `l`, `1` as one letter.
fn fold(name: &str) -> String {
    let mapped: String = name
        .chars()
        .filter(|c| *c != '-')
        .map(|c| match c {
            '0' => 'o',
            '1' | 'i' | '|' => 'l',
            '3' => 'e',
            '4' | '@' => 'a',
            '5' | '$' => 's',
            '7' => 't',
            '8' => 'b',
            c => c,
        })
        .collect();
    mapped.replace("rn", "m").replace("vv", "w").replace("cl", "d")
}

/// Optimal string alignment distance (Damerau-Levenshtein with adjacent swaps).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1).min(rows[i][j - 1] + 1).min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// The script of a letter, for the mixed-script check; None for digits, `-` and marks.
fn script(c: char) -> Option<&'static str> {
    Some(match c as u32 {
        0x30..=0x39 | 0x2D => return None,
        0x41..=0x5A | 0x61..=0x7A | 0xC0..=0x24F | 0x1E00..=0x1EFF => "Latin",
        0x0300..=0x036F => return None,
        0x0370..=0x03FF | 0x1F00..=0x1FFF => "Greek",
        0x0400..=0x052F | 0x1C80..=0x1C8F | 0x2DE0..=0x2DFF | 0xA640..=0xA69F => "Cyrillic",
        0x0530..=0x058F => "Armenian",
        0x13A0..=0x13FF | 0xAB70..=0xABBF => "Cherokee",
        _ => "other",
    })
}

/// The scripts of a label whose letters can pass for Latin ones, when it mixes them.
fn mixed_scripts(label: &str) -> Option<Vec<&'static str>> {
    let mut seen: Vec<&'static str> = Vec::new();
    for s in label.chars().filter_map(script).filter(|s| *s != "other") {
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    (seen.len() > 1).then_some(seen)
}

/// The words of a path or query: ASCII letters and digits, lower-case.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_ascii_lowercase).collect()
}

/// Cuts untrusted text for a message.
fn shown(text: &str, max: usize) -> String {
    let cut = clean_text(text, max);
    if cut.chars().count() < text.chars().count() { format!("{cut}…") } else { cut }
}

// --- Judging --------------------------------------------------------------------------

/// What the brand checks found.
struct BrandFinding {
    brand: &'static Brand,
    code: &'static str,
    message: String,
}

/// Collects reasons, each code once.
#[derive(Default)]
struct Findings {
    reasons: Vec<Reason>,
    brand: Option<&'static Brand>,
    brand_points: u32,
}

impl Findings {
    fn add(&mut self, code: &str, message: String) {
        if self.reasons.iter().any(|r| r.code == code) {
            return;
        }
        self.reasons.extend(reason_from(SCORING, code, message));
    }

    fn has(&self, code: &str) -> bool {
        self.reasons.iter().any(|r| r.code == code)
    }

    /// A brand finding; the answer's brand is the one of the strongest.
    fn brand(&mut self, finding: BrandFinding) {
        let points = SCORING.iter().find(|r| r.code == finding.code).map_or(0, |r| r.points);
        if self.brand.is_none() || points > self.brand_points {
            self.brand = Some(finding.brand);
            self.brand_points = points;
        }
        self.add(finding.code, finding.message);
    }
}

/// The brand whose official domain `host` is or is under.
fn official_brand(host: &str) -> Option<(&'static Brand, &str)> {
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

fn is_context_word(word: &str) -> bool {
    CONTEXT_WORDS.contains(&word) || DRAINER_WORDS.contains(&word)
}

/// Drainer words in a host's labels: whole hyphen-separated words, or inside a label for
/// words of five letters or more (`claimportal`).
fn host_drainer_words(labels: &[&str]) -> Vec<&'static str> {
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

/// The brand checks on a host that is not official: `labels` are the host's ASCII labels
/// before its public suffix, `unicode` the same labels decoded.
fn brand_checks(host: &str, labels: &[&str], unicode: &[String], suffix: &str, findings: &mut Findings) {
    let registrable = registrable(host);
    let hosting = FREE_HOSTING.contains(&suffix);
    let context = hosting
        || RISKY_TLDS.contains(&host.rsplit('.').next().unwrap_or_default())
        || labels.iter().flat_map(|l| l.split('-')).any(is_context_word)
        || !host_drainer_words(labels).is_empty();
    for brand in BRANDS {
        let official = brand.official.join(", ");
        // An official domain with its dots written as hyphens (`lido-fi.org`).
        if let Some(domain) = brand.official.iter().find(|d| labels.iter().any(|l| l.contains(&d.replace('.', "-")))) {
            findings.brand(BrandFinding {
                brand,
                code: "lookalike_domain",
                message: format!("{host} writes {}'s domain {domain} with a hyphen for a dot.", brand.name),
            });
            continue;
        }
        for (i, label) in labels.iter().enumerate() {
            let is_registrable_label = i + 1 == labels.len();
            let parts: Vec<&str> = label.split('-').collect();
            let skeleton_text = skeleton(&unicode[i]);
            let non_ascii = !unicode[i].is_ascii();
            for key in brand.keys {
                // Homographs: a label that reads as the brand once look-alike letters are mapped.
                if non_ascii
                    && (skeleton_text == *key
                        || skeleton_text.split('-').any(|p| p == *key)
                        || (brand.matching == Coined && key.len() >= 5 && skeleton_text.contains(key)))
                {
                    findings.brand(BrandFinding {
                        brand,
                        code: "homoglyph_domain",
                        message: format!(
                            "`{}` reads as `{key}` with look-alike letters: it imitates {} ({official}).",
                            safe_display(&unicode[i]),
                            brand.name
                        ),
                    });
                    continue;
                }
                let whole = *label == *key;
                let as_word = parts.contains(key);
                let inside = brand.matching == Coined && key.len() >= 5 && label.contains(key);
                // The name and one letter more (`uniswapp`) is a typo of it, not a compound.
                let joined: String = label.chars().filter(|c| *c != '-').collect();
                if inside && !whole && !as_word && joined.len() == key.len() + 1 {
                    findings.brand(BrandFinding {
                        brand,
                        code: "lookalike_domain",
                        message: format!(
                            "`{}` is `{key}` with a letter added: it imitates {} ({official}).",
                            shown(label, 63),
                            brand.name
                        ),
                    });
                    continue;
                }
                if whole || as_word || inside {
                    if brand.matching == Word && !context {
                        continue;
                    }
                    let embedded = brand
                        .official
                        .iter()
                        .find(|d| host.starts_with(&format!("{d}.")) || host.contains(&format!(".{d}.")));
                    if whole && is_registrable_label && !hosting {
                        findings.brand(BrandFinding {
                            brand,
                            code: "brand_other_tld",
                            message: format!(
                                "{registrable} is {}'s name on .{suffix}; {} is at {official}.",
                                brand.name, brand.name
                            ),
                        });
                    } else if let Some(domain) = embedded {
                        findings.brand(BrandFinding {
                            brand,
                            code: "brand_in_domain",
                            message: format!(
                                "{}'s domain {domain} is written into the host, but the host is under {registrable}.",
                                brand.name
                            ),
                        });
                    } else {
                        let place = if hosting {
                            format!("a page on {suffix}, a free hosting platform")
                        } else if is_registrable_label {
                            format!("part of the domain {registrable}")
                        } else {
                            format!("a subdomain of {registrable}")
                        };
                        findings.brand(BrandFinding {
                            brand,
                            code: "brand_in_domain",
                            message: format!("`{key}` is {place}, not {}'s ({official}).", brand.name),
                        });
                    }
                    continue;
                }
                if brand.matching == Word || !label.is_ascii() {
                    continue;
                }
                // Look-alikes of coined names.
                let folded_key = fold(key);
                let folded_label = fold(label);
                let mut candidates: Vec<&str> = parts.clone();
                candidates.push(label);
                let near = |token: &str| {
                    let folded = fold(token);
                    token != *key
                        && !NEAR_MISS_WORDS.contains(&token)
                        && (folded == folded_key
                            || (key.len() >= 6 && token.len() >= 4 && edit_distance(&folded, &folded_key) <= 1))
                };
                let lookalike = joined == *key
                    || candidates.iter().any(|t| near(t))
                    || (key.len() >= 5 && folded_label.contains(&folded_key) && !label.contains(key));
                if lookalike {
                    findings.brand(BrandFinding {
                        brand,
                        code: "lookalike_domain",
                        message: format!(
                            "`{}` looks like `{key}` but is not it: it imitates {} ({official}).",
                            shown(label, 63),
                            brand.name
                        ),
                    });
                }
            }
        }
    }
}

/// The checks of a domain host; answers its registrable domain.
fn domain_checks(host: &str, findings: &mut Findings) -> (String, String) {
    let host = host.trim_end_matches('.');
    let (unicode, _) = idna::domain_to_unicode(host);
    let ascii_labels: Vec<&str> = host.split('.').collect();
    let mut unicode_labels: Vec<String> = unicode.split('.').map(str::to_string).collect();
    if unicode_labels.len() != ascii_labels.len() {
        unicode_labels = ascii_labels.iter().map(|l| l.to_string()).collect();
    }
    let suffix = public_suffix(host);
    let registrable = registrable(host).to_string();

    if let Some(listed) = self_and_parents(host).find(|h| PHISHING.contains(h)) {
        findings.add(
            "known_phishing_domain",
            format!("{listed} is on the bundled phishing and drainer list (dated {LIST_DATE})."),
        );
    }

    let hosting = under(host, FREE_HOSTING);
    // A user's page on a brand's own platform (sites.google.com) is not the brand's.
    let user_content =
        |(_, domain): &(&Brand, &str)| hosting.is_some_and(|p| p == *domain || p.ends_with(&format!(".{domain}")));
    let official_match = official_brand(host);
    let brand_platform = official_match.filter(user_content).is_some();
    let official = official_match.filter(|m| !user_content(m));
    if let Some((brand, domain)) = official {
        findings.brand = Some(brand);
        let place = if host == domain { String::new() } else { format!(" is under {domain}, which") };
        findings.add("official_domain", format!("{host}{place} is an official domain of {}.", brand.name));
    }

    if ascii_labels.iter().any(|l| l.starts_with("xn--")) {
        findings.add(
            "punycode_domain",
            format!("{host} is an internationalised domain; browsers may show it as `{}`.", safe_display(&unicode)),
        );
    }
    for label in &unicode_labels {
        if let Some(scripts) = mixed_scripts(label) {
            findings.add("mixed_script", format!("`{}` mixes {} letters.", safe_display(label), scripts.join(" and ")));
        }
    }
    if let Some(platform) = hosting.filter(|_| official.is_none()) {
        let what = if host == platform {
            format!("{host} serves pages anyone can publish")
        } else {
            format!("{host} is a page on {platform}, where anyone can get a subdomain")
        };
        findings.add("free_hosting", format!("{what}."));
    }
    if let Some(shortener) = under(host, SHORTENERS) {
        findings.add("url_shortener", format!("{shortener} is a URL shortener: the link hides where it goes."));
    }
    let tld = ascii_labels.last().copied().unwrap_or_default();
    // A hosting platform's TLD is the platform's choice, not the page's.
    if RISKY_TLDS.contains(&tld) && hosting.is_none() {
        findings.add("risky_tld", format!(".{tld} is a top-level domain much used for throwaway phishing sites."));
    }

    if official.is_none() {
        let own = ascii_labels.len() - suffix.split('.').count().min(ascii_labels.len());
        let own = own.max(1).min(ascii_labels.len());
        if !brand_platform {
            brand_checks(host, &ascii_labels[..own], &unicode_labels[..own], suffix, findings);
        }
        // A label of non-Latin look-alikes that is no brand still reads as a Latin word.
        if !findings.has("homoglyph_domain") {
            for label in unicode_labels.iter().filter(|l| !l.is_ascii()) {
                let skeleton_text = skeleton(label);
                let no_latin = !label.chars().any(|c| script(c) == Some("Latin"));
                if no_latin
                    && skeleton_text.len() >= 2
                    && skeleton_text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                {
                    findings.add(
                        "confusable_label",
                        format!("`{}` is written in letters that read as `{skeleton_text}`.", safe_display(label)),
                    );
                }
            }
        }
        let found = host_drainer_words(&ascii_labels);
        if !found.is_empty() {
            findings.add("drainer_keywords", format!("The host has drainer words: {}.", found.join(", ")));
        }
    }
    (safe_display(&unicode), registrable)
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
fn brand_named_in(text: &str, general: bool) -> Option<(&'static Brand, String)> {
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

/// The answer for a checked request.
pub fn judge(request: &UrlCheckRequest) -> UrlCheckOutput {
    match request {
        UrlCheckRequest::Link(link) => judge_link(link),
        UrlCheckRequest::NotALink { text, scheme, scheme_assumed, why } => {
            let mut findings = Findings::default();
            findings.add("not_a_link", format!("A browser would not open this as a link: {why}."));
            if *scheme_assumed {
                findings.add("scheme_assumed", "The input had no scheme; it was read as https://.".into());
            }
            answer(shown(text, MAX_URL_SHOWN), scheme.clone(), *scheme_assumed, findings)
        }
    }
}

/// The answer for a parsed link.
fn judge_link(request: &Link) -> UrlCheckOutput {
    let url = &request.url;
    let mut findings = Findings::default();
    let scheme = url.scheme().to_string();
    if request.scheme_assumed {
        findings.add("scheme_assumed", "The input had no scheme; it was read as https://.".into());
    }
    let (mut host, mut host_unicode, mut host_kind, mut registrable_domain) = (None, None, HostKind::None, None);
    if DANGEROUS_SCHEMES.contains(&scheme.as_str()) {
        findings.add(
            "dangerous_scheme",
            format!("A {scheme}: URL runs code or shows a page carried in the link itself, not a site's page."),
        );
    } else {
        if !matches!(scheme.as_str(), "http" | "https") {
            findings.add("unusual_scheme", format!("A {}: URL is not a web link.", shown(&scheme, 32)));
        }
        match url.host() {
            Some(Host::Domain(domain)) => {
                let domain = domain.to_ascii_lowercase();
                let (unicode, registrable) = domain_checks(&domain, &mut findings);
                host_kind = HostKind::Domain;
                host_unicode = Some(unicode);
                registrable_domain = Some(registrable);
                host = Some(domain);
            }
            Some(Host::Ipv4(ip)) => {
                let text = ip.to_string();
                findings.add("ip_address_host", format!("The host is the IP address {text}{}.", ip_note(ip)));
                if let Some(raw) = &request.raw_host
                    && raw.trim_end_matches('.') != text
                {
                    findings.add(
                        "obfuscated_ip",
                        format!("The host `{}` is the IP address {text} written in another form.", shown(raw, 64)),
                    );
                }
                host_kind = HostKind::Ipv4;
                host_unicode = Some(text.clone());
                host = Some(text);
            }
            Some(Host::Ipv6(ip)) => {
                let text = format!("[{ip}]");
                findings.add("ip_address_host", format!("The host is the IPv6 address {text}."));
                host_kind = HostKind::Ipv6;
                host_unicode = Some(text.clone());
                host = Some(text);
            }
            None => {}
        }
        if scheme == "http" {
            findings.add("plain_http", "The link uses http, not https.".into());
        }
        if let Some(port) = url.port() {
            findings.add("non_standard_port", format!("The link names port {port}."));
        }
    }

    let official = findings.has("official_domain");
    if !url.username().is_empty() || url.password().is_some() {
        let user = url.username();
        let named = brand_named_in(user, true);
        let goes_to = host.as_deref().unwrap_or("the host");
        let message = match &named {
            Some((brand, name)) => format!(
                "`{}` before the @ makes the link look like {}'s ({name}), but it goes to {goes_to}.",
                shown(user, 64),
                brand.name
            ),
            None if user.is_empty() => format!("The link carries a password before the host; it goes to {goes_to}."),
            None => {
                format!("The link carries the user name `{}` before the host; it goes to {goes_to}.", shown(user, 64))
            }
        };
        findings.add("credentials_in_url", message);
        if let Some((brand, _)) = named
            && !official
            && findings.brand.is_none()
        {
            findings.brand = Some(brand);
        }
    }
    if let Some(decoy) = &request.behind_backslash {
        let named = brand_named_in(decoy, true);
        let goes_to = host.as_deref().unwrap_or("the host");
        findings.add(
            "disguised_host",
            format!(
                "`\\@{}` after the host only looks like one{}: browsers end the host at the backslash and go to {goes_to}.",
                shown(decoy, 64),
                named.as_ref().map(|(b, _)| format!(" ({}'s)", b.name)).unwrap_or_default()
            ),
        );
        if let Some((brand, _)) = named
            && !official
            && findings.brand.is_none()
        {
            findings.brand = Some(brand);
        }
    }

    if !official && host_kind != HostKind::None {
        let mut rest = url.path().to_string();
        if let Some(query) = url.query() {
            rest.push('?');
            rest.push_str(query);
        }
        let rest: String = rest.chars().take(MAX_PATH_SCANNED).collect();
        let path_words = words(&rest);
        let mut found: Vec<&str> =
            DRAINER_WORDS.iter().copied().filter(|w| path_words.iter().any(|p| p == w)).collect();
        if path_words.windows(2).any(|w| w[0] == "connect" && w[1] == "wallet") && !found.contains(&"connectwallet") {
            found.push("connect wallet");
        }
        if !found.is_empty() {
            found.truncate(5);
            let message = format!("The path has drainer words: {}.", found.join(", "));
            if let Some(reason) = findings.reasons.iter_mut().find(|r| r.code == "drainer_keywords") {
                reason.message = format!("{} {message}", reason.message);
            } else {
                findings.add("drainer_keywords", message);
            }
        }
        if let Some((brand, name)) = brand_named_in(&rest, false) {
            // On a free hosting page, a brand in the path is what the page imitates.
            if findings.has("free_hosting") && findings.brand.is_none() {
                findings.brand = Some(brand);
            }
            findings.add(
                "brand_in_path",
                format!("The path names {} (`{name}`), but the site is not {}'s.", brand.name, brand.name),
            );
        }
    }

    UrlCheckOutput {
        host,
        host_unicode,
        host_kind,
        registrable_domain,
        ..answer(shown_url(url), scheme, request.scheme_assumed, findings)
    }
}

/// The answer from its findings, without a host.
fn answer(url: String, scheme: String, scheme_assumed: bool, findings: Findings) -> UrlCheckOutput {
    let official = findings.has("official_domain");
    let brand = findings.brand;
    let official_domains = match brand {
        Some(b) if !official => b.official.iter().map(|d| (*d).to_string()).collect(),
        _ => Vec::new(),
    };
    let mut reasons = findings.reasons;
    let score = rank(&mut reasons);
    UrlCheckOutput {
        url,
        scheme,
        scheme_assumed,
        host: None,
        host_unicode: None,
        host_kind: HostKind::None,
        registrable_domain: None,
        brand: brand.map(|b| b.name.to_string()),
        official,
        official_domains,
        reasons,
        risk_score: score,
        verdict: Verdict::from_score(score),
        list_date: LIST_DATE.to_string(),
        list_entries: list_entries() as u64,
        disclaimer: DISCLAIMER.to_string(),
    }
}

/// What kind of address a link's IPv4 host is, when it is not a public one.
fn ip_note(ip: Ipv4Addr) -> &'static str {
    if ip.is_loopback() {
        " (this computer)"
    } else if ip.is_private() || ip.is_link_local() {
        " (a private network address)"
    } else {
        ""
    }
}

/// The URL for the answer: a password masked, cut to [`MAX_URL_SHOWN`] characters.
fn shown_url(url: &Url) -> String {
    let mut url = url.clone();
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    }
    shown(url.as_str(), MAX_URL_SHOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_well_formed_and_dated() {
        assert!(PHISHING_LIST.contains(&format!("# list-date: {LIST_DATE}")), "the file's date is LIST_DATE");
        let readme = include_str!("../../../data/README.md");
        assert!(readme.contains(LIST_DATE), "the data README gives the list's date");
        assert!(readme.contains(&format!("{} domains", list_entries())), "the data README gives the list's size");
        let mut seen = HashSet::new();
        for line in PHISHING_LIST.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            assert_eq!(line, line.trim().to_ascii_lowercase(), "lower-case, no spaces: {line:?}");
            assert!(line.contains('.') && line.is_ascii(), "a domain: {line:?}");
            assert!(seen.insert(line), "listed twice: {line}");
            assert!(official_brand(line).is_none(), "an official domain on the phishing list: {line}");
        }
    }

    #[test]
    fn the_tables_hold_together() {
        for rule in SCORING {
            assert!(SCORING.iter().filter(|r| r.code == rule.code).count() == 1, "{} twice", rule.code);
        }
        for brand in BRANDS {
            for domain in brand.official {
                assert_eq!(official_brand(domain).map(|(b, _)| b.name), Some(brand.name), "{domain}");
                assert!(under(domain, FREE_HOSTING).is_none() || *domain == "metamask.github.io", "{domain}");
            }
            for key in brand.keys {
                assert_eq!(*key, key.to_ascii_lowercase());
                assert!(!NEAR_MISS_WORDS.contains(key));
            }
        }
    }

    #[test]
    fn registrable_domains() {
        let cases = [
            ("www.bbc.co.uk", "bbc.co.uk", "co.uk"),
            ("app.uniswap.org", "uniswap.org", "org"),
            ("metamask.vercel.app", "metamask.vercel.app", "vercel.app"),
            ("a.b.metamask.github.io", "metamask.github.io", "github.io"),
            ("localhost", "localhost", "localhost"),
            ("example.com", "example.com", "com"),
        ];
        for (host, want, suffix) in cases {
            assert_eq!((registrable(host), public_suffix(host)), (want, suffix), "{host}");
        }
    }

    #[test]
    fn skeletons_folds_and_distances() {
        assert_eq!(skeleton("аррӏе"), "apple", "Cyrillic only");
        assert_eq!(skeleton("uniswäp"), "uniswap", "an accent");
        assert_eq!(skeleton("metаmаѕk"), "metamask", "Latin and Cyrillic");
        assert_eq!(skeleton("bücher"), "bucher");
        assert_eq!(fold("rnetamask"), fold("metamask"));
        assert_eq!(fold("un1swap"), fold("uniswap"));
        assert_eq!(fold("0pensea"), fold("opensea"));
        assert_eq!(edit_distance("uniswap", "unsiwap"), 1, "a swap is one edit");
        assert_eq!(edit_distance("metamask", "metamaskk"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(mixed_scripts("pаypal"), Some(vec!["Latin", "Cyrillic"]));
        assert_eq!(mixed_scripts("bücher"), None);
        assert_eq!(safe_display("a\u{202e}b\u{200b}"), "a\\u{202e}b\\u{200b}");
    }

    #[test]
    fn schemes_and_raw_hosts() {
        assert!(has_scheme("https://x"));
        assert!(has_scheme("javascript:alert(1)"));
        assert!(has_scheme("HTTP:/x"));
        assert!(!has_scheme("localhost:8080"));
        assert!(!has_scheme("metamask.io:443/x"));
        assert!(!has_scheme("metamask.io"));
        assert_eq!(raw_host_text("http://user:pw@0xC0A80101:80/x"), "0xc0a80101");
        assert_eq!(raw_host_text("http://[::1]:8080/"), "[::1]");
        assert_eq!(raw_host_text("https://evil.com\\@metamask.io"), "evil.com");
    }
}
