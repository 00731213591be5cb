//! `/v1/docs/pptx-build`: decks read back by python-pptx with every title, bullet, level
//! and note as sent; the package passes the same gate as every Office input.

use crate::common;

use common::route::call_files;
use paperchain_engine::Context;
use paperchain_engine::office::package::{self, Kind};
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

/// What python-pptx reads: slide size, and per slide its layout, placeholders' text by
/// type, paragraphs with levels, and notes.
const PPTX_DUMP: &str = r#"
import json, sys
from pptx import Presentation
prs = Presentation(sys.argv[1])
out = {"width": prs.slide_width, "height": prs.slide_height, "title": prs.core_properties.title, "slides": []}
for slide in prs.slides:
    item = {"layout": slide.slide_layout.name, "title": slide.shapes.title.text if slide.shapes.title else None,
            "placeholders": [], "notes": None}
    for shape in slide.placeholders:
        if shape.placeholder_format.idx == 0:
            continue
        item["placeholders"].append({"type": str(shape.placeholder_format.type),
            "paragraphs": [{"text": p.text, "level": p.level} for p in shape.text_frame.paragraphs]})
    if slide.has_notes_slide:
        item["notes"] = slide.notes_slide.notes_text_frame.text
    out["slides"].append(item)
print(json.dumps(out))
"#;

#[tokio::test]
async fn decks_read_back_in_python_pptx_as_sent() {
    let ctx = Context::new();
    let body = json!({
        "title": "Quarterly <review> & plans",
        "subtitle": "Prepared for the board",
        "slides": [
            {"title": "Results", "bullets": ["Revenue up 12%", {"text": "EMEA led", "level": 1},
                {"text": "deep detail", "level": 4}, "Costs flat\nfor the third quarter"],
             "notes": "Mention the one-off.\nThen pause."},
            {"title": "Next steps"},
            {"title": "Ünïcödé — 日本語 ✓", "bullets": ["a \"quoted\" <tag> & more"]},
        ],
        "filename": "review",
    });
    let file = call_files(&ctx, "/v1/docs/pptx-build", body).await.unwrap().into_single_file().unwrap();
    assert_eq!(file.filename, "review.pptx");
    assert_eq!(file.media_type, "application/vnd.openxmlformats-officedocument.presentationml.presentation");
    // What we write passes the gate we hold every input to.
    let checked = package::check(&file.bytes, Kind::Presentation, "/file").unwrap();
    assert!(checked.members.iter().any(|m| m == "ppt/notesSlides/notesSlide2.xml"), "{:?}", checked.members);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("review.pptx");
    std::fs::write(&path, &file.bytes).unwrap();
    let deck: Value = serde_json::from_str(&run_python(PPTX_DUMP, &[&path])).unwrap();

    assert_eq!((deck["width"].as_i64(), deck["height"].as_i64()), (Some(12_192_000), Some(6_858_000)), "16:9");
    assert_eq!(deck["title"], "Quarterly <review> & plans");
    let slides = deck["slides"].as_array().unwrap();
    assert_eq!(slides.len(), 4, "a title slide and three content slides");

    assert_eq!(slides[0]["layout"], "Title Slide");
    assert_eq!(slides[0]["title"], "Quarterly <review> & plans");
    assert_eq!(slides[0]["placeholders"][0]["paragraphs"][0]["text"], "Prepared for the board");

    assert_eq!((&slides[1]["layout"], &slides[1]["title"]), (&json!("Title and Content"), &json!("Results")));
    let paragraphs = &slides[1]["placeholders"][0]["paragraphs"];
    assert_eq!(
        paragraphs,
        &json!([
            {"text": "Revenue up 12%", "level": 0},
            {"text": "EMEA led", "level": 1},
            {"text": "deep detail", "level": 4},
            {"text": "Costs flat\u{b}for the third quarter", "level": 0},
        ]),
        "python-pptx shows a line break inside a paragraph as a vertical tab"
    );
    assert_eq!(slides[1]["notes"], "Mention the one-off.\nThen pause.");

    assert_eq!(slides[2]["title"], "Next steps");
    assert_eq!(slides[2]["placeholders"], json!([]), "no body without bullets");
    assert_eq!(slides[2]["notes"], Value::Null);
    assert_eq!(slides[3]["title"], "Ünïcödé — 日本語 ✓");
    assert_eq!(slides[3]["placeholders"][0]["paragraphs"][0]["text"], "a \"quoted\" <tag> & more");
}

#[tokio::test]
async fn a_deck_without_notes_or_title_slide_has_no_notes_parts() {
    let ctx = Context::new();
    let body = json!({"slides": [{"title": "Only", "bullets": ["one"]}]});
    let file = call_files(&ctx, "/v1/docs/pptx-build", body).await.unwrap().into_single_file().unwrap();
    assert_eq!(file.filename, "presentation.pptx");
    let checked = package::check(&file.bytes, Kind::Presentation, "/file").unwrap();
    assert!(!checked.members.iter().any(|m| m.contains("notes")), "{:?}", checked.members);
    assert_eq!(checked.members.iter().filter(|m| m.starts_with("ppt/slides/slide")).count(), 1);
}
