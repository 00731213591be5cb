//! What the URL check (`chain/url_check.rs`) knows of the web, as data and the lookups
//! over it: the bundled phishing and wallet-drainer domain list (`engine/data/
//! phishing-domains.txt`, dated [`LIST_DATE`]), the hand-written public suffixes, free
//! hosting platforms, URL shorteners, risky TLDs and drainer words, and a host's
//! registrable domain. `brands` holds the brands with their official domains, `letters`
//! the text helpers that see through look-alike letters (skeletons, folds, scripts, edit
//! distance).
//!
//! The registrable domain is found with a small hand-written list of multi-label public
//! suffixes (`co.uk`, `com.br`…) plus the hosting platforms of [`FREE_HOSTING`], which act
//! as suffixes as in the Public Suffix List's private section; every other host's suffix
//! is its last label.
//!
//! What this module must not do: score or word findings (the route's table and messages
//! are the route's), fetch or resolve anything, or use a route file.

use std::collections::HashSet;
use std::sync::LazyLock;

pub mod brands;
pub mod letters;

/// The bundled phishing/drainer domain list.
const PHISHING_LIST: &str = include_str!("../../../data/phishing-domains.txt");
/// The list's date (its `# list-date:` line says the same; a test checks).
pub const LIST_DATE: &str = "2026-11-26";

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
pub(crate) const DRAINER_WORDS: &[&str] = &[
    "airdrop", "airdrops", "claim", "claims", "connectwallet", "validate", "validation", "sync", "rectify",
    "rectification", "migrate", "migration", "revoke", "restore", "recovery", "seedphrase", "mnemonic", "privatekey",
    "eligibility", "eligible", "giveaway", "whitelist", "allowlist", "presale", "bonus", "reward", "rewards",
    "unlock", "unstake", "dapp", "dapps", "wallet", "drop",
];

/// Words that, beside an everyday brand word in a host, make it a wallet or drainer site.
#[rustfmt::skip]
pub(crate) const CONTEXT_WORDS: &[&str] = &[
    "app", "live", "swap", "defi", "nft", "nfts", "token", "tokens", "crypto", "web3", "bridge", "stake", "staking",
    "official", "support", "secure", "security", "verify", "login", "signin", "connect", "mint", "finance", "exchange",
    "portal", "help", "desk", "auth", "account", "vault", "chain", "network", "eth", "coin", "pay",
];

/// The phishing list's domains, built once.
static PHISHING: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| PHISHING_LIST.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect());

/// How many domains the bundled list holds.
pub fn list_entries() -> usize {
    PHISHING.len()
}

/// The host or parent domain of `host` that is on the bundled list, if any.
pub fn listed(host: &str) -> Option<&str> {
    self_and_parents(host).find(|h| PHISHING.contains(h))
}

/// `host` itself and each parent domain, longest first (`a.b.c`, `b.c`, `c`).
fn self_and_parents(host: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(host), |h| h.split_once('.').map(|(_, rest)| rest))
}

/// The entry of `list` that `host` is or is under.
pub(crate) fn under<'a>(host: &str, list: &[&'a str]) -> Option<&'a str> {
    self_and_parents(host).find_map(|h| list.iter().find(|d| **d == h).copied())
}

/// The public suffix of `host` (a hosting platform, a multi-label suffix or the last label).
pub(crate) fn public_suffix(host: &str) -> &str {
    for candidate in self_and_parents(host).skip(1) {
        if FREE_HOSTING.contains(&candidate) || MULTI_LABEL_SUFFIXES.contains(&candidate) {
            return candidate;
        }
    }
    host.rsplit_once('.').map_or(host, |(_, tld)| tld)
}

/// The registrable domain: one label before the public suffix, with it.
pub(crate) fn registrable(host: &str) -> &str {
    let suffix = public_suffix(host);
    if host.len() <= suffix.len() {
        return host;
    }
    let before = &host[..host.len() - suffix.len() - 1];
    let label_start = before.rfind('.').map_or(0, |i| i + 1);
    &host[label_start..]
}

#[cfg(test)]
mod tests {
    use super::brands::official_brand;
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
}
