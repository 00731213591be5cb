//! The published OpenAPI document against the server, from outside, as a client generator
//! reads it: schemathesis (pinned and installed by `cargo xtask setup`) sends generated
//! requests, schema-valid and schema-invalid, to every route with all of its checks: no 5xx,
//! every status, content type, header and body as documented, every schema-invalid request
//! refused and every schema-valid one accepted.
//!
//! The upstreams are real local ones: an anvil for each EVM chain the schemas list (with
//! an empty ENS registry on Ethereum's), a Solana validator for both clusters (with the
//! accounts, mints and transactions it seeds), the funding upstream replaying recorded
//! answers, and file URLs served on loopback (the only place this server may fetch from here). The hooks in `conformance/hooks.py` give
//! schema-valid cases real documents (a schema cannot say that base64 bytes are a PDF)
//! and name the few refusals that depend on the document rather than the request.

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use paperchain_engine::Context;
use paperchain_engine::chain::funding::{CACHE_TTL, FundingClient, FundingConfig};
use paperchain_engine::chain::price::FEEDS;
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_engine::fetch::AddressPolicy;
use paperchain_engine::solana::{ClusterConfig, Clusters, Network};
use paperchain_testkit::anvil::{Anvil, Artifact};
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::loopback::serve_files;
use paperchain_testkit::surfnet::Surfnet;
use paperchain_testkit::tools::tools_dir;
use paperchain_testkit::{hyperliquid, workspace_root};

use crate::common::*;

/// Generated cases per route and phase; with the coverage phase's own cases, about
/// fifteen thousand requests in all.
const MAX_EXAMPLES: &str = "10";
/// The ENS registry's address, the same on every chain it is deployed on.
const ENS_REGISTRY: &str = "0x00000000000c2e074ec69a0dfb2997ba6c7d2e1e";
/// Fixed, so a failure found in CI is found again by the same command;
/// `PAPERCHAIN_CONFORMANCE_SEED` tries another.
const SEED: &str = "1802";

/// One real document for each file type the routes take (what `x-accepts` lists).
fn samples() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let read = |name: &str| {
        let path = corpus().join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("the corpus file {}: {e}", path.display()))
    };
    vec![
        ("pdf", "application/pdf", read("pdf/sample-files/pdflatex-4-pages.pdf")),
        (
            "docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            read("office/docx/tbl-props.docx"),
        ),
        (
            "xlsx",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            read("office/xlsx/merge_range02.xlsx"),
        ),
        (
            "pptx",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            read("office/pptx/tbl-cell.pptx"),
        ),
        ("odt", "application/vnd.oasis.opendocument.text", read("docling/odf/sources/text_document_01.odt")),
        ("html", "text/html", read("docling/html/sources/formatting.html")),
        ("epub", "application/epub+zip", read("docling/epub/sources/epub_purvis_poetry.epub")),
        ("csv", "text/csv", read("docling/csv/sources/csv-comma.csv")),
        ("png", "image/png", picture(image::ImageFormat::Png)),
        ("jpg", "image/jpeg", picture(image::ImageFormat::Jpeg)),
        ("webp", "image/webp", picture(image::ImageFormat::WebP)),
    ]
}

