import { useCallback, useEffect, useState } from "react";
import { ApiError, enc, get, onUnauthenticated } from "../shared/api";
import { match, navigate, useLocation } from "../shared/router";
import { applyTheme } from "../shared/theme";
import type { Dashboard, IdentityContext, Items, Preferences } from "../shared/types";
import { Screen } from "./components";
import { bearerToken, setBearer } from "./session";
import { Workplace } from "./Workplace";

export interface HostConfig {
  authentication: "session" | "bearer";
  apiBaseUrl: string;
  hubPath: string;
  /** True on the Development host only: automatic Results show in a collapsed diagnostic control. */
  diagnostics?: boolean;
}

/** The server's page for path, on the API origin, coming back to this Workplace through /workplace/... */
export function serverPage(cfg: HostConfig, page: "login" | "bootstrap" | "logout", back?: string): string {
  const url = new URL(page, cfg.apiBaseUrl);
  if (back !== undefined) url.searchParams.set("returnUrl", "/workplace" + back);
  return url.toString();
}

type Phase =
  | { kind: "loading" }
  | { kind: "unavailable"; detail: string }
  | { kind: "signin"; initialized: boolean }
  | { kind: "token"; error?: string }
  | { kind: "ready"; context: IdentityContext }
  | { kind: "notfound"; detail: string };

export function App() {
  const loc = useLocation();
  const [cfg, setCfg] = useState<HostConfig>();
  const [phase, setPhase] = useState<Phase>({ kind: "loading" });
  const routeWorkspace = match("/w/:workspace", loc.path) ?? match("/w/:workspace/d/:dashboard", loc.path) ?? match("/w/:workspace/tasks/:task", loc.path) ?? match("/w/:workspace/inbox", loc.path);
  const workspace = routeWorkspace?.workspace;

  const load = useCallback(async () => {
    setPhase({ kind: "loading" });
    let config = cfg;
    try {
      if (!config) {
        config = await get<HostConfig>("/config.json");
        setCfg(config);
      }
      if (config.authentication === "bearer" && !bearerToken()) {
        setPhase({ kind: "token" });
        return;
      }
      const headers: Record<string, string> = workspace ? { "X-Platform-Workspace": workspace } : {};
      const context = await get<IdentityContext>("/api/identity/context", headers);
      if (context.credential === "session") {
        get<Preferences>("/api/identity/preferences").then((p) => applyTheme(p.theme), () => applyTheme("System"));
      }
      setPhase({ kind: "ready", context });
    } catch (e) {
      const err = e as ApiError;
      if (err instanceof ApiError && err.unauthenticated && config) {
        if (config.authentication === "bearer") {
          setBearer(undefined);
          setPhase({ kind: "token", error: "The token was refused. Check it and try again." });
          return;
        }
        const state = await get<{ initialized: boolean }>("/api/auth/bootstrap").catch(() => ({ initialized: true }));
        setPhase({ kind: "signin", initialized: state.initialized });
        return;
      }
      if (err instanceof ApiError && err.status === 404) {
        setPhase({ kind: "notfound", detail: `The workspace “${workspace}” does not exist or is not yours.` });
        return;
      }
      setPhase({ kind: "unavailable", detail: err instanceof ApiError ? err.message : String(e) });
    }
  }, [cfg, workspace]);

  useEffect(() => {
    void load();
  }, [load]);

  // A session that ends while the app is open (signed out in another tab, expired, revoked):
  // the next refused read asks to sign in again, coming back to this page.
  const ready = phase.kind === "ready";
  useEffect(() => {
    if (!ready) return;
    const off = onUnauthenticated(() => {
      off();
      void load();
    });
    return off;
  }, [ready, load]);

  if (phase.kind === "loading") return <Screen title="Workplace" busy>Loading your workplace…</Screen>;
  if (phase.kind === "unavailable")
    return (
      <Screen title="The platform API is unavailable" state="api-unavailable">
        <p>{phase.detail}</p>
        <p>Your work is safe on the server; this page could not reach it. Try again in a moment.</p>
        <button type="button" onClick={() => void load()}>Try again</button>
      </Screen>
    );
  if (phase.kind === "notfound")
    return (
      <Screen title="Workspace not found" state="not-found">
        <p>{phase.detail}</p>
        <a href="/">Go to your workspace</a>
      </Screen>
    );
  if (phase.kind === "signin" && cfg) {
    const back = loc.path + window.location.search;
    return (
      <Screen title={phase.initialized ? "Sign in to the Workplace" : "Welcome"} state="signed-out">
        {phase.initialized ? (
          <>
            <p>Sign in with your platform account to delegate work.</p>
            <a className="button primary" href={serverPage(cfg, "login", back)}>Sign in</a>
          </>
        ) : (
          <>
            <p>This platform has no administrator yet. Create the first one, with your organization and its first workspace.</p>
            <a className="button primary" href={serverPage(cfg, "bootstrap", back)}>Create the first administrator</a>
          </>
        )}
      </Screen>
    );
  }
  if (phase.kind === "token" && cfg) return <TokenSignIn cfg={cfg} error={phase.error} onToken={() => void load()} />;
  if (phase.kind !== "ready" || !cfg) return null;
  return <Routes cfg={cfg} context={phase.context} />;
}

function TokenSignIn({ cfg, error, onToken }: { cfg: HostConfig; error?: string; onToken: () => void }) {
  const [value, setValue] = useState("");
  return (
    <Screen title="Sign in to the Workplace" state="signed-out">
      <p>
        This Workplace is deployed on its own: it signs in with an access token (a personal access token made on the
        platform's <a href={new URL("account/pat", cfg.apiBaseUrl).toString()}>token page</a>, or your organization's access token). It stays in this tab's memory only.
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!value.trim()) return;
          setBearer(value.trim());
          setValue("");
          onToken();
        }}
      >
        <label htmlFor="token">Access token</label>
        <input id="token" type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} required />
        {error && <p role="alert" className="error">{error}</p>}
        <button type="submit" className="primary">Sign in</button>
      </form>
    </Screen>
  );
}

function Routes({ cfg, context }: { cfg: HostConfig; context: IdentityContext }) {
  const loc = useLocation();
  const dash = match("/w/:workspace/d/:dashboard", loc.path);
  const task = match("/w/:workspace/tasks/:task", loc.path);
  const inbox = match("/w/:workspace/inbox", loc.path);
  const [error, setError] = useState<string>();
  const needsResolution = !dash && !task && !inbox;

  useEffect(() => {
    if (!needsResolution) return;
    // `/` and /w/{workspace}: the selected workspace, then its default Dashboard.
    const ws = match("/w/:workspace", loc.path)?.workspace ?? context.workspace.name;
    get<Items<Dashboard>>("/api/dashboards", { "X-Platform-Workspace": ws })
      .then((list) => {
        const chosen = list.items.find((d) => d.definition.isDefault) ?? list.items[0];
        if (!chosen) {
          setError("This workspace has no Dashboard yet.");
          return;
        }
        navigate(`/w/${enc(ws)}/d/${enc(chosen.metadata.name)}${window.location.search}`, true);
      })
      .catch((e: ApiError) => setError(e.message));
  }, [needsResolution, loc.path, context.workspace.name]);

  if (needsResolution)
    return error ? (
      <Screen title="No Dashboard" state="empty">
        <p>{error}</p>
      </Screen>
    ) : (
      <Screen title="Workplace" busy>Opening your Dashboard…</Screen>
    );
  return <Workplace cfg={cfg} context={context} workspace={(dash ?? task ?? inbox)!.workspace} dashboard={dash?.dashboard} taskId={task?.task} inbox={!!inbox} />;
}
