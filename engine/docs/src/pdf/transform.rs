//! PDF-in, PDF-out operations as transforms of a document in memory: what a route
//! like rotate or watermark does once its file is loaded, and what `/v1/pdf/pipeline`
//! chains without writing the PDF out between steps.
//!
//! A transform says what its options are (the route's fields besides `file` and
//! `output`), checks them in two stages (against the page count, which the pipeline
//! knows for every step before anything runs, then against the document itself), and
//! edits. [`TransformRoute`] turns a transform into a route; [`StepKind`] into a
//! pipeline step.

use std::marker::PhantomData;

use lopdf::Document;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, DeserializeOwned, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::catalog::{Route, RouteInfo, parse_value};
use crate::context::{Context, Limits, blocking};
use crate::docs::page_edit_price;
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// A document between two steps: parsed, or bytes a qpdf- or pdfium-based step wrote
/// (parsed again only if another step follows).
// Moved once a step; boxing the document would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Pdf {
    /// A parsed, unencrypted document.
    Doc(Document),
    /// A complete PDF file.
    Bytes(Vec<u8>),
}

impl Pdf {
    /// The document, parsed if needed.
    pub fn into_doc(self, limits: &Limits) -> Result<Document, EngineError> {
        match self {
            Pdf::Doc(doc) => Ok(doc),
            Pdf::Bytes(bytes) => pdf::open(&bytes, None, limits),
        }
    }

    /// The file, written if needed.
    pub fn into_bytes(self) -> Result<Vec<u8>, EngineError> {
        match self {
            Pdf::Doc(mut doc) => pdf::save(&mut doc),
            Pdf::Bytes(bytes) => Ok(bytes),
        }
    }
}

/// A PDF-in, PDF-out operation.
pub trait Transform: Send + Sync + 'static {
    /// The route's fields besides `file` and `output`; errors name them from the root
    /// (`/pages`), and the pipeline nests them under the step (`/steps/2/pages`).
    type Options: DeserializeOwned + JsonSchema + Send + 'static;
    /// The options checked against the document: what [`Transform::apply`] needs.
    type Plan: Send + 'static;

    /// The route's description.
    const INFO: RouteInfo;
    /// The output's name: `<input>-<suffix>.pdf`.
    const SUFFIX: &'static str;
    /// Whether nothing may follow this step in a pipeline (its output is encrypted).
    const LAST: bool = false;

    /// JSON Schema of the options as a pipeline step: the route's own, unless a step takes
    /// less than the route.
    fn step_schema(generator: &mut SchemaGenerator) -> Schema {
        Self::Options::json_schema(generator)
    }

    /// Checks what needs only the options and the number of pages the step receives;
    /// answers the number of pages it leaves. By default nothing to check, pages kept.
    fn check(options: &Self::Options, pages: u32, limits: &Limits) -> Result<u32, EngineError> {
        let _ = (options, limits);
        Ok(pages)
    }

    /// Checks the options against the document the step receives.
    fn plan(options: Self::Options, doc: &Document, limits: &Limits) -> Result<Self::Plan, EngineError>;

    /// Edits the document.
    fn apply(plan: Self::Plan, doc: Document, limits: &Limits) -> Result<Pdf, EngineError>;

    /// The price of the step, from the pages it receives and leaves.
    fn price(pages_in: u32, pages_out: u32) -> Price {
        page_edit_price(pages_in.max(pages_out))
    }
}

/// The request of a transform's route: `file`, the transform's options, `output`.
pub struct PdfJob<O> {
    /// The PDF.
    pub file: FileInput,
    /// The operation's own fields.
    pub options: O,
    /// How to deliver the result.
    pub output: OutputMode,
}

impl<'de, O: Deserialize<'de>> Deserialize<'de> for PdfJob<O> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(JobVisitor(PhantomData))
    }
}

struct JobVisitor<O>(PhantomData<O>);

