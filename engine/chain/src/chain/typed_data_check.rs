//! `POST /v1/check/typed-data`: an EIP-712 signing request explained in plain words before
//! anyone signs it, with risk flags scored as the address check scores its reasons.
//!
//! Recognised by their primary type and fields: ERC-2612 `Permit` and DAI's `Permit`,
//! Permit2's `PermitSingle`, `PermitBatch`, `PermitTransferFrom`,
//! `PermitBatchTransferFrom` and witness transfers, ERC-3009 `TransferWithAuthorization`
//! and `ReceiveWithAuthorization` (x402's payments), Seaport `OrderComponents`, 0x v4
//! `LimitOrder`/`RfqOrder` and CoW `Order`. Anything else is shown field by field and
//! flagged as unknown. The signing hash is computed from the types (a request whose
//! message does not fit its types is 422).
//!
//! With `chain`, the domain's chain id is compared with the chain's, and the verifying
//! contract's code is read (one request); without it those two checks are listed as skipped.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use alloy::dyn_abi::TypedData;
use alloy::primitives::{Address, Bytes, U256};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::{ChainName, EvmChain, address_text, clean_text, parse_uint256};
use crate::output::Reply;
use crate::price::Price;
use crate::risk::{Reason, ScoreRule, Severity, Verdict, rank, reason_from, rule};

/// Largest typed-data request read: characters of JSON text (the string form), or bytes of
/// the object written as JSON.
pub const MAX_TYPED_DATA: usize = 256 * 1024;
/// A struct's name, as EIP-712 and Solidity write them (`Permit`, `Lib.Order`: one dot at most).
const STRUCT_NAME: &str = r"^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)?$";
/// A member's type: a struct's name or an elementary type (`uint256`, `bytes32`), arrays of
/// it fixed or dynamic (`address[]`, `uint8[2][]`).
const MEMBER_TYPE: &str = r"^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)?(\[([1-9][0-9]{0,18})?\])*$";
/// A deadline further than this from now is `far_expiry` (30 days).
pub const FAR_EXPIRY_SECONDS: u64 = 30 * 24 * 3600;
/// Most message fields listed in `fields`.
const MAX_FIELDS: usize = 500;
/// Longest field value shown, in characters.
const MAX_VALUE_CHARS: usize = 512;

/// The scoring table: every flag this route raises. Score = min(100, sum of points).
pub const SCORING: &[ScoreRule] = &[
    rule(
        "unlimited_amount",
        Severity::High,
        40,
        "the amount is unlimited (the type's maximum): the spender can take every token the signer has, now and later",
    ),
    rule("far_expiry", Severity::Medium, 20, "the permission or order stays valid for more than 30 days, or forever"),
    rule(
        "unknown_spender",
        Severity::Medium,
        20,
        "the spender or operator is not a well-known router, aggregator or protocol contract",
    ),
    rule(
        "chain_id_mismatch",
        Severity::High,
        50,
        "the domain's chain id is not the chain's: a wallet should refuse, the request is for another chain",
    ),
    rule(
        "verifying_contract_without_code",
        Severity::High,
        40,
        "the domain's verifying contract has no code on the chain: nothing legitimate verifies this signature there",
    ),
    rule(
        "nothing_in_return",
        Severity::High,
        60,
        "an order that gives assets away and sends nothing back to the signer",
    ),
    rule(
        "proceeds_to_another_address",
        Severity::High,
        40,
        "an order whose proceeds go to an address other than the signer",
    ),
    rule(
        "moves_funds_directly",
        Severity::Low,
        10,
        "signing alone moves tokens (ERC-3009): whoever holds the signature can submit the transfer",
    ),
    rule("unknown_type", Severity::Medium, 15, "a message type this check does not recognise: read every field"),
    rule("no_verifying_contract", Severity::Low, 10, "the domain names no verifying contract"),
    rule("expired", Severity::Info, 0, "the deadline has passed: the signature can no longer be used"),
];

