//! The walk of the parsed page into Markdown blocks, in document order and without
//! recursion: what a reader is not shown left out, block elements splitting paragraphs,
//! inline marks and links, nested lists with their levels and numbers, tables as pipe
//! tables with spanning cells repeated (within [`MAX_SPAN_CELLS`] and
//! [`MAX_REPEATED_BYTES`]), preformatted text as fenced code. The conventions are listed in
//! the module above.
//!
//! What this module must not do: parse HTML or recurse over the tree.

use html5ever::Attribute;

use super::tree::{Data, Id, Space, Tree, attr, clean, listed};
use crate::markdown::{Block, Document, Inline, Style, one_line};

/// Widest a cell may span (the HTML limit for `colspan`).
pub(super) const MAX_COLSPAN: usize = 1000;
/// Tallest a cell may span (the HTML limit for `rowspan`).
const MAX_ROWSPAN: usize = 65_534;
/// Most cells a table's spans may add by repetition; past it a span covers its cells
/// with empty text.
const MAX_SPAN_CELLS: usize = 1_000_000;
/// Most bytes of text spans may repeat in one document.
const MAX_REPEATED_BYTES: usize = 16 * 1024 * 1024;
/// Largest grid (rows × columns) written as a table; a larger one is written a row a
/// paragraph, since the writer pads every row to the widest.
const MAX_GRID_CELLS: usize = 2_000_000;
/// Most cells a table may have once its spans are laid out (each row as wide as the
/// columns spans from above cover, and more): past it the document is refused, since a
/// few bytes of `colspan` and `rowspan` can ask for billions.
pub(super) const MAX_TABLE_CELLS: usize = 4_000_000;

fn space_is_flat(converter: &Converter<'_>) -> bool {
    converter.flat > 0 || converter.pre.is_some()
}

/// Elements whose content a reader never sees (or that only hold controls and metadata).
const SKIPPED: &str = concat!(
    "script style noscript template head title iframe object embed canvas button select datalist input ",
    "textarea audio video map param source track meta link base nav colgroup col frameset frame noembed ",
    "noframes",
);

/// Elements that start and end a paragraph.
const BLOCKS: &str = concat!(
    "address article aside body center details dialog div fieldset figcaption figure footer form header ",
    "hgroup html legend main p search section summary optgroup option output menuitem marquee",
);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Bold,
    Italic,
    Strike,
    Code,
}

fn mark_of(tag: &str) -> Option<Mark> {
    Some(match tag {
        "b" | "strong" => Mark::Bold,
        "i" | "em" | "var" | "dfn" => Mark::Italic,
        "s" | "strike" | "del" => Mark::Strike,
        "code" | "kbd" | "samp" | "tt" => Mark::Code,
        _ => return None,
    })
}

/// What to do when an element ends.
enum Frame {
    /// Nothing.
    Nothing,
    /// A space (in flattened text).
    Space,
    /// A block boundary.
    Boundary,
    /// Undo a mark.
    Mark(Mark),
    /// Undo the code mark of a flattened `pre`, then a space.
    FlatPre,
    /// Drop a link.
    Link,
    /// Write the heading.
    Heading(u8),
    /// End a section: a block boundary.
    Section,
    /// End a block quote (`true` when it counted as one).
    Quote(bool),
    /// End a list (`true` when flattened: also a space).
    List(bool),
    /// End a list item (`true` for a `dt`, whose text is bold).
    Item(bool),
    /// End a table.
    Table,
    /// End a row group (`thead`, `tbody`, `tfoot`).
    Group,
    /// End a row.
    Row,
    /// End a cell.
    Cell,
    /// End a caption.
    Caption,
    /// End preformatted text.
    Pre,
}

struct List {
    ordered: bool,
    next: i64,
    step: i64,
    level: u8,
}

struct Item {
    level: u8,
    number: Option<u64>,
    /// Whether its marker was written (later text goes one level below).
    written: bool,
    /// A `dd`: lists inside it stay at its level.
    description: bool,
    /// `lists.len()` when it started.
    lists: usize,
}

struct Pre {
    text: String,
    language: String,
}

enum Table {
    /// A table of data.
    Grid(Box<Grid>),
    /// A table used for layout (one cell, or `role="presentation"`): its cells are blocks.
    Layout,
}

