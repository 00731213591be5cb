//! `/v1/pdf/e-invoice` on an invoice reportlab writes here and a Cross Industry Invoice of
//! the EN 16931 profile that the Factur-X library's own XSD accepts. Read back with that
//! library (it finds the XML and checks it against the profile's XSD), pikepdf (the
//! attachment's relationship, media type and association, the XMP) and qpdf, poppler.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::route::{call_files, file_body};
use paperchain_engine::Context;
use paperchain_testkit::b64;
use paperchain_testkit::invoice::{EN16931, en16931_invoice as valid, invoice_xml as xml};
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/e-invoice";

const INVOICE_PDF: &str = r#"
import sys
from reportlab.pdfgen import canvas
c = canvas.Canvas(sys.argv[1] + "/invoice.pdf", pagesize=(595, 842))
c.setTitle("Invoice F2026-117")
c.setFont("Helvetica-Bold", 18)
c.drawString(72, 770, "Atelier Rosa SARL - Invoice F2026-117")
c.setFont("Helvetica", 11)
for i, line in enumerate(["Consulting, day rate   3 x 800.00   2,400.00", "Travel   1 x 150.50   150.50",
                          "Total without VAT   2,550.50", "VAT 20%   510.10", "Total   3,060.60 EUR"]):
    c.drawString(72, 700 - 18 * i, line)
c.save()
print("ok")
"#;

fn body(pdf: &[u8], invoice: &str) -> Value {
    file_body(pdf, "invoice.pdf", &json!({ "invoice": { "data": b64(invoice.as_bytes()), "filename": "in.xml" } }))
}

/// What the Factur-X library and pikepdf read from an e-invoice.
const READER: &str = r#"
import sys, json
import facturx, pikepdf
from lxml import etree
data = open(sys.argv[1], "rb").read()
# The XSD check needs the profile's own XSD; the MINIMUM sample carries lines it does not allow.
name, xml = facturx.get_xml_from_pdf(data, check_xsd=sys.argv[2] == "xsd")
level = facturx.get_level(etree.fromstring(xml))
pdf = pikepdf.open(sys.argv[1])
meta = pdf.open_metadata()
FX = "{urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#}"
specs = {n: s for n, s in pdf.attachments.items()}
spec = specs[name].obj
print(json.dumps({
    "name": name, "xml": xml.decode(), "level": level, "attachments": sorted(specs),
    "relationship": str(spec.AFRelationship), "subtype": str(spec.EF.F.Subtype),
    "in_af": any(s.objgen == spec.objgen for s in pdf.Root.AF),
    "part": meta.get("pdfaid:part"), "fx_level": meta.get(FX + "ConformanceLevel"), "fx_file": meta.get(FX + "DocumentFileName"),
    "fx_type": meta.get(FX + "DocumentType"),
}))
"#;

fn read(path: &Path, xsd: bool) -> Value {
    let check = Path::new(if xsd { "xsd" } else { "no-xsd" });
    serde_json::from_str(run_python(READER, &[path, check]).trim()).unwrap()
}

