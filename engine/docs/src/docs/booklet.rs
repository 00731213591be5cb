//! `POST /v1/pdf/booklet`: pages reordered two to a side for a saddle-stitched booklet.
//!
//! The pages are padded with blank ones to a multiple of four and laid two to a side, so
//! that the printed sheets, stacked and folded in the middle, read in order: the first
//! sheet's front carries the last page and the first, its back the second and the one
//! before last, and so on inwards. With signatures, each group of sheets is folded on its
//! own and the groups stacked. Each side is one page of the result, sheet by sheet, front
//! then back: printed on both sides, flipped on the short edge.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pdf::impose::{self, Draw, Sheet, SheetOrientation};
use crate::pdf::paper::PageSize;
use crate::pdf::stamp::check_range;
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::price::Price;

/// The most sheets one signature may fold.
const MAX_SIGNATURE: u32 = 64;

/// Fields of `/v1/pdf/booklet` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BookletOptions {
    /// The paper printed on: a paper name (`A4`, `Letter`…) or `{"width_pt": …, "height_pt": …}`, turned so two pages sit side by side; the first page's size when omitted (an A4 document becomes an A4 booklet of pages scaled to A5).
    #[serde(default)]
    pub sheet: Option<PageSize>,
    /// `left`: the spine on the left, as books in left-to-right scripts; `right`: on the right (Arabic, Hebrew, Japanese).
    #[serde(default)]
    pub binding: Binding,
    /// Sheets folded together as one signature (1 to 64), the signatures then stacked; every sheet in one fold when omitted.
    #[serde(default)]
    #[schemars(range(min = 1, max = 64))]
    pub sheets_per_signature: Option<u32>,
    /// Blank border around each side, in points: 0 to 144 (0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 144))]
    pub margin_pt: f64,
    /// Space at the fold between the two pages, in points: 0 to 144 (0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 144))]
    pub gutter_pt: f64,
    /// Pages of the booklet, in the order written; every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
}

/// Where the spine is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Binding {
    /// The spine on the left: page 2 faces page 3 with page 2 on the left.
    #[default]
    Left,
    /// The spine on the right: page 2 is on the right.
    Right,
}

/// The pages (1-based within `count` pages padded to a multiple of four) on each side,
/// left then right, sheet by sheet, front then back; pages beyond `count` are blank.
pub fn sides(count: u32, binding: Binding) -> Vec<[u32; 2]> {
    let padded = count.div_ceil(4) * 4;
    let mut out = Vec::with_capacity(padded as usize / 2);
    for sheet in 0..padded / 4 {
        let front = [padded - 2 * sheet, 2 * sheet + 1];
        let back = [2 * sheet + 2, padded - 2 * sheet - 1];
        for side in [front, back] {
            out.push(if binding == Binding::Right { [side[1], side[0]] } else { side });
        }
    }
    out
}

/// The operation.
pub struct Booklet;

/// The route.
pub type BookletRoute = TransformRoute<Booklet>;

impl Transform for Booklet {
    type Options = BookletOptions;
    type Plan = Vec<Sheet>;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/booklet",
        operation: "make_pdf_booklet",
        family: Family::Docs,
        summary: "Reorder pages two to a side for a folded booklet",
        description: "Imposes the pages for a saddle-stitched booklet: two pages to a side, reordered so that the \
            printed sheets, stacked and folded in the middle, read in order. The pages are padded with blank ones at \
            the end to a multiple of four. The result has one page per side, sheet by sheet, front then back: print \
            it on both sides, flipping on the short edge. The sheet is the first page's size turned sideways (an A4 \
            document gives an A4 booklet of half-size pages) unless `sheet` names a paper. `binding` puts the spine \
            left or right; `sheets_per_signature` folds the sheets in groups for thick booklets; `gutter_pt` leaves \
            room at the fold. Pages are drawn, not rendered: text stays selectable. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "booklet";

    fn check(options: &BookletOptions, pages: u32, limits: &Limits) -> Result<u32, EngineError> {
        impose::check_paper(options.sheet, "/sheet", options.margin_pt, 144.0)?;
        if let Some(n) = options.sheets_per_signature
            && !(1..=MAX_SIGNATURE).contains(&n)
        {
            return Err(EngineError::invalid(
                "/sheets_per_signature",
                format!("/sheets_per_signature: must be 1 to {MAX_SIGNATURE}, not {n}"),
            ));
        }
        check_range(options.gutter_pt, 0.0, 144.0, "/gutter_pt")?;
        let chosen = impose::chosen(options.pages.as_deref(), pages, limits)?;
        // Two sides a sheet, a sheet every four pages (padded).
        Ok((chosen.len() as u32).div_ceil(4) * 2)
    }

    fn plan(options: BookletOptions, doc: &lopdf::Document, limits: &Limits) -> Result<Vec<Sheet>, EngineError> {
        let chosen = impose::chosen_sizes(doc, options.pages.as_deref(), limits)?;
        let first = chosen[0].1;
        let paper = options.sheet.map_or(first, PageSize::points);
        let grid =
            impose::best_grid(paper, SheetOrientation::Auto, &[(2, 1)], first, options.margin_pt, options.gutter_pt)
                .ok_or_else(|| impose::no_room(paper))?;
        let per_signature = options.sheets_per_signature.map_or(chosen.len(), |n| n as usize * 4);
        let mut sheets = Vec::new();
        for group in chosen.chunks(per_signature) {
            for side in sides(group.len() as u32, options.binding) {
                let mut sheet = Sheet { size: grid.size, ..Sheet::default() };
                for (cell, index) in grid.cells.iter().zip(side) {
                    if let Some(&(page, size)) = group.get(index as usize - 1) {
                        sheet.draws.push(Draw { page, at: impose::fit(size, *cell), clip: None });
                    }
                }
                sheets.push(sheet);
            }
        }
        Ok(sheets)
    }

    fn apply(sheets: Vec<Sheet>, doc: lopdf::Document, limits: &Limits) -> Result<Pdf, EngineError> {
        impose::into_pdf(doc, sheets, limits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_sheets_read_in_order() {
        // Eight pages: two sheets; the outer one carries 8|1 and 2|7.
        assert_eq!(sides(8, Binding::Left), [[8, 1], [2, 7], [6, 3], [4, 5]]);
        // Five pages are padded to eight: 6, 7 and 8 are blank.
        assert_eq!(sides(5, Binding::Left), sides(8, Binding::Left));
        assert_eq!(sides(4, Binding::Right), [[1, 4], [3, 2]]);
        // Every page once, whatever the count.
        for count in 1..40 {
            let mut all: Vec<u32> = sides(count, Binding::Left).concat();
            all.sort_unstable();
            assert_eq!(all, (1..=count.div_ceil(4) * 4).collect::<Vec<_>>());
        }
    }
}
