// What the browser tests share: the real `platform` binary started on free ports in a temporary
// data directory, the Workplace host in front of it, Debian's Chromium driven by playwright-core,
// an axe-core check, and screenshots a developer can open (browser-tests/output/).
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "../../..");
export const binary = process.env.PLATFORM_BINARY ?? path.join(repoRoot, "bin/platform");
export const outputDir = path.join(here, "output");
export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
fs.mkdirSync(outputDir, { recursive: true });

export const admin = { username: "admin", password: "Correct-horse-battery-1", displayName: "Ada Admin", tenantName: "acme", workspaceName: "default" };

// handedOut are the ports freePort gave: a port given and not bound yet is free to the kernel too,
// which would hand it out again (the Workplace's port became a server's kube port that way).
const handedOut = new Set();

export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = net.createServer();
      s.unref();
      s.on("error", reject);
      s.listen(0, "127.0.0.1", () => {
        const { port } = s.address();
        s.close(() => resolve(port));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

/** run starts the binary with args and resolves with the first match of ready in its output. */
function run(name, args, env, ready, timeoutMs = 90_000) {
  const log = fs.createWriteStream(path.join(outputDir, `${name}.log`), { flags: "a" });
  const child = spawn(binary, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const found = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} not ready after ${timeoutMs} ms:\n${output.slice(-2000)}`)), timeoutMs);
    const onData = (chunk) => {
      const text = chunk.toString();
      log.write(text);
      output += text;
      const m = output.match(ready);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${output.slice(-2000)}`));
    });
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const t = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(t);
    log.end();
  };
  return { child, found, stop, exited };
}

/**
 * startPlatform runs `platform serve` (and, unless workplace is false, `platform workplace` in
 * front of it). httpPort and dataDir let a test restart the same server.
 */
export async function startPlatform({ name = "platform", dataDir, httpPort, workplacePort, workplace = true, env = {} } = {}) {
  // A data directory made here is the test's own: stop removes it (each one holds about 60 MB).
  const ownDataDir = dataDir === undefined;
  dataDir ??= fs.mkdtempSync(path.join(os.tmpdir(), "platform-browser-"));
  const portGiven = workplacePort !== undefined;
  let p;
  for (let attempt = 0; ; attempt++) {
    const port = portGiven ? workplacePort : await freePort();
    const workplaceUrl = `http://127.0.0.1:${port}/`;
    const serve = await startServe({ name, dataDir, httpPort, workplaceUrl, env });
    const apiUrl = (await serve.found)[1];
    p = { dataDir, apiUrl, httpPort: Number(new URL(apiUrl).port), workplacePort: port, workplaceUrl, serve, host: undefined };
    if (!workplace) break;
    try {
      p.host = await startWorkplace({ name: `${name}-workplace`, apiUrl, port });
      break;
    } catch (e) {
      await serve.stop();
      // The server, started after the port was found free, may hold it by then: it learns the
      // Workplace's address at start, so both start again on another port.
      if (!portGiven && attempt < 2 && /address already in use/.test(e.message)) continue;
      if (ownDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
      throw e;
    }
  }
  const { workplaceUrl } = p;
  p.stop = async () => {
    await p.host?.stop();
    await p.serve.stop();
    if (ownDataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  };
  // restart starts the server again on the same port and data, as after a crash or an upgrade.
  p.restart = async () => {
    await p.serve.stop();
    p.serve = await startServe({ name, dataDir, httpPort: p.httpPort, workplaceUrl, env });
  };
  return p;
}

async function startServe({ name, dataDir, httpPort, workplaceUrl, env }) {
  let serve;
  for (let attempt = 0; ; attempt++) {
    const kubePort = await freePort();
    serve = run(
      name,
      ["serve", "--data-dir", dataDir, "--kube-addr", `127.0.0.1:${kubePort}`, "--http-addr", `127.0.0.1:${httpPort ?? 0}`],
      { PLATFORM_ENVIRONMENT: "Testing", Platform__Workplace__Url: workplaceUrl, ...env },
      /service API ready at (http:\/\/\S+)/,
    );
    try {
      await serve.found;
      break;
    } catch (e) {
      // Another process may take a free port between the check and the bind.
      if (attempt < 2 && /address already in use/.test(e.message)) continue;
      throw e;
    }
  }
  return serve;
}

/**
 * startWorkplace runs the Workplace host. It prints its ready line once the API it relays to
 * answers too; with apiAnswers false (no platform behind it) the host is ready once its own
 * /config.json answers.
 */
export async function startWorkplace({ name = "workplace", apiUrl, port, args = [], apiAnswers = true, env = {} }) {
  port ??= await freePort();
  const host = run(name, ["workplace", "--addr", `127.0.0.1:${port}`, "--api-base-url", `${apiUrl}/`, ...args], env, /Workplace ready at (http:\/\/\S+)/, 20_000);
  if (apiAnswers) return { url: (await host.found)[1], stop: host.stop };
  host.found.catch(() => {}); // the line never comes
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/config.json`)).ok, { timeout: 20_000, message: `${name}'s /config.json` });
  return { url, stop: host.stop };
}

let loggedVersion = false;

export async function launchBrowser() {
  if (!fs.existsSync(chromiumPath)) throw new Error(`no Chromium at ${chromiumPath}: install Debian's chromium package (apt-get install chromium) or set CHROMIUM_PATH`);
  if (!fs.existsSync(binary)) throw new Error(`no platform binary at ${binary}: run \`make build\` (or set PLATFORM_BINARY)`);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    // The closed network of CI machines refuses Chromium's own background connections.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  if (!loggedVersion) {
    console.log(`# browser: Chromium ${browser.version()} (${chromiumPath}), playwright-core ${createRequire(import.meta.url)("playwright-core/package.json").version}`);
    loggedVersion = true;
  }
  return browser;
}

/** newPage opens a page whose uncaught errors fail the test that reads page.errors. */
export async function newPage(browser, { width = 1280, height = 900, ...opts } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, ...opts });
  const page = await context.newPage();
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(e.message));
  return page;
}

