//! Bank statements read from a PDF's layout: the transactions table (dated lines under a
//! header naming its columns), descriptions wrapped onto further lines joined, amounts as
//! one signed column or as debit and credit columns, the running balance, and the opening
//! and closing balances, checked against the sum of the transactions.
//!
//! The lines come from the shared layout analysis (`layout::text_segments`): each line is
//! the segments of one band, left to right. A header line holds a date column and an
//! amount, debit or credit column (keywords of English, German, French, Spanish, Italian
//! and Dutch statements); a line below it whose first cell is a date is a transaction, its
//! other cells falling in the header's columns by their centres. Without a header, a dated
//! line ending in one or two amounts is a transaction (amount, then balance).

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
        ],
    ),
    (Kind::Amount, &["amount", "betrag", "montant", "importe", "importo", "bedrag", "umsatz", "value"]),
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
            cells: band.iter().map(|s| Cell { x0: s.x0, x1: s.x1, text: s.text().trim().to_string() }).collect(),
        })
        .collect()
}

/// The header's columns: kind and horizontal extent of each header cell.
fn header_of(line: &Line) -> Option<Vec<(Kind, f32, f32)>> {
    let columns: Vec<(Kind, f32, f32)> = line
        .cells
        .iter()
        .map(|c| (header_kind(&c.text), c.x0, c.x1))
        .map(|(k, a, b)| (k.unwrap_or(Kind::Other), a, b))
        .collect();
    let known = line.cells.iter().filter(|c| header_kind(&c.text).is_some()).count();
    let has = |k: Kind| columns.iter().any(|c| c.0 == k);
    let money = has(Kind::Amount) || has(Kind::Debit) || has(Kind::Credit);
    (has(Kind::Date) && money && known * 2 > line.cells.len()).then_some(columns)
}

