//! `/v1/check/sanctions` against the bundled OFAC SDN list (2026-09-30) and against lists
//! read from made-up SDN XML files in the official structures (`fixtures/sanctions/`).
//! No chain is read. Every answer is checked against the route's published output schema.
//! Each context screens with a refreshed-list path of its own (never the user's data folder).

use crate::common;

use std::path::{Path, PathBuf};

use alloy::primitives::Address;
use common::route::call;
use paperchain_engine::sanctions::{self, SanctionsState, sdn_xml};
use paperchain_engine::{Context, ErrorKind};
use serde_json::{Value, json};

const PATH: &str = "/v1/check/sanctions";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sanctions").join(name)
}

/// A context whose refreshed list would be `path`.
fn context_with(path: PathBuf) -> Context {
    let ctx = Context::new();
    ctx.state.insert(SanctionsState::at(path));
    ctx
}

/// A context that screens with the bundled list (its refreshed file does not exist).
fn bundled_context(dir: &tempfile::TempDir) -> Context {
    context_with(dir.path().join("none.tsv"))
}

async fn screen(ctx: &Context, address: &str) -> Value {
    call(ctx, PATH, json!({ "address": address })).await.unwrap_or_else(|e| panic!("{address}: {e:?}"))
}

fn assets(answer: &Value) -> Vec<&str> {
    answer["matches"].as_array().unwrap().iter().map(|m| m["asset"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_listed_evm_address_matches_in_any_case_and_checksummed() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = bundled_context(&dir);
    // Lazarus Group (DPRK3), the Ronin bridge theft address.
    let lower = "0x098b716b8aaf21512996dc57eb0615e2383e2f96";
    let checksummed = lower.parse::<Address>().unwrap().to_checksum(None);
    assert_ne!(checksummed, lower);
    for given in [lower.to_string(), checksummed, lower.to_ascii_uppercase().replacen("0X", "0x", 1)] {
        let answer = screen(&ctx, &given).await;
        assert_eq!(answer["sanctioned"], true, "{given}: {answer:#}");
        assert_eq!(answer["address"], lower);
        assert_eq!(answer["format"], "evm");
        assert_eq!(answer["matches"][0]["entity"], "Lazarus Group");
        assert_eq!(answer["matches"][0]["programs"], json!(["DPRK3"]));
        assert_eq!(answer["verdict"], "high");
        assert_eq!(answer["risk_score"], 100);
        assert_eq!(answer["reasons"][0]["code"], "sanctioned_address");
        assert_eq!(answer["reasons"][0]["severity"], "high");
        assert_eq!(answer["list"]["source"], "bundled");
        assert_eq!(answer["list"]["date"], "2026-09-30");
        assert_eq!(answer["list"]["entries"], 1063);
    }
}

#[tokio::test]
async fn an_address_listed_for_several_assets_gives_every_listing_and_one_reason() {
    let dir = tempfile::tempdir().unwrap();
    let answer = screen(&bundled_context(&dir), "0x4F47BC496083C727C5FBE3CE9CDF2B0F6496270C").await;
    assert_eq!(assets(&answer), ["ARB", "BSC", "ETH"]);
    assert!(answer["matches"].as_array().unwrap().iter().all(|m| m["entity"] == "Sim Hyon Sop"));
    assert_eq!(answer["reasons"].as_array().unwrap().len(), 1, "{answer:#}");
    let message = answer["reasons"][0]["message"].as_str().unwrap();
    assert!(message.contains("(ARB, BSC, ETH) of Sim Hyon Sop under NPWMD"), "{message}");
    // The bundled extract carries no SDN uids.
    assert_eq!(answer["matches"][0]["uid"], Value::Null);
}

#[tokio::test]
async fn bitcoin_tron_and_bitcoin_cash_addresses_match_as_their_formats_demand() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = bundled_context(&dir);
    // Base58: exact.
    let legacy = screen(&ctx, "1Kuf2Rd8mDyAViwBozGTNYnvWL8uYFrkVo").await;
    assert_eq!((legacy["sanctioned"].as_bool(), legacy["format"].as_str()), (Some(true), Some("base58")));
    assert_eq!(legacy["matches"][0]["entity"], "YAN Xiaobing");
    assert_eq!(legacy["matches"][0]["asset"], "XBT");
    let lowered = screen(&ctx, "1kuf2rd8mdyaviwbozgtnynvwl8uyfrkvo").await;
    assert_eq!(lowered["sanctioned"], false, "base58 is case-sensitive: {lowered:#}");
    // Bech32: case-insensitive.
    let bech32 = screen(&ctx, "BC1QDT3GML5Z5N50Y5HM04U2YJDPHEFKM0FL2ZDJ68").await;
    assert_eq!(bech32["format"], "bech32");
    assert_eq!(bech32["address"], "bc1qdt3gml5z5n50y5hm04u2yjdphefkm0fl2zdj68");
    assert_eq!(bech32["matches"][0]["entity"], "SUEX OTC, S.R.O.");
    // Tron (base58): exact; its lower-case spelling is another string.
    let tron = screen(&ctx, "TAbbVaBKgH4VBLXgWqACuwoKF4cH1HinQh").await;
    assert_eq!(tron["matches"][0]["entity"], "MESRI Behzad");
    assert_eq!(tron["matches"][0]["asset"], "TRX");
    assert_eq!(screen(&ctx, "tabbvabkgh4vblxgwqacuwokf4ch1hinqh").await["sanctioned"], false);
    // Bitcoin Cash cashaddr, with its prefix and in capitals.
    let cash = screen(&ctx, "bitcoincash:QPF2CPHC5DKUCLKQUR7LHJ2YUQQ9PK3HMUKLE77VHQ").await;
    assert_eq!(cash["format"], "cashaddr");
    assert_eq!(cash["matches"][0]["entity"], "SOUTHFRONT");
    // Monero (base58, 95 characters).
    let xmr = "44dZUJ7w1T3fKAvFW8XyXUVoAGSbFvXef2wcbnsjNKGWYorpLJBjth5VKSFhLGkpYKJb2J341tdZHBnbpv72WL7e8zuxfR2";
    assert_eq!(screen(&ctx, xmr).await["matches"][0]["asset"], "XMR");
}

#[tokio::test]
async fn clean_addresses_are_low_without_reasons_and_name_the_list() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = bundled_context(&dir);
    for address in [
        "0x0000000000000000000000000000000000000000",
        // Tornado Cash's router: delisted by OFAC on 2025-03-21, so not on the 2026 list.
        "0xd90e2f925DA726b50C4Ed8D0Fb90Ad053324F31b",
        "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4",
        "not-an-address-at-all",
    ] {
        let answer = screen(&ctx, address).await;
        assert_eq!(answer["sanctioned"], false, "{address}: {answer:#}");
        assert_eq!(answer["matches"], json!([]));
        assert_eq!(answer["reasons"], json!([]));
        assert_eq!((answer["verdict"].as_str(), answer["risk_score"].as_u64()), (Some("low"), Some(0)));
        assert_eq!(answer["list"]["date"], "2026-09-30");
        assert!(answer["list"]["age_days"].as_i64().unwrap() >= 0);
    }
}

