//! Bank statements read from a PDF's layout: the transactions table, descriptions wrapped
//! onto further lines joined, amounts as one signed column or as debit and credit columns,
//! the running balance, and the opening and closing balances, checked against the sum of
//! the transactions.
//!
//! The lines come from the shared layout analysis (`layout::text_segments`): each line is
//! the segments of one band, left to right. The table is found by what its lines hold, not
//! by the words of its header, which vary with every bank and language:
//!
//! - the date pattern is the one most lines' first cells start with;
//! - a transaction is a line whose first cell starts with a date and which holds figures;
//! - the figures of all transactions, clustered by where they stand, are the money columns;
//! - the last column, filled on every line while the others give each line a figure, is
//!   the running balance; one other column is a signed amount, two that are rarely filled
//!   on the same line are debit and credit, the balance's arithmetic (or the printed
//!   opening and closing balances) telling which is which;
//! - the header's words (English, German, French, Spanish, Italian, Dutch, Portuguese,
//!   Swedish, Polish) decide only what the figures leave open, and a header column over no
//!   figure marks a debit column whose credit column is empty.
//!
//! Opening and closing balances are lines labelled so (the same languages).

pub mod amounts;
pub mod dates;
pub mod write;

use time::Date;

use crate::error::EngineError;
use crate::layout::{self, Segment};
use crate::pdf::pdfium::PageLayout;
use amounts::{Amount, CURRENCY_CODES, CURRENCY_MARKS, Decimal};
use dates::{CANDIDATES, DatePattern};

/// One transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct Transaction {
    /// The booking date.
    pub date: Date,
    /// Its description, wrapped lines joined.
    pub description: String,
    /// Signed: money in is positive, money out negative.
    pub amount: Amount,
    /// The balance printed after it, when the statement prints one.
    pub balance: Option<Amount>,
    /// The page it is on.
    pub page: u32,
}

/// How the statement prints its amounts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AmountColumns {
    /// One column of signed amounts.
    Signed,
    /// A debit (money out) and a credit (money in) column.
    DebitCredit,
}

/// A statement read.
#[derive(Clone, Debug)]
pub struct Statement {
    /// The transactions in the order printed.
    pub transactions: Vec<Transaction>,
    /// The opening balance printed, or the first balance less the first amount.
    pub opening: Option<Amount>,
    /// Whether the opening balance is printed (rather than worked out).
    pub opening_printed: bool,
    /// The closing balance printed, or the last running balance.
    pub closing: Option<Amount>,
    /// Whether the closing balance is printed.
    pub closing_printed: bool,
    /// ISO 4217 code: the caller's, or the one the statement shows.
    pub currency: Option<String>,
    /// The date pattern used.
    pub date_format: String,
    /// The decimal mark of the amounts.
    pub decimal: Decimal,
    /// One signed column, or debit and credit.
    pub columns: AmountColumns,
    /// The account number or IBAN printed, when found.
    pub account: Option<String>,
    /// Running balances that do not follow from the previous one and the amount (1-based
    /// transaction numbers).
    pub balance_breaks: Vec<usize>,
}

impl Statement {
    /// The sum of the amounts.
    pub fn total(&self) -> Amount {
        self.transactions.iter().fold(Amount::ZERO, |sum, t| sum.plus(t.amount))
    }

    /// Whether the balances add up: `Some(true)` when every check that can be made (opening
    /// plus the transactions gives the closing; each running balance follows from the one
    /// before) holds, `Some(false)` when one fails, `None` when nothing can be checked.
    pub fn reconciles(&self) -> Option<bool> {
        let sum_check = match (self.opening, self.closing) {
            (Some(o), Some(c)) if self.opening_printed || self.closing_printed => Some(o.plus(self.total()).same(c)),
            _ => None,
        };
        let has_balances = self.transactions.iter().any(|t| t.balance.is_some());
        match (sum_check, has_balances) {
            (None, false) => None,
            (sum, _) => Some(sum.unwrap_or(true) && self.balance_breaks.is_empty()),
        }
    }
}

/// What the caller says about the statement.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// How its dates are written; detected when `None`.
    pub date_format: Option<DatePattern>,
    /// Its currency (ISO 4217); detected when `None`.
    pub currency: Option<String>,
}

/// A column of the transactions table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Date,
    Description,
    Amount,
    Debit,
    Credit,
    Balance,
    Other,
}

