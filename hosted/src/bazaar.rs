//! The x402 `bazaar` discovery extension of a route (x402 extensions/bazaar.md): how to
//! call it (HTTP POST, JSON body) and the JSON Schemas of its body and answer, both from
//! the catalog, so discovery services index exactly what the route accepts.

use paperchain_engine::Context;
use paperchain_engine::catalog::{RouteEntry, published_settings};
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

/// `extensions.bazaar` for `route`: `info` says how it is called, `schema` validates
/// `info` with the route's own request schema as the schema of `input.body` and its
/// answer schema as the schema of `output.example` (neither example is given: the
/// catalog has schemas, not sample calls).
pub fn extension(route: &RouteEntry, ctx: &Context) -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.meta_schema = None);
    let mut generator = published_settings(settings, ctx).into_generator();
    let body = route.input_schema(&mut generator).to_value();
    let output = route.output_schema(&mut generator).to_value();
    let defs: serde_json::Map<String, Value> = generator.take_definitions(true).into_iter().collect();
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "input": {
                "type": "object",
                "properties": {
                    "type": { "type": "string", "const": "http" },
                    "method": { "type": "string", "enum": ["POST"] },
                    "bodyType": { "type": "string", "enum": ["json"] },
                    "body": body,
                },
                "required": ["type", "method", "bodyType"],
                "additionalProperties": false,
            },
            "output": {
                "type": "object",
                "properties": {
                    "type": { "type": "string" },
                    "example": output,
                },
                "required": ["type"],
            },
        },
        "required": ["input"],
    });
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    let output_type = if route.info().produces.files() { "binary" } else { "json" };
    json!({
        "info": {
            "input": { "type": "http", "method": "POST", "bodyType": "json" },
            "output": { "type": output_type },
        },
        "schema": schema,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_has_a_self_contained_schema() {
        let catalog = paperchain_engine::catalog::standard();
        let ctx = Context::new();
        for route in catalog.routes() {
            let ext = extension(route, &ctx);
            let text = ext.to_string();
            // Every $ref points into this document's own $defs.
            for (i, _) in text.match_indices("\"$ref\":\"") {
                let target = &text[i + 8..];
                assert!(target.starts_with("#/$defs/"), "{}: {}", route.info().path, &target[..40.min(target.len())]);
            }
            assert!(ext["schema"]["properties"]["input"]["properties"]["body"].is_object(), "{}", route.info().path);
            let validator = jsonschema::validator_for(&ext["schema"]).expect("the bazaar schema compiles");
            assert!(validator.is_valid(&ext["info"]), "{}: info does not match its schema", route.info().path);
        }
    }

    #[test]
    fn the_body_schema_is_the_route_request_schema() {
        let catalog = paperchain_engine::catalog::standard();
        let route = catalog.by_path("/v1/chain/balance").unwrap();
        let ext = extension(route, &Context::new());
        let validator = jsonschema::validator_for(&ext["schema"]).unwrap();
        let info = |body: Value| json!({"input": {"type": "http", "method": "POST", "bodyType": "json", "body": body}});
        assert!(
            validator
                .is_valid(&info(json!({"chain": "base", "address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"})))
        );
        assert!(!validator.is_valid(&info(json!({"chain": "base", "address": "nope"}))));
        assert!(!validator.is_valid(&info(
            json!({"chain": "base", "address": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "extra": 1})
        )));
    }
}
