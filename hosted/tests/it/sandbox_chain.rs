//! The sandbox chain (hosted/src/sandbox.rs) end to end: anvil with the test USDC at
//! the Base USDC address, payments signed the way an x402 v2 client signs them, and the
//! in-process facilitator verifying and settling them on that chain.
//!
//! anvil comes from `cargo xtask setup`; without it these tests fail with the sandbox's own
//! message saying so (they never skip).

use std::str::FromStr as _;
use std::time::{SystemTime, UNIX_EPOCH};

use alloy::network::EthereumWallet;
use alloy::primitives::{Address, B256, U256, address};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::signers::Signer as _;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol;
use alloy::sol_types::{SolStruct as _, eip712_domain};
use base64::Engine as _;
use paperchain_hosted::sandbox::{SandboxChain, SandboxFacilitator};
use paperchain_protocol::upto_evm::Permit;
use paperchain_testkit::sandbox::sandbox_chain;
use paperchain_testkit::x402::TransferWithAuthorization;
use serde_json::{Value, json};
use x402_chain_eip155::V2Eip155ExactClient;
use x402_facilitator_local::FacilitatorLocalError;
use x402_types::facilitator::Facilitator as _;
use x402_types::proto::{self, OriginalJson, PaymentVerificationError, v2};
use x402_types::scheme::X402SchemeFacilitatorError;
use x402_types::scheme::client::X402SchemeClient as _;

/// The quote every test pays: 0.002 USDC.
const AMOUNT: u64 = 2000;

sol! {
    // The EIP-3009 functions take 7 to 9 arguments by their standard.
    #[allow(clippy::too_many_arguments)]
    #[sol(rpc)]
    #[derive(Debug)]
    interface ITestUsdc {
        function name() external view returns (string memory);
        function symbol() external view returns (string memory);
        function decimals() external view returns (uint8);
        function version() external view returns (string memory);
        function totalSupply() external view returns (uint256);
        function DOMAIN_SEPARATOR() external view returns (bytes32);
        function owner() external view returns (address);
        function allowance(address holder, address spender) external view returns (uint256);
        function nonces(address holder) external view returns (uint256);
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
        function initialize(address initialOwner) external;
        function mint(address to, uint256 value) external returns (bool);
        function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature) external;
        function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external;
        function cancelAuthorization(address authorizer, bytes32 nonce, bytes signature) external;
        function permit(address holder, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s) external;
    }

    struct ReceiveWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }

    struct CancelAuthorization {
        address authorizer;
        bytes32 nonce;
    }

}

async fn facilitator(sandbox: &SandboxChain) -> SandboxFacilitator {
    sandbox.facilitator().await.unwrap_or_else(|e| panic!("{e}"))
}

async fn balance(sandbox: &SandboxChain, holder: Address) -> U256 {
    sandbox.balance_of(holder).await.unwrap_or_else(|e| panic!("{e}"))
}

/// The requirements the paywall quotes, for `network` (`eip155:8453` in the sandbox).
fn requirements(sandbox: &SandboxChain, network: &str) -> Value {
    json!({
        "scheme": "exact",
        "network": network,
        "amount": AMOUNT.to_string(),
        "asset": sandbox.token().to_checksum(None),
        "payTo": sandbox.pay_to().to_checksum(None),
        "maxTimeoutSeconds": 300,
        "extra": {"name": "USD Coin", "version": "2"},
    })
}

/// The payment payload `signer` makes for `requirements`, through x402's own v2 client.
async fn client_payment(signer: &PrivateKeySigner, requirements: &Value) -> Value {
    let accepts = serde_json::value::RawValue::from_string(requirements.to_string()).expect("raw JSON");
    let required = proto::PaymentRequired::V2(v2::PaymentRequired {
        x402_version: v2::X402Version2,
        error: None,
        resource: Some(v2::ResourceInfo {
            url: "http://127.0.0.1/v1/pdf/rotate".into(),
            description: None,
            mime_type: None,
        }),
        accepts: vec![OriginalJson(accepts)],
        extensions: Default::default(),
    });
    let candidates = V2Eip155ExactClient::new(signer.clone()).accept(&required);
    assert_eq!(candidates.len(), 1, "the client takes the requirements: {requirements}");
    let header = candidates[0].sign().await.unwrap_or_else(|e| panic!("signing: {e}"));
    let bytes = base64::engine::general_purpose::STANDARD.decode(header).expect("the payment header is base64");
    serde_json::from_slice(&bytes).expect("the payment header is JSON")
}