/// One line of a page: its cells left to right.
#[derive(Clone, Debug)]
struct Line {
    page: u32,
    top: f32,
    bottom: f32,
    cells: Vec<Cell>,
}

#[derive(Clone, Debug)]
struct Cell {
    x0: f32,
    x1: f32,
    text: String,
}

impl Line {
    fn text(&self) -> String {
        self.cells.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(" ")
    }
}

/// Header words, per column kind, matched against a header cell's words.
const HEADERS: &[(Kind, &[&str])] = &[
    (Kind::Balance, &["balance", "saldo", "solde", "kontostand", "running balance"]),
    (
        Kind::Debit,
        &[
            "debit",
            "debits",
            "withdrawal",
            "withdrawals",
            "paid out",
            "money out",
            "payments",
            "soll",
            "lastschrift",
            "belastung",
            "débit",
            "débits",
            "cargo",
            "cargos",
            "addebiti",
            "addebito",
            "af",
            "uitgaven",
            "débito",
            "débitos",
            "debito",
            "uttag",
            "obciążenia",
        ],
    ),
    (
        Kind::Credit,
        &[
            "credit",
            "credits",
            "deposit",
            "deposits",
            "paid in",
            "money in",
            "receipts",
            "haben",
            "gutschrift",
            "crédit",
            "crédits",
            "abono",
            "abonos",
            "accrediti",
            "accredito",
            "bij",
            "ontvangsten",
            "crédito",
            "créditos",
            "credito",
            "insättning",
            "insättningar",
            "uznania",
        ],
    ),
    (
        Kind::Amount,
        &["amount", "betrag", "montant", "importe", "importo", "bedrag", "umsatz", "value", "valor", "belopp", "kwota"],
    ),
    (
        Kind::Other,
        &["value date", "valuta", "wertstellung", "date de valeur", "fecha valor", "reference", "ref", "type"],
    ),
    (
        Kind::Date,
        &[
            "date",
            "datum",
            "fecha",
            "data",
            "buchungstag",
            "buchungsdatum",
            "posted",
            "booking date",
            "transaction date",
        ],
    ),
    (
        Kind::Description,
        &[
            "description",
            "details",
            "transaction",
            "transactions",
            "particulars",
            "narrative",
            "payee",
            "memo",
            "buchungstext",
            "verwendungszweck",
            "beschreibung",
            "vorgang",
            "libellé",
            "libelle",
            "opération",
            "opérations",
            "nature",
            "concepto",
            "descripción",
            "movimiento",
            "descrizione",
            "causale",
            "omschrijving",
            "descrição",
            "histórico",
            "opis",
        ],
    ),
];

/// Lines that give the opening balance.
const OPENING: &[&str] = &[
    "opening balance",
    "brought forward",
    "previous balance",
    "beginning balance",
    "starting balance",
    "balance forward",
    "anfangssaldo",
    "alter saldo",
    "saldovortrag",
    "saldo vortrag",
    "solde précédent",
    "solde initial",
    "ancien solde",
    "solde de départ",
    "saldo anterior",
    "saldo inicial",
    "saldo iniziale",
    "beginsaldo",
];

/// Lines that give the closing balance (the last such line counts).
const CLOSING: &[&str] = &[
    "closing balance",
    "ending balance",
    "new balance",
    "final balance",
    "carried forward",
    "endsaldo",
    "neuer saldo",
    "schlusssaldo",
    "nouveau solde",
    "solde final",
    "saldo final",
    "saldo finale",
    "eindsaldo",
];

/// Labels before an account number.
const ACCOUNT_LABELS: &[&str] =
    &["iban", "account number", "account no", "acct no", "kontonummer", "numéro de compte", "número de cuenta"];

