//! `POST /v1/pdf/poster`: a page enlarged and cut into tiles of printer paper, to be
//! trimmed and joined into a poster.
//!
//! The poster is the page scaled (by `scale`, or to fit `poster_size`), centred on a grid
//! of tiles. Each tile prints its part inside its margin (the strip a printer cannot
//! reach); neighbours repeat `overlap_pt` of each other so they can be glued. Tiles run
//! row by row from the top left. The page is drawn, not rendered: each tile is sharp at
//! any size.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Limits, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::impose::{self, Draw, Sheet, SheetOrientation};
use crate::pdf::paper::{self, PageSize};
use crate::pdf::stamp::{check_range, num};
use crate::pdf::transform::PdfJob;
use crate::pdf::{self, Rect, SourcePdf};
use crate::price::Price;

/// The most tiles one page may be cut into.
pub const MAX_TILES: u32 = 1_000;
/// The smallest margin a tile's label fits in, in points.
const LABEL_MARGIN: f64 = 8.0;

/// Fields of `/v1/pdf/poster` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PosterOptions {
    /// The paper each tile is printed on: a paper name (`A4`, `Letter`…) or `{"width_pt": …, "height_pt": …}`; A4 when omitted.
    #[serde(default)]
    pub tile: Option<PageSize>,
    /// The finished poster's size, turned like the page; the page is scaled to fit it. Give this or `scale`.
    #[serde(default)]
    pub poster_size: Option<PageSize>,
    /// How many times wider and taller than the page the poster is: 0.1 to 20. Give this or `poster_size`.
    #[serde(default)]
    #[schemars(range(min = 0.1, max = 20))]
    pub scale: Option<f64>,
    /// `auto` turns the tiles the way fewer are needed; `portrait` or `landscape` force one.
    #[serde(default)]
    pub orientation: SheetOrientation,
    /// Border of each tile left unprinted (printers cannot reach the edge), in points: 0 to 72 (0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 72))]
    pub margin_pt: f64,
    /// How much neighbouring tiles repeat of each other, for gluing, in points: 0 to 144 (0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 144))]
    pub overlap_pt: f64,
    /// Draw a cut line around each tile's printed part and, in a margin of 8 pt or more, label the tile with its row and column (false).
    #[serde(default)]
    pub marks: bool,
    /// Pages to make posters of, each cut into its own tiles; every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
}

/// How each page was cut.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PosterReport {
    /// Tiles in the result (its pages).
    pub tiles: u32,
    /// The tiles' paper as printed, in points.
    pub tile_width_pt: f64,
    /// The tiles' paper as printed, in points.
    pub tile_height_pt: f64,
    /// Each page made into a poster.
    pub posters: Vec<PosterPage>,
}

/// One page made into a poster.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PosterPage {
    /// 1-based page number.
    pub page: u32,
    /// How many times the page was enlarged.
    pub scale: f64,
    /// The poster's width, in points.
    pub width_pt: f64,
    /// The poster's height, in points.
    pub height_pt: f64,
    /// Tiles across.
    pub columns: u32,
    /// Tiles down.
    pub rows: u32,
    /// Its first tile's page in the result (1-based).
    pub first_tile: u32,
}

/// A checked call.
pub struct PosterCall {
    source: SourcePdf,
    sheets: Vec<Sheet>,
    report: PosterReport,
    output: OutputMode,
}

/// The route.
pub struct PosterRoute;

/// How a page is cut: the tile size, the grid, and the poster's scale.
#[derive(Debug, PartialEq)]
struct Cut {
    tile: (f64, f64),
    columns: u32,
    rows: u32,
}

/// Tiles of `tile` (printing inside `margin`, neighbours sharing `overlap`) covering a
/// poster of `poster`.
fn cut(tile: (f64, f64), poster: (f64, f64), margin: f64, overlap: f64) -> Option<Cut> {
    let printed = (tile.0 - 2.0 * margin, tile.1 - 2.0 * margin);
    if printed.0 - overlap < 1.0 || printed.1 - overlap < 1.0 {
        return None;
    }
    let count = |length: f64, printed: f64| -> u32 {
        if length <= printed + 1e-6 {
            1
        } else {
            // Each tile after the first adds its printed part less the overlap.
            (((length - overlap) / (printed - overlap)) - 1e-6).ceil().clamp(1.0, 1e6) as u32
        }
    };
    Some(Cut { tile, columns: count(poster.0, printed.0), rows: count(poster.1, printed.1) })
}

