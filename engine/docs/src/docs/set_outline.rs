//! `POST /v1/pdf/set-outline`: write bookmarks from a nested tree (replaces existing).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pdf::outline_tree::{self, MAX_DEPTH, OutlineItem};
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::pdf::{self};
use crate::price::Price;
use lopdf::Document;

/// Most bookmarks one call may write.
const MAX_BOOKMARKS: usize = 10_000;
/// Longest title, in characters.
const MAX_TITLE: usize = 1_000;

/// Fields of `/v1/pdf/set-outline` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetOutlineOptions {
    /// The new bookmark tree; it replaces the existing one. An empty list removes all bookmarks.
    pub outline: Vec<NewBookmark>,
}

/// One bookmark to write.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewBookmark {
    /// The title (1 to 1000 characters, not only blanks).
    #[schemars(regex(pattern = crate::patterns::NOT_BLANK), length(min = 1, max = MAX_TITLE))]
    pub title: String,
    /// The 1-based page it opens.
    #[schemars(range(min = 1))]
    pub page: u32,
    /// Child bookmarks.
    #[serde(default)]
    pub children: Vec<NewBookmark>,
}

/// The operation.
pub struct SetOutline;

/// The route.
pub type SetOutlineRoute = TransformRoute<SetOutline>;

impl Transform for SetOutline {
    type Options = SetOutlineOptions;
    type Plan = Vec<NewBookmark>;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/set-outline",
        operation: "write_pdf_bookmarks",
        family: Family::Docs,
        summary: "Write bookmarks",
        description: "Replaces the bookmarks (outline) of a PDF with a nested tree of titles and 1-based pages. \
            An empty list removes every bookmark. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "bookmarked";

    fn check(options: &SetOutlineOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        check_titles(&options.outline, "/outline", 0, &mut 0)?;
        check_pages(&options.outline, "/outline", pages)?;
        Ok(pages)
    }

    fn plan(options: SetOutlineOptions, doc: &Document, limits: &Limits) -> Result<Vec<NewBookmark>, EngineError> {
        Self::check(&options, pdf::page_count(doc), limits)?;
        Ok(options.outline)
    }

    fn apply(outline: Vec<NewBookmark>, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        let ids: Vec<_> = doc.page_iter().collect();
        let items = to_items(&outline, &ids);
        outline_tree::write(&mut doc, &items).map_err(|e| pdf::edit_error("writing bookmarks", e))?;
        Ok(Pdf::Doc(doc))
    }
}

fn check_titles(items: &[NewBookmark], at: &str, depth: usize, total: &mut usize) -> Result<(), EngineError> {
    if depth >= MAX_DEPTH && !items.is_empty() {
        return Err(EngineError::invalid(at, format!("{at}: bookmarks nest at most {MAX_DEPTH} levels deep")));
    }
    for (i, item) in items.iter().enumerate() {
        *total += 1;
        if *total > MAX_BOOKMARKS {
            return Err(EngineError::invalid("/outline", format!("/outline: at most {MAX_BOOKMARKS} bookmarks")));
        }
        let field = format!("{at}/{i}");
        let length = item.title.chars().count();
        if item.title.trim().is_empty() || length > MAX_TITLE {
            return Err(EngineError::invalid(
                format!("{field}/title"),
                format!("{field}/title: a title has 1 to {MAX_TITLE} characters and is not blank"),
            ));
        }
        check_titles(&item.children, &format!("{field}/children"), depth + 1, total)?;
    }
    Ok(())
}

fn check_pages(items: &[NewBookmark], at: &str, page_count: u32) -> Result<(), EngineError> {
    for (i, item) in items.iter().enumerate() {
        let field = format!("{at}/{i}");
        if item.page == 0 || item.page > page_count {
            return Err(EngineError::invalid_with(
                "page_out_of_range",
                format!("{field}/page"),
                format!("{field}/page: page {} is out of range; the document has {page_count} pages", item.page),
            ));
        }
        check_pages(&item.children, &format!("{field}/children"), page_count)?;
    }
    Ok(())
}

fn to_items(items: &[NewBookmark], pages: &[lopdf::ObjectId]) -> Vec<OutlineItem> {
    items
        .iter()
        .map(|b| OutlineItem {
            title: b.title.clone(),
            page: pages.get(b.page as usize - 1).copied(),
            children: to_items(&b.children, pages),
        })
        .collect()
}
