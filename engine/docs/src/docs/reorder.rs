//! `POST /v1/pdf/reorder`: reorder, repeat or drop pages from a list of page numbers.

use lopdf::Document;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::pdf::{self, assemble};
use crate::price::Price;

/// Fields of `/v1/pdf/reorder` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReorderOptions {
    /// The new page order as 1-based page numbers: `[3, 1, 2]`. A page may appear more
    /// than once; pages not listed are dropped.
    #[schemars(length(min = 1, max = 5000))]
    pub order: Vec<u32>,
}

/// The operation.
pub struct Reorder;

/// The route.
pub type ReorderRoute = TransformRoute<Reorder>;

impl Transform for Reorder {
    type Options = ReorderOptions;
    type Plan = Vec<u32>;

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
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "reordered";

    fn check(options: &ReorderOptions, pages: u32, limits: &Limits) -> Result<u32, EngineError> {
        check_order(&options.order, pages, limits)?;
        Ok(options.order.len() as u32)
    }

    fn plan(options: ReorderOptions, doc: &Document, limits: &Limits) -> Result<Vec<u32>, EngineError> {
        check_order(&options.order, pdf::page_count(doc), limits)?;
        Ok(options.order)
    }

    fn apply(order: Vec<u32>, doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        Ok(Pdf::Doc(assemble::pages_doc(&doc, &order)?))
    }
}

fn check_order(order: &[u32], pages: u32, limits: &Limits) -> Result<(), EngineError> {
    if order.is_empty() {
        return Err(EngineError::invalid("/order", "/order: list at least one page number"));
    }
    if order.len() > limits.max_pages as usize {
        return Err(EngineError::too_large(
            "too_many_pages",
            Some("/order".into()),
            format!("/order: the result may have at most {} pages", limits.max_pages),
        ));
    }
    for (i, &page) in order.iter().enumerate() {
        if page == 0 || page > pages {
            return Err(EngineError::invalid_with(
                "page_out_of_range",
                format!("/order/{i}"),
                format!("/order/{i}: page {page} is out of range; the document has {pages} pages"),
            ));
        }
    }
    Ok(())
}