impl Route for PosterRoute {
    type Input = PdfJob<PosterOptions>;
    type Prepared = PosterCall;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/poster",
        operation: "make_pdf_poster",
        family: Family::Docs,
        summary: "Enlarge a page into a poster printed on several sheets",
        description: "Enlarges each chosen page (by `scale`, or to fit `poster_size` such as A1) and cuts it into tiles \
            of printer paper (`tile`, A4 by default, turned the way fewer are needed), to be trimmed and joined. Each \
            tile prints inside `margin_pt`, the border a printer cannot reach; neighbours repeat `overlap_pt` of each \
            other for gluing; `marks` draws cut lines and labels each tile with its row and column. Tiles run row by \
            row from the top left, page after page. The page is drawn, not rendered, so it stays sharp at any size. \
            A report gives each poster's size, scale and grid (Paperchain-Report header for output=file, `report` \
            field for base64 and url). At most 1,000 tiles a page.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: PdfJob<PosterOptions>, ctx: &Context) -> Result<PosterCall, EngineError> {
        let options = input.options;
        check(&options)?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let limits = ctx.limits;
        blocking(move || {
            let (sheets, report) = plan(&options, &source.doc, &limits)?;
            Ok(PosterCall { source, sheets, report, output: input.output })
        })
        .await
    }

    fn quote(call: &PosterCall) -> Price {
        page_edit_price(call.source.page_count.max(call.report.tiles))
    }

    async fn run(call: PosterCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let limits = ctx.limits;
        blocking(move || {
            let PosterCall { source, sheets, report, output } = call;
            let mut doc = impose::impose(source.doc, sheets, &limits)?;
            let bytes = pdf::save(&mut doc)?;
            let report = serde_json::to_value(&report).map_err(|e| EngineError::internal(format!("report: {e}")))?;
            let name = derived_name(&source.filename, "poster", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output).with_report(report)))
        })
        .await
    }
}

/// Checks what needs no document.
fn check(options: &PosterOptions) -> Result<(), EngineError> {
    impose::check_paper(options.tile, "/tile", options.margin_pt, 72.0)?;
    if let Some(size) = options.poster_size {
        size.check("/poster_size")?;
    }
    match (options.scale, options.poster_size) {
        (Some(_), Some(_)) => {
            return Err(EngineError::invalid_with(
                "inconsistent_fields",
                "/scale",
                "/scale: give scale or poster_size, not both",
            ));
        }
        (None, None) => {
            return Err(EngineError::invalid_with(
                "inconsistent_fields",
                "/poster_size",
                "/poster_size: give the poster's size (poster_size, e.g. \"A1\") or how much to enlarge the page (scale)",
            ));
        }
        (Some(scale), None) => {
            check_range(scale, 0.1, 20.0, "/scale")?;
        }
        (None, Some(_)) => {}
    }
    check_range(options.overlap_pt, 0.0, 144.0, "/overlap_pt")?;
    Ok(())
}

/// The tiles of every chosen page, and the report.
fn plan(
    options: &PosterOptions,
    doc: &lopdf::Document,
    limits: &Limits,
) -> Result<(Vec<Sheet>, PosterReport), EngineError> {
    let max_pages = limits.max_pages;
    let chosen = impose::chosen_sizes(doc, options.pages.as_deref(), limits)?;
    let paper = options.tile.unwrap_or(PageSize::A4).points();
    let (margin, overlap) = (options.margin_pt, options.overlap_pt);
    let mut sheets = Vec::new();
    let mut posters = Vec::new();
    let mut tile_size = paper;
    for &(number, page) in &chosen {
        let scale = match (options.scale, options.poster_size) {
            (Some(scale), _) => scale,
            (None, Some(size)) => {
                let target = paper::turned(size.points(), page.0 > page.1);
                (target.0 / page.0).min(target.1 / page.1)
            }
            (None, None) => return Err(EngineError::internal("poster without a size")),
        };
        let poster = (page.0 * scale, page.1 * scale);
        let turns = match options.orientation {
            SheetOrientation::Auto => vec![paper::turned(paper, false), paper::turned(paper, true)],
            SheetOrientation::Portrait => vec![paper::turned(paper, false)],
            SheetOrientation::Landscape => vec![paper::turned(paper, true)],
        };
        let best = turns
            .into_iter()
            .filter_map(|tile| cut(tile, poster, margin, overlap))
            .min_by_key(|c| c.columns as u64 * c.rows as u64)
            .ok_or_else(|| {
                EngineError::invalid_with(
                    "inconsistent_fields",
                    "/overlap_pt",
                    format!(
                        "/overlap_pt: the margins and the overlap leave nothing of a {} x {} pt tile to print on",
                        num(paper.0),
                        num(paper.1)
                    ),
                )
            })?;
        let tiles = best.columns as u64 * best.rows as u64;
        if tiles > MAX_TILES as u64 {
            return Err(EngineError::too_large(
                "too_many_pages",
                Some("/scale".into()),
                format!(
                    "/scale: page {number} would take {} x {} = {tiles} tiles; at most {MAX_TILES} a page (enlarge less or use larger tiles)",
                    best.columns, best.rows
                ),
            ));
        }
        if sheets.len() as u64 + tiles > max_pages as u64 {
            return Err(EngineError::too_large(
                "too_many_pages",
                Some("/pages".into()),
                format!("/pages: the posters would take more than {max_pages} tiles in all; make fewer at a time"),
            ));
        }
        tile_size = best.tile;
        posters.push(PosterPage {
            page: number,
            scale: (scale * 10_000.0).round() / 10_000.0,
            width_pt: (poster.0 * 100.0).round() / 100.0,
            height_pt: (poster.1 * 100.0).round() / 100.0,
            columns: best.columns,
            rows: best.rows,
            first_tile: sheets.len() as u32 + 1,
        });
        sheets.extend(tiles_of(number, page, scale, &best, margin, overlap, options.marks));
    }
    let report =
        PosterReport { tiles: sheets.len() as u32, tile_width_pt: tile_size.0, tile_height_pt: tile_size.1, posters };
    Ok((sheets, report))
}

