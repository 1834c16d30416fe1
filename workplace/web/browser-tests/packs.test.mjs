// Packs in the Console, in a real browser against the real binary, as an operator works: compose
// a Pack from the workspace's own resources (the Entry brings its Agent automatically, the
// built-in ModelProfile becomes a binding), download the archive, install it through its preview
// (a refused file says why in words first), choose the binding, see it Installed, uninstall it
// through the uninstall preview. Between them, an update and a rollback through their previews. Screenshots at 1280 and 375 px.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;
let archive; // the downloaded Pack archive

const call = (method, p, body, headers) => h.api(platform.apiUrl, session, method, p, body, headers);

before(async () => {
  platform = await h.startPlatform({ name: "packs-suite", workplace: false });
  session = await h.bootstrap(platform.apiUrl);
  browser = await h.launchBrowser();
  await h.waitFor(async () => (await call("GET", "/api/modelprofiles/deterministic-builtin")).status === 200, { timeout: 60_000, message: "the demo ModelProfile" });
  // The demo's own resources are built in (every workspace has them), so a Pack carries what a
  // person made: an Agent on the demo's model and an Entry bound to it.
  for (const [p, body] of [
    [
      "/api/agents",
      { apiVersion: "platform/v1", kind: "Agent", metadata: { name: "summarizer" }, definition: { displayName: "Summarizer", instructions: "@respond Summarized", modelProfile: { name: "deterministic-builtin" } } },
    ],
    [
      "/api/entries",
      {
        apiVersion: "platform/v1",
        kind: "Entry",
        metadata: { name: "summarize" },
        definition: { displayName: "Summarize a text", task: { display: "Hidden" }, fields: [{ name: "request", type: "Text", role: "PrimaryInput", label: "What should be summarized?" }], binding: { agent: { name: "summarizer" } } },
      },
    ],
  ]) {
    const r = await call("POST", p, body);
    assert.equal(r.status, 201, `${p}: ${JSON.stringify(r.body)}`);
  }
});

after(async () => {
  await browser?.close();
  await platform?.stop();
});

async function consolePage(p, opts) {
  const page = await h.newPage(browser, opts);
  await h.signIn(page, session);
  await page.goto(`${platform.apiUrl}${p}`);
  return page;
}

async function noViolations(page, what) {
  assert.deepEqual(await h.axeViolations(page), [], `${what}: no serious accessibility violations`);
  assert.deepEqual(page.errors, [], `${what}: no page errors`);
}