#[derive(Default)]
struct Grid {
    rows: Vec<Vec<String>>,
    foot: Vec<Vec<String>>,
    in_foot: bool,
    row: Option<Vec<String>>,
    /// For each column, the rows a cell from above still covers and its text.
    spans: Vec<(usize, String)>,
    /// The open cell's column span and row span.
    cell: (usize, usize),
    caption: String,
    repeated: usize,
    /// Cells laid out so far; past [`MAX_TABLE_CELLS`] the table stops growing and is
    /// marked `overflow`.
    cells: usize,
    overflow: bool,
}

pub(super) struct Converter<'a> {
    tree: &'a Tree,
    doc: &'a mut Document,
    frames: Vec<Frame>,
    marks: [u32; 4],
    links: Vec<Option<String>>,
    inline: Inline,
    /// Earlier lines of the open paragraph (ended by `<br>`).
    lines: Vec<String>,
    /// Pictures met inside a paragraph or list item, written after it.
    images: Vec<String>,
    quote: u32,
    /// Open sectioning elements (`article`, `aside`, `main`, `section`, a kept page header).
    sections: u32,
    /// Inside a table cell, a caption or a heading: everything is text on one line.
    flat: u32,
    pre: Option<Pre>,
    lists: Vec<List>,
    items: Vec<Item>,
    /// Where the outermost open list's items begin in the document's blocks.
    list_start: usize,
    tables: Vec<Table>,
    repeat_budget: usize,
    /// A table went past [`MAX_TABLE_CELLS`]: the document is refused.
    too_many_cells: bool,
}

enum Mode {
    Flat,
    Pre,
    Item,
    Paragraph,
}

