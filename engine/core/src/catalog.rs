//! The route catalog: every route's definition in one place, and the type-erased table
//! the front doors are generated from.
//!
//! A route is a type implementing [`Route`] in its own file. The chain crate's and the
//! documents crate's `register` functions add theirs to a [`Catalog`], and
//! `paperchain_engine::catalog::standard` makes the catalog of both; nothing else anywhere
//! names a route. A route that keeps state between calls
//! (an upstream client, a cache) keeps it in the context's
//! [`RouteState`](crate::context::RouteState), made on its first use.
//!
//! Every call, whichever door it came through, goes the same way ([`RouteEntry`]):
//! 1. the JSON body is parsed into the route's `Input` ([`parse_body`]): unknown fields
//!    are refused (every request type is `deny_unknown_fields`), an error names its field
//!    as a JSON pointer (`/files/1/pages`), and whole numbers written with a fraction
//!    (`326.0`) are read as integers, as JSON Schema's `integer` allows;
//! 2. [`Route::prepare`] checks every field and loads what the input refers to (files
//!    decoded or fetched, documents opened, page selections resolved): every input error
//!    is found here, before any work or payment;
//! 3. [`Route::quote`] prices the prepared input exactly (what the hosted paywall
//!    charges); an input that does not prepare is quoted at the route's base price;
//! 4. [`Route::run`] does the work.
//!
//! A route states only where it differs from the defaults: [`Route::HEAVY`] for heavy
//! work, which waits for a turn at the context's work gate (a door may take the call's
//! place before it reads the body: [`RouteEntry::admit`]), and [`Route::FILE_TYPES`] for a
//! file answer that is not a PDF. Every published schema (OpenAPI, the x402 listing, the
//! MCP tools) is generated with [`published_settings`] (the configured chains, the range
//! of each fixed-size integer), so what it says a route accepts is what `prepare` accepts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::output::Reply;
use crate::price::Price;

/// The two route families; each has its own MCP endpoint and free pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Chain reads (`/v1/chain`, `/v1/check`, `/v1/defi`, `/v1/solana`).
    Chain,
    /// Document operations (`/v1/pdf`, `/v1/docs`, `/v1/ocr`).
    Docs,
}

impl Family {
    /// The lower-case name used in URLs and documents.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Chain => "chain",
            Family::Docs => "docs",
        }
    }
}

/// Which daily free pool a route draws from in hosted mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FreePool {
    /// 10 calls per IP per UTC day, shared by the chain read routes.
    ChainReads,
    /// 30 calls per IP per UTC day for the address risk check.
    AddressCheck,
    /// 10 calls per IP per UTC day, shared by the document routes.
    Docs,
}

impl FreePool {
    /// The pool's stable id.
    pub fn id(self) -> &'static str {
        match self {
            FreePool::ChainReads => "chain-reads",
            FreePool::AddressCheck => "address-check",
            FreePool::Docs => "docs",
        }
    }

    /// Calls per client IP per UTC day.
    pub fn daily_calls(self) -> u32 {
        match self {
            FreePool::ChainReads | FreePool::Docs => 10,
            FreePool::AddressCheck => 30,
        }
    }
}

/// What a successful call answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Produces {
    /// A JSON document.
    Json,
    /// One file (PDF and the like), delivered per the input's `output` field.
    File,
    /// Several files: a ZIP for `output: "file"`, a JSON list otherwise.
    Files,
    /// JSON for reads, a file for edits (chosen by the input).
    JsonOrFile,
    /// JSON for some actions, one or several files for others.
    JsonOrFiles,
}

impl Produces {
    /// Whether some input makes the route produce files (and so takes `output`).
    pub fn files(self) -> bool {
        !matches!(self, Produces::Json)
    }
}

/// Everything about a route except its types and code.
#[derive(Clone, Copy, Debug)]
pub struct RouteInfo {
    /// URL path, exactly as the spec lists it.
    pub path: &'static str,
    /// Operation name: MCP tool name, CLI operation, OpenAPI operationId.
    pub operation: &'static str,
    /// The family.
    pub family: Family,
    /// One line.
    pub summary: &'static str,
    /// A paragraph for people and agents.
    pub description: &'static str,
    /// Price of a missing or invalid input, and the least a valid one costs.
    pub base_price: Price,
    /// The price rule in words.
    pub price_rule: &'static str,
    /// The free pool in hosted mode.
    pub free_pool: FreePool,
    /// What a successful call answers.
    pub produces: Produces,
    /// Whether the route reads the network (chain nodes, upstream APIs, URL inputs).
    pub open_world: bool,
    /// Whether its input carries a secret of the caller's (a signing key and its password): a
    /// local server never sends such a call to the hosted service unless the call itself asks
    /// for `hosted`, and a file kept in the keyring never leaves the machine.
    pub holds_secrets: bool,
    /// The file types its file inputs take, as lower-case file name extensions (what the
    /// desktop app offers the route for); empty when it takes no file.
    pub accepts: &'static [&'static str],
}