/// The tiles of one page, row by row from the top left.
fn tiles_of(
    number: u32,
    page: (f64, f64),
    scale: f64,
    cut: &Cut,
    margin: f64,
    overlap: f64,
    marks: bool,
) -> Vec<Sheet> {
    let printed = (cut.tile.0 - 2.0 * margin, cut.tile.1 - 2.0 * margin);
    let step = (printed.0 - overlap, printed.1 - overlap);
    let grid = (cut.columns as f64 * step.0 + overlap, cut.rows as f64 * step.1 + overlap);
    // The poster is centred on the grid.
    let offset = ((grid.0 - page.0 * scale) / 2.0, (grid.1 - page.1 * scale) / 2.0);
    let clip = Rect { x0: margin, y0: margin, x1: margin + printed.0, y1: margin + printed.1 };
    let mut sheets = Vec::with_capacity((cut.columns * cut.rows) as usize);
    for row in 0..cut.rows {
        for column in 0..cut.columns {
            // The part of the grid this tile prints starts at (column·step, its row's bottom).
            let x = column as f64 * step.0;
            let y = grid.1 - row as f64 * step.1 - printed.1;
            let at = [scale, 0.0, 0.0, scale, margin + offset.0 - x, margin + offset.1 - y];
            let mut sheet =
                Sheet { size: cut.tile, draws: vec![Draw { page: number, at, clip: Some(clip) }], ..Sheet::default() };
            if marks {
                sheet.marks.push_str(&impose::frame(clip));
                if margin >= LABEL_MARGIN {
                    let text = format!(
                        "Page {number}: row {} of {}, column {} of {}",
                        row + 1,
                        cut.rows,
                        column + 1,
                        cut.columns
                    );
                    let size = (margin * 0.6).min(8.0);
                    sheet.marks.push_str(&impose::label(&text, margin, (margin - size) / 2.0, size));
                }
            }
            sheets.push(sheet);
        }
    }
    sheets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_cover_the_poster_with_their_overlap() {
        let a4 = PageSize::A4.points();
        // An A4 page twice as large is an A2: four A4 tiles, no margin.
        let c = cut(a4, (a4.0 * 2.0, a4.1 * 2.0), 0.0, 0.0).unwrap();
        assert_eq!((c.columns, c.rows), (2, 2));
        // With 20 pt of overlap, two tiles no longer reach across.
        let c = cut(a4, (a4.0 * 2.0, a4.1 * 2.0), 0.0, 20.0).unwrap();
        assert_eq!((c.columns, c.rows), (3, 3));
        // A page smaller than a tile is one tile.
        assert_eq!(cut(a4, (100.0, 100.0), 10.0, 0.0).unwrap().columns, 1);
        // A margin and overlap that eat the tile leave nothing.
        assert!(cut(a4, (1000.0, 1000.0), 72.0, 451.0).is_none());
        assert!(cut(a4, (1000.0, 1000.0), 72.0, 449.0).is_some());
    }

    #[test]
    fn every_part_of_the_poster_is_printed_once_at_least() {
        // Walk across a poster 3 tiles wide: each point of it falls in some tile's print.
        let a4 = PageSize::A4.points();
        let page = (a4.0, a4.1);
        let scale = 2.5;
        let c = cut(a4, (page.0 * scale, page.1 * scale), 18.0, 10.0).unwrap();
        let tiles = tiles_of(1, page, scale, &c, 18.0, 10.0, false);
        assert_eq!(tiles.len() as u32, c.columns * c.rows);
        for i in 0..=100 {
            for j in 0..=100 {
                let (u, v) = (page.0 * i as f64 / 100.0, page.1 * j as f64 / 100.0);
                let shown = tiles.iter().any(|t| {
                    let d = &t.draws[0];
                    let (x, y) = impose::apply(&d.at, u, v);
                    let clip = d.clip.unwrap();
                    x >= clip.x0 - 1e-6 && x <= clip.x1 + 1e-6 && y >= clip.y0 - 1e-6 && y <= clip.y1 + 1e-6
                });
                assert!(shown, "({u}, {v}) is on no tile");
            }
        }
    }
}
