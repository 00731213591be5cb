//! `POST /v1/pdf/bank-statement`: the transactions of a bank statement PDF as JSON, CSV,
//! XLSX, OFX or QIF, with its balances checked. The reading is in `statement/`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, Progress, blocking};
use crate::docs::{CONVERSION_PRICE_RULE, SelectedPdf, conversion_price, select_pdf_pages};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::price::Price;
use crate::statement::amounts::Decimal;
use crate::statement::dates::DatePattern;
use crate::statement::{self, AmountColumns, Options, Statement, write};

/// Request of `/v1/pdf/bank-statement`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BankStatementInput {
    /// The statement, a PDF with a text layer (a scan needs `/v1/pdf/ocr` first).
    pub file: FileInput,
    /// `json` (default): the transactions and the balance check. `csv`, `xlsx`, `ofx` (OFX 1.0.2, for banking
    /// and accounting software) or `qif` (Quicken, dates MM/DD/YYYY): a file, the balance check in its report.
    #[serde(default)]
    pub format: StatementFormat,
    /// How the statement writes its dates, when detection guesses wrong: `DD` day, `MM` month number, `MMM`
    /// month name, `YYYY` or `YY` year, spaces and ASCII punctuation as printed (`DD/MM/YYYY`, `MM/DD/YY`, `DD.MM.YYYY`,
    /// `DD MMM YYYY`, `MMM D, YYYY`; without a year, the statement's year is used).
    #[serde(default)]
    #[schemars(length(min = 2, max = 32), regex(pattern = crate::patterns::date_format()))]
    pub date_format: Option<String>,
    /// The account's currency as an ISO 4217 code (`EUR`), when the statement does not show it or shows
    /// several.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Z]{3}$"))]
    pub currency: Option<String>,
    /// Pages to read (`"1-3"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// How files are delivered (`file`, `base64` or `url`); JSON is always answered as JSON.
    #[serde(default)]
    pub output: OutputMode,
}

/// What the statement is turned into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatementFormat {
    /// JSON.
    #[default]
    Json,
    /// CSV: date, description, amount, balance, currency.
    Csv,
    /// An Excel workbook: the transactions and a summary sheet.
    Xlsx,
    /// OFX 1.0.2.
    Ofx,
    /// QIF.
    Qif,
}

/// The answer for `format: json`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StatementReport {
    /// The transactions in the order printed.
    pub transactions: Vec<TransactionJson>,
    /// The balances and whether they add up.
    pub summary: StatementSummary,
}

/// One transaction.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TransactionJson {
    /// Booking date, ISO 8601.
    pub date: String,
    /// Description, wrapped lines joined. Text from the file: untrusted.
    pub description: String,
    /// Signed amount: money in positive, money out negative.
    pub amount: f64,
    /// The balance printed after it, when the statement prints one.
    pub balance: Option<f64>,
    /// The statement's currency (ISO 4217), when known.
    pub currency: Option<String>,
    /// The page it is on.
    pub page: u32,
}

/// The balances of a statement and how it was read.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct StatementSummary {
    /// Number of transactions.
    pub transaction_count: u32,
    /// ISO 4217 code: given in `currency`, or the one the statement shows most; null when neither.
    pub currency: Option<String>,
    /// The opening balance: printed, or worked out from the first running balance.
    pub opening_balance: Option<f64>,
    /// Whether the opening balance is printed on the statement.
    pub opening_balance_printed: bool,
    /// The closing balance: printed, or the last running balance.
    pub closing_balance: Option<f64>,
    /// Whether the closing balance is printed on the statement.
    pub closing_balance_printed: bool,
    /// The sum of the transactions.
    pub total: f64,
    /// true when the opening balance plus the transactions gives the closing balance and every running balance
    /// follows from the one before; false when not; null when the statement prints no balance to check.
    pub reconciles: Option<bool>,
    /// Closing balance less (opening balance + total), when both balances are known.
    pub difference: Option<f64>,
    /// Transactions (1-based) whose running balance is not the previous one plus their amount.
    pub balance_breaks: Vec<usize>,
    /// The date pattern used (detected, or `date_format`).
    pub date_format: String,
    /// The decimal mark of the amounts: `.` or `,`.
    pub decimal_mark: String,
    /// `signed` (one amount column) or `debit_credit`.
    pub amount_columns: AmountColumns,
    /// The account number or IBAN printed, when found.
    pub account: Option<String>,
    /// The pages read.
    pub pages: Vec<u32>,
}

/// A checked call.
pub struct BankStatement {
    pdf: SelectedPdf,
    format: StatementFormat,
    options: Options,
    output: OutputMode,
}

/// The route.
pub struct BankStatementRoute;

