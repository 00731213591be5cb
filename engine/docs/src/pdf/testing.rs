//! Helpers for route tests: run a route on a JSON body, read back its one PDF.

use base64::Engine as _;
use lopdf::Document;
use serde_json::{Value, json};

use crate::catalog::{Route, parse_body};
use crate::context::Context;
use crate::error::EngineError;
use crate::output::Reply;

/// Parses `body` as route `R`'s input, prepares and runs it.
pub async fn call<R: Route>(body: &Value) -> Result<Reply<R::Output>, EngineError> {
    let input: R::Input = parse_body(&serde_json::to_vec(body).expect("a JSON body"))?;
    let ctx = Context::new();
    let prepared = R::prepare(input, &ctx).await?;
    R::run(prepared, &ctx).await
}

/// Runs `R` with `pdf` as its `file` named `filename`; returns the output's name and document.
pub async fn single_pdf<R: Route>(
    pdf: &[u8],
    filename: &str,
    mut body: Value,
) -> Result<(String, Document), EngineError> {
    body["file"] = json!({ "data": base64::engine::general_purpose::STANDARD.encode(pdf), "filename": filename });
    match call::<R>(&body).await? {
        Reply::Files(set) => {
            let file = set.into_single_file()?;
            Ok((file.filename, Document::load_mem(&file.bytes).expect("the output opens")))
        }
        Reply::Json(_) => panic!("{} answered JSON where a file was expected", R::INFO.path),
    }
}