/// Well-known spenders, operators and verifying contracts (lower-case), by name. The same
/// addresses on every chain they are deployed to (CREATE2 deployments); a name is a hint,
/// not proof that the contract at the address is that one on the chain asked about.
pub const KNOWN_CONTRACTS: &[(&str, &str)] = &[
    ("0x000000000022d473030f116ddee9f6b43ac78ba3", "Uniswap Permit2"),
    ("0x3fc91a3afd70395cd496c647d5a6cc9d4b2b7fad", "Uniswap Universal Router"),
    ("0xef1c6e67703c7bd7107eed8303fbe6ec2554bf6b", "Uniswap Universal Router (old)"),
    ("0x66a9893cc07d91d95644aedd05d03f95e1dba8af", "Uniswap V4 Universal Router"),
    ("0x7a250d5630b4cf539739df2c5dacb4c659f2488d", "Uniswap V2 Router 02"),
    ("0xe592427a0aece92de3edee1f18e0157c05861564", "Uniswap V3 SwapRouter"),
    ("0x68b3465833fb72a70ecdf485e0e4c7bd8665fc45", "Uniswap SwapRouter02"),
    ("0x1111111254eeb25477b68fb85ed929f73a960582", "1inch Aggregation Router v5"),
    ("0x111111125421ca6dc452d289314280a0f8842a65", "1inch Aggregation Router v6"),
    ("0xdef1c0ded9bec7f1a1670819833240f027b25eff", "0x Exchange Proxy"),
    ("0xc92e8bdf79f0507f65a392b0ab4667716bfe0110", "CoW Protocol GPv2VaultRelayer"),
    ("0x9008d19f58aabd9ed0d60971565aa8510560ab41", "CoW Protocol GPv2Settlement"),
    ("0x00000000000000adc04c56bf30ac9d3c0aaf14dc", "Seaport 1.5"),
    ("0x0000000000000068f116a894984e2db1123eb395", "Seaport 1.6"),
    ("0x1e0049783f008a0085193e00003d00cd54003c71", "OpenSea Conduit"),
];

/// Request of `/v1/check/typed-data`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TypedDataInput {
    /// The EIP-712 request as a wallet receives it for `eth_signTypedData_v4`: an object with `types`, `primaryType`, `domain` and `message`, or the same as a JSON string.
    #[schemars(schema_with = "typed_data_schema")]
    pub typed_data: Value,
    /// The chain the signer's wallet is on (`ethereum`, `base`, `polygon`): the domain's chain id is compared with it and the verifying contract's code is read. Without it those checks are skipped.
    #[serde(default)]
    pub chain: Option<ChainName>,
}

fn typed_data_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let request = serde_json::json!({
        "type": "object",
        "required": ["types", "primaryType", "message"],
        "properties": {
            "types": {
                "type": "object",
                "description": "Each struct's members in order, by the struct's name.",
                "propertyNames": {"pattern": STRUCT_NAME},
                "additionalProperties": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "type"],
                        "properties": {
                            "name": {"type": "string"},
                            "type": {"type": "string", "pattern": MEMBER_TYPE}
                        }
                    }
                }
            },
            "primaryType": {"type": "string", "pattern": STRUCT_NAME},
            "domain": {
                "type": "object",
                "properties": {
                    "name": {"type": ["string", "null"]},
                    "version": {"type": ["string", "null"]},
                    "chainId": {"anyOf": [
                        {"type": "integer", "minimum": 0, "maximum": u64::MAX},
                        {"type": "string", "pattern": "^(0x[0-9a-fA-F]{1,64}|[0-9]{1,77})$"},
                        {"type": "null"}
                    ]},
                    "verifyingContract": {"type": ["string", "null"], "pattern": "^0x[0-9a-fA-F]{40}$"},
                    "salt": {"type": ["string", "null"], "pattern": "^0x[0-9a-fA-F]{64}$"}
                }
            },
            "message": {"type": "object"}
        }
    });
    schemars::json_schema!({
        "description": "An EIP-712 request: {types, primaryType, domain, message}, as an object or a JSON string. \
            The primary type and every member's type must be among `types` (or elementary), and the message must fit \
            them: a request whose parts do not fit together is refused with `inconsistent_fields`.",
        "anyOf": [
            request.clone(),
            {
                "type": "string",
                "maxLength": MAX_TYPED_DATA,
                "format": "eip712-json",
                "contentMediaType": "application/json",
                "contentSchema": request,
                "description": "The same object written as JSON text."
            }
        ]
    })
}

