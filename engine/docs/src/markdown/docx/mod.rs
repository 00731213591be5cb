//! DOCX to Markdown: the body of a Word document in reading order, read from its parts
//! after the Office gate (`office::package::check`).
//!
//! Paragraph styles give headings (`Title` → level 1, `Heading N` or an outline level N →
//! level N + 1, docling's convention), quotes and code; `w:numPr` (on the paragraph or its
//! style) gives list items, numbered from `numbering.xml` with running counters per list
//! and level, multi-level labels (`1.2.`) written into the item's text. Tables repeat a
//! merged cell's text in every cell it covers and flatten what a cell holds onto one
//! line. Pictures become [`Block::Image`] with their description, text boxes are read
//! once, equations (OMML) are written as LaTeX between `$` (`$$` alone in a paragraph),
//! deleted text is skipped, headers, footers, footnotes and comments are left out.
//!
//! [`ooxml`] holds what the PowerPoint reader shares: bounded part reading, relationships,
//! a small namespace-normalised XML tree, and chart data.
//!
//! The parts: `styles` (run properties and paragraph styles), `numbering` (list
//! definitions and their labels) and `reader` (the body's blocks, runs, fields, pictures
//! and tables).
//!
//! What this module must not do: read a part past the Office gate's limits or follow an
//! external relationship.

use std::collections::HashMap;

use crate::error::EngineError;
use crate::markdown::Document;
use crate::markdown::ooxml::{self, Package};
use crate::office::package::Kind;

mod numbering;
mod reader;
mod styles;

use self::numbering::Numbering;
use self::reader::Reader;
use self::styles::Styles;

/// Reads a DOCX file.
pub fn read(bytes: &[u8], field: &str) -> Result<Document, EngineError> {
    let mut pkg = Package::open(bytes, Kind::WordDocument, field)?;
    let root = pkg.rels("")?;
    let main = root
        .first("officeDocument")
        .filter(|r| !r.external)
        .map(|r| r.target.clone())
        .unwrap_or_else(|| "word/document.xml".to_string());
    let dom = pkg.xml(&main)?.ok_or_else(|| ooxml::missing(field, &main))?;
    let rels = pkg.rels(&main)?;
    let styles = match rels.first("styles").filter(|r| !r.external).map(|r| r.target.clone()) {
        Some(part) => pkg.xml(&part)?.map(|d| Styles::parse(d.root())).unwrap_or_default(),
        None => Styles::default(),
    };
    let numbering = match rels.first("numbering").filter(|r| !r.external).map(|r| r.target.clone()) {
        Some(part) => pkg.xml(&part)?.map(|d| Numbering::parse(d.root())).unwrap_or_default(),
        None => Numbering::default(),
    };
    let core_title = pkg.core_title(&root)?;
    let mut reader = Reader {
        pkg,
        rels,
        styles,
        numbering,
        counters: HashMap::new(),
        slots: 0,
        first_title: None,
        field: field.to_string(),
    };
    let mut blocks = Vec::new();
    if let Some(body) = dom.root().child("w:document").and_then(|d| d.child("w:body")) {
        reader.blocks(body, &mut blocks, 0)?;
    }
    ooxml::normalise_list_levels(&mut blocks);
    let mut doc = Document { title: core_title.or(reader.first_title), blocks: Vec::new() };
    for block in blocks {
        doc.push(block);
    }
    Ok(doc)
}

#[cfg(test)]
pub(super) mod tests {
    use std::io::{Cursor, Read as _};

    use super::*;
    use crate::markdown::ooxml::MAX_DEPTH;
    use crate::markdown::{Block, render};

    const W: &str = r#"xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture" xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math""#;
    const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

    /// A ZIP of `(name, text)` members.
    pub(in crate::markdown) fn zip(members: &[(impl AsRef<str>, impl AsRef<str>)]) -> Vec<u8> {
        let members: Vec<(&str, &[u8])> = members.iter().map(|(n, b)| (n.as_ref(), b.as_ref().as_bytes())).collect();
        crate::office::package::zip_of(&members)
    }

    type ReadFn = fn(&[u8], &str) -> Result<Document, EngineError>;

