//! `POST /v1/pdf/extract-pages`: a new PDF of the chosen pages, in the order given.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::docs::pdf::SourcePdf;
use crate::docs::{PAGE_EDIT_PRICE_RULE, assemble, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{NoJson, OutputMode, Reply};
use crate::pages::PageSelection;
use crate::price::Price;

/// Request of `/v1/pdf/extract-pages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractPagesInput {
    /// The PDF.
    pub file: FileInput,
    /// Pages to keep, in the order wanted (`"5,1-3"`, `"last"`, `"3-1"` runs backwards); repeats allowed.
    pub pages: String,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// A checked extract call.
pub struct ExtractPages {
    source: SourcePdf,
    pages: Vec<u32>,
    output: OutputMode,
}

/// The route.
pub struct ExtractPagesRoute;

impl Route for ExtractPagesRoute {
    type Input = ExtractPagesInput;
    type Prepared = ExtractPages;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/extract-pages",
        operation: "extract_pdf_pages",
        family: Family::Docs,
        summary: "New PDF of chosen pages, in the order given",
        description: "Builds a new PDF from a page selection of the input, in the order written (repeats allowed). \
            Bookmarks pointing to kept pages, links between kept pages, form fields on kept pages and the document \
            information are kept. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
    };

    async fn prepare(input: ExtractPagesInput, ctx: &Context) -> Result<ExtractPages, EngineError> {
        let selection = PageSelection::parse(&input.pages, "/pages")?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let pages = selection.resolve(source.page_count, ctx.limits.max_pages, "/pages")?;
        Ok(ExtractPages { source, pages, output: input.output })
    }

    fn quote(call: &ExtractPages) -> Price {
        page_edit_price(call.source.page_count.max(call.pages.len() as u32))
    }

    async fn run(call: ExtractPages, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        assemble::pages_reply(call.source, call.pages, "extract", call.output).await
    }
}
