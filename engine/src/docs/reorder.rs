//! `POST /v1/pdf/reorder`: reorder, repeat or drop pages from a list of page numbers.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::docs::pdf::SourcePdf;
use crate::docs::{PAGE_EDIT_PRICE_RULE, assemble, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{NoJson, OutputMode, Reply};
use crate::price::Price;

/// Request of `/v1/pdf/reorder`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReorderInput {
    /// The PDF.
    pub file: FileInput,
    /// The new page order as 1-based page numbers: `[3, 1, 2]`. A page may appear more
    /// than once; pages not listed are dropped.
    #[schemars(length(min = 1, max = 5000))]
    pub order: Vec<u32>,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// A checked reorder call.
pub struct Reorder {
    source: SourcePdf,
    order: Vec<u32>,
    output: OutputMode,
}

/// The route.
pub struct ReorderRoute;

impl Route for ReorderRoute {
    type Input = ReorderInput;
    type Prepared = Reorder;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/reorder",
        operation: "reorder_pdf_pages",
        family: Family::Docs,
        summary: "Reorder, repeat or drop pages",
        description: "Rebuilds the PDF with its pages in the order of a list of page numbers. A page may be \
            listed more than once; pages not listed are dropped. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
    };

    async fn prepare(input: ReorderInput, ctx: &Context) -> Result<Reorder, EngineError> {
        if input.order.is_empty() {
            return Err(EngineError::invalid("/order", "/order: list at least one page number"));
        }
        if input.order.len() > ctx.limits.max_pages as usize {
            return Err(EngineError::too_large(
                "too_many_pages",
                Some("/order".into()),
                format!("/order: the result may have at most {} pages", ctx.limits.max_pages),
            ));
        }
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        for (i, &page) in input.order.iter().enumerate() {
            if page == 0 || page > source.page_count {
                return Err(EngineError::invalid_with(
                    "page_out_of_range",
                    format!("/order/{i}"),
                    format!("/order/{i}: page {page} is out of range; the document has {} pages", source.page_count),
                ));
            }
        }
        Ok(Reorder { source, order: input.order, output: input.output })
    }

    fn quote(call: &Reorder) -> Price {
        page_edit_price(call.source.page_count.max(call.order.len() as u32))
    }

    async fn run(call: Reorder, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        assemble::pages_reply(call.source, call.order, "reordered", call.output).await
    }
}