/// The facilitator request for `payment` against `requirements`.
fn facilitator_request(payment: &Value, requirements: &Value) -> proto::VerifyRequest {
    let body = json!({"x402Version": 2, "paymentPayload": payment, "paymentRequirements": requirements});
    proto::VerifyRequest::from(serde_json::value::RawValue::from_string(body.to_string()).expect("raw JSON"))
}

/// Re-signs `payment`'s authorization after `change` edits it, as a client with other
/// timing or nonce would have signed it.
async fn resign(signer: &PrivateKeySigner, token: Address, payment: &mut Value, change: impl FnOnce(&mut Value)) {
    let authorization = &mut payment["payload"]["authorization"];
    change(authorization);
    let field = |key: &str| authorization[key].as_str().unwrap_or_else(|| panic!("{key} in {authorization}"));
    let number = |key: &str| U256::from_str(field(key)).unwrap_or_else(|e| panic!("{key}: {e}"));
    let message = TransferWithAuthorization {
        from: Address::from_str(field("from")).expect("from"),
        to: Address::from_str(field("to")).expect("to"),
        value: number("value"),
        validAfter: number("validAfter"),
        validBefore: number("validBefore"),
        nonce: B256::from_str(field("nonce")).expect("nonce"),
    };
    let hash = message.eip712_signing_hash(&usdc_domain(token));
    let signature = signer.sign_hash(&hash).await.expect("signing");
    payment["payload"]["signature"] = json!(format!("0x{}", hex::encode(signature.as_bytes())));
}

fn usdc_domain(token: Address) -> alloy::sol_types::Eip712Domain {
    eip712_domain! { name: "USD Coin", version: "2", chain_id: 8453, verifying_contract: token, }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

/// The verification error inside a facilitator error, or a panic naming what came instead.
fn verification_error(error: &FacilitatorLocalError) -> &PaymentVerificationError {
    match error {
        FacilitatorLocalError::Verification(X402SchemeFacilitatorError::PaymentVerification(e))
        | FacilitatorLocalError::Settlement(X402SchemeFacilitatorError::PaymentVerification(e)) => e,
        other => panic!("expected a payment verification error, got {other:?}"),
    }
}

/// Whether `error` is x402's report of the token reverting with `reason` in a simulation
/// or a settlement (an `OnchainFailure`, whatever the cause of the revert).
fn reverted(error: &FacilitatorLocalError, reason: &str) -> bool {
    match error {
        FacilitatorLocalError::Verification(X402SchemeFacilitatorError::OnchainFailure(message))
        | FacilitatorLocalError::Settlement(X402SchemeFacilitatorError::OnchainFailure(message)) => {
            message.contains("execution reverted") && message.contains(reason)
        }
        _ => false,
    }
}

#[tokio::test]
async fn a_payment_verifies_settles_once_and_moves_exactly_the_quote() {
    let sandbox = sandbox_chain().await;
    let facilitator = facilitator(&sandbox).await;
    let requirements = requirements(&sandbox, "eip155:8453");
    let payment = client_payment(&sandbox.payer_signer(), &requirements).await;
    let request = facilitator_request(&payment, &requirements);
    let payer_before = balance(&sandbox, sandbox.payer()).await;
    assert_eq!(payer_before, U256::from(1_000_000_000u64), "the payer starts with 1,000 USDC");
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::ZERO);

    let verified = facilitator.verify(&request).await.unwrap_or_else(|e| panic!("verify: {e:?}"));
    assert_eq!(verified.0["isValid"], json!(true), "{}", verified.0);
    let payer = verified.0["payer"].as_str().expect("a payer");
    assert_eq!(Address::from_str(payer).expect("an address"), sandbox.payer());
    // Verification only simulates: nothing moved yet.
    assert_eq!(balance(&sandbox, sandbox.payer()).await, payer_before);

    let settled = facilitator.settle(&request).await.unwrap_or_else(|e| panic!("settle: {e:?}"));
    assert_eq!(settled.0["success"], json!(true), "{}", settled.0);
    assert_eq!(settled.0["network"], json!("eip155:8453"));
    let tx = settled.0["transaction"].as_str().expect("a transaction hash");
    let tx = B256::from_str(tx).unwrap_or_else(|e| panic!("{tx}: {e}"));
    let reader = ProviderBuilder::new().connect_http(sandbox.rpc_url().clone());
    let receipt = reader.get_transaction_receipt(tx).await.expect("eth_getTransactionReceipt").expect("mined");
    assert!(receipt.status(), "the settlement succeeded on chain");
    assert_eq!(receipt.from, sandbox.facilitator_signer(), "the facilitator paid the gas");
    assert_eq!(balance(&sandbox, sandbox.payer()).await, payer_before - U256::from(AMOUNT));
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::from(AMOUNT));
    let usdc = ITestUsdc::new(sandbox.token(), &reader);
    let nonce = B256::from_str(payment["payload"]["authorization"]["nonce"].as_str().expect("nonce")).expect("nonce");
    assert!(usdc.authorizationState(sandbox.payer(), nonce).call().await.expect("authorizationState"));

    // The same payment again: the nonce is spent, so it fails and nothing moves.
    // x402 does not read authorizationState: the spent nonce shows as the simulation's
    // revert, which it reports as an on-chain failure, not a payment verification error.
    let again = facilitator.settle(&request).await.expect_err("a replayed payment must not settle");
    assert!(reverted(&again, "authorization is used or canceled"), "{again:?}");
    assert!(matches!(again, FacilitatorLocalError::Settlement(_)), "{again:?}");
    let reverify = facilitator.verify(&request).await.expect_err("a spent payment must not verify");
    assert!(reverted(&reverify, "authorization is used or canceled"), "{reverify:?}");
    assert!(matches!(reverify, FacilitatorLocalError::Verification(_)), "{reverify:?}");
    assert_eq!(balance(&sandbox, sandbox.payer()).await, payer_before - U256::from(AMOUNT));
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::from(AMOUNT));
}

