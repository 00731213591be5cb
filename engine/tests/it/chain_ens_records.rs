//! `/v1/chain/ens/records` against anvil serving chain id 1: the registry mock at the
//! mainnet registry address and a resolver mock with ENS's record functions, checked
//! against what `cast` reads from the same resolver; a wildcard resolver (ENSIP-10) and an
//! offchain one (CCIP-read) whose gateway is a loopback server.
//!
//! Other coins' address forms are checked against vectors made by independent encoders
//! (Python `base58` 2.1 and the BIP-173 reference `bech32` 1.2 for version-0 programs) and
//! BIP-350's own bech32m vector. Every answer is checked against the published schema.

use crate::common;

use std::sync::atomic::Ordering;

use alloy::primitives::{Address, B256, Bytes, U256, keccak256};
use alloy::sol_types::SolValue;
use common::chain::{cast, cast_offline};
use common::ens::{Ens, Gateway, calldata, gateway, lookup_of, tagged, template};
use paperchain_engine::evm::ens::{dns_encode, namehash};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::anvil::Artifact;
use serde_json::{Value, json};

const PATH: &str = "/v1/chain/ens/records";
const ALICE: &str = "0x00000000000000000000000000000000000a11ce";
const CAROL: &str = "0x00000000000000000000000000000000000ca201";

async fn call(ctx: &Context, body: Value) -> Result<Value, EngineError> {
    common::route::call(ctx, PATH, body).await
}

async fn ok(ctx: &Context, body: Value) -> Value {
    call(ctx, body.clone()).await.unwrap_or_else(|e| panic!("{body}: {e:?}"))
}

/// anvil with the registry mock and a records resolver set for `name`.
struct Records {
    ens: Ens,
    resolver: String,
}

impl Records {
    async fn new(name: &str) -> Records {
        let ens = Ens::new().await;
        let resolver = ens.anvil.deploy(&Artifact::load("EnsRecordsResolverMock").init_code(&[])).await;
        ens.set_resolver_to(namehash(name), &resolver).await;
        Records { ens, resolver }
    }

    async fn set_addr(&self, name: &str, coin_type: u64, bytes: &[u8]) {
        let args = (namehash(name), U256::from(coin_type), Bytes::copy_from_slice(bytes)).abi_encode_params();
        self.ens.anvil.send(Some(&self.resolver), &calldata("setAddr(bytes32,uint256,bytes)", args)).await;
    }

    async fn set_text(&self, name: &str, key: &str, value: &str) {
        let args = (namehash(name), key.to_string(), value.to_string()).abi_encode_params();
        self.ens.anvil.send(Some(&self.resolver), &calldata("setText(bytes32,string,string)", args)).await;
    }

    async fn set_contenthash(&self, name: &str, hash: &[u8]) {
        let args = (namehash(name), Bytes::copy_from_slice(hash)).abi_encode_params();
        self.ens.anvil.send(Some(&self.resolver), &calldata("setContenthash(bytes32,bytes)", args)).await;
    }
}

fn unhex(text: &str) -> Vec<u8> {
    hex::decode(text).unwrap()
}

/// The genesis block's coinbase as a P2PKH script, and a version-0 witness program.
const P2PKH: &str = "76a91462e907b15cbf27d5425399ebf6f0fb50ebb88f1888ac";
const WITNESS_V0: &str = "0014751e76e8199196d454941c45d1b3a323f1433bd6";
/// ENSIP-7's example: ipfs://QmRAQB6YaCyidP37UdDnjFY5vQuiBrcqdyoW1CuDgwxkD4.
const IPFS_HASH: &str = "e3010170122029f2d17be6139079dc48696d1f582a8530eb9805b561eda517e22a892c7e3f1f";

