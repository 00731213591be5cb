//! The README's curl examples, run as written against `paperchain serve`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use paperchain_testkit::corpus::corpus;
use paperchain_testkit::pdf::qpdf_pages_of as qpdf_pages;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn examples() -> Vec<String> {
    let readme = std::fs::read_to_string(paperchain_testkit::workspace_root().join("README.md")).unwrap();
    let start = readme.find("<!-- readme-examples:start -->").expect("README marks its examples");
    let end = readme.find("<!-- readme-examples:end -->").unwrap();
    readme[start..end].split("```sh\n").skip(1).map(|block| block.split("```").next().unwrap().to_string()).collect()
}

#[test]
fn readme_examples_work_as_written() {
    let work = tempfile::tempdir().unwrap();
    std::fs::copy(corpus().join("pdf/sample-files/pdflatex-4-pages.pdf"), work.path().join("a.pdf")).unwrap();
    std::fs::copy(corpus().join("pdf/sample-files/pdflatex-outline.pdf"), work.path().join("b.pdf")).unwrap();

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _server = Server(
        Command::new(env!("CARGO_BIN_EXE_paperchain"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(work.path().join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }

    let blocks = examples();
    assert_eq!(blocks.len(), 5, "merge, inspect, markdown, split, url");
    let mut outputs = Vec::new();
    for block in &blocks {
        let script = block.replace("http://127.0.0.1:8402", &format!("http://127.0.0.1:{port}"));
        let out = Command::new("bash")
            .arg("-euo")
            .arg("pipefail")
            .arg("-c")
            .arg(&script)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "README example failed:\n{script}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    assert_eq!(qpdf_pages(&work.path().join("merged.pdf")), 6, "4 pages of a.pdf and 2 of b.pdf");
    let report: serde_json::Value = serde_json::from_str(&outputs[1]).unwrap();
    assert_eq!(report["page_count"], 6);
    let markdown = std::fs::read_to_string(work.path().join("merged.md")).unwrap();
    assert!(markdown.split_whitespace().count() > 100, "the merged PDF's text: {markdown}");
    assert!(!markdown.contains("no text layer"), "{markdown}");
    let zip = std::fs::read(work.path().join("pages.zip")).unwrap();
    assert_eq!(zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap().len(), 6);
    assert_eq!(qpdf_pages(&work.path().join("rotated.pdf")), 6);
}