/// Media types of the files routes answer with ([`Route::FILE_TYPES`]).
pub mod media {
    /// PDF.
    pub const PDF: &str = "application/pdf";
    /// A ZIP of several files.
    pub const ZIP: &str = "application/zip";
    /// A Word document.
    pub const DOCX: &str = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
    /// An Excel workbook.
    pub const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    /// A PowerPoint deck.
    pub const PPTX: &str = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
    /// Comma-separated values.
    pub const CSV: &str = "text/csv";
    /// Open Financial Exchange.
    pub const OFX: &str = "application/x-ofx";
    /// Quicken Interchange Format.
    pub const QIF: &str = "application/qif";
}

/// The file types routes take ([`RouteInfo::accepts`]).
pub mod accepts {
    /// No file: chain reads, builders from JSON, inputs by URL only.
    pub const NONE: &[&str] = &[];
    /// PDF.
    pub const PDF: &[&str] = &["pdf"];
    /// What LibreOffice converts: Word, Excel, PowerPoint (with macros too), OpenDocument,
    /// the 97-2003 formats and RTF.
    pub const OFFICE: &[&str] =
        &["docx", "docm", "xlsx", "xlsm", "pptx", "pptm", "odt", "ods", "odp", "odg", "doc", "xls", "ppt", "rtf"];
    /// What becomes Markdown.
    pub const TO_MARKDOWN: &[&str] =
        &["pdf", "docx", "xlsx", "xlsm", "pptx", "html", "htm", "xhtml", "epub", "csv", "tsv"];
    /// A Word document.
    pub const DOCX: &[&str] = &["docx"];
    /// An Excel workbook.
    pub const XLSX: &[&str] = &["xlsx", "xlsm"];
    /// Images that become PDF pages.
    pub const IMAGES: &[&str] = &["png", "jpg", "jpeg", "webp"];
    /// A web page.
    pub const HTML: &[&str] = &["html", "htm", "xhtml"];
}

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A call's result as JSON or files, with the price of the work done when the route meters
/// it ([`Route::used`]).
type CallResult = Result<(Reply<serde_json::Value>, Option<Price>), EngineError>;

/// The deferred operation of a prepared call.
type RunOnce = Box<dyn FnOnce(Context) -> BoxFuture<'static, CallResult> + Send>;

/// One route: its description, types, price rule and operation.
pub trait Route: Send + Sync + 'static {
    /// The request body.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// The input once checked and loaded (files fetched and parsed): what is priced and run.
    type Prepared: Send + 'static;
    /// The JSON answer (for file-only routes, [`crate::output::NoJson`]).
    type Output: Serialize + JsonSchema + Send + 'static;

    /// Path, name, family, texts, price, pool.
    const INFO: RouteInfo;

    /// Most JSON values the body may hold ([`check_value_count`], before it is parsed). A
    /// route whose own reading bounds what it keeps may raise it (xlsx-build keeps cells up
    /// to its cell limit and only counts the rest, to name the sheet at fault).
    const MAX_BODY_VALUES: u64 = MAX_BODY_VALUES;

    /// Whether `run` is heavy work (rendering, compression, OCR, a conversion): it then
    /// waits for a turn at the context's [`crate::work_gate::WorkGate`], and past its queue
    /// the call is 503 `busy`.
    const HEAVY: bool = false;

    /// The media types of the file a call may answer with `output: "file"` (the first is
    /// the usual one): what the OpenAPI document lists beside JSON, and the x402 resource's
    /// `mimeType`. Routes whose several files come as one ZIP list `application/zip`.
    const FILE_TYPES: &'static [&'static str] = &[media::PDF];

    /// Checks the input and loads what it refers to. Every input error is found here.
    fn prepare(input: Self::Input, ctx: &Context) -> impl Future<Output = Result<Self::Prepared, EngineError>> + Send;

    /// Whether the cost of a call is known only after it ran ([`Route::used`]); its quote is
    /// then the most it can cost. A hosted service may offer to charge what was used.
    const METERED: bool = false;

    /// The exact price of this (valid) input; for a metered route ([`Route::METERED`]), the
    /// most the call can cost.
    fn quote(prepared: &Self::Prepared) -> Price;

    /// For a metered route, the price of the work this run did, known only once it has run
    /// (OCR's pages where words were found): what a payer who authorized up to the quote is
    /// charged. Never more than the quote (the catalog caps it). `None`: the quote.
    fn used(_reply: &Reply<Self::Output>) -> Option<Price> {
        None
    }

    /// Runs the operation.
    fn run(
        prepared: Self::Prepared,
        ctx: &Context,
    ) -> impl Future<Output = Result<Reply<Self::Output>, EngineError>> + Send;
}

