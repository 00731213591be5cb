//! Tables on a PDF page: ruled ones from the grid their rules draw, unruled ones from the
//! alignment of their text.
//!
//! **Ruled**: the page's horizontal and vertical rules ([`PageLayout::rules`]) are merged
//! where they continue one another, and rules that cross or touch are gathered into grids.
//! A grid of at least two columns and two rows is a table: its column and row lines cut
//! the cells, a missing piece of rule between two cells merges them, and each cell takes
//! the segments whose centre falls in it (segments are cut at vertical rules beforehand,
//! [`super::segments`]).
//!
//! **Unruled**: runs of lines split into the same columns by gutters no line of the run
//! crosses ([`find_unruled`]).

use super::{Segment, bands_by, place};
use crate::pdf::pdfium::{Area, PageLayout};

/// Fewest rows a table without rules must have (three for two columns, which prose
/// beside a margin note could also make).
const MIN_TABLE_ROWS: usize = 2;
/// How far apart, in points, two rules may be and still be one line (a rule drawn as a
/// thin filled box has two edges), or a rule may stop short of the one it meets.
const RULE_TOLERANCE: f32 = 2.0;
/// Column or row lines closer than this (points) are one line: no text fits between.
const MIN_CELL: f32 = 4.0;
/// Most rules examined on a page for grids.
const MAX_GRID_RULES: usize = 20_000;

/// A table: its cells, and how it was found. Its page and box are its segment's.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Rows of cell texts, plain (not escaped); a merged cell's text is in every cell it
    /// covers.
    pub rows: Vec<Vec<String>>,
    /// The merged cells of a ruled table.
    pub merged: Vec<Merge>,
    /// Drawn with rules (a grid) rather than found by alignment.
    pub ruled: bool,
}

/// A cell covering more than one row or column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Merge {
    /// 0-based row of its top-left corner in `rows`.
    pub row: usize,
    /// 0-based column of its top-left corner.
    pub column: usize,
    /// Rows it covers.
    pub rows: usize,
    /// Columns it covers.
    pub columns: usize,
}

/// A table of a page, in reading order.
#[derive(Clone, Debug)]
pub struct PageTable {
    /// 1-based page number.
    pub page: u32,
    /// Left, top, right, bottom, in points from the page's top-left corner.
    pub bbox: [f32; 4],
    /// The table.
    pub table: Table,
}

/// Every table of a page, ruled and unruled, in reading order (columns of the page one
/// after the other).
pub fn page_tables(layout: &PageLayout) -> Vec<PageTable> {
    let segments = super::segments(layout);
    let rtl = super::reads_right_to_left(&segments);
    super::reading_order(segments, layout.width, rtl)
        .into_iter()
        .filter_map(|s| s.table.map(|t| PageTable { page: s.page, bbox: [s.x0, s.y0, s.x1, s.y1], table: *t }))
        .collect()
}

/// One straight rule after merging: `at` is its y (horizontal) or x (vertical), it runs
/// from `from` to `to` along the other axis.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rule {
    at: f32,
    from: f32,
    to: f32,
}

/// The page's rules merged: horizontal ones, then vertical ones.
pub(crate) fn merged_rules(layout: &PageLayout) -> (Vec<Rule>, Vec<Rule>) {
    let rules = &layout.rules[..layout.rules.len().min(MAX_GRID_RULES)];
    let horizontal: Vec<Rule> =
        rules.iter().filter(|r| r.y1 - r.y0 < 0.5).map(|r| Rule { at: r.y0, from: r.x0, to: r.x1 }).collect();
    let vertical: Vec<Rule> =
        rules.iter().filter(|r| r.y1 - r.y0 >= 0.5).map(|r| Rule { at: r.x0, from: r.y0, to: r.y1 }).collect();
    (merge(horizontal), merge(vertical))
}