impl<'a> Converter<'a> {
    pub(super) fn new(tree: &'a Tree, doc: &'a mut Document) -> Converter<'a> {
        let list_start = doc.blocks.len();
        Converter {
            tree,
            doc,
            frames: Vec::new(),
            marks: [0; 4],
            links: Vec::new(),
            inline: Inline::new(),
            lines: Vec::new(),
            images: Vec::new(),
            quote: 0,
            sections: 0,
            flat: 0,
            pre: None,
            lists: Vec::new(),
            items: Vec::new(),
            list_start,
            tables: Vec::new(),
            repeat_budget: MAX_REPEATED_BYTES,
            too_many_cells: false,
        }
    }

    /// Walks the tree in document order without recursion: down to the first child when an
    /// element is entered, else on to the next sibling, ending each element climbed out of.
    /// False when a table had more than [`MAX_TABLE_CELLS`] cells (what was read is then
    /// incomplete).
    pub(super) fn run(mut self) -> bool {
        let tree = self.tree;
        let mut next = tree.nodes[0].first;
        while let Some(id) = next {
            let descend = match &tree.nodes[id].data {
                Data::Element { .. } => self.enter(id),
                Data::Text(text) => {
                    self.text(text);
                    false
                }
                _ => false,
            };
            if descend && let Some(first) = tree.nodes[id].first {
                next = Some(first);
                continue;
            }
            if matches!(tree.nodes[id].data, Data::Element { .. }) {
                self.exit();
            }
            let mut at = id;
            next = loop {
                if let Some(sibling) = tree.nodes[at].next {
                    break Some(sibling);
                }
                match tree.nodes[at].parent {
                    Some(parent) if parent != 0 => {
                        self.exit();
                        at = parent;
                    }
                    _ => break None,
                }
            };
            if self.too_many_cells {
                return false;
            }
        }
        self.flush();
        !self.too_many_cells
    }

    fn mode(&self) -> Mode {
        if self.flat > 0 {
            Mode::Flat
        } else if self.pre.is_some() {
            Mode::Pre
        } else if !self.items.is_empty() {
            Mode::Item
        } else {
            Mode::Paragraph
        }
    }

    fn style(&self) -> Style {
        Style { bold: self.marks[0] > 0, italic: self.marks[1] > 0, strike: self.marks[2] > 0, code: self.marks[3] > 0 }
    }

    fn text(&mut self, text: &str) {
        let text = clean(text);
        match self.mode() {
            Mode::Pre => {
                if let Some(pre) = &mut self.pre {
                    pre.text.push_str(&text);
                }
            }
            // Text between a table's rows and cells is only white space.
            Mode::Item | Mode::Paragraph if matches!(self.tables.last(), Some(Table::Grid(_))) => {}
            _ => {
                let link = self.links.last().and_then(|l| l.clone());
                self.inline.push(&text, self.style(), link.as_deref());
            }
        }
    }

    fn space(&mut self) {
        self.inline.text(" ");
    }

    /// Enters element `id`; whether to walk its children. Every call pushes one frame.
    fn enter(&mut self, id: Id) -> bool {
        let Some((tag, space, attrs)) = self.tree.element(id) else {
            self.frames.push(Frame::Nothing);
            return false;
        };
        let skip = match space {
            Space::Html => listed(SKIPPED, tag) || is_hidden(attrs),
            Space::Svg => true,
            Space::MathMl => matches!(tag, "annotation" | "annotation-xml") || is_hidden(attrs),
            Space::Other => false,
        };
        if skip || self.is_chrome(id, tag, attrs) {
            self.frames.push(Frame::Nothing);
            return false;
        }
        if space != Space::Html {
            self.frames.push(Frame::Nothing);
            return true;
        }
        if let Some(mark) = mark_of(tag)
            && !matches!(self.mode(), Mode::Pre)
        {
            self.marks[mark as usize] += 1;
            self.frames.push(Frame::Mark(mark));
            return true;
        }
        if tag == "a" {
            let href = attr(attrs, "href").map(str::trim).filter(|h| is_followable(h)).map(str::to_string);
            self.links.push(href);
            self.frames.push(Frame::Link);
            return true;
        }
        let frame = match self.mode() {
            Mode::Pre => self.enter_pre(tag, attrs),
            Mode::Flat => self.enter_flat(tag, attrs),
            Mode::Item | Mode::Paragraph => self.enter_block(id, tag, attrs),
        };
        self.frames.push(frame);
        true
    }

    /// Whether an element is the site's chrome rather than the page's content: a page-level
    /// footer, or a page-level header without a heading, which hold search boxes, logos and
    /// legal notes (`<nav>` menus are skipped outright; `role="navigation"` boxes are kept,
    /// as sites use them for link tables inside the content too).
    fn is_chrome(&self, id: Id, tag: &str, attrs: &[Attribute]) -> bool {
        if space_is_flat(self) {
            return false;
        }
        let role = attr(attrs, "role").map(|r| r.trim().to_ascii_lowercase());
        let page_level = self.sections == 0;
        match (role.as_deref(), tag) {
            (Some("contentinfo"), _) | (_, "footer") => page_level,
            // Page-level headers are scanned at most once each: a kept one counts as a
            // section, so the headers inside it are not scanned again.
            (Some("banner"), _) | (_, "header") => page_level && !self.tree.has_heading(id),
            _ => false,
        }
    }

    fn enter_pre(&mut self, tag: &str, attrs: &[Attribute]) -> Frame {
        match tag {
            "br" => {
                if let Some(pre) = &mut self.pre {
                    pre.text.push('\n');
                }
            }
            "code" => {
                if let Some(pre) = &mut self.pre
                    && pre.language.is_empty()
                {
                    pre.language = language(attrs);
                }
            }
            _ => {}
        }
        Frame::Nothing
    }

    fn enter_flat(&mut self, tag: &str, attrs: &[Attribute]) -> Frame {
        match tag {
            "br" | "hr" | "td" | "th" | "tr" | "dt" | "dd" | "caption" | "blockquote" | "h1" | "h2" | "h3" | "h4"
            | "h5" | "h6" | "table" | "thead" | "tbody" | "tfoot" | "dl" => {
                self.space();
                Frame::Space
            }
            "pre" => {
                self.space();
                self.marks[Mark::Code as usize] += 1;
                Frame::FlatPre
            }
            "ul" | "ol" | "menu" | "dir" => {
                self.space();
                let list = new_list(tag, attrs, 0, self.tree, None);
                self.lists.push(list);
                Frame::List(true)
            }
            "li" => {
                self.space();
                let marker = match self.lists.last_mut() {
                    Some(list) if list.ordered => {
                        let n = list.next.max(0);
                        list.next = list.next.saturating_add(list.step);
                        format!("{n}. ")
                    }
                    _ => "- ".to_string(),
                };
                self.inline.text(&marker);
                Frame::Space
            }
            "img" => {
                if let Some(alt) = attr(attrs, "alt").map(str::trim).filter(|a| !a.is_empty()) {
                    self.space();
                    let link = self.links.last().and_then(|l| l.clone());
                    self.inline.push(&clean(alt), self.style(), link.as_deref());
                    self.space();
                }
                Frame::Nothing
            }
            _ if listed(BLOCKS, tag) => {
                self.space();
                Frame::Space
            }
            _ => Frame::Nothing,
        }
    }

    fn enter_block(&mut self, id: Id, tag: &str, attrs: &[Attribute]) -> Frame {
        let in_item = matches!(self.mode(), Mode::Item);
        let banner = attr(attrs, "role").is_some_and(|r| r.trim().eq_ignore_ascii_case("banner"));
        let tag = if banner { "header" } else { tag };
        match tag {
            "br" => {
                if in_item {
                    self.space();
                } else {
                    let line = std::mem::take(&mut self.inline).finish();
                    if line.is_empty() {
                        // An empty line (`<br><br>`) ends a paragraph.
                        self.flush();
                    } else {
                        self.lines.push(line);
                    }
                }
                Frame::Nothing
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" if !in_item => {
                self.flush();
                self.flat += 1;
                Frame::Heading(tag.as_bytes()[1] - b'0')
            }
            "blockquote" => {
                self.boundary();
                if in_item {
                    Frame::Boundary
                } else {
                    self.quote += 1;
                    Frame::Quote(true)
                }
            }
            "ul" | "ol" | "menu" | "dir" | "dl" => {
                self.flush();
                if self.lists.is_empty() {
                    self.list_start = self.doc.blocks.len();
                }
                let level = self.nested_level();
                let list = new_list(tag, attrs, level, self.tree, Some(id));
                self.lists.push(list);
                Frame::List(false)
            }
            "li" | "dt" | "dd" => {
                self.flush();
                let (list_level, number) = match self.lists.last_mut() {
                    Some(list) => {
                        let number = list.ordered.then(|| {
                            if let Some(value) = attr(attrs, "value").and_then(|v| v.trim().parse::<i64>().ok()) {
                                list.next = value;
                            }
                            let n = list.next;
                            list.next = list.next.saturating_add(list.step);
                            n.max(0) as u64
                        });
                        (list.level, number)
                    }
                    None => (0, None),
                };
                let level = if tag == "dd" { list_level.saturating_add(1) } else { list_level };
                let bold = tag == "dt";
                if bold {
                    self.marks[Mark::Bold as usize] += 1;
                }
                let item = Item { level, number, written: false, description: tag == "dd", lists: self.lists.len() };
                self.items.push(item);
                Frame::Item(bold)
            }
            "table" => {
                self.flush();
                if is_layout_table(self.tree, id, attrs) {
                    self.tables.push(Table::Layout);
                } else {
                    self.tables.push(Table::Grid(Box::default()));
                }
                Frame::Table
            }
            "thead" | "tbody" | "tfoot" | "tr" | "td" | "th" | "caption" => self.enter_table_part(tag, attrs),
            "pre" => {
                self.flush();
                self.pre = Some(Pre { text: String::new(), language: language(attrs) });
                Frame::Pre
            }
            "img" => {
                let alt = attr(attrs, "alt").map(|a| one_line(&clean(a))).unwrap_or_default();
                let blank = self.inline.is_blank() && self.lines.is_empty();
                if blank && !in_item {
                    self.doc.push(Block::Image { alt });
                } else {
                    self.images.push(alt);
                }
                Frame::Nothing
            }
            "article" | "aside" | "main" | "section" | "header" => {
                self.boundary();
                self.sections += 1;
                Frame::Section
            }
            "hr" => {
                if !in_item {
                    self.flush();
                    self.doc.push(Block::Rule);
                }
                Frame::Nothing
            }
            _ if listed(BLOCKS, tag) || matches!(tag, "h1" | "h2" | "h3" | "h4" | "h5" | "h6") => {
                self.boundary();
                Frame::Boundary
            }
            _ => Frame::Nothing,
        }
    }

    fn enter_table_part(&mut self, tag: &str, attrs: &[Attribute]) -> Frame {
        let Some(Table::Grid(grid)) = self.tables.last_mut() else {
            self.boundary();
            return Frame::Boundary;
        };
        match tag {
            "thead" | "tbody" | "tfoot" => {
                grid.end_row(&mut self.repeat_budget);
                grid.spans.clear();
                grid.in_foot = tag == "tfoot";
                Frame::Group
            }
            "tr" => {
                grid.end_row(&mut self.repeat_budget);
                grid.row = Some(Vec::new());
                Frame::Row
            }
            "caption" => {
                self.flat += 1;
                Frame::Caption
            }
            _ => {
                let colspan = span(attrs, "colspan", MAX_COLSPAN);
                let rowspan = match span(attrs, "rowspan", MAX_ROWSPAN) {
                    0 => MAX_ROWSPAN,
                    n => n,
                };
                grid.start_cell(colspan.max(1), rowspan, &mut self.repeat_budget);
                self.flat += 1;
                Frame::Cell
            }
        }
    }

    /// The level of a list that starts here.
    fn nested_level(&self) -> u8 {
        match (self.items.last(), self.lists.last()) {
            (Some(item), _) if item.lists == self.lists.len() => {
                if item.description {
                    item.level
                } else {
                    item.level.saturating_add(1)
                }
            }
            (_, Some(list)) => list.level.saturating_add(1),
            _ => 0,
        }
    }

    fn exit(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        match frame {
            Frame::Nothing => {}
            Frame::Space => self.space(),
            Frame::Boundary => self.boundary(),
            Frame::Section => {
                self.sections = self.sections.saturating_sub(1);
                self.boundary();
            }
            Frame::Mark(mark) => self.marks[mark as usize] = self.marks[mark as usize].saturating_sub(1),
            Frame::FlatPre => {
                self.marks[Mark::Code as usize] = self.marks[Mark::Code as usize].saturating_sub(1);
                self.space();
            }
            Frame::Link => {
                self.links.pop();
            }
            Frame::Heading(level) => {
                self.flat = self.flat.saturating_sub(1);
                let text = std::mem::take(&mut self.inline).finish();
                self.doc.push(Block::Heading { level, text });
            }
            Frame::Quote(counted) => {
                self.flush();
                if counted {
                    self.quote = self.quote.saturating_sub(1);
                }
            }
            Frame::List(flat) => {
                if flat {
                    self.space();
                } else {
                    self.flush();
                }
                self.lists.pop();
            }
            Frame::Item(bold) => {
                self.flush();
                self.items.pop();
                if bold {
                    self.marks[Mark::Bold as usize] = self.marks[Mark::Bold as usize].saturating_sub(1);
                }
            }
            Frame::Table => match self.tables.pop() {
                Some(Table::Grid(mut grid)) => {
                    grid.end_row(&mut self.repeat_budget);
                    self.write_table(*grid);
                }
                _ => self.boundary(),
            },
            Frame::Group => {
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    grid.end_row(&mut self.repeat_budget);
                    grid.spans.clear();
                    grid.in_foot = false;
                }
            }
            Frame::Row => {
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    grid.end_row(&mut self.repeat_budget);
                }
            }
            Frame::Cell => {
                self.flat = self.flat.saturating_sub(1);
                let text = std::mem::take(&mut self.inline).finish();
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    grid.end_cell(text, &mut self.repeat_budget);
                }
            }
            Frame::Caption => {
                self.flat = self.flat.saturating_sub(1);
                let text = std::mem::take(&mut self.inline).finish();
                if let Some(Table::Grid(grid)) = self.tables.last_mut() {
                    if !grid.caption.is_empty() {
                        grid.caption.push(' ');
                    }
                    grid.caption.push_str(&text);
                }
            }
            Frame::Pre => {
                if let Some(pre) = self.pre.take() {
                    let text = code_text(&pre.text);
                    if !text.is_empty() {
                        self.doc.push(Block::Code { language: pre.language, text });
                    }
                }
            }
        }
    }

    /// A block boundary: the end of a paragraph, or a space in a list item or flat text.
    fn boundary(&mut self) {
        match self.mode() {
            Mode::Paragraph => self.flush(),
            Mode::Pre => {}
            Mode::Item | Mode::Flat => self.space(),
        }
    }

    /// Writes the open paragraph or list item text, then the pictures met inside it.
    fn flush(&mut self) {
        match self.mode() {
            Mode::Flat | Mode::Pre => return,
            Mode::Item => {
                let text = std::mem::take(&mut self.inline).finish();
                if let Some(item) = self.items.last_mut()
                    && !text.is_empty()
                {
                    let (level, number) =
                        if item.written { (item.level.saturating_add(1), None) } else { (item.level, item.number) };
                    item.written = true;
                    self.push_item(level, number, text);
                }
            }
            Mode::Paragraph => {
                let last = std::mem::take(&mut self.inline).finish();
                let mut lines = std::mem::take(&mut self.lines);
                if !last.is_empty() {
                    lines.push(last);
                }
                // Lines end with a hard break (two spaces).
                let text = lines.join("  \n");
                self.doc.push(if self.quote > 0 { Block::Quote(text) } else { Block::Paragraph(text) });
            }
        }
        for alt in std::mem::take(&mut self.images) {
            self.doc.push(Block::Image { alt });
        }
    }

    /// Adds a list item, its level at most one below the item of the same list before it
    /// (a deeper item with nothing above it would read as indented code).
    fn push_item(&mut self, level: u8, ordered: Option<u64>, text: String) {
        let max = match self.doc.blocks.last() {
            Some(Block::ListItem { level, .. }) if self.doc.blocks.len() > self.list_start => level.saturating_add(1),
            _ => 0,
        };
        self.doc.push(Block::ListItem { level: level.min(max), ordered, text });
    }

    fn write_table(&mut self, grid: Grid) {
        if grid.overflow {
            self.too_many_cells = true;
            return;
        }
        if !grid.caption.is_empty() {
            self.doc.push(Block::Paragraph(grid.caption.clone()));
        }
        let mut rows = grid.rows;
        rows.extend(grid.foot);
        rows.retain(|row| row.iter().any(|cell| !cell.trim().is_empty()));
        if rows.is_empty() {
            return;
        }
        let width = rows.iter().map(Vec::len).max().unwrap_or(0);
        if rows.len().saturating_mul(width) > MAX_GRID_CELLS {
            for row in rows {
                let cells: Vec<String> = row.into_iter().filter(|c| !c.trim().is_empty()).collect();
                self.doc.push(Block::Paragraph(cells.join(" ")));
            }
            return;
        }
        self.doc.push(Block::Table(rows));
    }
}