#[tokio::test]
async fn an_expired_authorization_is_refused() {
    let sandbox = sandbox_chain().await;
    let facilitator = facilitator(&sandbox).await;
    let requirements = requirements(&sandbox, "eip155:8453");
    let signer = sandbox.payer_signer();
    let mut payment = client_payment(&signer, &requirements).await;
    let past = (now() - 60).to_string();
    resign(&signer, sandbox.token(), &mut payment, |a| a["validBefore"] = json!(past)).await;
    let request = facilitator_request(&payment, &requirements);
    let error = facilitator.verify(&request).await.expect_err("expired");
    assert!(matches!(verification_error(&error), PaymentVerificationError::Expired), "{error:?}");
    let error = facilitator.settle(&request).await.expect_err("expired");
    assert!(matches!(verification_error(&error), PaymentVerificationError::Expired), "{error:?}");
    // Not yet valid is refused too.
    let mut early = client_payment(&signer, &requirements).await;
    let later = (now() + 120).to_string();
    resign(&signer, sandbox.token(), &mut early, |a| a["validAfter"] = json!(later)).await;
    let error = facilitator.verify(&facilitator_request(&early, &requirements)).await.expect_err("early");
    assert!(matches!(verification_error(&error), PaymentVerificationError::Early), "{error:?}");
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::ZERO);
}

#[tokio::test]
async fn a_payer_without_enough_funds_is_refused() {
    let sandbox = sandbox_chain().await;
    let facilitator = facilitator(&sandbox).await;
    let requirements = requirements(&sandbox, "eip155:8453");
    let poor = PrivateKeySigner::random();
    sandbox.mint(poor.address(), U256::from(AMOUNT - 1)).await.unwrap_or_else(|e| panic!("{e}"));
    let payment = client_payment(&poor, &requirements).await;
    let request = facilitator_request(&payment, &requirements);
    let error = facilitator.verify(&request).await.expect_err("one unit short");
    assert!(matches!(verification_error(&error), PaymentVerificationError::InsufficientFunds), "{error:?}");
    let error = facilitator.settle(&request).await.expect_err("one unit short");
    assert!(matches!(verification_error(&error), PaymentVerificationError::InsufficientFunds), "{error:?}");
    assert_eq!(balance(&sandbox, poor.address()).await, U256::from(AMOUNT - 1));
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::ZERO);
}

#[tokio::test]
async fn another_network_is_refused() {
    let sandbox = sandbox_chain().await;
    let facilitator = facilitator(&sandbox).await;
    // Requirements for Polygon: the client signs for chain 137, the facilitator knows 8453 only.
    let polygon = requirements(&sandbox, "eip155:137");
    let payment = client_payment(&sandbox.payer_signer(), &polygon).await;
    let request = facilitator_request(&payment, &polygon);
    let error = facilitator.verify(&request).await.expect_err("wrong network");
    assert!(matches!(verification_error(&error), PaymentVerificationError::UnsupportedScheme), "{error:?}");
    let error = facilitator.settle(&request).await.expect_err("wrong network");
    assert!(matches!(verification_error(&error), PaymentVerificationError::UnsupportedScheme), "{error:?}");
    // A Base payment checked against Polygon requirements is refused as a mismatch.
    let base = requirements(&sandbox, "eip155:8453");
    let payment = client_payment(&sandbox.payer_signer(), &base).await;
    let error = facilitator.verify(&facilitator_request(&payment, &polygon)).await.expect_err("mismatch");
    assert!(matches!(verification_error(&error), PaymentVerificationError::AcceptedRequirementsMismatch), "{error:?}");
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::ZERO);
}

