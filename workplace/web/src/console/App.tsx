import { useCallback, useEffect, useState, type ReactNode } from "react";
import { ApiError, get, onUnauthenticated, post } from "../shared/api";
import { Link, match, useLocation } from "../shared/router";
import { applyTheme } from "../shared/theme";
import type { IdentityContext, Items, Preferences } from "../shared/types";
import { Cleanup } from "./Cleanup";
import { EntryDetail, Entries } from "./Entries";
import { Composer } from "./Composer";
import { Home } from "./Home";
import { PackDetail, Packs } from "./Packs";
import { RunDetail } from "./RunDetail";
import { Access, AuditLog, MemberDetail, Members, Profile, Workspaces } from "./Settings";
import { Discovery } from "./Discovery";
import { SourceRegistries } from "./SourceRegistries";
import { Tasks } from "./Tasks";
import { Usage } from "./Usage";
import { TriggerDetail, TriggerEditor, Triggers } from "./Triggers";
import favicon from "../shared/favicon.svg";

export interface ConsoleEnv {
  context: IdentityContext;
  workplaceUrl: string;
  can: (permission: string) => boolean;
  reload: () => void;
}

interface Workspace {
  id: string;
  name: string;
  displayName: string;
}

/** The navigation, by what an operator is after; account pages are the server's (plain links). */
const nav: { group: string; links: { href: string; label: string; server?: boolean }[] }[] = [
  { group: "Work", links: [{ href: "/", label: "Home" }, { href: "/tasks", label: "Tasks" }, { href: "/usage", label: "Usage" }] },
  { group: "Automation", links: [{ href: "/triggers", label: "Triggers" }, { href: "/cleanup", label: "Cleanup" }] },
  { group: "Catalog", links: [{ href: "/entries", label: "Entries" }, { href: "/packs", label: "Packs" }, { href: "/packs/compose", label: "Pack composer" }] },
  {
    group: "Organization",
    links: [
      { href: "/settings/organization/workspaces", label: "Workspaces" },
      { href: "/settings/organization/members", label: "Members" },
      { href: "/settings/organization/access", label: "Access" },
      { href: "/settings/organization/security-audit", label: "Security audit" },
    ],
  },
  {
    group: "Instance",
    links: [
      { href: "/settings/source-registries", label: "Source registries" },
      { href: "/settings/source-registries/discovery", label: "Discover Sources" },
    ],
  },
  {
    group: "Account",
    links: [
      { href: "/settings/profile", label: "Profile" },
      { href: "/account/security", label: "Password and sessions", server: true },
      { href: "/account/pat", label: "Access tokens", server: true },
    ],
  },
];

/** signOut ends the session in one click (the API refuses another site's request) and comes back here, which asks for sign-in again. */
export async function signOut() {
  const here = window.location.pathname + window.location.search;
  try {
    await post("/api/auth/logout");
    window.location.assign(`/login?returnUrl=${encodeURIComponent(here)}`);
  } catch {
    // The server's own sign-out page says what went wrong.
    window.location.assign(`/logout?returnUrl=${encodeURIComponent(here)}`);
  }
}

/** signIn goes to the server's sign-in page, which comes back to this page. */
function signIn() {
  window.location.assign(`/login?returnUrl=${encodeURIComponent(window.location.pathname + window.location.search)}`);
}

/** The in-app page for a path the Console does not have. */
export function NotFound({ path }: { path: string }) {
  return (
    <section className="card not-found" data-state="not-found">
      <h1>Page not found</h1>
      <p>
        The Console has no page at <code>{path}</code>. It may have moved, or the link is mistyped.
      </p>
      <p>
        <Link href="/">Back to the Console home</Link>
      </p>
    </section>
  );
}