/// Lowercase words of a text, punctuation and currency in brackets dropped.
fn words(text: &str) -> String {
    let lower = text.to_lowercase();
    let cut = lower.split(['(', '[']).next().unwrap_or(&lower);
    cut.split(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `phrase` stands in `text` as whole words.
fn has_phrase(text: &str, phrase: &str) -> bool {
    let (text, phrase) = (format!(" {text} "), format!(" {phrase} "));
    text.contains(&phrase)
}

fn header_kind(text: &str) -> Option<Kind> {
    let w = words(text);
    if w.is_empty() || w.split(' ').count() > 4 {
        return None;
    }
    HEADERS.iter().find(|(_, keys)| keys.iter().any(|k| has_phrase(&w, k))).map(|(kind, _)| *kind)
}

/// The page's lines: bands of text segments, each left to right.
fn lines_of(layout: &PageLayout) -> Vec<Line> {
    let mut segments: Vec<Segment> =
        layout::text_segments(layout).into_iter().filter(|s| !s.image && !s.text().trim().is_empty()).collect();
    segments.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
    layout::bands_by(segments, layout::place)
        .into_iter()
        .map(|(top, bottom, band)| Line {
            page: layout.number,
            top,
            bottom,
            cells: band.iter().flat_map(|s| cells_of(s.x0, s.x1, s.text().trim())).collect(),
        })
        .collect()
}

/// A segment's cells: itself, or, where figures of neighbouring columns stand closer than a
/// segment gap (`867,233.76 £ 876,238.24 £`), one cell per figure, each given the share of
/// the segment's width its characters take.
fn cells_of(x0: f32, x1: f32, text: &str) -> Vec<Cell> {
    let whole = || vec![Cell { x0, x1, text: text.to_string() }];
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() < 2
        || amounts::parse(text, Decimal::Point).is_some()
        || amounts::parse(text, Decimal::Comma).is_some()
    {
        return whole();
    }
    for decimal in [Decimal::Point, Decimal::Comma] {
        // Longest first from the left, so `1 234,56 €` stays one figure.
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let Some(j) =
                (i + 1..=words.len()).rev().find(|j| amounts::parse(&words[i..*j].join(" "), decimal).is_some())
            else {
                break;
            };
            parts.push(words[i..j].join(" "));
            i = j;
        }
        if i == words.len() && parts.len() >= 2 {
            let total: usize = parts.iter().map(|p| p.chars().count()).sum::<usize>() + parts.len() - 1;
            let per_char = (x1 - x0) / total.max(1) as f32;
            let mut start = 0usize;
            return parts
                .into_iter()
                .map(|text| {
                    let n = text.chars().count();
                    let cell = Cell { x0: x0 + start as f32 * per_char, x1: x0 + (start + n) as f32 * per_char, text };
                    start += n + 1;
                    cell
                })
                .collect();
        }
    }
    whole()
}

/// A date at the start of `text` (the whole text, or its first one to three words) with
/// the rest of the text.
fn leading_date(pattern: &DatePattern, text: &str, year: i32) -> Option<(Date, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    (1..=words.len().min(3)).rev().find_map(|n| {
        let date = pattern.read(&words[..n].join(" "), year)?;
        Some((date, words[n..].join(" ")))
    })
}

/// The statement in `layouts`.
///
/// The transactions table is found by what its lines hold, not by the words of its header:
/// a transaction is a line whose first cell starts with a date and which holds amounts; the
/// amounts of all such lines, clustered by where they stand, give the table's money columns;
/// what each column is (one signed amount, debit and credit, the running balance) follows
/// from how full it is and from the arithmetic of the balances, the header's words (where
/// they are known) deciding only what the figures leave open.
pub fn read(layouts: &[PageLayout], options: &Options) -> Result<Statement, EngineError> {
    let lines: Vec<Line> = layouts.iter().flat_map(lines_of).collect();
    let all_text: Vec<String> = lines.iter().map(Line::text).collect();
    let year = most_common(all_text.iter().flat_map(|t| dates::years_in(t))).unwrap_or(2000);
    let decimal = amounts::decimal_of(lines.iter().flat_map(|l| l.cells.iter().map(|c| c.text.as_str())));
    let currency = options.currency.clone().or_else(|| currency_of(&all_text));
    let pattern = match &options.date_format {
        Some(p) => p.clone(),
        None => detect_pattern(&lines, year, currency.as_deref()).ok_or_else(no_transactions)?,
    };
    let rows: Vec<Row> = lines.iter().map(|line| Row::of(line, &pattern, year, decimal)).collect();
    let (opening_printed, closing_printed) = printed_balances(&rows);
    let table = Table::find(&lines, &rows, (opening_printed, closing_printed)).ok_or_else(no_transactions)?;
    let mut transactions = table.transactions(&lines, &rows, opening_printed);
    if transactions.is_empty() {
        return Err(no_transactions());
    }
    roll_years(&mut transactions, &pattern);
    let mut statement = Statement {
        opening_printed: opening_printed.is_some(),
        closing_printed: closing_printed.is_some(),
        opening: opening_printed,
        closing: closing_printed,
        currency,
        date_format: pattern.text.clone(),
        decimal,
        columns: if table.debit_credit() { AmountColumns::DebitCredit } else { AmountColumns::Signed },
        account: account_of(&lines),
        balance_breaks: Vec::new(),
        transactions: Vec::new(),
    };
    // Balances: each follows from the one before and the amount.
    let mut previous = statement.opening;
    for (i, t) in transactions.iter().enumerate() {
        if let Some(balance) = t.balance {
            match previous {
                Some(p) if !p.plus(t.amount).same(balance) => statement.balance_breaks.push(i + 1),
                None if i == 0 => statement.opening = Some(balance.minus(t.amount)),
                _ => {}
            }
            previous = Some(balance);
        } else {
            previous = previous.map(|p| p.plus(t.amount));
        }
    }
    if statement.closing.is_none() {
        statement.closing = transactions.iter().rev().find_map(|t| t.balance);
    }
    statement.transactions = transactions;
    Ok(statement)
}

fn no_transactions() -> EngineError {
    EngineError::invalid_with(
        "no_transactions",
        "/file",
        "/file: no transactions were found: no line starts with a date and holds an amount; if the dates are \
         written unusually, give `date_format`",
    )
}

fn most_common<T: Ord + Copy>(items: impl Iterator<Item = T>) -> Option<T> {
    let mut counts = std::collections::BTreeMap::new();
    for item in items {
        *counts.entry(item).or_insert(0usize) += 1;
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(item, _)| item)
}

/// The currency the statement shows most: symbols beside amounts and ISO codes.
fn currency_of(texts: &[String]) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let mut count = |code: &'static str| match counts.iter_mut().find(|(c, _)| *c == code) {
        Some((_, n)) => *n += 1,
        None => counts.push((code, 1)),
    };
    for text in texts {
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if let Some(code) = CURRENCY_CODES.iter().find(|c| **c == word) {
                count(code);
            }
        }
        for (mark, code) in CURRENCY_MARKS.iter().filter(|(m, _)| !m.chars().all(char::is_alphabetic)) {
            if text.contains(mark) && !(*mark == "$" && text.contains("US$")) {
                count(code);
            }
        }
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(c, _)| c.to_string())
}

