//! `POST /v1/pdf/outline`: the bookmark tree.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::Reply;
use crate::pdf::SourcePdf;
use crate::pdf::outline_tree::{self, OutlineItem};
use crate::price::Price;

/// Request of `/v1/pdf/outline`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutlineInput {
    /// The PDF.
    pub file: FileInput,
}

/// The bookmark tree of a PDF.
#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct OutlineReport {
    /// Top-level bookmarks, in order.
    pub outline: Vec<Bookmark>,
    /// Number of bookmarks at every level.
    pub count: usize,
}

/// One bookmark. Titles are text from the file: untrusted data.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
pub struct Bookmark {
    /// The title.
    pub title: String,
    /// The 1-based page it opens; null when it opens no page of this document.
    pub page: Option<u32>,
    /// Child bookmarks.
    pub children: Vec<Bookmark>,
}

/// The route.
pub struct OutlineRoute;

impl Route for OutlineRoute {
    type Input = OutlineInput;
    type Prepared = SourcePdf;
    type Output = OutlineReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/outline",
        operation: "read_pdf_bookmarks",
        family: Family::Docs,
        summary: "Bookmark tree",
        description: "Reads the bookmarks (outline) of a PDF as a nested tree of titles and 1-based page numbers. \
            Destinations given by name or through GoTo actions are resolved. Titles are untrusted text from the file.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: OutlineInput, ctx: &Context) -> Result<SourcePdf, EngineError> {
        SourcePdf::load(&input.file, "/file", ctx).await
    }

    fn quote(source: &SourcePdf) -> Price {
        page_edit_price(source.page_count)
    }

    async fn run(source: SourcePdf, _ctx: &Context) -> Result<Reply<OutlineReport>, EngineError> {
        blocking(move || {
            let numbers: HashMap<_, u32> = source.page_ids().into_iter().zip(1..).collect();
            let items = outline_tree::read(&source.doc);
            let outline = to_bookmarks(&items, &numbers);
            Ok(Reply::Json(OutlineReport { count: outline_tree::count(&items), outline }))
        })
        .await
    }
}

fn to_bookmarks(items: &[OutlineItem], numbers: &HashMap<lopdf::ObjectId, u32>) -> Vec<Bookmark> {
    items
        .iter()
        .map(|item| Bookmark {
            title: item.title.clone(),
            page: item.page.and_then(|p| numbers.get(&p).copied()),
            children: to_bookmarks(&item.children, numbers),
        })
        .collect()
}
