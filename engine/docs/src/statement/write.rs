//! A statement written as CSV, XLSX, OFX 1.0.2 or QIF.

use rust_xlsxwriter::{Color, ExcelDateTime, Format, FormatBorder, Workbook};

use super::{Statement, Transaction};
use crate::error::EngineError;
use crate::office::csv;

/// CSV: `date,description,amount,balance,currency`, dates ISO 8601, amounts with a point
/// and no grouping; text guarded against formulas.
pub fn csv(statement: &Statement) -> String {
    let currency = statement.currency.clone().unwrap_or_default();
    let mut out = String::from("date,description,amount,balance,currency\r\n");
    for t in &statement.transactions {
        let fields = [
            t.date.to_string(),
            csv::field(&t.description, true),
            t.amount.text(),
            t.balance.map(|b| b.text()).unwrap_or_default(),
            currency.clone(),
        ];
        out += &fields.join(",");
        out += "\r\n";
    }
    out
}

/// A workbook: a `Transactions` sheet (dates as dates, amounts as numbers with two
/// decimals, a bold frozen header with a filter) and a `Summary` sheet with the balances and
/// whether they reconcile.
pub fn xlsx(statement: &Statement) -> Result<Vec<u8>, EngineError> {
    let failed = |e: rust_xlsxwriter::XlsxError| EngineError::internal(format!("writing the workbook: {e}"));
    let mut book = Workbook::new();
    let header =
        Format::new().set_bold().set_background_color(Color::RGB(0xD9E1F2)).set_border_bottom(FormatBorder::Thin);
    let date = Format::new().set_num_format("yyyy-mm-dd");
    let money = Format::new().set_num_format("#,##0.00;-#,##0.00");
    let sheet = book.add_worksheet();
    sheet.set_name("Transactions").map_err(failed)?;
    for (c, name) in ["Date", "Description", "Amount", "Balance", "Currency"].iter().enumerate() {
        sheet.write_string_with_format(0, c as u16, *name, &header).map_err(failed)?;
    }
    let mut width = 12usize;
    for (i, t) in statement.transactions.iter().enumerate() {
        let r = i as u32 + 1;
        let when = ExcelDateTime::from_ymd(t.date.year() as u16, t.date.month() as u8, t.date.day()).map_err(failed)?;
        sheet.write_datetime_with_format(r, 0, &when, &date).map_err(failed)?;
        sheet.write_string(r, 1, &t.description).map_err(failed)?;
        sheet.write_number_with_format(r, 2, t.amount.to_f64(), &money).map_err(failed)?;
        if let Some(b) = t.balance {
            sheet.write_number_with_format(r, 3, b.to_f64(), &money).map_err(failed)?;
        }
        if let Some(c) = &statement.currency {
            sheet.write_string(r, 4, c).map_err(failed)?;
        }
        width = width.max(t.description.chars().count() + 1);
    }
    for (c, w) in [(0u16, 12.0), (1, width.min(70) as f64), (2, 14.0), (3, 14.0), (4, 9.0)] {
        sheet.set_column_width(c, w).map_err(failed)?;
    }
    sheet.set_freeze_panes(1, 0).map_err(failed)?;
    sheet.autofilter(0, 0, statement.transactions.len() as u32, 4).map_err(failed)?;

    let summary = book.add_worksheet();
    summary.set_name("Summary").map_err(failed)?;
    let bold = Format::new().set_bold();
    let rows: Vec<(&str, Option<f64>)> = vec![
        ("Opening balance", statement.opening.map(|a| a.to_f64())),
        ("Total of transactions", Some(statement.total().to_f64())),
        ("Closing balance", statement.closing.map(|a| a.to_f64())),
    ];
    for (r, (label, value)) in rows.iter().enumerate() {
        summary.write_string_with_format(r as u32, 0, *label, &bold).map_err(failed)?;
        if let Some(v) = value {
            summary.write_number_with_format(r as u32, 1, *v, &money).map_err(failed)?;
        }
    }
    summary.write_string_with_format(3, 0, "Reconciles", &bold).map_err(failed)?;
    match statement.reconciles() {
        Some(b) => summary.write_boolean(3, 1, b).map(|_| ()),
        None => summary.write_string(3, 1, "cannot tell").map(|_| ()),
    }
    .map_err(failed)?;
    summary.set_column_width(0, 24.0).map_err(failed)?;
    summary.set_column_width(1, 16.0).map_err(failed)?;
    book.save_to_buffer().map_err(failed)
}

