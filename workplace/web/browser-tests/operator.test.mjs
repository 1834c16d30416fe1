// One product: the server's identity pages look like the apps and lead back to them, sign-out is
// one click from either app and comes back to it, and the Console answers an operator's "what
// needs me" (waiting questions, failed runs), draws its own not-found page and offers the
// Fallback Entries when a search finds nothing (rule 23). Desktop and 375 px screenshots.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;

const call = (method, p, body) => h.api(platform.apiUrl, session, method, p, body);

before(async () => {
  platform = await h.startPlatform({ name: "operator-suite" });
  browser = await h.launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

/** styled reads what a person sees of a form: the page's font and whether the field sits under its label. */
async function styled(page, field) {
  return page.evaluate((id) => {
    const input = document.getElementById(id);
    const label = document.querySelector(`label[for="${id}"]`);
    const l = label.getBoundingClientRect();
    const i = input.getBoundingClientRect();
    return {
      font: getComputedStyle(document.body).fontFamily,
      fieldBelowLabel: i.top >= l.bottom - 1,
      fieldWidth: i.width,
      stylesheets: document.styleSheets.length,
    };
  }, field);
}

function assertStyled(s, what) {
  assert.doesNotMatch(s.font, /times|^serif$/i, `${what}: the apps' font, not the browser's default`);
  assert.ok(s.fieldBelowLabel, `${what}: each field on its own line under its label`);
  assert.ok(s.fieldWidth > 200, `${what}: fields span the card (${s.fieldWidth} px)`);
}

async function signInOnPage(page) {
  await page.fill("#username", h.admin.username);
  await page.fill("#password", h.admin.password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe("one product", () => {
  it("the first form a new user fills in, /bootstrap, is styled, leads back to the apps and lands on the Console home", async () => {
    for (const width of [1280, 375]) {
      const page = await h.newPage(browser, { width, height: 900 });
      await page.goto(`${platform.apiUrl}/bootstrap`);
      assertStyled(await styled(page, "username"), `/bootstrap at ${width} px`);
      await page.getByRole("navigation", { name: "Apps" }).getByRole("link", { name: "Workplace" }).waitFor();
      await page.getByRole("navigation", { name: "Apps" }).getByRole("link", { name: "Console" }).waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `no sideways scrolling at ${width} px (${overflow})`);
      await h.screenshot(page, `identity-bootstrap-${width}`);
      assert.deepEqual(await h.axeViolations(page), []);
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
    const page = await h.newPage(browser);
    await page.goto(`${platform.apiUrl}/bootstrap`);
    await page.fill("#username", h.admin.username);
    await page.fill("#displayName", h.admin.displayName);
    await page.fill("#password", h.admin.password);
    await page.fill("#confirmPassword", h.admin.password);
    await page.fill("#tenantName", h.admin.tenantName);
    await page.fill("#workspaceName", h.admin.workspaceName);
    await page.getByRole("button", { name: "Create administrator" }).click();
    await page.waitForURL(`${platform.apiUrl}/`);
    await page.getByRole("heading", { name: "Home", level: 1 }).waitFor();
    const cookie = (await page.context().cookies()).find((c) => c.name === "platform-session");
    session = cookie.value;
    await page.context().close();
  });

  it("/login is styled and, without a return URL, goes to the Console home", async () => {
    for (const width of [1280, 375]) {
      const page = await h.newPage(browser, { width, height: 800 });
      await page.goto(`${platform.apiUrl}/login`);
      assertStyled(await styled(page, "password"), `/login at ${width} px`);
      await h.screenshot(page, `identity-login-${width}`);
      assert.deepEqual(await h.axeViolations(page), []);
      if (width === 1280) {
        await signInOnPage(page);
        await page.waitForURL(`${platform.apiUrl}/`);
        await page.getByRole("heading", { name: "Home", level: 1 }).waitFor();
      }
      await page.context().close();
    }
  });

  it("the account pages are styled and sign out in one click", async () => {
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    await page.goto(`${platform.apiUrl}/account/security`);
    assertStyled(await styled(page, "currentPassword"), "/account/security");
    await h.screenshot(page, "identity-security-1280");
    await page.goto(`${platform.apiUrl}/account/pat`);
    assertStyled(await styled(page, "name"), "/account/pat");
    await h.screenshot(page, "identity-pat-1280");
    assert.deepEqual(await h.axeViolations(page), []);
    await page.goto(`${platform.apiUrl}/logout?returnUrl=%2Ftasks`);
    await h.screenshot(page, "identity-logout-1280");
    await page.getByRole("main").getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/login\?returnUrl=%2Ftasks$/);
    await page.context().close();
    // That signed out only that browser's session; sign in again for the rest.
    const again = await h.newPage(browser);
    await again.goto(`${platform.apiUrl}/login`);
    await signInOnPage(again);
    await again.waitForURL(`${platform.apiUrl}/`);
    session = (await again.context().cookies()).find((c) => c.name === "platform-session").value;
    await again.context().close();
  });

  it("sign-out is one click from the Console and comes back to the page after signing in again", async () => {
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    await page.goto(`${platform.apiUrl}/triggers`);
    await page.getByRole("heading", { name: "Triggers", level: 1 }).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/login\?returnUrl=%2Ftriggers$/);
    assertStyled(await styled(page, "username"), "/login after sign-out");
    assert.equal((await call("GET", "/api/identity/context")).status, 401, "the session is over");
    await signInOnPage(page);
    await page.waitForURL(`${platform.apiUrl}/triggers`);
    session = (await page.context().cookies()).find((c) => c.name === "platform-session").value;
    await page.context().close();
  });

  it("sign-out is one click from the Workplace and stays in the Workplace", async () => {
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    await page.goto(`${platform.workplaceUrl}`);
    await page.locator("header.topbar").waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to the Workplace" }).waitFor();
    assert.ok(page.url().startsWith(platform.workplaceUrl), page.url());
    assert.equal((await call("GET", "/api/identity/context")).status, 401, "the session is over");
    await page.context().close();
    const again = await h.newPage(browser);
    await again.goto(`${platform.apiUrl}/login`);
    await signInOnPage(again);
    await again.waitForURL(`${platform.apiUrl}/`);
    session = (await again.context().cookies()).find((c) => c.name === "platform-session").value;
    await again.context().close();
  });

  it("a Workplace tab and a Console tab left open when the session ends elsewhere ask to sign in again, and come back to their page", async () => {
    const workplace = await h.newPage(browser);
    await h.signIn(workplace, session);
    const inbox = `${platform.workplaceUrl}w/default/inbox`;
    await workplace.goto(inbox);
    await workplace.locator("header.topbar").waitFor();
    const console = await workplace.context().newPage();
    await console.goto(`${platform.apiUrl}/tasks`);
    await console.getByRole("heading", { name: "Tasks", level: 1 }).waitFor();

    // Signed out in a third tab of the same browser.
    const other = await workplace.context().newPage();
    await other.goto(`${platform.workplaceUrl}`);
    await other.getByRole("button", { name: "Sign out" }).click();
    await other.getByRole("heading", { name: "Sign in to the Workplace" }).waitFor();
    await other.close();

    // The Workplace tab notices by itself (its next read is refused) and asks to sign in, not
    // "authentication required" in place of its pages.
    await workplace.getByRole("heading", { name: "Sign in to the Workplace" }).waitFor({ timeout: 30_000 });
    assert.equal(await workplace.getByText("authentication required").count(), 0);
    await h.screenshot(workplace, "session-ended-elsewhere-workplace");
    // The Console tab's next read sends it to sign in, and back to the page it was going to.
    await console.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Triggers" }).click();
    await console.waitForURL(/\/login\?returnUrl=%2Ftriggers$/);
    await signInOnPage(console);
    await console.waitForURL(`${platform.apiUrl}/triggers`);
    await console.getByRole("heading", { name: "Triggers", level: 1 }).waitFor();
    session = (await console.context().cookies()).find((c) => c.name === "platform-session").value;

    await workplace.getByRole("link", { name: "Sign in" }).click();
    if (await workplace.locator("#username").isVisible().catch(() => false)) await signInOnPage(workplace);
    await workplace.waitForURL(inbox);
    await workplace.locator("header.topbar").waitFor();
    assert.deepEqual(workplace.errors, []);
    await workplace.context().close();
  });

  it("the Console home shows the questions waiting and the runs that failed, each linked", async () => {
    await h.waitFor(async () => (await call("GET", "/api/dashboards/home/view")).body?.entries?.every((e) => e.entry), { timeout: 60_000, message: "the demo Entries" });
    const waiting = await call("POST", "/api/workspaces/default/entries/guided-request/interactions?waitSeconds=10", { input: { request: "A style question" } });
    assert.equal(waiting.status, 201, JSON.stringify(waiting.body));
    // An Entry whose Agent fails, offered in the Console as its Fallback (rule 23).
    assert.equal((await call("POST", "/api/agents", { apiVersion: "platform/v1", kind: "Agent", metadata: { name: "flaky" }, definition: { displayName: "Flaky", instructions: "@showError The data source is offline", modelProfile: { name: "deterministic-builtin" } } })).status, 201);
    const entry = await call("POST", "/api/entries", {
      apiVersion: "platform/v1",
      kind: "Entry",
      metadata: { name: "ask-anything" },
      definition: {
        displayName: "Ask anything",
        description: "Whatever no other Entry covers",
        fields: [{ name: "request", type: "Text", role: "PrimaryInput" }],
        binding: { agent: { name: "flaky" } },
        exposure: { surfaces: ["Workplace", "Console"] },
        consoleRoles: ["Fallback"],
      },
    });
    assert.equal(entry.status, 201, JSON.stringify(entry.body));
    await h.waitFor(async () => (await call("POST", "/api/entries/ask-anything/publish")).status < 300, { timeout: 30_000, message: "the Entry to publish" });
    await h.waitFor(async () => (await call("GET", "/api/entries?search=ask")).body?.items?.some((e) => e.name === "ask-anything" && e.targetState === "Executable"), { timeout: 30_000, message: "the Entry to be executable" });
    await call("POST", "/api/workspaces/default/entries/ask-anything/interactions?waitSeconds=10", { input: { request: "Anything" } });
    await h.waitFor(async () => (await call("GET", "/api/flowRuns?state=Failed")).body?.items?.length > 0, { timeout: 30_000, message: "a failed run" });
    const failed = (await call("GET", "/api/flowRuns?state=Failed")).body.items[0];

    for (const width of [1280, 375]) {
      const page = await h.newPage(browser, { width, height: 900 });
      await h.signIn(page, session);
      await page.goto(`${platform.apiUrl}/`);
      const questions = page.getByRole("list", { name: "Tasks waiting for an answer" });
      const question = questions.locator(`li[data-task-id="${waiting.body.task.id}"]`);
      await question.waitFor();
      const href = await question.getByRole("link").getAttribute("href");
      assert.equal(href, `${platform.workplaceUrl}w/default/tasks/${waiting.body.task.id}`, "the question links to its Task");
      const run = page.getByRole("list", { name: "Failed runs" }).locator(`li[data-run-id="${failed.id}"]`);
      await run.waitFor();
      assert.match(await page.locator('[data-panel="task-states"] [data-state="action-required"] dd').innerText(), /^[1-9]/);
      await page.locator('[data-panel="health"]').locator('[data-state="healthy"], [data-state="unhealthy"], [data-state="empty"]').first().waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `no sideways scrolling at ${width} px (${overflow})`);
      await h.screenshot(page, `console-home-${width}`);
      assert.deepEqual(await h.axeViolations(page), []);
      if (width === 1280) {
        await run.getByRole("link").click();
        await page.waitForURL(`${platform.apiUrl}/runs/${failed.id}`);
        await page.locator('[data-field="result"]').getByText("The run failed").waitFor();
        await h.screenshot(page, "console-run-failed-1280");
      } else {
        // Below 800 px the navigation folds behind the Menu button.
        const nav = page.getByRole("navigation", { name: "Console" });
        assert.equal(await nav.isVisible(), false);
        await page.getByRole("button", { name: "Menu" }).click();
        await nav.getByRole("link", { name: "Entries" }).waitFor();
        await h.screenshot(page, "console-menu-375");
      }
      assert.deepEqual(page.errors, []);
      await page.context().close();
    }
  });

  it("a completed run shows its Result and links its Task", async () => {
    const x = await call("POST", "/api/workspaces/default/entries/guided-request/interactions?waitSeconds=10", { input: { request: "Result please" } });
    const answered = await call("POST", `/api/workspaces/default/interactions/${x.body.interaction.id}/pending-actions/${x.body.action.pendingAction.id}/responses?waitSeconds=10`, { resumeToken: x.body.resumeToken, value: "concise" });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    let run;
    await h.waitFor(async () => (run = (await call("GET", "/api/flowRuns?state=Completed")).body.items.find((r) => r.correlation?.interactionId === x.body.interaction.id)), { message: "the completed run" });
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    await page.goto(`${platform.apiUrl}/runs/${run.id}`);
    const result = page.locator('[data-field="result"]');
    await result.getByRole("heading", { name: "Result" }).waitFor();
    await h.waitFor(async () => !/No Result yet/.test(await result.innerText()), { message: "the Result" });
    assert.doesNotMatch(await result.innerText(), /without a Result/, "the run's Result is shown");
    const task = page.locator('[data-field="task"] a');
    assert.equal(await task.getAttribute("href"), `${platform.workplaceUrl}w/default/tasks/${x.body.task.id}`);
    await h.screenshot(page, "console-run-result-1280");
    await page.context().close();
  });

  it("Entry discovery offers the Fallback Entries when a search has no match, and starts one only when chosen (rule 23)", async () => {
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    await page.goto(`${platform.apiUrl}/entries`);
    const discover = page.locator("section.discover");
    await discover.locator('li[data-entry="ask-anything"][data-target-state="Executable"]').waitFor();
    const before = (await call("GET", "/api/flowRuns?take=100")).body.items.length;
    await page.getByRole("searchbox", { name: "Search the Entries you may start" }).fill("quarterly tax filing");
    await page.getByRole("button", { name: "Search" }).click();
    await discover.locator('[data-state="no-match"]').getByText("No Entry you may start matches “quarterly tax filing”").waitFor();
    const choice = page.getByRole("radio", { name: /Ask anything in workspace default/ });
    await choice.waitFor();
    assert.equal(await page.getByRole("button", { name: "Choose a fallback Entry" }).isDisabled(), true, "nothing runs until one is chosen");
    assert.equal((await call("GET", "/api/flowRuns?take=100")).body.items.length, before, "offering it started nothing");
    await h.screenshot(page, "console-entries-fallback-1280");
    assert.deepEqual(await h.axeViolations(page), []);
    await choice.check();
    await page.getByRole("button", { name: "Start Ask anything with “quarterly tax filing”" }).click();
    await discover.locator('[data-state="started"]').waitFor();
    await h.waitFor(async () => (await call("GET", "/api/flowRuns?take=100")).body.items.length === before + 1, { message: "one run started" });
    await page.context().close();
  });

  it("an unknown Console path shows the Console's own not-found page, and the security audit names people", async () => {
    const page = await h.newPage(browser);
    await h.signIn(page, session);
    const resp = await page.goto(`${platform.apiUrl}/no/such/page`);
    assert.equal(resp.status(), 404);
    await page.getByRole("heading", { name: "Page not found", level: 1 }).waitFor();
    await page.getByRole("navigation", { name: "Console" }).waitFor();
    await h.screenshot(page, "console-not-found-1280");
    assert.deepEqual(await h.axeViolations(page), []);
    await page.getByRole("link", { name: "Back to the Console home" }).click();
    await page.getByRole("heading", { name: "Home", level: 1 }).waitFor();

    // A question given a fresh resume token (a reload, another tab) is the record's target: it
    // is named as a question, not as a person nobody knows.
    const asked = await call("POST", "/api/workspaces/default/entries/guided-request/interactions?waitSeconds=10", { input: { request: "An audited question" } });
    assert.equal(asked.status, 201, JSON.stringify(asked.body));
    const question = asked.body.action.pendingAction.id;
    const reissued = await call("POST", `/api/workspaces/default/interactions/${asked.body.interaction.id}/pending-actions/${question}/resume-token`);
    assert.equal(reissued.status, 200, JSON.stringify(reissued.body));

    await page.goto(`${platform.apiUrl}/settings/organization/security-audit`);
    const actor = page.locator('td[data-column="actor"]').first();
    await actor.waitFor();
    await h.waitFor(async () => (await actor.innerText()) === h.admin.displayName, { message: "the actor's display name" });
    const reissue = page.locator("tr", { has: page.getByText("pending-action.resume-token-reissued", { exact: true }) }).first();
    assert.equal(await reissue.locator('td[data-column="target"]').innerText(), `Question ${question.slice(0, 8)}`);
    await page.goto(`${platform.apiUrl}/settings/organization/members`);
    await page.locator('[data-section="platform-administrators"]').getByText(h.admin.displayName).waitFor();
    assert.equal(await page.getByText("no member with a role yet").count(), 0);
    await h.screenshot(page, "console-members-1280");
    await page.context().close();
  });
});