#[tokio::test]
async fn a_signature_by_someone_else_is_refused() {
    let sandbox = sandbox_chain().await;
    let facilitator = facilitator(&sandbox).await;
    let requirements = requirements(&sandbox, "eip155:8453");
    let mut payment = client_payment(&sandbox.payer_signer(), &requirements).await;
    // Signed by a stranger but claiming to come from the funded payer.
    resign(&PrivateKeySigner::random(), sandbox.token(), &mut payment, |_| {}).await;
    let request = facilitator_request(&payment, &requirements);
    // x402 takes a signature that does not recover to `from` for a contract wallet's
    // (EIP-1271) and lets the token judge it: the refusal is the simulation's revert.
    let error = facilitator.verify(&request).await.expect_err("forged");
    assert!(reverted(&error, "SandboxUsdc: invalid signature"), "{error:?}");
    let error = facilitator.settle(&request).await.expect_err("forged");
    assert!(reverted(&error, "SandboxUsdc: invalid signature"), "{error:?}");
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::ZERO);
}

#[tokio::test]
async fn the_sandbox_chain_is_base_with_usdc() {
    let sandbox = sandbox_chain().await;
    let reader = ProviderBuilder::new().connect_http(sandbox.rpc_url().clone());
    assert_eq!(reader.get_chain_id().await.expect("eth_chainId"), 8453);
    assert_eq!(sandbox.chain_id(), 8453);
    assert_eq!(sandbox.network().to_string(), "eip155:8453");
    assert_eq!(sandbox.token(), address!("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"));
    let usdc = ITestUsdc::new(sandbox.token(), &reader);
    assert_eq!(usdc.name().call().await.expect("name"), "USD Coin");
    assert_eq!(usdc.symbol().call().await.expect("symbol"), "USDC");
    assert_eq!(usdc.decimals().call().await.expect("decimals"), 6);
    assert_eq!(usdc.version().call().await.expect("version"), "2");
    assert_eq!(sandbox.eip712_name_version(), ("USD Coin".to_string(), "2".to_string()));
    let separator = usdc.DOMAIN_SEPARATOR().call().await.expect("DOMAIN_SEPARATOR");
    assert_eq!(separator, usdc_domain(sandbox.token()).separator(), "the domain x402 signs under");
    assert_eq!(usdc.totalSupply().call().await.expect("totalSupply"), U256::from(1_000_000_000u64));
    // The printed key is the payer's.
    let key = sandbox.payer_private_key();
    assert!(key.starts_with("0x") && key.len() == 66, "{key}");
    assert_eq!(PrivateKeySigner::from_str(&key).expect("a key").address(), sandbox.payer());
    assert_ne!(sandbox.payer(), sandbox.pay_to());
    let gas = reader.get_balance(sandbox.facilitator_signer()).await.expect("eth_getBalance");
    assert!(gas >= U256::from(10u128.pow(20)), "the facilitator has ETH for gas: {gas}");
    // Nobody can take the token over: it is initialised once.
    let anyone = funded_wallet(&sandbox).await;
    let usdc_as_anyone = ITestUsdc::new(sandbox.token(), &anyone);
    assert!(usdc_as_anyone.initialize(Address::repeat_byte(1)).call().await.is_err());
    assert!(usdc_as_anyone.mint(Address::repeat_byte(1), U256::from(1)).call().await.is_err());
    // The key never reaches a log through Debug.
    let debug = format!("{sandbox:?}");
    assert!(!debug.contains(&key[2..]), "{debug}");

    let facilitator = facilitator(&sandbox).await;
    let supported = facilitator.supported().await.expect("supported");
    let mut kinds = serde_json::to_value(&supported.kinds).expect("JSON");
    kinds.as_array_mut().expect("a list").sort_by_key(|kind| kind["scheme"].to_string());
    // `upto` names the address that settles it (the witness binds it) and submits payers'
    // EIP-2612 permits for Permit2.
    let facilitator_address = sandbox.facilitator_signer().to_string().to_lowercase();
    assert_eq!(
        kinds,
        json!([
            {"x402Version": 2, "scheme": "exact", "network": "eip155:8453", "extra": {}},
            {"x402Version": 2, "scheme": "upto", "network": "eip155:8453",
             "extra": {"facilitatorAddress": facilitator_address, "extensions": ["eip2612GasSponsoring"]}},
        ])
    );
    let signers = serde_json::to_value(&supported.signers).expect("JSON");
    let signer = signers["eip155:8453"][0].as_str().expect("a signer");
    assert_eq!(Address::from_str(signer).expect("an address"), sandbox.facilitator_signer());

    // Dropping the sandbox kills anvil.
    let url = sandbox.rpc_url().clone();
    drop(facilitator);
    drop(sandbox);
    let mut gone = false;
    for _ in 0..50 {
        if ProviderBuilder::new().connect_http(url.clone()).get_chain_id().await.is_err() {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(gone, "anvil at {url} still answers after the sandbox was dropped");
}

/// A provider signing as a fresh account that holds ETH (not USDC).
async fn funded_wallet(sandbox: &SandboxChain) -> impl Provider + use<> {
    let signer = PrivateKeySigner::random();
    let provider =
        ProviderBuilder::new().wallet(EthereumWallet::from(signer.clone())).connect_http(sandbox.rpc_url().clone());
    provider
        .raw_request::<_, Value>("anvil_setBalance".into(), (signer.address(), U256::from(10u128.pow(20))))
        .await
        .expect("anvil_setBalance");
    provider
}

/// The token's own EIP-3009 and EIP-2612 functions, beyond what x402 calls.
#[tokio::test]
async fn the_token_implements_eip3009_and_permit() {
    let sandbox = sandbox_chain().await;
    let payer = sandbox.payer_signer();
    let relayer = funded_wallet(&sandbox).await;
    let usdc = ITestUsdc::new(sandbox.token(), &relayer);
    let domain = usdc_domain(sandbox.token());
    let (valid_after, valid_before) = (U256::from(now() - 600), U256::from(now() + 600));

    // The `bytes signature` overload.
    let nonce = B256::repeat_byte(7);
    let message = TransferWithAuthorization {
        from: payer.address(),
        to: sandbox.pay_to(),
        value: U256::from(5),
        validAfter: valid_after,
        validBefore: valid_before,
        nonce,
    };
    let signature = payer.sign_hash(&message.eip712_signing_hash(&domain)).await.expect("signed");
    let call = usdc.transferWithAuthorization(
        payer.address(),
        sandbox.pay_to(),
        U256::from(5),
        valid_after,
        valid_before,
        nonce,
        signature.as_bytes().into(),
    );
    call.call().await.expect("the bytes overload accepts a good signature");
    send(&call).await;
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::from(5));
    let replay = call.call().await.expect_err("a nonce works once");
    assert!(format!("{replay:?}").contains("authorization is used or canceled"), "{replay:?}");

    // cancelAuthorization spends a nonce without a transfer.
    let cancelled = B256::repeat_byte(8);
    let cancel = CancelAuthorization { authorizer: payer.address(), nonce: cancelled };
    let signature = payer.sign_hash(&cancel.eip712_signing_hash(&domain)).await.expect("signed");
    send(&usdc.cancelAuthorization(payer.address(), cancelled, signature.as_bytes().into())).await;
    assert!(usdc.authorizationState(payer.address(), cancelled).call().await.expect("state"));
    let message = TransferWithAuthorization { nonce: cancelled, ..message };
    let signature = payer.sign_hash(&message.eip712_signing_hash(&domain)).await.expect("signed");
    let error = usdc
        .transferWithAuthorization(
            payer.address(),
            sandbox.pay_to(),
            U256::from(5),
            valid_after,
            valid_before,
            cancelled,
            signature.as_bytes().into(),
        )
        .call()
        .await
        .expect_err("a cancelled authorization is dead");
    assert!(format!("{error:?}").contains("authorization is used or canceled"), "{error:?}");

    // receiveWithAuthorization: only the payee may submit it.
    let receiver = PrivateKeySigner::random();
    let received = B256::repeat_byte(9);
    let message = ReceiveWithAuthorization {
        from: payer.address(),
        to: receiver.address(),
        value: U256::from(3),
        validAfter: valid_after,
        validBefore: valid_before,
        nonce: received,
    };
    let signature = payer.sign_hash(&message.eip712_signing_hash(&domain)).await.expect("signed");
    let receive = usdc.receiveWithAuthorization(
        payer.address(),
        receiver.address(),
        U256::from(3),
        valid_after,
        valid_before,
        received,
        27 + u8::from(signature.v()),
        B256::from(signature.r()),
        B256::from(signature.s()),
    );
    let error = receive.call().await.expect_err("the relayer is not the payee");
    assert!(format!("{error:?}").contains("caller must be the payee"), "{error:?}");
    let payee =
        ProviderBuilder::new().wallet(EthereumWallet::from(receiver.clone())).connect_http(sandbox.rpc_url().clone());
    payee
        .raw_request::<_, Value>("anvil_setBalance".into(), (receiver.address(), U256::from(10u128.pow(20))))
        .await
        .expect("anvil_setBalance");
    let as_payee = ITestUsdc::new(sandbox.token(), &payee);
    let receipt = as_payee
        .receiveWithAuthorization(
            payer.address(),
            receiver.address(),
            U256::from(3),
            valid_after,
            valid_before,
            received,
            27 + u8::from(signature.v()),
            B256::from(signature.r()),
            B256::from(signature.s()),
        )
        .send()
        .await
        .expect("sent")
        .get_receipt()
        .await
        .expect("mined");
    assert!(receipt.status());
    assert_eq!(balance(&sandbox, receiver.address()).await, U256::from(3));

    // permit (EIP-2612) sets an allowance and bumps the nonce.
    let spender = Address::repeat_byte(0x42);
    let deadline = U256::from(now() + 600);
    let permit = Permit { owner: payer.address(), spender, value: U256::from(77), nonce: U256::ZERO, deadline };
    let signature = payer.sign_hash(&permit.eip712_signing_hash(&domain)).await.expect("signed");
    send(&usdc.permit(
        payer.address(),
        spender,
        U256::from(77),
        deadline,
        27 + u8::from(signature.v()),
        B256::from(signature.r()),
        B256::from(signature.s()),
    ))
    .await;
    assert_eq!(usdc.allowance(payer.address(), spender).call().await.expect("allowance"), U256::from(77));
    assert_eq!(usdc.nonces(payer.address()).call().await.expect("nonces"), U256::from(1));
}

/// Sends `call` and checks it succeeded on chain.
async fn send<P: Provider, C: alloy::sol_types::SolCall>(call: &alloy::contract::SolCallBuilder<P, C>) {
    let receipt = call.send().await.expect("sent").get_receipt().await.expect("mined");
    assert!(receipt.status(), "the transaction succeeded");
}

/// anvil mines only for transactions: left idle, the chain's latest block would grow as
/// old as the idle time, and a payment signed now (valid from a few seconds ago) would be
/// "not yet valid" against it. The sandbox keeps the clock: its latest block is never
/// older than `clock_every`, and a payment after an idle spell verifies and settles at once.
#[tokio::test]
async fn an_idle_sandbox_keeps_its_clock_and_takes_a_payment_at_once() {
    let options = paperchain_hosted::sandbox::SandboxOptions {
        clock_every: std::time::Duration::from_secs(2),
        solana: paperchain_hosted::sandbox::SolanaSide::Off,
        ..Default::default()
    };
    let sandbox = SandboxChain::start(options).await.unwrap_or_else(|e| panic!("{e}"));
    let reader = ProviderBuilder::new().connect_http(sandbox.rpc_url().clone());
    let first = reader.get_block_number().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(7)).await;
    let latest = reader.get_block_by_number(alloy::eips::BlockNumberOrTag::Latest).await.unwrap().unwrap();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert!(latest.header.number > first, "blocks were mined while idle");
    assert!(now - latest.header.timestamp <= 3, "the latest block is {} s old", now - latest.header.timestamp);

    let facilitator = facilitator(&sandbox).await;
    let requirements = requirements(&sandbox, "eip155:8453");
    let payment = client_payment(&sandbox.payer_signer(), &requirements).await;
    let settled = facilitator.settle(&facilitator_request(&payment, &requirements)).await;
    let settled = settled.unwrap_or_else(|e| panic!("settle after an idle spell: {e:?}"));
    assert_eq!(settled.0["success"], json!(true), "{}", settled.0);
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, U256::from(AMOUNT));
}