/// A checked, priced call, ready to run.
pub struct PreparedCall {
    price: Price,
    run: RunOnce,
}

impl PreparedCall {
    /// The exact price of this call.
    pub fn price(&self) -> Price {
        self.price
    }

    /// Runs the operation.
    pub async fn run(self, ctx: Context) -> Result<Reply<serde_json::Value>, EngineError> {
        Ok((self.run)(ctx).await?.0)
    }

    /// Runs the operation and prices the work it did: for a metered route, what it used
    /// (never more than [`PreparedCall::price`]); for others, the price.
    pub async fn run_metered(self, ctx: Context) -> Result<(Reply<serde_json::Value>, Price), EngineError> {
        let quote = self.price;
        let (reply, used) = (self.run)(ctx).await?;
        Ok((reply, used.map_or(quote, |used| used.min(quote))))
    }
}

trait ErasedRoute: Send + Sync {
    fn input_schema(&self, generator: &mut SchemaGenerator) -> Schema;
    fn output_schema(&self, generator: &mut SchemaGenerator) -> Schema;
    fn prepare<'a>(
        &'a self,
        admission: Admission,
        body: &'a [u8],
        ctx: &'a Context,
    ) -> BoxFuture<'a, Result<PreparedCall, EngineError>>;
}

struct Erased<R: Route>(std::marker::PhantomData<fn() -> R>);

impl<R: Route> ErasedRoute for Erased<R> {
    fn input_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<R::Input>()
    }

    fn output_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<R::Output>()
    }

    fn prepare<'a>(
        &'a self,
        admission: Admission,
        body: &'a [u8],
        ctx: &'a Context,
    ) -> BoxFuture<'a, Result<PreparedCall, EngineError>> {
        Box::pin(async move {
            // A heavy call holds its place from before its body is parsed to the end of
            // its run; one that came without a place takes one now.
            let ticket = match admission.0 {
                Some(ticket) => Some(ticket),
                None if R::HEAVY => Some(Arc::new(ctx.heavy.admit()?)),
                None => None,
            };
            check_value_count(body, R::MAX_BODY_VALUES)?;
            check_object(body)?;
            let input: R::Input = parse_body(body)?;
            let prepared = R::prepare(input, ctx).await?;
            let price = R::quote(&prepared);
            let run = Box::new(move |ctx: Context| -> BoxFuture<'static, _> {
                Box::pin(async move {
                    // The place is kept until the call's last work has ended (a thread
                    // still stopping after a time-out included), not until it answers.
                    let _kept_here = match ticket {
                        Some(ticket) => {
                            let turn = ticket.turn().await?;
                            crate::cancel::hold((ticket, turn))
                        }
                        None => None,
                    };
                    crate::cancel::check()?;
                    let reply = R::run(prepared, &ctx).await?;
                    let used = if R::METERED { R::used(&reply) } else { None };
                    let reply = match reply {
                        Reply::Json(value) => serde_json::to_value(value)
                            .map(Reply::Json)
                            .map_err(|e| EngineError::internal(format!("encoding the answer: {e}")))?,
                        Reply::Files(files) => Reply::Files(files),
                    };
                    Ok((reply, used))
                })
            });
            Ok(PreparedCall { price, run })
        })
    }
}

/// A call's place at the heavy-work gate, taken before its body is read
/// ([`RouteEntry::admit`]); the default holds none (a light route, or a heavy call to be
/// admitted when it is prepared). Clones share the one place, given back when the last goes.
#[derive(Clone, Debug, Default)]
pub struct Admission(Option<Arc<crate::work_gate::Ticket>>);

/// A route in the catalog.
pub struct RouteEntry {
    info: RouteInfo,
    heavy: bool,
    metered: bool,
    file_types: &'static [&'static str],
    route: Box<dyn ErasedRoute>,
}

