//! Writing a presentation (.pptx) as plain Office Open XML: a slide master with a title
//! layout and a title-and-content layout, a theme, one slide per entry, speaker notes.
//! Only what PowerPoint, LibreOffice and python-pptx need to open and edit it; nothing
//! here knows about routes.

use std::io::{Cursor, Write};

use zip::CompressionMethod;
use zip::write::SimpleFileOptions;

use crate::xml::escape;

/// 16:9, 13.333 × 7.5 inches, in EMU (914,400 a inch).
const SLIDE_CX: i64 = 12_192_000;
const SLIDE_CY: i64 = 6_858_000;
/// A portrait page for notes, 7.5 × 10 inches.
const NOTES_CX: i64 = 6_858_000;
const NOTES_CY: i64 = 9_144_000;

/// One bullet: its text (line breaks kept) and indent level, 0 to 4.
#[derive(Clone, Debug)]
pub struct Bullet {
    /// The text.
    pub text: String,
    /// 0 is the outermost level.
    pub level: u8,
}

/// One content slide.
#[derive(Clone, Debug)]
pub struct Slide {
    /// The slide's title.
    pub title: String,
    /// Its bullets, in order.
    pub bullets: Vec<Bullet>,
    /// Speaker notes.
    pub notes: Option<String>,
}

/// A whole deck.
#[derive(Clone, Debug)]
pub struct Deck {
    /// A title slide first, when given: title and subtitle.
    pub title_slide: Option<(String, Option<String>)>,
    /// The content slides.
    pub slides: Vec<Slide>,
    /// The document title in the file's properties.
    pub document_title: String,
    /// RFC 3339 creation time for the file's properties.
    pub created: String,
}

/// The deck as .pptx bytes.
pub fn write(deck: &Deck) -> std::io::Result<Vec<u8>> {
    // (layout, title, subtitle or bullets, notes): layout 1 is the title slide, 2 title and content.
    let mut slides: Vec<(u8, String, Body, Option<String>)> = Vec::new();
    if let Some((title, subtitle)) = &deck.title_slide {
        slides.push((1, slide_title(title, "ctrTitle"), Body::Subtitle(subtitle.clone()), None));
    }
    for slide in &deck.slides {
        slides.push((2, slide_title(&slide.title, "title"), Body::Bullets(slide.bullets.clone()), slide.notes.clone()));
    }
    let any_notes = slides.iter().any(|s| s.3.is_some());

    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let mut put = |name: &str, body: String| -> std::io::Result<()> {
        zip.start_file(name, options).map_err(std::io::Error::other)?;
        zip.write_all(body.as_bytes())
    };

    put("[Content_Types].xml", content_types(&slides.iter().map(|s| s.3.is_some()).collect::<Vec<_>>(), any_notes))?;
    put("_rels/.rels", ROOT_RELS.into())?;
    put("docProps/core.xml", core_properties(&deck.document_title, &deck.created))?;
    put("docProps/app.xml", app_properties(slides.len()))?;
    put("ppt/presentation.xml", presentation(slides.len(), any_notes))?;
    put("ppt/_rels/presentation.xml.rels", presentation_rels(slides.len(), any_notes))?;
    put("ppt/presProps.xml", PRES_PROPS.into())?;
    put("ppt/viewProps.xml", VIEW_PROPS.into())?;
    put("ppt/tableStyles.xml", TABLE_STYLES.into())?;
    put("ppt/theme/theme1.xml", theme("Paperchain"))?;
    put("ppt/slideMasters/slideMaster1.xml", slide_master())?;
    put("ppt/slideMasters/_rels/slideMaster1.xml.rels", MASTER_RELS.into())?;
    put("ppt/slideLayouts/slideLayout1.xml", title_layout())?;
    put("ppt/slideLayouts/_rels/slideLayout1.xml.rels", LAYOUT_RELS.into())?;
    put("ppt/slideLayouts/slideLayout2.xml", content_layout())?;
    put("ppt/slideLayouts/_rels/slideLayout2.xml.rels", LAYOUT_RELS.into())?;
    if any_notes {
        put("ppt/theme/theme2.xml", theme("Paperchain Notes"))?;
        put("ppt/notesMasters/notesMaster1.xml", notes_master())?;
        put("ppt/notesMasters/_rels/notesMaster1.xml.rels", NOTES_MASTER_RELS.into())?;
    }
    for (i, (layout, title, body, notes)) in slides.iter().enumerate() {
        let n = i + 1;
        put(&format!("ppt/slides/slide{n}.xml"), slide(title, body))?;
        let mut rels = format!(
            r#"<Relationship Id="rId1" Type="{REL}/slideLayout" Target="../slideLayouts/slideLayout{layout}.xml"/>"#
        );
        if let Some(notes) = notes {
            rels += &format!(
                r#"<Relationship Id="rId2" Type="{REL}/notesSlide" Target="../notesSlides/notesSlide{n}.xml"/>"#
            );
            put(&format!("ppt/notesSlides/notesSlide{n}.xml"), notes_slide(notes))?;
            put(
                &format!("ppt/notesSlides/_rels/notesSlide{n}.xml.rels"),
                relationships(&format!(
                    r#"<Relationship Id="rId1" Type="{REL}/notesMaster" Target="../notesMasters/notesMaster1.xml"/><Relationship Id="rId2" Type="{REL}/slide" Target="../slides/slide{n}.xml"/>"#
                )),
            )?;
        }
        put(&format!("ppt/slides/_rels/slide{n}.xml.rels"), relationships(&rels))?;
    }
    Ok(zip.finish().map_err(std::io::Error::other)?.into_inner())
}

