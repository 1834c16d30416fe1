// Source registries in the Console, in a real browser against the real binary: a member who is
// not a Platform administrator sees a clear "not permitted" state; an administrator registers a
// registry served from a folder on loopback (`platform registry serve`), refreshes it, reads the
// history, finds a Pack's Source in discovery, imports one observation and previews its install;
// the official registration has no delete control, and an edit against a stale ETag says so in
// words. Screenshots at 1280 and 375 px.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;

const call = (method, p, body, headers) => h.api(platform.apiUrl, session, method, p, body, headers);

before(async () => {
  platform = await h.startPlatform({ name: "registries-suite", workplace: false });
  session = await h.bootstrap(platform.apiUrl);
  browser = await h.launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

async function consolePage(p, opts, cookie = session) {
  const page = await h.newPage(browser, opts);
  await h.signIn(page, cookie);
  await page.goto(`${platform.apiUrl}${p}`);
  return page;
}

async function noViolations(page, what) {
  assert.deepEqual(await h.axeViolations(page), [], `${what}: no serious accessibility violations`);
  assert.deepEqual(page.errors, [], `${what}: no page errors`);
}

const fits = async (page, what) => {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 375, `${what}: no horizontal scrolling of the page at 375 px (${width})`);
};

describe("Source registries in the Console", () => {
  it("a member who is not a Platform administrator sees that only administrators manage registries, on both pages, not a broken page", async () => {
    const account = { username: "mia", password: "Correct-horse-battery-2", displayName: "Mia Member", role: "Member" };
    const ws = await call("GET", "/api/identity/context");
    const created = await call("POST", "/api/identity/accounts/", { ...account, workspace: ws.body.workspace.id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const login = await fetch(`${platform.apiUrl}/api/auth/local/login`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ username: account.username, password: account.password }) });
    assert.ok(login.ok, `login: ${login.status}`);
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith("platform-session=")).split(";")[0].split("=")[1];

    const page = await consolePage("/settings/source-registries", {}, cookie);
    await page.getByRole("heading", { name: "Source registries" }).waitFor();
    assert.match(await page.locator('[data-state="not-permitted"]').innerText(), /Only Platform administrators manage Source registries/);
    assert.equal(await page.getByRole("button", { name: "Add a registry" }).count(), 0, "no control a member cannot use");
    await h.screenshot(page, "registries-not-permitted-1280");
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Discover Sources" }).click();
    await page.getByRole("heading", { name: "Discover Sources" }).waitFor();
    await page.locator('[data-state="not-permitted"]').waitFor();
    await noViolations(page, "discovery, not permitted");
    await page.context().close();
  });
});