impl<'de, O: Deserialize<'de>> Visitor<'de> for JobVisitor<O> {
    type Value = PdfJob<O>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PdfJob<O>, A::Error> {
        let mut split = SplitFields { map, file: None, output: None };
        // The options see every key but `file` and `output`, so their own checks
        // (unknown fields, missing ones) apply as if they were the whole body.
        let options = O::deserialize(de::value::MapAccessDeserializer::new(&mut split))?;
        // The options may stop reading early only by failing; drain what is left anyway.
        while split.next_key_seed(std::marker::PhantomData::<de::IgnoredAny>)?.is_some() {
            split.next_value::<de::IgnoredAny>()?;
        }
        let file = split.file.ok_or_else(|| de::Error::missing_field("file"))?;
        Ok(PdfJob { file, options, output: split.output.unwrap_or_default() })
    }
}

/// A map that takes `file` and `output` for itself and hands every other entry on.
struct SplitFields<A> {
    map: A,
    file: Option<FileInput>,
    output: Option<OutputMode>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for SplitFields<A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(key) = self.map.next_key::<String>()? else { return Ok(None) };
            match key.as_str() {
                "file" if self.file.is_some() => return Err(de::Error::duplicate_field("file")),
                "file" => self.file = Some(self.map.next_value()?),
                "output" if self.output.is_some() => return Err(de::Error::duplicate_field("output")),
                "output" => self.output = Some(self.map.next_value()?),
                _ => return seed.deserialize(key.into_deserializer()).map(Some),
            }
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

impl<O: JsonSchema> JsonSchema for PdfJob<O> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        let name = O::schema_name();
        match name.strip_suffix("Options") {
            Some(stem) => format!("{stem}Input").into(),
            None => format!("{name}Job").into(),
        }
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = O::json_schema(generator);
        let file = generator.subschema_for::<FileInput>();
        let output = generator.subschema_for::<OutputMode>();
        let object = schema.ensure_object();
        // `file` first, the options, `output` last: the order people read them in.
        prepend_property(object, "file", with_description(file, "The PDF."), true);
        let mut output = with_description(output, "How to deliver the result.");
        if let serde_json::Value::Object(map) = &mut output {
            map.insert("default".into(), "file".into());
        }
        if let Some(serde_json::Value::Object(properties)) = object.get_mut("properties") {
            properties.insert("output".into(), output);
        }
        // "Fields of `/v1/pdf/rotate` besides …" describes the options; the whole is the request.
        if let Some(serde_json::Value::String(text)) = object.remove("description") {
            let text = match text.strip_prefix("Fields of ").and_then(|t| t.split_once(" besides")) {
                Some((path, _)) => format!("Request of {path}."),
                None => text,
            };
            object.insert("description".into(), text.into());
        }
        schema
    }
}

/// Puts property `name` first in an object schema's `properties` (and, when `required`,
/// first in its `required` list): the request of a transform route, a pipeline step's `op`.
pub fn prepend_property(
    object: &mut serde_json::Map<String, serde_json::Value>,
    name: &str,
    schema: serde_json::Value,
    required: bool,
) {
    let mut properties = serde_json::Map::new();
    properties.insert(name.into(), schema);
    if let Some(serde_json::Value::Object(own)) = object.remove("properties") {
        properties.extend(own);
    }
    object.insert("properties".into(), properties.into());
    if required {
        let mut names = vec![serde_json::Value::from(name)];
        if let Some(serde_json::Value::Array(own)) = object.remove("required") {
            names.extend(own);
        }
        object.insert("required".into(), names.into());
    }
}

fn with_description(schema: Schema, text: &str) -> serde_json::Value {
    let mut value = schema.to_value();
    if let serde_json::Value::Object(map) = &mut value {
        if map.contains_key("$ref") {
            // A `$ref` with siblings is valid in 3.1 / 2020-12; the description helps readers.
            map.insert("description".into(), text.into());
        } else {
            map.entry("description").or_insert_with(|| text.into());
        }
    }
    value
}

/// A transform served as a route of its own.
pub struct TransformRoute<T>(PhantomData<fn() -> T>);