impl Grid {
    fn row(&mut self) -> &mut Vec<String> {
        self.row.get_or_insert_with(Vec::new)
    }

    /// Fills the columns that cells from rows above cover, from the row's end up to the
    /// first free column (`all`: every covered column left in the row, free ones between
    /// them left empty).
    fn fill_covered(&mut self, all: bool, budget: &mut usize) {
        let mut row = self.row.take().unwrap_or_default();
        let end = if all { self.spans.iter().rposition(|(left, _)| *left > 0).map_or(0, |last| last + 1) } else { 0 };
        while let Some((left, text)) = self.spans.get_mut(row.len()) {
            self.cells += 1;
            if self.cells > MAX_TABLE_CELLS {
                self.overflow = true;
                self.spans.clear();
                break;
            }
            if *left > 0 {
                *left -= 1;
                row.push(repeat(text, budget, &mut self.repeated));
            } else if row.len() < end {
                row.push(String::new());
            } else {
                break;
            }
        }
        self.row = Some(row);
    }

    fn start_cell(&mut self, colspan: usize, rowspan: usize, budget: &mut usize) {
        self.row();
        self.fill_covered(false, budget);
        self.cell = (colspan, rowspan);
    }

    fn end_cell(&mut self, text: String, budget: &mut usize) {
        let (colspan, rowspan) = std::mem::replace(&mut self.cell, (1, 1));
        let mut row = self.row.take().unwrap_or_default();
        let start = row.len();
        self.cells += colspan;
        if self.cells > MAX_TABLE_CELLS {
            self.overflow = true;
            self.spans.clear();
            self.row = Some(row);
            return;
        }
        for k in 0..colspan {
            if k == 0 {
                row.push(text.clone());
            } else {
                row.push(repeat(&text, budget, &mut self.repeated));
            }
        }
        if rowspan > 1 {
            if self.spans.len() < start + colspan {
                self.spans.resize(start + colspan, (0, String::new()));
            }
            for slot in &mut self.spans[start..start + colspan] {
                *slot = (rowspan - 1, text.clone());
            }
        }
        self.row = Some(row);
    }