export function App() {
  const loc = useLocation();
  const [env, setEnv] = useState<ConsoleEnv>();
  const [error, setError] = useState<string>();
  const [workspaces, setWorkspaces] = useState<Workspace[]>([]);
  const [menuOpen, setMenuOpen] = useState(false);

  const load = useCallback(async () => {
    try {
      const [context, cfg] = await Promise.all([get<IdentityContext>("/api/identity/context"), get<{ workplaceUrl: string }>("/console/config.json")]);
      const perms = new Set(context.permissions);
      setEnv({ context, workplaceUrl: cfg.workplaceUrl, can: (p) => perms.has(p), reload: () => void load() });
      setError(undefined);
      get<Preferences>("/api/identity/preferences").then((p) => applyTheme(p.theme), () => undefined);
      get<Items<Workspace>>("/api/identity/workspaces").then((l) => setWorkspaces(l.items), () => setWorkspaces([]));
    } catch (e) {
      if (e instanceof ApiError && e.unauthenticated) return; // onUnauthenticated goes to sign in
      setError(e instanceof ApiError ? e.message : String(e));
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  // A session that ends while the Console is open (signed out in another tab, expired, revoked):
  // the next refused read goes to sign in, and back to this page.
  useEffect(() => {
    const off = onUnauthenticated(() => {
      off();
      signIn();
    });
    return off;
  }, []);

  if (error)
    return (
      <main className="screen" data-state="api-unavailable">
        <div className="screen-card">
          <h1>The Console cannot load</h1>
          <p role="alert">{error}</p>
          <button type="button" onClick={() => void load()}>Try again</button>
        </div>
      </main>
    );
  if (!env)
    return (
      <main className="screen" data-state="loading">
        <p role="status">Loading the Console…</p>
      </main>
    );

  const select = async (ws: string) => {
    await post("/api/identity/context/workspace", { workspace: ws });
    void load();
  };

  let page: ReactNode;
  let m: Record<string, string> | null;
  const p = loc.path.replace(/\/+$/, "") || "/";
  if (p === "/") page = <Home env={env} />;
  else if (p === "/tasks") page = <Tasks env={env} />;
  else if (p === "/usage") page = <Usage env={env} from={loc.query.get("from") ?? undefined} to={loc.query.get("to") ?? undefined} />;
  else if (p === "/triggers") page = <Triggers env={env} />;
  // "-" is no Trigger name, so the editor's path never shadows a Trigger's.
  else if (p === "/triggers/-/new") page = <TriggerEditor env={env} />;
  else if ((m = match("/triggers/:name/edit", p))) page = <TriggerEditor key={m.name} env={env} name={m.name} />;
  else if ((m = match("/triggers/:name", p))) page = <TriggerDetail key={m.name} env={env} name={m.name} />;
  else if (p === "/cleanup") page = <Cleanup env={env} />;
  else if (p === "/entries") page = <Entries env={env} />;
  else if ((m = match("/entries/:name", p))) page = <EntryDetail env={env} name={m.name} namespace={loc.query.get("namespace") ?? undefined} />;
  else if (p === "/packs") page = <Packs env={env} />;
  else if (p === "/packs/compose") page = <Composer env={env} />;
  else if ((m = match("/packs/:publisher/:name", p))) page = <PackDetail key={`${m.publisher}.${m.name}`} env={env} publisher={m.publisher} name={m.name} />;
  else if ((m = match("/runs/:runId", p))) page = <RunDetail env={env} runId={m.runId} />;
  else if (p === "/settings/profile") page = <Profile env={env} />;
  else if (p === "/settings/organization/workspaces") page = <Workspaces env={env} onSelect={select} />;
  else if (p === "/settings/organization/members") page = <Members env={env} />;
  else if ((m = match("/settings/organization/members/:principalId", p))) page = <MemberDetail env={env} principalId={m.principalId} />;
  else if (p === "/settings/organization/access") page = <Access env={env} />;
  else if (p === "/settings/organization/security-audit") page = <AuditLog env={env} />;
  else if (p === "/settings/source-registries") page = <SourceRegistries env={env} />;
  else if (p === "/settings/source-registries/discovery") page = <Discovery env={env} />;
  else page = <NotFound path={loc.path} />;

  // The most specific link is the current one (/packs/compose is the composer's, not the Packs').
  const hrefs = nav.flatMap((g) => g.links.map((l) => l.href));
  const under = (href: string) => (href === "/" ? p === "/" : p === href || p.startsWith(href + "/"));
  const current = (href: string) => under(href) && !hrefs.some((h) => h.length > href.length && h.startsWith(href + "/") && under(h));
  return (
    <div className="console" data-menu={menuOpen ? "open" : "closed"}>
      <a className="skip" href="#main">Skip to content</a>
      <header className="console-bar">
        <button type="button" className="menu-toggle" aria-expanded={menuOpen} aria-controls="console-nav" onClick={() => setMenuOpen((o) => !o)}>
          Menu
        </button>
        <Link href="/" className="brand">
          <img src={favicon} alt="" width="22" height="22" />
          Console
        </Link>
        <label className="ws-switch">
          <span className="visually-hidden">Workspace</span>
          <select id="ws-select" aria-label="Workspace" value={env.context.workspace.id} onChange={(e) => void select(e.target.value)}>
            {(workspaces.some((w) => w.id === env.context.workspace.id) ? workspaces : [{ id: env.context.workspace.id, name: env.context.workspace.name, displayName: env.context.workspace.displayName ?? "" }, ...workspaces]).map((w) => (
              <option key={w.id} value={w.id}>
                {w.displayName || w.name}
              </option>
            ))}
          </select>
        </label>
        <span className="spacer" />
        <a href={env.workplaceUrl} className="to-workplace">Workplace</a>
        <span className="who">{env.context.principal.displayName}</span>
        <button type="button" onClick={() => void signOut()}>Sign out</button>
      </header>
      <nav className="side" id="console-nav" aria-label="Console">
        {nav.map((g) => (
          <div key={g.group} className="nav-group">
            <h2>{g.group}</h2>
            <ul>
              {g.links.map((l) => (
                <li key={l.href}>
                  {l.server ? (
                    <a href={l.href}>{l.label}</a>
                  ) : (
                    <Link href={l.href} aria-current={current(l.href) ? "page" : undefined} onClick={() => setMenuOpen(false)}>
                      {l.label}
                    </Link>
                  )}
                </li>
              ))}
            </ul>
          </div>
        ))}
      </nav>
      <main id="main">{page}</main>
    </div>
  );
}
