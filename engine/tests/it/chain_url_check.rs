//! `/v1/check/url` on real-shaped phishing tricks and on official and ordinary URLs that
//! must stay clean, each with the exact reason codes it must give and its verdict. Every
//! answer is checked against the route's published output schema. The route reads no
//! network, so no node is started.

use crate::common;

use common::route::call;
use paperchain_engine::{Context, ErrorKind};
use serde_json::{Value, json};

const PATH: &str = "/v1/check/url";

/// One URL and what the check must answer.
struct Case {
    url: &'static str,
    codes: &'static [&'static str],
    verdict: &'static str,
    brand: Option<&'static str>,
    official: bool,
}

const fn case(
    url: &'static str,
    codes: &'static [&'static str],
    verdict: &'static str,
    brand: Option<&'static str>,
    official: bool,
) -> Case {
    Case { url, codes, verdict, brand, official }
}

/// An ordinary URL with nothing to say.
const fn clean(url: &'static str) -> Case {
    case(url, &[], "low", None, false)
}

/// A brand's official URL.
const fn official(url: &'static str, brand: &'static str) -> Case {
    case(url, &["official_domain"], "low", Some(brand), true)
}

/// A URL imitating `brand`.
const fn imitation(url: &'static str, codes: &'static [&'static str], brand: &'static str) -> Case {
    case(url, codes, "high", Some(brand), false)
}

fn cases() -> Vec<Case> {
    vec![
        // Official URLs stay clean and name their brand.
        official("https://app.uniswap.org/swap", "Uniswap"),
        official("https://metamask.io/download/", "MetaMask"),
        official("https://docs.base.org", "Base"),
        official("https://github.com/foo", "GitHub"),
        official("https://opensea.io/collection/boredapeyachtclub", "OpenSea"),
        official("https://www.coinbase.com/", "Coinbase"),
        official("https://pancakeswap.finance/swap", "PancakeSwap"),
        official("https://etherscan.io/address/0x000000000022d473030f116ddee9f6b43ac78ba3", "Etherscan"),
        official("https://app.safe.global/welcome", "Safe"),
        official("https://www.google.de/search?q=wallet", "Google"),
        official("https://www.paypal.com/signin", "PayPal"),
        official("https://portfolio.metamask.io/claim", "MetaMask"),
        official("https://metamask.github.io/test-dapp/", "MetaMask"),
        official("https://revoke.cash/", "Revoke.cash"),
        official("https://www.amazon.co.jp/", "Amazon"),
        case("metamask.io", &["official_domain", "scheme_assumed"], "low", Some("MetaMask"), true),
        // Ordinary sites, including words one letter from a brand, stay clean.
        clean("https://www.bbc.co.uk/news"),
        clean("https://example.com/"),
        clean("https://en.wikipedia.org/wiki/Phishing"),
        clean("https://www.rust-lang.org/learn"),
        clean("https://finance.yahoo.com/quote/ETH-USD"),
        clean("https://www.tresor.economie.gouv.fr/"),
        clean("https://ethereum-magicians.org/latest"),
        clean("https://www.general-ledger-software.com/"),
        clean("https://apple-pie-recipes.com/"),
        clean("https://seattlekraken.com/"),
        clean("https://pancakeshop.com/"),
        clean("https://www.baseball-reference.com/"),
        case("https://xn--bcher-kva.example/", &["punycode_domain"], "low", None, false),
        // Credentials before the host.
        imitation("https://metamask.io@evil.com/", &["credentials_in_url"], "MetaMask"),
        case("https://user:hunter2@example.com/", &["credentials_in_url"], "high", None, false),
        imitation("https://evil.com\\@metamask.io", &["brand_in_path", "disguised_host"], "MetaMask"),
        // A brand's name in someone else's domain.
        imitation("https://metamask-wallet.io/", &["brand_in_domain", "drainer_keywords"], "MetaMask"),
        imitation("https://uniswap.claim-airdrop.com/", &["brand_in_domain", "drainer_keywords"], "Uniswap"),
        imitation("https://secure-metamask.support/", &["brand_in_domain", "risky_tld"], "MetaMask"),
        imitation("https://app.uniswap.org.claim-airdrop.com/", &["brand_in_domain", "drainer_keywords"], "Uniswap"),
        imitation("https://binance.com.secure-login.top/", &["brand_in_domain", "risky_tld"], "Binance"),
        imitation("https://walletconnect-app.com/", &["brand_in_domain"], "WalletConnect"),
        imitation("https://ledger-live.app/", &["brand_in_domain"], "Ledger"),
        imitation("https://safe-wallet.xyz/", &["brand_in_domain", "drainer_keywords", "risky_tld"], "Safe"),
        imitation("https://metamask.vercel.app/", &["brand_in_domain", "free_hosting"], "MetaMask"),
        imitation(
            "https://uniswap.notion.site/claim",
            &["brand_in_domain", "drainer_keywords", "free_hosting"],
            "Uniswap",
        ),
        imitation("https://www.paypal.com.login-verify.cf/", &["brand_in_domain", "risky_tld"], "PayPal"),
        // The brand's name on another TLD.
        imitation("https://uniswap.app/", &["brand_other_tld"], "Uniswap"),
        imitation("https://google.tk/", &["brand_other_tld", "risky_tld"], "Google"),
        // Look-alikes: digits, letter pairs, typos and swaps.
        imitation("https://un1swap.org/", &["lookalike_domain"], "Uniswap"),
        imitation("https://rnetamask.io/", &["lookalike_domain"], "MetaMask"),
        imitation("https://0pensea.io/", &["lookalike_domain"], "OpenSea"),
        imitation("https://uniswapp.org/", &["lookalike_domain"], "Uniswap"),
        imitation("https://metamsak.io/", &["lookalike_domain"], "MetaMask"),
        imitation("https://uni-swap.org/", &["lookalike_domain"], "Uniswap"),
        imitation("https://googIe.com/", &["lookalike_domain"], "Google"),
        imitation("https://lido-fi.org/stake", &["lookalike_domain"], "Lido"),
        // IDN homographs.
        imitation("https://xn--80ak6aa92e.com/", &["homoglyph_domain", "punycode_domain"], "Apple"),
        imitation("https://xn--pypal-4ve.com/", &["homoglyph_domain", "mixed_script", "punycode_domain"], "PayPal"),
        imitation("https://metаmask.io/", &["homoglyph_domain", "mixed_script", "punycode_domain"], "MetaMask"),
        imitation("https://uniswäp.org/", &["homoglyph_domain", "punycode_domain"], "Uniswap"),
        case("https://xn--e1argc.com/", &["confusable_label", "punycode_domain"], "caution", None, false),
        // IP addresses, plain and disguised.
        case("http://3232235777/", &["ip_address_host", "obfuscated_ip", "plain_http"], "high", None, false),
        case("http://0xC0A80101/login", &["ip_address_host", "obfuscated_ip", "plain_http"], "high", None, false),
        case("http://0300.0250.1.1/", &["ip_address_host", "obfuscated_ip", "plain_http"], "high", None, false),
        case("http://192.168.1.1/", &["ip_address_host", "plain_http"], "caution", None, false),
        case("https://[2001:db8::1]/", &["ip_address_host"], "caution", None, false),
        // Schemes.
        case("javascript:alert(document.cookie)", &["dangerous_scheme"], "high", None, false),
        case("data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==", &["dangerous_scheme"], "high", None, false),
        case("ftp://files.example.com/x", &["unusual_scheme"], "low", None, false),
        case("http://example.com/", &["plain_http"], "low", None, false),
        case("https://example.com:8443/", &["non_standard_port"], "low", None, false),
        case("localhost:8080", &["non_standard_port", "scheme_assumed"], "low", None, false),
        // Hidden destinations and pages anyone can publish.
        case("https://bit.ly/3abcXYZ", &["url_shortener"], "caution", None, false),
        case("https://docs.google.com/forms/d/e/1FAIpQLSf/viewform", &["free_hosting"], "caution", None, false),
        case(
            "https://sites.google.com/view/metamask-restore",
            &["brand_in_path", "drainer_keywords", "free_hosting"],
            "caution",
            Some("MetaMask"),
            false,
        ),
        // Drainer words and the bundled list.
        case("https://claim-rewards.xyz/", &["drainer_keywords", "risky_tld"], "caution", None, false),
        case("https://megaeth.asia/index1.html", &["known_phishing_domain"], "high", None, false),
        case("https://app.arbinu.io/claim", &["drainer_keywords", "known_phishing_domain"], "high", None, false),
    ]
}

fn codes(answer: &Value) -> Vec<String> {
    let mut codes: Vec<String> =
        answer["reasons"].as_array().unwrap().iter().map(|r| r["code"].as_str().unwrap().to_string()).collect();
    codes.sort();
    codes
}

#[tokio::test]
async fn every_case_gives_its_reasons_and_verdict() {
    let ctx = Context::new();
    let cases = cases();
    assert!(cases.len() >= 40);
    let mut failures = Vec::new();
    for case in &cases {
        let answer = call(&ctx, PATH, json!({"url": case.url})).await.unwrap_or_else(|e| panic!("{}: {e:?}", case.url));
        let mut want: Vec<String> = case.codes.iter().map(|c| c.to_string()).collect();
        want.sort();
        let got = codes(&answer);
        let brand = answer["brand"].as_str();
        if got != want
            || answer["verdict"] != case.verdict
            || brand != case.brand
            || answer["official"] != case.official
        {
            failures.push(format!(
                "{}: codes {got:?} verdict {} brand {brand:?} official {}; expected {want:?} {} {:?} {}\n  {}",
                case.url,
                answer["verdict"],
                answer["official"],
                case.verdict,
                case.brand,
                case.official,
                answer["reasons"]
            ));
            continue;
        }
        // The score is the reasons' points, capped at 100, most serious first.
        let points: Vec<u64> =
            answer["reasons"].as_array().unwrap().iter().map(|r| r["points"].as_u64().unwrap()).collect();
        assert!(points.windows(2).all(|w| w[0] >= w[1]), "{}: most serious first", case.url);
        assert_eq!(answer["risk_score"].as_u64(), Some(points.iter().sum::<u64>().min(100)), "{}", case.url);
        // An imitation says where the real brand is.
        let domains = answer["official_domains"].as_array().unwrap();
        assert_eq!(domains.is_empty(), case.official || case.brand.is_none(), "{}: {answer:#}", case.url);
        assert_eq!(answer["list_date"], paperchain_engine::chain::url_check::LIST_DATE);
    }
    assert!(failures.is_empty(), "{} of {} cases wrong:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[tokio::test]
async fn the_answer_shows_the_host_a_browser_visits() {
    let ctx = Context::new();
    let trick = call(&ctx, PATH, json!({"url": "https://metamask.io@evil.com/connect"})).await.unwrap();
    assert_eq!((trick["host"].as_str(), trick["registrable_domain"].as_str()), (Some("evil.com"), Some("evil.com")));
    assert_eq!(trick["official_domains"], json!(["metamask.io", "metamask.github.io"]));
    assert!(trick["reasons"][0]["message"].as_str().unwrap().contains("goes to evil.com"), "{trick:#}");

    let homograph = call(&ctx, PATH, json!({"url": "https://xn--80ak6aa92e.com/"})).await.unwrap();
    assert_eq!(homograph["host"], "xn--80ak6aa92e.com");
    assert_eq!(homograph["host_unicode"], "аррӏе.com");
    assert_eq!(homograph["host_kind"], "domain");
    assert_eq!(homograph["reasons"][0]["code"], "homoglyph_domain", "most serious first");

    let typed = call(&ctx, PATH, json!({"url": "https://METAаMASK.io/"})).await.unwrap();
    assert!(typed["host"].as_str().unwrap().starts_with("xn--"), "Unicode input is judged as its punycode host");

    let integer = call(&ctx, PATH, json!({"url": "http://3232235777/"})).await.unwrap();
    assert_eq!((integer["host"].as_str(), integer["host_kind"].as_str()), (Some("192.168.1.1"), Some("ipv4")));
    assert_eq!(integer["registrable_domain"], Value::Null);

    let secret = call(&ctx, PATH, json!({"url": "https://alice:hunter2@example.com/"})).await.unwrap();
    assert_eq!(secret["url"], "https://alice:***@example.com/", "a password is not echoed");
    assert!(!secret.to_string().contains("hunter2"));

    let script = call(&ctx, PATH, json!({"url": "javascript:alert(1)"})).await.unwrap();
    assert_eq!((script["scheme"].as_str(), script["host"].as_str()), (Some("javascript"), None));
    assert_eq!(script["host_kind"], "none");

    let bare = call(&ctx, PATH, json!({"url": "  uniswap.org  "})).await.unwrap();
    assert_eq!((bare["url"].as_str(), bare["scheme_assumed"].as_bool()), (Some("https://uniswap.org/"), Some(true)));

    let app = call(&ctx, PATH, json!({"url": "https://app.uniswap.org/swap"})).await.unwrap();
    assert_eq!(
        app["reasons"][0]["message"],
        "app.uniswap.org is under uniswap.org, which is an official domain of Uniswap."
    );
    assert_eq!(
        (app["registrable_domain"].as_str(), app["official_domains"].as_array().map(Vec::len)),
        (Some("uniswap.org"), Some(0))
    );

    let uk = call(&ctx, PATH, json!({"url": "https://www.bbc.co.uk/news"})).await.unwrap();
    assert_eq!(uk["registrable_domain"], "bbc.co.uk");
    assert_eq!(uk["risk_score"], 0);
    assert!(uk["list_entries"].as_u64().unwrap() >= 50);
    assert!(uk["disclaimer"].as_str().unwrap().contains("not fetched"));
}

#[tokio::test]
async fn long_input_is_not_echoed_back_whole() {
    let ctx = Context::new();
    let long = format!("https://example.com/{}", "a".repeat(8_000));
    let answer = call(&ctx, PATH, json!({"url": long})).await.unwrap();
    let shown = answer["url"].as_str().unwrap();
    assert!(shown.chars().count() <= 2_049 && shown.ends_with('…'), "{} characters", shown.chars().count());
    let label = format!("https://{}metamask.com/", "x".repeat(60));
    let answer = call(&ctx, PATH, json!({"url": label})).await.unwrap();
    assert!(answer.to_string().len() < 4_000);
}

#[tokio::test]
async fn text_a_browser_would_not_open_is_judged_not_a_link() {
    let ctx = Context::new();
    let cases = [
        ("/just/a/path", "https", "a path without a host"),
        ("https://exa mple.com/", "https", "characters no domain name has"),
        ("https://", "https", "its host is empty"),
        ("http://[::1/", "http", "malformed IPv6 address"),
        ("https://example.com:99999/", "https", "its port is not a number"),
        // An unassigned code point and a C1 control after credentials: no domain has them.
        ("(@\u{760a3}\u{8a}", "https", "characters no domain name has"),
        ("\u{1}\u{2}", "https", "nothing but control characters"),
    ];
    for (url, scheme, why) in cases {
        let answer = call(&ctx, PATH, json!({ "url": url })).await.unwrap_or_else(|e| panic!("{url:?}: {e:?}"));
        assert_eq!(codes(&answer)[0], "not_a_link", "{url:?}: {answer}");
        let message = answer["reasons"][0]["message"].as_str().unwrap();
        assert!(message.contains(why), "{url:?}: {message}");
        assert_eq!((answer["verdict"].as_str(), answer["risk_score"].as_u64()), (Some("caution"), Some(30)), "{url:?}");
        assert_eq!(answer["scheme"], scheme, "{url:?}");
        assert_eq!((&answer["host"], answer["host_kind"].as_str()), (&Value::Null, Some("none")), "{url:?}");
        assert!(!answer["url"].as_str().unwrap().chars().any(char::is_control), "{url:?}: {answer}");
    }
    // The limit counts characters, as the schema's maxLength does.
    let wide = format!("https://example.com/{}", "é".repeat(8_192 - 20));
    assert_eq!(wide.chars().count(), 8_192);
    let answer = call(&ctx, PATH, json!({ "url": wide })).await.unwrap();
    assert_eq!(answer["host"], "example.com");
}

#[tokio::test]
async fn bad_input_names_the_field() {
    let ctx = Context::new();
    let cases = [
        json!({}),
        json!({"url": ""}),
        json!({"url": "   "}),
        json!({"url": 5}),
        json!({"url": ["https://example.com"]}),
        json!({"url": " \t\n"}),
        json!({"url": format!("https://example.com/{}", "a".repeat(8_200))}),
        json!({"url": format!("https://example.com/{}", "é".repeat(8_200))}),
    ];
    for body in cases {
        let error = call(&ctx, PATH, body.clone()).await.expect_err(&body.to_string());
        assert!(matches!(error.kind, ErrorKind::InvalidInput), "{body}: {error:?}");
        assert_eq!(error.field.as_deref(), Some("/url"), "{body}: {error:?}");
        assert!(!error.message.is_empty());
    }
    let error = call(&ctx, PATH, json!({"url": "https://example.com", "bogus": 1})).await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("unknown_field", Some("/bogus")));
}