/// Rules on (nearly) one line that touch or overlap become one.
fn merge(mut rules: Vec<Rule>) -> Vec<Rule> {
    rules.sort_by(|a, b| a.at.total_cmp(&b.at));
    // Lines: runs of rules whose positions step by at most the tolerance.
    let mut levels: Vec<Vec<Rule>> = Vec::new();
    for rule in rules {
        match levels.last_mut() {
            Some(level) if rule.at - level.last().map_or(f32::MIN, |r| r.at) <= RULE_TOLERANCE / 2.0 => {
                level.push(rule)
            }
            _ => levels.push(vec![rule]),
        }
    }
    let mut out = Vec::new();
    for mut level in levels {
        let at = level.iter().map(|r| r.at).sum::<f32>() / level.len() as f32;
        level.sort_by(|a, b| a.from.total_cmp(&b.from));
        let mut current: Option<Rule> = None;
        for r in level {
            current = match current {
                Some(mut c) if r.from <= c.to + RULE_TOLERANCE => {
                    c.to = c.to.max(r.to);
                    Some(c)
                }
                Some(c) => {
                    out.push(c);
                    Some(Rule { at, ..r })
                }
                None => Some(Rule { at, ..r }),
            };
        }
        out.extend(current);
    }
    out
}

/// The vertical rules long enough to part two characters, as [`Area`]s, sorted by x.
pub(crate) fn cuts(vertical: &[Rule]) -> Vec<Area> {
    let mut cuts: Vec<Area> = vertical
        .iter()
        .filter(|r| r.to - r.from >= MIN_CELL)
        .map(|r| Area { x0: r.at, y0: r.from, x1: r.at, y1: r.to })
        .collect();
    cuts.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    cuts
}

/// A grid of rules: its column and row lines and which pieces of them are drawn.
#[derive(Clone, Debug)]
pub(crate) struct Grid {
    xs: Vec<f32>,
    ys: Vec<f32>,
    /// `open_right[r][c]`: no rule between cell (r, c) and (r, c + 1).
    open_right: Vec<Vec<bool>>,
    /// `open_below[r][c]`: no rule between cell (r, c) and (r + 1, c).
    open_below: Vec<Vec<bool>>,
}

impl Grid {
    fn contains(&self, s: &Segment) -> bool {
        let (cx, cy) = ((s.x0 + s.x1) / 2.0, (s.y0 + s.y1) / 2.0);
        cx > self.xs[0] && cx < self.xs[self.xs.len() - 1] && cy > self.ys[0] && cy < self.ys[self.ys.len() - 1]
    }

    fn cell_of(&self, s: &Segment) -> (usize, usize) {
        let (cx, cy) = ((s.x0 + s.x1) / 2.0, (s.y0 + s.y1) / 2.0);
        let find = |lines: &[f32], v: f32| lines.partition_point(|&l| l < v).clamp(1, lines.len() - 1) - 1;
        (find(&self.ys, cy), find(&self.xs, cx))
    }
}

/// The grids the page's rules draw: rules that cross or touch, gathered, with at least two
/// columns and two rows between them.
pub(crate) fn grids(horizontal: &[Rule], vertical: &[Rule]) -> Vec<Grid> {
    let (nh, nv) = (horizontal.len(), vertical.len());
    let mut parent: Vec<usize> = (0..nh + nv).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut by_x: Vec<usize> = (0..nv).collect();
    by_x.sort_by(|&a, &b| vertical[a].at.total_cmp(&vertical[b].at));
    let xs_sorted: Vec<f32> = by_x.iter().map(|&i| vertical[i].at).collect();
    for (h, rule) in horizontal.iter().enumerate() {
        let first = xs_sorted.partition_point(|&x| x < rule.from - RULE_TOLERANCE);
        for &v in by_x[first..].iter().take_while(|&&v| vertical[v].at <= rule.to + RULE_TOLERANCE) {
            let vr = &vertical[v];
            if rule.at >= vr.from - RULE_TOLERANCE && rule.at <= vr.to + RULE_TOLERANCE {
                let (a, b) = (root(&mut parent, h), root(&mut parent, nh + v));
                parent[a] = b;
            }
        }
    }
    let mut groups: std::collections::BTreeMap<usize, (Vec<Rule>, Vec<Rule>)> = Default::default();
    for i in 0..nh + nv {
        let r = root(&mut parent, i);
        let group = groups.entry(r).or_default();
        if i < nh {
            group.0.push(horizontal[i]);
        } else {
            group.1.push(vertical[i - nh]);
        }
    }
    groups.into_values().filter_map(|(h, v)| grid_of(&h, &v)).collect()
}