#[tokio::test]
async fn records_match_what_cast_reads() {
    let name = "alice.eth";
    let r = Records::new(name).await;
    let rpc = r.ens.anvil.url.clone();
    r.set_addr(name, 60, &unhex(&ALICE[2..])).await;
    r.set_addr(name, 0, &unhex(P2PKH)).await;
    r.set_addr(name, 501, &[0x0a; 32]).await;
    r.set_addr(name, 2_147_492_101, &unhex(&CAROL[2..])).await;
    // No optimism address of its own: the default EVM address (ENSIP-19) answers for it.
    r.set_addr(name, 2_147_483_648, &unhex("00000000000000000000000000000000000def01")).await;
    r.set_text(name, "url", "https://alice.example").await;
    r.set_text(name, "com.github", "alice").await;
    r.set_text(name, "description", "line one\nline two\u{7}\u{1b}[31m").await;
    r.set_text(name, "avatar", "eip155:1/erc721:0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D/1000").await;
    r.set_contenthash(name, &unhex(IPFS_HASH)).await;

    let answer = ok(&r.ens.ctx, json!({"name": "Alice.eth"})).await;
    let default_evm = "0x00000000000000000000000000000000000def01";
    assert_eq!(
        answer,
        json!({
            "name": "alice.eth",
            "resolver": r.resolver,
            "wildcard": false,
            "address": ALICE,
            "addresses": [
                {"coin": "eth", "coin_type": 60, "address": ALICE, "format": "evm", "from_default": false},
                {"coin": "btc", "coin_type": 0, "address": "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "format": "bitcoin", "from_default": false},
                {"coin": "sol", "coin_type": 501, "address": "gBxS1f6uyyGPuW5MzGBukidSb71jdsCb5fZaoSzULE5", "format": "base58", "from_default": false},
                {"coin": "base", "coin_type": 2_147_492_101_u64, "address": CAROL, "format": "evm", "from_default": false},
                {"coin": "optimism", "coin_type": 2_147_483_658_u64, "address": default_evm, "format": "evm", "from_default": true},
                {"coin": "arbitrum", "coin_type": 2_147_525_809_u64, "address": default_evm, "format": "evm", "from_default": true},
                {"coin": "polygon", "coin_type": 2_147_483_785_u64, "address": default_evm, "format": "evm", "from_default": true},
            ],
            "texts": {
                "avatar": "eip155:1/erc721:0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D/1000",
                "com.github": "alice",
                "description": "line one\nline two[31m",
                "url": "https://alice.example",
            },
            "avatar": {
                "uri": "eip155:1/erc721:0xBC4CA0EdA7647A8aB7C2061c2E118A18a936f13D/1000",
                "kind": "nft",
                "nft": {"chain_id": 1, "standard": "erc721", "contract": "0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d", "token_id": "1000"},
            },
            "contenthash": {
                "protocol": "ipfs",
                "uri": "ipfs://QmRAQB6YaCyidP37UdDnjFY5vQuiBrcqdyoW1CuDgwxkD4",
                "raw": format!("0x{IPFS_HASH}"),
            },
        })
    );

    // cast reads the same resolver, the same node, the same records. (Its `resolve-name`
    // asks ENS's universal resolver, which this chain does not have.)
    let node = cast_offline(&["namehash", name]);
    assert_eq!(node, format!("{}", namehash(name)));
    let resolver = cast(&rpc, &["call", &r.ens.registry, "resolver(bytes32)(address)", &node]);
    assert_eq!(resolver.to_ascii_lowercase(), r.resolver);
    let eth = cast(&rpc, &["call", &r.resolver, "addr(bytes32)(address)", &node]);
    assert_eq!(eth.to_ascii_lowercase(), ALICE);
    for key in ["url", "com.github", "avatar"] {
        let text = cast(&rpc, &["call", &r.resolver, "text(bytes32,string)(string)", &node, key]);
        assert_eq!(text, format!("\"{}\"", answer["texts"][key].as_str().unwrap()), "{key}");
    }
    let btc = cast(&rpc, &["call", &r.resolver, "addr(bytes32,uint256)(bytes)", &node, "0"]);
    assert_eq!(btc, format!("0x{P2PKH}"));
    let hash = cast(&rpc, &["call", &r.resolver, "contenthash(bytes32)(bytes)", &node]);
    assert_eq!(hash, answer["contenthash"]["raw"]);
}

#[tokio::test]
async fn asked_texts_and_coins_only() {
    let name = "bob.eth";
    let r = Records::new(name).await;
    r.set_addr(name, 0, &unhex(WITNESS_V0)).await;
    r.set_addr(name, 2, &unhex(WITNESS_V0)).await;
    r.set_addr(name, 3, &unhex(P2PKH)).await;
    // A coin type this route has no name for.
    r.set_addr(name, 9_999, &[1, 2, 3]).await;
    r.set_text(name, "url", "https://bob.example").await;
    r.set_text(name, "email", "bob@example.org").await;
    let answer = ok(
        &r.ens.ctx,
        json!({"name": name, "texts": ["url", "url", "com.twitter"], "coins": ["BTC", "ltc", "3", "9999", "eth", "0"]}),
    )
    .await;
    assert_eq!(answer["address"], Value::Null);
    assert_eq!(answer["texts"], json!({"url": "https://bob.example"}), "email was not asked; avatar is unset");
    assert_eq!(answer["avatar"], Value::Null);
    assert_eq!(answer["contenthash"], Value::Null);
    let coins: Vec<(String, String, String)> = answer["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let field = |f: &str| a[f].as_str().unwrap().to_string();
            (field("coin"), field("address"), field("format"))
        })
        .collect();
    let expected = [
        ("btc", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "bitcoin"),
        ("ltc", "ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9", "bitcoin"),
        ("doge", "DEA5vGb2NpAwCiCp5yTE16F3DueQUVivQp", "bitcoin"),
        ("9999", "0x010203", "hex"),
    ];
    let expected: Vec<(String, String, String)> =
        expected.iter().map(|(c, a, f)| (c.to_string(), a.to_string(), f.to_string())).collect();
    assert_eq!(coins, expected);

    // A taproot output (bech32m), a P2SH output, and scripts that are no address.
    let taproot = "512079be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798";
    r.set_addr(name, 0, &unhex(taproot)).await;
    r.set_addr(name, 3, &unhex("a914751e76e8199196d454941c45d1b3a323f1433bd687")).await;
    r.set_addr(name, 2, &unhex("0015751e76e8199196d454941c45d1b3a323f1433bd6aa")).await;
    r.set_addr(name, 501, &[7; 31]).await;
    let answer = ok(&r.ens.ctx, json!({"name": name, "coins": ["btc", "doge", "ltc", "sol"]})).await;
    let addresses: Vec<&str> =
        answer["addresses"].as_array().unwrap().iter().map(|a| a["address"].as_str().unwrap()).collect();
    assert_eq!(
        addresses,
        [
            "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0",
            "A37YDYSwz3438rFtm1SLVcQHyD7JeueC9H",
            "0x0015751e76e8199196d454941c45d1b3a323f1433bd6aa",
            &format!("0x{}", "07".repeat(31)),
        ]
    );
    assert_eq!(answer["addresses"][2]["format"], "hex", "a v0 program of 21 bytes is no address");
}

