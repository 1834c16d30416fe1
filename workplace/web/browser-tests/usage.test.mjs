// Usage and budgets in a real browser against the real binary (one server for the file): a run
// on the offline Deterministic provider pauses at a small budget, the pause is a question in the
// inbox that survives a reload, the approval lets the run finish, and its usage reads in the Task
// detail and the Console's Usage page, down to 375 px. And a paused Task's card stops saying that
// it waits for an answer once its question expired.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;
const call = (method, p, body) => h.api(platform.apiUrl, session, method, p, body);

before(async () => {
  platform = await h.startPlatform({ name: "usage-suite" });
  browser = await h.launchBrowser();
  session = await h.bootstrap(platform.apiUrl);
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

async function signedInPage(opts) {
  const page = await h.newPage(browser, opts);
  await h.signIn(page, session);
  return page;
}

/** create POSTs each [path, body] and expects 201. */
async function create(...requests) {
  for (const [p, body] of requests) {
    const r = await call("POST", p, body);
    assert.equal(r.status, 201, `${p}: ${JSON.stringify(r.body)}`);
  }
}

/** publishOn publishes the Entry and puts it on a Dashboard of its own as the Primary Entry. */
async function publishOn(entry, dashboard) {
  await h.waitFor(async () => (await call("POST", `/api/entries/${entry}/publish`)).status < 300, { timeout: 30_000, message: `the Entry ${entry} to publish` });
  await create(["/api/dashboards", { apiVersion: "platform/v1", kind: "Dashboard", metadata: { name: dashboard }, definition: { displayName: dashboard, entries: [{ name: entry, role: "Primary" }] } }]);
}

/** ask opens the Dashboard, sends text through its Primary Entry and returns the conversation. */
async function ask(page, dashboard, text) {
  await page.goto(`${platform.workplaceUrl}w/default/d/${dashboard}`);
  const primary = page.locator("article.entry.primary");
  const conversation = page.locator("section.conversation");
  // The Dashboard may still be waiting for its Entry's publication: a form shown and then
  // replaced loses what was typed, so the request is sent again until the conversation opens.
  await h.waitFor(
    async () => {
      if (await conversation.count()) return true;
      if (!(await primary.count())) return false;
      await primary.getByRole("textbox").fill(text);
      await primary.getByRole("button", { name: "Send" }).click();
      await conversation.waitFor({ timeout: 3_000 }).catch(() => undefined);
      return (await conversation.count()) > 0;
    },
    { timeout: 30_000, message: `the ${dashboard} Dashboard to open a conversation` },
  );
  return conversation;
}

describe("usage and budgets", () => {
  it("a paused Task's card stops saying it waits for an answer once its question expired into its fallback", async () => {
    await create(
      [
        "/api/flows",
        {
          name: "expiring",
          kind: "Orchestration",
          definition: {
            steps: [
              { name: "in", type: "Input" },
              {
                name: "out",
                type: "Output",
                message: "Done",
                suspend: { kind: "Choice", prompt: "Which level of detail?", choices: [{ value: "brief" }, { value: "detailed" }], expiry: { expiresAfter: "3s", onExpiry: "Proceed", default: "brief" } },
              },
            ],
            edges: [{ from: "in", to: "out" }],
          },
        },
      ],
      ["/api/flows/expiring/versions", { version: "1.0.0", activate: true }],
      [
        "/api/entries",
        {
          apiVersion: "platform/v1",
          kind: "Entry",
          metadata: { name: "expiring" },
          definition: { displayName: "A question that expires", task: { display: "Visible" }, fields: [{ name: "request", type: "Text", role: "PrimaryInput", label: "What for?" }], binding: { flow: { name: "expiring" } } },
        },
      ],
    );
    await publishOn("expiring", "expiry-desk");
    const page = await signedInPage();
    const conversation = await ask(page, "expiry-desk", "The weekly digest");
    const card = conversation.locator(".task-ref");
    await conversation.getByRole("button", { name: "brief" }).waitFor({ timeout: 20_000 });
    await card.getByText("Waiting for your answer").waitFor();

    // The person pauses the Task; its question stays open until it expires into "brief".
    await card.getByRole("link", { name: "Task details" }).click();
    await page.getByRole("button", { name: "Pause" }).click();
    await page.getByRole("button", { name: "Resume" }).waitFor();
    await page.goBack();
    await conversation.locator('[data-state="expired-action"]').waitFor({ timeout: 15_000 });
    await card.getByText("Paused").waitFor();
    await h.waitFor(async () => !/Waiting for your answer/.test(await card.textContent()), { timeout: 5_000, message: "the card to stop waiting for an answer" });
    // Nor does the conversation say it is working: the work waits for the Task to be resumed.
    await conversation.locator('[data-state="paused"]', { hasText: "Paused: the work goes on once the Task is resumed." }).waitFor();
    assert.equal(await conversation.getByText("Working on it…").count(), 0);
    await page.reload();
    await page.locator("section.conversation .task-ref").getByText("Paused").waitFor();
    assert.doesNotMatch(await page.locator("section.conversation .task-ref").textContent(), /Waiting for your answer/);
    await h.screenshot(page, "usage-expired-question-paused-card");
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
