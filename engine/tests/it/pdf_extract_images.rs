//! `/v1/pdf/extract-images` on a document reportlab writes here from images whose bytes
//! and pixels are known: a JPEG drawn on two pages, a PNG with transparency, a tiny icon.
//! The JPEG must come back byte for byte, the PNG's colour pixels exactly, each drawing
//! where reportlab put it; poppler's `pdfimages -list` must see the same images.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::route::{assert_refused, call_files};
use paperchain_engine::Context;
use paperchain_testkit::b64;
use paperchain_testkit::tools::run_python;
use serde_json::{Value, json};

const ROUTE: &str = "/v1/pdf/extract-images";

/// Writes `photo.jpg` (320 × 240, a gradient), `logo.png` (64 × 48 RGBA), `dot.png`
/// (4 × 4) and `images.pdf`: page 1 draws the photo at (72, 400) 200 × 150 pt, the logo at
/// (300, 420) 96 × 72 and the dot at (500, 700) 8 × 8; page 2 draws the photo again at
/// (100, 100) 400 × 300, and page 3 no image.
const WRITER: &str = r#"
import sys
from PIL import Image
from reportlab.pdfgen import canvas
out = sys.argv[1]
photo = Image.new("RGB", (320, 240))
photo.putdata([(x * 255 // 319, y * 255 // 239, (x + y) % 256) for y in range(240) for x in range(320)])
photo.save(out + "/photo.jpg", quality=90)
logo = Image.new("RGBA", (64, 48))
logo.putdata([((x * 4) % 256, (y * 5) % 256, 200, 255 if (x + y) % 3 else 80) for y in range(48) for x in range(64)])
logo.save(out + "/logo.png")
Image.new("RGB", (4, 4), (255, 0, 0)).save(out + "/dot.png")
c = canvas.Canvas(out + "/images.pdf", pagesize=(612, 792))
c.drawImage(out + "/photo.jpg", 72, 400, 200, 150)
c.drawImage(out + "/logo.png", 300, 420, 96, 72, mask="auto")
c.drawImage(out + "/dot.png", 500, 700, 8, 8)
c.drawString(72, 300, "Page one")
c.showPage()
c.drawImage(out + "/photo.jpg", 100, 100, 400, 300)
c.showPage()
c.drawString(72, 700, "No image here")
c.showPage()
c.save()
print("ok")
"#;

struct Written {
    dir: tempfile::TempDir,
    pdf: Vec<u8>,
}

fn written() -> Written {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(run_python(WRITER, &[dir.path()]).trim(), "ok");
    let pdf = std::fs::read(dir.path().join("images.pdf")).unwrap();
    Written { dir, pdf }
}

async fn extract(pdf: &[u8], more: Value) -> (Vec<(String, Vec<u8>)>, Value) {
    let mut body = common::route::file_body(pdf, "images.pdf", &more);
    body["output"] = "base64".into();
    let set = call_files(&Context::new(), ROUTE, body).await.expect("extract-images succeeds");
    let files: Vec<(String, Vec<u8>)> = set.files.iter().map(|f| (f.filename.clone(), f.bytes.clone())).collect();
    let manifest = files.iter().find(|(name, _)| name == "images.json").expect("images.json is in the result");
    let manifest: Value = serde_json::from_slice(&manifest.1).unwrap();
    (files, manifest)
}

fn file<'a>(files: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &files.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name} in {:?}", names(files))).1
}

fn names(files: &[(String, Vec<u8>)]) -> Vec<&str> {
    files.iter().map(|(n, _)| n.as_str()).collect()
}

/// `pdfimages -list`'s images (not masks): (page, width, height), sorted.
fn pdfimages_list(pdf: &Path) -> Vec<(u32, u32, u32)> {
    let out = Command::new("pdfimages").arg("-list").arg(pdf).output().expect("pdfimages is installed");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut list: Vec<(u32, u32, u32)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(2)
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            (cols.len() > 4 && matches!(cols[2], "image" | "stencil"))
                .then(|| (cols[0].parse().unwrap(), cols[3].parse().unwrap(), cols[4].parse().unwrap()))
        })
        .collect();
    list.sort();
    list
}

/// Every drawing the manifest lists: (page, width, height), sorted.
fn drawings(manifest: &Value) -> Vec<(u32, u32, u32)> {
    let mut list = Vec::new();
    for image in manifest["images"].as_array().unwrap() {
        for place in image["placements"].as_array().unwrap() {
            list.push((
                place["page"].as_u64().unwrap() as u32,
                image["width"].as_u64().unwrap() as u32,
                image["height"].as_u64().unwrap() as u32,
            ));
        }
    }
    list.sort();
    list
}

