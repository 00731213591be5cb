//! What mutation starts from: one valid body per route (several for routes whose actions
//! differ), with file inputs drawn from the shared corpus by type.
//!
//! A template's `{"$file": "pdf"}` stands for a file input of that kind; the fuzzer puts
//! a (mutated) corpus file there as `{"data": base64, "filename": …}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use paperchain_engine::catalog::Catalog;
use paperchain_engine::context::Context;
use paperchain_engine::output::Reply;
use serde_json::{Value, json};

use crate::mutate::Rng;

/// A file of the pool: its name and bytes.
#[derive(Clone, Debug)]
pub struct PoolFile {
    /// The file name, as a file input carries it.
    pub name: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// Corpus files by kind (`pdf`, `docx`, `xlsx`, `pptx`, `office`, `markdown`, `png`…).
#[derive(Debug, Default)]
pub struct Pools {
    kinds: BTreeMap<&'static str, Vec<PoolFile>>,
    /// Whole bodies made at start ([`add_derived`]), by operation.
    bodies: BTreeMap<&'static str, Vec<Value>>,
}

/// Files above this size are left out: every iteration decodes its input, and small files
/// give many more iterations for the same time.
pub const MAX_SEED_BYTES: usize = 400_000;

/// The kinds a file placeholder names and the extensions each takes.
const KINDS: &[(&str, &[&str])] = &[
    ("pdf", &["pdf"]),
    ("docx", &["docx"]),
    ("xlsx", &["xlsx", "xlsm"]),
    ("pptx", &["pptx"]),
    ("office", &["docx", "xlsx", "pptx", "odt", "ods", "odp"]),
    ("markdown", &["pdf", "docx", "xlsx", "pptx", "html", "htm", "epub", "csv", "tsv"]),
];

impl Pools {
    /// Every corpus file under `corpus` up to [`MAX_SEED_BYTES`], by kind.
    pub fn load(corpus: &Path) -> anyhow::Result<Pools> {
        let mut files = Vec::new();
        walk(corpus, &mut files)?;
        files.sort();
        let mut pools = Pools::default();
        for path in files {
            let Some(ext) = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase) else { continue };
            let kinds: Vec<&'static str> =
                KINDS.iter().filter(|(_, exts)| exts.contains(&ext.as_str())).map(|(kind, _)| *kind).collect();
            if kinds.is_empty() {
                continue;
            }
            let bytes = std::fs::read(&path)?;
            if bytes.len() > MAX_SEED_BYTES || bytes.is_empty() {
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("input").to_owned();
            let mut kinds = kinds;
            if ext == "pdf" {
                // PDFs the routes that need a form, attachments or tables are given.
                if path.components().any(|c| c.as_os_str() == "tables") {
                    kinds.push("table_pdf");
                }
                if contains(&bytes, b"/AcroForm") {
                    kinds.push("form_pdf");
                }
                if contains(&bytes, b"/EmbeddedFiles") {
                    kinds.push("attached_pdf");
                }
            }
            for kind in kinds {
                pools.add(kind, PoolFile { name: name.clone(), bytes: bytes.clone() });
            }
        }
        for (kind, _) in KINDS {
            anyhow::ensure!(pools.kinds.contains_key(kind), "the corpus at {} has no {kind} file", corpus.display());
        }
        Ok(pools)
    }

    /// Adds a file of `kind` (images rendered at start, for instance).
    pub fn add(&mut self, kind: &'static str, file: PoolFile) {
        self.kinds.entry(kind).or_default().push(file);
    }

    /// The files of `kind`.
    pub fn of(&self, kind: &str) -> &[PoolFile] {
        self.kinds.get(kind).map_or(&[], Vec::as_slice)
    }

    /// The bodies made at start for `operation`.
    pub fn bodies(&self, operation: &str) -> &[Value] {
        self.bodies.get(operation).map_or(&[], Vec::as_slice)
    }