/// A small picture: a dark bar on white, 240 by 120 pixels.
fn picture(format: image::ImageFormat) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(240, 120, |x, y| {
        if (40..200).contains(&x) && (50..70).contains(&y) {
            image::Rgb([20, 20, 20])
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    picture.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// Every EVM chain the schemas list, each on an anvil of its own chain id; both Solana
/// clusters on the validator at `solana` (serving `genesis`); the funding upstream at
/// `funding`; URL inputs allowed from loopback.
fn context(anvils: &[(&str, &Anvil)], solana: (&str, &str), funding: &str) -> Context {
    let mut ctx = Context::with_policy(AddressPolicy::allowing(["127.0.0.1".parse::<IpAddr>().unwrap()]));
    let configs = anvils
        .iter()
        .map(|(name, anvil)| ChainConfig::new(*name, anvil.chain_id, vec![anvil.url.parse().unwrap()]))
        .collect();
    let timeouts = ChainTimeouts { total: Duration::from_secs(30), attempt: Duration::from_secs(15) };
    ctx.chains = Arc::new(Chains::new(configs, timeouts));
    let (solana, genesis) = solana;
    let clusters = Network::ALL
        .into_iter()
        .map(|network| ClusterConfig::new(network, vec![solana.parse().unwrap()]).with_genesis(genesis))
        .collect();
    ctx.solana = Arc::new(Clusters::new(clusters, timeouts));
    ctx.state.insert(FundingClient::new(FundingConfig {
        base_url: funding.to_string(),
        timeout: Duration::from_secs(10),
        cache_ttl: CACHE_TTL,
    }));
    ctx
}

/// MockAggregator at every feed of [`FEEDS`] on its chain's anvil, updated a minute ago.
async fn place_feeds(anvils: &[(&str, &Anvil)]) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    for feed in FEEDS {
        let Some((_, anvil)) = anvils.iter().find(|(name, _)| *name == feed.chain.name()) else { continue };
        anvil.place_feed(&feed.proxy.to_string(), 7, 123_456_789, now - 60, 8).await;
    }
}

/// What schemathesis printed from its summary on: the failures, then the counts.
fn summary(stdout: &str) -> &str {
    stdout.find("=== FAILURES").or_else(|| stdout.find("=== SUMMARY")).map_or(stdout, |at| &stdout[at..])
}

fn schemathesis(base: &str, samples: &Path, files: &str, solana: &str, report: &Path) -> std::process::Output {
    let st = tools_dir().join("bin/st");
    assert!(st.exists(), "schemathesis is missing at {}: run `cargo xtask setup`", st.display());
    Command::new(&st)
        // Its example database and caches go to the test's own folder, not the checkout:
        // each run starts afresh from the seed.
        .current_dir(report.parent().unwrap())
        .args(["run", &format!("{base}/openapi.json"), "--checks", "all"])
        .args(["--max-examples", MAX_EXAMPLES, "--workers", "2", "--seed"])
        .arg(std::env::var("PAPERCHAIN_CONFORMANCE_SEED").unwrap_or_else(|_| SEED.into()))
        .args(["--request-timeout", "120", "--no-color"])
        // `--checks all` limits each answer to 10 s by default. Times are the benchmarks'
        // business, not a test's: the limit is the request timeout, which fails the call anyway.
        .args(["--max-response-time", "120"])
        .args(["--report", "junit", "--report-junit-path"])
        .arg(report)
        .env("SCHEMATHESIS_HOOKS", "hooks")
        .env("PYTHONPATH", workspace_root().join("gateway/tests/conformance"))
        .env("PAPERCHAIN_CONFORMANCE_SAMPLES", samples)
        .env("PAPERCHAIN_CONFORMANCE_FILES", files)
        .env("PAPERCHAIN_CONFORMANCE_SOLANA", solana)
        // Its own telemetry and update checks would try the internet.
        .env("SCHEMATHESIS_TELEMETRY", "false")
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_as_its_published_schema_says() {
    let (ethereum, base, polygon, solana) =
        tokio::join!(Anvil::start(1), Anvil::start(8453), Anvil::start(137), Surfnet::start());
    let genesis = solana.genesis_hash().await;
    // ENS reads go to the registry's address on Ethereum: a registry with no names there,
    // so that a name is unresolved rather than the registry missing.
    ethereum.set_code(ENS_REGISTRY, &Artifact::load("EnsRegistryMock").deployed_bytecode).await;
    // Every Chainlink feed the price route reads, answering a fresh price.
    place_feeds(&[("ethereum", &ethereum), ("base", &base)]).await;
    let funding = hyperliquid::replay().await;
    let samples = samples();
    let served: HashMap<String, (&'static str, Vec<u8>)> =
        samples.iter().map(|(ext, media, bytes)| (format!("sample.{ext}"), (*media, bytes.clone()))).collect();
    let files = serve_files(served).await;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("samples");
    std::fs::create_dir(&folder).unwrap();
    for (ext, _, bytes) in &samples {
        std::fs::write(folder.join(format!("sample.{ext}")), bytes).unwrap();
    }

    let anvils = [("ethereum", &ethereum), ("base", &base), ("polygon", &polygon)];
    let ctx = context(&anvils, (&solana.url, &genesis), &funding);
    let fixtures = solana.fixtures.to_string();
    let server = start_full(dir.path(), None, ctx).await;
    let report = dir.path().join("junit.xml");
    let (base_url, report_path) = (server.base.clone(), report.clone());
    let out = tokio::task::spawn_blocking(move || schemathesis(&base_url, &folder, &files, &fixtures, &report_path))
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{}", summary(&stdout));
    assert!(out.status.success(), "schemathesis found failures ({}):\n{stdout}\n{stderr}", out.status);

    // Every route was tested, none skipped or errored.
    let junit = std::fs::read_to_string(&report).unwrap();
    let routes = paperchain_engine::catalog::standard().routes().count();
    let cases = junit.matches("<testcase ").count();
    assert_eq!(cases, routes, "one test case per route in the report:\n{junit}");
    for marker in ["<failure", "<error", "<skipped"] {
        assert!(!junit.contains(marker), "{marker} in the report:\n{junit}");
    }
}
