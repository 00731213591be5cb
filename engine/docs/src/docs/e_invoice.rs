//! `POST /v1/pdf/e-invoice`: make a Factur-X / ZUGFeRD e-invoice: the invoice's PDF as
//! PDF/A-3b with its Cross Industry Invoice XML embedded, associated and described in the
//! XMP as the standard requires. The XML is checked first ([`facturx::check`]); the PDF/A
//! conversion is [`crate::pdf::pdfa`]'s.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::embedded_files::{Addition, add, remove_named};
use crate::pdf::pdfa::facturx::{self, InvoiceSummary};
use crate::pdf::pdfa::{self, Level};
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// The names other writers give the invoice XML; one already in the PDF is replaced.
const INVOICE_NAMES: [&str; 4] = ["factur-x.xml", "xrechnung.xml", "zugferd-invoice.xml", "ZUGFeRD-invoice.xml"];

/// Request of `/v1/pdf/e-invoice`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EInvoiceInput {
    /// The invoice as a PDF (what a person reads); made PDF/A-3b.
    pub file: FileInput,
    /// The invoice's XML: a UN/CEFACT Cross Industry Invoice of a Factur-X / ZUGFeRD 2 profile (MINIMUM, BASIC WL, BASIC, EN 16931, EXTENDED) or XRechnung. Embedded byte for byte.
    pub invoice: FileInput,
    /// How to deliver the PDF.
    #[serde(default)]
    pub output: OutputMode,
}

/// A checked call.
pub struct EInvoiceCall {
    source: SourcePdf,
    xml: Vec<u8>,
    summary: InvoiceSummary,
    output: OutputMode,
}

/// The route.
pub struct EInvoiceRoute;

impl Route for EInvoiceRoute {
    type Input = EInvoiceInput;
    type Prepared = EInvoiceCall;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/e-invoice",
        operation: "make_e_invoice",
        family: Family::Docs,
        summary: "Make a Factur-X / ZUGFeRD e-invoice: PDF/A-3 with the invoice XML inside",
        description: "Makes a hybrid e-invoice (Factur-X, ZUGFeRD 2, XRechnung in PDF): the invoice's PDF converted to \
            PDF/A-3b as /v1/pdf/to-pdfa does, with its Cross Industry Invoice XML embedded byte for byte as \
            factur-x.xml (xrechnung.xml for XRechnung), associated with the document (AFRelationship Alternative, or \
            Data for MINIMUM and BASIC WL), and the Factur-X XMP extension schema naming the profile. The XML is \
            checked first: its profile, the fields that profile requires (invoice number, date, seller, buyer, \
            currency, totals, VAT breakdown, and each line's name, quantity, price, VAT category and amount) and \
            EN 16931's sums (lines, VAT, totals, amount due); every problem is listed in one 422 invalid_invoice. \
            An invoice XML the PDF already carries is replaced. The report gives the invoice's number, parties, \
            totals and profile, and the PDF/A changes (Paperchain-Report header for output=file, `report` field \
            for base64 and url).",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: EInvoiceInput, ctx: &Context) -> Result<EInvoiceCall, EngineError> {
        if input.invoice.password.is_some() {
            return Err(EngineError::invalid_with(
                "option_not_applicable",
                "/invoice/password",
                "/invoice/password: the invoice is XML, which has no password",
            ));
        }
        let xml = input.invoice.resolve(ctx, "/invoice", "invoice.xml").await?.bytes;
        let summary = facturx::check(&xml).map_err(|problems| {
            EngineError::invalid_with(
                "invalid_invoice",
                "/invoice",
                format!("/invoice: the invoice XML cannot be embedded: {}", problems.join("; ")),
            )
        })?;
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        Ok(EInvoiceCall { source, xml, summary, output: input.output })
    }

    fn quote(call: &EInvoiceCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: EInvoiceCall, _: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let EInvoiceCall { mut source, xml, summary, output } = call;
            let at = pdf::dates::now();
            let replaced = remove_named(&mut source.doc, &INVOICE_NAMES)?;
            let profile = summary.profile;
            add(
                &mut source.doc,
                vec![Addition {
                    name: profile.file_name().to_string(),
                    description: Some(format!("{} invoice {}", profile.conformance_level(), summary.number)),
                    bytes: xml,
                    media_type: "text/xml",
                    relationship: profile.relationship(),
                }],
                at,
            )?;
            let report = pdfa::convert(&mut source.doc, Level::A3b, at, facturx::xmp(profile))?;
            let bytes = pdf::save(&mut source.doc)?;
            let report = serde_json::json!({ "invoice": summary, "replaced": replaced, "pdfa": report });
            let name = derived_name(&source.filename, "e-invoice", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output).with_report(report)))
        })
        .await
    }
}
