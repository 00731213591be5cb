//! `POST /v1/pdf/split`: split by page ranges or every N pages.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::pdf::assemble;
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Most parts one call may produce.
const MAX_PARTS: usize = 5_000;

/// Request of `/v1/pdf/split`: give `ranges` or `every`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// Exactly one of `ranges` and `every` (a null counts as absent), said without a top-level `oneOf`,
// which some agents' tool schemas refuse.
#[schemars(extend(
    "if" = { "required": ["ranges"], "properties": { "ranges": { "type": "array" } } },
    "then" = { "not": { "required": ["every"], "properties": { "every": { "type": "integer" } } } },
    "else" = { "required": ["every"], "properties": { "every": { "type": "integer" } } }
))]
pub struct SplitInput {
    /// The PDF.
    pub file: FileInput,
    /// One output file per entry, each a page selection (`["1-3", "4-last"]`).
    #[serde(default)]
    #[schemars(length(min = 1, max = 5000), inner(regex(pattern = crate::pages::PATTERN)))]
    pub ranges: Option<Vec<String>>,
    /// One output file per N pages (the last may be shorter).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub every: Option<u32>,
    /// How to deliver the parts: one ZIP (`file`) or a JSON list (`base64`, `url`).
    #[serde(default)]
    pub output: OutputMode,
}

/// A checked split call: the pages of each part.
pub struct Split {
    source: SourcePdf,
    parts: Vec<Vec<u32>>,
    output: OutputMode,
}

/// The route.
pub struct SplitRoute;

impl Route for SplitRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::ZIP];
    type Input = SplitInput;
    type Prepared = Split;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/split",
        operation: "split_pdf",
        family: Family::Docs,
        summary: "Split by page ranges or every N pages",
        description: "Splits a PDF into several PDFs: one per page selection in `ranges`, or one per `every` pages. \
            Each part keeps its bookmarks, links between its own pages, its form fields and the document information. \
            output=file answers one ZIP; base64 and url answer a JSON list (url: 24 h links).",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Files,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: SplitInput, ctx: &Context) -> Result<Split, EngineError> {
        let selections = match (&input.ranges, input.every) {
            (Some(_), Some(_)) => {
                return Err(EngineError::invalid("/every", "give either `ranges` or `every`, not both"));
            }
            (None, None) => {
                return Err(EngineError::invalid(
                    "/ranges",
                    "give `ranges` (a list of page selections) or `every` (N pages a part)",
                ));
            }
            (None, Some(0)) => return Err(EngineError::invalid("/every", "/every: must be at least 1")),
            (None, Some(_)) => None,
            (Some(ranges), None) => {
                if ranges.is_empty() || ranges.len() > MAX_PARTS {
                    return Err(EngineError::invalid(
                        "/ranges",
                        format!("/ranges: list 1 to {MAX_PARTS} page selections"),
                    ));
                }
                let parsed = ranges
                    .iter()
                    .enumerate()
                    .map(|(i, r)| PageSelection::parse(r, &format!("/ranges/{i}")))
                    .collect::<Result<Vec<_>, _>>()?;
                Some(parsed)
            }
        };
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let parts = match (selections, input.every) {
            (Some(selections), _) => {
                // All parts together are held to the page limit, so ranges that repeat
                // the document cannot multiply the work.
                let mut budget = ctx.limits.max_pages;
                let mut parts = Vec::with_capacity(selections.len());
                for (i, selection) in selections.iter().enumerate() {
                    let pages = selection.resolve(source.page_count, budget, &format!("/ranges/{i}"))?;
                    budget -= pages.len() as u32;
                    parts.push(pages);
                }
                parts
            }
            (None, Some(every)) => {
                let pages: Vec<u32> = (1..=source.page_count).collect();
                pages.chunks(every as usize).map(<[u32]>::to_vec).collect()
            }
            (None, None) => Vec::new(),
        };
        Ok(Split { source, parts, output: input.output })
    }

    fn quote(call: &Split) -> Price {
        let output: usize = call.parts.iter().map(Vec::len).sum();
        page_edit_price(call.source.page_count.max(output as u32))
    }

    async fn run(call: Split, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let total = call.parts.len() as u64;
            let width = call.parts.len().to_string().len();
            let mut files = Vec::with_capacity(call.parts.len());
            let mut written = 0usize;
            for (i, pages) in call.parts.iter().enumerate() {
                let bytes = assemble::pages_of(&call.source.doc, pages)?;
                // Parts share the source's resources and each carries its own copy.
                written += bytes.len();
                if written > pdf::MAX_OUTPUT_BYTES {
                    return Err(pdf::output_too_large());
                }
                let suffix = format!("part-{:0width$}", i + 1);
                files.push(OutFile::pdf(derived_name(&call.source.filename, &suffix, "pdf"), bytes));
                progress.advance("parts", i as u64 + 1, total);
            }
            let zip = derived_name(&call.source.filename, "split", "zip");
            Ok(Reply::Files(FileSet::several(files, call.output, zip)))
        })
        .await
    }
}
