//! `POST /v1/pdf/set-outline`: write bookmarks from a nested tree (replaces existing).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::outline_tree::{self, MAX_DEPTH, OutlineItem};
use crate::docs::pdf::{self, SourcePdf};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{NoJson, OutputMode, Reply};
use crate::price::Price;

/// Most bookmarks one call may write.
const MAX_BOOKMARKS: usize = 10_000;
/// Longest title, in characters.
const MAX_TITLE: usize = 1_000;

/// Request of `/v1/pdf/set-outline`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetOutlineInput {
    /// The PDF.
    pub file: FileInput,
    /// The new bookmark tree; it replaces the existing one. An empty list removes all bookmarks.
    pub outline: Vec<NewBookmark>,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// One bookmark to write.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewBookmark {
    /// The title (1 to 1000 characters).
    pub title: String,
    /// The 1-based page it opens.
    #[schemars(range(min = 1))]
    pub page: u32,
    /// Child bookmarks.
    #[serde(default)]
    pub children: Vec<NewBookmark>,
}

/// A checked set-outline call.
pub struct SetOutline {
    source: SourcePdf,
    outline: Vec<NewBookmark>,
    output: OutputMode,
}

/// The route.
pub struct SetOutlineRoute;

impl Route for SetOutlineRoute {
    type Input = SetOutlineInput;
    type Prepared = SetOutline;
    type Output = NoJson;

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
    };

    async fn prepare(input: SetOutlineInput, ctx: &Context) -> Result<SetOutline, EngineError> {
        let mut total = 0;
        check_titles(&input.outline, "/outline", 0, &mut total)?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        check_pages(&input.outline, "/outline", source.page_count)?;
        Ok(SetOutline { source, outline: input.outline, output: input.output })
    }

    fn quote(call: &SetOutline) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: SetOutline, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let SetOutline { mut source, outline, output } = call;
            let ids = source.page_ids();
            let items = to_items(&outline, &ids);
            outline_tree::write(&mut source.doc, &items).map_err(|e| pdf::edit_error("writing bookmarks", e))?;
            source.into_reply("bookmarked", output)
        })
        .await
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