/// The parts of an EIP-712 request that must be objects and strings, checked before it is
/// parsed (the parser lets some through, such as a domain given as a list). A chain id
/// written as a whole number with a fraction (`8453.0`) is that number, as JSON Schema
/// counts it; the parser only takes integers.
fn check_shape(mut request: Value) -> Result<Value, EngineError> {
    let wrong = |at: &str, what: &str| {
        Err(EngineError::invalid(format!("/typed_data{at}"), format!("/typed_data{at}: {what}")))
    };
    let Some(object) = request.as_object() else {
        return wrong("", "an EIP-712 request is an object with types, primaryType, domain and message");
    };
    for (key, kind, is_kind) in [
        ("types", "an object", Value::is_object as fn(&Value) -> bool),
        ("primaryType", "a string", Value::is_string),
        ("message", "an object", Value::is_object),
    ] {
        match object.get(key) {
            None => return wrong(&format!("/{key}"), &format!("missing; give {kind}")),
            Some(value) if !is_kind(value) => return wrong(&format!("/{key}"), &format!("must be {kind}")),
            Some(_) => {}
        }
    }
    match object.get("domain") {
        Some(domain) if !domain.is_object() => return wrong("/domain", "must be an object"),
        _ => {}
    }
    if let Some(id) = request.pointer_mut("/domain/chainId")
        && let Some(number) = id.as_f64().filter(|_| id.is_f64())
        && number.fract() == 0.0
        && (0.0..18_446_744_073_709_551_616.0).contains(&number)
    {
        *id = Value::from(number as u64);
    }
    Ok(request)
}

/// What the request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TypedDataKind {
    /// ERC-2612 `Permit`: an ERC-20 allowance granted by signature.
    Permit,
    /// DAI's `Permit`: an all-or-nothing allowance (`allowed`).
    DaiPermit,
    /// Permit2 `PermitSingle`: an allowance through Permit2.
    Permit2Allowance,
    /// Permit2 `PermitBatch`: allowances of several tokens through Permit2.
    Permit2AllowanceBatch,
    /// Permit2 `PermitTransferFrom` (with or without a witness): a one-time transfer through Permit2.
    Permit2Transfer,
    /// Permit2 `PermitBatchTransferFrom`: a one-time transfer of several tokens.
    Permit2TransferBatch,
    /// ERC-3009 `TransferWithAuthorization` or `ReceiveWithAuthorization` (USDC, x402 payments).
    TransferAuthorization,
    /// Seaport `OrderComponents`: an NFT marketplace order.
    SeaportOrder,
    /// 0x v4 `LimitOrder` or `RfqOrder`.
    ZeroExOrder,
    /// CoW Protocol `Order`.
    CowOrder,
    /// A type this check does not recognise.
    Unknown,
}

/// The signing domain.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DomainView {
    /// `name`, untrusted text (anyone can name a domain anything).
    pub name: Option<String>,
    /// `version`.
    pub version: Option<String>,
    /// `chainId`, decimal.
    pub chain_id: Option<String>,
    /// `verifyingContract`, lower-case.
    pub verifying_contract: Option<String>,
    /// What the verifying contract is, when it is a well-known one.
    pub verifying_contract_name: Option<String>,
}

/// One field of the message.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FieldView {
    /// JSON pointer into the message (`/details/amount`).
    pub path: String,
    /// The value as text (untrusted), cut to 512 characters.
    pub value: String,
}

/// A check that could not run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SkippedCheck {
    /// The flag code it would raise.
    pub check: String,
    /// Why it did not run.
    pub reason: String,
}

/// Answer of `/v1/check/typed-data`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TypedDataOutput {
    /// What the request is.
    pub kind: TypedDataKind,
    /// The message's primary type, as given.
    pub primary_type: String,
    /// What signing it does, in plain words. Amounts are raw token units (the token's decimals are not read).
    pub summary: String,
    /// The EIP-712 hash a wallet signs (0x and 64 hex digits).
    pub signing_hash: String,
    /// The signing domain.
    pub domain: DomainView,
    /// The token concerned, lower-case, where there is one.
    pub token: Option<String>,
    /// Who gets the permission or the funds (spender, operator, recipient), lower-case.
    pub spender: Option<String>,
    /// Its name when it is a well-known contract.
    pub spender_name: Option<String>,
    /// The amount, raw units, decimal; null where the request has none.
    pub amount: Option<String>,
    /// Whether `amount` is unlimited (the type's maximum).
    pub unlimited: bool,
    /// Until when it is valid, Unix seconds; null when the request has no deadline.
    pub deadline: Option<String>,
    /// Every field of the message, in order.
    pub fields: Vec<FieldView>,
    /// The flags raised, most serious first.
    pub reasons: Vec<Reason>,
    /// Sum of the reasons' points, capped at 100.
    pub risk_score: u32,
    /// `low` below 20, `caution` from 20, `high` from 50.
    pub verdict: Verdict,
    /// Checks that need `chain` and did not run.
    pub skipped: Vec<SkippedCheck>,
}