impl RouteEntry {
    /// The route's description.
    pub fn info(&self) -> &RouteInfo {
        &self.info
    }

    /// Whether the route's operation is heavy work ([`Route::HEAVY`]), run under the
    /// context's bound and refused with 503 `busy` past its queue.
    pub fn heavy(&self) -> bool {
        self.heavy
    }

    /// Whether a call's cost is known only after it ran ([`Route::METERED`]): its quote is
    /// the most it costs, and [`PreparedCall::run_metered`] prices what it used.
    pub fn metered(&self) -> bool {
        self.metered
    }

    /// The media types of the file a call may answer with ([`Route::FILE_TYPES`]); empty for
    /// a route that answers JSON only.
    pub fn file_types(&self) -> &'static [&'static str] {
        if self.info.produces.files() { self.file_types } else { &[] }
    }

    /// JSON Schema of the request body.
    pub fn input_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        self.route.input_schema(generator)
    }

    /// JSON Schema of the JSON answer.
    pub fn output_schema(&self, generator: &mut SchemaGenerator) -> Schema {
        self.route.output_schema(generator)
    }

    /// A place for one call of this route before its body is read: for a heavy route, a
    /// place at the context's [`crate::work_gate::WorkGate`] or 503 `busy` at once (so a
    /// refused call costs no upload); for others, nothing to wait for.
    pub fn admit(&self, ctx: &Context) -> Result<Admission, EngineError> {
        match self.heavy {
            true => Ok(Admission(Some(Arc::new(ctx.heavy.admit()?)))),
            false => Ok(Admission::default()),
        }
    }

    /// Parses and checks a JSON body and loads what it refers to; the result carries
    /// the exact price. A failure here is an input error (or an upstream one for URLs).
    pub async fn prepare(&self, body: &[u8], ctx: &Context) -> Result<PreparedCall, EngineError> {
        self.route.prepare(Admission::default(), body, ctx).await
    }

    /// [`RouteEntry::prepare`] for a call admitted by [`RouteEntry::admit`].
    pub async fn prepare_admitted(
        &self,
        admission: Admission,
        body: &[u8],
        ctx: &Context,
    ) -> Result<PreparedCall, EngineError> {
        self.route.prepare(admission, body, ctx).await
    }

    /// What the hosted service asks for this body: the exact price of a valid input, or
    /// the route's base price together with what is wrong with the input.
    pub async fn quote(&self, body: &[u8], ctx: &Context) -> (Price, Result<PreparedCall, EngineError>) {
        self.quote_admitted(Admission::default(), body, ctx).await
    }

    /// [`RouteEntry::quote`] for a call admitted by [`RouteEntry::admit`].
    pub async fn quote_admitted(
        &self,
        admission: Admission,
        body: &[u8],
        ctx: &Context,
    ) -> (Price, Result<PreparedCall, EngineError>) {
        match self.prepare_admitted(admission, body, ctx).await {
            Ok(call) => (call.price(), Ok(call)),
            Err(error) => (self.info.base_price, Err(error)),
        }
    }

    /// Prepares and runs in one step (local mode, CLI).
    pub async fn call(&self, body: &[u8], ctx: &Context) -> Result<Reply<serde_json::Value>, EngineError> {
        self.prepare(body, ctx).await?.run(ctx.clone()).await
    }
}

/// Every route, in a stable order.
pub struct Catalog {
    routes: Vec<RouteEntry>,
}

impl Catalog {
    /// A catalog without routes, for `register` functions to fill.
    pub fn empty() -> Catalog {
        Catalog { routes: Vec::new() }
    }

    /// Adds route `R`. Panics on a duplicate path or operation: that is a defect in the
    /// catalog's source, caught by the catalog's own tests.
    pub fn add<R: Route>(&mut self) {
        let info = R::INFO;
        assert!(
            !self.routes.iter().any(|r| r.info.path == info.path || r.info.operation == info.operation),
            "duplicate route {} / {}",
            info.path,
            info.operation
        );
        self.routes.push(RouteEntry {
            info,
            heavy: R::HEAVY,
            metered: R::METERED,
            file_types: R::FILE_TYPES,
            route: Box::new(Erased::<R>(std::marker::PhantomData)),
        });
    }

    /// All routes.
    pub fn routes(&self) -> impl Iterator<Item = &RouteEntry> {
        self.routes.iter()
    }

    /// The route at `path`.
    pub fn by_path(&self, path: &str) -> Option<&RouteEntry> {
        self.routes.iter().find(|r| r.info.path == path)
    }