/// The date pattern most lines start with; between patterns that read as many, the one
/// with a year, then the one whose dates run in order, then the one whose dates span the
/// fewest days (a statement covers weeks, not the months a day and month swapped give),
/// then day-first unless the statement is in dollars.
fn detect_pattern(lines: &[Line], year: i32, currency: Option<&str>) -> Option<DatePattern> {
    // Dates read, with a year, in order, span (shorter first), the preferred order.
    type Rank = (usize, bool, usize, std::cmp::Reverse<i64>, bool);
    let mut best: Option<(Rank, DatePattern)> = None;
    for text in CANDIDATES {
        let pattern = DatePattern::parse(text, "/date_format").expect("the candidates are valid");
        let found: Vec<Date> = lines
            .iter()
            .filter_map(|l| l.cells.first())
            .filter_map(|c| leading_date(&pattern, &c.text, year).map(|(d, _)| d))
            .collect();
        let (Some(first), Some(last)) = (found.iter().min(), found.iter().max()) else { continue };
        let ordered =
            found.windows(2).filter(|w| w[0] <= w[1]).count().max(found.windows(2).filter(|w| w[0] >= w[1]).count());
        let span = std::cmp::Reverse((*last - *first).whole_days());
        let day_first = text.starts_with('D');
        let preferred = if currency == Some("USD") { !day_first } else { day_first };
        let key = (found.len(), pattern.has_year(), ordered, span, preferred);
        if best.as_ref().is_none_or(|(k, _)| key > *k) {
            best = Some((key, pattern));
        }
    }
    best.map(|(_, p)| p)
}

/// Dates printed without a year run into the next year after December.
fn roll_years(transactions: &mut [Transaction], pattern: &DatePattern) {
    if pattern.has_year() {
        return;
    }
    let mut shift = 0;
    let mut last_month = None;
    for t in transactions.iter_mut() {
        let month = t.date.month() as u8;
        if last_month.is_some_and(|m: u8| m >= 11 && month <= 2) {
            shift += 1;
        }
        last_month = Some(month);
        if shift > 0
            && let Ok(d) = t.date.replace_year(t.date.year() + shift)
        {
            t.date = d;
        }
    }
}

