// The Workplace in a real browser against the real binary: a newcomer's first run, the three demo
// Entries end to end, a follow-up, a blocking question, New request, the explicit states of rule
// 17 that can be produced here, the 620 px layout and screenshots at 1280, 900 and 375 px.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;
let reportConversation; // the ?c= of the completed prepare-report conversation

before(async () => {
  platform = await h.startPlatform({ name: "workplace-suite" });
  browser = await h.launchBrowser();
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

const composer = (page) => page.getByRole("textbox", { name: "Message" });

async function openHome(page) {
  await page.goto(platform.workplaceUrl);
  await page.waitForURL(/\/w\/default\/d\/home/);
  await page.getByRole("heading", { name: "Prepare a report" }).waitFor();
}

describe("the Workplace", () => {
  it("lets a newcomer create the first administrator from the Workplace and brings them back to the home Dashboard", async () => {
    const page = await h.newPage(browser);
    await page.goto(platform.workplaceUrl);
    await page.getByRole("link", { name: "Create the first administrator" }).click();
    await page.waitForURL((u) => u.toString().startsWith(`${platform.apiUrl}/bootstrap`));
    await page.fill("#username", h.admin.username);
    await page.fill("#displayName", h.admin.displayName);
    await page.fill("#password", h.admin.password);
    await page.fill("#confirmPassword", h.admin.password);
    await page.fill("#tenantName", h.admin.tenantName);
    await page.fill("#workspaceName", h.admin.workspaceName);
    await page.getByRole("button", { name: "Create administrator" }).click();
    // `/` resolves the selected workspace, then its default Dashboard (rule 2).
    await page.waitForURL(`${platform.workplaceUrl}w/default/d/home`);
    await page.getByRole("heading", { name: "Prepare a report" }).waitFor();
    // A fresh workspace: each section says that it is empty (rule 17).
    await page.locator('[data-panel="tasks"] [data-state="empty"]', { hasText: "No Tasks yet" }).waitFor();
    await page.locator('[data-panel="notifications"] [data-state="empty"]', { hasText: "Nothing needs your attention" }).waitFor();
    await page.locator('section[aria-labelledby=recent-h] [data-state="empty"]', { hasText: "No earlier conversations" }).waitFor();
    await h.screenshot(page, "workplace-empty-1280");
    session = (await page.context().cookies()).find((c) => c.name === "platform-session").value;
    assert.ok(session);
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it("signs a returning user in through the server's /login and back to the page they asked for", async () => {
    const page = await h.newPage(browser);
    await page.goto(`${platform.workplaceUrl}w/default/d/home`);
    await page.getByRole("link", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.toString().startsWith(`${platform.apiUrl}/login`));
    await page.fill("#username", h.admin.username);
    await page.fill("#password", h.admin.password);
    await page.getByRole("button", { name: /sign in/i }).click();
    await page.waitForURL(`${platform.workplaceUrl}w/default/d/home`);
    await page.getByRole("heading", { name: "Prepare a report" }).waitFor();
    await page.context().close();
  });

  it("prepare-report: suggestions fill the composer without sending, Ctrl+Enter sends, the choice and the confirmation are answered inline, and the Task completes (rules 9, 11, 16, 18)", async () => {
    const page = await signedInPage();
    const opened = [];
    page.on("request", (r) => r.method() === "POST" && r.url().includes("/interactions") && opened.push(r.url()));
    await openHome(page);

    const primary = page.locator("article.entry.primary");
    assert.equal(await primary.getAttribute("aria-label"), "Prepare a report", "the Primary Entry is the emphasized one");
    const request = primary.getByRole("textbox", { name: "What should the report cover?" });
    await primary.getByRole("button", { name: "Quarterly sales in the north region" }).click();
    assert.equal(await request.inputValue(), "Quarterly sales in the north region");
    await page.waitForTimeout(300);
    assert.deepEqual(opened, [], "a suggestion fills the composer and sends nothing");
    assert.equal(await primary.getByRole("combobox", { name: "Detail level" }).inputValue(), "standard", "the detail level defaults to standard");
    assert.equal(await primary.locator("input[type=file]").count(), 0, "no attachment control is offered");

    await request.press("Control+Enter");
    const conversation = page.locator("section.conversation");
    await conversation.getByRole("button", { name: "Table" }).waitFor();
    assert.equal(opened.length, 1);
    assert.match(page.url(), /\?c=/);

    // Rule 9: the blocking question disables the composer, with an explanation.
    assert.equal(await composer(page).isDisabled(), true);
    await conversation.getByText("Answer the question above to continue").waitFor();
    await conversation.locator(".task-ref").getByText("Needs your answer").waitFor();

    // Rule 4: Primary, Featured, Standard, the current conversation, recent Tasks, notifications.
    const order = await page.evaluate(() => {
      const top = (sel) => document.querySelector(sel)?.getBoundingClientRect().top ?? -1;
      const roles = [...document.querySelectorAll("article.entry")].map((a) => a.dataset.role);
      const pos = (sel) => {
        const all = [...document.querySelectorAll("main *")];
        return all.indexOf(document.querySelector(sel));
      };
      return { roles, conversation: pos("section.conversation"), tasks: pos("#tasks-h"), notes: pos("#notes-h"), entries: pos(".entries"), t: top(".entries") };
    });
    assert.deepEqual(order.roles, ["primary", "featured", "standard"]);
    assert.ok(order.entries < order.conversation && order.conversation < order.tasks && order.tasks < order.notes, JSON.stringify(order));

    await conversation.getByRole("button", { name: "Table" }).click();
    await conversation.locator(".message.role-user", { hasText: "Table" }).waitFor();
    await conversation.getByRole("button", { name: "Yes" }).click();
    await conversation.locator(".task-ref").getByText("Completed").waitFor({ timeout: 20_000 });
    await conversation.locator(".message.role-user", { hasText: "Yes" }).waitFor();
    assert.equal(await composer(page).isDisabled(), false, "the composer stays after the result (rule 5)");
    assert.equal(await conversation.locator("[data-diagnostics]").count(), 0, "an automatic Result has no diagnostic control outside the Development host (rule 14)");
    reportConversation = new URL(page.url()).search;

    for (const width of [1280, 900, 375]) {
      await page.setViewportSize({ width, height: 900 });
      await h.screenshot(page, `workplace-conversation-${width}`);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    assert.deepEqual(await h.axeViolations(page), [], "no serious accessibility violation on the conversation");

    // The notification that the Task completed opens the Task, where its Result is, not the
    // conversation that only links it.
    const completed = page.locator('[data-notification-kind="task-completed"] a', { hasText: "Prepare the report" }).first();
    await completed.waitFor({ timeout: 20_000 });
    assert.match(await completed.getAttribute("href"), /\/w\/default\/tasks\//);
    await completed.click();
    await page.getByRole("heading", { name: "Prepare the report", level: 1 }).waitFor();
    await page.goBack();

    await conversation.getByRole("link", { name: "Task details" }).click();
    await page.getByRole("heading", { name: "Prepare the report", level: 1 }).waitFor();
    await page.locator('[data-state="no-artifact"]').waitFor();
    assert.equal(await page.getByRole("button", { name: /Pause|Resume|Cancel Task/ }).count(), 0, "no pause, resume or cancel on a completed Task");
    await page.getByText(/finished steps/).waitFor();
    const runs = await h.api(platform.apiUrl, session, "GET", "/api/flowRuns?take=100");
    const taskId = page.url().split("/tasks/")[1];
    const run = runs.body.items.find((r) => r.correlation?.workTaskId === taskId);
    assert.ok(run, "the Task has a run");
    const text = await page.locator("main").innerText();
    assert.ok(!text.includes(run.id), "no run id in Task detail");
    assert.ok(!/\bconfirm\b|flowRun|storageKey/i.test(text), "no node name, run field or storage key in Task detail");
    await h.screenshot(page, "workplace-task-detail-1280");
    assert.deepEqual(await h.axeViolations(page), [], "no serious accessibility violation on Task detail");
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it("the Development host shows the automatic Result of a Task only in a collapsed diagnostic control (rule 14)", async () => {
    assert.ok(reportConversation, "the prepare-report test ran first");
    const dev = await h.startWorkplace({ name: "workplace-development-host", apiUrl: platform.apiUrl, env: { PLATFORM_ENVIRONMENT: "Development" } });
    try {
      const page = await signedInPage();
      await page.goto(`${dev.url}/w/default/d/home${reportConversation}`);
      const conversation = page.locator("section.conversation");
      await conversation.locator(".task-ref").getByText("Completed").waitFor();
      const control = conversation.locator('details[data-diagnostics="results"]');
      await control.waitFor();
      assert.equal(await control.getAttribute("open"), null, "collapsed until a developer opens it");
      assert.equal(await conversation.locator(".message.kind-result").count(), 0, "the Result is not a message of the conversation");
      await control.locator("summary").click();
      await control.locator(".diagnostic-result").first().waitFor();
      assert.match(await control.innerText(), /table/i, "the Result of the report, in the chosen format");
      await h.screenshot(page, "workplace-development-diagnostics-1280");
      assert.deepEqual(await h.axeViolations(page), []);
      await page.context().close();
    } finally {
      await dev.stop();
    }
  });

  it("quick-answer answers at once without a Task, and takes a follow-up in the same conversation (rules 6, 18)", async () => {
    const page = await signedInPage();
    await openHome(page);
    const start = page.getByRole("button", { name: "Start Quick answer" });
    await start.focus();
    await page.keyboard.press("Enter");
    const form = page.getByRole("form", { name: "Quick answer" });
    await form.getByRole("textbox", { name: "Your question" }).fill("What is a workspace?");
    await form.getByRole("button", { name: "Send" }).click();
    const conversation = page.locator("section.conversation");
    await conversation.locator(".message.kind-reply", { hasText: "What is a workspace?" }).waitFor();
    assert.equal(await conversation.locator(".task-ref").count(), 0, "quick-answer creates no Task reference");
    const url = page.url();

    await composer(page).fill("And what is a Dashboard?");
    await conversation.getByRole("button", { name: "Send" }).click();
    await conversation.locator(".message.role-user", { hasText: "And what is a Dashboard?" }).waitFor();
    await h.waitFor(async () => (await conversation.locator(".message.kind-reply").count()) === 2, { message: "the follow-up's answer" });
    assert.equal(page.url(), url, "the follow-up stays in the same conversation");
    assert.equal(await conversation.locator(".task-ref").count(), 0);
    await page.context().close();
  });

  it("guided-request asks for a style with choice buttons, and New request returns to the Primary Entry with the conversation under Recent conversations (rules 5, 9, 18)", async () => {
    const page = await signedInPage();
    await openHome(page);
    await page.getByRole("button", { name: "Start Guided request" }).click();
    const form = page.getByRole("form", { name: "Guided request" });
    await form.getByRole("textbox", { name: "What do you need?" }).fill("A note to the team");
    await form.getByRole("textbox", { name: "What do you need?" }).press("Control+Enter");
    const conversation = page.locator("section.conversation");
    for (const style of ["Formal", "Friendly", "Concise"]) await conversation.getByRole("button", { name: style }).waitFor();
    // Work that waits for the reader is not shown as busy, here nor on its Task's page.
    const waiting = conversation.locator(".task-ref .progress", { hasText: "Waiting for your answer" });
    await waiting.waitFor();
    assert.equal(await waiting.locator(".spinner").count(), 0, "no spinner while the work waits for the reader");
    await conversation.getByRole("link", { name: "Task details" }).click();
    const taskWaiting = page.locator(".task-detail .current-step", { hasText: "Waiting for your answer" });
    await taskWaiting.waitFor();
    assert.equal(await taskWaiting.locator(".spinner").count(), 0, "no spinner on the Task page either");
    await page.goBack();
    await conversation.getByRole("button", { name: "Friendly" }).click();
    await conversation.locator(".message.role-user", { hasText: "Friendly" }).waitFor();
    await h.waitFor(async () => !(await composer(page).isDisabled()), { message: "the composer to open again" });

    await conversation.getByRole("button", { name: "New request" }).click();
    await page.waitForURL(/\/d\/home$/);
    await page.locator("article.entry.primary form").waitFor();
    await page.locator("section.conversation").waitFor({ state: "detached" });
    const recent = page.locator("section[aria-labelledby=recent-h]");
    await recent.getByRole("link", { name: "Guided request" }).first().waitFor();
    await page.context().close();
  });

  it("cancelling a Task shows the cancellation and that it has no result (rule 17)", async () => {
    const page = await signedInPage();
    await openHome(page);
    const primary = page.locator("article.entry.primary");
    await primary.getByRole("textbox", { name: "What should the report cover?" }).fill("Churn by month");
    await primary.getByRole("button", { name: "Send" }).click();
    const conversation = page.locator("section.conversation");
    await conversation.getByRole("button", { name: "Summary" }).waitFor();
    await conversation.getByRole("link", { name: "Task details" }).click();
    const cancel = page.getByRole("button", { name: "Cancel Task" });
    await cancel.click();
    await page.locator('[data-state="cancellation"]').waitFor();
    await page.locator('[data-state="no-result"]').getByText("This Task has no result.").waitFor();
    assert.equal(await page.getByRole("button", { name: /Pause|Cancel Task/ }).count(), 0, "a cancelled Task offers no pause or cancel");
    await h.screenshot(page, "workplace-task-cancelled-1280");
    await page.context().close();
  });

  it("an answer to a question that was answered meanwhile shows the expired action and refreshes (rule 17)", async () => {
    const page = await signedInPage();
    // Live updates are kept out of this page, so it still shows the question when it answers.
    await page.route("**/hubs/**", (r) => r.abort());
    await openHome(page);
    await page.getByRole("button", { name: "Start Guided request" }).click();
    const form = page.getByRole("form", { name: "Guided request" });
    await form.getByRole("textbox", { name: "What do you need?" }).fill("A summary");
    const response = page.waitForResponse((r) => r.request().method() === "POST" && r.url().includes("/entries/guided-request/interactions"));
    await form.getByRole("button", { name: "Send" }).click();
    const opened = await (await response).json();
    const conversation = page.locator("section.conversation");
    await conversation.getByRole("button", { name: "Concise" }).waitFor();

    const answered = await h.api(
      platform.apiUrl,
      session,
      "POST",
      `/api/workspaces/default/interactions/${opened.interaction.id}/pending-actions/${opened.action.pendingAction.id}/responses`,
      { resumeToken: opened.resumeToken, value: "formal" },
    );
    assert.equal(answered.status, 200);
    await conversation.getByRole("button", { name: "Concise" }).click();
    await conversation.locator('[data-state="expired-action"]').waitFor();
    await conversation.locator(".message.role-user", { hasText: "Formal" }).waitFor();
    await page.context().close();
  });

  it("a failing Entry shows the failure in the conversation and on its Task (rule 17)", async () => {
    const put = (method, p, body) => h.api(platform.apiUrl, session, method, p, body);
    assert.equal(
      (await put("POST", "/api/agents", { apiVersion: "platform/v1", kind: "Agent", metadata: { name: "flaky" }, definition: { displayName: "Flaky", instructions: "@showError The data source is offline", modelProfile: { name: "deterministic-builtin" } } }))
        .status,
      201,
    );
    assert.equal(
      (
        await put("POST", "/api/entries", {
          apiVersion: "platform/v1",
          kind: "Entry",
          metadata: { name: "flaky-report" },
          definition: { displayName: "Flaky report", task: { display: "Visible" }, fields: [{ name: "request", type: "Text", role: "PrimaryInput" }], binding: { agent: { name: "flaky" } } },
        })
      ).status,
      201,
    );
    await h.waitFor(async () => (await put("POST", "/api/entries/flaky-report/publish")).status < 300, { timeout: 30_000, message: "the Entry to publish" });
    const dash = await put("POST", "/api/dashboards", { apiVersion: "platform/v1", kind: "Dashboard", metadata: { name: "ops" }, definition: { displayName: "Operations", entries: [{ name: "flaky-report", role: "Primary" }] } });
    assert.equal(dash.status, 201, JSON.stringify(dash.body));

    const page = await signedInPage();
    await page.goto(`${platform.workplaceUrl}w/default/d/ops`);
    const primary = page.locator("article.entry.primary");
    await h.waitFor(async () => {
      if (await primary.count()) return true;
      await page.reload();
      return false;
    }, { timeout: 30_000, message: "the ops Dashboard to show its Entry" });
    await primary.getByRole("textbox").fill("Anything");
    await primary.getByRole("button", { name: "Send" }).click();
    await page.locator('section.conversation [data-state="failure"]', { hasText: "The data source is offline" }).first().waitFor({ timeout: 20_000 });
    await h.screenshot(page, "workplace-failure-1280");
    // Switching Dashboard moves no work (rule 2): the conversation stays current on home.
    await page.getByRole("combobox", { name: "Dashboard" }).selectOption("home");
    await page.waitForURL(/\/d\/home\?c=/);
    await page.locator("section.conversation").getByRole("heading", { name: "Flaky report" }).waitFor();
    await page.locator("article.entry.primary", { hasText: "Prepare a report" }).waitFor();
    await page.context().close();
  });

  it("shows a section as loading until its read answers (rule 17)", async () => {
    const page = await signedInPage();
    let release;
    const held = new Promise((resolve) => (release = resolve));
    await page.route(/\/api\/workspaces\/[^/]+\/tasks\?/, async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(platform.workplaceUrl);
    await page.getByRole("heading", { name: "Prepare a report" }).waitFor();
    const tasks = page.locator('[data-panel="tasks"]');
    await tasks.locator('[data-state="loading"][role="status"]', { hasText: "Loading Tasks" }).waitFor();
    assert.equal(await page.locator('[data-panel="notifications"] [data-state="loading"]').count(), 0, "only the section still waiting is loading");
    await h.screenshot(page, "workplace-loading-1280");
    release();
    await tasks.locator("li").first().waitFor();
    assert.equal(await tasks.locator('[data-state="loading"]').count(), 0);
    await page.context().close();
  });

  it("answers an input, a file and an approval inside the conversation, and the file becomes a downloadable artifact card (rules 9, 15)", async () => {
    const call = (method, p, body) => h.api(platform.apiUrl, session, method, p, body);
    const step = (name, kind, prompt) => ({ name, type: "Agent", agent: { name: "reviewer" }, suspend: { kind, prompt } });
    for (const [p, body] of [
      ["/api/agents", { apiVersion: "platform/v1", kind: "Agent", metadata: { name: "reviewer" }, definition: { displayName: "Reviewer", instructions: "@respond Reviewed", modelProfile: { name: "deterministic-builtin" } } }],
      [
        "/api/flows",
        {
          name: "review",
          kind: "Orchestration",
          definition: {
            steps: [{ name: "in", type: "Input" }, step("audience", "Text", "Who reads it?"), step("upload", "File", "Send the draft"), step("approve", "Approval", "Publish it?"), { name: "out", type: "Output" }],
            edges: [
              { from: "in", to: "audience" },
              { from: "audience", to: "upload" },
              { from: "upload", to: "approve" },
              { from: "approve", to: "out" },
            ],
          },
        },
      ],
      ["/api/flows/review/versions", { version: "1.0.0", activate: true }],
      [
        "/api/entries",
        {
          apiVersion: "platform/v1",
          kind: "Entry",
          metadata: { name: "review" },
          definition: { displayName: "Review a draft", task: { display: "Visible" }, fields: [{ name: "request", type: "Text", role: "PrimaryInput", label: "What is to be reviewed?" }], binding: { flow: { name: "review" } } },
        },
      ],
    ]) {
      const r = await call("POST", p, body);
      assert.equal(r.status, 201, `${p}: ${JSON.stringify(r.body)}`);
    }
    await h.waitFor(async () => (await call("POST", "/api/entries/review/publish")).status < 300, { timeout: 30_000, message: "the Entry to publish" });
    const dash = await call("POST", "/api/dashboards", { apiVersion: "platform/v1", kind: "Dashboard", metadata: { name: "review-desk" }, definition: { displayName: "Review desk", entries: [{ name: "review", role: "Primary" }] } });
    assert.equal(dash.status, 201, JSON.stringify(dash.body));

    const page = await signedInPage();
    await page.goto(`${platform.workplaceUrl}w/default/d/review-desk`);
    const primary = page.locator("article.entry.primary");
    await h.waitFor(async () => {
      if (await primary.count()) return true;
      await page.reload();
      return false;
    }, { timeout: 30_000, message: "the review-desk Dashboard to show its Entry" });
    await primary.getByRole("textbox", { name: "What is to be reviewed?" }).fill("Q3 report");
    await primary.getByRole("button", { name: "Send" }).click();
    const conversation = page.locator("section.conversation");

    // An input is a small inline composer; the blocking question disables the main composer.
    const answer = conversation.getByRole("textbox", { name: "Your answer" });
    await answer.waitFor();
    assert.equal(await composer(page).isDisabled(), true);
    await answer.fill("The board");
    await answer.press("Enter");
    await conversation.locator(".message.role-user", { hasText: "The board" }).waitFor();

    // A file.
    const file = conversation.getByLabel("File", { exact: true });
    await file.waitFor();
    await file.setInputFiles({ name: "draft.csv", mimeType: "text/csv", buffer: Buffer.from("region,sales\nnorth,12\n") });
    await conversation.getByRole("button", { name: "Send file" }).click();
    await conversation.locator(".message.role-user", { hasText: "Sent draft.csv" }).waitFor();

    // An approval, with its reason.
    await conversation.getByRole("textbox", { name: "Reason (optional)" }).fill("Looks right");
    await conversation.getByRole("button", { name: "Approve" }).click();
    await conversation.locator(".message.role-user", { hasText: "Approved: Looks right" }).waitFor();
    await conversation.locator(".task-ref").getByText("Completed").waitFor({ timeout: 20_000 });
    assert.equal(await composer(page).isDisabled(), false);
    assert.deepEqual(await h.axeViolations(page), [], "no serious accessibility violation with the inline actions");

    // Task detail: the file is an artifact card with its download.
    await conversation.getByRole("link", { name: "Task details" }).click();
    const card = page.locator(".artifact-card", { hasText: "draft.csv" });
    await card.getByText("text/csv").waitFor();
    const download = page.waitForEvent("download");
    await card.getByRole("link", { name: "Download draft.csv" }).click();
    const got = await download;
    assert.equal(got.suggestedFilename(), "draft.csv");
    const fs = await import("node:fs/promises");
    assert.equal(await fs.readFile(await got.path(), "utf8"), "region,sales\nnorth,12\n");
    await h.screenshot(page, "workplace-task-artifact-1280");
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it("follows the 620 px layout: two columns wide, stacked on a tablet, one column with bottom navigation below 620 px (rule 17)", async () => {
    const page = await signedInPage({ width: 1280, height: 900 });
    await openHome(page);
    const box = async (sel) => page.locator(sel).first().boundingBox();
    let main = await box(".col-main");
    let side = await box(".col-side");
    assert.ok(side.x > main.x + main.width - 1, "two columns when wide");
    assert.equal(await page.locator(".bottom-nav").isVisible(), false);
    await h.screenshot(page, "workplace-dashboard-1280");

    await page.setViewportSize({ width: 900, height: 900 });
    main = await box(".col-main");
    side = await box(".col-side");
    assert.ok(side.y >= main.y + main.height - 1 && Math.abs(side.x - main.x) < 2, "stacked on a tablet");
    assert.equal(await page.locator(".bottom-nav").isVisible(), false);
    await h.screenshot(page, "workplace-dashboard-900");

    await page.setViewportSize({ width: 620, height: 900 });
    assert.equal(await page.locator(".bottom-nav").isVisible(), false, "620 px is not yet the phone layout");
    await page.setViewportSize({ width: 619, height: 900 });
    assert.equal(await page.locator(".bottom-nav").isVisible(), true, "bottom navigation below 620 px");

    await page.setViewportSize({ width: 375, height: 800 });
    assert.equal(await page.locator(".bottom-nav").isVisible(), true);
    assert.equal(await page.locator("#tasks-h").isVisible(), false, "one section at a time");
    await h.screenshot(page, "workplace-dashboard-375");
    await page.locator(".bottom-nav").getByRole("button", { name: "Tasks" }).click();
    assert.equal(await page.locator("#tasks-h").isVisible(), true);
    assert.equal(await page.locator("article.entry.primary").isVisible(), false);
    await h.screenshot(page, "workplace-tasks-375");
    assert.deepEqual(await h.axeViolations(page), [], "no serious accessibility violation on the phone layout");
    // A reload keeps the section; the back button goes back to the one before.
    await page.reload();
    await page.locator("#tasks-h").waitFor();
    assert.equal(await page.locator("article.entry.primary").isVisible(), false);
    await page.goBack();
    await page.locator("article.entry.primary").waitFor();
    assert.equal(await page.locator("#tasks-h").isVisible(), false);
    // A Task chosen from the Tasks section is shown, not the list it was chosen from.
    const work = await h.api(platform.apiUrl, session, "POST", "/api/work/workitems?waitSeconds=10", {
      type: "note", title: "A Task for the phone", instruction: "Say hello", flowReference: { name: "direct-quick-answer-builtin" },
    });
    assert.equal(work.status, 202, JSON.stringify(work.body));
    await page.goForward();
    await page.locator("#tasks-h").waitFor();
    const task = page.locator('section[data-panel="tasks"] li a', { hasText: "A Task for the phone" });
    const title = await task.innerText();
    await task.click();
    await page.locator("#task-title").getByText(title).waitFor();
    assert.equal(await page.locator("#tasks-h").isVisible(), false);
    // The offline model answers what the WorkItem asks, not its JSON.
    await page.locator(".task-detail").getByText('Here is a quick answer to "Say hello".').waitFor();
    assert.doesNotMatch(await page.locator(".task-detail").innerText(), /\{"/, "no raw JSON in the Result a person reads");
    await h.screenshot(page, "workplace-task-from-tasks-375");
    await page.context().close();
  });

  it("follows the Principal's theme preference", async () => {
    assert.equal((await h.api(platform.apiUrl, session, "PUT", "/api/identity/preferences", { theme: "Dark" })).status, 200);
    const page = await signedInPage();
    await openHome(page);
    await h.waitFor(() => page.evaluate(() => document.documentElement.dataset.theme === "dark"), { message: "the dark theme" });
    await h.screenshot(page, "workplace-dashboard-dark-1280");
    assert.deepEqual(await h.axeViolations(page), [], "no serious accessibility violation in the dark theme");
    await h.api(platform.apiUrl, session, "PUT", "/api/identity/preferences", { theme: "System" });
    await page.context().close();
  });

  it("shows that real-time updates are disconnected when the hub cannot be reached, and keeps working over REST (rule 17)", async () => {
    const host = await h.startWorkplace({ name: "workplace-nohub", apiUrl: platform.apiUrl, args: ["--hub-url", `${platform.apiUrl}/hubs/nowhere`] });
    try {
      const page = await signedInPage();
      await page.goto(host.url);
      await page.locator('[data-state="realtime-disconnected"]').waitFor({ timeout: 20_000 });
      await page.getByRole("button", { name: "Start Quick answer" }).click();
      const form = page.getByRole("form", { name: "Quick answer" });
      await form.getByRole("textbox", { name: "Your question" }).fill("Still there?");
      await form.getByRole("button", { name: "Send" }).click();
      await page.locator("section.conversation .message.kind-reply", { hasText: "Still there?" }).waitFor();
      await h.screenshot(page, "workplace-realtime-disconnected-1280");
      await page.context().close();
    } finally {
      await host.stop();
    }
  });

  it("updates another page of the same workspace live, through the hub (rule 17)", async (t) => {
    if (!(await h.hubAvailable(platform.apiUrl, session))) {
      t.skip("the server has no real-time hub yet");
      return;
    }
    const watcher = await signedInPage();
    await openHome(watcher);
    await watcher.locator(".live-connected").waitFor();
    const before = await watcher.locator("section[aria-labelledby=recent-h] li").count();
    const r = await h.api(platform.apiUrl, session, "POST", "/api/workspaces/default/entries/quick-answer/interactions", { input: { question: "Live?" } });
    assert.equal(r.status, 201);
    await h.waitFor(async () => (await watcher.locator("section[aria-labelledby=recent-h] li").count()) > before, { message: "the new conversation to appear without a reload" });
    await watcher.context().close();
  });
});
