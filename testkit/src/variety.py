"""The variety set: bank statements, reports and tables written by PDF writers nobody on
the project controls (reportlab, LibreOffice from a spreadsheet or a Word file, Chromium
from HTML), in many layouts, each with its exact ground truth taken from the generator's
input.

    python variety.py OUT_DIR [--seed N] [--per-writer N] [--kinds statements,reports,tables]

writes the PDFs into OUT_DIR and OUT_DIR/manifest.json: a list of cases, each with its
`file`, `kind`, `writer`, `layout` (a name per layout dimension) and its truth:

- statements: `date_format`, `transactions` ([{date: ISO, amount: "-4.80", balance:
  "1199.76" or null, description}]), `opening` and `closing` ("1204.56" or null: the
  balances printed), `currency`;
- reports: `text` (every word in reading order) and `tables` (rows of cell texts);
- tables: `tables` (rows of cell texts; a merged cell's text in its first cell, the cells
  it covers empty, as in the corpus's CSV files).

Beside each report and table PDF, `<stem>.md` is its content as Markdown.

The same seed gives the same truth and the same layouts.
"""

import argparse
import base64
import datetime as dt
import html
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

WRITERS = ("reportlab", "libreoffice", "chromium")

# ---------------------------------------------------------------------------------------
# Statements: the truth and how it is printed.

DATE_FORMATS = ("DD/MM/YYYY", "MM/DD/YYYY", "YYYY-MM-DD", "DD.MM.YYYY", "DD MMM YYYY", "MMM DD, YYYY", "DD-MMM-YY")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# Thousands and decimal marks: 1,234.56 / 1.234,56 / 1 234,56 / 1'234.56 / 1234.56.
NUMBERS = ("point", "comma", "space", "apostrophe", "plain")
NEGATIVES = ("minus", "parentheses", "trailing")
AMOUNTS = ("signed", "debit_credit")
CURRENCIES = ("none", "symbol", "suffix", "code_in_header")
HEADERS = ("underlined", "boxed", "shaded", "plain")
BALANCES = ("running", "none")
ENDS = ("both", "opening", "closing", "none")
PAGES = ("one", "two")

# Column headings: date, description, amount, debit, credit, balance. Several sets use words
# no statement reader lists: the table must be found by what its columns hold.
VOCABULARIES = (
    ("Date", "Description", "Amount", "Debit", "Credit", "Balance"),
    ("Posting Date", "Transaction Details", "Amount", "Withdrawals", "Deposits", "Balance"),
    ("Date", "Details", "Value", "Paid out", "Paid in", "Balance"),
    ("Posted", "Narrative", "Sum", "Out", "In", "Running total"),
    ("When", "What", "Change", "Spent", "Received", "Total"),
    ("Txn Date", "Payee / Memo", "Net", "Withdrawn", "Lodged", "Available"),
    ("Data", "Descrição", "Valor", "Débito", "Crédito", "Saldo"),
    ("Datum", "Text", "Belopp", "Uttag", "Insättning", "Saldo"),
    ("Buchungstag", "Verwendungszweck", "Betrag", "Soll", "Haben", "Kontostand"),
)
OPENING_LABELS = ("Opening balance", "Balance brought forward", "Previous balance", "Saldo anterior", "Alter Saldo")
CLOSING_LABELS = ("Closing balance", "Balance carried forward", "New balance", "Saldo final", "Neuer Saldo")
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}

PAYEES_OUT = (
    "Card payment BAKERY ROSA",
    "Rent Flat 4B",
    "Direct debit Electricity Co",
    "ATM withdrawal Main St",
    "Transfer to savings",
    "Standing order Gym",
    "Card payment Grocer 12",
    "Insurance premium",
    "Mobile phone bill",
    "Card payment Café Lumière",
    "Bank fee",
    "Water utility",
    "Parking Central Garage",
    "Book shop O'Neill & Sons",
    "Pharmacy Nord",
)
PAYEES_IN = ("Salary ACME Corp", "Refund Online Shop", "Interest", "Transfer from J. Smith", "Dividend payment")
LONG_TAILS = (
    "reference 2026-11-4471 monthly instalment for the flat on the second floor",
    "card ending 4421, contactless, terminal 0091 at the station kiosk",
    "invoice 88213 for services rendered in the last quarter, thank you",
)


def group(digits, mark):
    out = []
    for i, c in enumerate(digits):
        if i > 0 and (len(digits) - i) % 3 == 0:
            out.append(mark)
        out.append(c)
    return "".join(out)