enum Body {
    Subtitle(Option<String>),
    Bullets(Vec<Bullet>),
}

const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const NS: &str = r#"xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main""#;
const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>"#;

fn relationships(inner: &str) -> String {
    format!(
        r#"{HEADER}<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{inner}</Relationships>"#
    )
}

/// A run of text, its line breaks as `<a:br/>`.
fn runs(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            format!(r#"<a:r><a:rPr lang="en-US" dirty="0"/><a:t>{}</a:t></a:r>"#, escape(line.trim_end_matches('\r')))
        })
        .collect::<Vec<_>>()
        .join(r#"<a:br><a:rPr lang="en-US"/></a:br>"#)
}

fn slide_title(text: &str, kind: &str) -> String {
    format!(
        r#"<p:sp><p:nvSpPr><p:cNvPr id="2" name="Title 1"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph type="{kind}"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/><a:p>{}</a:p></p:txBody></p:sp>"#,
        runs(text)
    )
}

fn slide(title: &str, body: &Body) -> String {
    let body = match body {
        Body::Subtitle(None) => String::new(),
        Body::Subtitle(Some(text)) => format!(
            r#"<p:sp><p:nvSpPr><p:cNvPr id="3" name="Subtitle 2"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph type="subTitle" idx="1"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/><a:p>{}</a:p></p:txBody></p:sp>"#,
            runs(text)
        ),
        Body::Bullets(bullets) if bullets.is_empty() => String::new(),
        Body::Bullets(bullets) => {
            let paragraphs: String = bullets
                .iter()
                .map(|b| {
                    let level = if b.level > 0 { format!(r#"<a:pPr lvl="{}"/>"#, b.level) } else { String::new() };
                    format!("<a:p>{level}{}</a:p>", runs(&b.text))
                })
                .collect();
            format!(
                r#"<p:sp><p:nvSpPr><p:cNvPr id="3" name="Content Placeholder 2"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph idx="1"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr><a:normAutofit/></a:bodyPr><a:lstStyle/>{paragraphs}</p:txBody></p:sp>"#
            )
        }
    };
    format!(
        r#"{HEADER}<p:sld {NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/><a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>{title}{body}</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sld>"#
    )
}

fn notes_slide(notes: &str) -> String {
    let paragraphs: String = notes.split('\n').map(|line| format!("<a:p>{}</a:p>", runs(line))).collect();
    format!(
        r#"{HEADER}<p:notes {NS}><p:cSld><p:spTree><p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/><p:sp><p:nvSpPr><p:cNvPr id="2" name="Slide Image Placeholder 1"/><p:cNvSpPr><a:spLocks noGrp="1" noRot="1" noChangeAspect="1"/></p:cNvSpPr><p:nvPr><p:ph type="sldImg"/></p:nvPr></p:nvSpPr><p:spPr/></p:sp><p:sp><p:nvSpPr><p:cNvPr id="3" name="Notes Placeholder 2"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr><p:ph type="body" idx="1"/></p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/>{paragraphs}</p:txBody></p:sp></p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:notes>"#
    )
}

fn content_types(notes: &[bool], any_notes: bool) -> String {
    const PML: &str = "application/vnd.openxmlformats-officedocument.presentationml";
    let mut overrides = format!(
        r#"<Override PartName="/ppt/presentation.xml" ContentType="{PML}.presentation.main+xml"/><Override PartName="/ppt/slideMasters/slideMaster1.xml" ContentType="{PML}.slideMaster+xml"/><Override PartName="/ppt/slideLayouts/slideLayout1.xml" ContentType="{PML}.slideLayout+xml"/><Override PartName="/ppt/slideLayouts/slideLayout2.xml" ContentType="{PML}.slideLayout+xml"/><Override PartName="/ppt/theme/theme1.xml" ContentType="application/vnd.openxmlformats-officedocument.theme+xml"/><Override PartName="/ppt/presProps.xml" ContentType="{PML}.presProps+xml"/><Override PartName="/ppt/viewProps.xml" ContentType="{PML}.viewProps+xml"/><Override PartName="/ppt/tableStyles.xml" ContentType="{PML}.tableStyles+xml"/><Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/><Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/>"#
    );
    if any_notes {
        overrides += &format!(
            r#"<Override PartName="/ppt/notesMasters/notesMaster1.xml" ContentType="{PML}.notesMaster+xml"/><Override PartName="/ppt/theme/theme2.xml" ContentType="application/vnd.openxmlformats-officedocument.theme+xml"/>"#
        );
    }
    for (i, has_notes) in notes.iter().enumerate() {
        let n = i + 1;
        overrides += &format!(r#"<Override PartName="/ppt/slides/slide{n}.xml" ContentType="{PML}.slide+xml"/>"#);
        if *has_notes {
            overrides += &format!(
                r#"<Override PartName="/ppt/notesSlides/notesSlide{n}.xml" ContentType="{PML}.notesSlide+xml"/>"#
            );
        }
    }
    format!(
        r#"{HEADER}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>{overrides}</Types>"#
    )
}

const ROOT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="ppt/presentation.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties" Target="docProps/app.xml"/></Relationships>"#;

fn core_properties(title: &str, created: &str) -> String {
    format!(
        r#"{HEADER}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:dcmitype="http://purl.org/dc/dcmitype/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>{}</dc:title><dc:creator>Paperchain</dc:creator><dcterms:created xsi:type="dcterms:W3CDTF">{created}</dcterms:created><dcterms:modified xsi:type="dcterms:W3CDTF">{created}</dcterms:modified></cp:coreProperties>"#,
        escape(title)
    )
}

fn app_properties(slides: usize) -> String {
    format!(
        r#"{HEADER}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"><Application>Paperchain</Application><PresentationFormat>Widescreen</PresentationFormat><Slides>{slides}</Slides></Properties>"#
    )
}

fn presentation(slides: usize, any_notes: bool) -> String {
    let notes =
        if any_notes { r#"<p:notesMasterIdLst><p:notesMasterId r:id="rId6"/></p:notesMasterIdLst>"# } else { "" };
    let ids: String = (0..slides).map(|i| format!(r#"<p:sldId id="{}" r:id="rId{}"/>"#, 256 + i, 10 + i)).collect();
    format!(
        r#"{HEADER}<p:presentation {NS} saveSubsetFonts="1"><p:sldMasterIdLst><p:sldMasterId id="2147483648" r:id="rId1"/></p:sldMasterIdLst>{notes}<p:sldIdLst>{ids}</p:sldIdLst><p:sldSz cx="{SLIDE_CX}" cy="{SLIDE_CY}"/><p:notesSz cx="{NOTES_CX}" cy="{NOTES_CY}"/><p:defaultTextStyle><a:defPPr><a:defRPr lang="en-US"/></a:defPPr></p:defaultTextStyle></p:presentation>"#
    )
}

fn presentation_rels(slides: usize, any_notes: bool) -> String {
    let mut inner = format!(
        r#"<Relationship Id="rId1" Type="{REL}/slideMaster" Target="slideMasters/slideMaster1.xml"/><Relationship Id="rId2" Type="{REL}/theme" Target="theme/theme1.xml"/><Relationship Id="rId3" Type="{REL}/presProps" Target="presProps.xml"/><Relationship Id="rId4" Type="{REL}/viewProps" Target="viewProps.xml"/><Relationship Id="rId5" Type="{REL}/tableStyles" Target="tableStyles.xml"/>"#
    );
    if any_notes {
        inner +=
            &format!(r#"<Relationship Id="rId6" Type="{REL}/notesMaster" Target="notesMasters/notesMaster1.xml"/>"#);
    }
    for i in 0..slides {
        inner +=
            &format!(r#"<Relationship Id="rId{}" Type="{REL}/slide" Target="slides/slide{}.xml"/>"#, 10 + i, i + 1);
    }
    relationships(&inner)
}

const PRES_PROPS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:presentationPr xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"/>"#;

const VIEW_PROPS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><p:viewPr xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"><p:normalViewPr><p:restoredLeft sz="15620"/><p:restoredTop sz="94660"/></p:normalViewPr><p:gridSpacing cx="76200" cy="76200"/></p:viewPr>"#;

const TABLE_STYLES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><a:tblStyleLst xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" def="{5C22544A-7EE6-4342-B048-85BDC9FD1C3A}"/>"#;

/// A complete theme: twelve colours, Calibri fonts (Carlito stands in where it is
/// missing), and the three fills, lines, effects and backgrounds every theme lists.
fn theme(name: &str) -> String {
    let solid = |scheme: &str| format!(r#"<a:solidFill><a:schemeClr val="{scheme}"/></a:solidFill>"#);
    let line = |w: u32| {
        format!(
            r#"<a:ln w="{w}" cap="flat" cmpd="sng" algn="ctr">{}<a:prstDash val="solid"/><a:miter lim="800000"/></a:ln>"#,
            solid("phClr")
        )
    };
    let fills = format!("{0}{0}{0}", solid("phClr"));
    let lines = format!("{}{}{}", line(6350), line(12700), line(19050));
    let effects = "<a:effectStyle><a:effectLst/></a:effectStyle>".repeat(3);
    format!(
        r#"{HEADER}<a:theme xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" name="{}"><a:themeElements><a:clrScheme name="Office"><a:dk1><a:sysClr val="windowText" lastClr="000000"/></a:dk1><a:lt1><a:sysClr val="window" lastClr="FFFFFF"/></a:lt1><a:dk2><a:srgbClr val="1F2937"/></a:dk2><a:lt2><a:srgbClr val="F3F4F6"/></a:lt2><a:accent1><a:srgbClr val="2563EB"/></a:accent1><a:accent2><a:srgbClr val="F97316"/></a:accent2><a:accent3><a:srgbClr val="10B981"/></a:accent3><a:accent4><a:srgbClr val="A855F7"/></a:accent4><a:accent5><a:srgbClr val="EAB308"/></a:accent5><a:accent6><a:srgbClr val="EF4444"/></a:accent6><a:hlink><a:srgbClr val="2563EB"/></a:hlink><a:folHlink><a:srgbClr val="7C3AED"/></a:folHlink></a:clrScheme><a:fontScheme name="Office"><a:majorFont><a:latin typeface="Calibri Light"/><a:ea typeface=""/><a:cs typeface=""/></a:majorFont><a:minorFont><a:latin typeface="Calibri"/><a:ea typeface=""/><a:cs typeface=""/></a:minorFont></a:fontScheme><a:fmtScheme name="Office"><a:fillStyleLst>{fills}</a:fillStyleLst><a:lnStyleLst>{lines}</a:lnStyleLst><a:effectStyleLst>{effects}</a:effectStyleLst><a:bgFillStyleLst>{fills}</a:bgFillStyleLst></a:fmtScheme></a:themeElements><a:objectDefaults/><a:extraClrSchemeLst/></a:theme>"#,
        escape(name)
    )
}

const MASTER_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout" Target="../slideLayouts/slideLayout1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideLayout" Target="../slideLayouts/slideLayout2.xml"/><Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/theme" Target="../theme/theme1.xml"/></Relationships>"#;

const LAYOUT_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/slideMaster" Target="../slideMasters/slideMaster1.xml"/></Relationships>"#;

const NOTES_MASTER_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/theme" Target="../theme/theme2.xml"/></Relationships>"#;

/// Bullet levels 1 to 5 of the body style: a bullet character, indents growing by half an inch.
fn body_levels() -> String {
    (1..=5)
        .map(|level| {
            let margin = 228_600 + (level - 1) * 457_200;
            let size = [2800, 2400, 2000, 1800, 1800][level as usize - 1];
            let bullet = if level % 2 == 1 { "•" } else { "–" };
            format!(
                r#"<a:lvl{level}pPr marL="{margin}" indent="-228600" algn="l"><a:spcBef><a:spcPts val="1000"/></a:spcBef><a:buFont typeface="Arial"/><a:buChar char="{bullet}"/><a:defRPr sz="{size}"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill><a:latin typeface="+mn-lt"/></a:defRPr></a:lvl{level}pPr>"#
            )
        })
        .collect()
}

/// A placeholder shape at `[x, y, cx, cy]` (EMU).
fn placeholder(id: u32, name: &str, ph: &str, [x, y, cx, cy]: [i64; 4], body: &str) -> String {
    format!(
        r#"<p:sp><p:nvSpPr><p:cNvPr id="{id}" name="{name}"/><p:cNvSpPr><a:spLocks noGrp="1"/></p:cNvSpPr><p:nvPr>{ph}</p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="{x}" y="{y}"/><a:ext cx="{cx}" cy="{cy}"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></p:spPr><p:txBody>{body}<a:lstStyle/><a:p><a:endParaRPr lang="en-US"/></a:p></p:txBody></p:sp>"#
    )
}

const GROUP: &str = r#"<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="0" cy="0"/><a:chOff x="0" y="0"/><a:chExt cx="0" cy="0"/></a:xfrm></p:grpSpPr>"#;

fn slide_master() -> String {
    let title = placeholder(
        2,
        "Title Placeholder 1",
        r#"<p:ph type="title"/>"#,
        [838_200, 365_125, 10_515_600, 1_325_563],
        r#"<a:bodyPr anchor="ctr"><a:normAutofit/></a:bodyPr>"#,
    );
    let body = placeholder(
        3,
        "Text Placeholder 2",
        r#"<p:ph type="body" idx="1"/>"#,
        [838_200, 1_825_625, 10_515_600, 4_351_338],
        r#"<a:bodyPr><a:normAutofit/></a:bodyPr>"#,
    );
    format!(
        r#"{HEADER}<p:sldMaster {NS}><p:cSld><p:bg><p:bgRef idx="1001"><a:schemeClr val="bg1"/></p:bgRef></p:bg><p:spTree>{GROUP}{title}{body}</p:spTree></p:cSld><p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/><p:sldLayoutIdLst><p:sldLayoutId id="2147483649" r:id="rId1"/><p:sldLayoutId id="2147483650" r:id="rId2"/></p:sldLayoutIdLst><p:txStyles><p:titleStyle><a:lvl1pPr algn="l"><a:defRPr sz="4000"><a:solidFill><a:schemeClr val="tx2"/></a:solidFill><a:latin typeface="+mj-lt"/></a:defRPr></a:lvl1pPr></p:titleStyle><p:bodyStyle>{}</p:bodyStyle><p:otherStyle><a:defPPr><a:defRPr lang="en-US"/></a:defPPr></p:otherStyle></p:txStyles></p:sldMaster>"#,
        body_levels()
    )
}

/// A slide layout: its type, the name PowerPoint shows, and its two placeholders.
fn layout(kind: &str, name: &str, shapes: [String; 2]) -> String {
    let [first, second] = shapes;
    format!(
        r#"{HEADER}<p:sldLayout {NS} type="{kind}" preserve="1"><p:cSld name="{name}"><p:spTree>{GROUP}{first}{second}</p:spTree></p:cSld><p:clrMapOvr><a:masterClrMapping/></p:clrMapOvr></p:sldLayout>"#
    )
}

fn title_layout() -> String {
    let autofit = |anchor: &str| format!("<a:bodyPr{anchor}><a:normAutofit/></a:bodyPr>");
    layout(
        "title",
        "Title Slide",
        [
            placeholder(
                2,
                "Title 1",
                r#"<p:ph type="ctrTitle"/>"#,
                [1_524_000, 1_122_363, 9_144_000, 2_387_600],
                &autofit(r#" anchor="b""#),
            ),
            placeholder(
                3,
                "Subtitle 2",
                r#"<p:ph type="subTitle" idx="1"/>"#,
                [1_524_000, 3_602_038, 9_144_000, 1_655_762],
                &autofit(""),
            ),
        ],
    )
}

fn content_layout() -> String {
    layout(
        "obj",
        "Title and Content",
        [
            placeholder(
                2,
                "Title 1",
                r#"<p:ph type="title"/>"#,
                [838_200, 365_125, 10_515_600, 1_325_563],
                "<a:bodyPr/>",
            ),
            placeholder(
                3,
                "Content Placeholder 2",
                r#"<p:ph idx="1"/>"#,
                [838_200, 1_825_625, 10_515_600, 4_351_338],
                "<a:bodyPr/>",
            ),
        ],
    )
}

fn notes_master() -> String {
    let image = String::from(
        r#"<p:sp><p:nvSpPr><p:cNvPr id="2" name="Slide Image Placeholder 1"/><p:cNvSpPr><a:spLocks noGrp="1" noRot="1" noChangeAspect="1"/></p:cNvSpPr><p:nvPr><p:ph type="sldImg" idx="2"/></p:nvPr></p:nvSpPr><p:spPr><a:xfrm><a:off x="381000" y="685800"/><a:ext cx="6096000" cy="3429000"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom><a:noFill/><a:ln w="12700"><a:solidFill><a:prstClr val="black"/></a:solidFill></a:ln></p:spPr></p:sp>"#,
    );
    let notes = placeholder(
        3,
        "Notes Placeholder 2",
        r#"<p:ph type="body" sz="quarter" idx="3"/>"#,
        [685_800, 4_343_400, 5_486_400, 4_114_800],
        "<a:bodyPr/>",
    );
    format!(
        r#"{HEADER}<p:notesMaster {NS}><p:cSld><p:bg><p:bgRef idx="1001"><a:schemeClr val="bg1"/></p:bgRef></p:bg><p:spTree>{GROUP}{image}{notes}</p:spTree></p:cSld><p:clrMap bg1="lt1" tx1="dk1" bg2="lt2" tx2="dk2" accent1="accent1" accent2="accent2" accent3="accent3" accent4="accent4" accent5="accent5" accent6="accent6" hlink="hlink" folHlink="folHlink"/><p:notesStyle><a:lvl1pPr marL="0" algn="l"><a:defRPr sz="1200"><a:solidFill><a:schemeClr val="tx1"/></a:solidFill><a:latin typeface="+mn-lt"/></a:defRPr></a:lvl1pPr></p:notesStyle></p:notesMaster>"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_become_breaks_between_runs() {
        assert_eq!(
            runs("a\nb"),
            r#"<a:r><a:rPr lang="en-US" dirty="0"/><a:t>a</a:t></a:r><a:br><a:rPr lang="en-US"/></a:br><a:r><a:rPr lang="en-US" dirty="0"/><a:t>b</a:t></a:r>"#
        );
    }
}