    fn end_row(&mut self, budget: &mut usize) {
        if self.row.is_none() {
            return;
        }
        self.fill_covered(true, budget);
        let row = self.row.take().unwrap_or_default();
        if row.is_empty() {
            return;
        }
        if self.in_foot { self.foot.push(row) } else { self.rows.push(row) }
    }
}

/// `text` again for a cell a span covers, while the document's budgets last.
fn repeat(text: &str, budget: &mut usize, repeated: &mut usize) -> String {
    *repeated += 1;
    if *repeated > MAX_SPAN_CELLS || text.len() > *budget {
        return String::new();
    }
    *budget -= text.len();
    text.to_string()
}

fn span(attrs: &[Attribute], name: &str, max: usize) -> usize {
    match attr(attrs, name) {
        None => 1,
        Some(value) => {
            let digits: String = value.trim().chars().take_while(char::is_ascii_digit).collect();
            match digits.parse::<usize>() {
                Ok(n) => n.min(max),
                Err(_) if digits.is_empty() => 1,
                Err(_) => max,
            }
        }
    }
}

fn new_list(tag: &str, attrs: &[Attribute], level: u8, tree: &Tree, id: Option<Id>) -> List {
    let ordered = tag == "ol";
    let reversed = ordered && attr(attrs, "reversed").is_some();
    let start = attr(attrs, "start").and_then(|s| s.trim().parse::<i64>().ok());
    let next = match (start, reversed) {
        (Some(start), _) => start,
        (None, true) => {
            id.map_or(1, |id| tree.children(id).filter(|&c| tree.html_name(c) == Some("li")).count() as i64)
        }
        (None, false) => 1,
    };
    List { ordered, next, step: if reversed { -1 } else { 1 }, level }
}