describe("Packs in the Console", () => {
  it("composes a Pack: the Entry brings its Agent automatically, Keep promotes it and offers Leave as dependency, the built-in model becomes a binding, and the archive downloads", async () => {
    const page = await consolePage("/packs/compose", { acceptDownloads: true });
    await page.getByRole("heading", { name: "Compose a Pack" }).waitFor();
    await page.getByRole("checkbox", { name: /Summarize a text/ }).check();
    const contents = page.getByRole("table", { name: "Pack contents" });
    const agent = contents.locator('tr[data-key="Agent/summarizer"]');
    await agent.waitFor();
    assert.equal(await agent.getAttribute("data-origin"), "automatic");
    assert.match(await agent.innerText(), /Required by Entry\/summarize/);
    // The inventory says the Agent came along; its checkbox stays a person's choice.
    assert.match(await page.locator('.inventory-item[data-key="Agent/summarizer"]').innerText(), /included automatically/);
    await page.getByRole("list", { name: "Bindings" }).getByText(/ModelProfile \(required\)/).waitFor();
    await agent.getByRole("button", { name: "Keep Agent summarizer" }).click();
    await page.getByRole("button", { name: "Leave as dependency: Agent summarizer" }).waitFor();
    assert.equal(await agent.getAttribute("data-origin"), "direct");
    await page.locator('[data-state="no-issues"]').waitFor();
    // Leaving it as a dependency makes it automatic again, and Keep brings it back.
    await page.getByRole("button", { name: "Leave as dependency: Agent summarizer" }).click();
    await page.getByRole("button", { name: "Keep Agent summarizer" }).waitFor();

    await page.getByRole("button", { name: "Create archive" }).click();
    await page.locator("#pf-publisher-hint.field-error").waitFor(); // the coordinate is checked first
    await page.getByLabel("Publisher").fill("acme");
    await page.getByLabel("Name", { exact: true }).fill("summaries");
    await page.getByLabel("Version").fill("1.0.0");
    await page.getByLabel("Display name").fill("Summaries");
    await page.getByLabel("Description").fill("Summarizes a text");
    await page.getByRole("button", { name: "Create archive" }).click();
    const link = page.getByRole("link", { name: /Download acme/ });
    await link.waitFor();
    await h.screenshot(page, "packs-compose-1280");
    const [download] = await Promise.all([page.waitForEvent("download"), link.click()]);
    archive = path.join(h.outputDir, download.suggestedFilename());
    await download.saveAs(archive);
    assert.equal(fs.readFileSync(archive).subarray(0, 2).toString(), "PK", "the download is a ZIP archive");
    await page.getByRole("table", { name: "Pack projects" }).getByText(download.suggestedFilename()).waitFor();
    await noViolations(page, "the Composer");
    await page.context().close();
  });

  it("refuses a file that is not a Pack in words, then installs the archive through its preview with the binding chosen, and shows it Installed", async () => {
    assert.ok(archive, "the composed archive");
    const page = await consolePage("/packs");
    await page.getByRole("heading", { name: "Packs", exact: true }).waitFor();
    await page.locator('[data-state="empty"]').waitFor();
    await page.getByLabel("Pack archive (.zip)").setInputFiles({ name: "notes.zip", mimeType: "application/zip", buffer: Buffer.from("these are notes, not a ZIP archive") });
    const refusal = page.getByRole("alert");
    await refusal.waitFor();
    const text = await refusal.innerText();
    assert.match(text, /not a ZIP archive/);
    assert.ok(!text.includes("{") && !/NotZip/.test(text), `the refusal is a sentence: ${text}`);

    await page.getByLabel("Pack archive (.zip)").setInputFiles(archive);
    const preview = page.locator(".pack-preview");
    await preview.waitFor();
    await preview.getByRole("heading", { name: /Summaries/ }).waitFor();
    const planned = page.getByRole("table", { name: "Planned changes" });
    assert.equal(await planned.locator('tr[data-action="create"]').count(), 2, "the Agent and the Entry are created");
    assert.equal(await planned.locator('tr[data-action="conflict"]').count(), 0);
    assert.equal(await preview.locator("[data-readiness]").getAttribute("data-readiness"), "needs configuration");
    await h.screenshot(page, "packs-preview-1280");
    // Choosing the ModelProfile saves the selection by the Pack's identity and re-reads the preview.
    await preview.locator("tr[data-binding] select").first().selectOption("default/deterministic-builtin");
    await preview.getByRole("button", { name: "Save bindings" }).click();
    await h.waitFor(async () => (await preview.locator("[data-readiness]").getAttribute("data-readiness")) === "ready", { message: "the binding to be satisfied" });
    await page.getByRole("button", { name: "Install Summaries" }).click();

    await page.waitForURL(/\/packs\/acme\/summaries$/);
    await page.locator('.pack-state[data-state="installed"]').waitFor({ timeout: 30_000 });
    assert.equal(await page.locator(".page-head .pack-state").innerText(), "Installed");
    const resources = page.getByRole("table", { name: "Resources" });
    await resources.locator('tr[data-resource="Agent/summarizer"][data-condition="managed"]').waitFor();
    await resources.locator('tr[data-resource="Entry/summarize"][data-condition="managed"]').waitFor();
    await h.screenshot(page, "packs-installed-1280");
    await noViolations(page, "the installed Pack");

    await page.getByRole("link", { name: "← Packs" }).click();
    const row = page.locator('tr[data-pack="acme.summaries"]');
    await row.waitFor();
    assert.match(await row.innerText(), /Installed/);
    assert.match(await row.innerText(), /1\.0\.0/);
    await page.context().close();
  });

  it("updates from another version's file through its preview with the field diff, then rolls back to the retained version through the rollback preview", async () => {
    // Version 1.1.0: the Agent's instructions changed in the workspace, composed again.
    const changed = await h.replaceFresh(call, "/api/agents/summarizer", (agent) => {
      const body = { ...agent, definition: { ...agent.definition, instructions: "@respond Summarized briefly" } };
      delete body.status;
      return body;
    });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    const project = await call("POST", "/api/pack-projects", { publisher: "acme", name: "summaries", version: "1.1.0", displayName: "Summaries", description: "Summarizes a text", selection: ["Entry/summarize"] });
    assert.equal(project.status, 201, JSON.stringify(project.body));
    const zip = await fetch(`${platform.apiUrl}${project.body.archiveUrl}`, { headers: { Cookie: `platform-session=${session}` } });
    const next = path.join(h.outputDir, project.body.fileName);
    fs.writeFileSync(next, Buffer.from(await zip.arrayBuffer()));

    const page = await consolePage("/packs/acme/summaries");
    await page.getByRole("heading", { name: "Summaries" }).waitFor();
    await page.getByLabel("Pack archive (.zip)").setInputFiles(next);
    const preview = page.locator('.pack-preview[data-mode="update"]');
    await preview.waitFor();
    await preview.getByText("Updates the installed version 1.0.0 to 1.1.0.").waitFor();
    const row = preview.locator('tr[data-resource="Agent/summarizer"]');
    assert.equal(await row.getAttribute("data-action"), "update");
    await row.locator("details.diff summary").click();
    assert.match(await row.innerText(), /instructions/);
    assert.match(await row.innerText(), /Summarized briefly/);
    await h.screenshot(page, "packs-update-preview-1280");
    await page.getByRole("button", { name: "Update to 1.1.0" }).click();
    await h.waitFor(async () => (await page.locator(".pack-facts").innerText()).includes("1.1.0"), { timeout: 30_000, message: "version 1.1.0" });
    assert.match(await page.locator(".pack-facts").innerText(), /Retained version\s+1\.0\.0/);

    await page.getByRole("button", { name: "Roll back to 1.0.0" }).click();
    const rollback = page.getByRole("region", { name: "Rollback preview" });
    await rollback.waitFor();
    await rollback.getByText("Rolls back from 1.1.0 to the retained version 1.0.0.").waitFor();
    assert.equal(await rollback.locator('tr[data-resource="Agent/summarizer"]').getAttribute("data-action"), "update");
    await h.screenshot(page, "packs-rollback-preview-1280");
    await rollback.getByRole("button", { name: "Confirm rollback to 1.0.0" }).click();
    await h.waitFor(async () => /Version\s+1\.0\.0/.test(await page.locator(".pack-facts").innerText()), { timeout: 30_000, message: "version 1.0.0 again" });
    await noViolations(page, "the rolled back Pack");
    await page.context().close();
  });

  it("works at 375 px: the list, the detail and the uninstall preview fit, and uninstall removes what the Pack manages", async () => {
    const page = await consolePage("/packs/acme/summaries", { width: 375, height: 800 });
    await page.getByRole("heading", { name: "Summaries" }).waitFor();
    await page.getByRole("button", { name: "Uninstall…" }).click();
    const region = page.getByRole("region", { name: "Uninstall preview" });
    await region.waitFor();
    const removed = await region.locator('[data-list="remove"]').innerText();
    assert.match(removed, /summarizer/);
    assert.match(removed, /summarize/);
    assert.match(await region.locator('[data-state="namespace-removed"]').innerText(), /The namespace acme\.summaries is removed with it/);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 375, `no horizontal scrolling of the page at 375 px (${width})`);
    await h.screenshot(page, "packs-uninstall-375");
    await noViolations(page, "the uninstall preview");
    await region.getByRole("button", { name: "Confirm uninstall" }).click();
    await page.locator('[data-state="removed"]').waitFor({ timeout: 30_000 });
    assert.match(await page.locator('[data-state="removed"]').innerText(), /Its namespace was removed with it/);
    await h.waitFor(async () => (await call("GET", "/api/packs/acme/summaries")).status === 404, { timeout: 30_000, message: "the Pack to be gone" });
    await page.goto(`${platform.apiUrl}/packs`);
    await page.locator('[data-state="empty"]').waitFor();
    await h.screenshot(page, "packs-list-375");
    await page.context().close();
  });
});