    /// Scores `read` on each docling ground-truth file of `docling/<format>` and fails when
    /// one falls below its floors (text, headings, tables, as measured when the reader was
    /// written; text and headings get a margin of 0.01).
    pub(in crate::markdown) fn assert_corpus_floors(format: &str, read: ReadFn, floors: &[(&str, f64, f64, f64)]) {
        let dir = paperchain_testkit::corpus::corpus().join("docling").join(format);
        let mut failures = Vec::new();
        for (name, text, headings, tables) in floors {
            let bytes = std::fs::read(dir.join("sources").join(name)).unwrap();
            let truth = std::fs::read_to_string(dir.join("groundtruth").join(format!("{name}.md"))).unwrap();
            let ours = render(&read(&bytes, "/file").unwrap());
            let s = paperchain_testkit::markdown_score::score(&ours, &truth);
            eprintln!("{name}: text {:.4} headings {:.4} tables {:.4}", s.text, s.headings, s.tables);
            if s.text < text - 0.01 || s.headings < headings - 0.01 || s.tables < *tables {
                failures.push(format!("{name}: {s:?}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// Converts every file of `office/<format>` (all must read, and a file whose parts
    /// under `text_parts` hold text elements `text_tag` must give some Markdown); returns
    /// how many files there were.
    pub(in crate::markdown) fn convert_office_folder(
        format: &str,
        read: ReadFn,
        text_parts: &str,
        text_tag: &str,
    ) -> usize {
        let dir = paperchain_testkit::corpus::corpus().join("office").join(format);
        let mut count = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == format) {
                let bytes = std::fs::read(&path).unwrap();
                let doc = read(&bytes, "/file").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let markdown = render(&doc);
                let mut archive = zip::ZipArchive::new(Cursor::new(&bytes)).unwrap();
                let parts: Vec<String> = archive
                    .file_names()
                    .filter_map(Result::ok)
                    .filter(|n| n.starts_with(text_parts))
                    .map(|n| n.into_owned())
                    .collect();
                let has_text = parts.iter().any(|name| {
                    let mut xml = String::new();
                    archive.by_name(name).unwrap().read_to_string(&mut xml).unwrap();
                    xml.contains(text_tag)
                });
                assert!(
                    !has_text || !markdown.trim().is_empty(),
                    "{}: no Markdown from a file with text",
                    path.display()
                );
                count += 1;
            }
        }
        count
    }

    /// A minimal .docx: the body, optional styles and numbering, and document relationships.
    fn docx(body: &str, styles: &str, numbering: &str, extra_rels: &str) -> Vec<u8> {
        let mut members = vec![
            (
                "[Content_Types].xml",
                r#"<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#.to_string(),
            ),
            (
                "_rels/.rels",
                format!(
                    r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{REL}/officeDocument" Target="word/document.xml"/></Relationships>"#
                ),
            ),
            ("word/document.xml", format!(r#"<?xml version="1.0"?><w:document {W}><w:body>{body}</w:body></w:document>"#)),
            (
                "word/_rels/document.xml.rels",
                format!(
                    r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rIdS" Type="{REL}/styles" Target="styles.xml"/><Relationship Id="rIdN" Type="{REL}/numbering" Target="/word/numbering.xml"/>{extra_rels}</Relationships>"#
                ),
            ),
        ];
        members.push(("word/styles.xml", format!(r#"<w:styles {W}>{styles}</w:styles>"#)));
        members.push(("word/numbering.xml", format!(r#"<w:numbering {W}>{numbering}</w:numbering>"#)));
        zip(&members)
    }

    fn p(style: &str, runs: &str) -> String {
        let ppr =
            if style.is_empty() { String::new() } else { format!(r#"<w:pPr><w:pStyle w:val="{style}"/></w:pPr>"#) };
        format!("<w:p>{ppr}{runs}</w:p>")
    }

    fn r(text: &str) -> String {
        format!(r#"<w:r><w:t xml:space="preserve">{text}</w:t></w:r>"#)
    }

    fn li(num: u32, level: u32, text: &str) -> String {
        format!(
            r#"<w:p><w:pPr><w:numPr><w:ilvl w:val="{level}"/><w:numId w:val="{num}"/></w:numPr></w:pPr>{}</w:p>"#,
            r(text)
        )
    }

    fn markdown(bytes: &[u8]) -> String {
        render(&read(bytes, "/file").unwrap())
    }

    const HEADING_STYLES: &str = r#"<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style><w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:rPr><w:b/></w:rPr></w:style><w:style w:type="paragraph" w:styleId="Kop2"><w:name w:val="Kop 2"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Emph"><w:name w:val="Emph"/><w:rPr><w:i/></w:rPr></w:style><w:style w:type="character" w:styleId="Strong"><w:name w:val="Strong"/><w:rPr><w:b/></w:rPr></w:style>"#;

    #[test]
    fn headings_come_from_styles_and_the_title_from_the_title_style() {
        let body = [
            p("Title", &r("The Title")),
            p("Heading1", &r("Intro")),
            p("Kop2", &r("Localised heading")),
            p("", &r("Body text.")),
        ]
        .concat();
        let doc = read(&docx(&body, HEADING_STYLES, "", ""), "/file").unwrap();
        assert_eq!(doc.title.as_deref(), Some("The Title"));
        assert_eq!(render(&doc), "# The Title\n\n## Intro\n\n### Localised heading\n\nBody text.\n");
    }

    #[test]
    fn bold_italic_and_strike_follow_runs_and_run_styles_and_val_zero_turns_them_off() {
        let runs = [
            r#"<w:r><w:rPr><w:b/></w:rPr><w:t>bold</w:t></w:r>"#,
            r#"<w:r><w:t xml:space="preserve"> and </w:t></w:r>"#,
            r#"<w:r><w:rPr><w:i w:val="true"/></w:rPr><w:t>italic</w:t></w:r>"#,
            r#"<w:r><w:rPr><w:b w:val="0"/></w:rPr><w:t xml:space="preserve"> not bold </w:t></w:r>"#,
            r#"<w:r><w:rPr><w:dstrike/></w:rPr><w:t>gone</w:t></w:r>"#,
            r#"<w:r><w:rPr><w:rStyle w:val="Strong"/></w:rPr><w:t xml:space="preserve"> strong</w:t></w:r>"#,
        ]
        .concat();
        let body = [
            p("", &runs),
            p(
                "Emph",
                &format!("{}{}", r("styled "), r#"<w:r><w:rPr><w:i w:val="0"/></w:rPr><w:t>upright</w:t></w:r>"#),
            ),
        ]
        .concat();
        assert_eq!(
            markdown(&docx(&body, HEADING_STYLES, "", "")),
            "**bold** and *italic* not bold ~~gone~~ **strong**\n\n*styled* upright\n"
        );
    }

    const LIST_NUMBERING: &str = r#"<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:numFmt w:val="bullet"/><w:lvlText w:val="•"/></w:lvl><w:lvl w:ilvl="1"><w:numFmt w:val="bullet"/><w:lvlText w:val="o"/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="2"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl><w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1.%2."/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="3"><w:abstractNumId w:val="0"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num><w:num w:numId="4"><w:abstractNumId w:val="2"/></w:num>"#;

    #[test]
    fn numbered_and_nested_bullet_lists_count_per_list_and_restart_with_overrides() {
        let body = [
            li(1, 0, "one"),
            li(1, 1, "sub a"),
            li(1, 1, "sub b"),
            p("", ""),
            li(1, 0, "two"),
            p("", &r("A paragraph between.")),
            li(1, 0, "three"),
            li(3, 0, "restarted"),
            li(2, 0, "bullet"),
            li(2, 1, "nested bullet"),
            li(4, 0, "Chapter"),
            li(4, 1, "Section"),
            li(4, 1, "Another"),
        ]
        .concat();
        assert_eq!(
            markdown(&docx(&body, "", LIST_NUMBERING, "")),
            "1. one\n    - sub a\n    - sub b\n2. two\n\nA paragraph between.\n\n3. three\n1. restarted\n- bullet\n    - nested bullet\n\
             1. Chapter\n    - 1.1. Section\n    - 1.2. Another\n"
        );
    }

    #[test]
    fn style_based_numbering_and_numbered_headings() {
        let styles = r#"<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:pPr><w:numPr><w:numId w:val="2"/></w:numPr></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:pPr><w:numPr><w:numId w:val="4"/></w:numPr><w:outlineLvl w:val="0"/></w:pPr></w:style><w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="4"/></w:numPr><w:outlineLvl w:val="1"/></w:pPr></w:style>"#;
        let body = [
            p("Heading1", &r("Scope")),
            p("Heading2", &r("Terms")),
            p("ListBullet", &r("styled item")),
            r#"<w:p><w:pPr><w:pStyle w:val="ListBullet"/><w:numPr><w:ilvl w:val="1"/></w:numPr></w:pPr><w:r><w:t>deeper</w:t></w:r></w:p>"#.to_string(),
            r#"<w:p><w:pPr><w:pStyle w:val="ListBullet"/><w:numPr><w:numId w:val="0"/></w:numPr></w:pPr><w:r><w:t>not a list</w:t></w:r></w:p>"#.to_string(),
            p("Heading1", &r("Next")),
        ]
        .concat();
        assert_eq!(
            markdown(&docx(&body, styles, LIST_NUMBERING, "")),
            "## 1 Scope\n\n### 1.1 Terms\n\n- styled item\n    - deeper\n\nnot a list\n\n## 2 Next\n"
        );
    }

    #[test]
    fn merged_cells_repeat_their_text_and_cell_content_is_flattened() {
        let tc = |props: &str, text: &str| format!("<w:tc><w:tcPr>{props}</w:tcPr>{}</w:tc>", p("", &r(text)));
        let list_cell = format!("<w:tc>{}{}</w:tc>", li(2, 0, "first"), li(2, 0, "second"));
        let nested_cell =
            format!("<w:tc><w:tbl><w:tr>{}{}</w:tr></w:tbl>{}</w:tc>", tc("", "in"), tc("", "ner"), p("", ""));
        let body = format!(
            "<w:tbl><w:tblGrid><w:gridCol/><w:gridCol/><w:gridCol/></w:tblGrid>\
             <w:tr>{}{}</w:tr><w:tr>{}{}{}</w:tr><w:tr>{}{list_cell}{nested_cell}</w:tr>\
             <w:tr><w:trPr><w:gridBefore w:val=\"1\"/></w:trPr>{}{}</w:tr></w:tbl>",
            tc(r#"<w:gridSpan w:val="2"/>"#, "Wide"),
            tc("", "C"),
            tc(r#"<w:vMerge w:val="restart"/>"#, "Tall"),
            tc("", "x"),
            tc("", "y"),
            tc("<w:vMerge/>", ""),
            tc("", "late"),
            tc("", "end"),
        );
        assert_eq!(
            markdown(&docx(&body, "", LIST_NUMBERING, "")),
            "| Wide | Wide             | C      |\n|------|------------------|--------|\n| Tall | x                | y      |\n\
             | Tall | - first - second | in ner |\n|      | late             | end    |\n"
        );
    }

    #[test]
    fn hyperlinks_resolve_through_relationships_and_anchors_stay_text() {
        let body = p(
            "",
            &[
                r("See ").as_str(),
                r#"<w:hyperlink r:id="rIdL"><w:r><w:t>the site</w:t></w:r></w:hyperlink>"#,
                r(", ").as_str(),
                r#"<w:hyperlink w:anchor="_Toc1"><w:r><w:t>a section</w:t></w:r></w:hyperlink>"#,
                r(" and ").as_str(),
                r#"<w:hyperlink r:id="rIdJ"><w:r><w:t>no script</w:t></w:r></w:hyperlink>"#,
                r(".").as_str(),
            ]
            .concat(),
        );
        let rels = format!(
            r#"<Relationship Id="rIdL" Type="{REL}/hyperlink" Target="https://example.com/a?b=1&amp;c=2" TargetMode="External"/><Relationship Id="rIdJ" Type="{REL}/hyperlink" Target="javascript:alert(1)" TargetMode="External"/>"#
        );
        assert_eq!(
            markdown(&docx(&body, "", "", &rels)),
            "See [the site](https://example.com/a?b=1&c=2), a section and no script.\n"
        );
    }

    #[test]
    fn pictures_keep_their_description_and_deleted_text_is_skipped() {
        let drawing = r#"<w:r><w:drawing><wp:inline><wp:docPr id="1" name="Picture 1" descr="A duck&#10;&#10;Description automatically generated"/><a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic><pic:nvPicPr><pic:cNvPr id="0" name="duck.png"/></pic:nvPicPr></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>"#;
        let body = [
            p("", drawing),
            p(
                "",
                &[
                    r("Kept ").as_str(),
                    r#"<w:del><w:r><w:delText>removed </w:delText></w:r></w:del>"#,
                    r#"<w:ins><w:r><w:t>inserted</w:t></w:r></w:ins>"#,
                ]
                .concat(),
            ),
            p("", r#"<w:r><w:rPr><w:vanish/></w:rPr><w:t>hidden</w:t></w:r>"#),
        ]
        .concat();
        assert_eq!(markdown(&docx(&body, "", "", "")), "<!-- image: A duck -->\n\nKept inserted\n");
    }

    #[test]
    fn equations_become_latex() {
        let math = r#"<m:oMath><m:r><m:t>A=π</m:t></m:r><m:sSup><m:e><m:r><m:t>r</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath>"#;
        let fraction = r#"<m:oMathPara><m:oMath><m:f><m:num><m:r><m:t>a</m:t></m:r></m:num><m:den><m:r><m:t>b</m:t></m:r></m:den></m:f></m:oMath></m:oMathPara>"#;
        let body = [p("", &format!("{}{math}{}", r("Area "), r("."))), p("", fraction)].concat();
        let doc = read(&docx(&body, "", "", ""), "/file").unwrap();
        assert_eq!(
            doc.blocks,
            vec![Block::Paragraph("Area $A= \\\\pi r^{2}$.".into()), Block::Paragraph("$$\\\\frac{a}{b}$$".into())]
        );
    }

    #[test]
    fn broken_and_foreign_inputs_are_refused_with_codes() {
        let broken = zip(&[
            ("_rels/.rels", String::new()),
            ("word/document.xml", "<w:document><w:body><w:p></w:document>".to_string()),
        ]);
        let error = read(&broken, "/file").unwrap_err();
        assert_eq!(error.code, "damaged_office_file", "{}", error.message);
        let error = read(b"not a zip", "/file").unwrap_err();
        assert_eq!(error.code, "not_an_office_file");
        let deep = format!("{}x{}", "<w:p>".repeat(400), "</w:p>".repeat(400));
        let error = read(&docx(&deep, "", "", ""), "/file").unwrap_err();
        assert_eq!(error.code, "damaged_office_file", "{}", error.message);
    }

    #[test]
    fn tables_nested_to_the_depth_limit_are_read_on_a_test_thread_stack() {
        let depth = (MAX_DEPTH - 8) / 3;
        let body = format!(
            "{}{}{}",
            "<w:tbl><w:tr><w:tc>".repeat(depth),
            p("", &r("deep")),
            "</w:tc></w:tr></w:tbl>".repeat(depth)
        );
        assert_eq!(markdown(&docx(&body, "", "", "")), "| deep |\n|------|\n");
    }

    /// Each docling ground-truth file scores at least what it scored when this reader was
    /// written, less a small margin.
    #[test]
    fn corpus_scores_hold() {
        assert_corpus_floors(
            "docx",
            read,
            &[
                ("docx_lists.docx", 1.0, 1.0, 1.0),
                ("docx_rich_cells.docx", 0.971, 1.0, 1.0),
                ("equations.docx", 0.982, 1.0, 1.0),
                ("unit_test_formatting.docx", 1.0, 1.0, 1.0),
                ("unit_test_headers_numbered.docx", 1.0, 1.0, 1.0),
                ("word_sample.docx", 1.0, 1.0, 1.0),
                ("word_tables.docx", 1.0, 1.0, 1.0),
            ],
        );
    }

    #[test]
    fn every_office_corpus_document_converts() {
        assert_eq!(convert_office_folder("docx", read, "word/document.xml", "<w:t"), 11);
    }
}
