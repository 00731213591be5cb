//! `POST /v1/pdf/rotate`: rotate pages by 90, 180 or 270 degrees.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::pdf::{self, SourcePdf};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{NoJson, OutputMode, Reply};
use crate::pages::PageSelection;
use crate::price::Price;

/// Request of `/v1/pdf/rotate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateInput {
    /// The PDF.
    pub file: FileInput,
    /// Clockwise rotation to add: 90, 180 or 270.
    pub degrees: Degrees,
    /// Pages to rotate (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    pub pages: Option<String>,
    /// How to deliver the result.
    #[serde(default)]
    pub output: OutputMode,
}

/// A quarter-turn multiple: 90, 180 or 270 (-90 is read as 270).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(try_from = "i64")]
pub struct Degrees(pub i64);

impl TryFrom<i64> for Degrees {
    type Error = String;
    fn try_from(value: i64) -> Result<Self, Self::Error> {
        match value {
            90 | 180 | 270 => Ok(Degrees(value)),
            -90 => Ok(Degrees(270)),
            _ => Err(format!("degrees must be 90, 180 or 270, not {value}")),
        }
    }
}

impl JsonSchema for Degrees {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Degrees".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "integer",
            "enum": [90, 180, 270],
            "description": "Clockwise rotation in degrees."
        })
    }
}

/// A checked rotate call.
pub struct Rotate {
    source: SourcePdf,
    pages: Vec<lopdf::ObjectId>,
    degrees: i64,
    output: OutputMode,
}

/// The route.
pub struct RotateRoute;

impl Route for RotateRoute {
    type Input = RotateInput;
    type Prepared = Rotate;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/rotate",
        operation: "rotate_pdf_pages",
        family: Family::Docs,
        summary: "Rotate pages by 90, 180 or 270 degrees",
        description: "Adds a clockwise rotation of 90, 180 or 270 degrees to every page or to a page selection. \
            The page content is untouched; the page's /Rotate is changed, so text stays selectable. output=url gives a 24 h link.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
    };

    async fn prepare(input: RotateInput, ctx: &Context) -> Result<Rotate, EngineError> {
        let selection = PageSelection::parse_or_all(input.pages.as_deref(), "/pages")?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let pages = source.selected_pages(&selection, "/pages")?.into_iter().map(|(_, id)| id).collect();
        Ok(Rotate { source, pages, degrees: input.degrees.0, output: input.output })
    }

    fn quote(call: &Rotate) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: Rotate, _ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let Rotate { mut source, pages, degrees, output } = call;
            for id in pages {
                let current = pdf::rotation(&source.doc, id);
                let page = source.doc.get_dictionary_mut(id).map_err(|e| pdf::edit_error("rotating", e))?;
                page.set("Rotate", (current + degrees).rem_euclid(360));
            }
            source.into_reply("rotated", output)
        })
        .await
    }
}