/// The account number or IBAN after its label.
fn account_of(lines: &[Line]) -> Option<String> {
    for line in lines {
        for (i, cell) in line.cells.iter().enumerate() {
            let lower = cell.text.to_lowercase();
            let Some(label) = ACCOUNT_LABELS.iter().find(|l| lower.contains(*l)) else { continue };
            let after = &cell.text[lower.find(label).map_or(0, |p| p + label.len()).min(cell.text.len())..];
            let after = after.trim_start_matches(|c: char| c == ':' || c == '.' || c.is_whitespace());
            let value = if after.is_empty() { line.cells.get(i + 1).map_or("", |c| c.text.as_str()) } else { after };
            let value: String = value.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            if value.chars().filter(char::is_ascii_digit).count() >= 4 {
                return Some(value);
            }
        }
    }
    None
}

/// The amount a cell ends with: the longest run of its last words (up to six: `1 234 567,89
/// EUR`) that reads as one (`Opening balance 01/11/2026: 1,204.56`, `Neuer Saldo 1.234,56`).
fn trailing_amount(text: &str, decimal: Decimal) -> Option<Amount> {
    let words: Vec<&str> = text.split_whitespace().collect();
    (1..=words.len().min(6)).rev().find_map(|n| amounts::parse(&words[words.len() - n..].join(" "), decimal))
}

/// What one line is.
#[derive(Clone, Debug)]
enum Row {
    /// A line starting with a date: the date, the rest of its first cell, its amounts
    /// (cell index and value) and its other cells holding a date (a value date).
    Dated { date: Date, rest: String, money: Vec<(usize, Amount)>, dates: Vec<usize> },
    /// An opening balance line, with the amount it ends with.
    Opening(Option<Amount>),
    /// A closing balance line (also "carried forward" between pages).
    Closing(Option<Amount>),
    /// Anything else: headings, the table's header, wrapped descriptions, footers.
    Other,
}

impl Row {
    fn of(line: &Line, pattern: &DatePattern, year: i32, decimal: Decimal) -> Row {
        let text = words(&line.text());
        let last_amount = || line.cells.iter().rev().find_map(|c| trailing_amount(&c.text, decimal));
        if OPENING.iter().any(|k| has_phrase(&text, k)) {
            return Row::Opening(last_amount());
        }
        if CLOSING.iter().any(|k| has_phrase(&text, k)) {
            return Row::Closing(last_amount());
        }
        let Some((date, rest)) = line.cells.first().and_then(|c| leading_date(pattern, &c.text, year)) else {
            return Row::Other;
        };
        let (mut money, mut dates) = (Vec::new(), Vec::new());
        for (i, cell) in line.cells.iter().enumerate().skip(1) {
            if pattern.read(&cell.text, year).is_some() {
                dates.push(i);
            } else if let Some(a) = amounts::parse(&cell.text, decimal) {
                money.push((i, a));
            }
        }
        Row::Dated { date, rest, money, dates }
    }
}

/// The opening balance printed before the first transaction and the closing balance
/// printed last.
fn printed_balances(rows: &[Row]) -> (Option<Amount>, Option<Amount>) {
    let first_dated = rows.iter().position(|r| matches!(r, Row::Dated { money, .. } if !money.is_empty()));
    let opening = rows[..first_dated.unwrap_or(rows.len())].iter().find_map(|r| match r {
        Row::Opening(a) => *a,
        _ => None,
    });
    let closing = rows.iter().rev().find_map(|r| match r {
        Row::Closing(a) => *a,
        _ => None,
    });
    (opening, closing)
}

/// What a money column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Signed amounts (or amounts whose sign the balance gives).
    Amount,
    Debit,
    Credit,
    Balance,
    /// A figure that is none of these (a fee, an amount in another currency).
    Ignored,
}

/// A money column: where its figures stand and what they are.
#[derive(Clone, Debug)]
struct Column {
    x0: f32,
    x1: f32,
    role: Role,
}

/// The transactions table: its money columns, and for an amount column printed without
/// signs beside a balance, that the balance gives the signs.
#[derive(Clone, Debug)]
struct Table {
    columns: Vec<Column>,
    signs_from_balance: bool,
}