/// An `upto` offer of the sandbox for at most `max`, with the facilitator's address.
fn upto_offer(sandbox: &SandboxChain, max: u64) -> paperchain_protocol::x402::Offer {
    serde_json::from_value(json!({
        "scheme": "upto",
        "network": "eip155:8453",
        "amount": max.to_string(),
        "asset": sandbox.token().to_checksum(None),
        "payTo": sandbox.pay_to().to_checksum(None),
        "maxTimeoutSeconds": 300,
        "extra": {"name": "USD Coin", "version": "2",
                  "facilitatorAddress": sandbox.facilitator_signer().to_checksum(None)},
    }))
    .expect("an upto offer")
}

/// What the paywall sends the facilitator for an `upto` payment: the requirements as offered,
/// their `amount` the most at verification and what is charged at settlement.
fn upto_request(payment: &Value, offer: &paperchain_protocol::x402::Offer, amount: u64) -> proto::VerifyRequest {
    let mut requirements = offer.raw.clone();
    requirements["amount"] = json!(amount.to_string());
    facilitator_request(payment, &requirements)
}

/// A payment by the sandbox's payer for [`upto_offer`] of `max`, with the EIP-2612 permit
/// that gives Permit2 its allowance (for the facilitator to submit): the offer, the window
/// signed, and the payload.
async fn sponsored_upto(
    sandbox: &SandboxChain,
    max: u64,
) -> (paperchain_protocol::x402::Offer, paperchain_protocol::upto_evm::UptoWindow, Value) {
    use paperchain_protocol::upto_evm::{UptoTerms, UptoWindow, sign_permit2_allowance, sign_upto_evm};
    let payer = sandbox.payer_signer();
    let offer = upto_offer(sandbox, max);
    let window = UptoWindow::fresh(&UptoTerms::of(&offer).unwrap(), now());
    let reader = ProviderBuilder::new().connect_http(sandbox.rpc_url().clone());
    let nonce = ITestUsdc::new(sandbox.token(), &reader).nonces(payer.address()).call().await.unwrap();
    let permit = sign_permit2_allowance(&payer, &offer, U256::from(max), nonce, window.deadline).unwrap();
    let payment = serde_json::to_value(sign_upto_evm(&payer, &offer, None, &window, Some(permit)).unwrap()).unwrap();
    (offer, window, payment)
}

