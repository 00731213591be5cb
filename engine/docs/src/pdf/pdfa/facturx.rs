//! Factur-X / ZUGFeRD 2 invoices: reading the Cross Industry Invoice XML, checking it
//! against its profile's required fields and the EN 16931 sums, and the XMP (extension
//! schema and properties) a PDF/A-3 carrying it must have.
//!
//! The checks are the ones a reader of the invoice relies on: who, when, what currency,
//! which totals, and for the profiles with lines each line's name, quantity, price, VAT
//! category and amount; the sums of EN 16931 (BR-CO-10, -13, -14, -15, -16) are done in
//! exact decimals. They are not a full schematron validation.

use crate::office::xml_tree::{self, Node};

const RSM: &str = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100";
const RAM: &str = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100";
const UDT: &str = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100";
const QDT: &str = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100";
/// The namespace of Factur-X's XMP properties.
pub const FX: &str = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#";
/// Largest invoice XML taken.
pub const MAX_XML_BYTES: usize = 16 * 1024 * 1024;
/// Most problems listed in one refusal.
const MAX_PROBLEMS: usize = 50;

/// The smallest complete invoice the checks take: a Factur-X MINIMUM one (for examples
/// and tests).
pub const MINIMUM_EXAMPLE: &str = "<rsm:CrossIndustryInvoice \
    xmlns:rsm=\"urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100\" \
    xmlns:ram=\"urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100\" \
    xmlns:udt=\"urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100\">\
    <rsm:ExchangedDocumentContext><ram:GuidelineSpecifiedDocumentContextParameter>\
    <ram:ID>urn:factur-x.eu:1p0:minimum</ram:ID></ram:GuidelineSpecifiedDocumentContextParameter></rsm:ExchangedDocumentContext>\
    <rsm:ExchangedDocument><ram:ID>1</ram:ID><ram:TypeCode>380</ram:TypeCode>\
    <ram:IssueDateTime><udt:DateTimeString format=\"102\">20260101</udt:DateTimeString></ram:IssueDateTime></rsm:ExchangedDocument>\
    <rsm:SupplyChainTradeTransaction><ram:ApplicableHeaderTradeAgreement>\
    <ram:SellerTradeParty><ram:Name>S</ram:Name><ram:PostalTradeAddress><ram:CountryID>FR</ram:CountryID></ram:PostalTradeAddress></ram:SellerTradeParty>\
    <ram:BuyerTradeParty><ram:Name>B</ram:Name></ram:BuyerTradeParty></ram:ApplicableHeaderTradeAgreement>\
    <ram:ApplicableHeaderTradeDelivery/><ram:ApplicableHeaderTradeSettlement><ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>\
    <ram:SpecifiedTradeSettlementHeaderMonetarySummation><ram:TaxBasisTotalAmount>10.00</ram:TaxBasisTotalAmount>\
    <ram:TaxTotalAmount currencyID=\"EUR\">2.00</ram:TaxTotalAmount><ram:GrandTotalAmount>12.00</ram:GrandTotalAmount>\
    <ram:DuePayableAmount>12.00</ram:DuePayableAmount></ram:SpecifiedTradeSettlementHeaderMonetarySummation>\
    </ram:ApplicableHeaderTradeSettlement></rsm:SupplyChainTradeTransaction></rsm:CrossIndustryInvoice>";

/// A Factur-X profile (conformance level).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// MINIMUM: the header and totals only.
    Minimum,
    /// BASIC WL: the header, VAT breakdown and totals, no lines.
    BasicWl,
    /// BASIC: with invoice lines.
    Basic,
    /// EN 16931 (COMFORT): the European norm's core invoice.
    En16931,
    /// EXTENDED: the norm and more.
    Extended,
    /// XRechnung: the German public-sector rules on EN 16931.
    Xrechnung,
}

impl Profile {
    fn from_guideline(id: &str) -> Option<Profile> {
        let id = id.trim();
        Some(match id {
            "urn:factur-x.eu:1p0:minimum" => Profile::Minimum,
            "urn:factur-x.eu:1p0:basicwl" => Profile::BasicWl,
            "urn:cen.eu:en16931:2017#compliant#urn:factur-x.eu:1p0:basic" => Profile::Basic,
            "urn:cen.eu:en16931:2017" => Profile::En16931,
            "urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended" => Profile::Extended,
            _ if id.starts_with("urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_") => {
                Profile::Xrechnung
            }
            _ => return None,
        })
    }

