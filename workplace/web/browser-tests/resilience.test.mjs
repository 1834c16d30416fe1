// The Workplace when the platform is not there: the API unavailable state, and the return of the
// server after a restart (REST refreshed, and the hub rejoined once the server has one).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import * as h from "./harness.mjs";

let browser;

before(async () => {
  browser = await h.launchBrowser();
});

after(async () => {
  await browser?.close();
});

/** workplaceHome bootstraps platform and opens its Workplace home, signed in, once the demo Entries show. */
async function workplaceHome(platform) {
  const session = await h.bootstrap(platform.apiUrl);
  const page = await h.newPage(browser);
  await h.signIn(page, session);
  await page.goto(platform.workplaceUrl);
  // The demo Entries are published just after the first administrator is created.
  await h.waitFor(async () => (await page.locator("article.entry").count()) === 3, { timeout: 60_000, message: "the three demo Entries" });
  return { session, page };
}

describe("the Workplace without its API", () => {
  it("says that the API is unavailable when nothing answers at the API base URL (rule 17)", async () => {
    const closed = await h.freePort();
    const host = await h.startWorkplace({ name: "workplace-no-api", apiUrl: `http://127.0.0.1:${closed}`, apiAnswers: false });
    try {
      const page = await h.newPage(browser);
      await page.goto(host.url);
      await page.locator('[data-state="api-unavailable"]').getByRole("heading", { name: "The platform API is unavailable" }).waitFor();
      await page.getByRole("button", { name: "Try again" }).waitFor();
      await h.screenshot(page, "workplace-api-unavailable-1280");
      assert.deepEqual(await h.axeViolations(page), []);
      await page.context().close();
    } finally {
      await host.stop();
    }
  });

  it("recovers after the server restarts: the unavailable API is shown, then the page refreshes and works again", async () => {
    const platform = await h.startPlatform({ name: "restart-suite", httpPort: await h.freePort() });
    try {
      const { session, page } = await workplaceHome(platform);
      const hub = await h.hubAvailable(platform.apiUrl, session);
      if (hub) await page.locator(".live-connected").waitFor();

      await platform.serve.stop();
      await page.getByRole("button", { name: "Start Quick answer" }).click();
      const form = page.getByRole("form", { name: "Quick answer" });
      await form.getByRole("textbox", { name: "Your question" }).fill("Are you back?");
      await form.getByRole("button", { name: "Send" }).click();
      await page.locator('.banner[data-state="api-unavailable"]').waitFor();
      await form.locator('[data-state="failure"]').waitFor();
      if (hub) await page.locator(".live-connected").waitFor({ state: "detached" });

      await platform.restart();
      const banner = page.locator('.banner[data-state="api-unavailable"]');
      if (hub) {
        // The hub client reconnects by itself, rejoins the workspace and refreshes over REST,
        // which clears the unavailable API without the user asking.
        await page.locator(".live-connected").waitFor({ timeout: 30_000 });
        await banner.waitFor({ state: "detached", timeout: 20_000 });
      } else {
        await banner.getByRole("button", { name: "Try again" }).click();
        await banner.waitFor({ state: "detached" });
      }
      await form.getByRole("button", { name: "Send" }).click();
      await page.locator("section.conversation .message.kind-reply", { hasText: "Are you back?" }).waitFor({ timeout: 20_000 });
      await page.context().close();
    } finally {
      await platform.stop();
    }
  });

  it("a question answered while the server was down says nothing was sent, until the API answers again", async () => {
    const platform = await h.startPlatform({ name: "restart-question-suite", httpPort: await h.freePort() });
    try {
      const { session, page } = await workplaceHome(platform);
      await page.getByRole("button", { name: "Start Guided request" }).click();
      const form = page.getByRole("form", { name: "Guided request" });
      await form.getByRole("textbox", { name: "What do you need?" }).fill("A note to the team");
      await form.getByRole("button", { name: "Send" }).click();
      const conversation = page.locator("section.conversation");
      await conversation.getByRole("button", { name: "Formal" }).waitFor({ timeout: 20_000 });

      await platform.serve.stop();
      await conversation.getByRole("button", { name: "Formal" }).click();
      const unsent = conversation.locator('[data-state="api-unavailable"]');
      await unsent.getByText("nothing was sent").waitFor();

      await platform.restart();
      const banner = page.locator('.banner[data-state="api-unavailable"]');
      if (await h.hubAvailable(platform.apiUrl, session)) await banner.waitFor({ state: "detached", timeout: 30_000 });
      else await banner.getByRole("button", { name: "Try again" }).click();
      await unsent.waitFor({ state: "detached", timeout: 20_000 });
      await h.screenshot(page, "workplace-question-after-restart");
      await conversation.getByRole("button", { name: "Formal" }).click();
      await conversation.locator(".message.role-user", { hasText: "Formal" }).waitFor({ timeout: 20_000 });
      assert.equal(await unsent.count(), 0);
      await page.context().close();
    } finally {
      await platform.stop();
    }
  });
});