    /// The route named `operation`.
    pub fn by_operation(&self, operation: &str) -> Option<&RouteEntry> {
        self.routes.iter().find(|r| r.info.operation == operation)
    }
}

/// `base` with what published schemas take from the deployment's configuration (the chains
/// a `chain` field accepts). Every schema export (OpenAPI, listings, MCP tools) builds its
/// generator from these settings, so that what it publishes is what `prepare` accepts.
pub fn published_settings(base: SchemaSettings, ctx: &Context) -> SchemaSettings {
    base.with_transform(ctx.chains.published()).with_transform(IntegerBounds)
}

/// Gives the schemas of Rust's fixed-size integers (`format: uint32` and the like) the
/// range the field holds, where they state no narrower one: a client that keeps to the
/// schema never sends a number the field cannot take.
#[derive(Clone, Debug)]
struct IntegerBounds;

impl schemars::transform::Transform for IntegerBounds {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(object) = schema.as_object_mut() {
            let bounds: Option<(serde_json::Value, serde_json::Value)> =
                match object.get("format").and_then(serde_json::Value::as_str) {
                    Some("uint8") => Some((0.into(), u8::MAX.into())),
                    Some("uint16") => Some((0.into(), u16::MAX.into())),
                    Some("uint32") => Some((0.into(), u32::MAX.into())),
                    Some("uint64") | Some("uint") => Some((0.into(), u64::MAX.into())),
                    Some("int8") => Some((i8::MIN.into(), i8::MAX.into())),
                    Some("int16") => Some((i16::MIN.into(), i16::MAX.into())),
                    Some("int32") => Some((i32::MIN.into(), i32::MAX.into())),
                    Some("int64") | Some("int") => Some((i64::MIN.into(), i64::MAX.into())),
                    _ => None,
                };
            if let Some((min, max)) = bounds {
                object.entry("minimum").or_insert(min);
                object.entry("maximum").or_insert(max);
            }
        }
        schemars::transform::transform_subschemas(self, schema);
    }
}

/// Writes each number of `value` that has no fraction (`326.0`) and fits an integer as that
/// integer: JSON Schema's `integer` takes `326.0`, so the fields that hold integers do too.
/// Answers whether anything changed.
fn whole_numbers(value: &mut serde_json::Value) -> bool {
    match value {
        serde_json::Value::Number(number) if number.is_f64() => {
            let x = number.as_f64().unwrap_or(f64::NAN);
            // 2^63: every whole number below it in magnitude is an exact i64.
            if x.fract() == 0.0 && x.abs() < 9.223_372_036_854_776e18 {
                *value = serde_json::Value::from(x as i64);
                true
            } else {
                false
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().fold(false, |changed, item| whole_numbers(item) | changed),
        serde_json::Value::Object(map) => map.values_mut().fold(false, |changed, item| whole_numbers(item) | changed),
        _ => false,
    }
}

/// Most JSON values a route's body may hold unless it says otherwise
/// ([`Route::MAX_BODY_VALUES`]).
pub const MAX_BODY_VALUES: u64 = 1_000_000;

/// Refuses a body of more than `max` JSON values (each number, string, `true`, `false`,
/// `null`, list and object counts one) with 413 `too_many_values`, before it is parsed:
/// the count is taken by reading the body once without keeping anything, so a refused
/// body costs no more than its own bytes. A body that is not JSON passes here and is
/// refused by the parser, which says where.
pub fn check_value_count(body: &[u8], max: u64) -> Result<(), EngineError> {
    if BodyShape::of(body, max).over {
        return Err(EngineError::too_large(
            "too_many_values",
            None,
            format!(
                "the body holds more than {max} JSON values (numbers, strings, lists, objects), more than this route \
                 takes; send less per call"
            ),
        ));
    }
    Ok(())
}

/// Refuses a body that is JSON but not an object (`[]`, `"x"`, `1`): every route's request
/// is an object, and the parser would take a list for one, field by field. A body that is
/// not JSON at all is left to the parser, which says where it breaks.
pub fn check_object(body: &[u8]) -> Result<(), EngineError> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        None | Some(b'{') => Ok(()),
        Some(_) if serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok() => Err(EngineError::invalid_with(
            "invalid_input",
            "",
            "the body must be a JSON object ({…}), as the route's schema says",
        )),
        Some(_) => Ok(()),
    }
}

