//! Hosted mode over MCP on the sandbox chain: calls are free until the client's pool is
//! empty, then the tool answers the x402 PaymentRequired (isError, structuredContent and
//! content[0].text); a retry carrying `_meta["x402/payment"]` is verified, run and settled
//! by the same paywall as over HTTP, the balances move by exactly the quote, the result
//! carries `_meta["x402/payment-response"]`, and the same payment sent again is refused.
//! Every hosted tool's output schema admits its PaymentRequired and the tool's own answers.

use alloy::primitives::U256;
use paperchain_testkit::corpus::file_input;
use paperchain_testkit::pdf::qpdf_pages;
use paperchain_testkit::x402::sign_x402_payload;
use serde_json::{Value, json};

use crate::common::hosted::start;
use crate::common::{self, call, embedded, http_client, structured};

/// The PaymentRequired of a tool result, checked to be the x402 MCP transport's shape.
fn payment_required(result: &rmcp::model::CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "expected PaymentRequired: {result:?}");
    let structured = result.structured_content.clone().expect("PaymentRequired in structuredContent");
    let text = result.content[0].as_text().expect("content[0] is text");
    assert_eq!(serde_json::from_str::<Value>(&text.text).unwrap(), structured, "content[0].text is the same object");
    assert_eq!(structured["x402Version"], 2);
    assert!(structured["accepts"].as_array().is_some_and(|a| !a.is_empty()), "{structured}");
    structured
}