/// A checked request.
pub struct TypedDataRequest {
    typed: TypedData,
    signing_hash: String,
    chain: Option<Arc<EvmChain>>,
}

/// The route.
pub struct TypedDataRoute;

impl Route for TypedDataRoute {
    type Input = TypedDataInput;
    type Prepared = TypedDataRequest;
    type Output = TypedDataOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/check/typed-data",
        operation: "explain_typed_data",
        family: Family::Chain,
        summary: "Explain an EIP-712 signing request with risk flags before signing it",
        description: "Explains an eth_signTypedData_v4 request in plain words: ERC-2612 and DAI permits, Permit2 \
            allowances and transfers (single, batch, witness), ERC-3009 TransferWithAuthorization (x402 payments), \
            Seaport, 0x and CoW orders; unknown types field by field. Flags, scored like the address check: unlimited \
            amount, far expiry, spender not a well-known router, nothing in return, proceeds to another address, and \
            with `chain` a chain id mismatch and a verifying contract without code. Gives the signing hash.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: TypedDataInput, ctx: &Context) -> Result<TypedDataRequest, EngineError> {
        let invalid = |why: String| EngineError::invalid("/typed_data", format!("/typed_data: {why}"));
        let request = match input.typed_data {
            Value::String(text) => {
                let chars = text.chars().count();
                if chars > MAX_TYPED_DATA {
                    return Err(invalid(format!("{chars} characters, more than the limit of {MAX_TYPED_DATA}")));
                }
                serde_json::from_str(&text)
                    .map_err(|e| invalid(format!("not JSON ({})", clean_text(&e.to_string(), 200))))?
            }
            other => {
                let size = other.to_string().len();
                if size > MAX_TYPED_DATA {
                    return Err(invalid(format!("{size} bytes as JSON, more than the limit of {MAX_TYPED_DATA}")));
                }
                other
            }
        };
        let request = check_shape(request)?;
        let typed: TypedData = serde_json::from_value(request).map_err(|e| {
            let why = e.to_string();
            // serde's word for a type name or domain value that does not parse.
            let why = if why.contains("untagged enum") {
                "a struct name, a member's type or a domain value is malformed".to_string()
            } else {
                clean_text(&why, 200)
            };
            invalid(format!("not an EIP-712 request ({why})"))
        })?;
        let hash = typed.eip712_signing_hash().map_err(|e| {
            EngineError::invalid_with(
                "inconsistent_fields",
                "/typed_data",
                format!("/typed_data: the message does not fit its types ({})", clean_text(&e.to_string(), 200)),
            )
        })?;
        let chain = match &input.chain {
            Some(name) => Some(ctx.chains.resolve(name, "/chain")?),
            None => None,
        };
        Ok(TypedDataRequest { typed, signing_hash: hash.to_string(), chain })
    }

    fn quote(_: &TypedDataRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: TypedDataRequest, _: &Context) -> Result<Reply<TypedDataOutput>, EngineError> {
        let TypedDataRequest { typed, signing_hash, chain } = request;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
        let mut answer = explain(&typed, signing_hash, now);
        let verifying = typed.domain.verifying_contract;
        match chain {
            Some(chain) => {
                if let Some(id) = typed.domain.chain_id
                    && id != U256::from(chain.chain_id())
                {
                    answer.flag(
                        "chain_id_mismatch",
                        format!(
                            "The domain is for chain id {id}, but {} is chain id {}: a wallet on {} should refuse it.",
                            chain.name(),
                            chain.chain_id(),
                            chain.name()
                        ),
                    );
                }
                if let Some(contract) = verifying {
                    let code: Bytes = chain.deadline(chain.request("eth_getCode", (contract, "latest"))).await?;
                    if code.is_empty() {
                        answer.flag(
                            "verifying_contract_without_code",
                            format!(
                                "The verifying contract {} has no code on {}.",
                                address_text(&contract),
                                chain.name()
                            ),
                        );
                    }
                }
            }
            None => {
                for (check, reason) in [
                    ("chain_id_mismatch", "no `chain` was given to compare the domain's chain id with"),
                    ("verifying_contract_without_code", "no `chain` was given to read the verifying contract on"),
                ] {
                    answer.skipped.push(SkippedCheck { check: check.into(), reason: reason.into() });
                }
            }
        }
        answer.finish();
        Ok(Reply::Json(answer))
    }
}