    /// How many files each kind holds.
    pub fn counts(&self) -> Vec<(&'static str, usize)> {
        self.kinds.iter().map(|(kind, files)| (*kind, files.len())).collect()
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// What the corpus lacks, made by the engine itself at start: page images (PNG, JPEG) for
/// the image routes, a bank statement drawn by Chromium from HTML, signed PDFs, and a `fill_pdf_form`
/// body for each form with that form's own fields.
pub async fn add_derived(catalog: &Catalog, ctx: &Context, pools: &mut Pools) -> anyhow::Result<()> {
    let call = |operation: &str, body: Value| {
        let route = catalog.by_operation(operation);
        async move {
            let route = route?;
            route.call(&serde_json::to_vec(&body).ok()?, ctx).await.ok()
        }
    };
    let sources: Vec<PoolFile> = pools.of("pdf").iter().take(40).cloned().collect();
    for format in ["png", "jpeg"] {
        for source in &sources {
            let body = json!({
                "file": file_input(source), "format": format, "dpi": 36, "pages": "1", "output": "base64",
            });
            if let Some(Reply::Files(set)) = call("convert_pdf_to_images", body).await
                && let Some(image) = set.files.into_iter().next()
            {
                pools.add(
                    if format == "png" { "png" } else { "jpeg" },
                    PoolFile { name: image.filename, bytes: image.bytes },
                );
            }
            if pools.of(format).len() >= 4 {
                break;
            }
        }
        anyhow::ensure!(!pools.of(format).is_empty(), "no corpus PDF rendered to {format}");
    }
    // Chromium may be missing where the fuzzer runs; the statement route then gets PDFs.
    if let Some(Reply::Files(set)) = call("html_to_pdf", json!({ "html": STATEMENT_HTML, "output": "base64" })).await
        && let Some(pdf) = set.files.into_iter().next()
    {
        pools.add("statement_pdf", PoolFile { name: "statement.pdf".into(), bytes: pdf.bytes });
    }
    // Signed PDFs for the signature routes (the fuzzer then damages their signatures).
    for source in sources.iter().take(12) {
        let body = json!({ "file": file_input(source), "certificate": fixture_identity(), "output": "base64" });
        if let Some(Reply::Files(set)) = call("sign_pdf", body).await
            && let Some(pdf) = set.files.into_iter().next()
        {
            pools.add("signed_pdf", PoolFile { name: pdf.filename, bytes: pdf.bytes });
        }
    }
    anyhow::ensure!(!pools.of("signed_pdf").is_empty(), "no corpus PDF could be signed");
    let forms: Vec<PoolFile> = pools.of("form_pdf").iter().take(12).cloned().collect();
    for form in &forms {
        let Some(Reply::Json(listing)) = call("list_pdf_form_fields", json!({ "file": file_input(form) })).await else {
            continue;
        };
        let mut values = serde_json::Map::new();
        for field in listing["fields"].as_array().into_iter().flatten() {
            let Some(name) = field["name"].as_str() else { continue };
            if field["read_only"] == true {
                continue;
            }
            let first_option = field["options"].get(0).and_then(|o| o["export"].as_str()).map(|o| json!(o));
            let value = match field["type"].as_str() {
                Some("text") => json!("Ada Lovelace"),
                Some("checkbox") => json!(true),
                Some("radio" | "choice") => match first_option {
                    Some(option) => option,
                    None => continue,
                },
                _ => continue,
            };
            values.insert(name.to_owned(), value);
        }
        if !values.is_empty() {
            pools
                .bodies
                .entry("fill_pdf_form")
                .or_default()
                .push(json!({ "file": file_input(form), "values": values }));
        }
    }
    Ok(())
}

/// A statement for `convert_bank_statement`: dated rows, signed amounts, running balances,
/// an opening and a closing balance that reconcile.
const STATEMENT_HTML: &str = "<html><body style='font-family:sans-serif'>\
    <h2>Example Bank</h2><p>Statement of account 12345678, currency EUR</p>\
    <p>Opening balance 1,000.00</p>\
    <table><tr><th>Date</th><th>Description</th><th>Amount</th><th>Balance</th></tr>\
    <tr><td>2026-01-02</td><td>Coffee shop</td><td>-3.50</td><td>996.50</td></tr>\
    <tr><td>2026-01-05</td><td>Salary January</td><td>2,500.00</td><td>3,496.50</td></tr>\
    <tr><td>2026-01-09</td><td>Rent</td><td>-1,200.00</td><td>2,296.50</td></tr>\
    <tr><td>2026-01-15</td><td>Supermarket</td><td>-84.20</td><td>2,212.30</td></tr>\
    </table><p>Closing balance 2,212.30</p></body></html>";

/// The signing identity of the tests that need one without a CA (its key is public).
const FIXTURE_P12: &[u8] = include_bytes!("../../engine/tests/fixtures/signing/signer.p12");
/// Its certificate, PEM.
const FIXTURE_CERTIFICATE: &[u8] = include_bytes!("../../engine/tests/fixtures/signing/signer.pem");

/// The fixture's PKCS#12 as a file input with its password.
fn fixture_identity() -> Value {
    json!({ "data": base64::engine::general_purpose::STANDARD.encode(FIXTURE_P12), "filename": "signer.p12", "password": "fixture" })
}

/// A file input of `file`.
fn file_input(file: &PoolFile) -> Value {
    json!({ "data": base64::engine::general_purpose::STANDARD.encode(&file.bytes), "filename": file.name })
}

/// `template` with each `{"$file": kind}` replaced by a file input of a corpus file of
/// that kind.
pub fn fill(rng: &mut Rng, template: Value, pools: &Pools) -> Value {
    if let Some(kind) = placeholder(&template) {
        // A kind with no file (no statement could be drawn) takes any PDF.
        let files = match pools.of(kind) {
            [] => pools.of("pdf"),
            files => files,
        };
        if files.is_empty() {
            return template;
        }
        return file_input(rng.pick(files));
    }
    match template {
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, fill(rng, v, pools))).collect()),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| fill(rng, v, pools)).collect()),
        other => other,
    }
}

