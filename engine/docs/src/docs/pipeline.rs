//! `POST /v1/pdf/pipeline`: up to ten PDF-in, PDF-out operations on one PDF, in order,
//! on the document in memory (written out once, at the end).

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::error::{EngineError, ErrorKind};
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::SourcePdf;
use crate::pdf::transform::{CheckedStep, ErasedStep, Pdf, prepend_property};
use crate::price::Price;

/// Most steps a pipeline may have.
pub const MAX_STEPS: usize = 10;

/// Request of `/v1/pdf/pipeline`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PipelineInput {
    /// The PDF.
    pub file: FileInput,
    /// The operations, in order (1 to 10).
    pub steps: Steps,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// The steps of a pipeline: each `{"op": "<route's last path segment>", …that route's
/// fields but file and output}`, read against the op's own fields once `op` is known.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct Steps(pub Vec<Value>);

impl JsonSchema for Steps {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PipelineSteps".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let kinds: Vec<Value> =
            crate::docs::pipeline_steps().iter().map(|kind| step_schema(&**kind, generator)).collect();
        schemars::json_schema!({
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_STEPS,
            "description": "The operations, in order: each is `op` (the route's last path segment, e.g. `rotate`) with that route's fields except `file` and `output`.",
            "items": { "oneOf": kinds }
        })
    }
}

/// One kind of step: the route's options with `op` first.
fn step_schema(kind: &dyn ErasedStep, generator: &mut SchemaGenerator) -> Value {
    let mut schema = kind.options_schema(generator).to_value();
    if let Value::Object(object) = &mut schema {
        let op = json!({ "const": kind.op(), "description": kind.info().summary });
        prepend_property(object, "op", op, true);
        object.insert("title".into(), kind.op().into());
        object.insert("description".into(), format!("Step `{}`: {}", kind.op(), kind.info().path).into());
    }
    schema
}

/// A step ready to run.
struct Planned {
    op: &'static str,
    step: Box<dyn CheckedStep>,
    pages_out: u32,
}

/// A checked pipeline call.
pub struct Pipeline {
    source: SourcePdf,
    steps: Vec<Planned>,
    price: Price,
    output: OutputMode,
}

/// The route.
pub struct PipelineRoute;

impl Route for PipelineRoute {
    const HEAVY: bool = true;
    type Input = PipelineInput;
    type Prepared = Pipeline;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/pipeline",
        operation: "run_pdf_pipeline",
        family: Family::Docs,
        summary: "Run up to 10 PDF operations in sequence on one PDF",
        description: "Runs 1 to 10 PDF-in, PDF-out operations on one PDF, in order, each on the previous one's result, \
            kept in memory between steps (written out once, at the end). A step is `{\"op\": \"rotate\", \"degrees\": 90}`: \
            `op` is the route's last path segment and the other fields are that route's, without `file` and `output`. \
            Every step is checked before anything runs (page selections against the pages the step will receive); \
            an error names the step (`/steps/2/pages`). `protect` may only be the last step. The price is the sum of \
            the steps' prices. A report lists each step with the pages it left. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: "the sum of its steps' prices, each from the pages that step receives",
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: PipelineInput, ctx: &Context) -> Result<Pipeline, EngineError> {
        let count = input.steps.0.len();
        if !(1..=MAX_STEPS).contains(&count) {
            return Err(EngineError::invalid(
                "/steps",
                format!("/steps: a pipeline has 1 to {MAX_STEPS} steps, not {count}"),
            ));
        }
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let kinds = crate::docs::pipeline_steps();
        let limits = ctx.limits;
        let mut pages = source.page_count;
        let mut price = Price::micros(0);
        let mut steps = Vec::with_capacity(count);
        for (i, value) in input.steps.0.into_iter().enumerate() {
            let field = format!("/steps/{i}");
            let (kind, options) = split_op(value, &field, &kinds)?;
            if kind.last() && i + 1 < count {
                // A rule between steps, which no schema of one step can state.
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    format!("{field}/op"),
                    format!("{field}/op: `{}` must be the last step: its result is encrypted", kind.op()),
                ));
            }
            let (step, pages_out, step_price) = kind.check(options, &field, pages, &limits)?;
            price = price.plus(step_price);
            steps.push(Planned { op: kind.op(), step, pages_out });
            pages = pages_out;
        }
        Ok(Pipeline { source, steps, price, output: input.output })
    }

    fn quote(call: &Pipeline) -> Price {
        call.price
    }

    async fn run(call: Pipeline, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let limits = ctx.limits;
        let progress = ctx.progress.clone();
        blocking(move || {
            let Pipeline { source, steps, output, .. } = call;
            let total = steps.len() as u64;
            let mut report = Vec::with_capacity(steps.len());
            let mut state = Pdf::Doc(source.doc);
            for (i, Planned { op, step, pages_out }) in steps.into_iter().enumerate() {
                // A stopped call takes no further step.
                crate::cancel::check()?;
                let doc = state.into_doc(&limits).map_err(|e| step_error(e, i, op))?;
                state = step.run(doc, &limits).map_err(|e| step_error(e, i, op))?;
                report.push(json!({ "op": op, "pages": pages_out }));
                progress.advance("steps", i as u64 + 1, total);
            }
            let bytes = state.into_bytes()?;
            let name = derived_name(&source.filename, "processed", "pdf");
            let set = FileSet::single(OutFile::pdf(name, bytes), output).with_report(json!({ "steps": report }));
            Ok(Reply::Files(set))
        })
        .await
    }
}