impl Table {
    /// Finds the money columns from the dated lines that hold amounts; `ends` are the
    /// printed opening and closing balances.
    fn find(lines: &[Line], rows: &[Row], ends: (Option<Amount>, Option<Amount>)) -> Option<Table> {
        // Clusters of overlapping horizontal extents: figures right-aligned in a column
        // share their right edge, left-aligned ones their left edge; either way they overlap.
        let mut extents: Vec<(f32, f32)> = Vec::new();
        for (line, row) in lines.iter().zip(rows) {
            if let Row::Dated { money, .. } = row {
                extents.extend(money.iter().map(|(i, _)| (line.cells[*i].x0, line.cells[*i].x1)));
            }
        }
        if extents.is_empty() {
            return None;
        }
        extents.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut columns: Vec<Column> = Vec::new();
        for (x0, x1) in extents {
            match columns.last_mut() {
                Some(c) if x0 <= c.x1 + 1.0 => c.x1 = c.x1.max(x1),
                _ => columns.push(Column { x0, x1, role: Role::Amount }),
            }
        }
        let mut table = Table { columns, signs_from_balance: false };
        let values = table.values(lines, rows);
        let (hints, empty_column) = table.hints(lines, rows);
        table.assign(&values, &hints, empty_column, ends);
        Some(table)
    }

    /// The column a cell stands in.
    fn column_of(&self, cell: &Cell) -> Option<usize> {
        let center = (cell.x0 + cell.x1) / 2.0;
        self.columns.iter().position(|c| center >= c.x0 - 1.0 && center <= c.x1 + 1.0)
    }

    /// Each transaction line's figure per column.
    fn values(&self, lines: &[Line], rows: &[Row]) -> Vec<Vec<Option<Amount>>> {
        lines
            .iter()
            .zip(rows)
            .filter_map(|(line, row)| match row {
                Row::Dated { money, .. } if !money.is_empty() => {
                    let mut out = vec![None; self.columns.len()];
                    for (i, amount) in money {
                        if let Some(c) = self.column_of(&line.cells[*i]) {
                            out[c].get_or_insert(*amount);
                        }
                    }
                    Some(out)
                }
                _ => None,
            })
            .collect()
    }

    /// What the header above the transactions calls each column, where its words are known
    /// (the header: the last line before a page's first transaction that holds no figure),
    /// and whether the header shows a column right of the last amount column and left of the
    /// balance that no transaction fills (the other half of a debit and credit pair).
    fn hints(&self, lines: &[Line], rows: &[Row]) -> (Vec<Option<Kind>>, bool) {
        let mut hints = vec![None; self.columns.len()];
        let mut empty_column = false;
        let mut page = None;
        for (i, (line, row)) in lines.iter().zip(rows).enumerate() {
            if !matches!(row, Row::Dated { money, .. } if !money.is_empty()) || page == Some(line.page) {
                continue;
            }
            page = Some(line.page);
            let header = (0..i).rev().take(4).map(|j| (&lines[j], &rows[j])).find(|(l, r)| {
                l.page == line.page
                    && matches!(r, Row::Other)
                    && l.cells.len() >= 2
                    && l.cells.iter().all(|c| amounts::parse(&c.text, Decimal::Point).is_none())
            });
            let Some((header, _)) = header else { continue };
            let first = self.columns.first().map_or(f32::MAX, |c| c.x0);
            for cell in &header.cells {
                // The column the header cell overlaps most.
                let overlap = |c: &Column| (cell.x1.min(c.x1) - cell.x0.max(c.x0)).max(0.0);
                let best = (0..self.columns.len())
                    .max_by(|a, b| overlap(&self.columns[*a]).total_cmp(&overlap(&self.columns[*b])))
                    .filter(|c| overlap(&self.columns[*c]) > 0.0);
                match (best, header_kind(&cell.text)) {
                    (Some(c), Some(kind)) => {
                        hints[c].get_or_insert(kind);
                    }
                    (None, _) if cell.x0 > first => empty_column = true,
                    _ => {}
                }
            }
        }
        (hints, empty_column)
    }

