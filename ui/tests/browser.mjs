// What the browser tests share: Debian's Chromium started by puppeteer-core (no browser is
// downloaded), one page, axe-core for accessibility, screenshots and downloads kept in
// PAPERCHAIN_ARTIFACTS, and the user's gestures (dropping files, choosing options).

import { before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, readdirSync, existsSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import puppeteer from "puppeteer-core";

const require = createRequire(import.meta.url);
export const base = process.env.PAPERCHAIN_APP_URL;
const artifacts = process.env.PAPERCHAIN_ARTIFACTS ?? path.resolve("test-artifacts");
export const downloads = path.join(artifacts, "downloads");
const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
assert.ok(base, "PAPERCHAIN_APP_URL is set");

let browser;
let page;

/** The page every test drives. */
export const browserPage = () => page;

before(async () => {
  rmSync(downloads, { recursive: true, force: true });
  mkdirSync(downloads, { recursive: true });
  browser = await puppeteer.launch({
    executablePath: process.env.PAPERCHAIN_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"],
    defaultViewport: { width: 1280, height: 900 },
  });
  page = await browser.newPage();
  page.failures = [];
  page.on("pageerror", (e) => page.failures.push(String(e)));
  page.on("console", (m) => m.type() === "error" && page.failures.push(m.text()));
  const cdp = await page.createCDPSession();
  await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: downloads, eventsEnabled: true });
});

after(async () => {
  await browser?.close();
});

/** A fresh load of one screen of the app; console errors counted from here. */
export async function open(screen) {
  await page.goto("about:blank");
  page.failures.length = 0;
  await page.goto(`${base}/app/#/${screen}`, { waitUntil: "networkidle0" });
}

export async function screenshot(name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
}

/** Runs axe-core on the page; every violation fails the test, named. */
export async function accessible(where) {
  // The page's policy refuses scripts it did not load itself: axe goes in through the
  // debugging protocol, which the policy does not govern.
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join("; ")})`);
  });
  assert.deepEqual(result, [], `accessibility of ${where}`);
}

/** Drops files on the drop zone as a user's drag and drop does. */
export async function drop(files) {
  const payload = files.map((f) => ({ name: path.basename(f), data: readFileSync(f).toString("base64") }));
  await page.evaluate((payload) => {
    const transfer = new DataTransfer();
    for (const f of payload) {
      const bytes = Uint8Array.from(atob(f.data), (c) => c.charCodeAt(0));
      transfer.items.add(new File([bytes], f.name, { type: "application/pdf" }));
    }
    const zone = document.querySelector("[data-testid=dropzone]");
    zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
    zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
  }, payload);
}

/** Waits for the first result; a failed call fails the test with what the app shows. */
export async function waitForResult(shot) {
  await page.waitForSelector(".results .result", { timeout: 60_000 }).catch(async (e) => {
    await screenshot(`${shot}-no-result`);
    throw e;
  });
  const failed = await page.$eval(".results .result", (e) => (e.classList.contains("error") ? e.textContent : null));
  if (failed) {
    await screenshot(`${shot}-failed`);
    throw new Error(`the call failed: ${failed}`);
  }
  return page.$eval(".results .result h4", (e) => e.firstChild.textContent.trim());
}

/** The path of a finished download named `name` that was not there in `before`. */
export async function waitForDownload(name, before) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const done = readdirSync(downloads).filter((f) => f === name && !before.includes(f));
    if (done.length && !existsSync(path.join(downloads, `${name}.crdownload`)) && statSync(path.join(downloads, name)).size > 0) {
      return path.join(downloads, name);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no download named ${name}`);
}

const cssEscape = (s) => s.replace(/([^a-zA-Z0-9_-])/g, "\\$1");

/** Chooses the option containing `text` in the select labelled `label`. */
export async function selectByLabel(label, text) {
  const id = await page.evaluate((label) => {
    const l = [...document.querySelectorAll("label")].find((x) => x.textContent.trim().startsWith(label));
    return l?.htmlFor;
  }, label);
  assert.ok(id, `a control labelled ${label}`);
  const value = await page.evaluate(
    (id, text) => [...document.getElementById(id).options].find((o) => o.textContent.includes(text))?.value,
    id,
    text,
  );
  assert.ok(value !== undefined, `an option "${text}" under ${label}`);
  await page.select(`#${cssEscape(id)}`, value);
}