/// Positions closer than [`MIN_CELL`] become one (their mean).
fn lines_of(mut positions: Vec<f32>) -> Vec<f32> {
    positions.sort_by(f32::total_cmp);
    let mut groups: Vec<Vec<f32>> = Vec::new();
    for p in positions {
        match groups.last_mut() {
            Some(g) if p - g[0] < MIN_CELL => g.push(p),
            _ => groups.push(vec![p]),
        }
    }
    groups.into_iter().map(|g| g.iter().sum::<f32>() / g.len() as f32).collect()
}

fn grid_of(horizontal: &[Rule], vertical: &[Rule]) -> Option<Grid> {
    let xs = lines_of(vertical.iter().map(|r| r.at).collect());
    let ys = lines_of(horizontal.iter().map(|r| r.at).collect());
    if xs.len() < 3 || ys.len() < 3 {
        return None;
    }
    let (rows, columns) = (ys.len() - 1, xs.len() - 1);
    let drawn = |rules: &[Rule], at: f32, along: f32| {
        rules.iter().any(|r| (r.at - at).abs() <= MIN_CELL && along >= r.from - 0.5 && along <= r.to + 0.5)
    };
    let open_right = (0..rows)
        .map(|r| {
            let mid = (ys[r] + ys[r + 1]) / 2.0;
            (0..columns).map(|c| c + 1 == columns || !drawn(vertical, xs[c + 1], mid)).collect()
        })
        .collect();
    let open_below = (0..rows)
        .map(|r| {
            (0..columns)
                .map(|c| {
                    let mid = (xs[c] + xs[c + 1]) / 2.0;
                    r + 1 == rows || !drawn(horizontal, ys[r + 1], mid)
                })
                .collect()
        })
        .collect();
    Some(Grid { xs, ys, open_right, open_below })
}

/// Fills the grids with the segments inside them and puts one table segment in place of
/// each grid's segments. A grid with no text is not a table (a frame, a drawing).
pub(crate) fn with_ruled(segments: Vec<Segment>, grids: &[Grid], rtl: bool) -> Vec<Segment> {
    if grids.is_empty() {
        return segments;
    }
    let mut members: Vec<Vec<Segment>> = (0..grids.len()).map(|_| Vec::new()).collect();
    let mut out = Vec::with_capacity(segments.len());
    for s in segments {
        match grids.iter().position(|g| !s.image && g.contains(&s)) {
            Some(g) => members[g].push(s),
            None => out.push(s),
        }
    }
    for (grid, inside) in grids.iter().zip(members) {
        if inside.is_empty() {
            continue;
        }
        let page = inside[0].page;
        let table = fill(grid, &inside, rtl);
        if table.rows.len() < 2 || table.rows.iter().all(|r| r.len() < 2) {
            out.extend(inside);
            continue;
        }
        out.push(Segment {
            page,
            x0: grid.xs[0],
            y0: grid.ys[0],
            x1: grid.xs[grid.xs.len() - 1],
            y1: grid.ys[grid.ys.len() - 1],
            size: 0.0,
            font: 0,
            chars: Vec::new(),
            image: false,
            table: Some(Box::new(table)),
        });
    }
    out
}

