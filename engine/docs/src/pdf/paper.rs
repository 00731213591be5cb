//! Paper sizes a caller names: the target of resize, the sheets of n-up and booklets,
//! the tiles and the finished size of a poster.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::error::EngineError;

/// The largest page side readers accept (ISO 32000's implementation limit), in points.
pub const MAX_SIDE: f64 = 14_400.0;

/// A page size: a paper name or a custom size in points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PageSize {
    /// A named paper size, portrait.
    Named(Paper),
    /// Any size in points.
    Custom(CustomSize),
}

/// The paper sizes known by name, each (name, width, height) in points, portrait.
const PAPERS: [(&str, f64, f64); 9] = [
    ("A0", 2383.937, 3370.394),
    ("A1", 1683.780, 2383.937),
    ("A2", 1190.551, 1683.780),
    ("A3", 841.890, 1190.551),
    ("A4", 595.276, 841.890),
    ("A5", 419.528, 595.276),
    ("Letter", 612.0, 792.0),
    ("Legal", 612.0, 1008.0),
    ("Tabloid", 792.0, 1224.0),
];

/// A paper size known by name (an index into [`PAPERS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paper(usize);

impl PageSize {
    /// ISO A4.
    pub const A4: PageSize = PageSize::Named(Paper(4));
    /// US Letter.
    pub const LETTER: PageSize = PageSize::Named(Paper(6));

    /// Width and height in points, portrait for the named sizes.
    pub fn points(self) -> (f64, f64) {
        match self {
            PageSize::Named(Paper(i)) => (PAPERS[i].1, PAPERS[i].2),
            PageSize::Custom(c) => (c.width_pt, c.height_pt),
        }
    }

    /// Refuses a custom size a reader would not take; errors name `field`'s members.
    pub fn check(self, field: &str) -> Result<(), EngineError> {
        if let PageSize::Custom(c) = self {
            for (name, value) in [("width_pt", c.width_pt), ("height_pt", c.height_pt)] {
                if !(1.0..=MAX_SIDE).contains(&value) {
                    let field = format!("{field}/{name}");
                    return Err(EngineError::invalid(
                        &field,
                        format!("{field}: must be 1 to 14400 points, not {value}"),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `size` as (width, height) with the shorter side first, or the longer.
pub fn turned(size: (f64, f64), landscape: bool) -> (f64, f64) {
    let (short, long) = (size.0.min(size.1), size.0.max(size.1));
    if landscape { (long, short) } else { (short, long) }
}

/// A custom page size in points (1/72 inch).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomSize {
    /// Width in points, 1 to 14400.
    #[schemars(range(min = 1, max = 14400))]
    pub width_pt: f64,
    /// Height in points, 1 to 14400.
    #[schemars(range(min = 1, max = 14400))]
    pub height_pt: f64,
}

fn names() -> String {
    let names: Vec<String> = PAPERS.iter().map(|(name, ..)| format!("`{name}`")).collect();
    names.join(", ")
}

impl<'de> Deserialize<'de> for PageSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SizeVisitor;

        impl<'de> Visitor<'de> for SizeVisitor {
            type Value = PageSize;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{} or {{\"width_pt\": …, \"height_pt\": …}}", names())
            }

            fn visit_str<E: de::Error>(self, value: &str) -> Result<PageSize, E> {
                PAPERS
                    .iter()
                    .position(|(name, ..)| name.eq_ignore_ascii_case(value.trim()))
                    .map(|i| PageSize::Named(Paper(i)))
                    .ok_or_else(|| {
                        E::custom(format!(
                            "unknown size `{value}`; use {} or {{\"width_pt\": …, \"height_pt\": …}}",
                            names()
                        ))
                    })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PageSize, A::Error> {
                CustomSize::deserialize(de::value::MapAccessDeserializer::new(map)).map(PageSize::Custom)
            }
        }

        deserializer.deserialize_any(SizeVisitor)
    }
}

impl JsonSchema for PageSize {
    fn schema_name() -> Cow<'static, str> {
        "PageSize".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let custom = generator.subschema_for::<CustomSize>();
        let named: Vec<&str> = PAPERS.iter().map(|(name, ..)| *name).collect();
        json_schema!({
            "description": "A paper name (A0 to A5; Letter 612 x 792 pt, Legal 612 x 1008, Tabloid 792 x 1224; A4 is 595.276 x 841.89) or a custom size in points.",
            "oneOf": [
                { "type": "string", "enum": named },
                custom
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_custom_sizes_read_and_check() {
        let a3: PageSize = serde_json::from_value(serde_json::json!("a3")).unwrap();
        assert_eq!(a3.points(), (841.890, 1190.551));
        assert_eq!(serde_json::from_value::<PageSize>(serde_json::json!("A4")).unwrap(), PageSize::A4);
        let err = serde_json::from_value::<PageSize>(serde_json::json!("B5")).unwrap_err().to_string();
        assert!(err.contains("unknown size `B5`") && err.contains("`Tabloid`"), "{err}");
        let custom: PageSize =
            serde_json::from_value(serde_json::json!({"width_pt": 100, "height_pt": 20000})).unwrap();
        let err = custom.check("/sheet").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("/sheet/height_pt"));
        assert_eq!(turned((10.0, 20.0), true), (20.0, 10.0));
        assert_eq!(turned((20.0, 10.0), false), (10.0, 20.0));
    }
}