/// A file placeholder of `kind`.
fn file(kind: &str) -> Value {
    json!({ "$file": kind })
}

/// The file kind a placeholder names, if `value` is one.
pub fn placeholder(value: &Value) -> Option<&str> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    object.get("$file")?.as_str()
}

const HOLDER: &str = "0xd8da6bf26964af9d7eed9e03e53415d37aa96045";
const USDC: &str = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
const WETH: &str = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2";
const TX: &str = "0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060";
const TRANSFER_TOPIC: &str = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const TRANSFER_EVENT: &str = "Transfer(address indexed from,address indexed to,uint256 value)";

/// Mainnet USDC's mint, a wallet and a transaction signature (64 bytes of 9), base58.
const SOL_USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const SOL_WALLET: &str = "US517G5965aydkZ46HS38QLi7UQiSojurfbQfKCELFx";
const SOL_SIGNATURE: &str = "BUguQsv2ZuHus54HAFzjdJHzZBkygAjKhEeYwSG19tUfUyvvz3worsdQCdAXDNjakJHioSiyxhFiDJrm8XpSXRA";

fn word(address: &str) -> String {
    format!("0x{:0>64}", address.trim_start_matches("0x"))
}

/// The seed bodies of the route `operation`: at least one for every route of the standard
/// catalog (a test checks it).
pub fn templates(operation: &str) -> Vec<Value> {
    let pdf = file("pdf");
    let one = |value: Value| vec![value];
    match operation {
        // Chain reads: their upstreams are a closed port, so `prepare`'s checks of untrusted
        // strings and the error paths of `run` are what runs.
        "get_perp_funding_rates_venue" => one(json!({ "symbol": "BTC", "limit": 5, "min_volume_usd": 1000.0 })),
        "decode_calldata" => vec![
            json!({
                "calldata": format!("0xa9059cbb{}{:0>64}", &word(HOLDER)[2..], "de0b6b3a7640000"),
                "signature": "transfer(address,uint256)",
            }),
            json!({ "calldata": format!("0x095ea7b3{}{}", &word(USDC)[2..], "f".repeat(64)) }),
        ],
        "get_token_info" => one(json!({ "chain": "ethereum", "address": USDC })),
        "get_wallet_balance" => one(json!({ "chain": "base", "address": HOLDER, "token": USDC })),
        "get_gas_price" => one(json!({ "chain": "polygon" })),
        "get_latest_block" => one(json!({ "chain": "ethereum" })),
        "get_transaction" | "get_transaction_receipt" => one(json!({ "chain": "ethereum", "hash": TX })),
        "resolve_ens_name" => vec![json!({ "name": "vitalik.eth" }), json!({ "address": HOLDER })],
        "get_token_price" => one(json!({ "chain": "ethereum", "pair": "ETH/USD" })),
        "check_address_risk" => one(json!({ "address": HOLDER, "chain": "base" })),
        "get_storage_at" => one(json!({ "chain": "ethereum", "address": USDC, "slot": "0x0" })),
        "get_transaction_count" => one(json!({ "chain": "ethereum", "address": HOLDER })),
        "decode_event_log" => one(json!({
            "topics": [TRANSFER_TOPIC, word(HOLDER), word(USDC)],
            "data": format!("0x{:0>64}", "de0b6b3a7640000"),
            "event": TRANSFER_EVENT,
        })),
        "lookup_signature" => vec![json!({ "query": "0xa9059cbb" }), json!({ "query": TRANSFER_TOPIC })],
        "encode_calldata" => vec![
            json!({ "signature": "transfer(address,uint256)", "args": [HOLDER, "1000"] }),
            json!({
                "signature": "swap((address,address,uint24,address,uint256,uint256,uint160),bytes[])",
                "args": [[WETH, USDC, 500, HOLDER, "1", "0", "0"], ["0x01", "0x"]],
            }),
        ],
        "get_logs" => one(json!({
            "chain": "ethereum", "address": USDC, "event": TRANSFER_EVENT, "from_block": 100, "to_block": 200,
        })),
        "call_contract" => one(json!({
            "chain": "ethereum", "to": USDC, "signature": "balanceOf(address)(uint256)", "args": [HOLDER],
        })),
        "get_contract_code" => one(json!({ "chain": "ethereum", "address": USDC, "include_code": true })),
        "get_block" => one(json!({ "chain": "ethereum", "block": 17_000_000, "transactions": true })),
        "get_fee_history" => one(json!({ "chain": "ethereum", "blocks": 10, "percentiles": [10, 50, 90] })),
        "get_chain_status" => one(json!({ "chains": ["ethereum", "base"] })),
        "simulate_call" | "estimate_gas" => one(json!({
            "chain": "ethereum", "to": USDC, "from": HOLDER,
            "signature": "transfer(address,uint256)", "args": [HOLDER, "1"],
        })),
        "get_wallet_balances" => one(json!({ "chain": "ethereum", "address": HOLDER, "tokens": [USDC, WETH] })),
        "get_token_allowance" => one(json!({
            "chain": "ethereum", "token": USDC, "owner": HOLDER,
            "spender": "0x000000000022d473030f116ddee9f6b43ac78ba3",
        })),
        "get_nft_info" => one(json!({
            "chain": "ethereum", "contract": "0xbc4ca0eda7647a8ab7c2061c2e118a18a936f13d", "token_id": "1",
            "holder": HOLDER,
        })),
        "explain_typed_data" => one(json!({ "typed_data": {
            "types": {
                "EIP712Domain": [
                    { "name": "name", "type": "string" }, { "name": "version", "type": "string" },
                    { "name": "chainId", "type": "uint256" }, { "name": "verifyingContract", "type": "address" },
                ],
                "Permit": [
                    { "name": "owner", "type": "address" }, { "name": "spender", "type": "address" },
                    { "name": "value", "type": "uint256" }, { "name": "nonce", "type": "uint256" },
                    { "name": "deadline", "type": "uint256" },
                ],
            },
            "primaryType": "Permit",
            "domain": { "name": "USD Coin", "version": "2", "chainId": 1, "verifyingContract": USDC },
            "message": {
                "owner": HOLDER, "spender": WETH,
                "value": "115792089237316195423570985008687907853269984665640564039457584007913129639935",
                "nonce": 0, "deadline": 1_900_000_000u64,
            },
        } })),
        "check_token_approvals" => one(json!({
            "chain": "ethereum", "owner": HOLDER, "tokens": [USDC], "from_block": 1, "to_block": 1000,
        })),
        "get_ens_records" => {
            one(json!({ "name": "vitalik.eth", "texts": ["url", "com.github"], "coins": ["btc", "60"] }))
        }
        "get_dex_price" => one(json!({ "chain": "ethereum", "base": WETH, "quote": USDC, "fee": 500 })),
        "screen_sanctions" => one(json!({ "address": HOLDER })),
        "check_url" => vec![
            json!({ "url": "https://metamask-wallet.io/claim?airdrop=1" }),
            json!({ "url": "http://xn--uniswp-7ve.org@3232235777:8080/" }),
        ],
        "check_token_risk" => one(json!({ "chain": "base", "address": "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" })),
        "get_solana_balance" => vec![
            json!({ "address": SOL_WALLET }),
            json!({ "network": "devnet", "address": SOL_WALLET, "mint": SOL_USDC }),
        ],
        "get_solana_token_accounts" => one(json!({ "owner": SOL_WALLET, "include_empty": true })),
        "get_solana_token_info" => one(json!({ "mint": SOL_USDC })),
        "get_solana_transaction" => one(json!({ "signature": SOL_SIGNATURE })),
        "get_solana_account" => one(json!({ "address": SOL_USDC, "network": "mainnet" })),
        "get_solana_status" => one(json!({ "accounts": [SOL_WALLET, SOL_USDC] })),

        // Page edits.
        "merge_pdf_files" => vec![
            json!({ "files": [{ "file": pdf, "pages": "1" }, { "file": file("pdf") }], "bookmarks": "per_file" }),
            json!({ "files": [{ "file": pdf }, { "file": file("pdf") }, { "file": file("pdf") }] }),
        ],
        "split_pdf" => vec![json!({ "file": pdf, "ranges": ["1", "2-"] }), json!({ "file": file("pdf"), "every": 1 })],
        "extract_pdf_pages" => one(json!({ "file": pdf, "pages": "1,last" })),
        "remove_pdf_pages" => one(json!({ "file": pdf, "pages": "1" })),
        "reorder_pdf_pages" => one(json!({ "file": pdf, "order": [1, 1] })),
        "rotate_pdf_pages" => one(json!({ "file": pdf, "degrees": 90, "pages": "1" })),
        "add_watermark_to_pdf" => one(json!({ "file": pdf, "text": "DRAFT", "opacity": 0.3, "angle": 45 })),
        "add_pdf_page_numbers" => one(json!({ "file": pdf, "format": "Page {n} of {total}", "start": 1 })),
        "crop_pdf_pages" => one(json!({ "file": pdf, "margins": { "top": 10, "left": 5 }, "pages": "1" })),
        "resize_pdf_pages" => one(json!({ "file": pdf, "size": "A4" })),
        "read_pdf_bookmarks"
        | "inspect_pdf_document"
        | "list_pdf_form_fields"
        | "unlock_pdf"
        | "repair_damaged_pdf" => one(json!({ "file": pdf })),
        "write_pdf_bookmarks" => one(json!({
            "file": pdf, "outline": [{ "title": "A", "page": 1, "children": [{ "title": "B", "page": 1 }] }],
        })),
        "edit_pdf_metadata" => vec![
            json!({ "file": pdf, "action": "read" }),
            json!({ "file": file("pdf"), "action": "edit", "set": { "title": "T", "author": null } }),
            json!({ "file": file("pdf"), "action": "strip" }),
        ],
        "manage_pdf_attachments" => vec![
            json!({ "file": file("attached_pdf"), "action": "list" }),
            json!({ "file": file("attached_pdf"), "action": "extract" }),
            json!({ "file": file("pdf"), "action": "add", "add": [{ "filename": "a.pdf", "file": file("pdf") }] }),
        ],
        "flatten_pdf_forms" => one(json!({ "file": pdf, "annotations": true })),
        // More bodies with each form's own fields come from `add_derived`.
        "fill_pdf_form" => one(json!({ "file": file("form_pdf"), "values": {}, "flatten": true })),
        "password_protect_pdf" => one(json!({ "file": pdf, "user_password": "u", "owner_password": "o" })),
        "convert_pdf_to_images" => vec![
            json!({ "file": pdf, "format": "png", "dpi": 36, "pages": "1" }),
            json!({ "file": file("pdf"), "format": "jpeg", "dpi": 40, "pages": "1-2", "quality": 50 }),
        ],
        "flatten_pdf_to_image_only" => one(json!({ "file": pdf, "dpi": 36 })),
        "extract_pdf_images" => vec![
            json!({ "file": pdf, "pages": "1" }),
            json!({ "file": file("pdf"), "format": "png", "min_width": 2, "min_height": 2 }),
        ],
        "remove_blank_pdf_pages" => one(json!({ "file": pdf, "threshold_percent": 0.5 })),
        "redact_pdf" => vec![
            json!({ "file": pdf, "text": ["the"], "dpi": 72 }),
            json!({ "file": file("form_pdf"), "patterns": ["[0-9]+"], "areas": [{ "page": 1, "box_pt": [0, 0, 100, 100] }], "fill": "#ff0000", "dpi": 72 }),
        ],
        "compare_pdfs" => vec![
            json!({ "original": pdf, "revised": file("pdf") }),
            json!({ "original": file("pdf"), "revised": file("form_pdf"), "format": "pdf", "ignore_case": true }),
        ],
        "split_pdf_by_content" => vec![
            json!({ "file": pdf, "at": "size", "max_mb": 0.05 }),
            json!({ "file": file("pdf"), "at": "separator", "text": "the", "keep_separators": true }),
            json!({ "file": file("pdf"), "at": "blank_pages", "threshold_percent": 1 }),
        ],
        "n_up_pdf_pages" => vec![
            json!({ "file": pdf, "per_sheet": 4 }),
            json!({ "file": file("form_pdf"), "per_sheet": 2, "order": "down", "borders": true, "sheet": "A4" }),
        ],
        "make_pdf_booklet" => vec![
            json!({ "file": pdf }),
            json!({ "file": file("pdf"), "binding": "right", "sheets_per_signature": 1, "gutter_pt": 12 }),
        ],
        "make_pdf_poster" => vec![
            json!({ "file": pdf, "scale": 2 }),
            json!({ "file": file("pdf"), "poster_size": "A2", "margin_pt": 18, "overlap_pt": 20, "marks": true }),
        ],
        "sanitize_pdf" => vec![json!({ "file": pdf }), json!({ "file": file("attached_pdf"), "links": true })],
        "convert_pdf_to_pdfa" => {
            vec![json!({ "file": pdf }), json!({ "file": file("attached_pdf"), "level": "3b" })]
        }
        "make_e_invoice" => one(json!({
            "file": pdf,
            "invoice": { "data": base64::engine::general_purpose::STANDARD.encode(paperchain_engine::pdf::pdfa::facturx::MINIMUM_EXAMPLE), "filename": "i.xml" },
        })),
        "sign_pdf" => vec![
            json!({ "file": pdf, "certificate": fixture_identity() }),
            json!({ "file": file("pdf"), "certificate": fixture_identity(), "field": "Approval", "page": 1,
                    "box_pt": [20, 20, 180, 70], "reason": "Approved", "location": "Lyon" }),
        ],
        "verify_pdf_signatures" => vec![
            json!({ "file": file("signed_pdf") }),
            json!({ "file": file("signed_pdf"), "trust_roots": [{
                "data": base64::engine::general_purpose::STANDARD.encode(FIXTURE_CERTIFICATE), "filename": "signer.pem",
            }] }),
        ],
        "remove_pdf_signatures" => vec![
            json!({ "file": file("signed_pdf") }),
            json!({ "file": file("signed_pdf"), "fields": ["Signature1"], "keep_fields": true }),
        ],
        "convert_images_to_pdf" => vec![
            json!({ "images": [file("png"), file("jpeg")] }),
            json!({ "images": [file("jpeg")], "page_size": "A4", "margin_pt": 10 }),
        ],
        "compress_pdf" => vec![
            json!({ "file": pdf, "mode": "recommended" }),
            json!({ "file": file("pdf"), "mode": "lossless" }),
            json!({ "file": file("pdf"), "mode": "extreme" }),
        ],
        "run_pdf_pipeline" => one(json!({ "file": pdf, "steps": [
            { "op": "rotate", "degrees": 90 },
            { "op": "extract-pages", "pages": "1" },
            { "op": "watermark", "text": "X" },
        ] })),

        // Documents to data, and builders.
        "xlsx_to_json" => {
            vec![json!({ "file": file("xlsx") }), json!({ "file": file("xlsx"), "format": "csv", "header_row": 2 })]
        }
        "build_xlsx" => one(json!({ "sheets": [{
            "name": "Sheet",
            "columns": [
                { "name": "When", "type": "date" }, { "name": "What", "type": "string" },
                { "name": "Amount", "type": "currency", "currency": "EUR" }, { "name": "Share", "type": "percent" },
                { "name": "Count", "type": "integer" }, { "name": "At", "type": "datetime" },
                { "name": "Ok", "type": "boolean" }, { "name": "x", "type": "number", "format": "0.000" },
            ],
            "rows": [
                ["2026-01-31", "=1+1", 12.5, 0.25, 3, "2026-01-31T10:00", true, 1.5],
                [null, "b", -1, 1, -4, null, false, 0],
            ],
        }] })),
        "read_pdf_url" => one(json!({ "url": "http://127.0.0.1:9/a.pdf" })),
        "build_pptx" => one(json!({
            "title": "Deck", "subtitle": "Sub",
            "slides": [{ "title": "One", "bullets": ["a", { "text": "b", "level": 1 }], "notes": "n" }],
        })),
        "office_to_pdf" => one(json!({ "file": file("office") })),
        "fill_docx_template" => {
            one(json!({ "template": file("docx"), "data": { "name": "Ada", "items": [{ "x": 1 }] } }))
        }
        "html_to_pdf" => one(json!({
            "html": "<html><body><h1>Title</h1><p>text <b>bold</b></p><table><tr><td>1</td></tr></table></body></html>",
            "page_size": "A4",
        })),
        "convert_to_markdown" => {
            vec![json!({ "file": file("markdown") }), json!({ "file": file("pdf"), "pages": "1" })]
        }
        "extract_pdf_tables" => {
            vec![
                json!({ "file": file("table_pdf"), "pages": "1" }),
                json!({ "file": file("table_pdf"), "format": "csv" }),
            ]
        }
        "convert_bank_statement" => vec![
            json!({ "file": file("statement_pdf"), "format": "csv" }),
            json!({ "file": file("statement_pdf"), "format": "ofx", "currency": "EUR" }),
        ],
        "convert_pdf_to_docx" => one(json!({ "file": pdf, "pages": "1" })),
        "ocr_pdf" => one(json!({ "file": pdf, "pages": "1", "force": true })),
        "ocr_image_url" => one(json!({ "url": "http://127.0.0.1:9/a.png" })),
        crate::selftest::OPERATION => ["ok", "panic", "internal", "abort"].map(|act| json!({ "act": act })).to_vec(),
        _ => Vec::new(),
    }
}