def number_text(cents, style):
    """The magnitude of `cents` written in `style` (no sign)."""
    whole, frac = divmod(abs(cents), 100)
    digits = str(whole)
    if style == "point":
        return f"{group(digits, ',')}.{frac:02}"
    if style == "comma":
        return f"{group(digits, '.')},{frac:02}"
    if style == "space":
        return f"{group(digits, ' ')},{frac:02}"
    if style == "apostrophe":
        return f"{group(digits, chr(39))}.{frac:02}"
    return f"{digits}.{frac:02}"


def money_text(cents, layout, currency, signed=True):
    """An amount as the statement prints it: sign, marks and currency."""
    text = number_text(cents, layout["numbers"])
    symbol = SYMBOLS[currency]
    if layout["currency"] == "symbol":
        text = symbol + text
    elif layout["currency"] == "suffix":
        text = f"{text} {symbol}"
    if signed and cents < 0:
        negative = layout["negatives"]
        if negative == "parentheses":
            text = f"({text})"
        elif negative == "trailing":
            text = f"{text}-"
        else:
            text = f"-{text}"
    return text


def date_text(day, pattern):
    months = MONTHS[day.month - 1]
    return (
        pattern.replace("YYYY", f"{day.year:04}")
        .replace("MMM", months)
        .replace("YY", f"{day.year % 100:02}")
        .replace("MM", f"{day.month:02}")
        .replace("DD", f"{day.day:02}")
    )


def cents_text(cents):
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(cents) // 100}.{abs(cents) % 100:02}"


def statement_case(rng, writer, index):
    layout = {
        "date_format": rng.choice(DATE_FORMATS),
        "numbers": rng.choice(NUMBERS),
        "negatives": rng.choice(NEGATIVES),
        "amounts": rng.choice(AMOUNTS),
        "currency": rng.choice(CURRENCIES),
        "header": rng.choice(HEADERS),
        "balance": rng.choice(BALANCES),
        "ends": rng.choice(ENDS),
        "pages": rng.choice(PAGES),
        "vocabulary": rng.randrange(len(VOCABULARIES)),
        "wrapped": rng.random() < 0.3,
    }
    # A statement every balance of which is missing can still be read; one with neither
    # a running balance nor any printed balance has nothing to check, which some do.
    currency = rng.choice(tuple(SYMBOLS))
    count = rng.randint(55, 70) if layout["pages"] == "two" else rng.randint(6, 18)
    day = dt.date(2026, rng.randint(1, 10), rng.randint(1, 5))
    opening = rng.randint(-50_000, 2_500_000)
    balance = opening
    transactions = []
    for i in range(count):
        day += dt.timedelta(days=rng.choice((0, 0, 1, 1, 2, 3)))
        # Money out mostly small, money in rarer and larger; some amounts run into the
        # thousands and millions, so thousands marks are printed.
        if rng.random() < 0.75:
            cents = -rng.randint(1, 10 ** rng.choice((2, 3, 4, 4, 5, 5, 6)))
            payee = rng.choice(PAYEES_OUT)
        else:
            cents = rng.randint(1, 10 ** rng.choice((3, 5, 6, 6, 7, 8)))
            payee = rng.choice(PAYEES_IN)
        balance += cents
        if layout["wrapped"] and rng.random() < 0.4:
            payee = f"{payee} {rng.choice(LONG_TAILS)}"
        transactions.append(
            {
                "date": day.isoformat(),
                "amount": cents_text(cents),
                "cents": cents,
                "balance": cents_text(balance) if layout["balance"] == "running" else None,
                "balance_cents": balance,
                "description": payee,
            }
        )
    ends = layout["ends"]
    return {
        "file": f"statement-{writer}-{index:03}.pdf",
        "kind": "statement",
        "writer": writer,
        "layout": layout,
        "date_format": layout["date_format"],
        "currency": currency,
        "opening": cents_text(opening) if ends in ("both", "opening") else None,
        "opening_cents": opening,
        "closing": cents_text(balance) if ends in ("both", "closing") else None,
        "closing_cents": balance,
        "transactions": transactions,
        "bank": rng.choice(("First Example Bank", "Banco Exemplo", "Example Savings plc", "Beispielbank AG")),
        "account": f"{rng.randint(10**7, 10**8 - 1)}",
    }