    /// The value of `fx:ConformanceLevel`.
    pub fn conformance_level(self) -> &'static str {
        match self {
            Profile::Minimum => "MINIMUM",
            Profile::BasicWl => "BASIC WL",
            Profile::Basic => "BASIC",
            Profile::En16931 => "EN 16931",
            Profile::Extended => "EXTENDED",
            Profile::Xrechnung => "XRECHNUNG",
        }
    }

    /// The embedded file's name the standard fixes.
    pub fn file_name(self) -> &'static str {
        match self {
            Profile::Xrechnung => "xrechnung.xml",
            _ => "factur-x.xml",
        }
    }

    /// The relationship of the XML to the PDF: the XML is the invoice's data for the
    /// profiles too thin to be the invoice, else an alternative form of the same invoice.
    pub fn relationship(self) -> &'static str {
        match self {
            Profile::Minimum | Profile::BasicWl => "Data",
            _ => "Alternative",
        }
    }

    fn has_lines(self) -> bool {
        !matches!(self, Profile::Minimum | Profile::BasicWl)
    }

    fn is_en16931(self) -> bool {
        matches!(self, Profile::En16931 | Profile::Extended | Profile::Xrechnung)
    }
}

/// What the invoice says, for the report.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct InvoiceSummary {
    /// The profile the XML declares.
    pub profile: Profile,
    /// The invoice number (BT-1).
    pub number: String,
    /// The issue date, as YYYY-MM-DD (BT-2).
    pub issue_date: String,
    /// The type code (BT-3): 380 invoice, 381 credit note, …
    pub type_code: String,
    /// The seller's name (BT-27).
    pub seller: String,
    /// The buyer's name (BT-44).
    pub buyer: String,
    /// The invoice currency (BT-5).
    pub currency: String,
    /// The total with VAT (BT-112), as written.
    pub grand_total: String,
    /// The amount due (BT-115), as written.
    pub due_payable: String,
    /// Invoice lines.
    pub lines: usize,
}

/// A resolved element: namespace, local name, attributes by local name, text, children.
struct El {
    ns: String,
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    children: Vec<El>,
}

impl El {
    fn child(&self, name: &str) -> Option<&El> {
        self.children.iter().find(|c| c.name == name && known_ns(&c.ns))
    }

    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a El> + 'a {
        self.children.iter().filter(move |c| c.name == name && known_ns(&c.ns))
    }

    fn at(&self, path: &[&str]) -> Option<&El> {
        path.iter().try_fold(self, |el, name| el.child(name))
    }

    fn text_at(&self, path: &[&str]) -> Option<&str> {
        self.at(path).map(|e| e.text.trim()).filter(|t| !t.is_empty())
    }

    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

fn known_ns(ns: &str) -> bool {
    [RSM, RAM, UDT, QDT].contains(&ns)
}

fn resolve(element: &xml_tree::Element, scope: &[(String, String)], depth: usize) -> El {
    let mut scope = scope.to_vec();
    for (key, value) in &element.attrs {
        if key == "xmlns" {
            scope.push((String::new(), value.clone()));
        } else if let Some(prefix) = key.strip_prefix("xmlns:") {
            scope.push((prefix.to_string(), value.clone()));
        }
    }
    let (prefix, name) = element.name.split_once(':').unwrap_or(("", &element.name));
    let ns = scope.iter().rev().find(|(p, _)| p == prefix).map(|(_, ns)| ns.clone()).unwrap_or_default();
    let attrs = element
        .attrs
        .iter()
        .filter(|(k, _)| k != "xmlns" && !k.starts_with("xmlns:"))
        .map(|(k, v)| (k.rsplit(':').next().unwrap_or(k).to_string(), v.clone()))
        .collect();
    let mut text = String::new();
    let mut children = Vec::new();
    for child in &element.children {
        match child {
            Node::Element(e) if depth < 64 => children.push(resolve(e, &scope, depth + 1)),
            Node::Text(t) => text.push_str(t),
            Node::Raw(raw) => {
                if let Some(cdata) = raw.strip_prefix("<![CDATA[").and_then(|r| r.strip_suffix("]]>")) {
                    text.push_str(cdata);
                }
            }
            _ => {}
        }
    }
    El { ns, name: name.to_string(), attrs, text, children }
}