#[tokio::test]
async fn images_come_out_once_each_as_stored_with_where_they_are_drawn() {
    let w = written();
    let (files, manifest) = extract(&w.pdf, json!({})).await;
    assert_eq!(
        names(&files),
        ["images-page-1-image-1.jpg", "images-page-1-image-2.png", "images-page-1-image-3.png", "images.json"]
    );
    assert_eq!(manifest["count"], 3);
    assert_eq!(manifest["pages"], json!([1, 2, 3]));

    // The JPEG is the file reportlab was given, byte for byte, drawn twice.
    let jpeg = std::fs::read(w.dir.path().join("photo.jpg")).unwrap();
    assert_eq!(file(&files, "images-page-1-image-1.jpg"), jpeg.as_slice());
    let photo = &manifest["images"][0];
    assert_eq!(photo["format"], "jpeg");
    assert_eq!(photo["passed_through"], true);
    // reportlab writes its images in ASCII85 text: the layer is undone, the JPEG kept.
    assert_eq!(photo["filters"], json!(["ASCII85Decode", "DCTDecode"]));
    assert_eq!((photo["width"].as_u64(), photo["height"].as_u64()), (Some(320), Some(240)));
    assert_eq!(photo["drawn"], 2);
    assert_eq!(photo["placements"][0]["page"], 1);
    assert_eq!(photo["placements"][0]["box_pt"], json!([72.0, 400.0, 272.0, 550.0]));
    assert_eq!(photo["placements"][0]["dpi_x"], 115.2);
    assert_eq!(photo["placements"][1]["page"], 2);
    assert_eq!(photo["placements"][1]["box_pt"], json!([100.0, 100.0, 500.0, 400.0]));
    assert_eq!(photo["placements"][1]["dpi_y"], 57.6);
    let listed = paperchain_engine::output::OutFile::pdf("x", jpeg.clone()).sha256();
    assert_eq!(photo["sha256"], listed);

    // The PNG's colour samples are the original's exactly (its transparency is stored
    // apart, as a soft mask).
    let logo = &manifest["images"][1];
    assert_eq!((logo["format"].as_str(), logo["passed_through"].as_bool()), (Some("png"), Some(false)));
    assert_eq!(logo["placements"][0]["box_pt"], json!([300.0, 420.0, 396.0, 492.0]));
    let got = image::load_from_memory(file(&files, "images-page-1-image-2.png")).unwrap().to_rgb8();
    let want = image::open(w.dir.path().join("logo.png")).unwrap().to_rgb8();
    assert_eq!(got.dimensions(), (64, 48));
    assert!(got.pixels().zip(want.pixels()).all(|(a, b)| a == b), "the logo's pixels differ");

    // Everything poppler sees, and nothing else.
    let pdf_path = w.dir.path().join("images.pdf");
    assert_eq!(drawings(&manifest), pdfimages_list(&pdf_path));
}

#[tokio::test]
async fn small_images_are_left_out_and_png_decodes_the_jpeg_too() {
    let w = written();
    let (files, manifest) = extract(&w.pdf, json!({ "min_width": 10, "pages": "2-last", "format": "png" })).await;
    assert_eq!(names(&files), ["images-page-2-image-1.png", "images.json"]);
    assert_eq!(manifest["pages"], json!([2, 3]));
    assert_eq!(manifest["images"][0]["passed_through"], false);
    assert_eq!(manifest["images"][0]["drawn"], 1);
    let got = image::load_from_memory(file(&files, "images-page-2-image-1.png")).unwrap().to_rgb8();
    let want = image::open(w.dir.path().join("photo.jpg")).unwrap().to_rgb8();
    assert_eq!(got.dimensions(), want.dimensions());
    // Two JPEG decoders may differ by a step or two of rounding, not more.
    let worst = got.pixels().zip(want.pixels()).flat_map(|(a, b)| (0..3).map(move |i| a[i].abs_diff(b[i]))).max();
    assert!(worst.unwrap() <= 4, "decoded JPEG differs by {worst:?}");

    let (files, manifest) = extract(&w.pdf, json!({ "min_width": 10, "min_height": 60 })).await;
    assert_eq!(names(&files), ["images-page-1-image-1.jpg", "images.json"]);
    assert_eq!(manifest["skipped_small"], 2);

    // A page without images answers the manifest alone.
    let (files, manifest) = extract(&w.pdf, json!({ "pages": "3" })).await;
    assert_eq!(names(&files), ["images.json"]);
    assert_eq!(manifest["count"], 0);
}

#[tokio::test]
async fn bad_inputs_name_their_field() {
    let w = written();
    let file = json!({ "data": b64(&w.pdf), "filename": "images.pdf" });
    assert_refused(
        &Context::new(),
        ROUTE,
        &[
            (json!({ "file": file, "min_width": 0 }), "/min_width"),
            (json!({ "file": file, "min_height": 100001 }), "/min_height"),
            (json!({ "file": file, "format": "gif" }), "/format"),
            (json!({ "file": file, "pages": "4" }), "/pages"),
            (json!({ "file": file, "dpi": 300 }), "/dpi"),
            (json!({ "file": { "data": b64(b"not a pdf") } }), "/file"),
        ],
    )
    .await;
}