#[tokio::test]
async fn an_upto_payment_settles_what_was_used_never_more_than_authorized_and_once() {
    use paperchain_protocol::upto_evm::{PERMIT2, UptoWindow, sign_upto_evm};
    let sandbox = sandbox_chain().await;
    let facilitator = facilitator(&sandbox).await;
    let payer = sandbox.payer_signer();
    // The payer never allowed Permit2 anything: the EIP-2612 permit goes with the payment.
    let reader = ProviderBuilder::new().connect_http(sandbox.rpc_url().clone());
    let usdc = ITestUsdc::new(sandbox.token(), &reader);
    assert_eq!(usdc.allowance(payer.address(), PERMIT2).call().await.unwrap(), U256::ZERO);
    let (offer, _, payment) = sponsored_upto(&sandbox, 20_000).await;
    let (payer_before, payee_before) =
        (balance(&sandbox, payer.address()).await, balance(&sandbox, sandbox.pay_to()).await);

    let verified = facilitator.verify(&upto_request(&payment, &offer, 20_000)).await;
    let verified = verified.unwrap_or_else(|e| panic!("verify: {e:?}"));
    assert_eq!(verified.0["isValid"], json!(true), "{}", verified.0);
    // One unit over the most authorized: refused, nothing moves.
    let over = facilitator.settle(&upto_request(&payment, &offer, 20_001)).await.expect_err("over the most");
    assert!(matches!(verification_error(&over), PaymentVerificationError::InvalidPaymentAmount), "{over:?}");
    assert_eq!(balance(&sandbox, payer.address()).await, payer_before);
    // What was used: exactly that moves.
    let settled = facilitator.settle(&upto_request(&payment, &offer, 12_000)).await;
    let settled = settled.unwrap_or_else(|e| panic!("settle: {e:?}"));
    assert_eq!(settled.0["success"], json!(true), "{}", settled.0);
    assert_eq!(settled.0["amount"], json!("12000"), "{}", settled.0);
    assert_eq!(balance(&sandbox, payer.address()).await, payer_before - U256::from(12_000));
    assert_eq!(balance(&sandbox, sandbox.pay_to()).await, payee_before + U256::from(12_000));
    assert_eq!(usdc.allowance(payer.address(), PERMIT2).call().await.unwrap(), U256::from(8_000), "the rest stays");
    // The same authorization again: Permit2's nonce is spent.
    let again = facilitator.settle(&upto_request(&payment, &offer, 1_000)).await.expect_err("a replay");
    assert!(format!("{again:?}").contains("revert"), "{again:?}");
    assert_eq!(balance(&sandbox, payer.address()).await, payer_before - U256::from(12_000));
    // The proxy itself refuses more than permitted, whoever asks (the facilitator is
    // checked off chain above; here the chain does it).
    let small = upto_offer(&sandbox, 5_000);
    let fresh = UptoWindow::fresh(&paperchain_protocol::upto_evm::UptoTerms::of(&small).unwrap(), now());
    let second = serde_json::to_value(sign_upto_evm(&payer, &small, None, &fresh, None).unwrap());
    let error = facilitator.settle(&upto_request(&second.unwrap(), &upto_offer(&sandbox, 5_000), 6_000)).await;
    assert!(error.is_err(), "settling 6000 of an authorization for 5000");
}

