//! `POST /v1/docs/pptx-build`: a PowerPoint deck from a title and slides of bullets.

use schemars::JsonSchema;
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::docs::BUILDER_PRICE_RULE;
use crate::error::EngineError;
use crate::office::slides::{self, Bullet, Deck, Slide};
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, chosen_name};
use crate::price::Price;
use crate::xml::is_xml_char;

/// Most slides a deck gets.
pub const MAX_SLIDES: usize = 200;
/// Most bullets on a slide.
pub const MAX_BULLETS: usize = 50;
/// Longest title, subtitle or bullet, in characters.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Longest speaker notes, in characters.
pub const MAX_NOTES_CHARS: usize = 20_000;

/// Request of `/v1/docs/pptx-build`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend(
    "if" = { "required": ["subtitle"], "properties": { "subtitle": { "type": "string" } } },
    "then" = { "required": ["title"], "properties": { "title": { "type": "string" } } }
))]
pub struct PptxBuildInput {
    /// The deck's title: a title slide comes first when it is given.
    #[serde(default)]
    #[schemars(regex(pattern = crate::xml::LINE_PATTERN), length(min = 1, max = MAX_LINE_CHARS))]
    pub title: Option<String>,
    /// The title slide's subtitle (only with `title`).
    #[serde(default)]
    #[schemars(regex(pattern = crate::xml::TEXT_PATTERN), length(max = MAX_LINE_CHARS))]
    pub subtitle: Option<String>,
    /// The content slides, in order (1 to 200).
    #[schemars(length(min = 1, max = 200))]
    pub slides: Vec<SlideInput>,
    /// The file's name (`.pptx` is added when missing). Default `presentation.pptx`, also for a name with nothing usable (blank, a folder).
    #[serde(default)]
    pub filename: Option<String>,
    /// How the file is delivered.
    #[serde(default)]
    pub output: OutputMode,
}

/// One content slide: a title, bullets and speaker notes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SlideInput {
    /// The slide's title.
    #[schemars(regex(pattern = crate::xml::LINE_PATTERN), length(min = 1, max = MAX_LINE_CHARS))]
    pub title: String,
    /// The bullets (at most 50): text, or `{"text", "level"}` for an indented one (level 0 to 4). A line break
    /// in the text stays a line break in the bullet.
    #[serde(default)]
    #[schemars(length(max = 50))]
    pub bullets: Option<Vec<BulletInput>>,
    /// Speaker notes (at most 20,000 characters).
    #[serde(default)]
    #[schemars(regex(pattern = crate::xml::TEXT_PATTERN), length(max = MAX_NOTES_CHARS))]
    pub notes: Option<String>,
}

/// A bullet: its text, or its text and level.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum BulletInput {
    /// A bullet at the outermost level.
    Text(#[schemars(regex(pattern = crate::xml::LINE_PATTERN), length(min = 1, max = MAX_LINE_CHARS))] String),
    /// A bullet at a level (0 outermost to 4).
    Leveled(LeveledBullet),
}

/// A bullet with its indent level.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeveledBullet {
    /// The text.
    #[schemars(regex(pattern = crate::xml::LINE_PATTERN), length(min = 1, max = MAX_LINE_CHARS))]
    pub text: String,
    /// 0 (outermost) to 4. Default 0.
    #[serde(default)]
    #[schemars(range(max = 4))]
    pub level: u8,
}

/// A checked call.
pub struct PptxBuild {
    deck: Deck,
    filename: String,
    output: OutputMode,
}

/// The route.
pub struct PptxBuildRoute;

impl Route for PptxBuildRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::PPTX];
    type Input = PptxBuildInput;
    type Prepared = PptxBuild;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/docs/pptx-build",
        operation: "build_pptx",
        family: Family::Docs,
        summary: "Build a PowerPoint deck",
        description: "Writes a 16:9 .pptx: a title slide when `title` is given, then one title-and-content slide \
            per entry with its bullets (levels 0 to 4, text shrunk to fit) and speaker notes. Standard Office Open \
            XML with real placeholders, so PowerPoint, LibreOffice, Keynote and python-pptx open and edit it.",
        base_price: Price::micros(3_000),
        price_rule: BUILDER_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: PptxBuildInput, _ctx: &Context) -> Result<PptxBuild, EngineError> {
        check(input, now())
    }

    fn quote(_: &PptxBuild) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: PptxBuild, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let bytes = slides::write(&call.deck)
                .map_err(|e| EngineError::internal(format!("writing the presentation: {e}")))?;
            let file = OutFile { filename: call.filename, media_type: media::PPTX.into(), bytes };
            Ok(Reply::Files(FileSet::single(file, call.output)))
        })
        .await
    }
}

fn now() -> String {
    OffsetDateTime::now_utc().replace_nanosecond(0).ok().and_then(|t| t.format(&Rfc3339).ok()).unwrap_or_default()
}

