//! `/v1/pdf/bank-statement` on statements drawn here in five layouts whose transactions are
//! known exactly: signed amounts in dollars (US dates), debit and credit columns in pounds
//! (`05 Jan 2026`), descriptions wrapped over several lines across two pages with rules, a
//! German statement (`1.234,56`, `31.01.2026`), and one whose balances do not add up.
//! Every transaction must come back exactly, in JSON, CSV, XLSX (openpyxl), OFX (ofxparse)
//! and QIF (a strict reader below).

use crate::common;

use common::route::{call, call_files};
use paperchain_engine::{Context, ErrorKind};
use paperchain_testkit::page_pdf::{Font, PagePdf};
use paperchain_testkit::table_score::parse_csv;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/bank-statement";

/// A transaction as drawn: date (y, m, d), description lines, amount in cents.
#[derive(Clone, Debug)]
struct Tx {
    date: (i32, u32, u32),
    lines: Vec<String>,
    cents: i64,
}

/// How a statement is drawn.
#[derive(Clone, Copy, PartialEq)]
enum Style {
    /// US: `Date | Description | Amount | Balance`, MM/DD/YYYY, `-1,234.56`, `$`.
    UsSigned,
    /// UK: `Date | Description | Paid out | Paid in | Balance`, `05 Jan 2026`, `£`.
    UkDebitCredit,
    /// Wrapped descriptions, two pages, rules under the header, DD/MM/YYYY, `Withdrawals | Deposits`.
    MultiLine,
    /// German: `Buchungstag | Verwendungszweck | Betrag | Saldo`, `31.01.2026`, `-1.234,56`.
    German,
}

const OPENING: i64 = 152_030;

fn transactions() -> Vec<Tx> {
    let descriptions: [&[&str]; 12] = [
        &["Salary ACME Corp"],
        &["Rent for the flat", "Landlord O'Brien, ref 2026-01"],
        &["Café & Co <Ltd>"],
        &["=SUM(A1) odd payee name"],
        &["Card payment Grocer", "Market Street 12", "Branch 7"],
        &["Interest"],
        &["Transfer to savings"],
        &["Refund Online Shop"],
        &["Electricity", "Direct debit"],
        &["ATM withdrawal"],
        &["Gift from Anna"],
        &["Bank fee"],
    ];
    let cents = [250_000, -123_456, -450, -9_999, -6_780, 12, -50_000, 1_999, -8_415, -10_000, 123_400, -500];
    let days = [2, 3, 3, 5, 8, 9, 12, 14, 19, 22, 27, 31];
    (0..12)
        .map(|i| Tx {
            date: (2026, 1, days[i]),
            lines: descriptions[i].iter().map(|s| s.to_string()).collect(),
            cents: cents[i],
        })
        .collect()
}

fn point(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let (whole, frac) = (cents.unsigned_abs() / 100, cents.unsigned_abs() % 100);
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{sign}{grouped}.{frac:02}")
}

