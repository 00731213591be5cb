// Paid calls in the app: an agent's call routed to the hosted sandbox costs more than
// policy.approve_above, so it waits for the user; the dialog says who asks, for what, to
// which service and how much. One is approved (and paid), one denied (and not). The
// ledger table and the spend plot then show the payment. Started by cli/tests/it/app_ui.rs:
//   PAPERCHAIN_APP_URL      the local server (its wallet pays the sandbox)
//   PAPERCHAIN_SERVICE_HOST the sandbox's host
//   PAPERCHAIN_QUOTE        the sandbox's price of the gas route, in dollars ("0.001")
//   PAPERCHAIN_PASSWORD     the wallet's password, typed to confirm a raised limit
//   PAPERCHAIN_ARTIFACTS    screenshots

import { test } from "node:test";
import assert from "node:assert/strict";
import { accessible, base, browserPage, open, screenshot } from "./browser.mjs";

const page = () => browserPage();
const quote = process.env.PAPERCHAIN_QUOTE;

/** An agent's call to the local server, routed to the hosted service. */
function agentCall() {
  return fetch(`${base}/v1/chain/gas`, {
    method: "POST",
    headers: { "content-type": "application/json", "user-agent": "test-agent/1.0", "paperchain-route": "hosted" },
    body: JSON.stringify({ chain: "base" }),
  });
}

async function waitForDialog() {
  await page().waitForSelector("dialog.approval[open]", { timeout: 30_000 });
  return page().$eval("dialog.approval", (d) => d.textContent);
}

test("an approval approved: the call goes on and is paid", async () => {
  await open("documents");
  const call = agentCall();
  const text = await waitForDialog();
  assert.match(text, /test-agent\/1\.0/);
  assert.match(text, /get_gas_price/);
  assert.ok(text.includes(` on ${process.env.PAPERCHAIN_SERVICE_HOST}.`), text);
  assert.ok(text.includes(`$${quote}`), text);
  await accessible("the approval dialog");
  await screenshot("10-approval");
  await page().click("dialog.approval button.primary");
  const answer = await call;
  assert.equal(answer.status, 200, await answer.clone().text());
  assert.equal(answer.headers.get("paperchain-ran"), "hosted");
  assert.ok(answer.headers.get("paperchain-paid"), "the answer says what was paid");
  await page().waitForSelector("dialog.approval:not([open])");
});

test("an approval denied: the call fails and nothing is paid", async () => {
  const call = agentCall();
  await waitForDialog();
  const buttons = await page().$$("dialog.approval button");
  await buttons[1].click();
  const answer = await call;
  assert.notEqual(answer.status, 200);
  const body = await answer.json();
  assert.match(JSON.stringify(body), /refused/);
  assert.equal(answer.headers.get("paperchain-paid"), null);
});

test("the ledger table and the spend plot show the payment", async () => {
  await open("spend");
  await page().waitForSelector("table.ledger tbody tr");
  const rows = await page().$$eval("table.ledger tbody tr", (trs) =>
    trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)),
  );
  const paid = rows.filter((r) => r[5] !== "");
  assert.equal(paid.length, 1, JSON.stringify(rows));
  assert.equal(paid[0][1], "get_gas_price");
  assert.equal(paid[0][2], "test-agent/1.0");
  assert.equal(paid[0][3], "hosted");
  assert.equal(paid[0][5], `$${quote}`);
  assert.equal(paid[0][6], "eip155:8453");
  const plots = await page().$$eval(".chart svg", (l) => l.map((s) => s.getAttribute("aria-label")));
  assert.ok(plots.some((p) => p.startsWith("Spend by route") && p.includes(`get_gas_price $${quote}`)), plots.join(" | "));
  assert.ok(plots.some((p) => p.startsWith("Spend by client") && p.includes(`test-agent/1.0 $${quote}`)), plots.join(" | "));
  await accessible("the spend screen with a payment");
  await screenshot("11-spend-paid");
});