impl TypedDataOutput {
    /// Raises flag `code` (once) with `message`.
    fn flag(&mut self, code: &str, message: String) {
        if self.reasons.iter().any(|r| r.code == code) {
            return;
        }
        self.reasons.extend(reason_from(SCORING, code, message));
    }

    fn finish(&mut self) {
        self.risk_score = rank(&mut self.reasons);
        self.verdict = Verdict::from_score(self.risk_score);
    }
}

/// The well-known name of `address`, if any.
pub fn known_name(address: &str) -> Option<&'static str> {
    let lower = address.to_ascii_lowercase();
    KNOWN_CONTRACTS.iter().find(|(a, _)| *a == lower).map(|(_, name)| *name)
}

/// A message member as text: strings as given, numbers as written.
fn text(value: &Value, key: &str) -> Option<String> {
    match value.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn number(value: &Value, key: &str) -> Option<U256> {
    text(value, key).and_then(|t| parse_uint256(&t))
}

fn address(value: &Value, key: &str) -> Option<String> {
    text(value, key).and_then(|t| t.parse::<Address>().ok()).map(|a| address_text(&a))
}

/// The maximum of an unsigned type of `bits` bits.
fn max_of(bits: usize) -> U256 {
    if bits >= 256 { U256::MAX } else { (U256::from(1) << bits) - U256::from(1) }
}

/// Flattens the message into `/path` → text, at most [`MAX_FIELDS`].
fn flatten(value: &Value, path: String, out: &mut Vec<FieldView>) {
    if out.len() >= MAX_FIELDS {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, member) in map {
                flatten(member, format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")), out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(item, format!("{path}/{i}"), out);
            }
        }
        Value::String(s) => out.push(FieldView { path, value: clean_text(s, MAX_VALUE_CHARS) }),
        other => out.push(FieldView { path, value: clean_text(&other.to_string(), MAX_VALUE_CHARS) }),
    }
}

