//! The app started, serving, and a PDF rotated and saved in its window; approvals, the
//! tray and a second launch.

use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

#[test]
fn the_app_starts_serves_and_saves_a_rotated_pdf_in_a_real_window() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let (_display, display) = start_display();
    let listen = free_port();
    let (driver_port, native_port) = (free_port(), free_port());
    // What the driver, WebKitWebDriver and the app say, kept beside the screenshots.
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let log = std::fs::File::create(artifacts.join("app.log")).unwrap();
    let bus_dir = home.join("bus");
    std::fs::create_dir_all(&bus_dir).unwrap();
    let (_bus, bus) = start_session_bus(&bus_dir);
    // A notification server on that bus and display, as a desktop has.
    let dunst = Command::new("dunst")
        .env("DISPLAY", &display)
        .env("DBUS_SESSION_BUS_ADDRESS", &bus)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dunst (Debian's dunst; `cargo xtask setup` installs it)");
    let _dunst = Running(dunst);
    // The hosted service the wallet pays: the sandbox, run by the `paperchain` the
    // workspace's tests built beside this app (`cargo xtask test` runs those first).
    let app = Path::new(env!("CARGO_BIN_EXE_paperchain-app"));
    let paperchain = paperchain_binary();
    let (_sandbox, sandbox) = start_sandbox(&paperchain, &home.join("sandbox"), free_port());
    // A desktop session of its own: a home, the display, the session bus.
    let user = Desktop::new(home, &display, &bus, listen, &sandbox);
    let session_env = |command: &mut Command| user.apply(command);
    // The user's wallet holds the sandbox payer's key and pays the sandbox, with a day cap
    // on Base; a payment above half the price of a gas read waits for approval.
    let service = sandbox["base_url"].as_str().unwrap().to_string();
    let quoted = json_of(http().post(format!("{service}/v1/chain/gas")).send_json(json!({"chain": "base"})).unwrap());
    let price: u64 = quoted["accepts"][0]["amount"].as_str().unwrap().parse().unwrap();
    user.set_up_wallet(&sandbox, &service);
    user.paperchain(&["config", "set", "policy.approve_above", &dollars(price / 2)], "");
    // The app inherits the driver's environment.
    let mut driver = Command::new(tool("tauri-driver"));
    driver
        .args(["--port", &driver_port.to_string(), "--native-port", &native_port.to_string()])
        .args(["--native-driver", "/usr/bin/WebKitWebDriver"])
        .stdout(log.try_clone().unwrap())
        .stderr(log.try_clone().unwrap());
    session_env(&mut driver);
    let mut driver = driver.spawn().expect("tauri-driver");
    wait_for_port(&mut driver, driver_port, "tauri-driver");
    let _driver = Running(driver);
    let session = Session::start(&format!("http://127.0.0.1:{driver_port}"), app, &[]);

    // The window shows the app of its own server, which answers on localhost.
    session.wait_for("[data-testid=dropzone]", Duration::from_secs(60));
    let shown = session.get("/url");
    let base = format!("http://127.0.0.1:{listen}");
    assert_eq!(shown.as_str().unwrap().split('#').next(), Some(format!("{base}/app/").as_str()));
    let openapi = json_of(http().get(format!("{base}/openapi.json")).call().unwrap());
    assert!(openapi["paths"]["/v1/pdf/rotate"].is_object(), "the server's OpenAPI has the routes");
    // It claimed the data folder: `paperchain` and the MCP relay find it by this file.
    let claims = server_claims(&home.join("run"));
    assert_eq!(claims.len(), 1, "{claims:?}");
    let claim: Value = serde_json::from_slice(&std::fs::read(&claims[0]).unwrap()).unwrap();
    assert_eq!(claim["base_url"], base);
    assert_ne!(claim["pid"], std::process::id());
    let token = session.script("return document.querySelector('meta[name=paperchain-token]').content", json!([]));
    let desktop = json_of(
        http()
            .get(format!("{base}/app/api/session"))
            .header("x-paperchain-token", token.as_str().unwrap())
            .call()
            .unwrap(),
    );
    assert_eq!(desktop["desktop"], true, "the page is told it is in the desktop app: {desktop}");
    session.screenshot("01-documents");

    // A PDF chosen in the window, rotated.
    let pdf = std::fs::canonicalize(corpus().join("pdf/sample-files/pdflatex-4-pages.pdf")).unwrap();
    session.send_keys(&session.wait_for("#file-picker", Duration::from_secs(5)), &pdf.display().to_string());
    session.wait_for("#operation", Duration::from_secs(10));
    session.select_by_label("Operation", "/v1/pdf/rotate");
    session.wait_for("form.route-form", Duration::from_secs(10));
    session.wait_for(".thumbnails button", Duration::from_secs(60));
    session.select_by_label("Degrees", "90");
    session.screenshot("02-rotate-form");
    session.click(&session.wait_for("form.route-form button[type=submit]", Duration::from_secs(5)));
    let save = session.wait_for(".results .result button.primary", Duration::from_secs(60));
    session.wait_for(".results .thumbnails figure", Duration::from_secs(60));
    session.show(".results");
    session.screenshot("03-rotate-result");

    // Saved where the user says in the system's dialog.
    let chosen = home.join("Documents/rotated by the app.pdf");
    std::fs::create_dir_all(chosen.parent().unwrap()).unwrap();
    session.click(&save);
    answer_save_dialog(&display, "Save a result", &chosen);
    let said = session.wait_for_text("[data-testid=saved]", "Saved to", Duration::from_secs(30));
    assert!(said.contains(&chosen.display().to_string()), "{said}");
    qpdf(&["--check"], &chosen);
    assert_eq!(qpdf(&["--show-npages"], &chosen), "4");
    let pages = Command::new("pdfinfo").args(["-f", "1", "-l", "4"]).arg(&chosen).output().unwrap();
    let rotations = String::from_utf8_lossy(&pages.stdout)
        .lines()
        .filter(|l| l.contains("rot:"))
        .map(|l| l.ends_with(" 90"))
        .collect::<Vec<_>>();
    assert_eq!(rotations, vec![true; 4], "every page turned by 90 degrees");
    let leftovers: Vec<_> =
        std::fs::read_dir(chosen.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "nothing but the saved file beside it: {leftovers:?}");
    session.show(".results");
    session.screenshot("04-saved");

    // The other screens.
    session.open("chain", "#chain-query");
    session.screenshot("05-chain");
    session.open("spend", "table.ledger");
    session.wait_for_text("table.ledger", "Paperchain app", Duration::from_secs(10));
    session.screenshot("06-wallet-and-spend");
    session.show("table.ledger");
    session.screenshot("06-ledger");
    session.open("agents", "#start-at-login");
    session.screenshot("07-agents");

    // Start at login, switched on and off from the Agents screen.
    let entry = home.join("config/autostart/paperchain.desktop");
    session.click(&session.wait_for("#start-at-login", Duration::from_secs(5)));
    session.wait_for_text("#login-status", "starts at login", Duration::from_secs(10));
    let text = std::fs::read_to_string(&entry).expect("the autostart entry");
    assert!(text.contains(&format!("\nExec={} --hidden\n", app.display())), "{text}");
    session.screenshot("08-start-at-login");
    session.click(&session.wait_for("#start-at-login", Duration::from_secs(5)));
    session.wait_for_text("#login-status", "no longer", Duration::from_secs(10));
    assert!(!entry.exists(), "the autostart entry is removed");

    // An agent's call routed to the sandbox costs more than the user approves without
    // asking: a native notification says who asks for what, and the window's dialog
    // lets the user approve it; the call then goes on and is paid.
    let agent = format!("{base}/v1/chain/gas");
    let call = std::thread::spawn(move || {
        let answer = http()
            .post(agent)
            .header("user-agent", "test-agent <b>1.0</b>")
            .header("paperchain-route", "hosted")
            .send_json(json!({"chain": "base"}))
            .unwrap();
        let paid = answer.headers().get("paperchain-paid").map(|v| v.to_str().unwrap().to_string());
        (answer.status().as_u16(), paid)
    });
    let (summary, body) = shown_notification(&bus);
    assert_eq!(summary, "A payment waits for your approval");
    let host = service.trim_start_matches("http://").rsplit_once(':').unwrap().0.to_string();
    let amount = format!("${}", dollars(price));
    assert!(body.contains("test-agent &lt;b&gt;1.0&lt;/b&gt; asks to pay"), "the caller's name as text: {body}");
    assert!(body.contains(&amount) && body.contains("get_gas_price") && body.contains(&host), "{body}");
    let dialog = session.wait_for("dialog.approval[open]", Duration::from_secs(30));
    let said = session.text(&dialog);
    assert!(said.contains("test-agent <b>1.0</b>") && said.contains(&amount), "{said}");
    session.screenshot("10-approval");
    session.click(&session.wait_for("dialog.approval[open] button.primary", Duration::from_secs(5)));
    let (status, paid) = call.join().unwrap();
    assert_eq!(status, 200, "the approved call went on");
    assert!(paid.is_some_and(|p| p.ends_with(" USDC")), "and was paid");

    // Closing the window hides it; the server goes on serving the user's agents.
    let window = wait_until_shown(&display, "Paperchain", true);
    close_windows(&display, &window);
    wait_until_shown(&display, "Paperchain", false);
    let still = http().get(format!("{base}/openapi.json")).call().unwrap();
    assert_eq!(still.status(), 200, "the server serves with the window closed");

    // A second launch brings that window back and ends: no second app, server or claim.
    let mut second = Command::new(app);
    session_env(&mut second);
    let mut second = second.stdout(log.try_clone().unwrap()).stderr(log.try_clone().unwrap()).spawn().unwrap();
    let started = Instant::now();
    let ended = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(30), "the second launch did not end within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(ended.success(), "the second launch: {ended}");
    assert_eq!(wait_until_shown(&display, "Paperchain", true), window, "the same window, shown again");
    let claims_now = server_claims(&home.join("run"));
    assert_eq!(claims_now, claims, "still the first app's server");
    let claim_now: Value = serde_json::from_slice(&std::fs::read(&claims[0]).unwrap()).unwrap();
    assert_eq!(claim_now, claim, "still the first app's server");
    session.screenshot("09-shown-again");

    // "Open Paperchain" in the tray brings a closed window back; "Quit Paperchain" ends the
    // app, its server (the port closes) and its claim on the data folder.
    let pid = u32::try_from(claim["pid"].as_u64().unwrap()).unwrap();
    close_windows(&display, &window);
    wait_until_shown(&display, "Paperchain", false);
    click_tray_item(&bus, pid, "Open Paperchain");
    wait_until_shown(&display, "Paperchain", true);
    click_tray_item(&bus, pid, "Quit Paperchain");
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", listen)).is_ok() || claims[0].exists() || alive(pid) {
        assert!(started.elapsed() < Duration::from_secs(30), "the app still runs 30 s after Quit");
        std::thread::sleep(Duration::from_millis(100));
    }
}
