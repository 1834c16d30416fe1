// HTTP payload capture in a real browser against the real binary, started in Development with
// capture on: a Platform administrator reads, in a run's Console page, the captured exchanges that
// mention the run, collapsed, and no password or session appears in them.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;

before(async () => {
  platform = await h.startPlatform({
    name: "diagnostics-suite",
    workplace: false,
    env: { PLATFORM_ENVIRONMENT: "Development", Platform__Diagnostics__PayloadCapture__Enabled: "true", Platform__Diagnostics__PayloadCapture__CaptureResponses: "true" },
  });
  session = await h.bootstrap(platform.apiUrl);
  browser = await h.launchBrowser();
  await h.waitFor(async () => (await h.api(platform.apiUrl, session, "GET", "/api/dashboards/home/view")).body?.entries?.every((e) => e.entry), {
    timeout: 60_000,
    message: "the demo Entries",
  });
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

describe("HTTP payload capture", () => {
  it("shows a Platform administrator the run's captured exchanges in a collapsed control, redacted", async () => {
    const opened = await h.api(platform.apiUrl, session, "POST", "/api/workspaces/default/entries/quick-answer/interactions?waitSeconds=10", { input: { question: "What is a run?" } });
    assert.equal(opened.status, 201, JSON.stringify(opened.body));
    const runs = (await h.api(platform.apiUrl, session, "GET", "/api/flowRuns?take=10")).body.items;
    const run = runs.find((r) => r.correlation?.interactionId === opened.body.interaction.id);
    assert.ok(run);

    const page = await h.newPage(browser);
    await h.signIn(page, session);
    await page.goto(`${platform.apiUrl}/runs/${run.id}`);
    const control = page.locator('details[data-diagnostics="requests"]');
    await control.waitFor();
    assert.equal(await control.getAttribute("open"), null, "collapsed until opened");
    await control.locator("summary").click();
    await control.getByText(`GET /api/flowRuns/${run.id}`, { exact: true }).first().waitFor();
    const text = await control.innerText();
    assert.ok(!text.includes(h.admin.password) && !text.includes(session), "no password or session in what was captured");
    await h.screenshot(page, "console-run-captured-requests-1280");

    const all = await h.api(platform.apiUrl, session, "GET", "/api/diagnostics/requests?take=200");
    assert.equal(all.status, 200);
    const raw = JSON.stringify(all.body);
    assert.ok(raw.includes("/api/auth/bootstrap"), "the bootstrap was captured");
    assert.ok(!raw.includes(h.admin.password), "its password was not");
    assert.ok(!raw.includes(session), "nor the session");
    await page.context().close();
  });
});