/// Everything that can be said from the request alone.
fn explain(typed: &TypedData, signing_hash: String, now: u64) -> TypedDataOutput {
    let message = &typed.message;
    let domain = &typed.domain;
    let verifying = domain.verifying_contract.as_ref().map(address_text);
    let mut out = TypedDataOutput {
        kind: TypedDataKind::Unknown,
        primary_type: clean_text(&typed.primary_type, 200),
        summary: String::new(),
        signing_hash,
        domain: DomainView {
            name: domain.name.as_deref().map(|n| clean_text(n, 200)),
            version: domain.version.as_deref().map(|v| clean_text(v, 100)),
            chain_id: domain.chain_id.map(|c| c.to_string()),
            verifying_contract_name: verifying.as_deref().and_then(known_name).map(str::to_string),
            verifying_contract: verifying.clone(),
        },
        token: None,
        spender: None,
        spender_name: None,
        amount: None,
        unlimited: false,
        deadline: None,
        fields: Vec::new(),
        reasons: Vec::new(),
        risk_score: 0,
        verdict: Verdict::Low,
        skipped: Vec::new(),
    };
    flatten(message, String::new(), &mut out.fields);
    if verifying.is_none() {
        out.flag("no_verifying_contract", "The domain names no verifying contract.".into());
    }
    let primary = typed.primary_type.as_str();
    let has = |key: &str| message.get(key).is_some();
    match primary {
        "Permit" if has("spender") && has("value") => {
            out.kind = TypedDataKind::Permit;
            let amount = number(message, "value");
            out.permission(
                verifying.clone(),
                address(message, "spender"),
                amount,
                max_of(256),
                number(message, "deadline"),
                now,
            );
        }
        "Permit" if has("spender") && has("allowed") => {
            out.kind = TypedDataKind::DaiPermit;
            let allowed = text(message, "allowed").is_some_and(|a| a == "true");
            let amount = if allowed { U256::MAX } else { U256::ZERO };
            let expiry = number(message, "expiry").filter(|e| !e.is_zero()).or(Some(U256::MAX));
            out.permission(verifying.clone(), address(message, "spender"), Some(amount), U256::MAX, expiry, now);
            if !allowed {
                out.summary = "Revokes the spender's DAI-style allowance (allowed: false).".into();
            }
        }
        "PermitSingle" | "PermitBatch" => {
            let details: Vec<&Value> = match message.get("details") {
                Some(Value::Array(items)) => items.iter().collect(),
                Some(single) => vec![single],
                None => Vec::new(),
            };
            out.kind = if primary == "PermitSingle" {
                TypedDataKind::Permit2Allowance
            } else {
                TypedDataKind::Permit2AllowanceBatch
            };
            let spender = address(message, "spender");
            for (i, detail) in details.iter().enumerate() {
                let expiration = number(detail, "expiration");
                out.permission(
                    address(detail, "token"),
                    spender.clone(),
                    number(detail, "amount"),
                    max_of(160),
                    expiration,
                    now,
                );
                if i > 0 {
                    out.token = None;
                    out.amount = None;
                }
            }
            if details.len() > 1 {
                out.summary = format!(
                    "Gives {} an allowance through Permit2 over {} tokens{}.",
                    spender.as_deref().unwrap_or("an unknown spender"),
                    details.len(),
                    if out.unlimited { ", at least one of them unlimited" } else { "" }
                );
            }
            if let Some(at) = number(message, "sigDeadline").and_then(|d| u64::try_from(d).ok()).filter(|at| *at < now)
            {
                out.flag(
                    "expired",
                    format!("The signature deadline ({at}) has passed: the signature can no longer be used."),
                );
            }
        }
        p if p.starts_with("PermitTransferFrom")
            || p.starts_with("PermitBatchTransferFrom")
            || p.starts_with("PermitWitnessTransferFrom")
            || p.starts_with("PermitBatchWitnessTransferFrom") =>
        {
            let permitted: Vec<&Value> = match message.get("permitted") {
                Some(Value::Array(items)) => items.iter().collect(),
                Some(single) => vec![single],
                None => Vec::new(),
            };
            out.kind =
                if p.contains("Batch") { TypedDataKind::Permit2TransferBatch } else { TypedDataKind::Permit2Transfer };
            let spender = address(message, "spender");
            for (i, item) in permitted.iter().enumerate() {
                out.permission(
                    address(item, "token"),
                    spender.clone(),
                    number(item, "amount"),
                    U256::MAX,
                    number(message, "deadline"),
                    now,
                );
                if i > 0 {
                    out.token = None;
                    out.amount = None;
                }
            }
            out.summary = format!(
                "Lets {} transfer {} once through Permit2{}{}.",
                spender.as_deref().unwrap_or("an unknown spender"),
                describe_amounts(&permitted),
                if message.get("witness").is_some() { ", bound to a witness (an order or intent)" } else { "" },
                out.deadline.as_deref().map(|d| format!(", until {d}")).unwrap_or_default()
            );
        }
        "TransferWithAuthorization" | "ReceiveWithAuthorization" => {
            out.kind = TypedDataKind::TransferAuthorization;
            let to = address(message, "to");
            let value = number(message, "value");
            out.token = verifying.clone();
            out.spender_name = to.as_deref().and_then(known_name).map(str::to_string);
            out.spender = to.clone();
            out.amount = value.map(|v| v.to_string());
            out.unlimited = value == Some(U256::MAX);
            if out.unlimited {
                out.flag("unlimited_amount", "The transfer is for the token's maximum amount.".into());
            }
            out.check_deadline(number(message, "validBefore"), now, "validBefore");
            out.flag(
                "moves_funds_directly",
                "Signing this authorizes the transfer itself: whoever holds the signature can submit it until validBefore."
                    .into(),
            );
            out.summary = format!(
                "Transfers {} units of token {} from {} to {}{} (ERC-3009{}).",
                out.amount.as_deref().unwrap_or("an unknown amount of"),
                verifying.as_deref().unwrap_or("(no verifying contract)"),
                address(message, "from").as_deref().unwrap_or("an unknown sender"),
                to.as_deref().unwrap_or("an unknown recipient"),
                out.deadline.as_deref().map(|d| format!(", valid until {d}")).unwrap_or_default(),
                if primary == "ReceiveWithAuthorization" { ", only the recipient can submit it" } else { "" }
            );
        }
        "OrderComponents" if has("offerer") && has("offer") => seaport(&mut out, message, now),
        "LimitOrder" | "RfqOrder" if has("makerToken") => {
            out.kind = TypedDataKind::ZeroExOrder;
            out.token = address(message, "makerToken");
            out.amount = number(message, "makerAmount").map(|a| a.to_string());
            out.spender = verifying.clone();
            out.spender_name = verifying.as_deref().and_then(known_name).map(str::to_string);
            out.check_deadline(number(message, "expiry"), now, "expiry");
            out.summary = format!(
                "A 0x order: gives {} units of {} for {} units of {}{}.",
                out.amount.as_deref().unwrap_or("?"),
                out.token.as_deref().unwrap_or("an unknown token"),
                number(message, "takerAmount").map(|a| a.to_string()).as_deref().unwrap_or("?"),
                address(message, "takerToken").as_deref().unwrap_or("an unknown token"),
                out.deadline.as_deref().map(|d| format!(", until {d}")).unwrap_or_default()
            );
            if number(message, "takerAmount").is_some_and(|a| a.is_zero()) {
                out.flag("nothing_in_return", "The order asks nothing (takerAmount 0) for what it gives.".into());
            }
        }
        "Order" if has("sellToken") && has("buyToken") => {
            out.kind = TypedDataKind::CowOrder;
            out.token = address(message, "sellToken");
            out.amount = number(message, "sellAmount").map(|a| a.to_string());
            out.check_deadline(number(message, "validTo"), now, "validTo");
            let receiver = address(message, "receiver").filter(|r| r != &address_text(&Address::ZERO));
            if let Some(receiver) = &receiver {
                out.flag(
                    "proceeds_to_another_address",
                    format!("The bought tokens go to {receiver}, not to the signer."),
                );
            }
            if number(message, "buyAmount").is_some_and(|a| a.is_zero()) {
                out.flag("nothing_in_return", "The order accepts 0 of the bought token for what it sells.".into());
            }
            out.summary = format!(
                "A CoW Protocol order: sells {} units of {} for at least {} units of {}{}.",
                out.amount.as_deref().unwrap_or("?"),
                out.token.as_deref().unwrap_or("an unknown token"),
                number(message, "buyAmount").map(|a| a.to_string()).as_deref().unwrap_or("?"),
                address(message, "buyToken").as_deref().unwrap_or("an unknown token"),
                receiver.map(|r| format!(", paid to {r}")).unwrap_or_default()
            );
        }
        _ => {
            out.kind = TypedDataKind::Unknown;
            out.flag(
                "unknown_type",
                format!("`{}` is not a type this check recognises; read every field before signing.", out.primary_type),
            );
            out.summary = format!(
                "An unrecognised `{}` message for {} with {} fields: read them below before signing.",
                out.primary_type,
                out.domain.name.as_deref().unwrap_or("an unnamed domain"),
                out.fields.len()
            );
        }
    }
    out
}

