// The Console's /triggers page in a real browser against the real binary: the guided editor (a
// Flow, an IANA zone, the server's preview of the next instants, the server's field errors), the
// searchable list with NEXT and LAST, a page at a time, and the detail view (Run now and its occurrence with its
// Task, disable, an edit refused over a concurrent change, delete after confirmation).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;
const flow = "prepare-report-builtin";

const call = (method, p, body, headers) => h.api(platform.apiUrl, session, method, p, body, headers);

before(async () => {
  platform = await h.startPlatform({ name: "triggers-suite", workplace: false });
  session = await h.bootstrap(platform.apiUrl);
  browser = await h.launchBrowser();
  await h.waitFor(async () => (await call("GET", `/api/flows/${flow}`)).body?.status?.activeVersion, { timeout: 60_000, message: `the sample Flow ${flow}` });
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

async function consolePage(path) {
  const page = await h.newPage(browser);
  await h.signIn(page, session);
  await page.goto(`${platform.apiUrl}${path}`);
  return page;
}

const previewItems = (page) => page.locator('ol[aria-label="Next instants"] li');

describe("the Console's Triggers", () => {
  it("creates an interval Trigger through the guided editor: a Flow, an IANA zone, the server's preview, then its NEXT in the list", async () => {
    const page = await consolePage("/triggers");
    await page.locator('[data-state="empty"]').waitFor();
    assert.deepEqual(await h.axeViolations(page), [], "the empty list");
    await page.getByRole("link", { name: "New Trigger" }).click();
    await page.getByRole("heading", { name: "New Trigger", level: 1 }).waitFor();

    await page.getByLabel("Display name").fill("Half-hourly report");
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "half-hourly-report", "the name follows the display name");
    assert.equal(await page.getByLabel("Schedule type").inputValue(), "interval");
    await page.getByLabel("Hours").fill("0");
    await page.getByLabel("Minutes").fill("30");
    await page.getByLabel("Search time zones").fill("new york");
    await page.getByLabel("Time zone", { exact: true }).selectOption("America/New_York");

    // The server's own reading of the schedule: five instants 30 minutes apart, in New York time.
    await h.waitFor(async () => (await previewItems(page).count()) === 5, { message: "five previewed instants" });
    const lines = await previewItems(page).allInnerTexts();
    for (const l of lines) assert.match(l, /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} E[SD]T \(UTC-0[45]:00\)$/, l);
    const instants = await previewItems(page).locator("time").evaluateAll((ts) => ts.map((t) => Date.parse(t.dateTime)));
    for (let i = 1; i < instants.length; i++) assert.equal(instants[i] - instants[i - 1], 30 * 60_000);
    await page.getByLabel("Instants to preview").selectOption("10");
    await h.waitFor(async () => (await previewItems(page).count()) === 10, { message: "ten previewed instants" });

    // The policies show their defaults.
    assert.equal(await page.getByLabel("Missed instants (misfire policy)").inputValue(), "fireOnce");
    assert.equal(await page.getByLabel("While earlier Work is active (concurrency policy)").inputValue(), "skip");
    assert.equal(await page.getByLabel("Catch-up window").inputValue(), "01:00:00");
    assert.equal(await page.getByLabel("Pause after consecutive failures").inputValue(), "5");

    const flowSelect = page.getByLabel("Flow", { exact: true });
    assert.equal(await flowSelect.evaluate((s) => s.tagName), "SELECT", "the Flow is chosen, not typed");
    await flowSelect.selectOption(flow);

    // An input that is not JSON is refused before anything is sent.
    const posts = [];
    page.on("request", (r) => r.method() === "POST" && new URL(r.url()).pathname === "/api/triggers" && posts.push(r));
    await page.getByLabel("Work input (JSON object)").fill("{request: Quarterly}");
    await page.locator("#t-input-error").getByText(/not valid JSON/).waitFor();
    await page.getByRole("button", { name: "Create Trigger" }).click();
    await page.locator('[data-state="not-saved"]').waitFor();
    assert.equal(posts.length, 0, "nothing was sent");
    await page.getByLabel("Work input (JSON object)").fill('{"request": "Quarterly sales"}');
    assert.equal(await page.locator("#t-input-error").count(), 0);
    assert.equal(await page.locator('[data-state="not-saved"]').count(), 0, "the refusal goes once the field is corrected");
    await h.screenshot(page, "console-trigger-editor-1280");
    assert.deepEqual(await h.axeViolations(page), [], "the editor");

    await page.getByRole("button", { name: "Create Trigger" }).click();
    await page.waitForURL(`${platform.apiUrl}/triggers/half-hourly-report`);
    await page.getByRole("heading", { name: "Half-hourly report", level: 1 }).waitFor();
    const created = (await call("GET", "/api/triggers/half-hourly-report")).body;
    assert.deepEqual(created.definition.source.schedule, { type: "interval", expression: "00:30:00", timeZone: "America/New_York" });
    assert.deepEqual(created.definition.target, { kind: "flow", flow: { name: flow }, input: { request: "Quarterly sales" } });

    // The list: the schedule in words, the state, and the scheduler's next instant.
    const next = await h.waitFor(async () => (await call("GET", "/api/triggers/half-hourly-report")).body.status?.nextFireTime, { message: "a next instant" });
    await page.getByRole("link", { name: "← Triggers" }).click();
    const row = page.locator('tr[data-trigger="half-hourly-report"]');
    await row.waitFor();
    await h.waitFor(async () => {
      await page.getByRole("button", { name: "Refresh" }).click();
      return (await row.locator('[data-column="next"] time').count()) === 1;
    }, { message: "NEXT in the list" });
    assert.equal(Date.parse(await row.locator('[data-column="next"] time').getAttribute("datetime")), Date.parse(next));
    assert.match(await row.locator('[data-column="next"]').innerText(), /\d/);
    assert.match(await row.innerText(), /Interval every 30 minutes \(America\/New_York\)/);
    assert.match(await row.innerText(), /Enabled/);
    assert.match(await row.locator('[data-column="last"]').innerText(), /never/);

    // Searchable.
    await page.getByLabel("Search Triggers").fill("no such trigger");
    await page.locator('[data-state="no-match"]').waitFor();
    await page.getByLabel("Search Triggers").fill("new_york half");
    await row.waitFor();
    await h.screenshot(page, "console-triggers-1280");
    assert.deepEqual(await h.axeViolations(page), [], "the list");
    await page.context().close();
  });

  it("the Console home names a Trigger's next instant in the Trigger's time zone, as the Triggers pages do", async () => {
    const r = await call("POST", "/api/triggers", {
      apiVersion: "platform/v1", kind: "Trigger", metadata: { name: "tokyo-morning" },
      definition: { displayName: "Tokyo morning", enabled: true, source: { kind: "schedule", schedule: { type: "cron", expression: "0 6 1 1 *", timeZone: "Asia/Tokyo" } },
        target: { kind: "flow", flow: { name: flow }, input: { request: "a new year report" } } },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    await h.waitFor(async () => (await call("GET", "/api/triggers/tokyo-morning")).body.status?.nextFireTime, { message: "a next instant" });
    const page = await consolePage("/triggers/tokyo-morning");
    const shown = await page.locator('[data-field="next"] time').innerText();
    assert.match(shown, /6:00:00\sAM\s(GMT\+9|JST)/, "the detail page reads the instant in Asia/Tokyo");
    await page.goto(`${platform.apiUrl}/`);
    const firing = page.getByRole("list", { name: "Next Trigger firings" }).locator("li", { hasText: "Tokyo morning" });
    await firing.waitFor();
    assert.equal(await firing.locator("time").innerText(), shown);
    await call("DELETE", "/api/triggers/tokyo-morning");
    await page.context().close();
  });

  it("Run now records an occurrence with its Task in the history, and disable stops the schedule", async () => {
    const page = await consolePage("/triggers/half-hourly-report");
    const history = page.locator("table[aria-label=Occurrences] tbody tr");
    await page.getByText("No occurrence yet.").waitFor();

    await page.getByRole("button", { name: "Run now" }).click();
    await page.locator('[data-note="ok"]').getByText(/Run now submitted Task/).waitFor();
    await history.first().waitFor();
    const [occurrence] = (await call("GET", "/api/triggers/half-hourly-report/occurrences")).body.items;
    assert.equal(occurrence.kind, "Manual");
    assert.equal(occurrence.outcome, "Submitted");
    assert.ok(occurrence.taskId);
    const first = history.first();
    assert.equal(await first.getAttribute("data-occurrence"), occurrence.id);
    assert.equal(await first.getAttribute("data-outcome"), "Submitted");
    const task = first.locator(`a[data-task-id="${occurrence.taskId}"]`);
    assert.equal(await task.getAttribute("href"), `${platform.workplaceUrl}w/default/tasks/${occurrence.taskId}`);
    assert.equal((await call("GET", `/api/workspaces/default/tasks/${occurrence.taskId}`)).status, 200, "the Task exists");
    assert.match(await first.innerText(), /Run now/);
    assert.equal(await first.getByRole("link", { name: /^Run / }).getAttribute("href"), `/runs/${occurrence.flowRunId}`);
    // LAST follows the occurrence.
    await h.waitFor(async () => /Submitted/.test(await page.locator('[data-field="last"]').innerText()), { message: "LAST in the status" });
    await h.screenshot(page, "console-trigger-detail-1280");
    assert.deepEqual(await h.axeViolations(page), [], "the detail");

    await page.getByRole("button", { name: "Disable" }).click();
    await page.getByText("Disabled: the Trigger fires no more until enabled.").waitFor();
    await page.getByRole("button", { name: "Enable" }).waitFor();
    assert.equal((await call("GET", "/api/triggers/half-hourly-report")).body.definition.enabled, false);
    await h.waitFor(async () => (await page.locator('[data-field="next"]').innerText()) === "none", { message: "no next instant once disabled" });
    await page.goto(`${platform.apiUrl}/triggers`);
    await page.locator('tr[data-trigger="half-hourly-report"]').getByText("Disabled").waitFor();
    assert.match(await page.locator('tr[data-trigger="half-hourly-report"] [data-column="last"]').innerText(), /Submitted/, "LAST in the list is the Run now");
    await page.context().close();
  });

  it("an invalid cron shows the server's field error next to the expression, and nothing is saved", async () => {
    const page = await consolePage("/triggers/-/new");
    await page.getByLabel("Display name").fill("Bad cron");
    await page.getByLabel("Schedule type").selectOption("cron");
    await page.getByLabel("Flow", { exact: true }).selectOption(flow);
    const fieldError = page.locator("#t-cron-error");
    // A cron that parses but never fires is refused as such, not as one that does not parse.
    await page.getByLabel("Cron expression").fill("0 0 31 2 *");
    await fieldError.getByText(/never fires/).waitFor();
    assert.match(await page.locator('[data-state="schedule-refused"]').innerText(), /refuses this schedule/);
    assert.equal(await page.getByText(/does not parse/).count(), 0);
    await page.getByLabel("Cron expression").fill("0 25 * * *");
    // The preview already carries the server's 422 for the field.
    await fieldError.getByText(/above maximum/).waitFor();

    const saved = page.waitForResponse((r) => r.request().method() === "POST" && new URL(r.url()).pathname === "/api/triggers");
    await page.getByRole("button", { name: "Create Trigger" }).click();
    const resp = await saved;
    assert.equal(resp.status(), 422);
    const problem = await resp.json();
    const serverError = problem.errors.find((e) => e.location === "body.definition.source.schedule.expression");
    assert.ok(serverError, JSON.stringify(problem));
    await page.locator('[data-state="not-saved"]').waitFor();
    assert.equal(await fieldError.innerText(), serverError.message, "the save's own field error, next to the field");
    assert.equal(await page.getByLabel("Cron expression").getAttribute("aria-invalid"), "true");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "t-cron", "focus goes to the field to correct");
    assert.equal(new URL(page.url()).pathname, "/triggers/-/new");
    assert.equal((await call("GET", "/api/triggers/bad-cron")).status, 404, "nothing was saved");
    await h.screenshot(page, "console-trigger-bad-cron-1280");
    assert.deepEqual(await h.axeViolations(page), [], "the editor with errors");

    // Corrected, it saves.
    await page.getByLabel("Cron expression").fill("0 7 * * 1-5");
    await h.waitFor(async () => (await previewItems(page).count()) === 5, { message: "the corrected preview" });
    await page.getByRole("button", { name: "Create Trigger" }).click();
    await page.waitForURL(`${platform.apiUrl}/triggers/bad-cron`);
    await page.context().close();
  });

  /** statusOnlyChange fires the Trigger now and waits for its status, and so its ETag, to move while its definition stays. */
  async function statusOnlyChange(name) {
    const before = await call("GET", `/api/triggers/${name}`);
    assert.ok([202, 409].includes((await call("POST", `/api/triggers/${name}/run`)).status), "an occurrence is recorded");
    let after;
    await h.waitFor(async () => (after = await call("GET", `/api/triggers/${name}`)).headers.get("etag") !== before.headers.get("etag"), { message: "the firing's status write" });
    assert.deepEqual(after.body.definition, before.body.definition);
  }

  it("an edit over someone else's change is refused with a clear message, and saves once reloaded", async () => {
    const page = await consolePage("/triggers/bad-cron/edit");
    const display = page.getByLabel("Display name");
    await h.waitFor(async () => (await display.inputValue()) === "Bad cron", { message: "the editor filled" });
    assert.equal(await page.getByLabel("Cron expression").inputValue(), "0 7 * * 1-5");
    assert.equal(await page.getByLabel("Time zone", { exact: true }).inputValue(), (await call("GET", "/api/triggers/bad-cron")).body.definition.source.schedule.timeZone);

    // Someone else saves in between.
    const other = await h.replaceFresh(call, "/api/triggers/bad-cron", (current) => {
      const { status: _, ...body } = current;
      return { ...body, definition: { ...body.definition, displayName: "Weekday mornings" } };
    });
    assert.equal(other.status, 200, JSON.stringify(other.body));

    await display.fill("My name for it");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.locator('[data-state="not-saved"]').getByText(/changed by someone else/).waitFor();
    assert.equal((await call("GET", "/api/triggers/bad-cron")).body.definition.displayName, "Weekday mornings", "the other change stands");
    await page.getByRole("button", { name: "Reload the Trigger" }).click();
    await h.waitFor(async () => (await display.inputValue()) === "Weekday mornings", { message: "the reloaded Trigger" });
    await page.getByLabel("Cron expression").fill("30 8 * * 1-5");
    // A firing meanwhile writes the Trigger's status, and so its ETag: that is no one's change.
    await statusOnlyChange("bad-cron");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.waitForURL(`${platform.apiUrl}/triggers/bad-cron`);
    await page.getByText("Cron 30 8 * * 1-5").waitFor();
    await page.context().close();
  });

  it("deletes a Trigger only after confirmation", async () => {
    const page = await consolePage("/triggers/bad-cron");
    await page.getByRole("button", { name: "Delete" }).click();
    const dialog = page.getByRole("alertdialog");
    await dialog.getByText("Delete the Trigger bad-cron?").waitFor();
    assert.deepEqual(await h.axeViolations(page), [], "the confirmation");
    await dialog.getByRole("button", { name: "Keep it" }).click();
    assert.equal((await call("GET", "/api/triggers/bad-cron")).status, 200, "kept");
    await page.getByRole("button", { name: "Delete" }).click();
    await statusOnlyChange("bad-cron");
    await page.getByRole("button", { name: "Delete bad-cron" }).click();
    await page.waitForURL(`${platform.apiUrl}/triggers`);
    assert.equal((await call("GET", "/api/triggers/bad-cron")).status, 404);
    await page.locator('tr[data-trigger="half-hourly-report"]').waitFor();
    assert.equal(await page.locator('tr[data-trigger="bad-cron"]').count(), 0);
    await page.context().close();
  });

  it("pages through many Triggers 50 at a time and searches them on the server", async () => {
    const names = Array.from({ length: 55 }, (_, i) => `paged-${String(i).padStart(2, "0")}`);
    for (const name of names) {
      const r = await call("POST", "/api/triggers", {
        apiVersion: "platform/v1", kind: "Trigger", metadata: { name },
        definition: { displayName: `Paged ${name.slice(-2)}`, enabled: false, source: { kind: "schedule", schedule: { type: "cron", expression: "0 0 29 2 *", timeZone: "Europe/Paris" } },
          target: { kind: "flow", flow: { name: flow }, input: { request: "a leap day report" } } },
      });
      assert.equal(r.status, 201, JSON.stringify(r.body));
    }
    const page = await consolePage("/triggers");
    const rows = page.locator('table[aria-label="Triggers"] tbody tr');
    const range = page.locator("[data-page-range]");
    await range.waitFor();
    assert.equal(await rows.count(), 50, "a page holds 50 Triggers");
    assert.match(await range.textContent(), /Triggers 1–50/);
    await page.getByRole("button", { name: "Next" }).click();
    await range.filter({ hasText: "51" }).waitFor();
    assert.ok((await rows.count()) >= 5, "the next page holds the rest");
    // The pager settles once the page's rows are in: then the last page offers no Next.
    await h.waitFor(async () => await page.getByRole("button", { name: "Next" }).isDisabled(), { message: "the last page" });
    await h.screenshot(page, "triggers-second-page");
    await page.getByRole("button", { name: "Previous" }).click();
    await range.filter({ hasText: "1–50" }).waitFor();

    await page.getByLabel("Search Triggers").fill("paged 54");
    await page.locator('tr[data-trigger="paged-54"]').waitFor();
    await h.waitFor(async () => (await rows.count()) === 1, { message: "only the matching Trigger" });
    assert.equal(await range.count(), 0, "one page: no pager");
    await page.getByLabel("Search Triggers").fill("paged nothing-like-it");
    await page.locator('[data-state="no-match"]').waitFor();
    assert.deepEqual(await h.axeViolations(page), [], "the paged list");
    for (const name of names) await call("DELETE", `/api/triggers/${name}`, undefined, { "If-Match": (await call("GET", `/api/triggers/${name}`)).headers.get("etag") });
    await page.context().close();
  });
});
