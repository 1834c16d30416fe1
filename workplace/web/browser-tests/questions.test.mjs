// Every question is answerable wherever it is shown, in a real browser against the real binary:
// after a reload, from a notification in a second tab, an autonomous Task's in its Task detail
// and in the "Needs you" inbox; a question's notification follows its question.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;

before(async () => {
  platform = await h.startPlatform({ name: "questions-suite" });
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

async function openHome(page) {
  await page.goto(platform.workplaceUrl);
  await page.waitForURL(/\/w\/default\/d\/home/);
  await page.getByRole("heading", { name: "Prepare a report" }).waitFor({ timeout: 60_000 });
}

/** askReport starts prepare-report in page and waits for its first question (the format). */
async function askReport(page, request) {
  await openHome(page);
  const primary = page.locator("article.entry.primary");
  const box = primary.getByRole("textbox", { name: "What should the report cover?" });
  await box.fill(request);
  await box.press("Control+Enter");
  const conversation = page.locator("section.conversation");
  await conversation.getByRole("button", { name: "Table" }).waitFor({ timeout: 20_000 });
  return conversation;
}

/** autonomousTask submits prepare-report's Flow as Work (no conversation): a Task that asks. */
async function autonomousTask(title) {
  const r = await h.api(platform.apiUrl, session, "POST", "/api/work/workitems?waitSeconds=10", {
    type: "report",
    title,
    instruction: "Prepare the nightly report",
    flowReference: { name: "prepare-report-builtin" },
  });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  assert.ok(r.body.flowRun.pendingAction, "the Task waits on its first question");
  return r.body.workItem.id;
}

describe("questions", () => {
  it("answers a conversation's question after a reload of the page", async () => {
    const page = await signedInPage();
    let conversation = await askReport(page, "Reloaded sales");
    await page.reload();
    conversation = page.locator("section.conversation");
    await conversation.getByRole("button", { name: "Table" }).click();
    await conversation.locator(".message.role-user", { hasText: "Table" }).waitFor({ timeout: 20_000 });
    await conversation.getByRole("button", { name: "Yes" }).waitFor({ timeout: 20_000 });
    // And once more: the token the answer returned was kept across this reload as well.
    await page.reload();
    await page.locator("section.conversation").getByRole("button", { name: "Yes" }).click();
    await page.locator("section.conversation .task-ref").getByText("Completed").waitFor({ timeout: 20_000 });
    assert.equal(await page.locator('[data-state="expired-action"]').count(), 0, "no dead end");
    await h.screenshot(page, "questions-after-reload");
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it("answers a conversation's question while another tab keeps taking fresh tokens for it, and never shows the token's refusal", async () => {
    const page = await signedInPage();
    const conversation = await askReport(page, "Contended sales");
    // The first fresh token this page takes is made stale at once by another tab taking one too
    // (as two tabs answering at the same moment do); the next holds.
    let churn = 1;
    await page.route("**/resume-token", async (route) => {
      const response = await route.fetch();
      if (churn-- > 0) {
        const url = new URL(route.request().url());
        assert.equal((await h.api(platform.apiUrl, session, "POST", url.pathname.replace(/^\/api/, "/api"))).status, 200);
      }
      await route.fulfill({ response });
    });
    // This tab's own token goes stale first: another tab asked for one.
    const interaction = new URL(page.url()).searchParams.get("c");
    const pending = (await h.api(platform.apiUrl, session, "GET", `/api/workspaces/default/interactions/${interaction}`)).body.action.pendingAction.id;
    assert.equal((await h.api(platform.apiUrl, session, "POST", `/api/workspaces/default/interactions/${interaction}/pending-actions/${pending}/resume-token`)).status, 200);
    await conversation.getByRole("button", { name: "Table" }).click();
    await conversation.locator(".message.role-user", { hasText: "Table" }).waitFor({ timeout: 20_000 });
    assert.equal(await page.getByText(/resume token/i).count(), 0, "no word of tokens to the person");
    assert.equal(churn, -1, "the page took two fresh tokens");
    await page.unroute("**/resume-token");
    await conversation.getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
    await conversation.locator(".task-ref").getByText("Completed").waitFor({ timeout: 20_000 });
    await page.context().close();
  });

  it("answers from a notification in a second tab, the notification resolves and the first tab follows within a second", async () => {
    const first = await signedInPage();
    const conversation = await askReport(first, "Second tab sales");
    const second = await first.context().newPage();
    second.errors = [];
    second.on("pageerror", (e) => second.errors.push(e.message));
    await second.goto(platform.workplaceUrl);
    const notes = second.locator('[data-panel="notifications"]');
    const waiting = notes.locator('li[data-notification-kind="question"]:not([data-resolved])').first();
    await waiting.waitFor({ timeout: 20_000 });
    assert.match(await waiting.textContent(), /A question is waiting/);
    const unreadBefore = Number((await notes.locator(".badge").textContent()) ?? "0");
    await waiting.getByRole("link").click();
    const there = second.locator("section.conversation");
    await there.getByRole("button", { name: "Table" }).click();
    await there.getByRole("button", { name: "Yes" }).waitFor({ timeout: 20_000 });

    // The first tab was told: its buttons are gone and the next question is shown.
    await conversation.getByRole("button", { name: "Yes" }).waitFor({ timeout: 3_000 });
    assert.equal(await conversation.getByRole("button", { name: "Table" }).count(), 0);

    // The question's notification follows its question: resolved, read, no longer "waiting".
    await notes.locator('li[data-resolved="answered"]', { hasText: "Question answered" }).first().waitFor({ timeout: 5_000 });
    const badge = await notes.locator(".badge").count() ? Number(await notes.locator(".badge").textContent()) : 0;
    const boldUnread = await notes.locator("li.unread").count();
    assert.equal(badge, boldUnread, "the badge counts exactly the unread items");
    assert.ok(badge <= unreadBefore);
    await h.screenshot(second, "questions-second-tab");
    // The first tab answers the next question, though the answer's token went to the second tab.
    await conversation.getByRole("button", { name: "Yes" }).click();
    await conversation.locator(".task-ref").getByText("Completed").waitFor({ timeout: 20_000 });
    assert.deepEqual([...first.errors, ...second.errors], []);
    await first.context().close();
  });

  it("answers an autonomous Task's questions in its Task detail", async () => {
    const taskId = await autonomousTask("Nightly from the detail");
    const page = await signedInPage();
    await page.goto(`${platform.workplaceUrl}w/default/tasks/${taskId}`);
    const questions = page.locator("section.questions");
    await questions.getByRole("button", { name: "Table" }).waitFor();
    await h.screenshot(page, "questions-task-detail-asking");
    await questions.getByRole("button", { name: "Table" }).click();
    await questions.getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
    await page.locator('article.task-detail[data-task-state="completed"]').waitFor({ timeout: 20_000 });
    assert.equal(await page.locator("section.questions").count(), 0, "no question left");
    await h.screenshot(page, "questions-task-detail");
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });

  it("lists every open question oldest first in the inbox and answers them in place, at 375 px too", async () => {
    const older = await autonomousTask("Nightly from the inbox");
    const page = await signedInPage({ width: 375, height: 800 });
    await askReport(page, "Inbox sales");
    await page.getByRole("link", { name: /^Needs you/ }).first().click();
    await page.waitForURL(/\/w\/default\/inbox/);
    const inbox = page.locator("section.inbox");
    const cards = inbox.locator(".question-card");
    await cards.nth(1).waitFor({ timeout: 20_000 });
    const sources = await inbox.locator(".question-source").allTextContents();
    assert.equal(sources.length, 2, sources.join(" | "));
    assert.match(sources[0], /Nightly from the inbox.*autonomous Task/, "oldest first");
    assert.match(sources[1], /conversation/);
    await h.screenshot(page, "questions-inbox-375");

    const task = inbox.locator(".question-card", { has: page.getByRole("link", { name: "Nightly from the inbox" }) });
    await task.getByRole("button", { name: "Table" }).click();
    await task.getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
    const report = inbox.locator(".question-card", { hasText: "· conversation ·" });
    await report.getByRole("button", { name: "Table" }).click();
    await report.getByRole("button", { name: "Yes" }).click({ timeout: 20_000 });
    await inbox.locator('[data-state="empty"]').waitFor({ timeout: 20_000 });
    const done = await h.api(platform.apiUrl, session, "GET", `/api/workspaces/default/tasks/${older}`);
    assert.equal(done.body.state, "completed");
    assert.deepEqual(page.errors, []);
    await page.context().close();
  });
});