/// The cells of a grid: cells with no rule between them are one, and each cell's
/// segments are read top to bottom (right to left on a right-to-left page).
fn fill(grid: &Grid, inside: &[Segment], rtl: bool) -> Table {
    let grid = &refine(grid, inside);
    let (rows, columns) = (grid.ys.len() - 1, grid.xs.len() - 1);
    // Each grid cell's merged cell: flood over open sides.
    let mut owner = vec![vec![usize::MAX; columns]; rows];
    let mut spans: Vec<(usize, usize, usize, usize)> = Vec::new();
    for r in 0..rows {
        for c in 0..columns {
            if owner[r][c] != usize::MAX {
                continue;
            }
            let id = spans.len();
            let (mut r1, mut c1) = (r, c);
            let mut stack = vec![(r, c)];
            owner[r][c] = id;
            while let Some((y, x)) = stack.pop() {
                r1 = r1.max(y);
                c1 = c1.max(x);
                let mut visit = |y: usize, x: usize, stack: &mut Vec<(usize, usize)>| {
                    if owner[y][x] == usize::MAX {
                        owner[y][x] = id;
                        stack.push((y, x));
                    }
                };
                if grid.open_right[y][x] && x + 1 < columns {
                    visit(y, x + 1, &mut stack);
                }
                if x > 0 && grid.open_right[y][x - 1] {
                    visit(y, x - 1, &mut stack);
                }
                if grid.open_below[y][x] && y + 1 < rows {
                    visit(y + 1, x, &mut stack);
                }
                if y > 0 && grid.open_below[y - 1][x] {
                    visit(y - 1, x, &mut stack);
                }
            }
            spans.push((r, c, r1, c1));
        }
    }
    let mut texts: Vec<Vec<&Segment>> = vec![Vec::new(); spans.len()];
    for s in inside {
        let (r, c) = grid.cell_of(s);
        texts[owner[r][c]].push(s);
    }
    let texts: Vec<String> = texts
        .into_iter()
        .map(|mut cell| {
            cell.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
            let mut lines = bands_by(cell, |s| place(s));
            if rtl {
                for (_, _, band) in &mut lines {
                    band.reverse();
                }
            }
            let words: Vec<String> = lines.into_iter().flat_map(|(_, _, band)| band).map(|s| s.text()).collect();
            join_lines(&words)
        })
        .collect();
    // Rows and columns no cell's text starts in, and that hold no text, are slivers.
    let used_row = |r: usize| (0..columns).any(|c| !texts[owner[r][c]].is_empty());
    let used_column = |c: usize| (0..rows).any(|r| !texts[owner[r][c]].is_empty());
    let keep_rows: Vec<usize> = (0..rows).filter(|&r| used_row(r)).collect();
    let keep_columns: Vec<usize> = (0..columns).filter(|&c| used_column(c)).collect();
    let out_rows: Vec<Vec<String>> =
        keep_rows.iter().map(|&r| keep_columns.iter().map(|&c| texts[owner[r][c]].clone()).collect()).collect();
    let mut merged = Vec::new();
    for (id, &(r0, c0, r1, c1)) in spans.iter().enumerate() {
        let rows_in = keep_rows.iter().filter(|&&r| r >= r0 && r <= r1).count();
        let columns_in = keep_columns.iter().filter(|&&c| c >= c0 && c <= c1).count();
        if (rows_in > 1 || columns_in > 1) && !texts[id].is_empty() {
            let row = keep_rows.iter().position(|&r| r >= r0).unwrap_or(0);
            let column = keep_columns.iter().position(|&c| c >= c0).unwrap_or(0);
            merged.push(Merge { row, column, rows: rows_in, columns: columns_in });
        }
    }
    merged.sort_by_key(|m| (m.row, m.column));
    Table { rows: out_rows, merged, ruled: true }
}

