//! A route that fails on request, so the fuzzer's own tests can show that each kind of
//! defect is caught and saved: never part of the standard catalog.

use paperchain_engine::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use paperchain_engine::context::Context;
use paperchain_engine::error::EngineError;
use paperchain_engine::output::Reply;
use paperchain_engine::price::Price;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// The operation name.
pub const OPERATION: &str = "fuzz_selftest";

/// What the route is asked to do.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelfTestInput {
    /// `ok`, `invalid`, `panic`, `internal`, `abort`, `hang` or `memory`.
    pub act: String,
}

/// The route.
pub struct SelfTestRoute;

impl Route for SelfTestRoute {
    type Input = SelfTestInput;
    type Prepared = String;
    type Output = Value;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/fuzz/selftest",
        operation: OPERATION,
        family: Family::Docs,
        summary: "Fails on request (the fuzzer's own tests)",
        description: "Answers, panics, fails internally, aborts, hangs or fills memory, as `act` says.",
        base_price: Price::micros(0),
        price_rule: "flat",
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: paperchain_engine::catalog::accepts::NONE,
    };

    async fn prepare(input: SelfTestInput, _: &Context) -> Result<String, EngineError> {
        match input.act.as_str() {
            "ok" | "panic" | "internal" | "abort" | "hang" | "memory" => Ok(input.act),
            _ => Err(EngineError::invalid("/act", "not an act")),
        }
    }

    fn quote(_: &String) -> Price {
        Self::INFO.base_price
    }

    async fn run(act: String, _: &Context) -> Result<Reply<Value>, EngineError> {
        match act.as_str() {
            "panic" => panic!("asked to panic"),
            "internal" => Err(EngineError::internal("asked to fail")),
            "abort" => std::process::abort(),
            "hang" => loop {
                std::thread::sleep(std::time::Duration::from_millis(100));
            },
            "memory" => {
                // Resident, not just reserved: every page is written.
                let mut held: Vec<Vec<u8>> = Vec::new();
                loop {
                    held.push(vec![1u8; 64 << 20]);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
            }
            _ => Ok(Reply::Json(json!({ "act": act }))),
        }
    }
}