    /// Decides each column's role.
    fn assign(
        &mut self,
        values: &[Vec<Option<Amount>>],
        hints: &[Option<Kind>],
        empty_column: bool,
        ends: (Option<Amount>, Option<Amount>),
    ) {
        let n = values.len();
        let k = self.columns.len();
        let fill = |c: usize| values.iter().filter(|v| v[c].is_some()).count();
        // The running balance: the last column, filled on (nearly) every line, with the
        // other columns giving each line a figure too; or the column the header names so.
        let hinted_balance = hints.iter().position(|h| *h == Some(Kind::Balance));
        let balance = hinted_balance.or_else(|| {
            let last = k.checked_sub(1)?;
            let others_cover = values.iter().filter(|v| v[..last].iter().any(Option::is_some)).count();
            (k >= 2 && fill(last) * 10 >= n * 9 && others_cover * 10 >= n * 9).then_some(last)
        });
        let rest: Vec<usize> = (0..k).filter(|c| Some(*c) != balance).collect();
        for c in &mut self.columns {
            c.role = Role::Ignored;
        }
        if let Some(b) = balance {
            self.columns[b].role = Role::Balance;
        }
        let hinted = |kind: Kind| rest.iter().copied().find(|c| hints[*c] == Some(kind));
        let pair = match (hinted(Kind::Debit), hinted(Kind::Credit)) {
            (Some(d), Some(c)) => Some((d, c, true)),
            _ if rest.len() >= 2 => {
                let (a, b) = (rest[rest.len() - 2], rest[rest.len() - 1]);
                let both = values.iter().filter(|v| v[a].is_some() && v[b].is_some()).count();
                (both * 10 <= n && hinted(Kind::Amount).is_none()).then_some((a, b, false))
            }
            _ => None,
        };
        match pair {
            Some((a, b, named)) => {
                let a_is_debit = named || self.debit_first(a, b, balance, values, hints, ends);
                let (debit, credit) = if a_is_debit { (a, b) } else { (b, a) };
                self.columns[debit].role = Role::Debit;
                self.columns[credit].role = Role::Credit;
            }
            None => {
                let amount = hinted(Kind::Amount).or_else(|| rest.last().copied());
                if let Some(a) = amount {
                    let unsigned = values.iter().all(|v| v[a].is_none_or(|x| !x.is_negative()));
                    // One column of figures without signs and, in the header, an empty
                    // column after it: a debit column whose credit column has no figure.
                    let named = hints[a].filter(|h| matches!(h, Kind::Debit | Kind::Credit));
                    self.columns[a].role = match named {
                        Some(Kind::Credit) if unsigned => Role::Credit,
                        Some(Kind::Debit) if unsigned => Role::Debit,
                        None if unsigned && empty_column => Role::Debit,
                        _ => Role::Amount,
                    };
                    self.signs_from_balance = unsigned && balance.is_some() && self.columns[a].role == Role::Amount;
                }
            }
        }
    }

    /// Whether the left column of a debit and credit pair is the debit one: from the
    /// running balance where there is one, else from the printed opening and closing
    /// balances, else from the header's words, else from the signs printed, else the usual
    /// order (debit first).
    fn debit_first(
        &self,
        a: usize,
        b: usize,
        balance: Option<usize>,
        values: &[Vec<Option<Amount>>],
        hints: &[Option<Kind>],
        (opening, closing): (Option<Amount>, Option<Amount>),
    ) -> bool {
        let value = |v: &Vec<Option<Amount>>| match (v[a], v[b]) {
            (Some(x), None) => Some((x.at(2).units.abs(), true)),
            (None, Some(y)) => Some((y.at(2).units.abs(), false)),
            _ => None,
        };
        if let Some(bal) = balance {
            let (mut a_debit, mut b_debit) = (0, 0);
            let mut previous = opening.map(|o| o.at(2).units);
            for v in values {
                let current = v[bal].map(|x| x.at(2).units);
                if let (Some(p), Some(c), Some((size, in_a))) = (previous, current, value(v)) {
                    let delta = c - p;
                    if delta == -size {
                        if in_a { a_debit += 1 } else { b_debit += 1 }
                    } else if delta == size && size != 0 {
                        if in_a { b_debit += 1 } else { a_debit += 1 }
                    }
                }
                previous = current.or(previous);
            }
            if a_debit != b_debit {
                return a_debit > b_debit;
            }
        }
        if let (Some(o), Some(c)) = (opening, closing) {
            let (mut sum_a, mut sum_b) = (0i128, 0i128);
            for v in values {
                match value(v) {
                    Some((size, true)) => sum_a += size,
                    Some((size, false)) => sum_b += size,
                    None => {}
                }
            }
            let change = c.at(2).units - o.at(2).units;
            if change == sum_b - sum_a && change != sum_a - sum_b {
                return true;
            }
            if change == sum_a - sum_b && change != sum_b - sum_a {
                return false;
            }
        }
        if hints[a] == Some(Kind::Credit) || hints[b] == Some(Kind::Debit) {
            return false;
        }
        if hints[a] == Some(Kind::Debit) || hints[b] == Some(Kind::Credit) {
            return true;
        }
        let negatives = |c: usize| values.iter().filter(|v| v[c].is_some_and(Amount::is_negative)).count();
        negatives(b) <= negatives(a)
    }