/// Whether a table only lays things out: `role="presentation"` (or `none`), or a single cell.
fn is_layout_table(tree: &Tree, id: Id, attrs: &[Attribute]) -> bool {
    if attr(attrs, "role").is_some_and(|r| r.eq_ignore_ascii_case("presentation") || r.eq_ignore_ascii_case("none")) {
        return true;
    }
    let mut cells = 0;
    for part in tree.children(id) {
        let rows: Vec<Id> = match tree.html_name(part) {
            Some("thead" | "tbody" | "tfoot") => tree.children(part).collect(),
            Some("tr") => vec![part],
            _ => continue,
        };
        for row in rows {
            if tree.html_name(row) == Some("tr") {
                cells += tree.children(row).filter(|&c| matches!(tree.html_name(c), Some("td" | "th"))).count();
                if cells > 1 {
                    return false;
                }
            }
        }
    }
    true
}

fn is_hidden(attrs: &[Attribute]) -> bool {
    if attr(attrs, "hidden").is_some_and(|v| !v.trim().eq_ignore_ascii_case("until-found")) {
        return true;
    }
    if attr(attrs, "aria-hidden").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return true;
    }
    attr(attrs, "style").is_some_and(|style| {
        let style: String = style.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        style.split(';').any(|d| d.starts_with("display:none") || d.starts_with("visibility:hidden"))
    })
}