/// OFX 1.0.2 (SGML, Windows-1252): one bank statement with its transactions and the
/// closing balance. `currency` is the statement's ISO code.
pub fn ofx(statement: &Statement, currency: &str) -> Vec<u8> {
    let day = |d: time::Date| format!("{:04}{:02}{:02}", d.year(), d.month() as u8, d.day());
    let first = statement.transactions.first().map(|t| t.date);
    let last = statement.transactions.last().map(|t| t.date);
    let account = statement.account.clone().unwrap_or_else(|| "UNKNOWN".into());
    let mut out = String::new();
    out += "OFXHEADER:100\r\nDATA:OFXSGML\r\nVERSION:102\r\nSECURITY:NONE\r\nENCODING:USASCII\r\nCHARSET:1252\r\n\
            COMPRESSION:NONE\r\nOLDFILEUID:NONE\r\nNEWFILEUID:NONE\r\n\r\n";
    out += "<OFX>\r\n<SIGNONMSGSRSV1><SONRS><STATUS><CODE>0<SEVERITY>INFO</STATUS>";
    out += &format!("<DTSERVER>{}<LANGUAGE>ENG</SONRS></SIGNONMSGSRSV1>\r\n", last.map(day).unwrap_or_default());
    out += "<BANKMSGSRSV1><STMTTRNRS><TRNUID>1<STATUS><CODE>0<SEVERITY>INFO</STATUS>\r\n<STMTRS>";
    out += &format!(
        "<CURDEF>{currency}\r\n<BANKACCTFROM><BANKID>000000000<ACCTID>{}<ACCTTYPE>CHECKING</BANKACCTFROM>\r\n",
        sgml(&account, 22)
    );
    out += &format!(
        "<BANKTRANLIST><DTSTART>{}<DTEND>{}\r\n",
        first.map(day).unwrap_or_default(),
        last.map(day).unwrap_or_default()
    );
    for (i, t) in statement.transactions.iter().enumerate() {
        let kind = if t.amount.is_negative() { "DEBIT" } else { "CREDIT" };
        out += &format!(
            "<STMTTRN><TRNTYPE>{kind}<DTPOSTED>{}<TRNAMT>{}<FITID>{}<NAME>{}<MEMO>{}</STMTTRN>\r\n",
            day(t.date),
            t.amount.text(),
            fit_id(i, t),
            sgml(&t.description, 32),
            sgml(&t.description, 255)
        );
    }
    out += "</BANKTRANLIST>\r\n";
    if let (Some(closing), Some(last)) = (statement.closing, last) {
        out += &format!("<LEDGERBAL><BALAMT>{}<DTASOF>{}</LEDGERBAL>\r\n", closing.text(), day(last));
    }
    out += "</STMTRS></STMTTRNRS></BANKMSGSRSV1>\r\n</OFX>\r\n";
    let (bytes, _, _) = encoding_rs::WINDOWS_1252.encode(&out);
    bytes.into_owned()
}

/// A transaction's id, the same for the same statement: its position, date, amount and a
/// hash of its description.
fn fit_id(i: usize, t: &Transaction) -> String {
    use sha2::Digest as _;
    let hash = sha2::Sha256::digest(t.description.as_bytes());
    format!(
        "{}{:04}{}{}",
        t.date.to_julian_day(),
        i + 1,
        t.amount.units.unsigned_abs() % 1_000_000,
        hex::encode(&hash[..4])
    )
}

/// Text for an SGML element: markup characters escaped, characters Windows-1252 lacks as
/// `?`, line breaks as spaces, at most `max` characters.
fn sgml(text: &str, max: usize) -> String {
    let mut out = String::new();
    for c in text.chars().take(max) {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c if c.is_control() => out.push(' '),
            c if encoding_rs::WINDOWS_1252.encode(c.encode_utf8(&mut [0; 4])).2 => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// QIF (`!Type:Bank`): per transaction its date as `MM/DD/YYYY`, amount, payee and a memo.
pub fn qif(statement: &Statement) -> String {
    let mut out = String::from("!Type:Bank\r\n");
    for t in &statement.transactions {
        let payee: String = t.description.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        out += &format!(
            "D{:02}/{:02}/{:04}\r\nT{}\r\nP{payee}\r\nM{payee}\r\n^\r\n",
            t.date.month() as u8,
            t.date.day(),
            t.date.year(),
            t.amount.text()
        );
    }
    out
}