/// A grid as its text reads: a grid row holding several lines of text in several columns
/// (a body whose rows are not ruled) is cut between its lines, a line whose first column
/// is empty staying with the line above (a wrapped cell); and where a missing rule would
/// merge two cells that each hold their own text, with no text across the line between
/// them, the cells stay apart (a partly ruled table).
fn refine(grid: &Grid, inside: &[Segment]) -> Grid {
    let columns = grid.xs.len() - 1;
    let column_of = |s: &Segment| grid.cell_of(s).1;
    let mut ys = vec![grid.ys[0]];
    let mut open_right: Vec<Vec<bool>> = Vec::new();
    let mut open_below: Vec<Vec<bool>> = Vec::new();
    for r in 0..grid.ys.len() - 1 {
        let mut in_row: Vec<&Segment> = inside.iter().filter(|s| grid.cell_of(s).0 == r).collect();
        in_row.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
        let bands = bands_by(in_row, |s| place(s));
        let multi_line_columns = (0..columns)
            .filter(|&c| bands.iter().filter(|(_, _, band)| band.iter().any(|s| column_of(s) == c)).count() >= 2)
            .count();
        let first_used = bands.iter().any(|(_, _, band)| band.iter().any(|s| column_of(s) == 0));
        let mut cuts = Vec::new();
        if bands.len() >= 3 && multi_line_columns >= 2 {
            for pair in bands.windows(2) {
                let next_starts_row = !first_used || pair[1].2.iter().any(|s| column_of(s) == 0);
                if next_starts_row && pair[1].0 > pair[0].1 - 1.0 {
                    cuts.push((pair[0].1 + pair[1].0) / 2.0);
                }
            }
        }
        for (i, &y) in cuts.iter().chain(std::iter::once(&grid.ys[r + 1])).enumerate() {
            ys.push(y);
            open_right.push(grid.open_right[r].clone());
            open_below.push(if i < cuts.len() { vec![false; columns] } else { grid.open_below[r].clone() });
        }
    }
    let mut refined = Grid { xs: grid.xs.clone(), ys, open_right, open_below };
    for r in 0..refined.ys.len() - 1 {
        let in_row: Vec<&Segment> = inside.iter().filter(|s| refined.cell_of(s).0 == r).collect();
        for c in 0..columns.saturating_sub(1) {
            if !refined.open_right[r][c] {
                continue;
            }
            let x = refined.xs[c + 1];
            let crossed = in_row.iter().any(|s| s.x0 < x - 1.0 && s.x1 > x + 1.0);
            let left = in_row.iter().any(|s| refined.cell_of(s).1 == c);
            let right = in_row.iter().any(|s| refined.cell_of(s).1 == c + 1);
            if !crossed && left && right {
                refined.open_right[r][c] = false;
            }
        }
    }
    refined
}

/// The lines of a cell as one text: a word hyphenated at a line's end is joined.
fn join_lines(lines: &[String]) -> String {
    let mut out = String::new();
    for line in lines.iter().map(|l| l.trim()).filter(|l| !l.is_empty()) {
        if out.is_empty() {
            out.push_str(line);
        } else if out.ends_with('-')
            && out.len() > 1
            && out[..out.len() - 1].ends_with(|c: char| c.is_alphabetic())
            && line.starts_with(|c: char| c.is_lowercase())
        {
            out.pop();
            out.push_str(line);
        } else {
            out.push(' ');
            out.push_str(line);
        }
    }
    out
}

/// A table found among a page's segments by alignment: its segments (by index) and cells.
#[derive(Debug)]
struct FoundTable {
    members: Vec<usize>,
    /// Rows of cell texts (plain, not escaped).
    rows: Vec<Vec<String>>,
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
}