#[tokio::test]
async fn an_upto_settlement_a_crash_left_out_of_the_ledger_is_found_with_its_charge() {
    use paperchain_hosted::recovery::{Recovered, recover};
    use paperchain_hosted::store::{Authorization, Outcome, PaidRequest, PaymentState, Store};
    let sandbox = sandbox_chain().await;
    let facilitator = facilitator(&sandbox).await;
    let payer = sandbox.payer_signer();
    let (offer, window, payment) = sponsored_upto(&sandbox, 20_000).await;
    // What the paywall keeps with an `upto` claim: the token, the payer, Permit2's nonce.
    let kept = |nonce: String, valid_before: u64| PaidRequest {
        operation: Some("ocr_pdf".into()),
        amount: Some(20_000),
        authorization: Some(Authorization {
            asset: sandbox.token().to_string().to_lowercase(),
            authorizer: payer.address().to_string().to_lowercase(),
            nonce,
            valid_before,
        }),
        ..PaidRequest::default()
    };
    // A first run claims two payments, settles one for 12,000 of its 20,000, and dies.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hosted.sqlite");
    let first = Store::open(&db).await.unwrap();
    let (settled_key, unused_key) = ([1u8; 32], [2u8; 32]);
    let used_nonce = window.nonce.to_string();
    first
        .claim_payment_for(&settled_key, "/v1/pdf/ocr", "eip155:8453", &kept(used_nonce, window.deadline))
        .await
        .unwrap();
    first.claim_payment_for(&unused_key, "/v1/pdf/ocr", "eip155:8453", &kept("77".into(), 1)).await.unwrap();
    let settled = facilitator.settle(&upto_request(&payment, &offer, 12_000)).await.unwrap();
    let tx = settled.0["transaction"].as_str().unwrap().to_lowercase();
    first.close().await;
    drop(first);

    // The next run finds the settled one by Permit2's nonce, with what it charged.
    let second = Store::open(&db).await.unwrap();
    let chains = paperchain_testkit::sandbox::sandbox_chains(&sandbox, &[]);
    let pay_to = [("eip155:8453".to_string(), sandbox.pay_to().to_checksum(None))];
    let found = recover(&second, &chains, &paperchain_engine::solana::Clusters::from_env(), &pay_to).await.unwrap();
    assert_eq!(found, Recovered { settled: 1, never_used: 1, pending: 0 });
    assert_eq!(second.payment_state(&settled_key).await.unwrap(), Some(PaymentState::Settled));
    let row = second.recent(1).await.unwrap().pop().unwrap();
    assert_eq!(row.outcome, Outcome::Paid);
    assert_eq!((row.tx_hash.as_deref(), row.quote, row.charged), (Some(tx.as_str()), Some(20_000), Some(12_000)));
    assert_eq!(second.totals().await.unwrap().settled_amount, 12_000);
}

