// The operations Console on the server's port, in a real browser against the real binary: the
// Tasks page (paginated, links to the Workplace, no Task when the Work API is down), the cleanup
// with failing deletes, Entry dependencies, a FlowRun's live stream and graph, the settings pages.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;
const ws = "/api/workspaces/default";
let guided; // an open guided-request: its conversation, question and resume token

const call = (method, p, body, headers) => h.api(platform.apiUrl, session, method, p, body, headers);

async function open(entry, input) {
  const r = await call("POST", `${ws}/entries/${entry}/interactions?waitSeconds=10`, { input });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body;
}

async function answer(x, body) {
  const r = await call("POST", `${ws}/interactions/${x.interaction.id}/pending-actions/${x.action.pendingAction.id}/responses?waitSeconds=10`, { resumeToken: x.resumeToken, ...body });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

before(async () => {
  platform = await h.startPlatform({ name: "console-suite" });
  session = await h.bootstrap(platform.apiUrl);
  browser = await h.launchBrowser();
  await h.waitFor(async () => (await call("GET", "/api/dashboards/home/view")).body?.entries?.every((e) => e.entry), { timeout: 60_000, message: "the demo Entries" });
  // A completed Task, a technical run (quick-answer has no Task), and 21 guided-requests waiting.
  const report = await open("prepare-report", { request: "Quarterly sales" });
  await answer(await answer(report, { value: "table" }), { confirmed: true });
  await open("quick-answer", { question: "What is a run?" });
  for (let i = 0; i < 21; i++) guided = await open("guided-request", { request: `Request ${i}` });
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

async function consolePage(path, opts) {
  const page = await h.newPage(browser, opts);
  await h.signIn(page, session);
  await page.goto(`${platform.apiUrl}${path}`);
  return page;
}

describe("the Console", () => {
  it("sends an anonymous browser to sign in first, and back", async () => {
    const page = await h.newPage(browser);
    await page.goto(`${platform.apiUrl}/tasks`);
    await page.waitForURL(/\/login\?returnUrl=%2Ftasks/);
    await page.fill("#username", h.admin.username);
    await page.fill("#password", h.admin.password);
    await page.getByRole("button", { name: /sign in/i }).click();
    await page.waitForURL(`${platform.apiUrl}/tasks`);
    await page.getByRole("heading", { name: "Tasks" }).waitFor();
    await page.context().close();
  });

  it("/tasks pages through the real Tasks and links each to the Workplace (rule 19)", async () => {
    const page = await consolePage("/tasks");
    const rows = page.locator("table[aria-label=Tasks] tbody tr");
    await rows.first().waitFor();
    assert.equal(await rows.count(), 20, "a page holds 20 Tasks");
    const all = (await call("GET", `${ws}/tasks?take=100`)).body.items;
    assert.equal(all.length, 22);
    const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.taskId));
    assert.deepEqual(shown, all.slice(0, 20).map((t) => t.id), "the newest Tasks first, exactly the API's");
    await h.screenshot(page, "console-tasks-1280");
    assert.deepEqual(await h.axeViolations(page), []);

    await page.getByRole("button", { name: "Older" }).click();
    await h.waitFor(async () => (await rows.count()) === 2, { message: "the second page" });
    assert.deepEqual(await rows.evaluateAll((trs) => trs.map((tr) => tr.dataset.taskId)), all.slice(20).map((t) => t.id));
    const link = rows.first().getByRole("link").first();
    const href = await link.getAttribute("href");
    assert.ok(href.startsWith(`${platform.workplaceUrl}w/default/tasks/`), href);
    await link.click();
    await page.waitForURL((u) => u.toString().startsWith(platform.workplaceUrl));
    await page.getByRole("heading", { level: 1 }).waitFor();
    await page.context().close();
  });

  it("/tasks shows a new Task live (rule 19)", async (t) => {
    if (!(await h.hubAvailable(platform.apiUrl, session))) {
      t.skip("the server has no real-time hub yet");
      return;
    }
    const page = await consolePage("/tasks");
    await page.locator(".live-connected").waitFor();
    const first = await page.locator("table[aria-label=Tasks] tbody tr").first().getAttribute("data-task-id");
    const x = await open("guided-request", { request: "Live one" });
    await h.waitFor(async () => (await page.locator("table[aria-label=Tasks] tbody tr").first().getAttribute("data-task-id")) === x.task.id, { message: "the new Task on top" });
    assert.notEqual(first, x.task.id);
    await page.context().close();
  });

  it("shows an Entry's binding beside the Flow it resolves to (rule 21)", async () => {
    const page = await consolePage("/entries");
    await page.getByRole("link", { name: "Quick answer" }).click();
    const deps = page.getByRole("definition");
    await page.getByText("Agent quick-answer-builtin").waitFor();
    await page.getByText(/direct-quick-answer-builtin 1\.0\.0 \(system-managed Direct Agent Flow\)/).waitFor();
    assert.ok((await deps.allInnerTexts()).includes("home"));
    assert.deepEqual(await h.axeViolations(page), []);
    await page.context().close();
  });

  it("draws a FlowRun's graph with its current step and follows its event stream live", async () => {
    const runs = (await call("GET", "/api/flowRuns?state=ActionRequired&take=100")).body.items;
    const run = runs.find((r) => r.correlation?.interactionId === guided.interaction.id);
    const page = await consolePage(`/runs/${run.id}`);
    await page.locator('g.node.current[data-step="agent"]').waitFor();
    await page.locator('[data-event="PendingActionCreated"]').waitFor();
    await h.screenshot(page, "console-run-1280");
    assert.deepEqual(await h.axeViolations(page), []);
    await answer(guided, { value: "concise" });
    await page.locator('[data-event="RunCompleted"]').waitFor({ timeout: 20_000 });
    await page.locator('[data-run-state="Completed"]').waitFor();
    assert.equal(await page.locator("g.node.current").count(), 0, "no current step once the run ended");
    await page.context().close();
  });

  it("cleans up in the order Runs, Entries, Flows, Agents, keeps the failed selections and reports partial completion (rule 20)", async () => {
    const page = await consolePage("/cleanup");
    const completed = (await call("GET", `${ws}/tasks?state=completed`)).body.items;
    const task = completed.find((t) => t.title.startsWith("Prepare the report: "));
    const deletes = [];
    page.on("request", (r) => r.method() === "DELETE" && deletes.push(new URL(r.url()).pathname));

    await page.getByRole("checkbox", { name: `Select Task ${task.title}`, exact: true }).check();
    await page.getByRole("checkbox", { name: /^Select run of direct-quick-answer-builtin/ }).first().check();
    await page.getByRole("checkbox", { name: "Select Entry guided-request", exact: true }).check();
    await page.getByRole("checkbox", { name: "Select Agent report-writer-builtin", exact: true }).check();
    await page.getByRole("button", { name: "Delete 4 selected" }).click();
    const report = page.locator("section.report");
    await report.locator('[data-state="partial"]').waitFor({ timeout: 20_000 });
    assert.match(await report.innerText(), /deleted 2 of 4; 2 failed/);
    assert.deepEqual(
      deletes.map((p) => p.split("/").slice(0, -1).join("/")),
      [`${ws}/tasks`, "/api/flowRuns", "/api/entries", "/api/agents"],
      "the deletes run in the order Runs, Entries, Flows, Agents",
    );
    assert.equal(await report.locator('[data-outcome="failed"]').count(), 2);
    await h.screenshot(page, "console-cleanup-partial-1280");
    // The failed selections stay; what was deleted is gone from the lists and from the API.
    assert.equal(await page.getByRole("checkbox", { name: "Select Entry guided-request", exact: true }).isChecked(), true);
    assert.equal(await page.getByRole("checkbox", { name: "Select Agent report-writer-builtin", exact: true }).isChecked(), true);
    assert.equal(await page.getByRole("checkbox", { name: `Select Task ${task.title}`, exact: true }).count(), 0);
    assert.equal((await call("GET", `${ws}/tasks/${task.id}`)).status, 404);

    // With the Entry options, the Entry goes too; the Agent stays protected by the published Entry
    // that still refers to it.
    await page.getByRole("checkbox", { name: "Also remove them from the Dashboards that show them" }).check();
    await page.getByRole("checkbox", { name: "Also close their open conversations" }).check();
    await page.getByRole("button", { name: "Delete 2 selected" }).click();
    await h.waitFor(async () => /deleted 1 of 2; 1 failed/.test(await report.innerText()), { message: "the second report" });
    assert.equal((await call("GET", "/api/entries/guided-request")).status, 404);
    const view = (await call("GET", "/api/dashboards/home/view")).body;
    assert.ok(!view.entries.some((e) => e.name === "guided-request"), "removed from the home Dashboard");
    const closed = (await call("GET", `${ws}/interactions/${guided.interaction.id}`)).body;
    assert.ok(closed.interaction.state !== "Active", "its open conversations were closed");
    assert.equal(await page.getByRole("checkbox", { name: "Select Agent report-writer-builtin", exact: true }).isChecked(), true);
    assert.deepEqual(await h.axeViolations(page), []);
    await page.context().close();
  });

  it("removes a system-managed Direct Agent Flow only with the system-Flow option and only once no published Entry uses it (rules 20, 21)", async () => {
    // The cleanup above deleted guided-request: its Direct Agent Flow is left with no published Entry.
    const flows = (await call("GET", "/api/flows")).body.items.filter((f) => f.systemManaged).map((f) => f.metadata.name);
    const orphan = flows.find((n) => n.includes("guided"));
    const used = "direct-quick-answer-builtin";
    assert.ok(orphan && flows.includes(used), JSON.stringify(flows));
    const page = await consolePage("/cleanup");
    const box = (name) => page.getByRole("checkbox", { name: `Select Flow ${name}`, exact: true });
    assert.equal(await box(orphan).isDisabled(), true, "without the option a system-managed Flow cannot be selected");
    await page.getByRole("checkbox", { name: /Also remove system-managed Direct Agent Flows/ }).check();
    await box(orphan).check();
    await box(used).check();
    await page.getByRole("button", { name: "Delete 2 selected" }).click();
    const report = page.locator("section.report");
    await h.waitFor(async () => /deleted 1 of 2; 1 failed/.test(await report.innerText()), { message: "the system-Flow report" });
    assert.match(await report.innerText(), /still used: published entry "quick-answer"/);
    await h.screenshot(page, "console-cleanup-system-flows-1280");
    assert.equal((await call("GET", `/api/flows/${orphan}`)).status, 404, "the unused system-managed Flow is gone");
    assert.equal((await call("GET", `/api/flows/${used}`)).status, 200, "the one a published Entry uses stays");
    assert.equal(await box(used).isChecked(), true, "the failed selection stays");
    await page.context().close();
  });

  it("serves the settings pages to the administrator", async () => {
    const pages = [
      ["/settings/profile", "Profile"],
      ["/settings/organization/workspaces", "Workspaces"],
      ["/settings/organization/members", "Members"],
      ["/settings/organization/access", "Access"],
      ["/settings/organization/security-audit", "Security audit"],
    ];
    const page = await consolePage("/settings/profile");
    for (const [path, heading] of pages) {
      await page.goto(`${platform.apiUrl}${path}`);
      await page.getByRole("heading", { name: heading, level: 1 }).waitFor();
      assert.deepEqual(await h.axeViolations(page), [], path);
      await h.screenshot(page, `console${path.replaceAll("/", "-")}-1280`);
    }
    // An account made on the Access page is a member, with its own page.
    await page.goto(`${platform.apiUrl}/settings/organization/access`);
    await page.getByLabel("Username").fill("grace");
    await page.getByLabel("Display name").fill("Grace Hopper");
    await page.getByLabel("Initial password").fill("Another-good-pass-2");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByText("Account grace created").waitFor();
    await page.goto(`${platform.apiUrl}/settings/organization/members`);
    await page.getByRole("link", { name: "Grace Hopper" }).click();
    await page.waitForURL(/\/settings\/organization\/members\/[0-9a-f]+$/);
    await page.getByRole("heading", { name: "Grace Hopper" }).waitFor();
    await page.getByRole("combobox", { name: "Role in default" }).selectOption("Viewer");
    await page.getByText("Role set to Viewer.").waitFor();
    await page.goto(`${platform.apiUrl}/settings/organization/security-audit`);
    await page.getByText("local-account.created").first().waitFor();
    await page.context().close();
  });

  it("/tasks shows no Task at all once the Work API is down (rule 19)", async () => {
    const page = await consolePage("/tasks");
    await page.locator("table[aria-label=Tasks] tbody tr").first().waitFor();
    await platform.stop();
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.locator('[data-state="api-unavailable"]').waitFor();
    assert.equal(await page.locator("table[aria-label=Tasks]").count(), 0, "no stale or invented Task is shown");
    await h.screenshot(page, "console-tasks-unavailable-1280");
    await page.context().close();
  });
});