/// Replaces the segments of every unruled table among them by one table segment.
pub(crate) fn with_unruled(segments: Vec<Segment>) -> Vec<Segment> {
    let tables = find_unruled(&segments);
    if tables.is_empty() {
        return segments;
    }
    let mut taken = vec![false; segments.len()];
    let mut out = Vec::with_capacity(segments.len());
    let page = segments.first().map_or(0, |s| s.page);
    for table in tables {
        for &i in &table.members {
            taken[i] = true;
        }
        out.push(Segment {
            page,
            x0: table.x0,
            y0: table.y0,
            x1: table.x1,
            y1: table.y1,
            size: 0.0,
            font: 0,
            chars: Vec::new(),
            image: false,
            table: Some(Box::new(Table { rows: table.rows, merged: Vec::new(), ruled: false })),
        });
    }
    out.extend(segments.into_iter().zip(taken).filter(|(_, t)| !t).map(|(s, _)| s));
    out
}

/// Tables drawn without rules, found by alignment: runs of lines split into the same
/// columns by gutters no line of the run crosses. Page columns of prose (two wide columns
/// of long lines) are not tables; nor are bullets set apart from their text.
fn find_unruled(segments: &[Segment]) -> Vec<FoundTable> {
    let mut order: Vec<usize> =
        (0..segments.len()).filter(|&i| !segments[i].image && segments[i].table.is_none()).collect();
    order.sort_by(|&a, &b| segments[a].y0.total_cmp(&segments[b].y0).then(segments[a].x0.total_cmp(&segments[b].x0)));
    let bands = bands_by(order, |&i| place(&segments[i]));
    let gutters_of = |band: &[usize]| -> Vec<(f32, f32)> {
        band.windows(2)
            .filter_map(|w| {
                let (a, b) = (&segments[w[0]], &segments[w[1]]);
                (b.x0 - a.x1 >= 3.0).then_some((a.x1, b.x0))
            })
            .collect()
    };
    // A gutter narrows to what a row leaves free of it (a wider cell below a narrower one),
    // and is gone when nothing 3 points wide is left.
    let narrowed = |band: &[usize], gutter: (f32, f32)| -> Option<(f32, f32)> {
        let mut free = vec![gutter];
        for &i in band {
            let (x0, x1) = (segments[i].x0, segments[i].x1);
            free = free
                .into_iter()
                .flat_map(|(a, b)| if x1 <= a || x0 >= b { vec![(a, b)] } else { vec![(a, x0.max(a)), (x1.min(b), b)] })
                .filter(|(a, b)| b - a >= 3.0)
                .collect();
        }
        free.into_iter().max_by(|p, q| (p.1 - p.0).total_cmp(&(q.1 - q.0)))
    };
    let mut tables = Vec::new();
    let mut i = 0;
    while i < bands.len() {
        if bands[i].2.len() < 2 {
            i += 1;
            continue;
        }
        let mut gutters = gutters_of(&bands[i].2);
        let line_height = bands[i].1 - bands[i].0;
        let (mut left, mut right) = extent_of(segments, &bands[i].2);
        let mut end = i + 1;
        while end < bands.len() {
            let (top, bottom, band) = &bands[end];
            let gap = top - bands[end - 1].1;
            if gap > line_height.max(bottom - top) * 2.5 {
                break;
            }
            let (l, r) = extent_of(segments, band);
            let size = band.iter().map(|&k| segments[k].size).fold(1.0, f32::max);
            if l < left - size * 3.0 || r > right + size * 3.0 {
                break;
            }
            let kept: Vec<(f32, f32)> = gutters.iter().filter_map(|g| narrowed(band, *g)).collect();
            // Every gutter of a row with several cells must survive, or the columns changed;
            // a line of one cell (a wrapped cell) must fit between two gutters.
            let lost = gutters.len() - kept.len();
            if kept.is_empty()
                || (band.len() >= 2 && kept.len() < gutters.len().min(band.len() - 1))
                || (band.len() == 1 && lost > 0)
            {
                break;
            }
            gutters = kept;
            left = left.min(l);
            right = right.max(r);
            end += 1;
        }
        let run = &bands[i..end];
        let multi = run.iter().filter(|b| b.2.len() >= 2).count();
        let columns = gutters.len() + 1;
        let members: Vec<usize> = run.iter().flat_map(|b| b.2.iter().copied()).collect();
        gutters.sort_by(|a, b| a.0.total_cmp(&b.0));
        let prose = is_prose(segments, &members, &gutters) || columns == 1;
        let first_column_markers = run.iter().all(|b| {
            let first = segments[b.2[0]].text();
            let t = first.trim();
            t.chars().count() <= 2 && !t.chars().any(char::is_alphanumeric)
        });
        let enough_rows = if columns == 2 { multi >= 3 } else { multi >= MIN_TABLE_ROWS };
        if enough_rows && !prose && !first_column_markers {
            let rows = table_rows(segments, run, &gutters);
            let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
            for &k in &members {
                x0 = x0.min(segments[k].x0);
                y0 = y0.min(segments[k].y0);
                x1 = x1.max(segments[k].x1);
                y1 = y1.max(segments[k].y1);
            }
            tables.push(FoundTable { members, rows, x0, y0, x1, y1 });
            i = end;
        } else {
            i += 1;
        }
    }
    tables
}

