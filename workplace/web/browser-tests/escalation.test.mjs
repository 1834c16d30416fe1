// An escalated question in a real browser against the real binary: once nobody answered in time,
// a Member who asked sees it read-only, in plain words, from the inbox and from its notification
// (news now, no longer a question to answer), with no answer control that would only be refused;
// a workspace Admin answers it where it is shown, marked escalated; the Member's page follows live
// and after a reload. A Viewer, who answers nothing, reads whom the work waits for.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;
const call = (method, p, body) => h.api(platform.apiUrl, session, method, p, body);

// The question escalates after this long and then waits as long again for the Owners and Admins:
// long enough for a loaded machine to check every view before it fails the run.
const wait = 20;

before(async () => {
  platform = await h.startPlatform({ name: "escalation-suite" });
  browser = await h.launchBrowser();
  session = await h.bootstrap(platform.apiUrl);
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

/** account creates a local account with role in the default workspace and returns its session. */
async function account(username, displayName, role) {
  const ws = await call("GET", "/api/identity/context");
  const created = await call("POST", "/api/identity/accounts/", { username, password: "Correct-horse-battery-2", displayName, role, workspace: ws.body.workspace.id });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const login = await fetch(`${platform.apiUrl}/api/auth/local/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ username, password: "Correct-horse-battery-2" }),
  });
  assert.ok(login.ok, `login: ${login.status}`);
  return login.headers.getSetCookie().find((c) => c.startsWith("platform-session=")).split(";")[0].split("=")[1];
}

async function pageOf(cookie, opts) {
  const page = await h.newPage(browser, opts);
  await h.signIn(page, cookie);
  return page;
}

/** What a person reads holds no raw JSON, id or code. */
async function plainWords(locator, what) {
  const text = await locator.innerText();
  assert.doesNotMatch(text, /EscalatedToAdministrators|NotPermitted|[{}]|\b[0-9a-f]{16,}\b/, `${what}: ${text}`);
}

/** publishEscalatingEntry publishes an Entry whose Flow asks one question, suspend, and is done once it is answered. */
async function publishEscalatingEntry(name, displayName, suspend) {
  for (const [p, body] of [
    [
      "/api/flows",
      {
        name,
        kind: "Orchestration",
        definition: {
          steps: [
            { name: "in", type: "Input" },
            { name: "out", type: "Output", message: "Done", suspend },
          ],
          edges: [{ from: "in", to: "out" }],
        },
      },
    ],
    [`/api/flows/${name}/versions`, { version: "1.0.0", activate: true }],
    [
      "/api/entries",
      {
        apiVersion: "platform/v1",
        kind: "Entry",
        metadata: { name },
        definition: { displayName, task: { display: "Visible" }, fields: [{ name: "request", type: "Text", role: "PrimaryInput", label: "What for?" }], binding: { flow: { name } } },
      },
    ],
  ]) {
    const r = await call("POST", p, body);
    assert.equal(r.status, 201, `${p}: ${JSON.stringify(r.body)}`);
  }
  await h.waitFor(async () => (await call("POST", `/api/entries/${name}/publish`)).status < 300, { timeout: 30_000, message: "the Entry to publish" });
}

describe("escalated questions", () => {
  it("a Member sees an escalated question read-only from the inbox and its notification; an Admin answers it; the Member's page follows", async () => {
    await publishEscalatingEntry("escalating", "A question that escalates", {
      kind: "Choice",
      prompt: "Which level of detail?",
      choices: [{ value: "brief" }, { value: "detailed" }],
      expiry: { expiresAfter: `${wait}s`, onExpiry: "Escalate" },
    });
    const dash = await call("POST", "/api/dashboards", { apiVersion: "platform/v1", kind: "Dashboard", metadata: { name: "escalation-desk" }, definition: { displayName: "Escalation desk", entries: [{ name: "escalating", role: "Primary" }] } });
    assert.equal(dash.status, 201, JSON.stringify(dash.body));
    const mia = await account("mia", "Mia Member", "Member");
    const olga = await account("olga", "Olga Admin", "Admin");
    const vic = await account("vic", "Vic Viewer", "Viewer");

    // Mia asks; the question is hers to answer until it expires.
    const member = await pageOf(mia);
    await member.goto(`${platform.workplaceUrl}w/default/d/escalation-desk`);
    const primary = member.locator("article.entry.primary");
    const conversation = member.locator("section.conversation");
    await h.waitFor(
      async () => {
        if (await conversation.count()) return true;
        if (!(await primary.count())) return false;
        await primary.getByRole("textbox").fill("The weekly digest");
        await primary.getByRole("button", { name: "Send" }).click();
        await conversation.waitFor({ timeout: 3_000 }).catch(() => undefined);
        return (await conversation.count()) > 0;
      },
      { timeout: 30_000, message: "the Dashboard to open a conversation" },
    );
    await conversation.getByRole("button", { name: "brief" }).waitFor({ timeout: 20_000 });
    const conversationUrl = member.url();

    // Vic, a Viewer, follows the same conversation before it escalates: the work waits for
    // someone who may answer, not for an administrator, and not for Vic.
    const viewer = await pageOf(vic);
    await viewer.goto(conversationUrl);
    const followed = viewer.locator("section.conversation");
    await followed.locator('[data-state="read-only-question"]').waitFor({ timeout: 10_000 });
    const why = followed.locator(".composer-why");
    await h.waitFor(async () => /waits for someone in this workspace who may answer the question above/.test(await why.innerText()), {
      timeout: 5_000,
      message: "the Viewer's composer to say whom the work waits for",
    });
    assert.doesNotMatch(await why.innerText(), /administrator/, "the question is not escalated yet");
    await followed.locator(".task-ref .progress").getByText("Waiting for someone in this workspace who may answer").waitFor({ timeout: 5_000 });
    assert.equal(await followed.getByRole("button", { name: "brief" }).count(), 0, "no answer a Viewer would be refused");
    await plainWords(followed, "the Viewer's conversation");
    await h.screenshot(viewer, "escalation-viewer-conversation-1280");

    // Nobody answers in time: the open page turns read-only by itself (live).
    const readOnly = conversation.locator('[data-state="read-only-question"]');
    await readOnly.waitFor({ timeout: (wait + 10) * 1000 });
    assert.match(await readOnly.innerText(), /Nobody answered in time; it now waits for an administrator of this workspace/);
    assert.equal(await conversation.getByRole("button", { name: "brief" }).count(), 0, "no answer the server would refuse");
    assert.match(await member.locator(".composer-why").innerText(), /waits for an administrator/);
    await conversation.locator(".task-ref").getByText("Waiting for an administrator", { exact: true }).waitFor();
    await plainWords(conversation, "the conversation");
    await h.screenshot(member, "escalation-member-conversation-1280");
    // Vic's open page follows: now it waits for an administrator.
    await h.waitFor(async () => /waits for an administrator of this workspace/.test(await why.innerText()), {
      timeout: 10_000,
      message: "the Viewer's composer to say the question went to an administrator",
    });
    await plainWords(followed, "the Viewer's conversation");
    await viewer.context().close();

    // From the inbox: the same question, read-only.
    const phone = await pageOf(mia, { width: 375, height: 800 });
    await phone.goto(`${platform.workplaceUrl}w/default/inbox`);
    const card = phone.locator("section.inbox .question-card", { hasText: "Which level of detail?" });
    await card.locator('[data-state="read-only-question"]').waitFor({ timeout: 10_000 });
    assert.equal(await card.getByRole("button").count(), 0, "no button on the Member's card");
    await plainWords(card, "the inbox card");
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `no horizontal scrolling at 375 px (${width})`);
    await h.screenshot(phone, "escalation-member-inbox-375");

    // From its notification: it says so, and leads to the read-only conversation.
    await phone.goto(`${platform.workplaceUrl}w/default/d/escalation-desk`);
    await phone.getByRole("button", { name: /^Notifications/ }).click();
    const note = phone
      .locator('[data-panel="notifications"] li[data-notification-kind="question"][data-escalated="read-only"]', {
        hasText: "Nobody answered in time, so the question went to the workspace's administrators",
      })
      .first();
    await note.waitFor({ timeout: 10_000 });
    assert.doesNotMatch((await note.getAttribute("class")) ?? "", /attention/, "news, not something to act on");
    await plainWords(note, "the notification");
    await note.getByRole("link").click();
    const there = phone.locator("section.conversation");
    await there.locator('[data-state="read-only-question"]').waitFor({ timeout: 10_000 });
    assert.equal(await there.getByRole("button", { name: "brief" }).count(), 0);
    await h.screenshot(phone, "escalation-member-from-notification-375");

    // Olga, an Admin, answers it in her inbox, where it is marked escalated.
    const admin = await pageOf(olga);
    await admin.goto(`${platform.workplaceUrl}w/default/inbox`);
    const hers = admin.locator("section.inbox .question-card", { hasText: "Which level of detail?" });
    await hers.locator('[data-escalated="answerable"]').waitFor({ timeout: 10_000 });
    assert.equal(await hers.locator('[data-state="read-only-question"]').count(), 0);
    await h.screenshot(admin, "escalation-admin-inbox-1280");
    // The Console's Tasks say the same to an operator: escalated, and to whom.
    const console = await pageOf(olga);
    await console.goto(`${platform.apiUrl}/tasks`);
    const row = console.locator("tr", { hasText: "Which level of detail?" });
    await row.locator('[data-escalated="answerable"]').waitFor({ timeout: 10_000 });
    assert.match(await row.innerText(), /now waiting for the workspace's Owners and Admins/);
    await h.screenshot(console, "escalation-console-tasks-1280");
    await console.context().close();
    await hers.getByRole("button", { name: "detailed" }).click();
    await admin.locator("section.inbox").locator('[data-state="empty"]').waitFor({ timeout: 20_000 });

    // Mia's open page follows live, and so does a reload.
    await conversation.locator(".task-ref").getByText("Completed").waitFor({ timeout: 10_000 });
    assert.equal(await conversation.locator('[data-state="read-only-question"]').count(), 0);
    await member.goto(conversationUrl);
    await member.locator("section.conversation .task-ref").getByText("Completed").waitFor({ timeout: 10_000 });
    assert.equal(await member.locator('[data-state="read-only-question"]').count(), 0);
    await h.screenshot(member, "escalation-member-answered-1280");
    assert.deepEqual([...member.errors, ...phone.errors, ...admin.errors], []);
    for (const p of [member, phone, admin]) await p.context().close();
  });

  it("when a question escalates, a Member's open pages turn read-only and the Member's count drops, and an Admin's notification count rises, all without a reload", async () => {
    // Asked at once, reminded after 6 s, escalated after 12 s (the pages are open by then), and
    // failed 12 s later unless an Admin answers.
    const soon = 12;
    await publishEscalatingEntry("escalating-soon", "A question that escalates soon", {
      kind: "Choice",
      prompt: "Which region first?",
      choices: [{ value: "north" }, { value: "south" }],
      expiry: { expiresAfter: `${soon}s`, remindBefore: `${soon / 2}s`, onExpiry: "Escalate" },
    });
    const max = await account("max", "Max Member", "Member");
    const ada = await account("ada", "Ada Admin", "Admin");

    // Every page starts on the Dashboard's home, whose header counts "Needs you".
    const member = await pageOf(max);
    const admin = await pageOf(ada);
    const phone = await pageOf(max, { width: 375, height: 800 });
    const needsYou = async (page) => Number((await page.locator(".inbox-link .badge").textContent({ timeout: 500 }).catch(() => "0")) || 0);
    const unread = async (page) => Number((await page.locator('[data-panel="notifications"] #notes-h .badge').textContent({ timeout: 500 }).catch(() => "0")) || 0);
    await member.goto(`${platform.workplaceUrl}w/default/inbox`);
    await admin.goto(`${platform.workplaceUrl}w/default/inbox`);
    for (const p of [member, admin]) await p.locator("section.inbox").waitFor();
    await h.waitFor(async () => (await member.locator('[data-live]').getAttribute("data-live")) === "connected" && (await admin.locator('[data-live]').getAttribute("data-live")) === "connected", {
      message: "both pages to be live",
    });
    const adminUnreadBefore = await unread(admin);
    const memberUnreadBefore = await unread(member);

    // Max asks (as his own page would, over the API); the question is his to answer.
    const opened = await fetch(`${platform.apiUrl}/api/workspaces/default/entries/escalating-soon/interactions?waitSeconds=5`, {
      method: "POST",
      headers: { Cookie: `platform-session=${max}`, "Content-Type": "application/json" },
      body: JSON.stringify({ input: { request: "The regional plan" } }),
    }).then((r) => r.json());
    const taskId = opened.task?.id;
    assert.ok(taskId, `the question's Task: ${JSON.stringify(opened).slice(0, 300)}`);
    const card = member.locator("section.inbox .question-card", { hasText: "Which region first?" });
    await card.getByRole("button", { name: "north" }).waitFor({ timeout: 5_000 });
    assert.equal(await card.locator("xpath=ancestor::ol[1]").getAttribute("data-list"), "may-answer");
    await phone.goto(`${platform.workplaceUrl}w/default/tasks/${taskId}`);
    const taskCard = phone.locator(".task-detail .question-card", { hasText: "Which region first?" });
    await taskCard.getByRole("button", { name: "north" }).waitFor({ timeout: 5_000 });
    const memberCount = await needsYou(member);
    assert.ok(memberCount >= 1, `the question counts for its Member: ${memberCount}`);
    assert.equal(await needsYou(admin), memberCount, "an Admin counts the same open questions");
    for (const p of [member, phone, admin]) await p.evaluate(() => (window.__sameDocument = true));

    // The reminder reaches Max before the expiry, live.
    await h.waitFor(async () => (await unread(member)) === memberUnreadBefore + 2, { timeout: (soon / 2 + 5) * 1000, message: "the question and its reminder to raise Max's unread count" });
    await member.locator('[data-panel="notifications"] li[data-notification-kind="question"]', { hasText: "Reminder:" }).first().waitFor();

    // Nobody answers in time: Max's open inbox form turns read-only under its own heading, his
    // count drops, his Task page and notifications follow; Ada is told, and still counts it.
    const waiting = member.locator('section.inbox [data-list="escalated"] .question-card', { hasText: "Which region first?" });
    await waiting.locator('[data-state="read-only-question"]').waitFor({ timeout: (soon + 5) * 1000 });
    assert.equal(await waiting.getByRole("button").count(), 0, "no answer the server would refuse");
    assert.equal(await member.locator('section.inbox [data-list="may-answer"] .question-card', { hasText: "Which region first?" }).count(), 0);
    assert.match(await member.locator("#inbox-escalated-h").innerText(), /Waiting for an administrator/);
    await h.waitFor(async () => (await needsYou(member)) === memberCount - 1, { timeout: 5_000, message: "Max's count to drop" });
    // His notifications of the question turn to news, live: no longer asking him, the news
    // counted once (the question's own notification stays unread, its reminder is read).
    const notes = member.locator('[data-panel="notifications"] li[data-notification-kind="question"]');
    const news = notes.filter({ hasText: "Nobody answered in time, so the question went to the workspace's administrators" });
    await news.first().waitFor({ timeout: 5_000 });
    const newsLooks = async (page, what) => {
      const own = page.locator('[data-panel="notifications"] li[data-notification-kind="question"]');
      await h.waitFor(async () => (await own.filter({ hasText: "Nobody answered in time" }).count()) === 2, { timeout: 5_000, message: `${what}: the question and its reminder to be news` });
      assert.equal(await own.filter({ hasText: "A question is waiting" }).count(), 0, `${what}: nothing asks him to answer`);
      assert.equal(await page.locator('[data-panel="notifications"] li.attention').count(), 0, `${what}: nothing styled as needing him`);
      assert.equal(await page.locator('[data-panel="notifications"] li.unread[data-notification-kind="question"]').count(), 1, `${what}: one piece of news unread`);
      await plainWords(page.locator('[data-panel="notifications"]'), `${what}: the notifications`);
    };
    await newsLooks(member, "live");
    await h.waitFor(async () => (await unread(member)) === memberUnreadBefore + 1, { timeout: 5_000, message: "Max's unread count to count the news once" });
    await member.locator('[data-panel="conversations"] li', { hasText: "The regional plan" }).getByText("Waiting for an administrator").waitFor({ timeout: 5_000 });
    await plainWords(member.locator("section.inbox"), "the Member's inbox");
    await h.screenshot(member, "escalation-live-member-inbox-1280");
    await taskCard.locator('[data-state="read-only-question"]').waitFor({ timeout: 5_000 });
    assert.equal(await taskCard.getByRole("button").count(), 0);
    await plainWords(phone.locator(".task-detail"), "the Member's Task");
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `no horizontal scrolling at 375 px (${width})`);
    await h.screenshot(phone, "escalation-live-member-task-375");

    await h.waitFor(async () => (await unread(admin)) === adminUnreadBefore + 1, { timeout: 5_000, message: "Ada's unread count to rise" });
    const told = admin.locator('[data-panel="notifications"] li[data-notification-kind="question"][data-escalated="answerable"]', { hasText: "Escalated:" }).first();
    await told.waitFor({ timeout: 5_000 });
    assert.match((await told.getAttribute("class")) ?? "", /attention/, "the Admin's notification still asks for an answer");
    await plainWords(told, "the Admin's notification");
    assert.equal(await needsYou(admin), memberCount, "the escalated question still needs an Admin");
    const hers = admin.locator('section.inbox [data-list="may-answer"] .question-card', { hasText: "Which region first?" });
    await hers.locator('[data-escalated="answerable"]').waitFor({ timeout: 5_000 });
    await h.screenshot(admin, "escalation-live-admin-inbox-1280");

    for (const p of [member, phone, admin]) assert.equal(await p.evaluate(() => window.__sameDocument), true, "no reload");
    // A reload, and his second tab, read the same.
    await member.reload();
    await member.locator("section.inbox").waitFor();
    await newsLooks(member, "after a reload");
    assert.equal(await unread(member), memberUnreadBefore + 1);
    await h.screenshot(member, "escalation-member-news-reloaded-1280");
    await phone.locator(".bottom-nav").getByRole("button", { name: `Notifications (${memberUnreadBefore + 1})` }).waitFor({ timeout: 5_000 });
    assert.deepEqual([...member.errors, ...phone.errors, ...admin.errors], []);
    // Ada answers: the run ends instead of failing at the second expiry.
    await hers.getByRole("button", { name: "north" }).click();
    await member.locator('section.inbox [data-list="escalated"]').waitFor({ state: "detached", timeout: 10_000 });
    // The news leaves Max's count once, with the question.
    await h.waitFor(async () => (await member.locator('[data-panel="notifications"] li.unread[data-notification-kind="question"]').count()) === 0, {
      timeout: 10_000,
      message: "the news to be read once answered",
    });
    for (const p of [member, phone, admin]) await p.context().close();
  });
  it("a Viewer follows the work and is offered nothing it would be refused: no Start, no Pause or Cancel, no composer", async () => {
    await publishEscalatingEntry("follow-done", "Done at once");
    await publishEscalatingEntry("follow-asks", "Asks and waits", { kind: "Choice", prompt: "Which one?", choices: [{ value: "this" }, { value: "that" }] });
    const dash = await call("POST", "/api/dashboards", {
      apiVersion: "platform/v1",
      kind: "Dashboard",
      metadata: { name: "follow-desk" },
      definition: { displayName: "Follow desk", entries: [{ name: "follow-done", role: "Primary" }, { name: "follow-asks", role: "Standard" }] },
    });
    assert.equal(dash.status, 201, JSON.stringify(dash.body));
    const open = async (entry) => {
      const r = await call("POST", `/api/workspaces/default/entries/${entry}/interactions?waitSeconds=10`, { input: { request: "The weekly digest" } });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      return r.body;
    };
    const done = await open("follow-done");
    const asks = await open("follow-asks");
    assert.ok(asks.task?.id, JSON.stringify(asks));
    const val = await account("val", "Val Viewer", "Viewer");

    const page = await pageOf(val, { width: 375, height: 800 });
    await page.goto(`${platform.workplaceUrl}w/default/d/follow-desk`);
    await page.locator("article.entry").first().waitFor({ timeout: 15_000 });
    assert.match(await page.locator('[data-state="read-only"]').innerText(), /lets you follow its work, not start it/);
    assert.equal(await page.getByRole("button", { name: /^Start / }).count(), 0, "no Start a Viewer would be refused");
    assert.equal(await page.locator("article.entry textarea, article.entry input").count(), 0, "no Entry form, not even the primary Entry's");
    await h.screenshot(page, "viewer-dashboard-375");

    // A finished conversation a Member could follow up: the Viewer may read it, not send.
    await page.goto(`${platform.workplaceUrl}w/default/d/follow-desk?c=${done.interaction.id}`);
    const conversation = page.locator("section.conversation");
    await conversation.waitFor({ timeout: 15_000 });
    await h.waitFor(async () => /follow this conversation, not send to it/.test(await page.locator(".composer-why").innerText().catch(() => "")), {
      timeout: 10_000,
      message: "the Viewer's composer to say the Viewer may follow, not send",
    });
    assert.ok(await page.locator("form.composer textarea").isDisabled(), "the composer does not take a message");
    await plainWords(conversation, "the Viewer's conversation");
    await h.screenshot(page, "viewer-conversation-375");

    // A Task waiting on its question: the Viewer follows it; Pause and Cancel are not offered.
    await page.goto(`${platform.workplaceUrl}w/default/tasks/${asks.task.id}`);
    await page.getByRole("heading", { level: 1 }).first().waitFor({ timeout: 15_000 });
    await page.locator(".progress, .questions").first().waitFor({ timeout: 15_000 });
    for (const name of ["Pause", "Resume", "Cancel Task"]) {
      assert.equal(await page.getByRole("button", { name, exact: true }).count(), 0, `no ${name} a Viewer would be refused`);
    }
    await h.screenshot(page, "viewer-task-375");
    await page.context().close();
  });
});