/// The Factur-X library's XSD check of an invoice XML: the sample is a real one.
const XSD_CHECK: &str = r#"
import sys, facturx
facturx.xml_check_xsd(open(sys.argv[1], "rb").read())
print("ok")
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_en16931_invoice_is_embedded_byte_for_byte_in_a_pdfa_3b() {
    let (dir, pdf) = common::written_by(INVOICE_PDF, "invoice.pdf");
    let invoice = valid();
    let xml_path = dir.path().join("in.xml");
    std::fs::write(&xml_path, &invoice).unwrap();
    assert_eq!(run_python(XSD_CHECK, &[&xml_path]).trim(), "ok");

    let set = call_files(&Context::new(), ROUTE, body(&pdf, &invoice)).await.unwrap();
    assert_eq!(set.files[0].filename, "invoice-e-invoice.pdf");
    let report = set.report.clone().unwrap();
    assert_eq!(report["invoice"]["profile"], "en16931", "{report}");
    assert_eq!(report["invoice"]["number"], "F2026-117");
    assert_eq!(report["invoice"]["issue_date"], "2026-12-01");
    assert_eq!(report["invoice"]["seller"], "Atelier Rosa SARL");
    assert_eq!(report["invoice"]["grand_total"], "3060.60");
    assert_eq!(report["invoice"]["lines"], 2);
    assert_eq!(report["pdfa"]["conformance"], "PDF/A-3b");
    let out = dir.path().join("out.pdf");
    std::fs::write(&out, &set.files[0].bytes).unwrap();
    let check = Command::new("qpdf").arg("--check").arg(&out).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
    let fonts = String::from_utf8_lossy(&Command::new("pdffonts").arg(&out).output().unwrap().stdout).into_owned();
    assert!(fonts.lines().skip(2).all(|l| l.split_whitespace().rev().nth(4) == Some("yes")), "{fonts}");

    let seen = read(&out, true);
    assert_eq!(seen["name"], "factur-x.xml");
    assert_eq!(seen["xml"], invoice.as_str(), "the XML is not the one sent");
    assert_eq!(seen["level"], "en16931");
    assert_eq!(seen["relationship"], "/Alternative");
    assert_eq!(seen["subtype"], "/text/xml");
    assert_eq!(seen["in_af"], true);
    assert_eq!(seen["part"], "3");
    assert_eq!((seen["fx_level"].as_str(), seen["fx_file"].as_str()), (Some("EN 16931"), Some("factur-x.xml")));
    assert_eq!(seen["fx_type"], "INVOICE");

    // Made again from its own output: the XML is replaced, not added twice.
    let again = call_files(&Context::new(), ROUTE, body(&set.files[0].bytes, &invoice)).await.unwrap();
    assert_eq!(again.report.as_ref().unwrap()["replaced"], json!(["factur-x.xml"]));
    let again_path = dir.path().join("again.pdf");
    std::fs::write(&again_path, &again.files[0].bytes).unwrap();
    assert_eq!(read(&again_path, true)["attachments"], json!(["factur-x.xml"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_minimum_invoice_is_data_of_the_pdf() {
    let (dir, pdf) = common::written_by(INVOICE_PDF, "invoice.pdf");
    let invoice = xml("urn:factur-x.eu:1p0:minimum", "<ram:Name>Atelier Rosa SARL</ram:Name>", "3060.60");
    let set = call_files(&Context::new(), ROUTE, body(&pdf, &invoice)).await.unwrap();
    let out = dir.path().join("out.pdf");
    std::fs::write(&out, &set.files[0].bytes).unwrap();
    let seen = read(&out, false);
    assert_eq!((seen["relationship"].as_str(), seen["fx_level"].as_str()), (Some("/Data"), Some("MINIMUM")));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_problem_of_the_xml_is_named_at_once() {
    let (_dir, pdf) = common::written_by(INVOICE_PDF, "invoice.pdf");
    let ctx = Context::new();
    // No seller name, and a total with VAT that is not the sum of its parts.
    let broken = xml(EN16931, "", "3100.00");
    let error = call_files(&ctx, ROUTE, body(&pdf, &broken)).await.unwrap_err();
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("invalid_invoice", Some("/invoice")), "{error:?}");
    for want in ["BT-27 the seller's name is missing", "BR-CO-15", "3100.00", "3060.60"] {
        assert!(error.message.contains(want), "{want}: {}", error.message);
    }
    let cases = [
        (xml("urn:example:unknown", "<ram:Name>A</ram:Name>", "3060.60"), "not one of Factur-X's"),
        (r#"<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"/>"#.to_string(), "UBL"),
        ("<?xml version='1.0'?><!DOCTYPE x [<!ENTITY a 'aaaa'>]><x>&a;</x>".to_string(), "document type"),
        ("this is not XML".to_string(), "cannot be read"),
    ];
    for (invoice, want) in cases {
        let error = call_files(&ctx, ROUTE, body(&pdf, &invoice)).await.unwrap_err();
        assert_eq!(error.code.as_ref(), "invalid_invoice", "{error:?}");
        assert!(error.message.contains(want), "{want}: {}", error.message);
    }
    let mut with_password = body(&pdf, &valid());
    with_password["invoice"]["password"] = json!("secret");
    let error = call_files(&ctx, ROUTE, with_password).await.unwrap_err();
    assert_eq!(error.field.as_deref(), Some("/invoice/password"), "{error:?}");
    let missing = file_body(&pdf, "invoice.pdf", &json!({}));
    let error = call_files(&ctx, ROUTE, missing).await.unwrap_err();
    assert!(error.message.contains("invoice"), "{error:?}");
}