/// Whether a column of the run is running text: most of its lines fill its width and
/// hold several words (page columns of prose look like a two-column table otherwise).
pub(crate) fn is_prose(segments: &[Segment], members: &[usize], gutters: &[(f32, f32)]) -> bool {
    let columns = gutters.len() + 1;
    let column_of = |s: &Segment| {
        let center = (s.x0 + s.x1) / 2.0;
        gutters.iter().take_while(|g| center > (g.0 + g.1) / 2.0).count()
    };
    (0..columns).any(|c| {
        let cells: Vec<&Segment> = members.iter().map(|&i| &segments[i]).filter(|s| column_of(s) == c).collect();
        if cells.len() < 3 {
            return false;
        }
        let left = cells.iter().map(|s| s.x0).fold(f32::MAX, f32::min);
        let right = cells.iter().map(|s| s.x1).fold(f32::MIN, f32::max);
        let full = cells.iter().filter(|s| s.x1 - s.x0 >= (right - left) * 0.85).count();
        let words =
            cells.iter().map(|s| s.text().split_whitespace().count()).sum::<usize>() as f32 / cells.len() as f32;
        full as f32 >= cells.len() as f32 * 0.6 && words >= 5.0
    })
}

fn extent_of(segments: &[Segment], band: &[usize]) -> (f32, f32) {
    band.iter().fold((f32::MAX, f32::MIN), |(l, r), &i| (l.min(segments[i].x0), r.max(segments[i].x1)))
}

/// The cells of a run of bands cut by `gutters`: a band whose first cell is empty while
/// the row above has one continues that row (a cell's text wrapped onto a second line).
fn table_rows(segments: &[Segment], run: &[(f32, f32, Vec<usize>)], gutters: &[(f32, f32)]) -> Vec<Vec<String>> {
    let columns = gutters.len() + 1;
    let column_of = |s: &Segment| {
        let center = (s.x0 + s.x1) / 2.0;
        gutters.iter().take_while(|g| center > (g.0 + g.1) / 2.0).count()
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (_, _, band) in run {
        let mut cells = vec![String::new(); columns];
        for &i in band {
            let s = &segments[i];
            let cell = &mut cells[column_of(s).min(columns - 1)];
            if !cell.is_empty() {
                cell.push(' ');
            }
            cell.push_str(s.text().trim());
        }
        let continues = cells[0].is_empty() && rows.last().is_some_and(|row: &Vec<String>| !row[0].is_empty());
        match rows.last_mut() {
            Some(last) if continues => {
                for (into, more) in last.iter_mut().zip(cells) {
                    if !more.is_empty() {
                        if !into.is_empty() {
                            into.push(' ');
                        }
                        into.push_str(&more);
                    }
                }
            }
            _ => rows.push(cells),
        }
    }
    rows
}
