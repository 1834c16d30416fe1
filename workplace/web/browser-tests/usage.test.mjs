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

  it("the Console's Usage page reads at 375 px: totals, per-day and per-agent tables scrolling in their box, budgets with the exceeded one marked", async () => {
    // The report is the route's contract with many rows and long names, so the layout is held
    // whatever this server has recorded.
    const today = new Date().toISOString().slice(0, 10);
    const day = (n) => new Date(Date.now() - n * 86_400_000).toISOString().slice(0, 10);
    const row = (keys, calls) => ({ ...keys, modelCalls: calls, inputTokens: calls * 1200, outputTokens: calls * 800, totalTokens: calls * 2000, cost: { amount: (calls * 0.0123).toFixed(6), currency: "USD" } });
    const report = (groupBy) => ({
      items: groupBy === "agent" ? [row({ agent: "writer" }, 12), row({ agent: "a-reviewer-with-a-rather-long-agent-name" }, 3)] : [0, 1, 2, 3, 4, 5, 6].map((n) => row({ day: day(n) }, n + 1)),
      budgets: [
        { scope: "Workspace", name: "default", period: "Month", periodStart: `${today.slice(0, 8)}01T00:00:00Z`, limitTokens: 1_000_000, usedTokens: 56_000, exceeded: false },
        { scope: "Agent", name: "writer", period: "Day", periodStart: `${today}T00:00:00Z`, limitTokens: 1000, limitCost: { amount: "1.00", currency: "USD" }, usedTokens: 2400, usedCost: { amount: "0.0123", currency: "USD" }, exceeded: true },
      ],
    });
    const page = await signedInPage({ width: 375, height: 800 });
    const asked = [];
    await page.route("**/api/workspaces/default/usage?**", (route) => {
      const url = new URL(route.request().url());
      asked.push(url.search);
      return route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify(report(url.searchParams.get("groupBy"))) });
    });
    await page.goto(`${platform.apiUrl}/usage`);
    await page.getByRole("heading", { name: "Usage", level: 1 }).waitFor({ timeout: 20_000 });
    const totals = page.locator('[data-section="totals"]');
    await totals.locator('[data-total="modelCalls"] dd').getByText("28").waitFor();
    assert.equal((await totals.locator('[data-total="totalTokens"] dd').textContent()).trim(), "56,000");
    assert.equal((await totals.locator('[data-total="cost"] dd').textContent()).trim(), "$0.3444");
    assert.ok(asked.some((q) => /from=\d{4}-\d{2}-\d{2}&to=\d{4}-\d{2}-\d{2}&groupBy=day/.test(q)), asked.join(" "));
    assert.equal(await page.locator('[data-section="usage-days"] tbody tr').count(), 7);
    assert.equal(await page.locator('[data-section="usage-agents"] tbody tr').first().getAttribute("data-row"), "writer");
    const writer = page.locator('[data-budget-scope="Agent"][data-budget-name="writer"]');
    assert.equal(await writer.getAttribute("data-budget-state"), "exceeded");
    assert.match(await writer.textContent(), /Exceeded.*2,400 of 1,000 tokens \(240 %\).*\$0\.0123 of \$1\.00/s);
    await page.locator('[data-state="budget-exceeded"]').waitFor();

    // The page never scrolls sideways; a wide table scrolls inside its own box.
    const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, viewport: window.innerWidth }));
    assert.ok(widths.page <= widths.viewport, `the page scrolls sideways at 375 px: ${JSON.stringify(widths)}`);
    await h.screenshot(page, "usage-console-375");

    // A reversed range is refused before the API is asked, and says why.
    const before = asked.length;
    await page.getByLabel("From", { exact: true }).fill(day(0));
    await page.getByLabel("To", { exact: true }).fill(day(3));
    await page.locator('[data-state="invalid-range"]').getByText("The first day must not be after the last day.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Show" }).isDisabled(), true);
    await page.getByRole("button", { name: "Last 30 days" }).click();
    await page.waitForURL(/\/usage\?from=.*&to=/);
    await h.waitFor(() => asked.length > before, { message: "the 30 days to be read" });
    assert.ok(asked.slice(before).every((q) => q.includes(`from=${day(29)}`)), asked.slice(before).join(" "));
    assert.deepEqual(await h.axeViolations(page), []);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it("a run on the Deterministic model pauses at its agent's budget: the question waits in the inbox through a reload, the approval lets it finish, and its usage reads in the Task detail and the Console at 375 px", async (t) => {
    if ((await call("GET", "/api/workspaces/default/usage")).status === 404) {
      t.skip("this server does not record usage yet (GET /api/workspaces/{workspace}/usage answers 404)");
      return;
    }
    const agentStep = (name) => ({ name, type: "Agent", agent: { name: "drafter" } });
    await create(
      // A budget of one token a day: the first call spends past it, so the second waits for a person.
      ["/api/agents", { apiVersion: "platform/v1", kind: "Agent", metadata: { name: "drafter" }, definition: { displayName: "Drafter", instructions: "@respond The draft is ready", modelProfile: { name: "deterministic-builtin" }, budgets: [{ period: "Day", tokens: 1 }] } }],
      [
        "/api/flows",
        {
          name: "budgeted",
          kind: "Orchestration",
          definition: {
            steps: [{ name: "in", type: "Input" }, agentStep("draft"), agentStep("polish"), { name: "out", type: "Output" }],
            edges: [
              { from: "in", to: "draft" },
              { from: "draft", to: "polish" },
              { from: "polish", to: "out" },
            ],
          },
        },
      ],
      ["/api/flows/budgeted/versions", { version: "1.0.0", activate: true }],
      [
        "/api/entries",
        {
          apiVersion: "platform/v1",
          kind: "Entry",
          metadata: { name: "budgeted" },
          definition: { displayName: "Draft within a budget", task: { display: "Visible" }, fields: [{ name: "request", type: "Text", role: "PrimaryInput", label: "What to draft?" }], binding: { flow: { name: "budgeted" } } },
        },
      ],
    );
    await publishOn("budgeted", "budget-desk");
    const noSidewaysScroll = async (page, where) => {
      const w = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, viewport: window.innerWidth }));
      assert.ok(w.page <= w.viewport, `${where} scrolls sideways at 375 px: ${JSON.stringify(w)}`);
    };

    const page = await signedInPage({ width: 375, height: 800 });
    const conversation = await ask(page, "budget-desk", "The weekly summary");
    // The pause is a question like a tool approval, in the conversation...
    await conversation.locator(".message.kind-question", { hasText: /budget/i }).waitFor({ timeout: 30_000 });
    await conversation.getByRole("button", { name: "Approve" }).waitFor();

    // ... in its Task, with the budget it would cross ...
    await conversation.locator(".task-ref").getByRole("link", { name: "Task details" }).click();
    const asked = page.locator("section.questions .question-card", { hasText: /budget/i });
    await asked.locator(".approval-budget", { hasText: "Agent drafter" }).waitFor({ timeout: 15_000 });
    assert.match(await asked.locator(".approval-budget").textContent(), /of 1 token/);
    await asked.getByRole("button", { name: "Decline" }).waitFor();
    await noSidewaysScroll(page, "the Task detail");
    await h.screenshot(page, "usage-budget-question-task-375");

    // ... and in the inbox, where it survives a reload and is answered.
    await page.goto(`${platform.workplaceUrl}w/default/inbox`);
    const card = page.locator(".question-card", { hasText: /budget/i });
    await card.waitFor({ timeout: 15_000 });
    await page.reload();
    await card.getByRole("button", { name: "Decline" }).waitFor({ timeout: 15_000 });
    assert.match(await card.textContent(), /go on past the budget/);
    await noSidewaysScroll(page, "the inbox");
    await h.screenshot(page, "usage-budget-question-inbox-375");
    await card.getByRole("button", { name: "Approve" }).click();
    await card.waitFor({ state: "detached", timeout: 15_000 }).catch(() => card.locator('[data-question-state="closed"]').waitFor());

    // The run finishes; its Task says what its model calls used, in plain words.
    const tasks = (await call("GET", "/api/workspaces/default/tasks?take=20")).body.items;
    const task = tasks.find((x) => x.title.includes("The weekly summary"));
    assert.ok(task, JSON.stringify(tasks.map((x) => x.title)));
    await page.goto(`${platform.workplaceUrl}w/default/tasks/${task.id}`);
    await page.locator('[data-task-state="completed"]').waitFor({ timeout: 30_000 });
    // The step that waited for the approval is one finished step: nothing shows as still in progress.
    assert.equal(await page.locator(".current-step").count(), 0, "a completed Task shows no current step");
    const usage = page.locator('[data-section="usage"]');
    await usage.getByText(/^2 model calls used [\d,]+ tokens \([\d,]+ read, [\d,]+ written\)/).waitFor({ timeout: 10_000 });
    assert.doesNotMatch(await usage.textContent(), /Deterministic|sha256|[{}]|modelCalls|inputTokens/, "plain words, no provider, hash or raw field");
    await noSidewaysScroll(page, "the Task detail");
    await h.screenshot(page, "usage-task-detail-375");

    // The Console's Usage page has today's row, the agent's row and the exceeded budget.
    await page.goto(`${platform.apiUrl}/usage`);
    const totals = page.locator('[data-section="totals"]');
    await totals.locator('[data-total="modelCalls"]').waitFor({ timeout: 20_000 });
    assert.ok(Number((await totals.locator('[data-total="modelCalls"] dd').textContent()).replace(/,/g, "")) >= 2);
    await page.locator('[data-section="usage-days"] tbody tr').first().waitFor();
    const drafter = page.locator('[data-section="usage-agents"] tbody tr[data-row="drafter"]');
    assert.equal((await drafter.locator("td").first().textContent()).trim(), "2");
    assert.equal(await page.locator('[data-budget-scope="Agent"][data-budget-name="drafter"]').getAttribute("data-budget-state"), "exceeded");
    await noSidewaysScroll(page, "the Console's Usage page");
    await h.screenshot(page, "usage-console-real-375");
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