#[tokio::test]
async fn names_without_records() {
    let r = Records::new("alice.eth").await;
    // No resolver anywhere up the name.
    let answer = ok(&r.ens.ctx, json!({"name": "nobody.eth"})).await;
    assert_eq!(
        answer,
        json!({"name": "nobody.eth", "resolver": null, "wildcard": false, "address": null, "addresses": [], "texts": {}, "avatar": null, "contenthash": null})
    );
    // A resolver with nothing set.
    let answer = ok(&r.ens.ctx, json!({"name": "alice.eth"})).await;
    assert_eq!(answer["resolver"], json!(r.resolver));
    assert_eq!((&answer["address"], &answer["addresses"], &answer["texts"]), (&Value::Null, &json!([]), &json!({})));

    // A parent's resolver that is not a wildcard one does not answer for subnames.
    let answer = ok(&r.ens.ctx, json!({"name": "sub.alice.eth"})).await;
    assert_eq!(answer["resolver"], Value::Null);

    // A wildcard resolver answering only addr(): the other records revert and are left out.
    let wildcard = r.ens.anvil.deploy(&Artifact::load("EnsWildcardResolverMock").init_code(&[])).await;
    r.ens.set_resolver_to(namehash("wild.eth"), &wildcard).await;
    let (dns, node) = (dns_encode("x.wild.eth"), namehash("x.wild.eth"));
    let args = (Bytes::from(dns), node, ALICE.parse::<Address>().unwrap()).abi_encode_params();
    r.ens.anvil.send(Some(&wildcard), &calldata("setAddr(bytes,bytes32,address)", args)).await;
    let answer = ok(&r.ens.ctx, json!({"name": "x.wild.eth"})).await;
    assert_eq!(answer["resolver"], json!(wildcard));
    assert_eq!(answer["wildcard"], json!(true));
    assert_eq!(answer["address"], json!(ALICE));
    assert_eq!(
        answer["addresses"],
        json!([{"coin": "eth", "coin_type": 60, "address": ALICE, "format": "evm", "from_default": false}])
    );
    assert_eq!(answer["texts"], json!({}));
}