/// What one pass over a body that keeps nothing finds.
#[derive(Default)]
struct BodyShape {
    /// More values than the most counted.
    over: bool,
    /// A whole number written with a fraction (`326.0`), before the count stopped.
    whole_fraction: bool,
}

impl BodyShape {
    /// The shape of `body`, counting at most `max` values.
    fn of(body: &[u8], max: u64) -> BodyShape {
        let mut left = max;
        let mut shape = BodyShape::default();
        let mut de = serde_json::Deserializer::from_slice(body);
        let _ = serde::de::DeserializeSeed::deserialize(ValueCounter { left: &mut left, shape: &mut shape }, &mut de);
        shape
    }
}

/// Counts the values it reads against `left`, keeping none; notes `over` and stops past it.
struct ValueCounter<'a> {
    left: &'a mut u64,
    shape: &'a mut BodyShape,
}

impl ValueCounter<'_> {
    fn take<E: serde::de::Error>(&mut self) -> Result<(), E> {
        match self.left.checked_sub(1) {
            Some(left) => {
                *self.left = left;
                Ok(())
            }
            None => {
                self.shape.over = true;
                Err(E::custom("too many values"))
            }
        }
    }

    fn again(&mut self) -> ValueCounter<'_> {
        ValueCounter { left: &mut *self.left, shape: &mut *self.shape }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for ValueCounter<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueCounter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: serde::de::Error>(mut self, _: bool) -> Result<(), E> {
        self.take()
    }

    fn visit_i64<E: serde::de::Error>(mut self, _: i64) -> Result<(), E> {
        self.take()
    }

    fn visit_u64<E: serde::de::Error>(mut self, _: u64) -> Result<(), E> {
        self.take()
    }

    fn visit_f64<E: serde::de::Error>(mut self, x: f64) -> Result<(), E> {
        self.shape.whole_fraction |= x.fract() == 0.0;
        self.take()
    }

    fn visit_str<E: serde::de::Error>(mut self, _: &str) -> Result<(), E> {
        self.take()
    }

    fn visit_unit<E: serde::de::Error>(mut self) -> Result<(), E> {
        self.take()
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.take()?;
        while seq.next_element_seed(self.again())?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.take()?;
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(self.again())?;
        }
        Ok(())
    }
}

/// Parses a JSON body into `T`, naming the field at fault as a JSON pointer.
fn parse_body_exact<T: DeserializeOwned>(body: &[u8]) -> Result<T, EngineError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        // serde_json reports a value of the wrong kind for an enum (a number where a name
        // is expected) as a syntax error; in a body that parses, it is the field's fault.
        let well_formed = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
        body_error(&err, well_formed)
    })?;
    de.end().map_err(|e| EngineError::invalid_with("invalid_json", "", format!("the body is not valid JSON: {e}")))?;
    Ok(value)
}

/// `parse_body_exact` (unknown fields refused, numbers as written), then, when that fails on a body with whole numbers written with a
/// fraction (`326.0`), the same body with those numbers as integers.
pub fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, EngineError> {
    parse_body_exact(body).or_else(|err| {
        // Read again as JSON values only when that can mend the body (it has a whole number
        // written with a fraction) and it is small enough to hold as values.
        let shape = BodyShape::of(body, MAX_BODY_VALUES);
        if shape.over || !shape.whole_fraction {
            return Err(err);
        }
        let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(body) else { return Err(err) };
        if !whole_numbers(&mut value) {
            return Err(err);
        }
        serde_path_to_error::deserialize(value).map_err(|_| err)
    })
}

/// Parses a part of a body already read as JSON (a pipeline step's options) into `T`;
/// errors name the field under `prefix` (`/steps/2` + `/degrees`).
pub fn parse_value<T: DeserializeOwned>(mut value: serde_json::Value, prefix: &str) -> Result<T, EngineError> {
    whole_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|err| body_error(&err, true).under(prefix))
}