/// The step's kind from its `op`, and the rest of its fields.
fn split_op<'a>(
    value: Value,
    field: &str,
    kinds: &'a [Box<dyn ErasedStep>],
) -> Result<(&'a dyn ErasedStep, Value), EngineError> {
    let Value::Object(mut map) = value else {
        return Err(EngineError::invalid(
            field,
            format!("{field}: a step is an object such as {{\"op\": \"rotate\", \"degrees\": 90}}"),
        ));
    };
    let ops = || kinds.iter().map(|k| k.op()).collect::<Vec<_>>().join(", ");
    let op = match map.remove("op") {
        Some(Value::String(op)) => op,
        Some(_) => return Err(EngineError::invalid(format!("{field}/op"), format!("{field}/op: must be a string"))),
        None => {
            return Err(EngineError::invalid(format!("{field}/op"), format!("{field}/op: missing; one of {}", ops())));
        }
    };
    let Some(kind) = kinds.iter().find(|k| k.op() == op) else {
        let shown: String = op.chars().take(40).collect::<String>().escape_debug().to_string();
        return Err(EngineError::invalid(
            format!("{field}/op"),
            format!("{field}/op: \"{shown}\" is not a pipeline step; one of {}", ops()),
        ));
    };
    for key in ["file", "output"] {
        if map.contains_key(key) {
            return Err(EngineError::invalid_with(
                "unknown_field",
                format!("{field}/{key}"),
                format!("{field}/{key}: a step takes no `{key}`; the pipeline's own `{key}` applies"),
            ));
        }
    }
    Ok((&**kind, Value::Object(map)))
}