export async function screenshot(page, name) {
  const file = path.join(outputDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** bootstrap creates the first administrator over the API and returns its session cookie. */
export async function bootstrap(apiUrl) {
  const resp = await fetch(`${apiUrl}/api/auth/bootstrap`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(admin) });
  if (resp.status !== 201 && resp.status !== 200) throw new Error(`bootstrap: ${resp.status} ${await resp.text()}`);
  const cookie = resp.headers.getSetCookie().find((c) => c.startsWith("platform-session="));
  return cookie.split(";")[0].split("=")[1];
}

/** signIn puts the session cookie in the browser context (cookies are per host, shared by both ports). */
export async function signIn(page, session) {
  await page.context().addCookies([{ name: "platform-session", value: session, domain: "127.0.0.1", path: "/", httpOnly: true, sameSite: "Lax" }]);
}

/** api calls the service API as the signed-in administrator. */
export async function api(apiUrl, session, method, p, body, headers = {}) {
  const resp = await fetch(`${apiUrl}${p}`, {
    method,
    headers: { Cookie: `platform-session=${session}`, ...(body ? { "Content-Type": "application/json" } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await resp.text();
  let data;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = text;
  }
  return { status: resp.status, headers: resp.headers, body: data };
}

/**
 * replaceFresh is another client's change: it reads path, replaces it with change(body) under the
 * ETag it read, and reads again when a controller's status write moved the ETag in between, as a
 * client that keeps its writes conditional does.
 */
export async function replaceFresh(call, p, change) {
  for (let attempt = 1; ; attempt++) {
    const current = await call("GET", p);
    if (current.status !== 200) return current;
    const written = await call("PUT", p, change(current.body), { "If-Match": current.headers.get("etag") });
    if (written.status !== 412 || attempt === 5) return written;
  }
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axeViolations runs axe-core in the page and returns its serious and critical violations. */
export async function axeViolations(page) {
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ")) }));
  });
  return result.filter((v) => v.impact === "serious" || v.impact === "critical");
}

export async function waitFor(check, { timeout = 15_000, interval = 200, message = "condition" } = {}) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, interval));
  }
  throw new Error(`timed out waiting for ${message}${last ? `: ${last.message}` : ""}`);
}

/** hubAvailable tells whether the server has the real-time hub yet (its negotiate answers). */
export async function hubAvailable(apiUrl, session) {
  const r = await fetch(`${apiUrl}/hubs/workplace/negotiate?negotiateVersion=1`, { method: "POST", headers: { Cookie: `platform-session=${session}` } });
  return r.status === 200;
}