impl Route for BankStatementRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::XLSX, media::CSV, media::OFX, media::QIF];
    const HEAVY: bool = true;
    type Input = BankStatementInput;
    type Prepared = BankStatement;
    type Output = StatementReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/bank-statement",
        operation: "convert_bank_statement",
        family: Family::Docs,
        summary: "Bank statement PDF to transactions (JSON, CSV, XLSX, OFX, QIF)",
        description: "Reads the transactions of a bank statement PDF: the dated lines under the header of its \
            transactions table (English, German, French, Spanish, Italian and Dutch column names), descriptions \
            wrapped onto further lines joined, one signed amount column or debit and credit columns, the running \
            balance, and the opening and closing balances. Dates and decimal marks of the common locales are \
            detected (`date_format` and `currency` override). The opening balance plus the transactions is checked \
            against the closing balance, and each running balance against the one before: `reconciles` says \
            whether they add up. format=json answers the transactions; csv, xlsx, ofx (OFX 1.0.2) and qif give a \
            file with the same check in its report. A PDF without dated transaction lines is a 422 \
            `no_transactions`.",
        base_price: Price::micros(5_000),
        price_rule: CONVERSION_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::JsonOrFile,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: BankStatementInput, ctx: &Context) -> Result<BankStatement, EngineError> {
        let date_format = input.date_format.as_deref().map(|p| DatePattern::parse(p, "/date_format")).transpose()?;
        if let Some(code) = &input.currency
            && !(code.len() == 3 && code.bytes().all(|b| b.is_ascii_uppercase()))
        {
            return Err(EngineError::invalid(
                "/currency",
                format!("/currency: {code:?} is not an ISO 4217 code (three capital letters, such as EUR)"),
            ));
        }
        let selection = input.pages.as_deref().map(|p| PageSelection::parse(p, "/pages")).transpose()?;
        let file = input.file.resolve(ctx, "/file", "statement.pdf").await?;
        let pdf = select_pdf_pages(file, selection, ctx).await?;
        let options = Options { date_format, currency: input.currency };
        Ok(BankStatement { pdf, format: input.format, options, output: input.output })
    }

    fn quote(call: &BankStatement) -> Price {
        conversion_price(call.pdf.pages.len() as u64)
    }

    async fn run(call: BankStatement, ctx: &Context) -> Result<Reply<StatementReport>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || convert(call, &*progress)).await
    }
}

fn summary(s: &Statement, pages: &[u32]) -> StatementSummary {
    let difference = match (s.opening, s.closing) {
        (Some(o), Some(c)) => Some(c.minus(o.plus(s.total())).to_f64()),
        _ => None,
    };
    StatementSummary {
        transaction_count: s.transactions.len() as u32,
        currency: s.currency.clone(),
        opening_balance: s.opening.map(|a| a.to_f64()),
        opening_balance_printed: s.opening_printed,
        closing_balance: s.closing.map(|a| a.to_f64()),
        closing_balance_printed: s.closing_printed,
        total: s.total().to_f64(),
        reconciles: s.reconciles(),
        difference,
        balance_breaks: s.balance_breaks.clone(),
        date_format: s.date_format.clone(),
        decimal_mark: if s.decimal == Decimal::Comma { "," } else { "." }.into(),
        amount_columns: s.columns,
        account: s.account.clone(),
        pages: pages.to_vec(),
    }
}

fn convert(call: BankStatement, progress: &dyn Progress) -> Result<Reply<StatementReport>, EngineError> {
    let BankStatement { pdf, format, options, output } = call;
    // Scanned pages are read by OCR (English).
    let (layouts, _) =
        crate::ocr::layouts_with_ocr(&pdf.bytes, pdf.password.as_deref(), &pdf.pages, "/file", "eng", progress)?;
    if layouts.iter().all(|l| !l.has_text()) {
        return Err(EngineError::invalid_with(
            "no_text_layer",
            "/file",
            "/file: the pages read have no text: no text layer, and OCR found none (or is not installed on this server)",
        ));
    }
    let statement = statement::read(&layouts, &options)?;
    let summary = summary(&statement, &pdf.pages);
    let file = |ext: &str, media_type: &str, bytes: Vec<u8>| OutFile {
        filename: derived_name(&pdf.filename, "transactions", ext),
        media_type: media_type.into(),
        bytes,
    };
    let out = match format {
        StatementFormat::Json => {
            let transactions = statement
                .transactions
                .iter()
                .map(|t| TransactionJson {
                    date: t.date.to_string(),
                    description: t.description.clone(),
                    amount: t.amount.to_f64(),
                    balance: t.balance.map(|b| b.to_f64()),
                    currency: statement.currency.clone(),
                    page: t.page,
                })
                .collect();
            return Ok(Reply::Json(StatementReport { transactions, summary }));
        }
        StatementFormat::Csv => file("csv", media::CSV, write::csv(&statement).into_bytes()),
        StatementFormat::Xlsx => file("xlsx", media::XLSX, write::xlsx(&statement)?),
        StatementFormat::Ofx => {
            let currency = statement.currency.as_deref().ok_or_else(|| {
                EngineError::invalid(
                    "/currency",
                    "/currency: the statement does not show its currency, and OFX needs one: give it (EUR, USD…)",
                )
            })?;
            file("ofx", media::OFX, write::ofx(&statement, currency))
        }
        StatementFormat::Qif => file("qif", media::QIF, write::qif(&statement).into_bytes()),
    };
    let report = serde_json::to_value(&summary).map_err(|e| EngineError::internal(e.to_string()))?;
    Ok(Reply::Files(FileSet::single(out, output).with_report(report)))
}
