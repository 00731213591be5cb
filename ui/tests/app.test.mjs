// The app at /app of a running local server, in Debian's Chromium driven by puppeteer-core
// (no browser is downloaded). Started by cli/tests/it/app_ui.rs, which serves the app and
// passes where everything is:
//   PAPERCHAIN_APP_URL   the server's base URL
//   PAPERCHAIN_PDF       a corpus PDF to drop
//   PAPERCHAIN_PDF_PAGES its page count
//   PAPERCHAIN_ADDRESS   an address with a balance on the server's chain (anvil)
//   PAPERCHAIN_BALANCE   that balance, formatted
//   PAPERCHAIN_CLAUDE_CONFIG  the server's Claude Desktop configuration file (in a temporary home)
//   PAPERCHAIN_CERTIFICATE    a PKCS#12 signing identity (certificate and key)
//   PAPERCHAIN_CERTIFICATE_PASSWORD  its password
//   PAPERCHAIN_CERTIFICATE_SIGNER    its certificate's common name
//   PAPERCHAIN_ARTIFACTS a folder for screenshots and downloads

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { accessible, base, browserPage, downloads, drop, open, screenshot, selectByLabel, waitForDownload, waitForResult } from "./browser.mjs";

const page = () => browserPage();

test("the app's API refuses a request without the page's token", async () => {
  const bare = await fetch(`${base}/app/api/session`);
  assert.equal(bare.status, 403);
  assert.match((await bare.json()).error.message, /X-Paperchain-Token/);
  const wrong = await fetch(`${base}/app/api/ledger`, { headers: { "x-paperchain-token": "0".repeat(64) } });
  assert.equal(wrong.status, 403);
  const html = await (await fetch(`${base}/app/`)).text();
  const token = html.match(/name="paperchain-token" content="([0-9a-f]{64})"/)?.[1];
  assert.ok(token, "the page carries the token");
  const crossSite = await fetch(`${base}/app/api/session`, { headers: { "x-paperchain-token": token, "sec-fetch-site": "cross-site" } });
  assert.equal(crossSite.status, 403);
  const right = await fetch(`${base}/app/api/session`, { headers: { "x-paperchain-token": token } });
  assert.equal(right.status, 200);
  // A server of `paperchain serve` is no desktop app: the browser saves, nothing starts at login.
  assert.equal((await right.json()).desktop, false);
  const desktop = await fetch(`${base}/app/api/desktop`, { headers: { "x-paperchain-token": token } });
  assert.equal(desktop.status, 404);
  const save = await fetch(`${base}/app/api/desktop/save?name=x.pdf`, { method: "POST", headers: { "x-paperchain-token": token }, body: "%PDF" });
  assert.equal(save.status, 404);
  // Another page's fetch from another origin cannot send JSON here without a preflight,
  // and the preflight is not granted.
  const preflight = await fetch(`${base}/v1/pdf/rotate`, {
    method: "OPTIONS",
    headers: { origin: "https://evil.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
  });
  assert.equal(preflight.headers.get("access-control-allow-origin"), null);
});

test("drop a PDF, rotate it, save a file qpdf accepts with the same page count", async () => {
  const pdf = process.env.PAPERCHAIN_PDF;
  const pages = Number(process.env.PAPERCHAIN_PDF_PAGES);
  await open("documents");
  await page().waitForSelector("[data-testid=dropzone]");
  await accessible("the documents screen");
  await screenshot("01-documents-empty");
  await drop([pdf]);
  await page().waitForSelector("#operation");
  await selectByLabel("Operation", "/v1/pdf/rotate");
  await page().waitForSelector("form.route-form");
  // The dropped file is in the form's file field; thumbnails are offered to choose pages.
  const chosen = await page().$eval("form.route-form .chosen", (e) => e.textContent);
  assert.equal(chosen, path.basename(pdf));
  await page().waitForSelector(".thumbnails button", { timeout: 30_000 });
  const thumbs = await page().$$eval(".thumbnails button", (b) => b.length);
  assert.equal(thumbs, Math.min(pages, 40));
  await selectByLabel("Degrees", "90");
  await accessible("the rotate form");
  await screenshot("02-rotate-form");
  const before = readdirSync(downloads);
  await page().click("form.route-form button[type=submit]");
  const name = await waitForResult("rotate");
  assert.match(name, /\.pdf$/);
  await page().waitForSelector(".results .thumbnails figure", { timeout: 30_000 });
  await screenshot("03-rotate-result");
  await page().click(".results .result button.primary");
  const saved = await waitForDownload(name, before);
  execFileSync("qpdf", ["--check", saved], { stdio: "pipe" });
  const npages = Number(execFileSync("qpdf", ["--show-npages", saved]).toString().trim());
  assert.equal(npages, pages);
  // Every page turned by 90 degrees.
  const info = execFileSync("pdfinfo", ["-f", "1", "-l", String(pages), saved]).toString();
  const turned = [...info.matchAll(/^Page +\d+ rot: +(\d+)/gm)].map((m) => Number(m[1]));
  assert.deepEqual(turned, Array(pages).fill(90));
  assert.deepEqual(page().failures, []);
});

test("a form with nested objects and arrays: merge two PDFs, the second twice with its own pages", async () => {
  const pdf = process.env.PAPERCHAIN_PDF;
  const pages = Number(process.env.PAPERCHAIN_PDF_PAGES);
  await open("documents");
  await drop([pdf, pdf]);
  await page().waitForSelector("#operation");
  await selectByLabel("Operation", "/v1/pdf/merge");
  await page().waitForSelector("form.route-form");
  // Both dropped files are items of the array, each an object with a file and pages.
  const items = await page().$$eval("form.route-form .array-field > ol > li", (l) => l.length);
  assert.equal(items, 2);
  // Add a third item, give it the same file through its own picker, take page 1 only.
  await page().click("form.route-form .array-field > button");
  const input = await page().$("form.route-form .array-field > ol > li:nth-child(3) input[type=file]");
  await input.uploadFile(pdf);
  await page().type("#field-files-2-pages", "1");
  await selectByLabel("Bookmarks", "per_file");
  await accessible("the merge form");
  await screenshot("04-merge-form");
  const before = readdirSync(downloads);
  await page().click("form.route-form button[type=submit]");
  const name = await waitForResult("merge");
  await page().click(".results .result button.primary");
  const saved = await waitForDownload(name, before);
  execFileSync("qpdf", ["--check", saved], { stdio: "pipe" });
  assert.equal(Number(execFileSync("qpdf", ["--show-npages", saved]).toString().trim()), 2 * pages + 1);
  await screenshot("05-merge-result");
});

test("four pages a sheet: the n-up form from the catalog, a PDF qpdf accepts with a quarter of the pages", async () => {
  const pdf = process.env.PAPERCHAIN_PDF;
  const pages = Number(process.env.PAPERCHAIN_PDF_PAGES);
  await open("documents");
  await drop([pdf]);
  await page().waitForSelector("#operation");
  // The layout, split and compare routes are offered like every other.
  const offered = await page().$$eval("#operation option", (l) => l.map((o) => o.textContent));
  for (const path of ["/v1/pdf/n-up", "/v1/pdf/booklet", "/v1/pdf/poster", "/v1/pdf/split-by", "/v1/pdf/compare"]) {
    assert.ok(offered.some((o) => o.includes(path)), `${path} in ${offered.join(" | ")}`);
  }
  await selectByLabel("Operation", "/v1/pdf/n-up");
  await page().waitForSelector("form.route-form");
  await selectByLabel("Per sheet", "4");
  // A paper size is a name from a list, or a custom size with its own two fields.
  await selectByLabel("Sheet", "Custom");
  await page().waitForSelector("#field-sheet-width-pt");
  await selectByLabel("Sheet", "A5");
  assert.equal(await page().$("#field-sheet-width-pt"), null);
  await page().click("#field-borders");
  await accessible("the n-up form");
  await screenshot("10-n-up-form");
  const before = readdirSync(downloads);
  await page().click("form.route-form button[type=submit]");
  const name = await waitForResult("n-up");
  assert.match(name, /-n-up\.pdf$/);
  await page().waitForSelector(".results .thumbnails figure", { timeout: 30_000 });
  await screenshot("11-n-up-result");
  await page().click(".results .result button.primary");
  const saved = await waitForDownload(name, before);
  execFileSync("qpdf", ["--check", saved], { stdio: "pipe" });
  assert.equal(Number(execFileSync("qpdf", ["--show-npages", saved]).toString().trim()), Math.ceil(pages / 4));
  // Four portrait pages keep the A5 sheet portrait.
  const size = execFileSync("pdfinfo", [saved]).toString().match(/Page size: +([\d.]+) x ([\d.]+)/).slice(1, 3).map(Number);
  assert.deepEqual(size, [419.528, 595.276]);
});

test("to PDF/A-3b: the form from the catalog, a file qpdf accepts that names its part", async () => {
  const pdf = process.env.PAPERCHAIN_PDF;
  await open("documents");
  await drop([pdf]);
  await page().waitForSelector("#operation");
  const offered = await page().$$eval("#operation option", (l) => l.map((o) => o.textContent));
  assert.ok(offered.some((o) => o.includes("/v1/pdf/e-invoice")), offered.join(" | "));
  await selectByLabel("Operation", "/v1/pdf/to-pdfa");
  await page().waitForSelector("form.route-form");
  await selectByLabel("Level", "3b");
  await accessible("the PDF/A form");
  await screenshot("12-pdfa-form");
  const before = readdirSync(downloads);
  await page().click("form.route-form button[type=submit]");
  const name = await waitForResult("pdfa");
  assert.match(name, /-pdfa-3b\.pdf$/);
  await page().waitForSelector(".results .thumbnails figure", { timeout: 30_000 });
  await screenshot("13-pdfa-result");
  await page().click(".results .result button.primary");
  const saved = await waitForDownload(name, before);
  execFileSync("qpdf", ["--check", saved], { stdio: "pipe" });
  // The XMP packet is stored uncompressed, so the part can be read from the bytes.
  assert.match(readFileSync(saved, "latin1"), /<pdfaid:part>3<\/pdfaid:part>/);
});

test("sign a PDF with a PKCS#12 certificate through the form, then verify the signature", async () => {
  const pdf = process.env.PAPERCHAIN_PDF;
  const certificate = process.env.PAPERCHAIN_CERTIFICATE;
  const signer = process.env.PAPERCHAIN_CERTIFICATE_SIGNER;
  await open("documents");
  await drop([pdf]);
  await page().waitForSelector("#operation");
  const offered = await page().$$eval("#operation option", (l) => l.map((o) => o.textContent));
  for (const route of ["/v1/pdf/sign", "/v1/pdf/verify-signatures", "/v1/pdf/remove-signatures"]) {
    assert.ok(offered.some((o) => o.includes(route)), `${route} in ${offered.join(" | ")}`);
  }
  await selectByLabel("Operation", "/v1/pdf/sign");
  await page().waitForSelector("form.route-form");
  // The dropped PDF is the file to sign; the certificate is for the user to give.
  const chosen = (field) => page().$eval(`#field-${field}-file`, (e) => e.closest(".file-choice").querySelector(".chosen").textContent);
  assert.equal(await chosen("file"), path.basename(pdf));
  assert.equal(await chosen("certificate"), "no file chosen");
  const picker = await page().$("#field-certificate-file");
  await picker.uploadFile(certificate);
  await page().waitForFunction(
    (name) => document.getElementById("field-certificate-file").closest(".file-choice").querySelector(".chosen").textContent === name,
    {},
    path.basename(certificate),
  );
  // Its password goes beside it, as for an encrypted PDF.
  const password = await page().evaluateHandle(() => document.getElementById("field-certificate-password").closest("details").querySelector("summary"));
  await password.click();
  await page().type("#field-certificate-password", process.env.PAPERCHAIN_CERTIFICATE_PASSWORD);
  await page().type("#field-reason", "Approved");
  // A visible signature: left, top, right, bottom in points, near the foot of the A4 page.
  for (const [i, value] of [320, 730, 550, 800].entries()) {
    await page().type(`#field-box-pt-${i}`, String(value));
  }
  await accessible("the sign form");
  await screenshot("14-sign-form");
  const before = readdirSync(downloads);
  await page().click("form.route-form button[type=submit]");
  const name = await waitForResult("sign");
  assert.match(name, /-signed\.pdf$/);
  // The route's report, shown with the file, says who signed, at which level, where.
  const said = await page().$eval(".results .result dl.report", (e) => e.textContent);
  for (const fact of [signer, "B-B", "Signature1"]) assert.ok(said.includes(fact), said);
  await page().waitForSelector(".results .thumbnails figure", { timeout: 30_000 });
  await screenshot("15-sign-result");
  await page().click(".results .result button.primary");
  const signed = await waitForDownload(name, before);
  execFileSync("qpdf", ["--check", signed], { stdio: "pipe" });
  const bytes = readFileSync(signed, "latin1");
  assert.match(bytes, /\/ETSI\.CAdES\.detached/);
  assert.match(bytes, /\/ByteRange/);
  assert.match(bytes, /\/Reason ?\(Approved\)/);

  // The signed file dropped back: its signature verifies, by a signer no trust root vouches for.
  await drop([signed]);
  await page().waitForFunction((name) => document.querySelector("form.route-form .chosen")?.textContent === name, {}, name);
  await selectByLabel("Operation", "/v1/pdf/verify-signatures");
  await page().waitForSelector("form.route-form");
  assert.equal(await chosen("file"), name);
  // No trust roots unless the user adds some.
  assert.equal(await page().$$eval("form.route-form .array-field > ol > li", (l) => l.length), 0);
  await page().click("form.route-form button[type=submit]");
  await waitForResult("verify");
  const shown = await page().$eval(".results .result", (e) => e.textContent);
  assert.ok(shown.includes(signer), shown);
  assert.ok(shown.includes("unknown_signer"), shown);
  const report = JSON.parse(await page().$eval(".results .result pre.json", (e) => e.textContent));
  assert.equal(report.count, 1);
  assert.equal(report.all_valid, false);
  const [signature] = report.signatures;
  assert.equal(signature.signer.common_name, signer);
  assert.equal(signature.status, "unknown_signer");
  assert.equal(signature.sub_filter, "ETSI.CAdES.detached");
  assert.ok(signature.intact && signature.valid && signature.visible, JSON.stringify(signature));
  assert.equal(signature.trusted, null);
  await accessible("the verification result");
  // The answer scrolled into view and painted, as the user reads it.
  await page().$eval(".results .result pre.json", (e) => e.scrollIntoView({ block: "center" }));
  await page().evaluate(() => new Promise((painted) => requestAnimationFrame(() => requestAnimationFrame(painted))));
  await screenshot("16-verify-result");
  assert.deepEqual(page().failures, []);
});

test("a bad value is refused with the field named, next to the field", async () => {
  await open("documents");
  await drop([process.env.PAPERCHAIN_PDF]);
  await page().waitForSelector("#operation");
  await selectByLabel("Operation", "/v1/pdf/extract-pages");
  await page().waitForSelector("form.route-form");
  await page().waitForSelector(".thumbnails button", { timeout: 30_000 });
  // Enter in a field sends the form, as it does for a keyboard user.
  await page().type("#field-pages", "9999");
  await page().keyboard.press("Enter");
  await page().waitForSelector("#field-pages-error", { timeout: 30_000 });
  const message = await page().$eval("#field-pages-error", (e) => e.textContent);
  assert.match(message, /page/i);
  assert.equal(await page().$eval("#field-pages", (e) => e.getAttribute("aria-invalid")), "true");
  await screenshot("06-field-error");
});

test("an address lookup reads the chain and shows its strings as text", async () => {
  await open("chain");
  await page().waitForSelector("#chain-query");
  await accessible("the chain screen");
  await page().type("#chain-query", process.env.PAPERCHAIN_ADDRESS);
  await page().click("form.search button[type=submit]");
  await page().waitForFunction(() => document.querySelectorAll(".card.running").length === 0 && document.querySelectorAll(".card").length > 0, {
    timeout: 60_000,
  });
  const balance = await page().$eval("article[aria-label=Balance]", (e) => e.textContent);
  assert.match(balance, new RegExp(process.env.PAPERCHAIN_BALANCE.replace(".", "\\.")));
  await screenshot("07-chain-address");
  // Markup pasted as a query is text, never HTML.
  await open("chain");
  await page().waitForSelector("#chain-query");
  const markup = "<img/src=x/onerror=alert(1)>.eth";
  await page().type("#chain-query", markup);
  await page().click("form.search button[type=submit]");
  await page().waitForSelector(".card.done, .card.failed", { timeout: 30_000 });
  assert.equal(await page().$$eval("main img", (l) => l.length), 0);
  const shown = await page().$eval(".card h3", (e) => e.textContent);
  assert.equal(shown, `ENS ${markup}`);
  await accessible("the chain results");
});

test("the spend and agents screens show the ledger of the calls just made", async () => {
  await open("spend");
  await page().waitForSelector("table.ledger tbody tr");
  const routes = await page().$$eval("table.ledger tbody tr td:nth-child(2)", (l) => l.map((e) => e.textContent));
  assert.ok(routes.includes("rotate_pdf_pages"), routes.join(","));
  assert.ok(routes.includes("merge_pdf_files"), routes.join(","));
  // The app's own calls are the app's in the ledger, not the browser's.
  const clients = await page().$$eval("table.ledger tbody tr td:nth-child(3)", (l) => [...new Set(l.map((e) => e.textContent))]);
  assert.deepEqual(clients, ["Paperchain app"]);
  await accessible("the spend screen");
  await screenshot("08-spend");
  await open("agents");
  await page().waitForSelector("#agents-title");
  const snippet = await page().$eval("pre.json", (e) => JSON.parse(e.textContent));
  assert.deepEqual(snippet.mcpServers.paperchain.args, ["mcp", "--stdio"]);
  // One click adds it to Claude Desktop's configuration, keeping what was there.
  const claudeFile = process.env.PAPERCHAIN_CLAUDE_CONFIG;
  const buttons = await page().$$("main button.primary");
  await buttons[0].click();
  await page().waitForFunction(() => document.querySelector("main [role=status]")?.textContent.includes("Added"));
  const written = JSON.parse(readFileSync(claudeFile, "utf8"));
  assert.equal(written.theme, "kept");
  assert.deepEqual(written.mcpServers.paperchain, snippet.mcpServers.paperchain);
  await accessible("the agents screen");
  await screenshot("09-agents");
  assert.deepEqual(page().failures, []);
});