fn comma(cents: i64) -> String {
    point(cents).replace(',', "_").replace('.', ",").replace('_', ".")
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// Draws a statement; `closing_off` is added to the printed closing balance (a statement
/// that does not add up).
fn statement(style: Style, txs: &[Tx], closing_off: i64) -> Vec<u8> {
    statement_with(style, txs, closing_off, None)
}

/// [`statement`], with the running balance printed after transaction `typo` (0-based) one
/// unit off.
fn statement_with(style: Style, txs: &[Tx], closing_off: i64, typo: Option<usize>) -> Vec<u8> {
    let mut pdf = PagePdf::new(595.0, 842.0);
    let date = |(y, m, d): (i32, u32, u32)| match style {
        Style::UsSigned => format!("{m:02}/{d:02}/{y}"),
        Style::UkDebitCredit => format!("{d:02} {} {y}", MONTHS[m as usize - 1]),
        Style::MultiLine => format!("{d:02}/{m:02}/{y}"),
        Style::German => format!("{d:02}.{m:02}.{y}"),
    };
    let money = |cents: i64| if style == Style::German { comma(cents) } else { point(cents) };
    let (bank, account, period) = match style {
        Style::UsSigned => {
            ("First Example Bank", "Account number: 0012345678", "Statement period 01/01/2026 - 01/31/2026")
        }
        Style::UkDebitCredit => ("Example Bank plc", "Account number: 55779911", "Statement date 31 Jan 2026"),
        Style::MultiLine => ("Example Savings Bank", "Account no. 44556677", "Period 01/01/2026 to 31/01/2026"),
        Style::German => ("Beispielbank AG", "IBAN: DE89370400440532013000", "Kontoauszug 1/2026, Währung: EUR"),
    };
    pdf.text(50.0, 60.0, 16.0, Font::Bold, bank);
    pdf.text(50.0, 90.0, 10.0, Font::Regular, account).text(50.0, 104.0, 10.0, Font::Regular, period);
    // Columns: date left at 50, description left at 125, then right edges of the numbers.
    let (headers, rights): (Vec<&str>, Vec<f64>) = match style {
        Style::UsSigned => (vec!["Date", "Description", "Amount ($)", "Balance ($)"], vec![430.0, 545.0]),
        Style::UkDebitCredit => {
            (vec!["Date", "Description", "Paid out (£)", "Paid in (£)", "Balance (£)"], vec![370.0, 455.0, 545.0])
        }
        Style::MultiLine => (
            vec!["Posting Date", "Transaction Details", "Withdrawals", "Deposits", "Balance"],
            vec![370.0, 455.0, 545.0],
        ),
        Style::German => (vec!["Buchungstag", "Verwendungszweck", "Betrag", "Saldo"], vec![430.0, 545.0]),
    };
    let header = |pdf: &mut PagePdf, y: f64| {
        pdf.text(50.0, y, 9.0, Font::Bold, headers[0]).text(125.0, y, 9.0, Font::Bold, headers[1]);
        for (h, r) in headers[2..].iter().zip(&rights) {
            pdf.text_right(*r, y, 9.0, Font::Bold, h);
        }
        if style == Style::MultiLine {
            pdf.line(45.0, y + 4.0, 550.0, y + 4.0);
        }
    };
    let opening_label = match style {
        Style::German => "Alter Saldo",
        Style::UkDebitCredit => "Balance brought forward",
        _ => "Opening balance",
    };
    let closing_label = match style {
        Style::German => "Neuer Saldo",
        Style::UkDebitCredit => "Balance carried forward",
        _ => "Closing balance",
    };
    let symbol = |text: String| if style == Style::UsSigned { format!("${text}") } else { text };
    let mut y = 150.0;
    header(&mut pdf, y);
    y += 18.0;
    pdf.text(125.0, y, 9.0, Font::Regular, opening_label);
    pdf.text_right(545.0, y, 9.0, Font::Regular, &symbol(money(OPENING)));
    y += 14.0;
    let mut balance = OPENING;
    for (i, tx) in txs.iter().enumerate() {
        if style == Style::MultiLine && i == 7 {
            pdf.text(125.0, y, 9.0, Font::Regular, "Balance carried forward");
            pdf.text_right(545.0, y, 9.0, Font::Regular, &money(balance));
            pdf.text(270.0, 800.0, 8.0, Font::Regular, "Page 1 of 2");
            pdf.page();
            y = 80.0;
            header(&mut pdf, y);
            y += 18.0;
            pdf.text(125.0, y, 9.0, Font::Regular, "Balance brought forward");
            pdf.text_right(545.0, y, 9.0, Font::Regular, &money(balance));
            y += 14.0;
        }
        balance += tx.cents;
        pdf.text(50.0, y, 9.0, Font::Regular, &date(tx.date));
        let lines = if style == Style::MultiLine || style == Style::UkDebitCredit {
            tx.lines.clone()
        } else {
            vec![tx.lines.join(" ")]
        };
        for (k, line) in lines.iter().enumerate() {
            pdf.text(125.0, y + 11.0 * k as f64, 9.0, Font::Regular, line);
        }
        match style {
            Style::UsSigned | Style::German => {
                pdf.text_right(rights[0], y, 9.0, Font::Regular, &money(tx.cents));
            }
            _ => {
                let column = if tx.cents < 0 { rights[0] } else { rights[1] };
                pdf.text_right(column, y, 9.0, Font::Regular, &money(tx.cents.abs()));
            }
        }
        let printed = if typo == Some(i) { balance + 100 } else { balance };
        pdf.text_right(*rights.last().unwrap(), y, 9.0, Font::Regular, &money(printed));
        y += 11.0 * lines.len() as f64 + 5.0;
    }
    if style == Style::MultiLine {
        pdf.line(45.0, y - 8.0, 550.0, y - 8.0);
    }
    pdf.text(125.0, y, 9.0, Font::Bold, closing_label);
    pdf.text_right(545.0, y, 9.0, Font::Bold, &symbol(money(balance + closing_off)));
    pdf.text(270.0, 800.0, 8.0, Font::Regular, if style == Style::MultiLine { "Page 2 of 2" } else { "Page 1 of 1" });
    pdf.finish()
}

fn expected(txs: &[Tx], currency: &str) -> Value {
    let mut balance = OPENING;
    let rows: Vec<Value> = txs
        .iter()
        .map(|tx| {
            balance += tx.cents;
            json!({
                "date": format!("{:04}-{:02}-{:02}", tx.date.0, tx.date.1, tx.date.2),
                "description": tx.lines.join(" "),
                "amount": tx.cents as f64 / 100.0,
                "balance": balance as f64 / 100.0,
                "currency": currency,
            })
        })
        .collect();
    Value::Array(rows)
}

fn body(pdf: &[u8], more: Value) -> Value {
    common::route::file_body(pdf, "statement.pdf", &more)
}

async fn read(pdf: &[u8]) -> Value {
    call(&Context::new(), ROUTE, body(pdf, json!({}))).await.unwrap()
}

fn without_pages(answer: &Value) -> Value {
    let mut rows = answer["transactions"].clone();
    for row in rows.as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("page");
    }
    rows
}

