import { useCallback, useEffect, useState, type ReactNode } from "react";
import { ApiError, get, post } from "../shared/api";
import { Link, match, useLocation } from "../shared/router";
import { applyTheme } from "../shared/theme";
import type { IdentityContext, Items, Preferences } from "../shared/types";
import { Cleanup } from "./Cleanup";
import { EntryDetail, Entries } from "./Entries";
import { Home } from "./Home";
import { RunDetail } from "./RunDetail";
import { Access, AuditLog, MemberDetail, Members, Profile, Workspaces } from "./Settings";
import { Tasks } from "./Tasks";
import { TriggerDetail, TriggerEditor, Triggers } from "./Triggers";

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

const nav: [string, string][] = [
  ["/tasks", "Tasks"],
  ["/triggers", "Triggers"],
  ["/cleanup", "Cleanup"],
  ["/entries", "Entries"],
  ["/settings/profile", "Profile"],
  ["/settings/organization/workspaces", "Workspaces"],
  ["/settings/organization/members", "Members"],
  ["/settings/organization/access", "Access"],
  ["/settings/organization/security-audit", "Security audit"],
];

export function App() {
  const loc = useLocation();
  const [env, setEnv] = useState<ConsoleEnv>();
  const [error, setError] = useState<string>();
  const [workspaces, setWorkspaces] = useState<Workspace[]>([]);

  const load = useCallback(async () => {
    try {
      const [context, cfg] = await Promise.all([get<IdentityContext>("/api/identity/context"), get<{ workplaceUrl: string }>("/console/config.json")]);
      const perms = new Set(context.permissions);
      setEnv({ context, workplaceUrl: cfg.workplaceUrl, can: (p) => perms.has(p), reload: () => void load() });
      setError(undefined);
      get<Preferences>("/api/identity/preferences").then((p) => applyTheme(p.theme), () => undefined);
      get<Items<Workspace>>("/api/identity/workspaces").then((l) => setWorkspaces(l.items), () => setWorkspaces([]));
    } catch (e) {
      if (e instanceof ApiError && e.unauthenticated) {
        window.location.assign(`/login?returnUrl=${encodeURIComponent(window.location.pathname + window.location.search)}`);
        return;
      }
      setError(e instanceof ApiError ? e.message : String(e));
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

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
  else if (p === "/triggers") page = <Triggers env={env} />;
  // "-" is no Trigger name, so the editor's path never shadows a Trigger's.
  else if (p === "/triggers/-/new") page = <TriggerEditor env={env} />;
  else if ((m = match("/triggers/:name/edit", p))) page = <TriggerEditor key={m.name} env={env} name={m.name} />;
  else if ((m = match("/triggers/:name", p))) page = <TriggerDetail key={m.name} env={env} name={m.name} />;
  else if (p === "/cleanup") page = <Cleanup env={env} />;
  else if (p === "/entries") page = <Entries env={env} />;
  else if ((m = match("/entries/:name", p))) page = <EntryDetail env={env} name={m.name} namespace={loc.query.get("namespace") ?? undefined} />;
  else if ((m = match("/runs/:runId", p))) page = <RunDetail env={env} runId={m.runId} />;
  else if (p === "/settings/profile") page = <Profile env={env} />;
  else if (p === "/settings/organization/workspaces") page = <Workspaces env={env} onSelect={select} />;
  else if (p === "/settings/organization/members") page = <Members env={env} />;
  else if ((m = match("/settings/organization/members/:principalId", p))) page = <MemberDetail env={env} principalId={m.principalId} />;
  else if (p === "/settings/organization/access") page = <Access env={env} />;
  else if (p === "/settings/organization/security-audit") page = <AuditLog env={env} />;
  else page = <p>This page does not exist.</p>;

  return (
    <div className="console">
      <a className="skip" href="#main">Skip to content</a>
      <nav className="side" aria-label="Console">
        <p>
          <Link href="/" className="brand"><strong>Console</strong></Link>
        </p>
        <ul>
          {nav.map(([href, label]) => (
            <li key={href}>
              <Link href={href} aria-current={p === href || p.startsWith(href + "/") ? "page" : undefined}>{label}</Link>
            </li>
          ))}
        </ul>
        <label htmlFor="ws-select">Workspace</label>
        {workspaces.length > 1 ? (
          <select id="ws-select" value={env.context.workspace.id} onChange={(e) => void select(e.target.value)}>
            {workspaces.map((w) => (
              <option key={w.id} value={w.id}>{w.displayName || w.name}</option>
            ))}
          </select>
        ) : (
          <p id="ws-select">{env.context.workspace.displayName || env.context.workspace.name}</p>
        )}
        <p className="muted">Signed in as {env.context.principal.displayName}</p>
        <p>
          <a href={env.workplaceUrl}>Open the Workplace</a>
        </p>
        <p>
          <a href="/logout">Sign out</a>
        </p>
      </nav>
      <main id="main">{page}</main>
    </div>
  );
}