/// Whether a link target is worth keeping: not script, not inline data.
fn is_followable(href: &str) -> bool {
    if href.is_empty() {
        return false;
    }
    let scheme: String =
        href.chars().filter(|c| !c.is_ascii_whitespace() && !c.is_control()).take(11).collect::<String>();
    let scheme = scheme.to_ascii_lowercase();
    !(scheme.starts_with("javascript:") || scheme.starts_with("vbscript:") || scheme.starts_with("data:"))
}

/// The language of a `pre` or `code` from its class (`language-rust`, `lang-rust`).
fn language(attrs: &[Attribute]) -> String {
    let Some(class) = attr(attrs, "class") else {
        return String::new();
    };
    class
        .split_ascii_whitespace()
        .find_map(|c| c.strip_prefix("language-").or_else(|| c.strip_prefix("lang-")))
        .map(|l| l.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '#' | '.' | '-')).collect())
        .unwrap_or_default()
}

/// Preformatted text as a code block holds it: no blank lines at either end, no trailing
/// white space, the indentation all lines share removed.
fn code_text(text: &str) -> String {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let start = lines.iter().position(|l| !l.is_empty());
    let end = lines.iter().rposition(|l| !l.is_empty());
    let (Some(start), Some(end)) = (start, end) else {
        return String::new();
    };
    let lines = &lines[start..=end];
    let indent = lines
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        // The shared indentation is ASCII white space, so `indent` is a char boundary.
        out.push_str(line.get(indent..).unwrap_or(""));
    }
    out
}