    fn debit_credit(&self) -> bool {
        self.columns.iter().any(|c| c.role == Role::Debit)
    }

    fn role_of(&self, cell: &Cell) -> Option<Role> {
        self.column_of(cell).map(|c| self.columns[c].role)
    }

    /// The transactions, in the order printed, with wrapped descriptions joined.
    fn transactions(&self, lines: &[Line], rows: &[Row], opening: Option<Amount>) -> Vec<Transaction> {
        let mut out: Vec<Transaction> = Vec::new();
        // The bottom of the last transaction line and its height, while the lines under it
        // may continue its description.
        let mut open: Option<(u32, f32, f32)> = None;
        let mut previous_balance = opening;
        for (line, row) in lines.iter().zip(rows) {
            match row {
                Row::Dated { date, rest, money, dates } if !money.is_empty() => {
                    let mut description: Vec<String> = if rest.is_empty() { Vec::new() } else { vec![rest.clone()] };
                    let (mut amount, mut debit, mut credit, mut balance) = (None, None, None, None);
                    for (i, cell) in line.cells.iter().enumerate().skip(1) {
                        let value = money.iter().find(|(m, _)| *m == i).map(|(_, v)| *v);
                        match (value, self.role_of(cell)) {
                            (Some(v), Some(Role::Amount)) => {
                                amount.get_or_insert(v);
                            }
                            (Some(v), Some(Role::Debit)) => {
                                debit.get_or_insert(v);
                            }
                            (Some(v), Some(Role::Credit)) => {
                                credit.get_or_insert(v);
                            }
                            (Some(v), Some(Role::Balance)) => {
                                balance.get_or_insert(v);
                            }
                            (Some(_), _) => {}
                            (None, _) if dates.contains(&i) => {}
                            (None, _) => description.push(cell.text.clone()),
                        }
                    }
                    let negative = |a: Amount| Amount { units: -a.units.abs(), scale: a.scale };
                    let positive = |a: Amount| Amount { units: a.units.abs(), scale: a.scale };
                    let amount = match (amount, debit, credit) {
                        (Some(a), _, _) => a,
                        (None, Some(d), None) => negative(d),
                        (None, None, Some(c)) => positive(c),
                        (None, Some(d), Some(c)) => positive(c).plus(negative(d)),
                        // Only a balance, or a figure in no column: not a transaction.
                        (None, None, None) => {
                            open = None;
                            continue;
                        }
                    };
                    let amount = match (self.signs_from_balance, previous_balance, balance) {
                        (true, Some(p), Some(b)) if b.minus(p).same(negative(amount)) => negative(amount),
                        _ => amount,
                    };
                    previous_balance = balance.or(previous_balance.map(|p| p.plus(amount)));
                    out.push(Transaction {
                        date: *date,
                        description: description.join(" "),
                        amount,
                        balance,
                        page: line.page,
                    });
                    open = Some((line.page, line.bottom, line.bottom - line.top));
                }
                Row::Dated { .. } | Row::Other => {
                    // A line under a transaction that holds only description text continues it.
                    let Some((page, bottom, height)) = open else { continue };
                    let close = line.page == page && line.top - bottom <= height.max(1.0) * 1.2;
                    let text_only = line.cells.iter().all(|c| {
                        self.column_of(c).is_none()
                            && amounts::parse(&c.text, Decimal::Point).is_none()
                            && amounts::parse(&c.text, Decimal::Comma).is_none()
                    });
                    match out.last_mut() {
                        Some(last) if close && text_only && matches!(row, Row::Other) => {
                            let more = line.text();
                            if !last.description.is_empty() {
                                last.description.push(' ');
                            }
                            last.description.push_str(more.trim());
                            open = Some((page, line.bottom, height));
                        }
                        _ => open = None,
                    }
                }
                Row::Opening(_) | Row::Closing(_) => open = None,
            }
        }
        out
    }
}
