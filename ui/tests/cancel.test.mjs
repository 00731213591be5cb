// The app's Cancel on a long job, as a user presses it: drop a 20-page scan, run OCR, press
// Cancel while it works. The page stops waiting at once; the server's side (the work
// stopping, the ledger saying cancelled) is checked by the Rust test that runs this file
// (cli/tests/it/work_stops.rs), which reads the moment of the press from
// PAPERCHAIN_ARTIFACTS/cancelled-at.json.
//
// Environment: PAPERCHAIN_APP_URL (the app's server), PAPERCHAIN_PDF (the scan).

import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { browserPage, drop, open, screenshot, selectByLabel } from "./browser.mjs";

const page = browserPage;

test("Cancel stops a running OCR and the page says so", async () => {
  await open("documents");
  await page().waitForSelector("[data-testid=dropzone]");
  await drop([process.env.PAPERCHAIN_PDF]);
  await page().waitForSelector("#operation");
  await selectByLabel("Operation", "/v1/pdf/ocr");
  await page().waitForSelector("form.route-form");
  // The thumbnails are rendered first (heavy work too): the run waits for none of them.
  await page().waitForSelector(".thumbnails button", { timeout: 60_000 });
  await page().waitForNetworkIdle({ idleTime: 300, timeout: 60_000 });
  await page().click("form.route-form button[type=submit]");
  await page().waitForFunction(
    () => [...document.querySelectorAll(".progress button")].some((b) => b.textContent.trim() === "Cancel"),
    { timeout: 10_000 },
  );
  await new Promise((done) => setTimeout(done, 1500));
  await screenshot("14-ocr-working");
  const cancelledAt = Date.now();
  await page().click(".progress button");
  await page().waitForFunction(() => !document.querySelector(".progress button"), { timeout: 5_000 });
  const stopped = Date.now() - cancelledAt;
  assert.ok(stopped < 2000, `the page stopped waiting ${stopped} ms after the press`);
  const said = await page().$eval(".results .result.error", (e) => e.textContent);
  assert.match(said, /Cancelled: the work was stopped/);
  await screenshot("15-ocr-cancelled");
  const artifacts = process.env.PAPERCHAIN_ARTIFACTS ?? path.resolve("test-artifacts");
  writeFileSync(path.join(artifacts, "cancelled-at.json"), JSON.stringify({ cancelled_at: cancelledAt }));
  assert.deepEqual(page().failures, []);
});
