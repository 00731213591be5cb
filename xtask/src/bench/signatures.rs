//! The `signatures` group: signing a 100-page document (PAdES, a visible field) with
//! Paperchain's `sign_pdf` against pyHanko's signer, and validating the signed file with
//! `verify_pdf_signatures` against pyHanko's validator, both trusting the same root.
//!
//! The document is cut with qpdf from the corpus thesis the `pages` group cuts its inputs
//! from. The signer is the RSA-2048 PKCS#12 of a test CA made with `openssl` in the work
//! folder (`paperchain_testkit::pki`); pyHanko runs the test support's scripts
//! (`PYHANKO_SIGN`, `PYHANKO_VALIDATE`) with the tools venv's Python. Neither side fetches
//! anything: no time stamp, no revocation data.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, ensure};
use paperchain_testkit::pki::{PYHANKO_SIGN, PYHANKO_VALIDATE, Pki, RSA_SIGNER};
use serde_json::{Value, json};

use super::{Comparison, Expect, Kind, Produces, Side};
use crate::cmd::Cmd;

/// The corpus document the input is cut from (117 pages), as in `pages.rs`.
const SOURCE: &str = "pdf/sample-files/GeoTopo-komprimiert.pdf";
/// Pages of the signed document.
const PAGES: u32 = 100;
/// The visible signature's box on page 1 in PDF points from the bottom left corner (as
/// pyHanko takes it): left, bottom, right, top.
const BOX: [f64; 4] = [72.0, 72.0, 272.0, 132.0];

/// `PYHANKO_VALIDATE` writing its answer to the file named by its first argument instead of
/// standard output, so both sides leave their answer in a file.
fn validate_script() -> String {
    format!("import sys\nsys.stdout = open(sys.argv.pop(1), 'w')\n{PYHANKO_VALIDATE}\nsys.stdout.close()\n")
}

