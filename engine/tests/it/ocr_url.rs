//! `/v1/ocr`: images of a page whose text is known, served by a loopback server (allowed
//! for these tests only): PNG, JPEG, a transparent PNG, a photo taken sideways; the
//! 20-megapixel limit, files that are not images, blocked targets, languages.

use crate::common;

use std::collections::HashMap;
use std::net::IpAddr;

use common::route::call;
use image::ImageEncoder as _;
use paperchain_engine::fetch::AddressPolicy;
use paperchain_engine::{Context, ErrorKind};
use paperchain_testkit::loopback::serve_files;
use paperchain_testkit::scan::{Gray, char_accuracy, render, sample_page};
use serde_json::json;

const ROUTE: &str = "/v1/ocr";

fn loopback_allowed() -> Context {
    Context::with_policy(AddressPolicy::allowing(["127.0.0.1".parse::<IpAddr>().unwrap()]))
}

fn png(gray: &Gray) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(&gray.pixels, gray.width as u32, gray.height as u32, image::ExtendedColorType::L8)
        .unwrap();
    out
}

fn jpeg(gray: &Gray) -> Vec<u8> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80)
        .encode(&gray.pixels, gray.width as u32, gray.height as u32, image::ExtendedColorType::L8)
        .unwrap();
    out
}

/// Black text on a transparent background: every pixel black, the ink in the alpha channel.
fn transparent_png(gray: &Gray) -> Vec<u8> {
    let pixels: Vec<u8> = gray.pixels.iter().flat_map(|&v| [0, 255 - v]).collect();
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(&pixels, gray.width as u32, gray.height as u32, image::ExtendedColorType::La8)
        .unwrap();
    out
}

#[tokio::test]
async fn images_of_a_page_are_read_whatever_their_format_and_turn() {
    let (pdf, truth) = sample_page();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("page.pdf");
    std::fs::write(&source, &pdf).unwrap();
    let page = render(&source, 1, 300);
    let files: HashMap<String, (&'static str, Vec<u8>)> = [
        ("page.png".to_string(), ("image/png", png(&page))),
        ("page.jpg".to_string(), ("image/jpeg", jpeg(&page.noisy(30, 10, 3)))),
        ("clear.png".to_string(), ("image/png", transparent_png(&page))),
        ("sideways.jpg".to_string(), ("image/jpeg", jpeg(&page.quarter_turned()))),
    ]
    .into_iter()
    .collect();
    let base = serve_files(files).await;
    let ctx = loopback_allowed();
    for (name, turned) in [("page.png", 0), ("page.jpg", 0), ("clear.png", 0), ("sideways.jpg", 270)] {
        let answer = call(&ctx, ROUTE, json!({ "url": format!("{base}/{name}") })).await.unwrap();
        let text = answer["text"].as_str().unwrap();
        let score = char_accuracy(text, &truth);
        assert!(score >= 0.98, "{name}: {score:.4}\n{text}");
        assert_eq!(answer["turned"], json!(turned), "{name}");
        assert!(answer["confidence"].as_u64().unwrap() >= 80, "{name}: {answer}");
        assert!(answer["words"].as_u64().unwrap() >= 90, "{name}: {answer}");
        assert_eq!(answer["languages"], json!(["eng"]));
        let (w, h) = if turned == 0 { (page.width, page.height) } else { (page.height, page.width) };
        assert_eq!((answer["width"].as_u64().unwrap(), answer["height"].as_u64().unwrap()), (w as u64, h as u64));
        assert_eq!(answer["url"], json!(format!("{base}/{name}")));
    }
}

#[tokio::test]
async fn large_images_files_that_are_not_images_and_blocked_targets_are_refused() {
    // 5,000 × 4,001 white pixels: 20.005 megapixels, a small file.
    let big = Gray { width: 5000, height: 4001, pixels: vec![255; 5000 * 4001] };
    let files: HashMap<String, (&'static str, Vec<u8>)> = [
        ("big.png".to_string(), ("image/png", png(&big))),
        ("doc.pdf".to_string(), ("application/pdf", b"%PDF-1.7\n%%EOF\n".to_vec())),
        ("broken.png".to_string(), ("image/png", b"\x89PNG\r\n\x1a\nnot really".to_vec())),
        ("empty.png".to_string(), ("image/png", Vec::new())),
    ]
    .into_iter()
    .collect();
    let base = serve_files(files).await;
    let ctx = loopback_allowed();
    let refused = |name: &str| {
        let ctx = ctx.clone();
        let url = format!("{base}/{name}");
        async move { call(&ctx, ROUTE, json!({ "url": url })).await.unwrap_err() }
    };
    let err = refused("big.png").await;
    assert_eq!(
        (err.kind, err.code.as_ref(), err.field.as_deref()),
        (ErrorKind::TooLarge, "file_too_large", Some("/url"))
    );
    assert!(err.message.contains("5000 × 4001"), "{}", err.message);
    let err = refused("doc.pdf").await;
    assert_eq!((err.code.as_ref(), err.field.as_deref()), ("unsupported_format", Some("/url")));
    assert!(err.message.contains("a PDF"), "{}", err.message);
    assert_eq!(refused("broken.png").await.code, "unsupported_format");
    assert_eq!(refused("empty.png").await.code, "empty_file");
    assert_eq!(refused("missing.png").await.code, "fetch_failed");

    // Without the test's allowance, loopback is a blocked target, refused before any fetch.
    let err = call(&Context::new(), ROUTE, json!({ "url": format!("{base}/big.png") })).await.unwrap_err();
    assert_eq!((err.code.as_ref(), err.field.as_deref()), ("blocked_target", Some("/url")));

    let err =
        call(&ctx, ROUTE, json!({ "url": format!("{base}/big.png"), "languages": ["eng", "xyz"] })).await.unwrap_err();
    assert_eq!((err.code.as_ref(), err.field.as_deref()), ("unknown_language", Some("/languages/1")));
    let err = call(&ctx, ROUTE, json!({ "url": "  " })).await.unwrap_err();
    assert_eq!(err.field.as_deref(), Some("/url"));
}