/// A checked call of a transform's route.
pub struct Prepared<T: Transform> {
    source: SourcePdf,
    plan: T::Plan,
    pages_out: u32,
    output: OutputMode,
}

impl<T: Transform> Route for TransformRoute<T> {
    type Input = PdfJob<T::Options>;
    type Prepared = Prepared<T>;
    type Output = NoJson;

    const INFO: RouteInfo = T::INFO;

    async fn prepare(input: PdfJob<T::Options>, ctx: &Context) -> Result<Prepared<T>, EngineError> {
        let limits = ctx.limits;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        let options = input.options;
        let (source, plan, pages_out) = blocking(move || {
            let pages_out = T::check(&options, source.page_count, &limits)?;
            let plan = T::plan(options, &source.doc, &limits)?;
            Ok((source, plan, pages_out))
        })
        .await?;
        Ok(Prepared { source, plan, pages_out, output: input.output })
    }

    fn quote(call: &Prepared<T>) -> Price {
        T::price(call.source.page_count, call.pages_out)
    }

    async fn run(call: Prepared<T>, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let limits = ctx.limits;
        blocking(move || {
            let Prepared { source, plan, output, .. } = call;
            let bytes = T::apply(plan, source.doc, &limits)?.into_bytes()?;
            let name = derived_name(&source.filename, T::SUFFIX, "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output)))
        })
        .await
    }
}

/// A pipeline step's kind, with the transform's types erased.
pub trait ErasedStep: Send + Sync {
    /// The step's `op`: the route's last path segment.
    fn op(&self) -> &'static str;
    /// The route's description.
    fn info(&self) -> &'static RouteInfo;
    /// Whether nothing may follow the step.
    fn last(&self) -> bool;
    /// JSON Schema of the step's options.
    fn options_schema(&self, generator: &mut SchemaGenerator) -> Schema;
    /// Parses the options (errors name fields under `field`), checks them against the
    /// pages the step receives; answers the step, the pages it leaves, and its price.
    fn check(
        &self,
        options: serde_json::Value,
        field: &str,
        pages: u32,
        limits: &Limits,
    ) -> Result<(Box<dyn CheckedStep>, u32, Price), EngineError>;
}

/// A step whose options are checked, waiting for its document.
pub trait CheckedStep: Send {
    /// Checks the options against the document the step receives, and edits it.
    fn run(self: Box<Self>, doc: Document, limits: &Limits) -> Result<Pdf, EngineError>;
}

/// Transform `T` as a pipeline step.
pub struct StepKind<T>(PhantomData<fn() -> T>);

impl<T: Transform> StepKind<T> {
    /// The step kind, boxed for the pipeline's table.
    pub fn boxed() -> Box<dyn ErasedStep> {
        Box::new(StepKind::<T>(PhantomData))
    }
}

struct Checked<T: Transform>(T::Options);

impl<T: Transform> CheckedStep for Checked<T> {
    fn run(self: Box<Self>, doc: Document, limits: &Limits) -> Result<Pdf, EngineError> {
        let plan = T::plan(self.0, &doc, limits)?;
        T::apply(plan, doc, limits)
    }
}

impl<T: Transform> ErasedStep for StepKind<T> {
    fn op(&self) -> &'static str {
        T::INFO.path.rsplit('/').next().unwrap_or(T::INFO.path)
    }

    fn info(&self) -> &'static RouteInfo {
        &T::INFO
    }

    fn last(&self) -> bool {
        T::LAST
    }

    fn options_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        T::step_schema(generator)
    }

    fn check(
        &self,
        options: serde_json::Value,
        field: &str,
        pages: u32,
        limits: &Limits,
    ) -> Result<(Box<dyn CheckedStep>, u32, Price), EngineError> {
        let options: T::Options = parse_value(options, field)?;
        let pages_out = T::check(&options, pages, limits).map_err(|e| e.under(field))?;
        Ok((Box::new(Checked::<T>(options)), pages_out, T::price(pages, pages_out)))
    }
}
