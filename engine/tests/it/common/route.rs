//! Calling a route as the front doors do, with every JSON answer checked against the
//! route's published output schema.

use paperchain_engine::{Context, EngineError, FileSet, Reply};
use serde_json::Value;

/// The output schema `path` publishes, its definitions inlined (draft 2020-12).
pub fn output_schema(path: &str) -> Value {
    published_schema(path, false)
}

/// The input schema `path` publishes, its definitions inlined (draft 2020-12).
pub fn input_schema(path: &str) -> Value {
    published_schema(path, true)
}

fn published_schema(path: &str, input: bool) -> Value {
    let catalog = paperchain_engine::catalog::standard();
    let entry = catalog.by_path(path).unwrap_or_else(|| panic!("{path} is not registered"));
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let schema = if input { entry.input_schema(&mut generator) } else { entry.output_schema(&mut generator) };
    let mut schema = schema.to_value();
    let defs = generator.take_definitions(true);
    schema.as_object_mut().expect("an object schema").insert("$defs".into(), Value::Object(defs));
    schema
}

/// Panics unless `answer` matches the output schema of `path`.
pub fn assert_matches_schema(path: &str, answer: &Value) {
    let schema = output_schema(path);
    let validator = jsonschema::validator_for(&schema).expect("the output schema compiles");
    let errors: Vec<String> = validator.iter_errors(answer).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{path}: the answer does not match its schema: {errors:#?}\n{answer:#}");
}

/// Runs route `path` on `body`; a JSON answer must match the route's output schema.
pub async fn call(ctx: &Context, path: &str, body: Value) -> Result<Value, EngineError> {
    let catalog = paperchain_engine::catalog::standard();
    let entry = catalog.by_path(path).unwrap_or_else(|| panic!("{path} is not registered"));
    match entry.call(body.to_string().as_bytes(), ctx).await? {
        Reply::Json(answer) => {
            assert_matches_schema(path, &answer);
            Ok(answer)
        }
        Reply::Files(_) => panic!("{path} answered files"),
    }
}

/// Runs route `path` on `body`, which must answer JSON (checked against its schema).
pub async fn ok(ctx: &Context, path: &str, body: Value) -> Value {
    call(ctx, path, body.clone()).await.unwrap_or_else(|e| panic!("{path} {body}: {e:?}"))
}

/// Runs route `path` on `body`, which must fail; the error.
pub async fn err(ctx: &Context, path: &str, body: Value) -> EngineError {
    match call(ctx, path, body.clone()).await {
        Ok(value) => panic!("{path} {body} answered {value:#}"),
        Err(e) => e,
    }
}

/// The body `{"file": {"data": <base64 of pdf>, "filename": filename}}` with the fields of
/// `more` added.
pub fn file_body(pdf: &[u8], filename: &str, more: &Value) -> Value {
    let mut body = serde_json::json!({ "file": { "data": paperchain_testkit::b64(pdf), "filename": filename } });
    for (k, v) in more.as_object().expect("the fields to add are an object") {
        body[k] = v.clone();
    }
    body
}

/// Runs route `path` on `body`, which must answer files.
pub async fn call_files(ctx: &Context, path: &str, body: Value) -> Result<FileSet, EngineError> {
    let catalog = paperchain_engine::catalog::standard();
    let entry = catalog.by_path(path).unwrap_or_else(|| panic!("{path} is not registered"));
    match entry.call(body.to_string().as_bytes(), ctx).await? {
        Reply::Files(files) => Ok(files),
        Reply::Json(answer) => panic!("{path} answered JSON: {answer}"),
    }
}

/// Runs route `path` on each body, which must be refused as invalid input whose field
/// starts with the one given beside it.
pub async fn assert_refused(ctx: &Context, path: &str, cases: &[(Value, &str)]) {
    for (body, field) in cases {
        let Err(error) = call_files(ctx, path, body.clone()).await else {
            let mut shown = body.clone();
            if let Some(data) = shown.pointer_mut("/file/data") {
                *data = "…".into();
            }
            panic!("{path} accepted {shown}");
        };
        assert!(
            matches!(error.kind, paperchain_engine::ErrorKind::InvalidInput)
                && error.field.as_deref().is_some_and(|f| f.starts_with(field)),
            "{body}: {error:?}"
        );
    }
}