/// An error of step `i` names the step: input errors by their field (already under
/// `/steps/i` when found while checking; nested here when found on the document), the
/// others in the message.
fn step_error(error: EngineError, i: usize, op: &str) -> EngineError {
    let prefix = format!("/steps/{i}");
    match error.kind {
        ErrorKind::InvalidInput | ErrorKind::TooLarge => {
            let mut error = if error.field.as_deref().is_some_and(|f| f.starts_with(&prefix)) {
                error
            } else {
                error.under(&prefix)
            };
            if !error.message.starts_with(&prefix) {
                error.message = format!("{prefix} ({op}): {}", error.message);
            }
            error
        }
        _ => EngineError { message: format!("step {i} ({op}): {}", error.message), ..error },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::qpdf::testing::{assert_qpdf_check, file_json, qpdf_cli, qpdf_pages, sample_pdf, temp_pdf};
    use crate::pdf::stamp::tests::page_text;
    use crate::pdf::testing::call;

    /// Runs a pipeline on `pdf`; answers the file and its report.
    async fn pipeline(pdf: &[u8], steps: Value) -> Result<(OutFile, Value), EngineError> {
        let body = json!({ "file": file_json(pdf, "report.pdf", None), "steps": steps });
        match call::<PipelineRoute>(&body).await? {
            Reply::Files(set) => {
                let report = set.report.clone().expect("a pipeline reports its steps");
                Ok((set.into_single_file()?, report))
            }
            Reply::Json(_) => unreachable!("NoJson"),
        }
    }

    async fn quote(pdf: &[u8], steps: Value) -> Result<Price, EngineError> {
        let body = json!({ "file": file_json(pdf, "report.pdf", None), "steps": steps });
        let mut catalog = crate::Catalog::empty();
        crate::register(&mut catalog);
        let entry = catalog.by_path("/v1/pdf/pipeline").unwrap();
        let (price, result) = entry.quote(&serde_json::to_vec(&body).unwrap(), &Context::new()).await;
        result.map(|_| price)
    }

    fn rotations(bytes: &[u8]) -> Vec<i64> {
        let doc = lopdf::Document::load_mem(bytes).unwrap();
        doc.page_iter().map(|id| crate::pdf::rotation(&doc, id)).collect()
    }

    #[tokio::test]
    async fn runs_the_steps_in_order_on_each_result() {
        let input = sample_pdf(6);
        let steps = json!([
            { "op": "remove-pages", "pages": "1-2" },
            { "op": "rotate", "degrees": 90, "pages": "1" },
            { "op": "extract-pages", "pages": "4,1" },
            { "op": "watermark", "text": "DRAFT" },
            { "op": "page-numbers", "format": "{n} of {total}" },
        ]);
        let (out, report) = pipeline(&input, steps).await.unwrap();
        assert_eq!(out.filename, "report-processed.pdf");
        assert_qpdf_check(&out.bytes, None);
        assert_eq!(qpdf_pages(&out.bytes, None), 2);
        // Page 4 of what was left (input page 6) comes first, then the rotated input page 3.
        assert_eq!(rotations(&out.bytes), vec![0, 90]);
        // The watermark runs diagonally: pdftotext breaks it into letters.
        let first: String = page_text(&out.bytes, 1).split_whitespace().collect();
        assert!(first.contains("Page6") && first.contains("DRAFT") && first.contains("1of2"), "{first}");
        let second: String = page_text(&out.bytes, 2).split_whitespace().collect();
        assert!(second.contains("Page3") && second.contains("2of2"), "{second}");
        let ops: Vec<(&str, u64)> = report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["op"].as_str().unwrap(), s["pages"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            ops,
            [("remove-pages", 4), ("rotate", 4), ("extract-pages", 2), ("watermark", 2), ("page-numbers", 2)]
        );
    }

    #[tokio::test]
    async fn the_price_is_the_sum_of_the_steps() {
        let input = sample_pdf(60);
        // Each step pays for the pages it receives (or leaves, when more): 60 pages are
        // 0.002 + 10 × 0.00002, twice (the extract receives 60), then 5 pages are 0.002.
        let steps = json!([
            { "op": "rotate", "degrees": 180 },
            { "op": "extract-pages", "pages": "1-5" },
            { "op": "flatten" },
        ]);
        assert_eq!(quote(&input, steps).await.unwrap().units(), 2_200 + 2_200 + 2_000);
        // Extracting past 50 pages is priced on the pages the extract leaves.
        let steps = json!([{ "op": "extract-pages", "pages": "1-60,1-20" }]);
        assert_eq!(quote(&input, steps).await.unwrap().units(), 2_000 + 30 * 20);
    }

    #[tokio::test]
    async fn a_step_is_checked_against_the_pages_it_receives() {
        let input = sample_pdf(5);
        let steps = json!([
            { "op": "extract-pages", "pages": "1-3" },
            { "op": "rotate", "degrees": 90, "pages": "5" },
        ]);
        let e = quote(&input, steps).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("page_out_of_range", Some("/steps/1/pages")));
        assert!(e.message.starts_with("/steps/1/pages: ") && e.message.contains('3'), "{}", e.message);
    }

    #[tokio::test]
    async fn mistakes_in_steps_name_the_step_and_field() {
        let input = sample_pdf(2);
        let cases = [
            (json!([]), "invalid_input", "/steps"),
            (json!(vec![json!({ "op": "flatten" }); 11]), "invalid_input", "/steps"),
            (json!([{ "op": "rotate", "degrees": 90 }, 7]), "invalid_input", "/steps/1"),
            (json!([{ "degrees": 90 }]), "invalid_input", "/steps/0/op"),
            (json!([{ "op": "merge" }]), "invalid_input", "/steps/0/op"),
            (json!([{ "op": 3 }]), "invalid_input", "/steps/0/op"),
            (json!([{ "op": "rotate", "degrees": 45 }]), "invalid_input", "/steps/0/degrees"),
            (json!([{ "op": "rotate", "degrees": 90, "colour": "red" }]), "unknown_field", "/steps/0/colour"),
            (json!([{ "op": "rotate" }]), "invalid_input", "/steps/0/degrees"),
            (json!([{ "op": "rotate", "degrees": 90, "file": {} }]), "unknown_field", "/steps/0/file"),
            (json!([{ "op": "flatten" }, { "op": "watermark", "text": "" }]), "invalid_input", "/steps/1/text"),
            (
                json!([{ "op": "crop", "margins": { "top": -1, "right": 0, "bottom": 0, "left": 0 } }]),
                "invalid_input",
                "/steps/0/margins/top",
            ),
            (
                json!([{ "op": "protect", "user_password": "a" }, { "op": "rotate", "degrees": 90 }]),
                "inconsistent_fields",
                "/steps/0/op",
            ),
        ];
        for (steps, code, field) in cases {
            let e = pipeline(&input, steps.clone()).await.unwrap_err();
            assert_eq!((e.code.as_ref(), e.field.as_deref()), (code, Some(field)), "{steps}: {}", e.message);
        }
    }

    #[tokio::test]
    async fn a_step_that_fails_on_the_document_names_its_index() {
        let form = std::fs::read("/work/shared/corpus/pdf/qpdf/form-filled-by-acrobat.pdf").unwrap();
        let steps = json!([
            { "op": "rotate", "degrees": 90 },
            { "op": "fill-form", "values": { "No such field": "x" } },
        ]);
        let e = pipeline(&form, steps).await.unwrap_err();
        assert_eq!(e.code, "form_mismatch");
        assert_eq!(e.field.as_deref(), Some("/steps/1/values/No such field"), "{}", e.message);
        assert!(e.message.starts_with("/steps/1"), "{}", e.message);
    }

    #[tokio::test]
    async fn fills_then_flattens_a_form() {
        let form = std::fs::read("/work/shared/corpus/pdf/sample-files/pdflatex-forms.pdf").unwrap();
        let steps = json!([
            { "op": "fill-form", "values": { "Name": "Ada Lovelace" } },
            { "op": "flatten" },
        ]);
        let (out, _) = pipeline(&form, steps).await.unwrap();
        assert_qpdf_check(&out.bytes, None);
        assert!(page_text(&out.bytes, 1).contains("Ada Lovelace"));
        let doc = lopdf::Document::load_mem(&out.bytes).unwrap();
        assert!(!doc.catalog().unwrap().has(b"AcroForm"));
    }

    #[tokio::test]
    async fn protect_ends_a_pipeline_with_an_encrypted_file() {
        let steps = json!([
            { "op": "rotate", "degrees": 270 },
            { "op": "protect", "user_password": "open", "permissions": { "print": "none" } },
        ]);
        let (out, _) = pipeline(&sample_pdf(3), steps).await.unwrap();
        assert_qpdf_check(&out.bytes, Some("open"));
        let file = temp_pdf(&out.bytes);
        let (_, text) = qpdf_cli(&["--show-encryption", "--password=open", file.path().to_str().unwrap()]);
        assert!(text.contains("R = 6") && text.contains("print low resolution: not allowed"), "{text}");
        let (code, _) = qpdf_cli(&["--check", file.path().to_str().unwrap()]);
        assert_ne!(code, 0, "opens only with the password");
    }

    #[tokio::test]
    async fn an_encrypted_input_opens_with_its_password_and_repair_linearizes() {
        let bytes = std::fs::read("/work/shared/corpus/pdf/qpdf/enc-XI-R6,V5,U=view,O=master.pdf").unwrap();
        let body = json!({
            "file": file_json(&bytes, "e.pdf", Some("view")),
            "steps": [{ "op": "unlock" }, { "op": "rotate", "degrees": 90 }, { "op": "repair", "linearize": true }],
        });
        let Reply::Files(set) = call::<PipelineRoute>(&body).await.unwrap();
        let out = set.into_single_file().unwrap();
        assert_qpdf_check(&out.bytes, None);
        let file = temp_pdf(&out.bytes);
        let (code, text) = qpdf_cli(&["--check-linearization", file.path().to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
        let body = json!({ "file": file_json(&bytes, "e.pdf", None), "steps": [{ "op": "unlock" }] });
        let e = call::<PipelineRoute>(&body).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/file/password"));
    }

    #[tokio::test]
    async fn rasterize_and_metadata_are_steps_too() {
        let steps = json!([
            { "op": "metadata", "action": "edit", "set": { "title": "Quarterly" } },
            { "op": "watermark", "text": "COPY" },
            { "op": "rasterize", "dpi": 72 },
        ]);
        let (out, _) = pipeline(&sample_pdf(2), steps).await.unwrap();
        assert_qpdf_check(&out.bytes, None);
        assert_eq!(qpdf_pages(&out.bytes, None), 2);
        assert!(page_text(&out.bytes, 1).trim().is_empty(), "an image-only page has no text");
        let steps = json!([{ "op": "rotate", "degrees": 90 }, { "op": "metadata", "action": "edit", "set": { "title": "Q3" } }]);
        let (out, _) = pipeline(&sample_pdf(1), steps).await.unwrap();
        let doc = lopdf::Document::load_mem(&out.bytes).unwrap();
        let info = doc.trailer.get(b"Info").and_then(|o| doc.dereference(o)).unwrap().1.as_dict().unwrap().clone();
        assert_eq!(info.get(b"Title").unwrap().as_str().unwrap(), b"Q3");
        let e = pipeline(&sample_pdf(1), json!([{ "op": "metadata", "action": "read" }])).await.unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/steps/0/action"));
    }

    #[tokio::test]
    async fn rendering_steps_are_priced_as_rendering() {
        let steps = json!([{ "op": "rotate", "degrees": 90 }, { "op": "rasterize" }]);
        assert_eq!(quote(&sample_pdf(4), steps).await.unwrap().units(), 2_000 + 3_000 + 4 * 500);
    }

    #[tokio::test]
    async fn compress_as_a_step_packs_the_result() {
        let input = sample_pdf(40);
        let steps = json!([{ "op": "rotate", "degrees": 90 }, { "op": "compress", "mode": "lossless" }]);
        let (out, _) = pipeline(&input, steps).await.unwrap();
        assert_qpdf_check(&out.bytes, None);
        assert_eq!(qpdf_pages(&out.bytes, None), 40);
        assert!(out.bytes.len() < input.len(), "{} >= {}", out.bytes.len(), input.len());
        assert!(out.bytes.windows(13).any(|w| w == b"/Type /ObjStm" || w == b"/Type/ObjStm/"), "object streams");
        assert_eq!(rotations(&out.bytes), vec![90; 40]);
        // A rendering step is priced as rendering: 0.003 + 40 × 0.0005.
        let steps = json!([{ "op": "compress", "mode": "extreme" }]);
        assert_eq!(quote(&input, steps).await.unwrap().units(), 3_000 + 40 * 500);
    }
}
