// The offline demo in a real browser against the real binary, as a newcomer meets it: each demo
// Entry ends with a closing answer in its conversation and, where a Task exists, a readable Result
// in the Task detail (no provider name, no digest, no raw JSON); two reports on two subjects read
// apart. Screenshots at 1280 and 375 px.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;

before(async () => {
  platform = await h.startPlatform({ name: "demo-suite" });
  browser = await h.launchBrowser();
  session = await h.bootstrap(platform.apiUrl);
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

/** What a person must never read in an answer or a Result. */
function assertReadable(text, what) {
  assert.ok(!/Deterministic/.test(text), `${what} names no provider: ${text}`);
  assert.ok(!/\b[0-9a-f]{12}\b/.test(text), `${what} shows no digest: ${text}`);
  assert.ok(!text.includes('{"'), `${what} shows no JSON: ${text}`);
}

/** start opens an Entry from the home Dashboard with its primary input and waits for the conversation. */
async function start(page, entry, field, request, width) {
  await page.goto(platform.workplaceUrl);
  await page.waitForURL(/\/w\/default\/d\/home/);
  await page.getByRole("heading", { name: "Prepare a report" }).first().waitFor();
  // The Primary Entry shows its form; the others open it with their Start button.
  const card = page.locator(`article.entry[aria-label="${entry}"]`);
  if (!(await card.getByRole("textbox", { name: field }).isVisible())) await page.getByRole("button", { name: `Start ${entry}` }).click();
  const form = card;
  await form.getByRole("textbox", { name: field }).fill(request);
  return form;
}

/** closing waits for the conversation's closing answer and returns its text. */
async function closing(conversation) {
  const reply = conversation.locator(".message.kind-reply").last();
  await reply.waitFor({ timeout: 20_000 });
  const text = await reply.innerText();
  assertReadable(text, "the closing answer");
  return text;
}

/** taskResult opens the conversation's Task and returns the text of its Result. */
async function taskResult(page, conversation, shot) {
  await conversation.locator(".task-ref").getByText("Completed").waitFor({ timeout: 20_000 });
  await conversation.getByRole("link", { name: "Task details" }).click();
  const title = await page.locator("#task-title").innerText();
  const result = page.locator("section[aria-labelledby=results-h] .result").first();
  await result.waitFor();
  const text = await result.innerText();
  assertReadable(text, "the Result");
  assertReadable(await page.locator("main").innerText(), "the Task detail");
  await h.screenshot(page, shot);
  return { title, text, result };
}

describe("the offline demo", () => {
  for (const { format, detail, expect: shape } of [
    { format: "Table", detail: "detailed", expect: async (result) => assert.equal(await result.locator("table th").first().innerText(), "Section") },
    { format: "Summary", detail: "brief", expect: async (result) => assert.equal(await result.locator("ol > li").count(), 3) },
  ]) {
    it(`prepare-report as a ${format.toLowerCase()} at the ${detail} level ends with a closing answer and a readable outline in its Task`, async () => {
      for (const width of [1280, 375]) {
        const page = await h.newPage(browser, { width });
        await h.signIn(page, session);
        const subject = `Monthly cloud costs ${format} ${width}`;
        const form = await start(page, "Prepare a report", "What should the report cover?", subject, width);
        await form.getByRole("combobox", { name: "Detail level" }).selectOption(detail);
        await form.getByRole("button", { name: "Send" }).click();
        const conversation = page.locator("section.conversation");
        await conversation.getByRole("button", { name: format }).click();
        await conversation.getByRole("button", { name: "Yes" }).click();
        assert.match(await closing(conversation), /report outline is ready/);
        assert.match(await conversation.locator("h2").first().innerText(), new RegExp(subject), "the conversation keeps its subject");
        await h.screenshot(page, `demo-report-${format.toLowerCase()}-conversation-${width}`);
        const { title, text, result } = await taskResult(page, conversation, `demo-report-${format.toLowerCase()}-task-${width}`);
        assert.equal(title, `Prepare the report: ${subject}`);
        assert.ok(text.includes(subject), text);
        assert.ok(text.includes(`detail level: ${detail}`), text);
        await shape(result);
        assert.deepEqual(page.errors, []);
        await page.context().close();
      }
    });
  }

  it("quick-answer ends with its answer and no Task", async () => {
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    const form = await start(page, "Quick answer", "Your question", "What is a workspace?");
    await form.getByRole("button", { name: "Send" }).click();
    const conversation = page.locator("section.conversation");
    assert.match(await closing(conversation), /What is a workspace\?/);
    assert.equal(await conversation.locator(".task-ref").count(), 0);
    await page.context().close();
  });

  it("guided-request ends with a note in the chosen style in the conversation and its Task", async () => {
    for (const width of [1280, 375]) {
      const page = await h.newPage(browser, { width });
      await h.signIn(page, session);
      const form = await start(page, "Guided request", "What do you need?", "A note to the team about the offsite");
      await form.getByRole("button", { name: "Send" }).click();
      const conversation = page.locator("section.conversation");
      await conversation.getByRole("button", { name: "Formal" }).click();
      const answer = await closing(conversation);
      assert.match(answer, /Dear colleague/);
      assert.match(answer, /A note to the team about the offsite/);
      await h.screenshot(page, `demo-guided-conversation-${width}`);
      const { text } = await taskResult(page, conversation, `demo-guided-task-${width}`);
      assert.match(text, /Kind regards/);
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
  });

  it("two reports on two subjects read apart in Recent conversations and among the Tasks", async () => {
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    await page.goto(platform.workplaceUrl);
    await page.waitForURL(/\/w\/default\/d\/home/);
    const recentSection = page.locator("section[aria-labelledby=recent-h]");
    await recentSection.getByText("Monthly cloud costs Table 1280").first().waitFor();
    const recent = await recentSection.innerText();
    assert.match(recent, /Prepare a report: Monthly cloud costs Table 1280/);
    assert.match(recent, /Prepare a report: Monthly cloud costs Summary 1280/);
    const tasks = await page.locator('[data-panel="tasks"]').innerText();
    assert.match(tasks, /Prepare the report: Monthly cloud costs Table 1280/);
    assert.match(tasks, /Prepare the report: Monthly cloud costs Summary 1280/);
    await h.screenshot(page, "demo-home-1280");
    await page.context().close();
  });
});
