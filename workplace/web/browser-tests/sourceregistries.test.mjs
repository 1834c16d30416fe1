// Source registries in the Console, in a real browser against the real binary: a member who is
// not a Platform administrator sees a clear "not permitted" state; an administrator registers a
// registry served from a folder on loopback (`platform registry serve`), refreshes it, reads the
// history, finds a Pack's Source in discovery, makes the registration trusted, imports one
// observation, previews and installs its Pack from the registry and reads its provenance on the
// Pack's page (at 375 px, reloading mid-flow); the official registration has no delete control,
// and an edit against a stale ETag says so in words. Screenshots at 1280 and 375 px.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let platform;
let browser;
let session;
let registry; // `platform registry serve` of an empty folder: { dir, indexUrl, stop }

/** startRegistry serves a folder of Pack archives as a registry v1 over HTTPS with its own CA. */
async function startRegistry() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "platform-registry-"));
  const packs = path.join(dir, "packs");
  fs.mkdirSync(packs);
  const caFile = path.join(dir, "ca.pem");
  const port = await h.freePort();
  const child = spawn(h.binary, ["registry", "serve", "--dir", packs, "--addr", `127.0.0.1:${port}`, "--ca-file", caFile], { stdio: ["ignore", "pipe", "pipe"] });
  const log = fs.createWriteStream(path.join(h.outputDir, "registries-registry.log"));
  let output = "";
  const indexUrl = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the registry did not start:\n${output}`)), 20_000);
    const onData = (chunk) => {
      log.write(chunk);
      output += chunk.toString();
      const m = output.match(/ at (https:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`the registry exited (${code}):\n${output}`)));
  });
  return {
    dir: packs,
    caFile,
    indexUrl,
    stop: async () => {
      if (child.exitCode === null) child.kill("SIGTERM");
      log.end();
    },
  };
}

const call = (method, p, body, headers) => h.api(platform.apiUrl, session, method, p, body, headers);

before(async () => {
  registry = await startRegistry();
  // The platform trusts the registry's own CA; its loopback address needs allowPrivateNetwork.
  platform = await h.startPlatform({ name: "registries-suite", workplace: false, env: { Platform__Sources__Registries__Transport__CaBundleFile: registry.caFile } });
  session = await h.bootstrap(platform.apiUrl);
  browser = await h.launchBrowser();
});

after(async () => {
  await browser?.close();
  await platform?.stop();
  await registry?.stop();
});

async function consolePage(p, opts, cookie = session) {
  const page = await h.newPage(browser, opts);
  await h.signIn(page, cookie);
  await page.goto(`${platform.apiUrl}${p}`);
  return page;
}

async function noViolations(page, what) {
  assert.deepEqual(await h.axeViolations(page), [], `${what}: no serious accessibility violations`);
  assert.deepEqual(page.errors, [], `${what}: no page errors`);
}

const fits = async (page, what) => {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 375, `${what}: no horizontal scrolling of the page at 375 px (${width})`);
};

describe("Source registries in the Console", () => {
  it("a member who is not a Platform administrator sees that only administrators manage registries, on both pages, not a broken page", async () => {
    const account = { username: "mia", password: "Correct-horse-battery-2", displayName: "Mia Member", role: "Member" };
    const ws = await call("GET", "/api/identity/context");
    const created = await call("POST", "/api/identity/accounts/", { ...account, workspace: ws.body.workspace.id });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const login = await fetch(`${platform.apiUrl}/api/auth/local/login`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ username: account.username, password: account.password }) });
    assert.ok(login.ok, `login: ${login.status}`);
    const cookie = login.headers.getSetCookie().find((c) => c.startsWith("platform-session=")).split(";")[0].split("=")[1];

    const page = await consolePage("/settings/source-registries", {}, cookie);
    await page.getByRole("heading", { name: "Source registries" }).waitFor();
    assert.match(await page.locator('[data-state="not-permitted"]').innerText(), /Only Platform administrators manage Source registries/);
    assert.equal(await page.getByRole("button", { name: "Add a registry" }).count(), 0, "no control a member cannot use");
    await h.screenshot(page, "registries-not-permitted-1280");
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Discover Sources" }).click();
    await page.getByRole("heading", { name: "Discover Sources" }).waitFor();
    await page.locator('[data-state="not-permitted"]').waitFor();
    await noViolations(page, "discovery, not permitted");
    await page.context().close();
  });

  it("an administrator adds a registry through the form with the defaults shown and a warning for a relaxed endpoint policy, and the official registration has no delete control", async () => {
    const page = await consolePage("/settings/source-registries");
    const list = page.getByRole("table", { name: "Registrations" });
    const official = list.locator('tr[data-registration="agentstration-official"]');
    await official.waitFor();
    await official.getByRole("link").click();
    const detail = page.locator('[data-registration-detail="agentstration-official"]');
    await detail.waitFor();
    assert.equal(await detail.getByRole("button", { name: /Delete/ }).count(), 0, "the official registration cannot be deleted: no control");
    await detail.getByRole("link", { name: "Close" }).click();

    await page.getByRole("button", { name: "Add a registry" }).click();
    const form = page.getByRole("form", { name: "Add a registry" });
    await form.getByLabel("Display name").fill("Team registry");
    assert.equal(await form.getByLabel(/^Name/).inputValue(), "team-registry", "the name follows the display name");
    await form.getByLabel("Index URL").fill("https://127.0.0.1:9/index.json");
    assert.equal(await form.getByLabel("Stale after").getAttribute("placeholder"), "1.00:00:00", "an empty duration shows its default");
    assert.equal(await page.locator('[data-warning="endpoint-policy"]').count(), 0);
    await form.getByLabel(/Allow private network addresses/).check();
    assert.match(await page.locator('[data-warning="endpoint-policy"]').innerText(), /reach machines inside your network/);
    // A bearer token comes from an instance Secret; with none yet, the form says how to make one
    // (the Console has no Secrets page), then the registry goes on without.
    await form.getByLabel("Bearer token from an instance Secret").check();
    await form.getByText("The instance has no Secret yet").waitFor();
    assert.match(await form.getByText("The instance has no Secret yet").innerText(), /PUT \/api\/instance\/secrets\/<name>.*platform-instance/s);
    await form.getByLabel(/None \(a public registry/).check();
    await form.getByLabel("Timeout of one attempt").fill("5 minutes");
    await form.getByRole("button", { name: "Add registry" }).click();
    assert.match(await form.getByText(/Write a duration as \[days\.\]hh:mm:ss/).innerText(), /00:30:00/, "a malformed duration is named on its field");
    await form.getByLabel("Timeout of one attempt").fill("00:00:05");
    await form.getByRole("button", { name: "Add registry" }).click();

    await page.waitForURL(/registration=team-registry/, { waitUntil: "commit" });
    const row = list.locator('tr[data-registration="team-registry"]');
    await row.waitFor();
    assert.match(await row.innerText(), /untrusted/);
    assert.equal(await row.locator("[data-freshness]").getAttribute("data-freshness"), "never");
    // The origin is classified at the read, before any refresh: a loopback index is not public.
    const origin = page.locator('[data-registration-detail="team-registry"] [data-origin]');
    await h.waitFor(async () => ["private", "internal"].includes(await origin.getAttribute("data-origin")), { message: "the origin classification" });
    const saved = await call("GET", "/api/sourceregistries/team-registry");
    assert.equal(saved.status, 200);
    assert.equal(saved.body.properties.refreshPolicy.timeout, "00:00:05");
    assert.equal(saved.body.properties.endpointPolicy.allowPrivateNetwork, true);
    await h.screenshot(page, "registries-added-1280");
    await noViolations(page, "the registrations with one open");
    await page.context().close();
  });

  it("an edit after someone else's change is refused in words and shows the current values; delete keeps nothing on the page", async () => {
    const page = await consolePage("/settings/source-registries?registration=team-registry");
    const detail = page.locator('[data-registration-detail="team-registry"]');
    await detail.waitFor();
    // Someone else changes the trust policy meanwhile.
    const changed = await h.replaceFresh(call, "/api/sourceregistries/team-registry", (current) => ({ name: "team-registry", properties: { ...current.properties, trustPolicy: "trusted" } }));
    assert.equal(changed.status, 200, JSON.stringify(changed.body));

    await detail.getByRole("radio", { name: /^Authoritative:/ }).check();
    await detail.getByRole("button", { name: "Save changes" }).click();
    const alert = detail.getByRole("alert").filter({ hasText: /someone changed this registration/ });
    await alert.waitFor();
    await h.waitFor(async () => detail.getByRole("radio", { name: /^Trusted:/ }).isChecked(), { message: "the current trust policy to be shown again" });
    assert.equal((await call("GET", "/api/sourceregistries/team-registry")).body.properties.trustPolicy, "trusted", "nothing was overwritten");

    // A refresh writes the registration's status, which moves its ETag, while the form is open:
    // that is no change by someone else, and the save goes through.
    const statusOnly = async () => {
      const before = await call("GET", "/api/sourceregistries/team-registry");
      assert.equal((await call("POST", "/api/sourceregistries/team-registry/refresh")).status, 200);
      const after = await call("GET", "/api/sourceregistries/team-registry");
      assert.notEqual(after.headers.get("etag"), before.headers.get("etag"), "the refresh's status write moved the ETag");
      assert.deepEqual(after.body.properties, before.body.properties);
    };
    await detail.getByRole("radio", { name: /^Authoritative:/ }).check();
    await statusOnly();
    await detail.getByRole("button", { name: "Save changes" }).click();
    await detail.getByText("Saved.").waitFor();
    assert.equal((await call("GET", "/api/sourceregistries/team-registry")).body.properties.trustPolicy, "authoritative");

    // The same holds for the delete: a status written after the page's last read (the controller
    // records the saved generation moments after a save) is not someone else's change.
    await detail.getByRole("button", { name: "Delete…" }).click();
    await statusOnly();
    await page.getByRole("region", { name: "Delete the registration" }).getByRole("button", { name: "Delete team-registry" }).click();
    await page.waitForURL(/\/settings\/source-registries$/, { waitUntil: "commit" });
    await h.waitFor(async () => (await page.locator('tr[data-registration="team-registry"]').count()) === 0, { message: "the row to go" });
    assert.equal((await call("GET", "/api/sourceregistries/team-registry")).status, 404);
    await page.context().close();
  });

  it("at 375 px the registrations, a refresh's result and its history fit the page", async () => {
    const created = await call("POST", "/api/sourceregistries", { name: "unreachable", properties: { displayName: "Unreachable", indexUrl: "https://127.0.0.1:9/index.json", refreshPolicy: { timeout: "00:00:02" } } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const page = await consolePage("/settings/source-registries?registration=unreachable", { width: 375, height: 800 });
    const detail = page.locator('[data-registration-detail="unreachable"]');
    await detail.waitFor();
    await detail.getByRole("button", { name: "Refresh now" }).click();
    // A loopback address without allowPrivateNetwork is refused before any connection.
    const note = detail.locator('[data-note="refresh"]');
    await note.waitFor({ timeout: 20_000 });
    assert.match(await note.innerText(), /The refresh failed \(\w+/);
    // It never succeeded: no "last good observation" is kept, and the note does not say one is.
    assert.match(await note.innerText(), /there is no observation of this registry yet/);
    const history = detail.getByRole("table", { name: "Refresh history" });
    await history.locator('tr[data-outcome="failed"]').first().waitFor();
    assert.match(await history.innerText(), /Manual/);
    await fits(page, "the registration with its history");
    await h.screenshot(page, "registries-refresh-375");
    await noViolations(page, "the refresh at 375 px");
    await page.goto(`${platform.apiUrl}/settings/source-registries/discovery`);
    await page.getByRole("heading", { name: "Discover Sources" }).waitFor();
    await page.waitForLoadState("networkidle");
    await fits(page, "discovery");
    await h.screenshot(page, "registries-discovery-375");
    await page.context().close();
  });

  it("registers a registry served from a folder, refreshes it and reads the result, the freshness and the history", async () => {
    const page = await consolePage("/settings/source-registries?new=1");
    const form = page.getByRole("form", { name: "Add a registry" });
    await form.getByLabel("Display name").fill("Folder registry");
    await form.getByLabel("Index URL").fill(registry.indexUrl);
    await form.getByLabel(/Allow private network addresses/).check();
    await form.getByRole("button", { name: "Add registry" }).click();
    await page.waitForURL(/registration=folder-registry/, { waitUntil: "commit" });
    const detail = page.locator('[data-registration-detail="folder-registry"]');
    await detail.getByRole("button", { name: "Refresh now" }).click();
    const note = detail.locator('[data-note="refresh"]');
    await note.waitFor({ timeout: 20_000 });
    assert.match(await note.innerText(), /^Refreshed: index sha256:[0-9a-f]{12}/);
    await h.waitFor(async () => (await detail.locator("[data-freshness]").first().getAttribute("data-freshness")) === "fresh", { message: "the registration to be fresh" });
    const history = detail.getByRole("table", { name: "Refresh history" });
    const row = history.locator('tr[data-outcome="succeeded"]').first();
    await row.waitFor();
    assert.match(await row.innerText(), /Manual/);
    assert.match(await row.innerText(), /sha256:[0-9a-f]{12}/);
    await h.screenshot(page, "registries-refreshed-1280");
    await noViolations(page, "a refreshed registration");
    await page.context().close();
  });

  it("finds a Pack published to the folder in discovery after a refresh, grouped by Source and version with its trust", async () => {
    // A Pack composed from the workspace's own Agent goes into the registry's folder.
    await h.waitFor(async () => (await call("GET", "/api/modelprofiles/deterministic-builtin")).status === 200, { timeout: 60_000, message: "the demo ModelProfile" });
    const agent = await call("POST", "/api/agents", { apiVersion: "platform/v1", kind: "Agent", metadata: { name: "greeter" }, definition: { displayName: "Greeter", instructions: "@respond Hello", modelProfile: { name: "deterministic-builtin" } } });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    const project = await call("POST", "/api/pack-projects", { publisher: "acme", name: "greetings", version: "1.0.0", displayName: "Greetings", description: "Says hello", selection: ["Agent/greeter"] });
    assert.equal(project.status, 201, JSON.stringify(project.body));
    const zip = await fetch(`${platform.apiUrl}${project.body.archiveUrl}`, { headers: { Cookie: `platform-session=${session}` } });
    fs.writeFileSync(path.join(registry.dir, "greetings-1.0.0.zip"), Buffer.from(await zip.arrayBuffer()));

    const page = await consolePage("/settings/source-registries?registration=folder-registry");
    const detail = page.locator('[data-registration-detail="folder-registry"]');
    await detail.getByRole("button", { name: "Refresh now" }).click();
    await detail.locator('[data-note="refresh"]').getByText(/^Refreshed/).waitFor({ timeout: 20_000 });

    await page.getByRole("link", { name: "Discover Sources" }).first().click();
    const filters = page.getByRole("search", { name: "Discovery filters" });
    await filters.getByLabel("Search").fill("greetings");
    await filters.getByRole("button", { name: "Search" }).click();
    const group = page.locator('[data-source="acme/greetings"]');
    await group.waitFor();
    const version = group.locator('[data-version="1.0.0"]');
    assert.equal(await version.getAttribute("data-conflict"), "false");
    const observation = version.locator("[data-observation]");
    assert.equal(await observation.count(), 1);
    assert.match(await observation.locator("[data-trust]").innerText(), /untrusted policy/);
    // Nothing is imported from an untrusted registration: the page says so before anyone tries.
    assert.ok(await observation.getByRole("button", { name: "Import greetings 1.0.0" }).isDisabled(), "no import from an untrusted registration");
    assert.match(await observation.locator('[data-state="import-refused"]').innerText(), /Folder registry is untrusted: nothing is imported/);
    assert.match(page.url(), /search=greetings/, "the search is in the address, to link and reload");
    await h.screenshot(page, "registries-discovery-1280");
    await noViolations(page, "discovery with a result");
    await page.context().close();
  });

  it("a person makes the registry trusted, imports the version, previews and installs its Pack, and the Pack page names the registry, at 375 px with reloads mid-flow", async () => {
    const shots = process.env.REGISTRY_SHOTS_DIR; // a developer's folder for this flow's screenshots
    const shot = async (page, name) => {
      const file = await h.screenshot(page, name);
      if (shots) fs.copyFileSync(file, path.join(shots, `${name}.png`));
    };
    const page = await consolePage("/settings/source-registries/discovery?search=greetings", { width: 375, height: 800 });
    const observation = page.locator('[data-source="acme/greetings"] [data-version="1.0.0"] [data-observation]');
    const refused = observation.locator('[data-state="import-refused"]');
    await refused.waitFor();
    // The untrusted registration is changed where the page points.
    await refused.getByRole("link", { name: "Open its settings" }).click();
    const detail = page.locator('[data-registration-detail="folder-registry"]');
    await detail.waitFor();
    await detail.getByRole("radio", { name: /^Trusted:/ }).check();
    await detail.getByRole("button", { name: "Save changes" }).click();
    await detail.getByText("Saved.").waitFor();
    await page.goBack();
    await page.waitForURL(/discovery\?search=greetings/, { waitUntil: "commit" });
    await page.reload(); // what the registration page changed is read again, not remembered
    assert.match(await observation.locator("[data-trust]").innerText(), /^trusted policy/);
    const importButton = observation.getByRole("button", { name: "Import greetings 1.0.0" });
    await h.waitFor(async () => importButton.isEnabled(), { message: "the import to be offered by a trusted registration" });
    assert.equal(await refused.count(), 0, "nothing refuses the import any more");
    await importButton.click();
    const imported = observation.locator('[data-state="imported"]');
    await imported.waitFor({ timeout: 20_000 });
    assert.match(await imported.innerText(), /Imported acme\/greetings 1\.0\.0\. It is immutable/);
    await fits(page, "discovery with the imported version");
    await shot(page, "registries-imported-375");

    // A reload loses nothing: importing the same observation again answers the same Source version.
    await page.reload();
    await importButton.click();
    await imported.waitFor({ timeout: 20_000 });
    assert.match(await imported.innerText(), /already imported: the same Source version is kept/);

    await imported.getByRole("link", { name: "Preview the Pack install" }).click();
    await page.waitForURL(/\/packs\?sourceVersion=/, { waitUntil: "commit" });
    const install = page.locator('[data-install="imported"]');
    await install.getByRole("button", { name: "Install Greetings" }).waitFor({ timeout: 20_000 });
    await page.reload(); // the address carries the imported version: the preview comes back
    await install.getByRole("button", { name: "Install Greetings" }).waitFor({ timeout: 20_000 });
    const previewText = await install.innerText();
    assert.match(previewText, /The Pack of acme\/greetings 1\.0\.0, imported from a Source registry/);
    assert.match(previewText, /greeter/);
    assert.doesNotMatch(previewText, /[{}]"|":\s*"/, "no raw JSON in the preview");
    await fits(page, "the preview of the imported Pack");
    await shot(page, "registries-install-preview-375");
    await noViolations(page, "the preview of an imported Pack");

    await install.getByRole("button", { name: "Install Greetings" }).click();
    await page.waitForURL(/\/packs\/acme\/greetings$/, { waitUntil: "commit" });
    const facts = page.locator(".pack-facts");
    await facts.getByText("Source registry").waitFor({ timeout: 30_000 });
    const factsText = await facts.innerText();
    assert.match(factsText, /Source registry\s+Folder registry|Source registry\s+folder-registry/);
    assert.doesNotMatch(factsText, /sha256:[0-9a-f]{13,}/, "digests are shortened to what people compare");
    await page.reload();
    await facts.getByText("Source registry").waitFor();
    const pack = await call("GET", "/api/packs/acme/greetings");
    assert.equal(pack.status, 200, JSON.stringify(pack.body));
    assert.equal(pack.body.source.kind, "Registry");
    assert.equal(pack.body.source.registry, "folder-registry");
    await fits(page, "the installed Pack's page");
    await shot(page, "registries-installed-pack-375");
    await noViolations(page, "the installed Pack's page");
    await page.setViewportSize({ width: 1280, height: 900 });
    await shot(page, "registries-installed-pack-1280");
    await page.context().close();
  });
});
