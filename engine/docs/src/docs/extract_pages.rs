//! `POST /v1/pdf/extract-pages`: a new PDF of the chosen pages, in the order given.

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

/// Fields of `/v1/pdf/extract-pages` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExtractPagesOptions {
    /// Pages to keep, in the order wanted (`"5,1-3"`, `"last"`, `"3-1"` runs backwards); repeats allowed.
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: String,
}

/// The operation.
pub struct ExtractPages;

/// The route.
pub type ExtractPagesRoute = TransformRoute<ExtractPages>;

impl Transform for ExtractPages {
    type Options = ExtractPagesOptions;
    type Plan = Vec<u32>;

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
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "extract";

    fn check(options: &ExtractPagesOptions, pages: u32, limits: &Limits) -> Result<u32, EngineError> {
        Ok(chosen(options, pages, limits)?.len() as u32)
    }

    fn plan(options: ExtractPagesOptions, doc: &Document, limits: &Limits) -> Result<Vec<u32>, EngineError> {
        chosen(&options, pdf::page_count(doc), limits)
    }

    fn apply(pages: Vec<u32>, doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        Ok(Pdf::Doc(assemble::pages_doc(&doc, &pages)?))
    }
}

fn chosen(options: &ExtractPagesOptions, pages: u32, limits: &Limits) -> Result<Vec<u32>, EngineError> {
    PageSelection::parse(&options.pages, "/pages")?.resolve(pages, limits.max_pages, "/pages")
}
