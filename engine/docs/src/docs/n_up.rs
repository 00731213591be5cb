//! `POST /v1/pdf/n-up`: several pages on each sheet, scaled to fit, in a chosen order.
//!
//! The grid follows the count (2 and 6 and 8 a sheet turn the sheet against the pages, 4,
//! 9 and 16 keep it), chosen so the first page comes out largest; each page is then
//! scaled into its own cell, so pages of other sizes or turned ones fit too. The pages
//! are drawn, not rasterised: text stays text (see `pdf::impose`).

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

/// Pages a sheet may take, each with the grids (columns, rows) it may use.
const COUNTS: [(u32, &[(u32, u32)]); 6] = [
    (2, &[(2, 1), (1, 2)]),
    (4, &[(2, 2)]),
    (6, &[(3, 2), (2, 3)]),
    (8, &[(4, 2), (2, 4)]),
    (9, &[(3, 3)]),
    (16, &[(4, 4)]),
];

/// Fields of `/v1/pdf/n-up` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NUpOptions {
    /// Pages on each sheet: 2, 4, 6, 8, 9 or 16.
    #[schemars(extend("enum" = [2, 4, 6, 8, 9, 16]))]
    pub per_sheet: u32,
    /// The sheets' paper: a paper name (`A4`, `Letter`…) or `{"width_pt": …, "height_pt": …}`; the first page's size when omitted.
    #[serde(default)]
    pub sheet: Option<PageSize>,
    /// `auto` turns the sheet the way the pages come out largest; `portrait` or `landscape` force one.
    #[serde(default)]
    pub orientation: SheetOrientation,
    /// Order on a sheet: `across` (left to right, then the next row down), `down` (top to bottom, then the next column), `across_right_to_left` or `down_right_to_left`.
    #[serde(default)]
    pub order: Order,
    /// Blank border around each sheet, in points: 0 to 144 (0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 144))]
    pub margin_pt: f64,
    /// Space between pages, in points: 0 to 72 (0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 72))]
    pub gap_pt: f64,
    /// Draw a thin gray frame around each page (false).
    #[serde(default)]
    pub borders: bool,
    /// Pages to lay out, in the order written (`"1-4"`, `"1,1,1,1"` for four copies); every page when omitted. The others are left out.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
}

/// The order pages fill a sheet in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// Left to right, then the next row down.
    #[default]
    Across,
    /// Top to bottom, then the next column to the right.
    Down,
    /// Right to left, then the next row down.
    AcrossRightToLeft,
    /// Top to bottom, then the next column to the left.
    DownRightToLeft,
}

impl Order {
    /// The cell (index row by row from the top left) of the `slot`th page of a sheet.
    fn cell(self, slot: u32, (cols, rows): (u32, u32)) -> usize {
        let (col, row) = match self {
            Order::Across | Order::AcrossRightToLeft => (slot % cols, slot / cols),
            Order::Down | Order::DownRightToLeft => (slot / rows, slot % rows),
        };
        let col = if matches!(self, Order::AcrossRightToLeft | Order::DownRightToLeft) { cols - 1 - col } else { col };
        (row * cols + col) as usize
    }
}

/// The operation.
pub struct NUp;

/// The route.
pub type NUpRoute = TransformRoute<NUp>;

/// The grids `per_sheet` may use, or the error naming the field.
fn shapes(per_sheet: u32) -> Result<&'static [(u32, u32)], EngineError> {
    COUNTS.iter().find(|(n, _)| *n == per_sheet).map(|(_, shapes)| *shapes).ok_or_else(|| {
        EngineError::invalid("/per_sheet", format!("/per_sheet: must be 2, 4, 6, 8, 9 or 16, not {per_sheet}"))
    })
}

impl Transform for NUp {
    type Options = NUpOptions;
    type Plan = Vec<Sheet>;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/n-up",
        operation: "n_up_pdf_pages",
        family: Family::Docs,
        summary: "Put 2, 4, 6, 8, 9 or 16 pages on each sheet",
        description: "Lays several pages on each sheet, scaled to fit, for handouts and printing several slides or \
            pages to a sheet. 2, 6 and 8 a sheet turn the sheet against the pages and 4, 9 and 16 keep it (with \
            orientation=auto, whichever shows the pages largest). The sheet is the first page's size unless `sheet` \
            names a paper. `order` fills rows (across) or columns (down), left to right or right to left; \
            `margin_pt`, `gap_pt` and `borders` space and frame the pages. `pages` picks and orders the pages, \
            repeats allowed (\"1,1,1,1\" for four copies of page 1). Pages are drawn, not rendered: text stays \
            selectable. Form fields and annotations are burned in; links and bookmarks follow their page. \
            output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "n-up";