/// `N units of T, M units of U` for Permit2's permitted lists.
fn describe_amounts(items: &[&Value]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|item| {
            format!(
                "{} units of {}",
                number(item, "amount").map(|a| a.to_string()).as_deref().unwrap_or("?"),
                address(item, "token").as_deref().unwrap_or("an unknown token")
            )
        })
        .collect();
    if parts.is_empty() { "nothing".into() } else { parts.join(", ") }
}

impl TypedDataOutput {
    /// An allowance of `amount` (maximum `max` for its type) of `token` to `spender`, valid until `deadline`.
    fn permission(
        &mut self,
        token: Option<String>,
        spender: Option<String>,
        amount: Option<U256>,
        max: U256,
        deadline: Option<U256>,
        now: u64,
    ) {
        let unlimited = amount.is_some_and(|a| a >= max || a >= U256::from(1) << 255);
        self.token = token.clone();
        self.spender_name = spender.as_deref().and_then(known_name).map(str::to_string);
        self.spender = spender.clone();
        self.amount = amount.map(|a| a.to_string());
        self.unlimited |= unlimited;
        if unlimited {
            self.flag(
                "unlimited_amount",
                format!(
                    "The allowance is unlimited: {} can take every unit of the token.",
                    spender.as_deref().unwrap_or("the spender")
                ),
            );
        }
        match &self.spender_name {
            Some(_) => {}
            None => self.flag(
                "unknown_spender",
                format!(
                    "The spender {} is not a well-known router or protocol contract.",
                    spender.as_deref().unwrap_or("(missing)")
                ),
            ),
        }
        self.check_deadline(deadline, now, "deadline");
        self.summary = format!(
            "Gives {}{} an allowance of {} of token {}{}.",
            spender.as_deref().unwrap_or("an unknown spender"),
            self.spender_name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
            if unlimited {
                "unlimited units".to_string()
            } else {
                amount.map(|a| format!("{a} units")).unwrap_or("an unknown amount".into())
            },
            token.as_deref().unwrap_or("(unknown)"),
            self.deadline.as_deref().map(|d| format!(", valid until {d}")).unwrap_or_default()
        );
    }