/// The column a cell falls in: parted at the midpoints between header cells.
fn column_of(columns: &[(Kind, f32, f32)], cell: &Cell) -> Kind {
    let center = (cell.x0 + cell.x1) / 2.0;
    let mut kind = columns[0].0;
    for pair in columns.windows(2) {
        if center > (pair[0].2 + pair[1].1) / 2.0 {
            kind = pair[1].0;
        }
    }
    kind
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
    let mut reader = Reader {
        pattern: &pattern,
        year,
        decimal,
        columns: None,
        transactions: Vec::new(),
        opening: None,
        closing: None,
        debit_credit: false,
        open: None,
    };
    for line in &lines {
        reader.line(line);
    }
    if reader.transactions.is_empty() {
        return Err(no_transactions());
    }
    let account = account_of(&lines);
    let Reader { mut transactions, opening, closing, debit_credit, .. } = reader;
    roll_years(&mut transactions, &pattern);
    let mut statement = Statement {
        opening_printed: opening.is_some(),
        closing_printed: closing.is_some(),
        opening,
        closing,
        currency,
        date_format: pattern.text.clone(),
        decimal,
        columns: if debit_credit { AmountColumns::DebitCredit } else { AmountColumns::Signed },
        account,
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
    statement.transactions = std::mem::take(&mut transactions);
    Ok(statement)
}

fn no_transactions() -> EngineError {
    EngineError::invalid_with(
        "no_transactions",
        "/file",
        "/file: no transactions were found: no line starts with a date under a header naming a date and an amount \
         (or debit/credit) column; if the dates are written unusually, give `date_format`",
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
/// with a year, then the one whose dates run in order, then day-first unless the
/// statement is in dollars.
fn detect_pattern(lines: &[Line], year: i32, currency: Option<&str>) -> Option<DatePattern> {
    let mut best: Option<((usize, bool, usize, bool), DatePattern)> = None;
    for text in CANDIDATES {
        let pattern = DatePattern::parse(text, "/date_format").expect("the candidates are valid");
        let found: Vec<Date> = lines
            .iter()
            .filter_map(|l| l.cells.first())
            .filter_map(|c| leading_date(&pattern, &c.text, year).map(|(d, _)| d))
            .collect();
        if found.is_empty() {
            continue;
        }
        let ordered =
            found.windows(2).filter(|w| w[0] <= w[1]).count().max(found.windows(2).filter(|w| w[0] >= w[1]).count());
        let day_first = text.starts_with('D');
        let preferred = if currency == Some("USD") { !day_first } else { day_first };
        let key = (found.len(), pattern.has_year(), ordered, preferred);
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

/// Reads the lines one after the other.
struct Reader<'a> {
    pattern: &'a DatePattern,
    year: i32,
    decimal: Decimal,
    columns: Option<Vec<(Kind, f32, f32)>>,
    transactions: Vec<Transaction>,
    opening: Option<Amount>,
    closing: Option<Amount>,
    debit_credit: bool,
    /// The bottom of the last transaction line, and its height, while further lines may
    /// continue its description.
    open: Option<(u32, f32, f32)>,
}

impl Reader<'_> {
    fn amount(&self, text: &str) -> Option<Amount> {
        amounts::parse(text, self.decimal)
    }

    fn line(&mut self, line: &Line) {
        if let Some(columns) = header_of(line) {
            self.debit_credit |= columns.iter().any(|c| matches!(c.0, Kind::Debit | Kind::Credit));
            self.columns = Some(columns);
            self.open = None;
            return;
        }
        let text = words(&line.text());
        let last_amount = line.cells.iter().rev().find_map(|c| self.amount(&c.text));
        if OPENING.iter().any(|k| has_phrase(&text, k)) {
            if self.opening.is_none() && self.transactions.is_empty() {
                self.opening = last_amount;
            }
            self.open = None;
            return;
        }
        if CLOSING.iter().any(|k| has_phrase(&text, k)) {
            if last_amount.is_some() {
                self.closing = last_amount;
            }
            self.open = None;
            return;
        }
        let Some(first) = line.cells.first() else { return };
        let dated = leading_date(self.pattern, &first.text, self.year);
        match dated {
            Some((date, rest)) => self.transaction(line, date, rest),
            None => self.continuation(line),
        }
    }

    fn transaction(&mut self, line: &Line, date: Date, rest: String) {
        let mut description: Vec<String> = if rest.is_empty() { Vec::new() } else { vec![rest] };
        let (mut amount, mut debit, mut credit, mut balance) = (None, None, None, None);
        match &self.columns {
            Some(columns) => {
                for cell in &line.cells[1..] {
                    let value = self.amount(&cell.text);
                    match (column_of(columns, cell), value) {
                        (Kind::Amount, Some(v)) if amount.is_none() => amount = Some(v),
                        (Kind::Debit, Some(v)) if debit.is_none() => debit = Some(v),
                        (Kind::Credit, Some(v)) if credit.is_none() => credit = Some(v),
                        (Kind::Balance, Some(v)) if balance.is_none() => balance = Some(v),
                        (Kind::Date | Kind::Other, _) => {}
                        _ => description.push(cell.text.clone()),
                    }
                }
            }
            None => {
                // No header: the trailing amounts are the amount and then the balance.
                let mut trailing: Vec<Amount> = Vec::new();
                let mut cells = &line.cells[1..];
                while let Some((last, before)) = cells.split_last() {
                    match self.amount(&last.text) {
                        Some(v) if trailing.len() < 2 => {
                            trailing.insert(0, v);
                            cells = before;
                        }
                        _ => break,
                    }
                }
                description.extend(cells.iter().map(|c| c.text.clone()));
                match trailing[..] {
                    [a] => amount = Some(a),
                    [a, b] => (amount, balance) = (Some(a), Some(b)),
                    _ => {}
                }
            }
        }
        let amount = match (amount, debit, credit) {
            (Some(a), _, _) => a,
            (None, Some(d), None) => Amount { units: -d.units.abs(), scale: d.scale },
            (None, None, Some(c)) => Amount { units: c.units.abs(), scale: c.scale },
            (None, Some(d), Some(c)) => {
                Amount { units: c.units.abs(), scale: c.scale }.plus(Amount { units: -d.units.abs(), scale: d.scale })
            }
            // A dated line without an amount is not a transaction (a date in the letter head).
            (None, None, None) => {
                self.open = None;
                return;
            }
        };
        self.transactions.push(Transaction {
            date,
            description: description.join(" "),
            amount,
            balance,
            page: line.page,
        });
        self.open = Some((line.page, line.bottom, line.bottom - line.top));
    }

    /// A line under a transaction that holds only description text continues it.
    fn continuation(&mut self, line: &Line) {
        let Some((page, bottom, height)) = self.open else { return };
        let close = line.page == page && line.top - bottom <= height.max(1.0) * 1.2;
        let text_only = line.cells.iter().all(|c| {
            self.amount(&c.text).is_none()
                && self
                    .columns
                    .as_ref()
                    .is_none_or(|cols| matches!(column_of(cols, c), Kind::Description | Kind::Other))
        });
        if close
            && text_only
            && let Some(last) = self.transactions.last_mut()
        {
            let more = line.text();
            if !last.description.is_empty() {
                last.description.push(' ');
            }
            last.description.push_str(more.trim());
            self.open = Some((page, line.bottom, height));
        } else {
            self.open = None;
        }
    }
}