test("the wallet shows its balances; a limit changed in the app applies to the next call", async () => {
  await open("spend");
  await page().waitForSelector("[aria-label='Wallet address']");
  assert.equal(await page().$eval("[aria-label='Wallet address']", (e) => e.textContent), process.env.PAPERCHAIN_PAYER);
  await page().waitForSelector("#wallet-title ~ table tbody tr");
  const base = await page().$$eval("#wallet-title ~ table tbody tr", (trs) => trs.map((tr) => tr.textContent));
  assert.ok(base.some((row) => row.includes("eip155:8453") && row.includes("USDC")), base.join(" | "));
  // A bad amount is refused, naming why; nothing is saved.
  await page().waitForSelector("#setting-policy-approve-above");
  await page().type("#setting-policy-approve-above", "lots");
  await page().click("form[aria-label='Service and limits'] button[type=submit]");
  await page().waitForSelector("#setting-policy-approve-above[aria-invalid=true]");
  // Raised above the price: the next paid call needs no approval.
  await page().$eval("#setting-policy-approve-above", (e) => (e.value = ""));
  await page().type("#setting-policy-approve-above", "1.00");
  await page().click("form[aria-label='Service and limits'] button[type=submit]");
  await page().waitForFunction(() => document.querySelector("form[aria-label='Service and limits'] [role=status]")?.textContent.includes("saved; it waits for you to confirm it"));
  // Raising a limit waits for the owner: the change is listed, and the field shows the
  // threshold still followed.
  await page().waitForSelector("form[aria-label='Changes waiting for you']");
  const waiting = await page().$eval("form[aria-label='Changes waiting for you']", (f) => f.textContent);
  assert.match(waiting, /Not followed until you confirm it/);
  assert.match(waiting, /policy\.approve_above: \$[0-9.]+ → \$1\.00/);
  await accessible("the wallet and settings, a change waiting");
  await screenshot("12-wallet-settings-waiting");
  await page().type("#confirm-password", "not the password");
  await page().click("form[aria-label='Changes waiting for you'] button[type=submit]");
  // Each try derives the keystore's key (scrypt): seconds, and far more while other test
  // processes load both cores.
  await page().waitForFunction(() => document.querySelector("form[aria-label='Changes waiting for you'] .field-error")?.textContent.includes("not the wallet's password"), { timeout: 120_000 });
  // Cleared as a person would: setting the field's value from outside is undone by the
  // next render of the form (the settings are polled), which then sent both passwords.
  await page().click("#confirm-password", { clickCount: 3 });
  await page().keyboard.press("Backspace");
  await page().type("#confirm-password", process.env.PAPERCHAIN_PASSWORD);
  await page().click("form[aria-label='Changes waiting for you'] button[type=submit]");
  await page().waitForFunction(() => !document.querySelector("form[aria-label='Changes waiting for you']"), { timeout: 120_000 });
  await accessible("the wallet and settings");
  await screenshot("12-wallet-settings");
  const answer = await agentCall();
  assert.equal(answer.status, 200, await answer.clone().text());
  assert.ok(answer.headers.get("paperchain-paid"));
  assert.equal(await page().$("dialog.approval[open]"), null);
});

test("a folder granted in the settings is listed, a too-wide one refused, and it can be taken back", async () => {
  const folder = process.env.PAPERCHAIN_GRANT_FOLDER;
  await open("spend");
  await page().waitForSelector("#folder-new");
  // The root would grant every file: refused next to the field, nothing listed.
  await page().type("#folder-new", "/");
  await page().click("form[aria-label='Grant a folder'] button[type=submit]");
  await page().waitForSelector("#folder-new[aria-invalid=true]");
  assert.match(await page().$eval("form[aria-label='Grant a folder'] .field-error", (e) => e.textContent), /too much/);
  assert.equal(await page().$("ul[aria-label='Granted folders']"), null);
  await page().$eval("#folder-new", (e) => (e.value = ""));
  await page().type("#folder-new", folder);
  await page().click("form[aria-label='Grant a folder'] button[type=submit]");
  await page().waitForSelector("ul[aria-label='Granted folders'] li code");
  assert.deepEqual(await page().$$eval("ul[aria-label='Granted folders'] li code", (l) => l.map((c) => c.textContent)), [folder]);
  await accessible("the granted folders");
  await screenshot("13-granted-folders");
  await page().click(`button[aria-label='Remove the folder ${folder}']`);
  await page().waitForFunction(() => !document.querySelector("ul[aria-label='Granted folders']"));
});