    fn check_deadline(&mut self, deadline: Option<U256>, now: u64, what: &str) {
        let Some(deadline) = deadline else { return };
        let shown = deadline.to_string();
        match u64::try_from(deadline) {
            Ok(at) if at < now => {
                self.flag("expired", format!("The {what} ({at}) has passed: the signature can no longer be used."))
            }
            Ok(at) if at - now > FAR_EXPIRY_SECONDS => {
                self.flag("far_expiry", format!("The {what} is {} days away.", (at - now) / 86_400))
            }
            Ok(_) => {}
            Err(_) => self.flag("far_expiry", format!("The {what} is {shown}: it never expires.")),
        }
        self.deadline = Some(shown);
    }
}

/// Seaport `OrderComponents`: what the signer gives (offer) and gets back (consideration to
/// the offerer); fees and royalties go to others.
fn seaport(out: &mut TypedDataOutput, message: &Value, now: u64) {
    out.kind = TypedDataKind::SeaportOrder;
    let offerer = address(message, "offerer");
    let items = |key: &str| -> Vec<Value> {
        match message.get(key) {
            Some(Value::Array(items)) => items.clone(),
            _ => Vec::new(),
        }
    };
    let offer = items("offer");
    let consideration = items("consideration");
    let to_offerer: Vec<&Value> =
        consideration.iter().filter(|c| offerer.is_some() && address(c, "recipient") == offerer).collect();
    let returned: U256 =
        to_offerer.iter().filter_map(|c| number(c, "endAmount")).fold(U256::ZERO, |a, b| a.saturating_add(b));
    let kind_name = |item: &Value| match text(item, "itemType").as_deref() {
        Some("0") => "native coin",
        Some("1") => "ERC-20",
        Some("2") | Some("4") => "ERC-721",
        Some("3") | Some("5") => "ERC-1155",
        _ => "unknown item",
    };
    let describe = |list: &[&Value]| -> String {
        let parts: Vec<String> = list
            .iter()
            .map(|i| {
                format!(
                    "{} {} of {} (id {})",
                    number(i, "endAmount").map(|a| a.to_string()).as_deref().unwrap_or("?"),
                    kind_name(i),
                    address(i, "token").as_deref().unwrap_or("?"),
                    text(i, "identifierOrCriteria").as_deref().unwrap_or("?")
                )
            })
            .collect();
        if parts.is_empty() { "nothing".into() } else { parts.join(", ") }
    };
    let offer_refs: Vec<&Value> = offer.iter().collect();
    out.summary = format!(
        "A Seaport order by {}: gives {}, and receives {}; {} other consideration item(s) go to others (fees, royalties).",
        offerer.as_deref().unwrap_or("an unknown offerer"),
        describe(&offer_refs),
        describe(&to_offerer),
        consideration.len() - to_offerer.len()
    );
    if !offer.is_empty() && (to_offerer.is_empty() || returned.is_zero()) {
        out.flag(
            "nothing_in_return",
            "The order gives its offer away and sends nothing back to the offerer: a classic phishing listing.".into(),
        );
    }
    out.token = offer.first().and_then(|i| address(i, "token"));
    out.spender = out.domain.verifying_contract.clone();
    out.spender_name = out.domain.verifying_contract_name.clone();
    out.check_deadline(number(message, "endTime"), now, "endTime");
}