pub(super) fn cases(paperchain: &Path, python: &Path, corpus: &Path, dir: &Path) -> anyhow::Result<Vec<Comparison>> {
    let source = corpus.join(SOURCE);
    ensure!(source.is_file(), "{} is missing from the corpus", source.display());
    let inputs = dir.join("inputs");
    for folder in [&inputs, &dir.join("paperchain"), &dir.join("pyhanko")] {
        std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    }
    let document = inputs.join("document.pdf");
    println!("bench: cutting {PAGES} pages of {} into {}", source.display(), document.display());
    // The source's linearization hints are slightly off: a warning, not a reason to stop.
    Cmd::new("qpdf")
        .args(["--warning-exit-0", "--empty", "--pages"])
        .arg(&source)
        .arg(format!("1-{PAGES}"))
        .arg("--")
        .arg(&document)
        .run()?;
    let pages = super::pdf_pages(&document)?;
    ensure!(pages == PAGES, "{} has {pages} pages, expected {PAGES}", document.display());
    let height = page_height(&document)?;

    println!("bench: making a test CA in {}", dir.join("pki").display());
    let pki = Pki::new(&dir.join("pki"));
    let (p12, root) = (pki.rsa_p12(), pki.root_pem());
    let sign_script = inputs.join("pyhanko_sign.py");
    let validate = inputs.join("pyhanko_validate.py");
    std::fs::write(&sign_script, PYHANKO_SIGN).context("writing the pyHanko signer")?;
    std::fs::write(&validate, validate_script()).context("writing the pyHanko validator")?;
    // The certificate's password beside the data `--file` puts there, and the same box from
    // the page's top left corner: an input file, as the box depends on the page's height.
    let [left, bottom, right, top] = BOX;
    let sign_input = inputs.join("sign.json");
    let input = json!({
        "certificate": {"password": pki.password()},
        "box_pt": [left, height - top, right, height - bottom],
    });
    std::fs::write(&sign_input, input.to_string()).context("writing the sign input")?;
    let sign_with_paperchain = |output: PathBuf| {
        let mut side = Side::paperchain(
            paperchain,
            "sign_pdf",
            None,
            &[("file".into(), &document), ("certificate".into(), &p12)],
            Produces::Pdf(output),
        );
        side.args.extend(["--input".into(), sign_input.clone().into()]);
        side
    };

    // The file both sides validate, signed once by Paperchain, untimed.
    let signed = inputs.join("signed.pdf");
    let once = sign_with_paperchain(signed.clone());
    Cmd::new(&once.program).args(&once.args).run().context("signing the file to validate")?;

    let theirs = dir.join("pyhanko/signed.pdf");
    let visible = format!("1,{left},{bottom},{right},{top}");
    let sign = Comparison {
        table: "signatures",
        tool: "pyHanko",
        operation: format!("sign: {pages} pages, PAdES, visible"),
        paperchain: sign_with_paperchain(dir.join("paperchain/signed.pdf")),
        reference: Side {
            program: python.to_path_buf(),
            args: vec![
                sign_script.into(),
                document.clone().into(),
                theirs.clone().into(),
                p12.clone().into(),
                pki.password().into(),
                "--pades".into(),
                "--visible".into(),
                visible.into(),
            ],
            stdin: None,
            output: Produces::Pdf(theirs),
        },
        kind: Kind::Pdf,
        // Page 1 holds the signature's appearance, drawn differently by each side.
        expect: Expect {
            files: 1,
            pages_each: pages,
            rotations: None,
            text_samples: vec![(0, 2), (0, pages)],
            absent_text: None,
        },
        source: None,
        note: Some(
            "Both sign with the RSA-2048 key and chain of the same PKCS#12 file: SHA-256, ETSI.CAdES.detached (PAdES \
             B-B, no time stamp, nothing fetched), appended as an incremental update with a new field in the same box \
             of page 1, each drawing its own appearance. pyHanko starts a Python interpreter and loads its libraries \
             on every run; `paperchain call` takes the PDF and the PKCS#12 base64-encoded in its JSON input.",
        ),
    };

    let ours_expected: Vec<(&'static str, Value)> = vec![
        ("/count", json!(1)),
        ("/all_valid", json!(true)),
        ("/trust_roots", json!(1)),
        ("/signatures/0/status", json!("valid")),
        ("/signatures/0/intact", json!(true)),
        ("/signatures/0/valid", json!(true)),
        ("/signatures/0/trusted", json!(true)),
        ("/signatures/0/signer/common_name", json!(RSA_SIGNER)),
        ("/signatures/0/sub_filter", json!("ETSI.CAdES.detached")),
        ("/signatures/0/coverage/whole_file", json!(true)),
        ("/signatures/0/modifications/level", json!("none")),
        ("/signatures/1", Value::Null),
    ];
    let theirs_expected: Vec<(&'static str, Value)> = vec![
        ("/signatures/0/bottom_line", json!(true)),
        ("/signatures/0/intact", json!(true)),
        ("/signatures/0/valid", json!(true)),
        ("/signatures/0/trusted", json!(true)),
        ("/signatures/0/signer/common_name", json!(RSA_SIGNER)),
        ("/signatures/0/subfilter", json!("/ETSI.CAdES.detached")),
        ("/signatures/0/coverage", json!("ENTIRE_FILE")),
        ("/signatures/0/modification_level", json!("NONE")),
        ("/signatures/1", Value::Null),
    ];
    let theirs = dir.join("pyhanko/validation.json");
    let check = Comparison {
        table: "signatures",
        tool: "pyHanko",
        operation: format!("validate: Paperchain's signature, {pages} pages"),
        paperchain: Side::paperchain(
            paperchain,
            "verify_pdf_signatures",
            None,
            &[("file".into(), &signed), ("trust_roots/0".into(), &root)],
            Produces::Json(dir.join("paperchain/validation.json"), ours_expected),
        ),
        reference: Side {
            program: python.to_path_buf(),
            args: vec![validate.into(), theirs.clone().into(), signed.clone().into(), "--root".into(), root.into()],
            stdin: None,
            output: Produces::Json(theirs, theirs_expected),
        },
        // Unused, as the expected files: both answers are JSON, checked by their expected values.
        kind: Kind::Pdf,
        expect: Expect { files: 1, pages_each: pages, rotations: None, text_samples: Vec::new(), absent_text: None },
        source: None,
        note: Some(
            "Both check the signature's digest over the whole file, its RSA signature, the path from the signer \
             through the intermediate CA to the one trusted root (no revocation data: pyHanko soft-fails, Paperchain \
             does not check it) and what later revisions changed; the answers are JSON, checked field by field. \
             pyHanko starts a Python interpreter and loads its libraries on every run.",
        ),
    };
    Ok(vec![sign, check])
}

/// The height in points of page 1, as `pdfinfo` reads it (`Page    1 size: 595.276 x 841.89 pts`).
fn page_height(pdf: &Path) -> anyhow::Result<f64> {
    let info = Cmd::new("pdfinfo").args(["-f", "1", "-l", "1"]).arg(pdf).quiet().read()?;
    info.lines()
        .filter_map(|line| line.strip_prefix("Page    1 size:"))
        .find_map(|size| size.split_whitespace().nth(2)?.parse().ok())
        .with_context(|| format!("pdfinfo gave no size for page 1 of {}", pdf.display()))
}
