//! `POST /v1/pdf/remove-pages`: delete pages.

use lopdf::Document;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pages::PageSelection;
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::pdf::{self, assemble};
use crate::price::Price;

/// Fields of `/v1/pdf/remove-pages` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemovePagesOptions {
    /// Pages to delete (`"2,4-6"`, `"last"`). At least one page must remain.
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: String,
}

/// The operation.
pub struct RemovePages;

/// The route.
pub type RemovePagesRoute = TransformRoute<RemovePages>;

impl Transform for RemovePages {
    type Options = RemovePagesOptions;
    type Plan = Vec<u32>;

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
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "removed";

    fn check(options: &RemovePagesOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        Ok(kept(options, pages)?.len() as u32)
    }

    fn plan(options: RemovePagesOptions, doc: &Document, _: &Limits) -> Result<Vec<u32>, EngineError> {
        kept(&options, pdf::page_count(doc))
    }

    fn apply(keep: Vec<u32>, doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        Ok(Pdf::Doc(assemble::pages_doc(&doc, &keep)?))
    }
}

/// The pages that stay.
fn kept(options: &RemovePagesOptions, pages: u32) -> Result<Vec<u32>, EngineError> {
    let removed = PageSelection::parse(&options.pages, "/pages")?.resolve_set(pages, "/pages")?;
    let keep: Vec<u32> = (1..=pages).filter(|p| removed.binary_search(p).is_err()).collect();
    if keep.is_empty() {
        return Err(EngineError::invalid_with(
            "no_pages_left",
            "/pages",
            format!("/pages: this removes all {pages} pages; at least one page must remain"),
        ));
    }
    Ok(keep)
}
