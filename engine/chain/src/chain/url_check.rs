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
//!
//! This file is the route: the input read as a browser reads it, the checks, their
//! messages and scoring. The lists, the brands and the letter helpers they use are
//! [`crate::phishing`]'s.

use std::net::Ipv4Addr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use url::{Host, Url};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::clean_text;
use crate::output::Reply;
use crate::phishing::brands::BrandMatch::{Coined, Word};
use crate::phishing::brands::{
    BRANDS, Brand, NEAR_MISS_WORDS, brand_named_in, host_drainer_words, is_context_word, official_brand,
};
use crate::phishing::letters::{edit_distance, fold, mixed_scripts, safe_display, script, skeleton, words};
use crate::phishing::{
    DRAINER_WORDS, FREE_HOSTING, RISKY_TLDS, SHORTENERS, list_entries, listed, public_suffix, registrable, under,
};
use crate::price::Price;
use crate::risk::{Reason, ScoreRule, Severity, Verdict, rank, reason_from, rule};

/// The bundled list's date, as the answer's `list_date` gives it.
pub use crate::phishing::LIST_DATE;

/// Longest URL read, in characters.
pub const MAX_URL_CHARS: usize = 8 * 1024;
/// Longest URL echoed in the answer, in characters.
pub const MAX_URL_SHOWN: usize = 2_048;
/// Most characters of the path and query searched for words.
const MAX_PATH_SCANNED: usize = 4_096;

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
        holds_secrets: false,
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

    if let Some(listed) = listed(host) {
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
