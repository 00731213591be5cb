//! Writes Word documents (WordprocessingML): sections with their page size and margins,
//! paragraphs of styled runs (font, size, bold, italic), tables with merged cells, and
//! pictures, in the subset of the format Word, LibreOffice and python-docx all read.

use std::io::{Cursor, Write};

use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

use crate::xml::escape;

/// A document: sections one after the other.
#[derive(Clone, Debug, Default)]
pub struct Document {
    /// The sections.
    pub sections: Vec<Section>,
    /// The title in the file's properties.
    pub title: String,
}

/// Pages of one size and margins.
#[derive(Clone, Debug)]
pub struct Section {
    /// Page width in points.
    pub width: f32,
    /// Page height in points.
    pub height: f32,
    /// Margins in points: top, right, bottom, left.
    pub margins: [f32; 4],
    /// The content; [`Block::PageBreak`] starts a new page within the section.
    pub blocks: Vec<Block>,
}

/// A piece of a section.
#[derive(Clone, Debug)]
pub enum Block {
    /// A paragraph.
    Paragraph(Paragraph),
    /// A table: rows of cells, merged cells.
    Table(Table),
    /// A picture on a line of its own: PNG bytes and the size shown, in points.
    Picture { png: Vec<u8>, width: f32, height: f32, space_before: f32 },
    /// The next block starts a new page.
    PageBreak,
}

/// Horizontal alignment of a paragraph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Align {
    /// Ragged right.
    #[default]
    Left,
    /// Centred.
    Center,
    /// Ragged left.
    Right,
    /// Justified.
    Both,
}

/// A paragraph.
#[derive(Clone, Debug, Default)]
pub struct Paragraph {
    /// Its runs.
    pub runs: Vec<Run>,
    /// Alignment.
    pub align: Align,
    /// Left indent in points (from the margin).
    pub indent: f32,
    /// First-line indent in points (negative for a hanging indent).
    pub first_line: f32,
    /// Space above in points.
    pub space_before: f32,
    /// Line height in points (0: single).
    pub line_height: f32,
    /// Right-to-left (Arabic, Hebrew): its start is on the right.
    pub rtl: bool,
}

/// A run of text in one style.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// The text.
    pub text: String,
    /// Font family.
    pub font: String,
    /// Size in points.
    pub size: f32,
    /// Bold.
    pub bold: bool,
    /// Italic.
    pub italic: bool,
}

/// A table.
#[derive(Clone, Debug, Default)]
pub struct Table {
    /// Rows of cell texts.
    pub rows: Vec<Vec<String>>,
    /// Merged cells: row, column, rows, columns (their text is the top-left cell's).
    pub merged: Vec<(usize, usize, usize, usize)>,
    /// Column widths in points.
    pub widths: Vec<f32>,
    /// The text's font and size.
    pub font: String,
    /// Size in points.
    pub size: f32,
    /// Space above in points.
    pub space_before: f32,
}

const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;
const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";
const R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

/// Twentieths of a point.
fn twips(points: f32) -> i64 {
    (points * 20.0).round() as i64
}

/// English Metric Units (12,700 a point).
fn emu(points: f32) -> i64 {
    (points * 12_700.0).round() as i64
}

/// The document as .docx bytes.
pub fn write(doc: &Document) -> std::io::Result<Vec<u8>> {
    let mut pictures: Vec<&[u8]> = Vec::new();
    let mut body = String::new();
    for (i, section) in doc.sections.iter().enumerate() {
        let mut page_break = false;
        for block in &section.blocks {
            match block {
                Block::PageBreak => page_break = true,
                Block::Paragraph(p) => {
                    body += &paragraph(p, page_break);
                    page_break = false;
                }
                Block::Table(t) => {
                    if page_break {
                        body += r#"<w:p><w:r><w:br w:type="page"/></w:r></w:p>"#;
                        page_break = false;
                    }
                    body += &table(t);
                }
                Block::Picture { png, width, height, space_before } => {
                    pictures.push(png);
                    body += &picture(pictures.len(), *width, *height, *space_before, page_break);
                    page_break = false;
                }
            }
        }
        let properties = section_properties(section);
        if i + 1 < doc.sections.len() {
            // A section ends with a paragraph that carries its properties.
            body += &format!("<w:p><w:pPr>{properties}</w:pPr></w:p>");
        } else {
            body += &properties;
        }
    }
    let document = format!(
        r#"{HEADER}<w:document xmlns:w="{W}" xmlns:r="{R}" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><w:body>{body}</w:body></w:document>"#
    );
    let mut rels = String::from(
        r#"<Relationship Id="rIdStyles" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/>"#,
    );
    for n in 1..=pictures.len() {
        rels += &format!(
            r#"<Relationship Id="rIdImage{n}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image{n}.png"/>"#
        );
    }

    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let mut put = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
        zip.start_file(name, options).map_err(std::io::Error::other)?;
        zip.write_all(bytes)
    };
    put("[Content_Types].xml", CONTENT_TYPES.as_bytes())?;
    put("_rels/.rels", ROOT_RELS.as_bytes())?;
    put("docProps/core.xml", core(&doc.title).as_bytes())?;
    put("word/document.xml", document.as_bytes())?;
    put("word/styles.xml", STYLES.as_bytes())?;
    put(
        "word/_rels/document.xml.rels",
        format!(r#"{HEADER}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#)
            .as_bytes(),
    )?;
    for (i, png) in pictures.iter().enumerate() {
        put(&format!("word/media/image{}.png", i + 1), png)?;
    }
    Ok(zip.finish().map_err(std::io::Error::other)?.into_inner())
}

