//! The paid flow end to end on the sandbox: the Rust x402 client (x402-reqwest) pays for a
//! document route and a chain route, the result arrives with a PAYMENT-RESPONSE that
//! decodes to a settlement, and the token balances on the chain moved by exactly the quote.

use alloy::primitives::U256;
use base64::Engine as _;
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use serde_json::{Value, json};
use x402_chain_eip155::V2Eip155ExactClient;
use x402_reqwest::{ReqwestWithPayments as _, ReqwestWithPaymentsBuild as _, X402Client};

/// A reqwest client that pays 402s with the sandbox payer's key.
fn paying_client(server: &HostedServer) -> reqwest_middleware::ClientWithMiddleware {
    let signer = server.chain.payer_signer();
    let x402 = X402Client::new().register(V2Eip155ExactClient::new(signer));
    reqwest::Client::builder().no_proxy().build().unwrap().with_payments(x402).build()
}

/// The quote the server asks for `body` at `path`.
async fn quote(server: &HostedServer, path: &str, body: &Value) -> U256 {
    let response = server.post(path, body, &[]).await;
    assert_eq!(response.status(), 402);
    let required: Value = response.json().await.unwrap();
    assert!(required.get("error").is_none(), "a valid input is quoted without an error: {required}");
    U256::from_str_radix(required["accepts"][0]["amount"].as_str().unwrap(), 10).unwrap()
}

fn settlement(response: &reqwest::Response) -> Value {
    let header = response.headers().get("payment-response").expect("a PAYMENT-RESPONSE header");
    let bytes = base64::engine::general_purpose::STANDARD.decode(header.as_bytes()).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn the_rust_client_pays_a_document_route_and_a_chain_route() {
    let server = sandbox::start(Setup::default()).await;
    let client = paying_client(&server);

    let calls = [
        (
            "/v1/pdf/rotate",
            json!({"file": paperchain_testkit::corpus::file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90, "output": "base64"}),
        ),
        ("/v1/chain/balance", json!({"chain": "base", "address": server.chain.payer().to_string()})),
    ];
    for (path, body) in calls {
        let price = quote(&server, path, &body).await;
        let (payer_before, payee_before) = server.balances().await;
        let response = client
            .post(format!("{}{path}", server.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let settled = settlement(&response);
        assert_eq!(settled["success"], true, "{settled}");
        assert_eq!(settled["network"], "eip155:8453");
        assert_eq!(settled["payer"].as_str().unwrap().to_lowercase(), server.chain.payer().to_string().to_lowercase());
        assert!(settled["transaction"].as_str().unwrap().starts_with("0x"));
        let answer: Value = response.json().await.unwrap();
        assert!(answer.is_object(), "{path}: {answer}");
        let (payer_after, payee_after) = server.balances().await;
        assert_eq!(payer_before - payer_after, price, "{path}: the payer paid the quote");
        assert_eq!(payee_after - payee_before, price, "{path}: the payee got the quote");
    }
    let totals = server.paywall.store().totals().await.unwrap();
    assert_eq!(totals.paid_calls, 2);
}

/// Files answered as links are stored before the payment settles: a call whose files
/// cannot be kept fails and charges nothing; once they can, the same call is paid once.
#[tokio::test]
async fn a_result_that_cannot_be_kept_is_not_charged() {
    let server = sandbox::start(Setup::default()).await;
    let client = paying_client(&server);
    let path = "/v1/pdf/rotate";
    let body = json!({"file": paperchain_testkit::corpus::file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90, "output": "url"});
    let price = quote(&server, path, &body).await;
    let send = || {
        client
            .post(format!("{}{path}", server.base))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };

    // The folder of linked files is gone, a plain file in its place: nothing can be kept.
    let files = server.dir.path().join("files");
    assert!(files.is_dir(), "{}", files.display());
    std::fs::remove_dir_all(&files).unwrap();
    std::fs::write(&files, b"not a folder").unwrap();
    let balances = server.balances().await;
    let response = send().await.unwrap();
    assert_eq!(response.status(), 500);
    assert!(response.headers().get("payment-response").is_none());
    assert_eq!(server.balances().await, balances, "nothing settled for a result that was not kept");

    // Room again: the call is paid once and its link serves the file.
    std::fs::remove_file(&files).unwrap();
    std::fs::create_dir(&files).unwrap();
    let response = send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(settlement(&response)["success"], true);
    let link: Value = response.json().await.unwrap();
    let pdf = server.client.get(link["url"].as_str().unwrap()).send().await.unwrap();
    assert_eq!(pdf.status(), 200);
    assert!(pdf.bytes().await.unwrap().starts_with(b"%PDF-"));
    let (payer, payee) = server.balances().await;
    assert_eq!(balances.0 - payer, price, "paid once");
    assert_eq!(payee - balances.1, price);
}