#[tokio::test]
async fn four_layouts_round_trip_every_transaction_and_reconcile() {
    let txs = transactions();
    for (style, name, currency, date_format, decimal, columns, account) in [
        (Style::UsSigned, "US, signed", "USD", "MM/DD/YYYY", ".", "signed", "0012345678"),
        (Style::UkDebitCredit, "UK, debit/credit", "GBP", "DD MMM YYYY", ".", "debit_credit", "55779911"),
        (Style::MultiLine, "wrapped, two pages", "", "DD/MM/YYYY", ".", "debit_credit", "44556677"),
        (Style::German, "German", "EUR", "DD.MM.YYYY", ",", "signed", "DE89370400440532013000"),
    ] {
        let pdf = statement(style, &txs, 0);
        let answer = read(&pdf).await;
        let currency_value = if currency.is_empty() { Value::Null } else { json!(currency) };
        let mut want = expected(&txs, currency);
        if currency.is_empty() {
            for row in want.as_array_mut().unwrap() {
                row["currency"] = Value::Null;
            }
        }
        assert_eq!(without_pages(&answer), want, "{name}");
        let s = &answer["summary"];
        let closing = txs.iter().map(|t| t.cents).sum::<i64>() + OPENING;
        assert_eq!(s["transaction_count"], 12, "{name}");
        assert_eq!(s["currency"], currency_value, "{name}");
        assert_eq!(s["opening_balance"], json!(OPENING as f64 / 100.0), "{name}");
        assert_eq!(s["closing_balance"], json!(closing as f64 / 100.0), "{name}");
        assert_eq!(
            (s["opening_balance_printed"].as_bool(), s["closing_balance_printed"].as_bool()),
            (Some(true), Some(true)),
            "{name}"
        );
        assert_eq!(s["reconciles"], true, "{name}: {s:#}");
        assert_eq!(s["difference"], json!(0.0), "{name}");
        assert_eq!(s["balance_breaks"], json!([]), "{name}");
        assert_eq!(s["date_format"], date_format, "{name}");
        assert_eq!(s["decimal_mark"], decimal, "{name}");
        assert_eq!(s["amount_columns"], columns, "{name}");
        assert_eq!(s["account"], account, "{name}");
        if style == Style::MultiLine {
            let pages: Vec<u64> =
                answer["transactions"].as_array().unwrap().iter().map(|t| t["page"].as_u64().unwrap()).collect();
            assert_eq!(pages, [1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]);
        }
    }
}

