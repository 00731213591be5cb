//! `POST /v1/pdf/remove-pages`: delete pages.

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

/// Request of `/v1/pdf/remove-pages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemovePagesInput {
    /// The PDF.
    pub file: FileInput,
    /// Pages to delete (`"2,4-6"`, `"last"`). At least one page must remain.
    pub pages: String,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// A checked remove call: the pages that stay.
pub struct RemovePages {
    source: SourcePdf,
    keep: Vec<u32>,
    output: OutputMode,
}

/// The route.
pub struct RemovePagesRoute;

impl Route for RemovePagesRoute {
    type Input = RemovePagesInput;
    type Prepared = RemovePages;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/remove-pages",
        operation: "remove_pdf_pages",
        family: Family::Docs,
        summary: "Delete pages",
        description: "Deletes the selected pages. Bookmarks and links to deleted pages are dropped; everything \
            else of the remaining pages is kept. Removing every page is refused. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
    };

    async fn prepare(input: RemovePagesInput, ctx: &Context) -> Result<RemovePages, EngineError> {
        let selection = PageSelection::parse(&input.pages, "/pages")?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let removed = selection.resolve_set(source.page_count, "/pages")?;
        let keep: Vec<u32> = (1..=source.page_count).filter(|p| removed.binary_search(p).is_err()).collect();
        if keep.is_empty() {
            return Err(EngineError::invalid(
                "/pages",
                format!("/pages: this removes all {} pages; at least one page must remain", source.page_count),
            ));
        }
        Ok(RemovePages { source, keep, output: input.output })
    }

    fn quote(call: &RemovePages) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: RemovePages, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        assemble::pages_reply(call.source, call.keep, "removed", call.output).await
    }
}