#[tokio::test]
async fn free_pool_then_payment_required_then_a_paid_retry_settles_once() {
    let hosted = start(&[("PAPERCHAIN_FREE_DOCS", "2")]).await;
    let client = http_client(&format!("{}/mcp/docs", hosted.server.base)).await;
    let arguments = json!({ "file": file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90 });

    // The free pool is used without being asked for.
    for left in [1, 0] {
        let result = call(&client, "rotate_pdf_pages", arguments.clone(), None).await;
        structured(&result);
        assert_eq!(qpdf_pages(&embedded(&result)[0].2), 4);
        let meta = result.meta.as_ref().expect("_meta on a free result");
        assert_eq!(meta.0["paperchain/free-remaining"], left);
        assert!(meta.0.get("x402/payment-response").is_none());
    }

    // Then the x402 MCP transport's PaymentRequired, quoting this input.
    let required = payment_required(&call(&client, "rotate_pdf_pages", arguments.clone(), None).await);
    assert_eq!(required["error"], "free_pool_exhausted");
    let requirement = required["accepts"][0].clone();
    let quote: U256 = requirement["amount"].as_str().unwrap().parse().unwrap();
    assert!(quote > U256::ZERO);

    // A paid retry settles on the sandbox chain and moves exactly the quote.
    let before = hosted.balances().await;
    let payment = sign_x402_payload(&hosted.chain.payer_signer(), &requirement).await;
    let meta = json!({ "x402/payment": payment });
    let result = call(&client, "rotate_pdf_pages", arguments.clone(), Some(meta.clone())).await;
    structured(&result);
    assert_eq!(qpdf_pages(&embedded(&result)[0].2), 4);
    let settlement = result.meta.as_ref().expect("_meta on a paid result").0["x402/payment-response"].clone();
    assert_eq!(settlement["success"], true, "{settlement}");
    assert_eq!(settlement["network"], "eip155:8453");
    assert!(settlement["transaction"].as_str().is_some_and(|t| t.starts_with("0x")), "{settlement}");
    let after = hosted.balances().await;
    assert_eq!(before.0 - after.0, quote, "the payer paid the quote");
    assert_eq!(after.1 - before.1, quote, "the payee received the quote");

    // The same payment again is refused, and nothing moves.
    let replay = payment_required(&call(&client, "rotate_pdf_pages", arguments.clone(), Some(meta)).await);
    assert!(replay["error"].as_str().is_some_and(|e| e.starts_with("payment_already_used")), "{replay}");
    assert_eq!(hosted.balances().await, after);

    // Invalid input with a payment is a tool error naming the field; the payment is not used.
    let payment = sign_x402_payload(&hosted.chain.payer_signer(), &requirement).await;
    let bad = json!({ "file": arguments["file"], "degrees": 45 });
    let result = call(&client, "rotate_pdf_pages", bad, Some(json!({ "x402/payment": payment }))).await;
    assert_eq!(common::tool_error(&result)["field"], "/degrees");
    assert_eq!(hosted.balances().await, after);

    let ledger = hosted.paywall.store().recent(10).await.unwrap();
    assert!(!ledger.is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_chain_tool_is_paid_over_mcp_once_its_pool_is_empty() {
    let hosted = start(&[("PAPERCHAIN_FREE_CHAIN_READS", "1")]).await;
    let client = http_client(&format!("{}/mcp/chain", hosted.server.base)).await;
    let arguments = json!({ "chain": "base" });
    let gas = structured(&call(&client, "get_gas_price", arguments.clone(), None).await);
    assert_eq!(gas["chain"], "base");
    let required = payment_required(&call(&client, "get_gas_price", arguments.clone(), None).await);
    let requirement = required["accepts"][0].clone();
    let quote: U256 = requirement["amount"].as_str().unwrap().parse().unwrap();
    let before = hosted.balances().await;
    let payment = sign_x402_payload(&hosted.chain.payer_signer(), &requirement).await;
    let result = call(&client, "get_gas_price", arguments, Some(json!({ "x402/payment": payment }))).await;
    assert_eq!(structured(&result)["chain"], "base");
    assert_eq!(result.meta.as_ref().unwrap().0["x402/payment-response"]["success"], true);
    let after = hosted.balances().await;
    assert_eq!(after.1 - before.1, quote);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn every_hosted_output_schema_admits_the_payment_required_and_a_delivered_answer() {
    // One free call in each pool the successes below use, none in the address check's: every
    // other call answers a PaymentRequired and runs nothing.
    let env =
        [("PAPERCHAIN_FREE_CHAIN_READS", "1"), ("PAPERCHAIN_FREE_DOCS", "1"), ("PAPERCHAIN_FREE_ADDRESS_CHECK", "0")];
    let hosted = start(&env).await;
    for (family, answered) in [
        ("chain", ("get_gas_price", json!({ "chain": "base" }))),
        (
            "docs",
            ("rotate_pdf_pages", json!({ "file": file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90 })),
        ),
    ] {
        let client = http_client(&format!("{}/mcp/{family}", hosted.server.base)).await;
        let tools = client.list_all_tools().await.unwrap();
        let validators: std::collections::HashMap<String, jsonschema::Validator> = tools
            .iter()
            .map(|tool| {
                let schema = Value::Object(tool.output_schema.as_deref().expect("an output schema").clone());
                assert_eq!(schema["type"], "object", "{}: MCP wants an object at the root", tool.name);
                let validator = jsonschema::validator_for(&schema)
                    .unwrap_or_else(|e| panic!("{}: the output schema does not compile: {e}", tool.name));
                (tool.name.to_string(), validator)
            })
            .collect();
        let check = |name: &str, instance: &Value| {
            let errors: Vec<String> = validators[name].iter_errors(instance).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{name}: {instance} does not match the output schema: {errors:?}");
        };

        // A delivered answer (the free call), then its PaymentRequired (the pool is empty).
        let (name, arguments) = answered;
        let answer = structured(&call(&client, name, arguments.clone(), None).await);
        check(name, &answer);
        let required = payment_required(&call(&client, name, arguments, None).await);
        assert_eq!(required["error"], "free_pool_exhausted");
        check(name, &required);

        // Every tool: an empty call is a PaymentRequired (quoting the base price, with the input
        // error, or past the empty pool), admitted by the tool's own schema.
        for tool in &tools {
            let required = payment_required(&call(&client, &tool.name, json!({}), None).await);
            assert_eq!(required["resource"]["url"], format!("mcp://tool/{}", tool.name), "{required}");
            check(&tool.name, &required);
            let bazaar = &required["extensions"]["bazaar"];
            if !bazaar.is_null() {
                assert_eq!(bazaar["info"]["input"]["toolName"], tool.name.as_ref(), "{bazaar}");
                let schema = jsonschema::validator_for(&bazaar["schema"]).expect("the bazaar schema compiles");
                assert!(schema.is_valid(&bazaar["info"]), "{}: bazaar info does not match its schema", tool.name);
            }
        }

        // Not a vacuous schema: neither an answer of another shape nor another x402 version.
        let validator = &validators[name];
        assert!(!validator.is_valid(&json!({ "unexpected": true })), "{name} admits anything");
        let mut other_version = required.clone();
        other_version["x402Version"] = json!(1);
        assert!(!validator.is_valid(&other_version), "{name} admits x402Version 1");
        client.cancel().await.unwrap();
    }
}

/// The compact surface of a hosted server (`/mcp`): a run tool goes through the same free
/// pool and paywall, its PaymentRequired names the run tool, and a paid retry of the same
/// call settles once.
#[tokio::test]
async fn a_compact_run_tool_is_paid_as_the_operations_own_tool() {
    let hosted = start(&[("PAPERCHAIN_FREE_DOCS", "1")]).await;
    let client = http_client(&format!("{}/mcp", hosted.server.base)).await;
    let input = json!({ "file": file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90 });
    let arguments = json!({ "operation": "rotate_pdf_pages", "input": input });

    let free = call(&client, "document_operation", arguments.clone(), None).await;
    structured(&free);
    assert_eq!(free.meta.as_ref().expect("_meta on a free result").0["paperchain/free-remaining"], 0);

    let required = payment_required(&call(&client, "document_operation", arguments.clone(), None).await);
    assert_eq!(required["error"], "free_pool_exhausted");
    assert_eq!(required["resource"]["url"], "mcp://tool/document_operation");
    let requirement = required["accepts"][0].clone();
    let quote: U256 = requirement["amount"].as_str().unwrap().parse().unwrap();

    let before = hosted.balances().await;
    let payment = sign_x402_payload(&hosted.chain.payer_signer(), &requirement).await;
    let meta = json!({ "x402/payment": payment });
    let paid = call(&client, "document_operation", arguments.clone(), Some(meta.clone())).await;
    structured(&paid);
    assert_eq!(qpdf_pages(&embedded(&paid)[0].2), 4);
    assert_eq!(paid.meta.as_ref().expect("_meta on a paid result").0["x402/payment-response"]["success"], true);
    let after = hosted.balances().await;
    assert_eq!(before.0 - after.0, quote, "the payer paid the quote, once");

    let replay = payment_required(&call(&client, "document_operation", arguments, Some(meta)).await);
    assert!(replay["error"].as_str().is_some_and(|e| e.starts_with("payment_already_used")), "{replay}");
    assert_eq!(hosted.balances().await, after);
    client.cancel().await.unwrap();
}

/// A hosted service takes no path on anyone's machine. As every input error: without a
/// payment the 402 says why (`path_not_here`), with one it is refused naming
/// `/input/file/path` and the payment is not used. `Paperchain-Save-To` is refused (422).
#[tokio::test]
async fn a_hosted_service_refuses_paths_and_saving() {
    let hosted = start(&[("PAPERCHAIN_FREE_DOCS", "0")]).await;
    let http = reqwest::Client::new();
    let rotate = format!("{}/v1/pdf/rotate", hosted.server.base);
    let by_path = json!({ "file": { "path": "/etc/hostname" }, "degrees": 90 });
    let answer = http.post(&rotate).json(&by_path).send().await.unwrap();
    assert_eq!(answer.status(), 402);
    let required: Value = answer.json().await.unwrap();
    let why = required["error"].as_str().unwrap_or_default();
    assert!(why.contains("path_not_here") && why.contains("/file/path"), "{required}");

    let inline = json!({ "file": file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90 });
    let answer = http.post(&rotate).header("paperchain-save-to", "/tmp/out.pdf").json(&inline).send().await.unwrap();
    assert_eq!(answer.status(), 422);
    let error: Value = answer.json().await.unwrap();
    assert_eq!(error["error"]["code"], "path_not_here", "{error}");
    assert_eq!(error["error"]["field"], "Paperchain-Save-To", "{error}");

    let client = http_client(&format!("{}/mcp", hosted.server.base)).await;
    let arguments = json!({ "operation": "rotate_pdf_pages", "input": by_path });
    let required = payment_required(&call(&client, "document_operation", arguments.clone(), None).await);
    assert!(required["error"].as_str().unwrap_or_default().contains("path_not_here"), "{required}");
    let before = hosted.balances().await;
    let payment = sign_x402_payload(&hosted.chain.payer_signer(), &required["accepts"][0]).await;
    let meta = json!({ "x402/payment": payment });
    let error = common::tool_error(&call(&client, "document_operation", arguments, Some(meta)).await);
    assert_eq!(error["code"], "path_not_here", "{error}");
    assert_eq!(error["field"], "/input/file/path", "{error}");
    assert_eq!(hosted.balances().await, before, "the payment was not used");
}
