//! `POST /v1/pdf/inspect`: what a PDF holds (page sizes, text layer or scan, forms,
//! attachments, JavaScript, bookmarks) without changing it.
//!
//! This file is the route; the reading is [`crate::pdf::inspect`]'s, whose walks of the
//! document's graph keep a visited set and a depth or node cap: hostile files have cycles.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::Reply;
use crate::pdf::SourcePdf;
use crate::price::Price;

pub use crate::pdf::inspect::{
    AttachmentReport, AttachmentSource, AttachmentsReport, BookmarksReport, EncryptionReport, FormsReport,
    InspectReport, JavaScriptReport, JsLocation, PageKind, PageReport, inspect,
};

/// Request of `/v1/pdf/inspect`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectInput {
    /// The PDF.
    pub file: FileInput,
}

/// A checked inspect call.
pub struct Inspect {
    source: SourcePdf,
}

/// The route.
pub struct InspectRoute;

impl Route for InspectRoute {
    type Input = InspectInput;
    type Prepared = Inspect;
    type Output = InspectReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/inspect",
        operation: "inspect_pdf_document",
        family: Family::Docs,
        summary: "Page sizes, text layer or scan, forms, attachments, JavaScript, bookmarks",
        description: "Reports what a PDF holds without changing it: each page's visible size, rotation, whether it has \
            text and how many images it draws (text, scan, mixed or empty), encryption, version, linearization, form \
            fields and signatures, embedded files, where JavaScript hides (document, pages, annotations, fields, \
            bookmarks) and the outline's size. Text in the answer comes from the file.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: InspectInput, ctx: &Context) -> Result<Inspect, EngineError> {
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        Ok(Inspect { source })
    }

    fn quote(call: &Inspect) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: Inspect, _ctx: &Context) -> Result<Reply<InspectReport>, EngineError> {
        blocking(move || Ok(Reply::Json(inspect(&call.source.doc)))).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::parse_body;
    use crate::pdf::inspect::PAGE_CONTENT_LIMIT;
    use base64::Engine as _;
    use lopdf::content::Content;
    use lopdf::content::Operation;
    use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
    use lopdf::{StringFormat, dictionary};

    fn text_content(text: &str) -> Vec<u8> {
        Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 12.into()]),
                Operation::new("Tj", vec![Object::string_literal(text)]),
                Operation::new("ET", vec![]),
            ],
        }
        .encode()
        .unwrap()
    }

    fn js_action(doc: &mut Document, script: &str) -> ObjectId {
        doc.add_object(dictionary! { "S" => "JavaScript", "JS" => Object::string_literal(script) })
    }

    /// Four pages: text (rotated 90, cropped), image only, text drawn through a form
    /// XObject with an image (and a form that draws itself), and a blank page. Plus an
    /// embedded file, a file attachment annotation, JavaScript in the OpenAction and a
    /// field, an outline with children (and a cycle), and an AcroForm.
    fn sample() -> Document {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        let image = doc.add_object(Stream::new(
            dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 1, "Height" => 1,
            "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8 },
            vec![0x80],
        ));
        let form_id = doc.new_object_id();
        let form_content = b"q /Im1 Do Q BT /F1 10 Tf (in a form) Tj ET /Fm1 Do".to_vec();
        doc.objects.insert(
            form_id,
            Object::Stream(Stream::new(
                dictionary! { "Type" => "XObject", "Subtype" => "Form", "BBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
                    "Resources" => dictionary! { "Font" => dictionary! { "F1" => font },
                        "XObject" => dictionary! { "Im1" => image, "Fm1" => form_id } } },
                form_content,
            )),
        );
        let resources = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font },
            "XObject" => dictionary! { "Im1" => image, "Fm1" => form_id },
        });
        let contents = [
            text_content("Hello"),
            b"q 100 0 0 100 0 0 cm /Im1 Do Q BI /W 1 /H 1 /BPC 8 /CS /G ID \x80 EI".to_vec(),
            b"/Fm1 Do /Missing Do".to_vec(),
            b"BT () Tj ET".to_vec(),
        ];
        let js_field = js_action(&mut doc, "app.alert(1)");
        let notes = doc.add_object(Stream::new(dictionary! { "Type" => "EmbeddedFile" }, b"hello world".to_vec()));
        let spec = doc.add_object(dictionary! {
            "Type" => "Filespec",
            "F" => Object::string_literal("notes.txt"),
            "UF" => Object::string_literal("notes.txt"),
            "Desc" => Object::string_literal("Some notes"),
            "EF" => dictionary! { "F" => notes },
        });
        let packed = doc.add_object(Stream::new(
            dictionary! { "Params" => dictionary! { "Size" => 42 }, "Filter" => "FlateDecode" },
            vec![1, 2],
        ));
        let annot_spec = doc.add_object(dictionary! {
            "Type" => "Filespec",
            "UF" => Object::String(vec![0xFE, 0xFF, 0x00, 0xE9, 0x00, b'.', 0x00, b'c'], StringFormat::Hexadecimal),
            "EF" => dictionary! { "F" => packed },
        });
        let attach_annot = doc.add_object(dictionary! {
            "Type" => "Annot", "Subtype" => "FileAttachment", "FS" => annot_spec,
            "Contents" => Object::string_literal("from an annotation"),
            "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()],
        });
        let sig_widget = doc.new_object_id();
        let text_field = doc.new_object_id();
        let mut kids: Vec<Object> = Vec::new();
        for (i, content) in contents.into_iter().enumerate() {
            let content_id = doc.add_object(Stream::new(dictionary! {}, content));
            let mut page = dictionary! {
                "Type" => "Page",
                "Parent" => pages_id,
                "Contents" => content_id,
                "Resources" => resources,
            };
            match i {
                0 => {
                    page.set("Rotate", 90);
                    page.set("CropBox", vec![10.into(), 20.into(), 310.5.into(), 420.into()]);
                    page.set("Annots", vec![attach_annot.into(), text_field.into()]);
                }
                1 => page.set("Annots", vec![sig_widget.into()]),
                _ => {}
            }
            kids.push(doc.add_object(page).into());
        }
        let first_page = kids[0].clone();
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids, "Count" => 4,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            }),
        );
        // Fields: a text field merged with its widget (JavaScript on keystroke), a
        // signature field, and a radio group with two widgets.
        doc.objects.insert(
            text_field,
            Object::Dictionary(dictionary! {
                "FT" => "Tx", "T" => Object::string_literal("name"), "Subtype" => "Widget",
                "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()],
                "AA" => dictionary! { "K" => js_field },
            }),
        );
        doc.objects.insert(
            sig_widget,
            Object::Dictionary(dictionary! {
                "FT" => "Sig", "T" => Object::string_literal("sig"), "Subtype" => "Widget",
                "Rect" => vec![0.into(), 0.into(), 10.into(), 10.into()],
            }),
        );
        let radio = doc.new_object_id();
        let w1 = doc.add_object(dictionary! { "Subtype" => "Widget", "Parent" => radio });
        let w2 = doc.add_object(dictionary! { "Subtype" => "Widget", "Parent" => radio });
        doc.objects.insert(
            radio,
            Object::Dictionary(dictionary! { "FT" => "Btn", "T" => Object::string_literal("choice"), "Kids" => vec![w1.into(), w2.into()] }),
        );
        let group = doc.new_object_id();
        let child = doc.add_object(dictionary! { "T" => Object::string_literal("child"), "Parent" => group });
        // The group lists itself among its kids: a cycle.
        doc.objects.insert(
            group,
            Object::Dictionary(dictionary! { "FT" => "Sig", "T" => Object::string_literal("group"), "Kids" => vec![child.into(), group.into()] }),
        );
        let acroform =
            dictionary! { "Fields" => vec![text_field.into(), sig_widget.into(), radio.into(), group.into()] };

        // Outline: A (children A1, A2 (child A2a)), B; B's /Next points back at A.
        let outlines = doc.new_object_id();
        let ids: Vec<ObjectId> = (0..5).map(|_| doc.new_object_id()).collect();
        let [a, a1, a2, a2a, b] = [ids[0], ids[1], ids[2], ids[3], ids[4]];
        let item = |title: &str, extra: Dictionary| {
            let mut d = dictionary! { "Title" => Object::string_literal(title), "Parent" => outlines };
            d.extend(&extra);
            Object::Dictionary(d)
        };
        doc.objects.insert(a, item("A", dictionary! { "First" => a1, "Last" => a2, "Next" => b }));
        doc.objects.insert(a1, item("A1", dictionary! { "Next" => a2 }));
        doc.objects.insert(a2, item("A2", dictionary! { "First" => a2a, "Prev" => a1 }));
        doc.objects.insert(a2a, item("A2a", dictionary! {}));
        doc.objects.insert(b, item("B", dictionary! { "Next" => a, "Prev" => a }));
        doc.objects
            .insert(outlines, Object::Dictionary(dictionary! { "Type" => "Outlines", "First" => a, "Last" => b }));

        let open = js_action(&mut doc, "this.print()");
        let open_chain = doc.add_object(
            dictionary! { "S" => "GoTo", "D" => vec![first_page, "Fit".into()], "Next" => vec![open.into()] },
        );
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog",
            "Pages" => pages_id,
            "AcroForm" => acroform,
            "Outlines" => outlines,
            "OpenAction" => open_chain,
            "Names" => dictionary! {
                "EmbeddedFiles" => dictionary! { "Kids" => vec![Object::Dictionary(dictionary! {
                    "Names" => vec![Object::string_literal("notes.txt"), spec.into()] })] },
            },
        });
        doc.trailer.set("Root", catalog);
        let info = doc.add_object(dictionary! {
            "Producer" => Object::string_literal("Test producer"),
            "Title" => Object::string_literal("Test title"),
        });
        doc.trailer.set("Info", info);
        doc
    }

    fn encode(doc: &mut Document) -> Vec<u8> {
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    async fn call(pdf: &[u8], password: Option<&str>) -> Result<InspectReport, EngineError> {
        let data = base64::engine::general_purpose::STANDARD.encode(pdf);
        let password = password.map(|p| format!(r#", "password": "{p}""#)).unwrap_or_default();
        let body = format!(r#"{{"file": {{"data": "{data}"{password}}}}}"#);
        let input: InspectInput = parse_body(body.as_bytes())?;
        let ctx = Context::new();
        let prepared = InspectRoute::prepare(input, &ctx).await?;
        match InspectRoute::run(prepared, &ctx).await? {
            Reply::Json(report) => Ok(report),
            Reply::Files(_) => panic!("inspect answered a file"),
        }
    }

    #[tokio::test]
    async fn reports_pages_forms_attachments_javascript_and_bookmarks() {
        let report = call(&encode(&mut sample()), None).await.unwrap();
        assert_eq!(report.page_count, 4);
        assert_eq!(report.version, "1.5");
        assert!(!report.encrypted);
        assert!(report.encryption.is_none());
        assert!(!report.linearized);
        assert_eq!(report.producer.as_deref(), Some("Test producer"));
        assert_eq!(report.title.as_deref(), Some("Test title"));

        let p = &report.pages;
        assert_eq!((p[0].number, p[0].rotation), (1, 90));
        // Crop box 300.5 x 400, shown rotated.
        assert_eq!((p[0].width_pt, p[0].height_pt), (400.0, 300.5));
        assert_eq!((p[0].has_text, p[0].images, p[0].kind), (true, 0, PageKind::Text));
        assert_eq!((p[1].width_pt, p[1].height_pt), (612.0, 792.0));
        assert_eq!((p[1].has_text, p[1].images, p[1].kind), (false, 2, PageKind::Scan));
        assert_eq!((p[2].has_text, p[2].images, p[2].kind), (true, 1, PageKind::Mixed));
        assert_eq!((p[3].has_text, p[3].images, p[3].kind), (false, 0, PageKind::Empty));

        assert_eq!(report.forms.fields, 4, "{:?}", report.forms);
        assert!(report.forms.acroform);
        assert!(!report.forms.xfa);
        assert_eq!(report.forms.signatures, 2);

        assert_eq!(report.attachments.count, 2);
        let files = &report.attachments.files;
        assert_eq!(files[0].name, "notes.txt");
        assert_eq!(files[0].bytes, Some(11));
        assert_eq!(files[0].description.as_deref(), Some("Some notes"));
        assert_eq!(files[0].source, AttachmentSource::EmbeddedFiles);
        assert_eq!(files[1].name, "é.c");
        assert_eq!(files[1].bytes, Some(42));
        assert_eq!(files[1].description.as_deref(), Some("from an annotation"));
        assert_eq!((files[1].source, files[1].page), (AttachmentSource::Annotation, Some(1)));

        assert!(report.javascript.present);
        let locations: Vec<JsLocation> = report.javascript.locations.iter().copied().collect();
        assert_eq!(locations, vec![JsLocation::OpenAction, JsLocation::FormField]);

        assert_eq!((report.bookmarks.count, report.bookmarks.depth), (5, 3));
        assert!(report.warnings.is_empty(), "{:?}", report.warnings);

        let json = serde_json::to_value(&report).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "page_count",
                "pages",
                "encrypted",
                "version",
                "linearized",
                "forms",
                "attachments",
                "javascript",
                "bookmarks",
                "producer",
                "title",
                "encryption",
                "warnings"
            ]
        );
        assert_eq!(json["javascript"]["locations"], serde_json::json!(["open_action", "form_field"]));
        assert_eq!(json["pages"][1]["kind"], "scan");
    }

    #[tokio::test]
    async fn finds_javascript_everywhere() {
        let mut doc = sample();
        let catalog_id = doc.trailer.get(b"Root").unwrap().as_reference().unwrap();
        let names_js = js_action(&mut doc, "1");
        let doc_aa = js_action(&mut doc, "2");
        let page_aa = js_action(&mut doc, "3");
        let outline_js =
            doc.add_object(dictionary! { "S" => "URI", "URI" => Object::string_literal(" JavaScript:alert(1)") });
        let link = doc.add_object(dictionary! { "Type" => "Annot", "Subtype" => "Link",
        "A" => dictionary! { "S" => "Rendition", "JS" => Object::string_literal("4") } });
        {
            let catalog = doc.get_dictionary_mut(catalog_id).unwrap();
            catalog.set("AA", dictionary! { "WC" => doc_aa });
            let names = catalog.get_mut(b"Names").unwrap().as_dict_mut().unwrap();
            names.set("JavaScript", dictionary! { "Names" => vec![Object::string_literal("init"), names_js.into()] });
        }
        let last_page = doc.page_iter().nth(3).unwrap();
        let page = doc.get_dictionary_mut(last_page).unwrap();
        page.set("AA", dictionary! { "O" => page_aa });
        page.set("Annots", vec![link.into()]);
        let outline_a = doc.get_dictionary(catalog_id).unwrap().get(b"Outlines").unwrap().as_reference().unwrap();
        let first = doc.get_dictionary(outline_a).unwrap().get(b"First").unwrap().as_reference().unwrap();
        doc.get_dictionary_mut(first).unwrap().set("A", outline_js);
        let report = call(&encode(&mut doc), None).await.unwrap();
        let locations: Vec<JsLocation> = report.javascript.locations.iter().copied().collect();
        assert_eq!(
            locations,
            vec![
                JsLocation::NamesTree,
                JsLocation::OpenAction,
                JsLocation::AdditionalActions,
                JsLocation::Annotation,
                JsLocation::FormField,
                JsLocation::Outline
            ]
        );
    }

    #[tokio::test]
    async fn plain_document_has_nothing_to_report() {
        let mut doc = Document::with_version("1.4");
        let pages_id = doc.new_object_id();
        let content = doc.add_object(Stream::new(dictionary! {}, b"0 0 m 10 10 l S".to_vec()));
        let page = doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "MediaBox" => vec![0.into(), 0.into(), 595.276.into(), 841.89.into()], "Rotate" => -90 });
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id, "Version" => "1.7" });
        doc.trailer.set("Root", catalog);
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert_eq!(report.version, "1.7");
        assert_eq!(
            (report.pages[0].width_pt, report.pages[0].height_pt, report.pages[0].rotation),
            (841.89, 595.28, 270)
        );
        assert_eq!(report.pages[0].kind, PageKind::Empty);
        assert!(!report.forms.acroform);
        assert_eq!(report.attachments.count, 0);
        assert!(!report.javascript.present);
        assert_eq!((report.bookmarks.count, report.bookmarks.depth), (0, 0));
        assert_eq!((report.producer, report.title), (None, None));
    }

    #[tokio::test]
    async fn undecodable_content_reads_as_no_text() {
        let mut doc = sample();
        let first = doc.page_iter().next().unwrap();
        let content = doc.get_page_contents(first)[0];
        let stream = doc.get_object_mut(content).unwrap().as_stream_mut().unwrap();
        // A filter lopdf cannot decode.
        stream.dict.set("Filter", "JBIG2Decode");
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert!(!report.pages[0].has_text);
        assert!(report.pages[1].images > 0);
        assert!(report.warnings.iter().any(|w| w.starts_with("page 1:")), "{:?}", report.warnings);
    }

    /// Cycles and wrong types everywhere: the walks end and report what they could read.
    #[tokio::test]
    async fn survives_cycles_and_wrong_types() {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        // A chain of 40 nested forms with text at the bottom, and a form that draws itself.
        let mut inner = doc.add_object(Stream::new(
            dictionary! { "Subtype" => "Form", "Resources" => dictionary! {} },
            b"BT (deep) Tj ET".to_vec(),
        ));
        for _ in 0..40 {
            inner = doc.add_object(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "X" => inner } } },
                b"/X Do".to_vec(),
            ));
        }
        let looping = doc.new_object_id();
        doc.objects.insert(
            looping,
            Object::Stream(Stream::new(
                dictionary! { "Subtype" => "Form", "Resources" => dictionary! { "XObject" => dictionary! { "L" => looping } } },
                b"/L Do /L Do".to_vec(),
            )),
        );
        let content = doc.add_object(Stream::new(dictionary! {}, b"/Deep Do /Loop Do BT (x".to_vec()));
        let annots = doc.new_object_id();
        let self_next = doc.new_object_id();
        doc.objects.insert(self_next, Object::Dictionary(dictionary! { "S" => "GoTo", "Next" => self_next }));
        let annot = doc.add_object(dictionary! { "Subtype" => "Link", "A" => self_next, "AA" => 5 });
        doc.objects.insert(annots, Object::Array(vec![annot.into(), annot.into(), Object::Integer(3)]));
        let mut kids = Vec::new();
        for _ in 0..3 {
            kids.push(Object::from(doc.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content, "Annots" => annots,
                "MediaBox" => vec![0.into(), 0.into(), Object::Name(b"NaN".to_vec()), 100.into()], "Rotate" => 45,
                "Resources" => dictionary! { "XObject" => dictionary! { "Deep" => inner, "Loop" => looping } },
            })));
        }
        doc.objects
            .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => 3 }));
        let tree = doc.new_object_id();
        doc.objects.insert(
            tree,
            Object::Dictionary(dictionary! { "Kids" => vec![tree.into(), Object::Integer(1)], "Names" => vec![Object::string_literal("odd")] }),
        );
        let item = doc.new_object_id();
        doc.objects
            .insert(item, Object::Dictionary(dictionary! { "Title" => "loop", "First" => item, "Next" => item }));
        let field = doc.new_object_id();
        doc.objects.insert(field, Object::Dictionary(dictionary! { "T" => "f", "Kids" => vec![field.into()] }));
        let catalog = doc.add_object(dictionary! {
            "Type" => "Catalog", "Pages" => pages_id, "OpenAction" => self_next,
            "Names" => dictionary! { "EmbeddedFiles" => tree, "JavaScript" => "bogus" },
            "Outlines" => dictionary! { "First" => item },
            "AcroForm" => dictionary! { "Fields" => vec![field.into(), Object::Null], "XFA" => Object::Null },
            "AA" => vec![Object::Integer(1)],
        });
        doc.trailer.set("Root", catalog);
        doc.trailer.set("Info", Object::Integer(7));
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert_eq!(report.page_count, 3);
        for page in &report.pages {
            // The box with a name for a number falls back to Letter; 45 degrees reads as 0; the text 40 forms deep is
            // past the depth cap and the unterminated string is no text.
            assert_eq!((page.width_pt, page.height_pt, page.rotation), (612.0, 792.0, 0));
            assert_eq!((page.has_text, page.kind), (false, PageKind::Empty));
        }
        assert_eq!(report.attachments.count, 0);
        assert!(!report.javascript.present);
        assert_eq!((report.bookmarks.count, report.bookmarks.depth), (1, 1));
        // The self-referencing field has no child field besides itself: it reads as one terminal field.
        assert_eq!((report.forms.fields, report.forms.acroform, report.forms.xfa), (1, true, false));
        assert_eq!((report.producer, report.title), (None, None));
    }

    #[tokio::test]
    async fn content_past_the_page_limit_is_not_scanned() {
        let mut doc = sample();
        let first = doc.page_iter().next().unwrap();
        let content = doc.get_page_contents(first)[0];
        let mut bomb = vec![b' '; PAGE_CONTENT_LIMIT + 1];
        bomb.extend_from_slice(b"BT (late) Tj ET");
        let mut stream = Stream::new(dictionary! {}, bomb);
        stream.compress().unwrap();
        assert!(stream.content.len() < 1024 * 1024);
        doc.objects.insert(content, Object::Stream(stream));
        let report = call(&encode(&mut doc), None).await.unwrap();
        assert!(!report.pages[0].has_text);
        assert!(report.pages[2].has_text);
        assert!(
            report.warnings.iter().any(|w| w.starts_with("page 1: the content is larger")),
            "{:?}",
            report.warnings
        );
    }

    #[tokio::test]
    async fn refuses_bad_input() {
        let e = call(b"hello", None).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_pdf", Some("/file")));
        let e = parse_body::<InspectInput>(br#"{"file": {"data": "aGVsbG8="}, "pages": "1"}"#).unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("unknown_field", Some("/pages")));
        let e = parse_body::<InspectInput>(br#"{}"#).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/file"));
    }

    const CORPUS: &str = "/work/shared/corpus/pdf";

    fn corpus_password(name: &str) -> Option<&'static str> {
        match name {
            "enc-XI-R6,V5,U=view,O=master.pdf" => Some("view"),
            "libreoffice-writer-password.pdf" => Some("openpassword"),
            "20-pages.pdf" => Some("user"),
            _ => None,
        }
    }

    /// Known corpus files read as their makers describe them.
    #[tokio::test]
    async fn corpus_samples() {
        let read = |name: &str| std::fs::read(format!("{CORPUS}/{name}")).ok();
        let Some(attachment) = read("sample-files/with-attachment.pdf") else { return };
        let report = call(&attachment, None).await.unwrap();
        assert!(report.attachments.count >= 1, "{:?}", report.attachments);
        if let Some(bytes) = read("sample-files/pdflatex-outline.pdf") {
            let report = call(&bytes, None).await.unwrap();
            assert!(report.bookmarks.count > 0);
        }
        if let Some(bytes) = read("qpdf/enc-XI-R6,V5,U=view,O=master.pdf") {
            let report = call(&bytes, corpus_password("enc-XI-R6,V5,U=view,O=master.pdf")).await.unwrap();
            assert!(report.encrypted);
            let encryption = report.encryption.unwrap();
            assert_eq!((encryption.v, encryption.r, encryption.key_bits), (5, 6, Some(256)));
            assert_eq!(encryption.method.as_deref(), Some("AESV3"));
        }
        if let Some(bytes) = read("qpdf/c-linearized.pdf") {
            assert!(call(&bytes, None).await.unwrap().linearized);
        }
    }
}