fn section_properties(s: &Section) -> String {
    let [top, right, bottom, left] = s.margins.map(twips);
    let orient = if s.width > s.height { r#" w:orient="landscape""# } else { "" };
    format!(
        r#"<w:sectPr><w:pgSz w:w="{}" w:h="{}"{orient}/><w:pgMar w:top="{top}" w:right="{right}" w:bottom="{bottom}" w:left="{left}" w:header="0" w:footer="0" w:gutter="0"/></w:sectPr>"#,
        twips(s.width),
        twips(s.height)
    )
}

fn run_properties(font: &str, size: f32, bold: bool, italic: bool) -> String {
    let font = escape(font);
    let mut rpr = format!(r#"<w:rFonts w:ascii="{font}" w:hAnsi="{font}" w:cs="{font}" w:eastAsia="{font}"/>"#);
    if bold {
        rpr += "<w:b/><w:bCs/>";
    }
    if italic {
        rpr += "<w:i/><w:iCs/>";
    }
    let half_points = (size * 2.0).round().clamp(2.0, 3276.0) as i64;
    rpr += &format!(r#"<w:sz w:val="{half_points}"/><w:szCs w:val="{half_points}"/>"#);
    rpr
}

fn text_run(text: &str, rpr: &str) -> String {
    format!(r#"<w:r><w:rPr>{rpr}</w:rPr><w:t xml:space="preserve">{}</w:t></w:r>"#, escape(text))
}

fn paragraph(p: &Paragraph, page_break: bool) -> String {
    let mut ppr = String::new();
    if page_break {
        ppr += "<w:pageBreakBefore/>";
    }
    if p.rtl {
        ppr += "<w:bidi/>";
    }
    let line = if p.line_height > 0.0 {
        format!(r#" w:line="{}" w:lineRule="atLeast""#, twips(p.line_height))
    } else {
        String::new()
    };
    ppr += &format!(r#"<w:spacing w:before="{}" w:after="0"{line}/>"#, twips(p.space_before.max(0.0)));
    if p.indent.abs() >= 1.0 || p.first_line.abs() >= 1.0 {
        let first = if p.first_line >= 0.0 {
            format!(r#" w:firstLine="{}""#, twips(p.first_line))
        } else {
            format!(r#" w:hanging="{}""#, twips(-p.first_line))
        };
        ppr += &format!(r#"<w:ind w:left="{}"{first}/>"#, twips(p.indent.max(0.0)));
    }
    let jc = match p.align {
        Align::Left => "",
        Align::Center => "center",
        Align::Right => "right",
        Align::Both => "both",
    };
    if !jc.is_empty() {
        ppr += &format!(r#"<w:jc w:val="{jc}"/>"#);
    }
    let rtl = if p.rtl { "<w:rtl/>" } else { "" };
    let runs: String = p
        .runs
        .iter()
        .map(|r| text_run(&r.text, &format!("{}{rtl}", run_properties(&r.font, r.size, r.bold, r.italic))))
        .collect();
    format!("<w:p><w:pPr>{ppr}</w:pPr>{runs}</w:p>")
}

fn table(t: &Table) -> String {
    let columns = t.rows.iter().map(Vec::len).max().unwrap_or(0);
    let width_of = |from: usize, count: usize| -> f32 {
        (from..(from + count).min(columns)).map(|k| t.widths.get(k).copied().unwrap_or(72.0)).sum()
    };
    // The merge covering a cell: (first row, first column, rows, columns).
    let merge_at = |r: usize, c: usize| {
        t.merged.iter().copied().find(|&(mr, mc, rows, cols)| r >= mr && r < mr + rows && c >= mc && c < mc + cols)
    };
    let rpr = run_properties(&t.font, t.size, false, false);
    let grid: String = (0..columns).map(|c| format!(r#"<w:gridCol w:w="{}"/>"#, twips(width_of(c, 1)))).collect();
    let mut out = String::new();
    if t.space_before > 0.0 {
        out += &format!(
            r#"<w:p><w:pPr><w:spacing w:before="0" w:after="0" w:line="{}" w:lineRule="exact"/></w:pPr></w:p>"#,
            twips(t.space_before.clamp(1.0, 72.0))
        );
    }
    let border = r#"w:val="single" w:sz="4" w:space="0" w:color="000000""#;
    out += &format!(
        r#"<w:tbl><w:tblPr><w:tblW w:w="0" w:type="auto"/><w:tblBorders><w:top {border}/><w:left {border}/><w:bottom {border}/><w:right {border}/><w:insideH {border}/><w:insideV {border}/></w:tblBorders><w:tblLayout w:type="fixed"/></w:tblPr><w:tblGrid>{grid}</w:tblGrid>"#
    );
    for (r, row) in t.rows.iter().enumerate() {
        out += "<w:tr>";
        let mut c = 0;
        while c < columns {
            let (span, vmerge, text) = match merge_at(r, c) {
                // Inside a merge but right of its first column: part of that cell's span.
                Some((_, mc, _, _)) if c != mc => {
                    c += 1;
                    continue;
                }
                Some((mr, _, rows, cols)) => {
                    let vmerge = match (rows > 1, r == mr) {
                        (false, _) => "",
                        (true, true) => r#"<w:vMerge w:val="restart"/>"#,
                        (true, false) => "<w:vMerge/>",
                    };
                    (cols, vmerge, if r == mr { row.get(c).cloned().unwrap_or_default() } else { String::new() })
                }
                None => (1, "", row.get(c).cloned().unwrap_or_default()),
            };
            let mut tcpr = format!(r#"<w:tcW w:w="{}" w:type="dxa"/>"#, twips(width_of(c, span)));
            if span > 1 {
                tcpr += &format!(r#"<w:gridSpan w:val="{span}"/>"#);
            }
            tcpr += vmerge;
            let runs = if text.is_empty() { String::new() } else { text_run(&text, &rpr) };
            out += &format!(
                r#"<w:tc><w:tcPr>{tcpr}</w:tcPr><w:p><w:pPr><w:spacing w:before="0" w:after="0"/></w:pPr>{runs}</w:p></w:tc>"#
            );
            c += span.max(1);
        }
        out += "</w:tr>";
    }
    out += "</w:tbl>";
    out
}

fn picture(n: usize, width: f32, height: f32, space_before: f32, page_break: bool) -> String {
    let (cx, cy) = (emu(width), emu(height));
    let brk = if page_break { "<w:pageBreakBefore/>" } else { "" };
    format!(
        r#"<w:p><w:pPr>{brk}<w:spacing w:before="{}" w:after="0"/></w:pPr><w:r><w:drawing><wp:inline distT="0" distB="0" distL="0" distR="0"><wp:extent cx="{cx}" cy="{cy}"/><wp:docPr id="{n}" name="Picture {n}"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="{n}" name="image{n}.png"/><pic:cNvPicPr/></pic:nvPicPr><pic:blipFill><a:blip r:embed="rIdImage{n}"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill><pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>"#,
        twips(space_before.max(0.0))
    )
}

fn core(title: &str) -> String {
    format!(
        r#"{HEADER}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>{}</dc:title><dc:creator>Paperchain</dc:creator></cp:coreProperties>"#,
        escape(title)
    )
}

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/><Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/><Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/></Types>"#;

const ROOT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/></Relationships>"#;

const STYLES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:docDefaults><w:rPrDefault><w:rPr><w:rFonts w:ascii="Liberation Serif" w:hAnsi="Liberation Serif" w:cs="Liberation Serif" w:eastAsia="Liberation Serif"/><w:sz w:val="22"/><w:szCs w:val="22"/></w:rPr></w:rPrDefault><w:pPrDefault><w:pPr><w:spacing w:before="0" w:after="0"/></w:pPr></w:pPrDefault></w:docDefaults><w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style><w:style w:type="table" w:default="1" w:styleId="TableNormal"><w:name w:val="Normal Table"/><w:tblPr><w:tblCellMar><w:left w:w="72" w:type="dxa"/><w:right w:w="72" w:type="dxa"/></w:tblCellMar></w:tblPr></w:style></w:styles>"#;