def statement_rows(case):
    """The statement's table: header and body rows of (text, align) cells, and for each
    body row whether it is a balance line rather than a transaction."""
    layout = case["layout"]
    words = VOCABULARIES[layout["vocabulary"]]
    currency = case["currency"]
    tag = f" ({currency})" if layout["currency"] == "code_in_header" else ""
    header = [words[0], words[1]]
    if layout["amounts"] == "signed":
        header.append(words[2] + tag)
    else:
        header += [words[3] + tag, words[4] + tag]
    running = layout["balance"] == "running"
    if running:
        header.append(words[5] + tag)
    rows = []
    for t in case["transactions"]:
        day = dt.date.fromisoformat(t["date"])
        row = [date_text(day, case["date_format"]), t["description"]]
        if layout["amounts"] == "signed":
            row.append(money_text(t["cents"], layout, currency))
        elif t["cents"] < 0:
            row += [money_text(-t["cents"], layout, currency), ""]
        else:
            row += ["", money_text(t["cents"], layout, currency)]
        if running:
            row.append(money_text(t["balance_cents"], layout, currency))
        rows.append(row)
    return header, rows


def balance_line(case, which):
    """`Opening balance 01/11/2026: 1,204.56`, or None when not printed."""
    layout = case["layout"]
    if case[which] is None:
        return None
    labels = OPENING_LABELS if which == "opening" else CLOSING_LABELS
    label = labels[layout["vocabulary"] % len(labels)]
    t = case["transactions"][0 if which == "opening" else -1]
    day = dt.date.fromisoformat(t["date"])
    cents = case[which + "_cents"]
    return f"{label} {date_text(day, case['date_format'])}: {money_text(cents, layout, case['currency'])}"


def statement_heading(case):
    first = dt.date.fromisoformat(case["transactions"][0]["date"])
    last = dt.date.fromisoformat(case["transactions"][-1]["date"])
    fmt = case["date_format"]
    return [
        case["bank"],
        f"Account number: {case['account']}",
        f"Statement period {date_text(first, fmt)} to {date_text(last, fmt)}",
    ]


# ---------------------------------------------------------------------------------------
# Reports and tables.

WORDS = (
    "the quarterly figures show steady growth across every region while costs stayed within the plan "
    "our teams delivered the new warehouse system ahead of schedule and customers noticed faster shipping "
    "several risks remain open including supplier delays currency movements and the pending audit "
    "management proposes to invest in training and to review the pricing of the older product lines "
    "the board approved the budget for next year after a long discussion about priorities and staffing"
).split()
HEADINGS = (
    "Summary",
    "Results by region",
    "Operations",
    "Risks and open points",
    "Outlook",
    "Staffing",
    "Appendix",
)
REGIONS = ("North", "South", "East", "West", "Central", "Overseas", "Online", "Wholesale")
TABLE_STYLES = ("ruled", "unruled", "merged_header", "boxed")