/// An amount in ten-thousandths, exactly; None when it is not a decimal number.
fn amount(text: &str) -> Option<i128> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if whole.is_empty() && fraction.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || fraction.len() > 4
        || whole.len() > 20
    {
        return None;
    }
    let mut value: i128 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let mut fraction = fraction.to_string();
    fraction.extend(std::iter::repeat_n('0', 4 - fraction.len()));
    value = value * 10_000 + fraction.parse::<i128>().ok()?;
    Some(if negative { -value } else { value })
}

fn show(value: i128) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let v = value.abs();
    format!("{sign}{}.{:02}", v / 10_000, (v % 10_000) / 100)
}

/// The text at `path` under `el`; when there is none, a problem naming `term` is added.
fn need(problems: &mut Vec<String>, el: &El, path: &[&str], term: &str) -> Option<String> {
    match el.text_at(path) {
        Some(text) => Some(text.to_string()),
        None => {
            problems.push(format!("{term} is missing ({})", path.join("/")));
            None
        }
    }
}

/// The amount at `path` under `el`; a problem when it is not one, or missing and `required`.
fn money(problems: &mut Vec<String>, el: &El, path: &[&str], term: &str, required: bool) -> Option<i128> {
    match el.text_at(path) {
        Some(text) => {
            let value = amount(text);
            if value.is_none() {
                problems.push(format!("{term} \"{text}\" is not an amount ({})", path.join("/")));
            }
            value
        }
        None => {
            if required {
                problems.push(format!("{term} is missing ({})", path.join("/")));
            }
            None
        }
    }
}

/// A problem when `stated` and `computed` differ by half a cent or more.
fn sum_rule(problems: &mut Vec<String>, rule: &str, what: &str, stated: Option<i128>, computed: Option<i128>) {
    if let (Some(stated), Some(computed)) = (stated, computed)
        && (stated - computed).abs() >= 50
    {
        problems.push(format!("{rule}: {what} is {} but the parts add up to {}", show(stated), show(computed)));
    }
}