#[tokio::test]
async fn a_statement_that_does_not_add_up_is_flagged() {
    let txs = transactions();
    let pdf = statement(Style::UsSigned, &txs, -1_000);
    let s = read(&pdf).await["summary"].clone();
    assert_eq!(s["reconciles"], false, "{s:#}");
    assert_eq!(s["difference"], json!(-10.0));
    // The running balances themselves add up; only the printed closing balance is off.
    assert_eq!(s["balance_breaks"], json!([]));

    // A running balance that does not follow is named, with the one after it.
    let pdf = statement_with(Style::German, &txs, 0, Some(4));
    let s = read(&pdf).await["summary"].clone();
    assert_eq!(s["reconciles"], false, "{s:#}");
    assert_eq!(s["balance_breaks"], json!([5, 6]));
    assert_eq!(s["difference"], json!(0.0), "opening plus the transactions still gives the closing balance");
}

#[tokio::test]
async fn csv_and_xlsx_carry_every_transaction() {
    let txs = transactions();
    let pdf = statement(Style::UkDebitCredit, &txs, 0);
    let set = call_files(&Context::new(), ROUTE, body(&pdf, json!({ "format": "csv" }))).await.unwrap();
    let file = &set.files[0];
    assert_eq!((file.filename.as_str(), file.media_type.as_str()), ("statement-transactions.csv", "text/csv"));
    assert_eq!(set.report.as_ref().unwrap()["reconciles"], true);
    let rows = parse_csv(&String::from_utf8(file.bytes.clone()).unwrap());
    assert_eq!(rows[0], ["date", "description", "amount", "balance", "currency"]);
    assert_eq!(rows.len(), 13);
    assert_eq!(rows[1], ["2026-01-02", "Salary ACME Corp", "2500.00", "4020.30", "GBP"]);
    assert_eq!(rows[4], ["2026-01-05", "'=SUM(A1) odd payee name", "-99.99", "2681.25", "GBP"], "formula guarded");
    assert_eq!(rows[5][1], "Card payment Grocer Market Street 12 Branch 7");

    let set = call_files(&Context::new(), ROUTE, body(&pdf, json!({ "format": "xlsx" }))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.xlsx");
    std::fs::write(&path, &set.files[0].bytes).unwrap();
    let script = r#"
import json, sys, openpyxl
wb = openpyxl.load_workbook(sys.argv[1])
ws = wb["Transactions"]
rows = [[c.value.isoformat()[:10] if hasattr(c.value, "isoformat") else c.value for c in r] for r in ws.iter_rows()]
summary = {r[0].value: r[1].value for r in wb["Summary"].iter_rows()}
print(json.dumps({"rows": rows, "types": [type(c.value).__name__ for c in ws[2]], "summary": summary, "frozen": ws.freeze_panes}))
"#;
    let book: Value = serde_json::from_str(&run_python(script, &[&path])).unwrap();
    assert_eq!(book["rows"][0], json!(["Date", "Description", "Amount", "Balance", "Currency"]));
    let want = expected(&txs, "GBP");
    for (i, w) in want.as_array().unwrap().iter().enumerate() {
        let row = &book["rows"][i + 1];
        assert_eq!((&row[0], &row[1], &row[4]), (&w["date"], &w["description"], &json!("GBP")), "row {i}");
        assert_eq!((row[2].as_f64(), row[3].as_f64()), (w["amount"].as_f64(), w["balance"].as_f64()), "row {i}");
    }
    assert_eq!(book["types"], json!(["datetime", "str", "int", "float", "str"]), "2500.00 is stored as 2500");
    assert_eq!(book["summary"]["Reconciles"], true);
    assert_eq!(book["frozen"], "A2");
}

#[tokio::test]
async fn ofx_is_read_by_ofxparse_with_every_transaction() {
    let txs = transactions();
    let pdf = statement(Style::German, &txs, 0);
    let set = call_files(&Context::new(), ROUTE, body(&pdf, json!({ "format": "ofx" }))).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ofx");
    std::fs::write(&path, &set.files[0].bytes).unwrap();
    let script = r#"
import json, sys
from ofxparse import OfxParser
ofx = OfxParser.parse(open(sys.argv[1], "rb"))
a = ofx.account
s = a.statement
print(json.dumps({
    "account": a.account_id, "currency": s.currency, "balance": str(s.balance),
    "start": s.start_date.date().isoformat(), "end": s.end_date.date().isoformat(),
    "transactions": [{"date": t.date.date().isoformat(), "amount": str(t.amount), "payee": t.payee,
                      "memo": t.memo, "type": t.type, "id": t.id} for t in s.transactions],
}))
"#;
    let read: Value = serde_json::from_str(&run_python(script, &[&path])).unwrap();
    assert_eq!(read["account"], "DE89370400440532013000");
    assert_eq!(read["currency"], "eur");
    let closing = txs.iter().map(|t| t.cents).sum::<i64>() + OPENING;
    assert_eq!(read["balance"], format!("{}.{:02}", closing / 100, closing % 100));
    assert_eq!((read["start"].as_str(), read["end"].as_str()), (Some("2026-01-02"), Some("2026-01-31")));
    let got = read["transactions"].as_array().unwrap();
    assert_eq!(got.len(), txs.len());
    let mut ids = std::collections::BTreeSet::new();
    for (t, g) in txs.iter().zip(got) {
        let description = t.lines.join(" ");
        assert_eq!(g["date"], format!("{:04}-{:02}-{:02}", t.date.0, t.date.1, t.date.2));
        assert_eq!(g["amount"], point(t.cents).replace(',', ""), "{description}");
        assert_eq!(g["memo"], description);
        assert_eq!(g["payee"], description.chars().take(32).collect::<String>());
        assert_eq!(g["type"], if t.cents < 0 { "debit" } else { "credit" });
        assert!(ids.insert(g["id"].as_str().unwrap().to_string()), "ids are unique");
    }
}

/// A strict QIF reader: the `!Type:Bank` header, then records of `D` (MM/DD/YYYY), `T`
/// (amount), `P`, `M` lines ended by `^`.
fn read_qif(text: &str) -> Vec<(String, String, String)> {
    let mut lines = text.split("\r\n");
    assert_eq!(lines.next(), Some("!Type:Bank"));
    let mut out = Vec::new();
    let (mut date, mut amount, mut payee) = (None, None, None);
    for line in lines.filter(|l| !l.is_empty()) {
        let (code, value) = line.split_at(1);
        match code {
            "D" => {
                let parts: Vec<&str> = value.split('/').collect();
                assert!(
                    parts.len() == 3 && parts[0].len() == 2 && parts[1].len() == 2 && parts[2].len() == 4,
                    "{value}"
                );
                date = Some(format!("{}-{}-{}", parts[2], parts[0], parts[1]));
            }
            "T" => {
                assert!(value.parse::<f64>().is_ok(), "{value}");
                amount = Some(value.to_string());
            }
            "P" => payee = Some(value.to_string()),
            "M" => {}
            "^" => out.push((date.take().expect("D"), amount.take().expect("T"), payee.take().expect("P"))),
            other => panic!("unknown QIF field {other:?}"),
        }
    }
    assert!(date.is_none() && amount.is_none(), "an unfinished record");
    out
}

#[tokio::test]
async fn qif_records_every_transaction() {
    let txs = transactions();
    let pdf = statement(Style::MultiLine, &txs, 0);
    let set = call_files(&Context::new(), ROUTE, body(&pdf, json!({ "format": "qif" }))).await.unwrap();
    assert_eq!(set.files[0].filename, "statement-transactions.qif");
    let records = read_qif(&String::from_utf8(set.files[0].bytes.clone()).unwrap());
    let want: Vec<(String, String, String)> = txs
        .iter()
        .map(|t| {
            (
                format!("{:04}-{:02}-{:02}", t.date.0, t.date.1, t.date.2),
                point(t.cents).replace(',', ""),
                t.lines.join(" "),
            )
        })
        .collect();
    assert_eq!(records, want);
}

#[tokio::test]
async fn options_and_wrong_inputs_are_named() {
    let txs = transactions();
    let us = statement(Style::UsSigned, &txs, 0);
    // A wrong date pattern finds nothing and says so.
    let e = call(&Context::new(), ROUTE, body(&us, json!({ "date_format": "DD.MM.YYYY" }))).await.unwrap_err();
    assert_eq!(
        (e.kind, e.code.as_ref(), e.field.as_deref()),
        (ErrorKind::InvalidInput, "no_transactions", Some("/file"))
    );
    // The right one, and a currency given.
    let answer = call(&Context::new(), ROUTE, body(&us, json!({ "date_format": "MM/DD/YYYY", "currency": "CAD" })))
        .await
        .unwrap();
    assert_eq!(answer["summary"]["currency"], "CAD");
    assert_eq!(answer["transactions"][0]["currency"], "CAD");
    for (more, field) in [
        (json!({ "date_format": "QQ/MM" }), "/date_format"),
        (json!({ "date_format": "DD/DD/YYYY" }), "/date_format"),
        (json!({ "currency": "euro" }), "/currency"),
        (json!({ "pages": "4" }), "/pages"),
    ] {
        let e = call(&Context::new(), ROUTE, body(&us, more.clone())).await.unwrap_err();
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{more}");
    }
    // OFX needs a currency.
    let wrapped = statement(Style::MultiLine, &txs, 0);
    let e = call_files(&Context::new(), ROUTE, body(&wrapped, json!({ "format": "ofx" }))).await.unwrap_err();
    assert_eq!(e.field.as_deref(), Some("/currency"));
    let ok = call_files(&Context::new(), ROUTE, body(&wrapped, json!({ "format": "ofx", "currency": "EUR" }))).await;
    assert!(ok.is_ok());
    // A PDF that is not a statement.
    let mut letter = PagePdf::new(595.0, 842.0);
    letter.text(72.0, 100.0, 11.0, Font::Regular, "Dear customer, 01/02/2026 is the day we write to you.");
    let e = call(&Context::new(), ROUTE, body(&letter.finish(), json!({}))).await.unwrap_err();
    assert_eq!(e.code.as_ref(), "no_transactions");
}

#[tokio::test]
async fn a_scanned_statement_is_read_by_ocr() {
    // The US statement printed, scanned at 300 dpi (no text layer left), read back: OCR's
    // words become the page's text, and every transaction comes back exactly.
    let txs = transactions();
    let pdf = statement(Style::UsSigned, &txs, 0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("statement.pdf");
    std::fs::write(&path, &pdf).unwrap();
    let pages: Vec<_> = (1..=paperchain_testkit::pdf::qpdf_pages(&pdf))
        .map(|p| paperchain_testkit::scan::render(&path, p, 300))
        .collect();
    let scan = paperchain_testkit::scan::image_pdf(&pages.iter().collect::<Vec<_>>(), 300);
    let answer = read(&scan).await;
    assert_eq!(without_pages(&answer), expected(&txs, "USD"));
    assert_eq!(answer["summary"]["reconciles"], true, "{:#}", answer["summary"]);
}