def sentence(rng, n):
    words = [rng.choice(WORDS) for _ in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def numbers_table(rng, style, rows, columns):
    """A table of regions and figures; `merged_header` puts "Revenue" over the year columns
    and "Region" over two rows."""
    years = [str(2020 + i) for i in range(columns - 1)]
    body = []
    for region in rng.sample(REGIONS, rows):
        body.append([region] + [number_text(rng.randint(100, 9_999_999), "point") for _ in years])
    if style == "merged_header":
        top = ["Region", "Revenue"] + [""] * (columns - 2)
        return {"header_rows": [top, [""] + years], "body": body, "merged": True}
    return {"header_rows": [["Region"] + years], "body": body, "merged": False}


def report_case(rng, writer, index):
    layout = {
        "table": rng.choice(TABLE_STYLES),
        "sections": rng.randint(2, 6),
        "font": rng.choice(("sans", "serif")),
        "columns": rng.choice((1, 1, 2)),
        "list": rng.random() < 0.5,
        "caption": rng.random() < 0.5,
    }
    blocks = [("title", f"Annual report {rng.randint(2019, 2026)} of {rng.choice(REGIONS)} Holdings")]
    table_at = rng.randrange(layout["sections"])
    list_at = rng.randrange(layout["sections"])
    tables = []
    for s in range(layout["sections"]):
        blocks.append(("heading", HEADINGS[s % len(HEADINGS)]))
        for _ in range(rng.randint(1, 3)):
            blocks.append(("paragraph", " ".join(sentence(rng, rng.randint(8, 22)) for _ in range(rng.randint(2, 4)))))
        if layout["list"] and s == list_at:
            blocks.append(("bullets", [sentence(rng, rng.randint(4, 12)) for _ in range(rng.randint(3, 5))]))
        if s == table_at:
            columns = rng.randint(3, 4) if layout["columns"] == 2 else rng.randint(3, 5)
            table = numbers_table(rng, layout["table"], rng.randint(3, 6), columns)
            blocks.append(("table", table))
            tables.append(table)
            if layout["caption"]:
                blocks.append(("caption", f"Table {len(tables)}: revenue by region in thousands"))
    return {
        "file": f"report-{writer}-{index:03}.pdf",
        "kind": "report",
        "writer": writer,
        "layout": layout,
        "blocks": blocks,
        "text": report_text(blocks),
        "tables": [truth_rows(t) for t in tables],
    }


def table_case(rng, writer, index):
    layout = {"table": rng.choice(TABLE_STYLES), "font": rng.choice(("sans", "serif"))}
    table = numbers_table(rng, layout["table"], rng.randint(4, 8), rng.randint(3, 6))
    blocks = [("heading", f"Table {index + 1}: figures by region"), ("table", table)]
    return {
        "file": f"table-{writer}-{index:03}.pdf",
        "kind": "table",
        "writer": writer,
        "layout": layout,
        "blocks": blocks,
        "text": report_text(blocks),
        "tables": [truth_rows(table)],
    }


def truth_rows(table):
    return [list(r) for r in table["header_rows"]] + [list(r) for r in table["body"]]


def visual_rows(table):
    """The rows as a reader sees them: a merged cell's text once."""
    if table["merged"]:
        return [["Region", "Revenue"], table["header_rows"][1][1:]] + [list(r) for r in table["body"]]
    return truth_rows(table)


def report_markdown(blocks):
    """The report as Markdown (for scoring Markdown conversions): headings, paragraphs,
    bullets, captions, and each table as a GFM table of its rows as a reader sees them."""
    out = []
    for kind, value in blocks:
        if kind == "title":
            out.append(f"# {value}")
        elif kind == "heading":
            out.append(f"## {value}")
        elif kind == "bullets":
            out.append("\n".join(f"- {item}" for item in value))
        elif kind == "table":
            rows = visual_rows(value)
            width = max(len(r) for r in rows)
            rows = [r + [""] * (width - len(r)) for r in rows]
            lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
            lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
            out.append("\n".join(lines))
        else:
            out.append(value)
    return "\n\n".join(out) + "\n"


def report_text(blocks):
    """Every word in reading order: the blocks, and each table row by row."""
    parts = []
    for kind, value in blocks:
        if kind == "table":
            parts += [" ".join(row) for row in visual_rows(value)]
        elif kind == "bullets":
            parts += value
        else:
            parts.append(value)
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------
# reportlab


def write_reportlab(case, path):
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4, letter
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import mm
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    styles = getSampleStyleSheet()
    serif = case["layout"].get("font") == "serif"
    body_style = styles["BodyText"]
    if serif:
        body_style.fontName = "Times-Roman"
    size = letter if case["kind"] == "statement" and case["currency"] == "USD" else A4
    if case["layout"].get("columns") == 2:
        from reportlab.platypus import BaseDocTemplate, Frame, PageTemplate

        doc = BaseDocTemplate(path, pagesize=size, leftMargin=18 * mm, rightMargin=18 * mm, topMargin=16 * mm)
        gutter = 8 * mm
        width = (doc.width - gutter) / 2
        frames = [
            Frame(doc.leftMargin, doc.bottomMargin, width, doc.height, id="left"),
            Frame(doc.leftMargin + width + gutter, doc.bottomMargin, width, doc.height, id="right"),
        ]
        doc.addPageTemplates([PageTemplate(id="two", frames=frames)])
    else:
        doc = SimpleDocTemplate(path, pagesize=size, leftMargin=18 * mm, rightMargin=18 * mm, topMargin=16 * mm)
    story = []
    if case["kind"] == "statement":
        layout = case["layout"]
        for i, line in enumerate(statement_heading(case)):
            story.append(Paragraph(html.escape(line), styles["Heading2"] if i == 0 else body_style))
        story.append(Spacer(1, 6 * mm))
        opening = balance_line(case, "opening")
        if opening:
            story.append(Paragraph(html.escape(opening), body_style))
            story.append(Spacer(1, 3 * mm))
        header, rows = statement_rows(case)
        cell = styles["BodyText"].clone("cell", fontSize=8.5, leading=10)
        data = [header] + [[r[0], Paragraph(html.escape(r[1]), cell)] + r[2:] for r in rows]
        numbers = len(header) - 2
        width = size[0] - 36 * mm
        widths = [24 * mm, width - 24 * mm - numbers * 28 * mm] + [28 * mm] * numbers
        commands = [
            ("FONTSIZE", (0, 0), (-1, -1), 8.5),
            ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
            ("ALIGN", (2, 0), (-1, -1), "RIGHT"),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
        ]
        commands += table_rules(layout["header"], colors, 1)
        table = Table(data, colWidths=widths, repeatRows=1)
        table.setStyle(TableStyle(commands))
        story.append(table)
        closing = balance_line(case, "closing")
        if closing:
            story.append(Spacer(1, 3 * mm))
            story.append(Paragraph(html.escape(closing), body_style))
    else:
        for kind, value in case["blocks"]:
            if kind == "title":
                story.append(Paragraph(html.escape(value), styles["Title"]))
            elif kind == "heading":
                story.append(Paragraph(html.escape(value), styles["Heading2"]))
            elif kind == "paragraph":
                story.append(Paragraph(html.escape(value), body_style))
            elif kind == "bullets":
                for item in value:
                    story.append(Paragraph(html.escape(item), body_style, bulletText="\u2022"))
            elif kind == "caption":
                story.append(Paragraph(f"<i>{html.escape(value)}</i>", body_style))
            else:
                story.append(Spacer(1, 3 * mm))
                story.append(reportlab_table(value, case["layout"]["table"], colors, Table, TableStyle))
                story.append(Spacer(1, 3 * mm))
    doc.build(story)


def table_rules(style, colors, header_rows):
    last = header_rows - 1
    if style in ("underlined", "ruled"):
        return [("LINEBELOW", (0, last), (-1, last), 0.8, colors.black)]
    if style in ("boxed", "merged_header"):
        return [("GRID", (0, 0), (-1, -1), 0.5, colors.black)]
    if style == "shaded":
        return [
            ("BACKGROUND", (0, 0), (-1, last), colors.HexColor("#1f3a5f")),
            ("TEXTCOLOR", (0, 0), (-1, last), colors.white),
            ("ROWBACKGROUNDS", (0, header_rows), (-1, -1), [colors.white, colors.HexColor("#eef2f7")]),
        ]
    return []


def reportlab_table(table, style, colors, Table, TableStyle):
    data = truth_rows(table)
    n = len(table["header_rows"])
    commands = [
        ("FONTNAME", (0, 0), (-1, n - 1), "Helvetica-Bold"),
        ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
        ("FONTSIZE", (0, 0), (-1, -1), 9),
    ]
    commands += table_rules(style, colors, n)
    if table["merged"]:
        data[0] = [data[0][0], data[0][1]] + [""] * (len(data[0]) - 2)
        commands += [("SPAN", (1, 0), (-1, 0)), ("ALIGN", (1, 0), (-1, 0), "CENTER"), ("SPAN", (0, 0), (0, 1))]
        data[1][0] = ""
    out = Table(data, hAlign="LEFT")
    out.setStyle(TableStyle(commands))
    return out


# ---------------------------------------------------------------------------------------
# LibreOffice: statements from a spreadsheet, reports and tables from a Word file.

XLSX_DATE = {
    "DD/MM/YYYY": "DD/MM/YYYY",
    "MM/DD/YYYY": "MM/DD/YYYY",
    "YYYY-MM-DD": "YYYY-MM-DD",
    "DD.MM.YYYY": "DD.MM.YYYY",
    "DD MMM YYYY": "DD MMM YYYY",
    "MMM DD, YYYY": "MMM DD, YYYY",
    "DD-MMM-YY": "DD-MMM-YY",
}


def write_xlsx_statement(case, path):
    from openpyxl import Workbook
    from openpyxl.styles import Alignment, Border, Font, PatternFill, Side

    layout = case["layout"]
    wb = Workbook()
    ws = wb.active
    ws.title = "Statement"
    heading = statement_heading(case)
    ws["A1"] = heading[0]
    ws["A1"].font = Font(bold=True, size=14)
    ws["A2"] = heading[1]
    ws["A3"] = heading[2]
    row = 5
    opening = balance_line(case, "opening")
    if opening:
        ws.cell(row=row, column=1, value=opening)
        row += 2
    header, rows = statement_rows(case)
    thin = Side(style="thin", color="000000")
    head_row = row
    for c, text in enumerate(header, start=1):
        cell = ws.cell(row=row, column=c, value=text)
        cell.font = Font(bold=True, color="FFFFFF" if layout["header"] == "shaded" else "000000")
        cell.alignment = Alignment(horizontal="right" if c > 2 else "left")
        if layout["header"] == "underlined":
            cell.border = Border(bottom=thin)
        elif layout["header"] == "boxed":
            cell.border = Border(top=thin, bottom=thin, left=thin, right=thin)
        elif layout["header"] == "shaded":
            cell.fill = PatternFill("solid", fgColor="1F3A5F")
    # Dates as real date cells with the statement's number format; amounts as numbers with
    # a number format where the spreadsheet's own formats can write them, else as text.
    numeric = layout["numbers"] in ("point", "plain") and layout["currency"] in ("none", "code_in_header")
    for t, printed in zip(case["transactions"], rows):
        row += 1
        day = dt.date.fromisoformat(t["date"])
        cell = ws.cell(row=row, column=1, value=day)
        cell.number_format = XLSX_DATE[case["date_format"]]
        cell.alignment = Alignment(horizontal="left")
        ws.cell(row=row, column=2, value=printed[1]).alignment = Alignment(wrap_text=layout["wrapped"], vertical="top")
        for c, text in enumerate(printed[2:], start=3):
            if numeric and text:
                value = xlsx_amount(t, header, c, layout)
                cell = ws.cell(row=row, column=c, value=value / 100)
                grouping = "#,##0.00" if layout["numbers"] == "point" else "0.00"
                cell.number_format = {
                    "minus": f"{grouping};-{grouping}",
                    "parentheses": f"{grouping};({grouping})",
                    "trailing": f"{grouping};{grouping}-",
                }[layout["negatives"]]
            else:
                cell = ws.cell(row=row, column=c, value=text)
            cell.alignment = Alignment(horizontal="right", vertical="top")
            if layout["header"] == "boxed":
                cell.border = Border(top=thin, bottom=thin, left=thin, right=thin)
        if layout["header"] == "boxed":
            for c in (1, 2):
                ws.cell(row=row, column=c).border = Border(top=thin, bottom=thin, left=thin, right=thin)
    closing = balance_line(case, "closing")
    if closing:
        ws.cell(row=row + 2, column=1, value=closing)
    ws.column_dimensions["A"].width = 14
    ws.column_dimensions["B"].width = 46 if layout["wrapped"] else 40
    for c in "CDEF":
        ws.column_dimensions[c].width = 15
    ws.print_title_rows = f"{head_row}:{head_row}"
    ws.page_setup.orientation = "portrait"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    wb.save(path)


def xlsx_amount(t, header, column, layout):
    """The signed cents a numeric cell holds: the amount, a debit or credit magnitude, or
    the balance."""
    running = layout["balance"] == "running"
    if running and column == len(header):
        return t["balance_cents"]
    if layout["amounts"] == "signed":
        return t["cents"]
    return abs(t["cents"])


def write_docx(case, path):
    import docx
    from docx.enum.table import WD_TABLE_ALIGNMENT
    from docx.enum.text import WD_ALIGN_PARAGRAPH
    from docx.shared import Pt

    document = docx.Document()
    style = document.styles["Normal"]
    style.font.name = "Liberation Serif" if case["layout"].get("font") == "serif" else "Liberation Sans"
    style.font.size = Pt(11)
    for kind, value in case["blocks"]:
        if kind == "title":
            document.add_heading(value, level=0)
        elif kind == "heading":
            document.add_heading(value, level=1)
        elif kind == "paragraph":
            document.add_paragraph(value)
        elif kind == "bullets":
            for item in value:
                document.add_paragraph(item, style="List Bullet")
        elif kind == "caption":
            document.add_paragraph(value, style="Caption")
        else:
            data = truth_rows(value)
            table = document.add_table(rows=len(data), cols=len(data[0]))
            table.alignment = WD_TABLE_ALIGNMENT.LEFT
            style_name = {"ruled": "Light List", "unruled": None, "merged_header": "Table Grid", "boxed": "Table Grid"}
            chosen = style_name[case["layout"]["table"]]
            if chosen:
                table.style = document.styles[chosen]
            for r, row in enumerate(data):
                for c, text in enumerate(row):
                    cell = table.cell(r, c)
                    cell.text = text
                    if c > 0 and r >= len(value["header_rows"]):
                        cell.paragraphs[0].alignment = WD_ALIGN_PARAGRAPH.RIGHT
            if value["merged"]:
                top = table.cell(0, 1).merge(table.cell(0, len(data[0]) - 1))
                top.text = "Revenue"
                top.paragraphs[0].alignment = WD_ALIGN_PARAGRAPH.CENTER
                left = table.cell(0, 0).merge(table.cell(1, 0))
                left.text = "Region"
            document.add_paragraph("")
    if case["layout"].get("columns") == 2:
        from docx.oxml.ns import qn
        from docx.oxml import OxmlElement

        cols = OxmlElement("w:cols")
        cols.set(qn("w:num"), "2")
        cols.set(qn("w:space"), "454")
        document.sections[0]._sectPr.append(cols)
    document.save(path)


def libreoffice_convert(sources, out_dir):
    """Converts every source to PDF in one LibreOffice process, with a profile of its own."""
    if not sources:
        return
    profile = tempfile.mkdtemp(prefix="variety-lo-")
    try:
        subprocess.run(
            [
                "soffice",
                f"-env:UserInstallation=file://{profile}",
                "--headless",
                "--norestore",
                "--convert-to",
                "pdf",
                "--outdir",
                out_dir,
                *sources,
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=600,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# Chromium: HTML printed by one browser over its DevTools pipe.

CSS = {
    "underlined": "thead th { border-bottom: 1.5px solid #000; }",
    "ruled": "thead th { border-bottom: 1.5px solid #000; } tbody tr:last-child td { border-bottom: 1px solid #000; }",
    "boxed": "th, td { border: 1px solid #444; }",
    "merged_header": "th, td { border: 1px solid #444; }",
    "shaded": "thead th { background: #1f3a5f; color: #fff; } tbody tr:nth-child(even) td { background: #eef2f7; }",
    "plain": "",
    "unruled": "",
}


def statement_html(case):
    layout = case["layout"]
    header, rows = statement_rows(case)
    head = "".join(f"<th class='{'n' if i > 1 else 't'}'>{html.escape(h)}</th>" for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(f"<td class='{'n' if i > 1 else 't'}'>{html.escape(c)}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    top = "".join(
        f"<{'h2' if i == 0 else 'p'}>{html.escape(line)}</{'h2' if i == 0 else 'p'}>"
        for i, line in enumerate(statement_heading(case))
    )
    opening = balance_line(case, "opening")
    closing = balance_line(case, "closing")
    font = rng_font(case)
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
      @page {{ size: A4; margin: 16mm 15mm; }}
      body {{ font-family: {font}; font-size: 10pt; }}
      table {{ border-collapse: collapse; width: 100%; }}
      th, td {{ padding: 2px 6px; vertical-align: top; }}
      .n {{ text-align: right; white-space: nowrap; }} .t {{ text-align: left; }}
      td.t:nth-child(2) {{ width: 45%; }} td:first-child, th:first-child {{ white-space: nowrap; }}
      {CSS[layout["header"]]}
    </style></head><body>{top}
    {f"<p>{html.escape(opening)}</p>" if opening else ""}
    <table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
    {f"<p>{html.escape(closing)}</p>" if closing else ""}
    </body></html>"""


def rng_font(case):
    fonts = ("'DejaVu Sans', sans-serif", "'Liberation Serif', serif", "'Liberation Sans', Arial, sans-serif")
    return fonts[sum(map(ord, case["file"])) % len(fonts)]


def report_html(case):
    parts = []
    for kind, value in case["blocks"]:
        if kind == "title":
            parts.append(f"<h1>{html.escape(value)}</h1>")
        elif kind == "heading":
            parts.append(f"<h2>{html.escape(value)}</h2>")
        elif kind == "paragraph":
            parts.append(f"<p>{html.escape(value)}</p>")
        elif kind == "bullets":
            parts.append("<ul>" + "".join(f"<li>{html.escape(item)}</li>" for item in value) + "</ul>")
        elif kind == "caption":
            parts.append(f"<p class='caption'>{html.escape(value)}</p>")
        else:
            parts.append(html_table(value))
    font = "'Liberation Serif', serif" if case["layout"].get("font") == "serif" else "'Liberation Sans', sans-serif"
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
      @page {{ size: A4; margin: 20mm; }}
      body {{ font-family: {font}; font-size: 11pt; line-height: 1.35; }}
      table {{ border-collapse: collapse; margin: 8px 0; }}
      th, td {{ padding: 3px 10px; }} td.n {{ text-align: right; }}
      .caption {{ font-style: italic; font-size: 10pt; }}
      {"body { column-count: 2; column-gap: 9mm; } h1 { column-span: all; } table { break-inside: avoid; }"
       if case["layout"].get("columns") == 2 else ""}
      {CSS[case["layout"]["table"]]}
    </style></head><body>{"".join(parts)}</body></html>"""


def html_table(table):
    rows = []
    header = table["header_rows"]
    if table["merged"]:
        years = header[1][1:]
        rows.append(f"<tr><th rowspan='2'>Region</th><th colspan='{len(years)}'>Revenue</th></tr>")
        rows.append("<tr>" + "".join(f"<th>{y}</th>" for y in years) + "</tr>")
    else:
        rows.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header[0]) + "</tr>")
    head = "".join(rows)
    body = "".join(
        "<tr>" + "".join(f"<td class='{'n' if i else 't'}'>{html.escape(c)}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in table["body"]
    )
    return f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"


class Browser:
    """Chromium over `--remote-debugging-pipe`: JSON messages ended by NUL on fds 3 and 4."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="variety-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        program = os.environ.get("PAPERCHAIN_CHROMIUM") or shutil.which("chromium") or "/usr/lib/chromium/chromium"

        def fds():
            # Moved out of the way first: either pipe end may already be fd 3 or 4.
            reader, writer = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(reader, 3)
            os.dup2(writer, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.process = subprocess.Popen(
            [
                program,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--remote-debugging-pipe",
                f"--user-data-dir={self.profile}",
                "about:blank",
            ],
            preexec_fn=fds,
            pass_fds=(),
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0

    def send(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_browser, json.dumps(message).encode() + b"\0")
        return self.wait(lambda m: m.get("id") == self.next_id)

    def wait(self, matches):
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                message = json.loads(raw)
                if matches(message):
                    if "error" in message:
                        raise RuntimeError(f"chromium: {message['error']}")
                    return message
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self.buffer += chunk

    def print(self, page_html, path):
        target = self.send("Target.createTarget", {"url": "about:blank"})["result"]["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["result"]["sessionId"]
        self.send("Page.enable", session=session)
        frame = self.send("Page.getFrameTree", session=session)["result"]["frameTree"]["frame"]["id"]
        self.send("Page.setDocumentContent", {"frameId": frame, "html": page_html}, session=session)
        printed = self.send(
            "Page.printToPDF",
            {"printBackground": True, "preferCSSPageSize": True, "displayHeaderFooter": False},
            session=session,
        )
        with open(path, "wb") as out:
            out.write(base64.b64decode(printed["result"]["data"]))
        self.send("Target.closeTarget", {"targetId": target})

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


# ---------------------------------------------------------------------------------------


def public(case):
    """The manifest's view of a case: no helper fields."""
    out = {k: v for k, v in case.items() if not k.endswith("_cents") and k not in ("blocks",)}
    if case["kind"] == "statement":
        out["transactions"] = [
            {k: v for k, v in t.items() if k in ("date", "amount", "balance", "description")} for t in case["transactions"]
        ]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--per-writer", type=int, default=40, help="statements per writer (reports and tables: half)")
    parser.add_argument("--kinds", default="statements,reports,tables")
    parser.add_argument("--writers", default=",".join(WRITERS))
    args = parser.parse_args()
    kinds = set(args.kinds.split(","))
    writers = [w for w in WRITERS if w in args.writers.split(",")]
    os.makedirs(args.out, exist_ok=True)
    cases = []
    for writer in writers:
        rng = random.Random(f"{args.seed}-{writer}")
        if "statements" in kinds:
            cases += [statement_case(rng, writer, i) for i in range(args.per_writer)]
        if "reports" in kinds:
            cases += [report_case(rng, writer, i) for i in range(max(1, args.per_writer // 2))]
        if "tables" in kinds:
            cases += [table_case(rng, writer, i) for i in range(max(1, args.per_writer // 2))]

    work = tempfile.mkdtemp(prefix="variety-src-")
    try:
        office = []
        browser = None
        for case in cases:
            target = os.path.join(args.out, case["file"])
            if case["writer"] == "reportlab":
                write_reportlab(case, target)
            elif case["writer"] == "libreoffice":
                stem = os.path.splitext(case["file"])[0]
                if case["kind"] == "statement":
                    source = os.path.join(work, stem + ".xlsx")
                    write_xlsx_statement(case, source)
                else:
                    source = os.path.join(work, stem + ".docx")
                    write_docx(case, source)
                office.append(source)
            else:
                browser = browser or Browser()
                page = statement_html(case) if case["kind"] == "statement" else report_html(case)
                browser.print(page, target)
        if browser:
            browser.close()
        libreoffice_convert(office, args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for case in cases:
        if case["kind"] != "statement":
            stem = os.path.splitext(case["file"])[0]
            with open(os.path.join(args.out, stem + ".md"), "w", encoding="utf-8") as out:
                out.write(report_markdown(case["blocks"]))
    missing = [c["file"] for c in cases if not os.path.isfile(os.path.join(args.out, c["file"]))]
    if missing:
        sys.exit(f"not written: {', '.join(missing)}")
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as out:
        json.dump([public(c) for c in cases], out, ensure_ascii=False, indent=1)
    print(len(cases))


if __name__ == "__main__":
    main()