/// Checks `xml`; the summary, or every problem found.
pub fn check(xml: &[u8]) -> Result<InvoiceSummary, Vec<String>> {
    if xml.len() > MAX_XML_BYTES {
        return Err(vec![format!("the XML is larger than {} MiB", MAX_XML_BYTES / (1024 * 1024))]);
    }
    let document = xml_tree::parse(xml).map_err(|e| vec![format!("the XML cannot be read: {e}")])?;
    let root = resolve(&document.root, &[], 0);
    if root.name != "CrossIndustryInvoice" || root.ns != RSM {
        let hint = if root.name == "CrossIndustryDocument" {
            " (ZUGFeRD 1.0 is not taken; write ZUGFeRD 2 / Factur-X)"
        } else if root.name == "Invoice" || root.name == "CreditNote" {
            " (a UBL invoice; Factur-X carries the UN/CEFACT Cross Industry Invoice)"
        } else {
            ""
        };
        return Err(vec![format!(
            "the root element is <{}> in namespace \"{}\", not a Cross Industry Invoice (rsm:CrossIndustryInvoice){hint}",
            root.name, root.ns
        )]);
    }
    let mut problems: Vec<String> = Vec::new();
    let guideline =
        root.text_at(&["ExchangedDocumentContext", "GuidelineSpecifiedDocumentContextParameter", "ID"]).unwrap_or("");
    let Some(profile) = Profile::from_guideline(guideline) else {
        return Err(vec![format!(
            "the profile (ExchangedDocumentContext/GuidelineSpecifiedDocumentContextParameter/ID) is \"{guideline}\", \
             not one of Factur-X's (MINIMUM, BASIC WL, BASIC, EN 16931, EXTENDED) or XRechnung's"
        )]);
    };
    let number = need(&mut problems, &root, &["ExchangedDocument", "ID"], "BT-1 the invoice number");
    let type_code = need(&mut problems, &root, &["ExchangedDocument", "TypeCode"], "BT-3 the type code");
    let date_el = root.at(&["ExchangedDocument", "IssueDateTime", "DateTimeString"]);
    let issue_date = match date_el {
        Some(el) if el.attr("format") == Some("102") && valid_date(el.text.trim()) => {
            let d = el.text.trim();
            Some(format!("{}-{}-{}", &d[..4], &d[4..6], &d[6..8]))
        }
        Some(el) => {
            problems.push(format!(
                "BT-2 the issue date \"{}\" is not a date in format 102 (YYYYMMDD, with format=\"102\")",
                el.text.trim()
            ));
            None
        }
        None => {
            problems.push("BT-2 the issue date is missing (ExchangedDocument/IssueDateTime/DateTimeString)".into());
            None
        }
    };
    let Some(trade) = root.child("SupplyChainTradeTransaction") else {
        problems.push("the trade transaction (SupplyChainTradeTransaction) is missing".into());
        return Err(problems);
    };
    let agreement = ["ApplicableHeaderTradeAgreement"];
    let seller = need(&mut problems, trade, &[agreement[0], "SellerTradeParty", "Name"], "BT-27 the seller's name");
    need(
        &mut problems,
        trade,
        &[agreement[0], "SellerTradeParty", "PostalTradeAddress", "CountryID"],
        "BT-40 the seller's country",
    );
    let buyer = need(&mut problems, trade, &[agreement[0], "BuyerTradeParty", "Name"], "BT-44 the buyer's name");
    if profile.is_en16931() {
        need(
            &mut problems,
            trade,
            &[agreement[0], "BuyerTradeParty", "PostalTradeAddress", "CountryID"],
            "BT-55 the buyer's country",
        );
    }
    if profile == Profile::Xrechnung {
        need(&mut problems, trade, &[agreement[0], "BuyerReference"], "BT-10 the buyer reference (Leitweg-ID)");
        need(
            &mut problems,
            trade,
            &[agreement[0], "SellerTradeParty", "URIUniversalCommunication", "URIID"],
            "BT-34 the seller's electronic address",
        );
        need(
            &mut problems,
            trade,
            &[agreement[0], "BuyerTradeParty", "URIUniversalCommunication", "URIID"],
            "BT-49 the buyer's electronic address",
        );
        need(
            &mut problems,
            trade,
            &[agreement[0], "SellerTradeParty", "DefinedTradeContact", "EmailURIUniversalCommunication", "URIID"],
            "BT-43 the seller contact's e-mail",
        );
    }
    let settlement = "ApplicableHeaderTradeSettlement";
    let currency = need(&mut problems, trade, &[settlement, "InvoiceCurrencyCode"], "BT-5 the invoice currency");
    if let Some(c) = &currency
        && !(c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
    {
        problems.push(format!("BT-5 the invoice currency \"{c}\" is not an ISO 4217 code"));
    }
    let sums = [settlement, "SpecifiedTradeSettlementHeaderMonetarySummation"];
    let line_total = money(
        &mut problems,
        trade,
        &[sums[0], sums[1], "LineTotalAmount"],
        "BT-106 the sum of line amounts",
        profile != Profile::Minimum,
    );
    let allowances =
        money(&mut problems, trade, &[sums[0], sums[1], "AllowanceTotalAmount"], "BT-107 the allowances", false);
    let charges = money(&mut problems, trade, &[sums[0], sums[1], "ChargeTotalAmount"], "BT-108 the charges", false);
    let tax_basis =
        money(&mut problems, trade, &[sums[0], sums[1], "TaxBasisTotalAmount"], "BT-109 the total without VAT", true);
    let tax_total = money(
        &mut problems,
        trade,
        &[sums[0], sums[1], "TaxTotalAmount"],
        "BT-110 the VAT total",
        profile != Profile::Minimum,
    );
    let grand_total =
        money(&mut problems, trade, &[sums[0], sums[1], "GrandTotalAmount"], "BT-112 the total with VAT", true);
    let prepaid =
        money(&mut problems, trade, &[sums[0], sums[1], "TotalPrepaidAmount"], "BT-113 the amount paid", false);
    let rounding = money(&mut problems, trade, &[sums[0], sums[1], "RoundingAmount"], "BT-114 the rounding", false);
    let due = money(&mut problems, trade, &[sums[0], sums[1], "DuePayableAmount"], "BT-115 the amount due", true);
    // The VAT total is in the invoice currency.
    if let (Some(el), Some(currency)) = (trade.at(&[sums[0], sums[1], "TaxTotalAmount"]), currency.as_deref())
        && el.attr("currencyID").is_some_and(|c| c != currency)
    {
        problems.push(format!(
            "BT-110 the VAT total is in {} but the invoice is in {currency}",
            el.attr("currencyID").unwrap_or_default()
        ));
    }
    let mut tax_sum: Option<i128> = None;
    if profile != Profile::Minimum {
        let taxes: Vec<&El> =
            trade.child(settlement).map(|s| s.all("ApplicableTradeTax").collect()).unwrap_or_default();
        if taxes.is_empty() {
            problems.push(format!("BG-23 the VAT breakdown is missing ({settlement}/ApplicableTradeTax)"));
        }
        for (i, tax) in taxes.iter().enumerate() {
            let n = i + 1;
            for (name, term) in [
                ("CalculatedAmount", "BT-117 the VAT amount"),
                ("BasisAmount", "BT-116 the taxable amount"),
                ("CategoryCode", "BT-118 the VAT category"),
            ] {
                match tax.text_at(&[name]) {
                    None => problems.push(format!("{term} of VAT breakdown {n} is missing")),
                    Some(text) if name != "CategoryCode" && amount(text).is_none() => {
                        problems.push(format!("{term} of VAT breakdown {n} \"{text}\" is not an amount"))
                    }
                    Some(_) => {}
                }
            }
            if let Some(v) = tax.text_at(&["CalculatedAmount"]).and_then(amount) {
                tax_sum = Some(tax_sum.unwrap_or(0) + v);
            }
        }
    }
    let mut lines = 0;
    let mut lines_sum: i128 = 0;
    if profile.has_lines() {
        for (i, line) in trade.all("IncludedSupplyChainTradeLineItem").enumerate() {
            let n = i + 1;
            lines += 1;
            let checks: [(&[&str], &str); 5] = [
                (&["AssociatedDocumentLineDocument", "LineID"], "BT-126 the line number"),
                (&["SpecifiedTradeProduct", "Name"], "BT-153 the item name"),
                (&["SpecifiedLineTradeAgreement", "NetPriceProductTradePrice", "ChargeAmount"], "BT-146 the net price"),
                (&["SpecifiedLineTradeDelivery", "BilledQuantity"], "BT-129 the quantity"),
                (&["SpecifiedLineTradeSettlement", "ApplicableTradeTax", "CategoryCode"], "BT-151 the VAT category"),
            ];
            for (path, term) in checks {
                if line.text_at(path).is_none() {
                    problems.push(format!("{term} of line {n} is missing ({})", path.join("/")));
                }
            }
            if line.at(&["SpecifiedLineTradeDelivery", "BilledQuantity"]).is_some_and(|q| q.attr("unitCode").is_none())
            {
                problems.push(format!("BT-130 the unit of line {n} is missing (BilledQuantity/@unitCode)"));
            }
            let path =
                ["SpecifiedLineTradeSettlement", "SpecifiedTradeSettlementLineMonetarySummation", "LineTotalAmount"];
            match line.text_at(&path).map(|t| (t, amount(t))) {
                Some((_, Some(v))) => lines_sum += v,
                Some((t, None)) => problems.push(format!("BT-131 the amount of line {n} \"{t}\" is not an amount")),
                None => problems.push(format!("BT-131 the amount of line {n} is missing ({})", path.join("/"))),
            }
        }
        if lines == 0 {
            problems.push("the invoice has no line (IncludedSupplyChainTradeLineItem); the profile needs one".into());
        }
    }
    // EN 16931's sums, to the cent.
    if profile.has_lines() && lines > 0 {
        sum_rule(&mut problems, "BR-CO-10", "the sum of line amounts (BT-106)", line_total, Some(lines_sum));
    }
    sum_rule(
        &mut problems,
        "BR-CO-13",
        "the total without VAT (BT-109)",
        tax_basis,
        line_total.map(|l| l - allowances.unwrap_or(0) + charges.unwrap_or(0)),
    );
    sum_rule(&mut problems, "BR-CO-14", "the VAT total (BT-110)", tax_total, tax_sum);
    sum_rule(
        &mut problems,
        "BR-CO-15",
        "the total with VAT (BT-112)",
        grand_total,
        tax_basis.map(|b| b + tax_total.unwrap_or(0)),
    );
    sum_rule(
        &mut problems,
        "BR-CO-16",
        "the amount due (BT-115)",
        due,
        grand_total.map(|g| g - prepaid.unwrap_or(0) + rounding.unwrap_or(0)),
    );
    if !problems.is_empty() {
        problems.truncate(MAX_PROBLEMS);
        return Err(problems);
    }
    Ok(InvoiceSummary {
        profile,
        number: number.unwrap_or_default(),
        issue_date: issue_date.unwrap_or_default(),
        type_code: type_code.unwrap_or_default(),
        seller: seller.unwrap_or_default(),
        buyer: buyer.unwrap_or_default(),
        currency: currency.unwrap_or_default(),
        grand_total: grand_total.map(show).unwrap_or_default(),
        due_payable: due.map(show).unwrap_or_default(),
        lines,
    })
}

fn valid_date(text: &str) -> bool {
    if text.len() != 8 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let (y, m, d) = (text[..4].parse::<i32>(), text[4..6].parse::<u8>(), text[6..].parse::<u8>());
    match (y, m, d) {
        (Ok(y), Ok(m), Ok(d)) => {
            time::Month::try_from(m).ok().and_then(|m| time::Date::from_calendar_date(y, m, d).ok()).is_some()
        }
        _ => false,
    }
}

/// The XMP the PDF/A-3 carrying the invoice needs: the extension schema describing
/// Factur-X's properties, and the properties.
pub fn xmp(profile: Profile) -> Vec<String> {
    let property = |name: &str, description: &str| {
        format!(
            "<rdf:li rdf:parseType=\"Resource\"><pdfaProperty:name>{name}</pdfaProperty:name>\
             <pdfaProperty:valueType>Text</pdfaProperty:valueType><pdfaProperty:category>external</pdfaProperty:category>\
             <pdfaProperty:description>{description}</pdfaProperty:description></rdf:li>"
        )
    };
    let schema = format!(
        "<rdf:Description rdf:about=\"\" xmlns:pdfaExtension=\"http://www.aiim.org/pdfa/ns/extension/\" \
         xmlns:pdfaSchema=\"http://www.aiim.org/pdfa/ns/schema#\" xmlns:pdfaProperty=\"http://www.aiim.org/pdfa/ns/property#\">\
         <pdfaExtension:schemas><rdf:Bag><rdf:li rdf:parseType=\"Resource\">\
         <pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>\
         <pdfaSchema:namespaceURI>{FX}</pdfaSchema:namespaceURI><pdfaSchema:prefix>fx</pdfaSchema:prefix>\
         <pdfaSchema:property><rdf:Seq>{}{}{}{}</rdf:Seq></pdfaSchema:property>\
         </rdf:li></rdf:Bag></pdfaExtension:schemas></rdf:Description>",
        property("DocumentFileName", "The name of the embedded XML document"),
        property("DocumentType", "The type of the hybrid document in capital letters, e.g. INVOICE or ORDER"),
        property("Version", "The actual version of the standard applying to the embedded XML document"),
        property("ConformanceLevel", "The conformance level of the embedded XML document"),
    );
    let values = format!(
        "<rdf:Description rdf:about=\"\" xmlns:fx=\"{FX}\"><fx:DocumentType>INVOICE</fx:DocumentType>\
         <fx:DocumentFileName>{}</fx:DocumentFileName><fx:Version>1.0</fx:Version>\
         <fx:ConformanceLevel>{}</fx:ConformanceLevel></rdf:Description>",
        profile.file_name(),
        profile.conformance_level()
    );
    vec![schema, values]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_exact() {
        assert_eq!(amount("1204.56"), Some(12_045_600));
        assert_eq!(amount("-4.8"), Some(-48_000));
        assert_eq!(amount(".5"), Some(5_000));
        for bad in ["", "1,5", "1.23456", "1e3", "abc", "-", "."] {
            assert_eq!(amount(bad), None, "{bad}");
        }
        assert_eq!(show(12_045_600), "1204.56");
        assert_eq!(show(-48_000), "-4.80");
        assert!(valid_date("20240229") && !valid_date("20230229") && !valid_date("2024-02-29"));
    }

    #[test]
    fn the_example_passes() {
        let summary = check(MINIMUM_EXAMPLE.as_bytes()).unwrap();
        assert_eq!((summary.profile, summary.grand_total.as_str()), (Profile::Minimum, "12.00"));
    }

    #[test]
    fn other_documents_are_named() {
        let ubl = br#"<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"/>"#;
        assert!(check(ubl).unwrap_err()[0].contains("UBL"));
        assert!(check(b"<!DOCTYPE x [<!ENTITY a 'b'>]><x/>").unwrap_err()[0].contains("document type"));
        assert!(check(b"not xml <").is_err());
    }
}