/// Checks one piece of text: not blank when `required`, at most `max` characters, and
/// only characters XML can hold.
fn text(value: &str, at: &str, max: usize, required: bool) -> Result<String, EngineError> {
    if required && value.trim().is_empty() {
        return Err(EngineError::invalid(at, format!("{at}: empty; give some text")));
    }
    if value.chars().count() > max {
        return Err(EngineError::invalid(at, format!("{at}: at most {max} characters")));
    }
    if let Some(c) = value.chars().find(|c| !is_xml_char(*c)) {
        return Err(EngineError::invalid(
            at,
            format!("{at}: the control character U+{:04X} cannot be stored in a presentation", c as u32),
        ));
    }
    Ok(value.replace("\r\n", "\n"))
}

fn check(input: PptxBuildInput, created: String) -> Result<PptxBuild, EngineError> {
    if input.slides.is_empty() || input.slides.len() > MAX_SLIDES {
        return Err(EngineError::invalid("/slides", format!("/slides: give 1 to {MAX_SLIDES} slides")));
    }
    let title_slide = match (&input.title, &input.subtitle) {
        (None, Some(_)) => {
            return Err(EngineError::invalid(
                "/subtitle",
                "/subtitle: a subtitle goes on the title slide; give `title` too",
            ));
        }
        (None, None) => None,
        (Some(title), subtitle) => Some((
            text(title, "/title", MAX_LINE_CHARS, true)?,
            subtitle.as_deref().map(|s| text(s, "/subtitle", MAX_LINE_CHARS, false)).transpose()?,
        )),
    };
    let mut slides = Vec::with_capacity(input.slides.len());
    for (i, slide) in input.slides.iter().enumerate() {
        let at = format!("/slides/{i}");
        let bullets = slide.bullets.as_deref().unwrap_or_default();
        if bullets.len() > MAX_BULLETS {
            return Err(EngineError::invalid(
                format!("{at}/bullets"),
                format!("{at}/bullets: at most {MAX_BULLETS} bullets a slide; split them over several slides"),
            ));
        }
        let bullets = bullets
            .iter()
            .enumerate()
            .map(|(j, bullet)| {
                let (value, level, field) = match bullet {
                    BulletInput::Text(t) => (t, 0, format!("{at}/bullets/{j}")),
                    BulletInput::Leveled(b) => (&b.text, b.level, format!("{at}/bullets/{j}/text")),
                };
                if level > 4 {
                    return Err(EngineError::invalid(
                        format!("{at}/bullets/{j}/level"),
                        format!("{at}/bullets/{j}/level: 0 (outermost) to 4"),
                    ));
                }
                Ok(Bullet { text: text(value, &field, MAX_LINE_CHARS, true)?, level })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let notes =
            slide.notes.as_deref().map(|n| text(n, &format!("{at}/notes"), MAX_NOTES_CHARS, false)).transpose()?;
        slides.push(Slide { title: text(&slide.title, &format!("{at}/title"), MAX_LINE_CHARS, true)?, bullets, notes });
    }
    let filename = chosen_name(input.filename.as_deref(), "presentation", "pptx");
    let document_title = title_slide.as_ref().map_or_else(|| slides[0].title.clone(), |(t, _)| t.clone());
    Ok(PptxBuild { deck: Deck { title_slide, slides, document_title, created }, filename, output: input.output })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn build(body: Value) -> Result<PptxBuild, EngineError> {
        check(serde_json::from_value(body).unwrap(), "2026-01-01T00:00:00Z".into())
    }

    #[test]
    fn every_wrong_text_is_named() {
        let cases = [
            (json!({"slides": []}), "/slides"),
            (json!({"subtitle": "s", "slides": [{"title": "a"}]}), "/subtitle"),
            (json!({"title": " ", "slides": [{"title": "a"}]}), "/title"),
            (json!({"slides": [{"title": ""}]}), "/slides/0/title"),
            (json!({"slides": [{"title": "a", "bullets": ["ok", "bad\u{1}"]}]}), "/slides/0/bullets/1"),
            (json!({"slides": [{"title": "a", "bullets": [{"text": "x", "level": 5}]}]}), "/slides/0/bullets/0/level"),
            (json!({"slides": [{"title": "a", "bullets": [{"text": " ", "level": 1}]}]}), "/slides/0/bullets/0/text"),
            (json!({"slides": [{"title": "a", "notes": "x".repeat(20_001)}]}), "/slides/0/notes"),
            (json!({"slides": [{"title": "a", "bullets": vec!["b"; 51]}]}), "/slides/0/bullets"),
        ];
        for (body, field) in cases {
            let Err(error) = build(body.clone()) else { panic!("{body} accepted") };
            assert_eq!(error.field.as_deref(), Some(field), "{body}: {error:?}");
        }
        let ok = build(json!({"slides": [{"title": "a"}], "filename": "q3/review"})).unwrap();
        assert_eq!(ok.filename, "review.pptx");
        for blank in ["", " ", "..", "q3/"] {
            let ok = build(json!({"slides": [{"title": "a"}], "filename": blank})).unwrap();
            assert_eq!(ok.filename, "presentation.pptx", "{blank:?}");
        }
    }
}