    fn check(options: &NUpOptions, pages: u32, limits: &Limits) -> Result<u32, EngineError> {
        let per_sheet = options.per_sheet;
        shapes(per_sheet)?;
        impose::check_paper(options.sheet, "/sheet", options.margin_pt, 144.0)?;
        check_range(options.gap_pt, 0.0, 72.0, "/gap_pt")?;
        let chosen = impose::chosen(options.pages.as_deref(), pages, limits)?;
        Ok((chosen.len() as u32).div_ceil(per_sheet))
    }

    fn plan(options: NUpOptions, doc: &lopdf::Document, limits: &Limits) -> Result<Vec<Sheet>, EngineError> {
        let chosen = impose::chosen_sizes(doc, options.pages.as_deref(), limits)?;
        let first = chosen[0].1;
        let paper = options.sheet.map_or(first, PageSize::points);
        let grid = impose::best_grid(
            paper,
            options.orientation,
            shapes(options.per_sheet)?,
            first,
            options.margin_pt,
            options.gap_pt,
        )
        .ok_or_else(|| impose::no_room(paper))?;
        let mut sheets = Vec::new();
        for group in chosen.chunks(options.per_sheet as usize) {
            let mut sheet = Sheet { size: grid.size, ..Sheet::default() };
            for (slot, &(page, size)) in group.iter().enumerate() {
                let cell = grid.cells[options.order.cell(slot as u32, grid.shape)];
                let at = impose::fit(size, cell);
                if options.borders {
                    let placed = crate::pdf::Rect { x0: 0.0, y0: 0.0, x1: size.0, y1: size.1 };
                    sheet.marks.push_str(&impose::frame(impose::map_rect(&at, placed)));
                }
                sheet.draws.push(Draw { page, at, clip: None });
            }
            sheets.push(sheet);
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
    fn each_order_fills_the_grid_its_own_way() {
        // A 3 x 2 grid, cells numbered row by row from the top left.
        let fill = |order: Order| (0..6).map(|slot| order.cell(slot, (3, 2))).collect::<Vec<_>>();
        assert_eq!(fill(Order::Across), [0, 1, 2, 3, 4, 5]);
        assert_eq!(fill(Order::Down), [0, 3, 1, 4, 2, 5]);
        assert_eq!(fill(Order::AcrossRightToLeft), [2, 1, 0, 5, 4, 3]);
        assert_eq!(fill(Order::DownRightToLeft), [2, 5, 1, 4, 0, 3]);
    }

    #[test]
    fn two_portrait_pages_turn_the_sheet_and_four_keep_it() {
        let a4 = PageSize::A4.points();
        let two = impose::best_grid(a4, SheetOrientation::Auto, shapes(2).unwrap(), a4, 0.0, 0.0).unwrap();
        assert_eq!((two.size, two.shape), ((a4.1, a4.0), (2, 1)));
        let four = impose::best_grid(a4, SheetOrientation::Auto, shapes(4).unwrap(), a4, 0.0, 0.0).unwrap();
        assert_eq!((four.size, four.shape), (a4, (2, 2)));
        let six = impose::best_grid(a4, SheetOrientation::Auto, shapes(6).unwrap(), a4, 0.0, 0.0).unwrap();
        assert_eq!((six.size, six.shape), ((a4.1, a4.0), (3, 2)));
        // Landscape pages on a sheet forced portrait go one above the other.
        let wide = (a4.1, a4.0);
        let two = impose::best_grid(a4, SheetOrientation::Portrait, shapes(2).unwrap(), wide, 0.0, 0.0).unwrap();
        assert_eq!((two.size, two.shape), (a4, (1, 2)));
        // A margin that eats the sheet leaves no grid.
        assert!(
            impose::best_grid((300.0, 300.0), SheetOrientation::Auto, shapes(16).unwrap(), a4, 144.0, 72.0).is_none()
        );
        assert!(shapes(3).is_err());
    }
}