#[tokio::test]
async fn bad_input_names_the_address_field() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = bundled_context(&dir);
    for (body, field, code) in [
        (json!({"address": ""}), "/address", "invalid_input"),
        (json!({"address": "   "}), "/address", "invalid_input"),
        (json!({"address": "1".repeat(129)}), "/address", "invalid_input"),
        (json!({"address": "0x12 34"}), "/address", "invalid_input"),
        (json!({"address": "0x12\u{e9}"}), "/address", "invalid_input"),
        (json!({"address": 12}), "/address", "invalid_input"),
        (json!({"address": "0x12", "chain": "ethereum"}), "/chain", "unknown_field"),
        (json!({}), "/address", "invalid_input"),
    ] {
        let error = call(&ctx, PATH, body.clone()).await.expect_err(&body.to_string());
        assert_eq!(error.kind, ErrorKind::InvalidInput, "{body}: {error:?}");
        assert_eq!(error.field.as_deref(), Some(field), "{body}: {error:?}");
        assert_eq!(error.code, code, "{body}: {error:?}");
    }
}

#[test]
fn the_advanced_xml_gives_each_address_with_its_party_uid_and_programs() {
    let xml = std::fs::read_to_string(fixture("sdn_advanced_sample.xml")).unwrap();
    let list = sdn_xml::parse(&xml, "sample").unwrap();
    assert_eq!(list.date.to_string(), "2026-11-20");
    assert_eq!(list.source, "sample");
    type Row<'a> = (&'a str, &'a str, Option<u64>, &'a str, Vec<&'a str>);
    let rows: Vec<Row> = list
        .entries
        .iter()
        .map(|e| {
            (
                e.asset.as_str(),
                e.address.as_str(),
                e.uid,
                e.entity.as_str(),
                e.programs.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let exchange = "EXAMPLE EXCHANGE & OTC LLC";
    assert_eq!(
        rows,
        [
            (
                "ETH",
                "0x00000000000000000000000000000000A11CE5ED",
                Some(990001),
                exchange,
                vec!["CYBER2", "RUSSIA-EO14024"]
            ),
            ("XBT", "1BoatSLRHtKNngkdXEeobR76b53LETtpyT", Some(990001), exchange, vec!["CYBER2", "RUSSIA-EO14024"]),
            ("XBT", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", Some(990002), "DOE John", vec!["DPRK3"]),
            ("USDT", "0x00000000000000000000000000000000000D0E01", Some(990002), "DOE John", vec!["DPRK3"]),
        ]
    );
}

#[test]
fn the_classic_xml_reads_too() {
    let xml = std::fs::read_to_string(fixture("sdn_sample.xml")).unwrap();
    let list = sdn_xml::parse(&xml, "classic").unwrap();
    assert_eq!(list.date.to_string(), "2026-11-20");
    assert_eq!(list.entries.len(), 1, "the passport and the entry without address are not addresses");
    let entry = &list.entries[0];
    assert_eq!((entry.asset.as_str(), entry.uid, entry.entity.as_str()), ("XBT", Some(990002), "DOE John"));
    assert_eq!(entry.programs, ["DPRK3"]);
}

#[test]
fn xml_that_is_not_an_sdn_list_is_an_error() {
    assert!(sdn_xml::parse("<Sanctions><DateOfIssue>", "x").unwrap_err().contains("XML"));
    assert!(sdn_xml::parse("<rss></rss>", "x").unwrap_err().contains("root element"));
    assert!(sdn_xml::parse("<Sanctions></Sanctions>", "x").unwrap_err().contains("DateOfIssue"));
    let empty = sdn_xml::parse(
        "<Sanctions><DateOfIssue><Year>2026</Year><Month>1</Month><Day>2</Day></DateOfIssue></Sanctions>",
        "x",
    )
    .unwrap();
    assert!(empty.entries.is_empty());
}

#[tokio::test]
async fn a_newer_refreshed_list_is_used_and_an_older_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sanctions").join(sanctions::FILE_NAME);
    let xml = std::fs::read_to_string(fixture("sdn_advanced_sample.xml")).unwrap();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, sdn_xml::parse(&xml, "sample").unwrap().to_tsv()).unwrap();
    let ctx = context_with(path.clone());
    let answer = screen(&ctx, "0x00000000000000000000000000000000a11ce5ed").await;
    assert_eq!(answer["list"]["source"], "refreshed");
    assert_eq!(answer["list"]["date"], "2026-11-20");
    assert_eq!(answer["list"]["origin"], "sample");
    assert_eq!(answer["matches"][0]["uid"], 990001);
    assert_eq!(answer["matches"][0]["programs"], json!(["CYBER2", "RUSSIA-EO14024"]));
    assert!(answer["reasons"][0]["message"].as_str().unwrap().contains("SDN uid 990001"));
    // The refreshed list replaces the bundled one: a bundled-only address is not on it.
    assert_eq!(screen(&ctx, "0x098b716b8aaf21512996dc57eb0615e2383e2f96").await["sanctioned"], false);

    // The same context notices a new file: an older list leaves the bundled one in use.
    let older = xml.replace("<Year>2026</Year>\n    <Month>11</Month>", "<Year>2020</Year>\n    <Month>11</Month>");
    assert_ne!(older, xml);
    std::fs::write(&path, sdn_xml::parse(&older, "old").unwrap().to_tsv()).unwrap();
    let file = std::fs::File::options().write(true).open(&path).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    let answer = screen(&ctx, "0x098b716b8aaf21512996dc57eb0615e2383e2f96").await;
    assert_eq!((answer["list"]["source"].as_str(), answer["sanctioned"].as_bool()), (Some("bundled"), Some(true)));

    // A file that does not read is passed over for the bundled list.
    std::fs::write(&path, "garbage").unwrap();
    let ctx = context_with(path);
    assert_eq!(screen(&ctx, "0x00").await["list"]["source"], "bundled");
}
