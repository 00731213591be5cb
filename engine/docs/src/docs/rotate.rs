//! `POST /v1/pdf/rotate`: rotate pages by 90, 180 or 270 degrees.

use schemars::JsonSchema;
use serde::Deserialize;

use lopdf::Document;

use crate::catalog::{Family, FreePool, Produces, RouteInfo};
use crate::context::Limits;
use crate::docs::PAGE_EDIT_PRICE_RULE;
use crate::error::EngineError;
use crate::pages::PageSelection;
use crate::pdf;
use crate::pdf::transform::{Pdf, Transform, TransformRoute};
use crate::price::Price;

/// Fields of `/v1/pdf/rotate` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateOptions {
    /// Clockwise rotation to add: 90, 180 or 270.
    pub degrees: Degrees,
    /// Pages to rotate (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
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

/// The operation.
pub struct Rotate;

/// The route.
pub type RotateRoute = TransformRoute<Rotate>;

impl Transform for Rotate {
    type Options = RotateOptions;
    type Plan = (Vec<lopdf::ObjectId>, i64);

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
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };
    const SUFFIX: &'static str = "rotated";

    fn check(options: &RotateOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?.resolve_set(pages, "/pages")?;
        Ok(pages)
    }

    fn plan(options: RotateOptions, doc: &Document, _: &Limits) -> Result<Self::Plan, EngineError> {
        let selection = PageSelection::parse_or_all(options.pages.as_deref(), "/pages")?;
        let pages = pdf::selected_pages(doc, &selection, "/pages")?.into_iter().map(|(_, id)| id).collect();
        Ok((pages, options.degrees.0))
    }

    fn apply((pages, degrees): Self::Plan, mut doc: Document, _: &Limits) -> Result<Pdf, EngineError> {
        for id in pages {
            let current = pdf::rotation(&doc, id);
            let page = doc.get_dictionary_mut(id).map_err(|e| pdf::edit_error("rotating", e))?;
            page.set("Rotate", (current + degrees).rem_euclid(360));
        }
        Ok(Pdf::Doc(doc))
    }
}