fn body_error(err: &serde_path_to_error::Error<serde_json::Error>, well_formed: bool) -> EngineError {
    let inner = err.inner();
    if !inner.is_data() && !well_formed {
        let mut e =
            EngineError::new(ErrorKind::InvalidInput, "invalid_json", format!("the body is not valid JSON: {inner}"));
        e.field = None;
        return e;
    }
    let mut pointer = String::new();
    for segment in err.path().iter() {
        use serde_path_to_error::Segment;
        match segment {
            Segment::Seq { index } => pointer.push_str(&format!("/{index}")),
            Segment::Map { key } => pointer.push_str(&format!("/{}", escape_pointer(key))),
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    let text = inner.to_string();
    // serde names missing and unknown fields in the message, at the parent's path.
    let (code, named) = if let Some(name) = quoted_after(&text, "unknown field `") {
        ("unknown_field", Some(name))
    } else {
        ("invalid_input", quoted_after(&text, "missing field `"))
    };
    if let Some(name) = named
        && !pointer.ends_with(&format!("/{}", escape_pointer(&name)))
    {
        pointer.push_str(&format!("/{}", escape_pointer(&name)));
    }
    let message = if inner.is_data() {
        strip_position(&text)
    } else {
        // A well-formed body whose value serde_json could not start reading: an enum given
        // something other than its name.
        "wrong type: this field takes one of its names, as a string".to_string()
    };
    let message = if pointer.is_empty() { message } else { format!("{pointer}: {message}") };
    EngineError::invalid_with(code, pointer, message)
}

fn quoted_after(text: &str, prefix: &str) -> Option<String> {
    let start = text.find(prefix)? + prefix.len();
    let end = text[start..].find('`')?;
    Some(text[start..start + end].to_string())
}

/// serde_json appends " at line 1 column 42"; a field pointer says more.
fn strip_position(text: &str) -> String {
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text.to_string(),
    }
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        pages: String,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        files: Vec<Inner>,
        degrees: u32,
        #[serde(default)]
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
    }

    fn err(body: &str) -> EngineError {
        parse_body::<Outer>(body.as_bytes()).unwrap_err()
    }

    #[test]
    fn names_missing_fields() {
        let e = err(r#"{"files": []}"#);
        assert_eq!(e.field.as_deref(), Some("/degrees"));
        assert_eq!(e.code, "invalid_input");
        let e = err(r#"{"files": [{}], "degrees": 90}"#);
        assert_eq!(e.field.as_deref(), Some("/files/0/pages"));
    }

    #[test]
    fn names_unknown_fields() {
        let e = err(r#"{"files": [{"pages": "1", "color": 1}], "degrees": 90}"#);
        assert_eq!(e.code, "unknown_field");
        assert_eq!(e.field.as_deref(), Some("/files/0/color"));
    }

    #[test]
    fn names_wrong_types() {
        let e = err(r#"{"files": [], "degrees": "ninety"}"#);
        assert_eq!(e.field.as_deref(), Some("/degrees"));
        assert!(e.message.contains("invalid type"), "{}", e.message);
    }

    #[test]
    fn an_enum_given_a_number_names_its_field() {
        let e = err(r#"{"files": [], "degrees": 1, "mode": 3}"#);
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("invalid_input", Some("/mode")));
        assert!(e.message.starts_with("/mode: wrong type"), "{}", e.message);
        let e = err(r#"{"files": [], "degrees": 1, "mode": "slow"}"#);
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("invalid_input", Some("/mode")));
        // Broken JSON is still the body's fault, even where an enum was expected.
        assert_eq!(err(r#"{"files": [], "degrees": 1, "mode": ]"#).code, "invalid_json");
    }

    #[test]
    fn a_body_of_too_many_values_is_refused_before_it_is_parsed() {
        // 1 object + 1 list + 3 numbers.
        let body = br#"{"a": [1, 2, 3]}"#;
        assert!(check_value_count(body, 5).is_ok());
        let refused = check_value_count(body, 4).unwrap_err();
        assert_eq!((refused.code.as_ref(), refused.kind), ("too_many_values", ErrorKind::TooLarge));
        assert!(refused.message.contains("more than 4 JSON values"), "{}", refused.message);
        // Keys do not count; nested objects do.
        assert!(check_value_count(br#"{"a": {"b": null}}"#, 3).is_ok());
        assert!(check_value_count(br#"{"a": {"b": null}}"#, 2).is_err());
        // A body that is not JSON is the parser's to refuse, naming where.
        assert!(check_value_count(b"{\"a\": [1, 2", 100).is_ok());
    }

    #[test]
    fn a_body_must_be_an_object() {
        for body in ["[]", " [1, 2]", "\"text\"", "1", "null", "true"] {
            let refused = check_object(body.as_bytes()).unwrap_err();
            assert_eq!((refused.code.as_ref(), refused.field.as_deref()), ("invalid_input", Some("")), "{body}");
        }
        for body in ["{}", "  {\"a\": 1}", "", "[1,", "x"] {
            assert!(check_object(body.as_bytes()).is_ok(), "{body}: an object, or for the parser to refuse");
        }
    }

    #[test]
    fn a_body_is_read_again_only_when_a_whole_number_with_a_fraction_can_mend_it() {
        #[derive(Debug, Deserialize)]
        struct Whole {
            #[allow(dead_code)]
            n: u32,
        }
        assert!(parse_body::<Whole>(br#"{"n": 326.0}"#).is_ok());
        assert_eq!(parse_body::<Whole>(br#"{"n": 326.5}"#).unwrap_err().field.as_deref(), Some("/n"));
        assert_eq!(parse_body::<Whole>(br#"{"n": "326"}"#).unwrap_err().field.as_deref(), Some("/n"));
        let shape = BodyShape::of(br#"{"a": [1, 2.5], "b": "3.0"}"#, 10);
        assert!(!shape.over && !shape.whole_fraction, "a fraction, and text that reads like one");
        assert!(BodyShape::of(br#"[1, 2.0]"#, 10).whole_fraction);
        assert!(BodyShape::of(br#"[1, 2.0]"#, 2).over);
    }

    #[test]
    fn syntax_errors_are_invalid_json() {
        assert_eq!(err("{").code, "invalid_json");
        assert_eq!(err(r#"{"files": [], "degrees": 1} x"#).code, "invalid_json");
        assert_eq!(err("").code, "invalid_json");
    }

    /// A heavy route whose work ignores its stop signal until the test lets it go: what a
    /// step that cannot be interrupted (one long page) looks like to the gate.
    struct Stall;

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Nothing {}

    /// Lets the stalled work go.
    struct Release(std::sync::Mutex<std::sync::mpsc::Receiver<()>>);

    impl Route for Stall {
        type Input = Nothing;
        type Prepared = ();
        type Output = serde_json::Value;
        const INFO: RouteInfo = RouteInfo {
            path: "/v1/test/stall",
            operation: "stall",
            family: Family::Docs,
            summary: "Stalls",
            description: "Stalls until released.",
            base_price: Price::micros(1),
            price_rule: "fixed",
            free_pool: FreePool::Docs,
            produces: Produces::Json,
            open_world: false,
            holds_secrets: false,
            accepts: accepts::NONE,
        };
        const HEAVY: bool = true;

        async fn prepare(_: Nothing, _: &Context) -> Result<(), EngineError> {
            Ok(())
        }

        fn quote(_: &()) -> Price {
            Self::INFO.base_price
        }

        async fn run(_: (), ctx: &Context) -> Result<Reply<serde_json::Value>, EngineError> {
            let release = ctx.state.get::<Release>().expect("the test presets the release");
            crate::context::blocking(move || {
                let _ = release.0.lock().unwrap().recv();
                crate::cancel::check()?;
                Ok(Reply::Json(serde_json::json!({})))
            })
            .await
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_timed_out_call_keeps_its_place_until_its_work_has_stopped() {
        let mut ctx = Context::new();
        ctx.heavy = Arc::new(crate::work_gate::WorkGate::new(crate::work_gate::GateConfig { workers: 1, queue: 0 }));
        let (release, released) = std::sync::mpsc::channel();
        ctx.state.insert(Release(std::sync::Mutex::new(released)));
        let mut catalog = Catalog::empty();
        catalog.add::<Stall>();
        let route = catalog.by_operation("stall").unwrap();

        let stop = crate::cancel::Stop::new();
        let work = async { route.prepare(b"{}", &ctx).await?.run(ctx.clone()).await };
        let timed_out = crate::cancel::bounded(&stop, std::time::Duration::from_millis(50), work).await;
        assert_eq!(timed_out.unwrap_err().code, "timeout");
        assert_eq!(stop.why(), Some(crate::cancel::Why::TimedOut));

        // The call answered, its work still runs: the one place is still taken.
        assert_eq!(ctx.heavy.running(), 1);
        assert_eq!(route.admit(&ctx).unwrap_err().code, "busy");

        // Once the work has seen the signal and returned, the place is free again.
        release.send(()).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while ctx.heavy.is_full() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(ctx.heavy.running(), 0);
        route.admit(&ctx).expect("admitted once the work stopped");

        // A call never stopped runs to its end and gives its place back at once.
        release.send(()).unwrap();
        let done = crate::cancel::bounded(&crate::cancel::Stop::new(), std::time::Duration::from_secs(5), async {
            route.prepare(b"{}", &ctx).await?.run(ctx.clone()).await
        })
        .await;
        assert!(done.is_ok(), "{done:?}");
        assert!(!ctx.heavy.is_full());
    }
}