/// Runs `hosted/contracts/<script>` (our contracts on a scratch anvil, paid by @x402/evm's
/// own clients) and answers its output, which must say every check passed.
fn contract_check(script: &str) -> String {
    let tools = paperchain_testkit::tools::tools_dir();
    paperchain_testkit::tools::require_node_packages(&tools, "the contract check", &["viem", "@x402/evm", "solc"]);
    let script = paperchain_testkit::workspace_root().join("hosted/contracts").join(script);
    let out = std::process::Command::new("node")
        .arg(&script)
        .env("NODE_PATH", tools.join("npm/node_modules"))
        .env("PAPERCHAIN_TOOLS", &tools)
        .output()
        .expect("node runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("all checks passed"), "{text}");
    text
}

#[test]
fn the_sandbox_contracts_pass_their_check_with_the_official_x402_client() {
    // check.js: our Permit2 and upto proxy, paid by @x402/evm's own upto client (and by
    // hand-made signatures for the refusals).
    let text = contract_check("check.js");
    for check in
        ["signed by @x402/evm UptoEvmScheme", "AmountExceedsPermitted", "UnauthorizedFacilitator", "InvalidNonce"]
    {
        assert!(text.lines().any(|l| l.starts_with("ok") && l.contains(check)), "{check}: {text}");
    }
}

#[test]
fn the_batch_settlement_escrow_passes_its_check_with_the_official_x402_client() {
    // batch_check.js: one deposit, 100 cumulative vouchers, claims in batches, refunds and
    // the payer's withdrawal, through @x402/evm's batch-settlement client and facilitator.
    let text = contract_check("batch_check.js");
    assert!(text.lines().filter(|l| l.starts_with("ok")).count() >= 20, "{text}");
}