#[tokio::test]
async fn offchain_records_come_through_the_gateway() {
    let ens = Ens::new().await;
    let resolver = ens.anvil.deploy(&Artifact::load("EnsOffchainResolverMock").init_code(&[])).await;
    ens.set_resolver_to(namehash("cb.id"), &resolver).await;
    // The gateway knows alice.cb.id's url and contenthash; everything else is 404.
    let sender = resolver.clone();
    let (base, hits) = gateway(move |path| {
        let Some((from, call_data)) = lookup_of(path) else { return Gateway::Reply(400, b"bad path".to_vec()) };
        assert_eq!(from, sender);
        let (dns, record) = <(Bytes, Bytes)>::abi_decode_params(&call_data[4..]).unwrap();
        assert_eq!(dns.as_ref(), dns_encode("alice.cb.id"));
        let node: B256 = namehash("alice.cb.id");
        let text_of = |key: &str| {
            [&keccak256("text(bytes32,string)")[..4], &(node, key.to_string()).abi_encode_params()].concat()
        };
        if record.as_ref() == text_of("url") {
            tagged("https://alice.cb.example".to_string().abi_encode(), &call_data)
        } else if record.as_ref() == [&keccak256("contenthash(bytes32)")[..4], node.as_slice()].concat() {
            tagged(Bytes::from(unhex(IPFS_HASH)).abi_encode(), &call_data)
        } else {
            Gateway::Reply(404, b"{}".to_vec())
        }
    })
    .await;
    let urls = vec![template(&base)];
    ens.anvil.send(Some(&resolver), &calldata("setUrls(string[])", (urls,).abi_encode_params())).await;

    let answer = ok(&ens.ctx, json!({"name": "alice.cb.id", "texts": ["url", "email"], "coins": ["eth", "btc"]})).await;
    assert_eq!(answer["resolver"], json!(resolver));
    assert_eq!(answer["wildcard"], json!(true));
    assert_eq!(answer["texts"], json!({"url": "https://alice.cb.example"}));
    assert_eq!(answer["contenthash"]["uri"], json!("ipfs://QmRAQB6YaCyidP37UdDnjFY5vQuiBrcqdyoW1CuDgwxkD4"));
    assert_eq!(answer["addresses"], json!([]));
    // One lookup per record: addr, btc, avatar, url, email, contenthash.
    assert_eq!(hits.load(Ordering::SeqCst), 6);
}

#[tokio::test]
async fn input_errors_name_their_field() {
    // These fail before any read: no chain is needed.
    let ctx = common::chain::ethereum("http://127.0.0.1:9");
    let many: Vec<String> = (0..33).map(|i| format!("k{i}")).collect();
    let cases = [
        (json!({}), "/name"),
        (json!({"name": ""}), "/name"),
        (json!({"name": "foo bar.eth"}), "/name"),
        (json!({"name": 5}), "/name"),
        (json!({"name": "a.eth", "texts": []}), "/texts"),
        (json!({"name": "a.eth", "texts": many}), "/texts"),
        (json!({"name": "a.eth", "texts": ["url", ""]}), "/texts/1"),
        (json!({"name": "a.eth", "texts": ["a\u{0}b"]}), "/texts/0"),
        (json!({"name": "a.eth", "texts": ["k".repeat(129)]}), "/texts/0"),
        (json!({"name": "a.eth", "coins": []}), "/coins"),
        (json!({"name": "a.eth", "coins": ["eth", "bitcoin"]}), "/coins/1"),
        (json!({"name": "a.eth", "coins": ["4294967296"]}), "/coins/0"),
        (json!({"name": "a.eth", "coins": [60]}), "/coins/0"),
    ];
    for (body, field) in cases {
        let e = call(&ctx, body.clone()).await.expect_err(&body.to_string());
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {e:?}");
    }
    // An unknown field is refused too.
    let e = call(&ctx, json!({"name": "a.eth", "chain": "base"})).await.expect_err("unknown field");
    assert_eq!(e.kind, ErrorKind::InvalidInput, "{e:?}");
}
