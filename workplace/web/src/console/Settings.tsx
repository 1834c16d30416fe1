import { useCallback, useEffect, useState, type FormEvent } from "react";
import { ApiError, del, enc, get, post, put } from "../shared/api";
import { when } from "../shared/format";
import { Link } from "../shared/router";
import { applyTheme } from "../shared/theme";
import type { Items, Preferences, Theme } from "../shared/types";
import type { ConsoleEnv } from "./App";

const roles = ["Owner", "Admin", "Member", "Viewer"] as const;

interface Workspace {
  id: string;
  name: string;
  displayName: string;
  status: string;
  createdAt: string;
}

interface Membership {
  principalId: string;
  displayName: string;
  kind: string;
  status: string;
  role: string;
  scope: "workspace" | "tenant";
}

interface Member {
  principalId: string;
  displayName: string;
  kind: string;
  status: string;
  roles: { scope: string; workspaceId?: string; workspaceName?: string; role: string }[];
}

interface Account {
  accountId: string;
  principalId: string;
  username: string;
  displayName: string;
  status: string;
  platformAdministrator: boolean;
}

interface AuditEvent {
  id: string;
  occurredAt: string;
  action: string;
  outcome: string;
  actorId?: string;
  targetId?: string;
  reasonCode?: string;
}

/** useLoad reads path, keeping the error of a refusal (403 shows as "you may not see this"). */
function useLoad<T>(path: string | undefined) {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const reload = useCallback(() => {
    if (!path) return;
    get<T>(path).then(
      (d) => {
        setData(d);
        setError(undefined);
      },
      (e: ApiError) => setError(e.status === 403 ? "You are not permitted to see this." : e.message),
    );
  }, [path]);
  useEffect(reload, [reload]);
  return { data, error, reload };
}

function Problem({ error }: { error?: string }) {
  return error ? <p className="state-note error" role="alert">{error}</p> : null;
}

export function Profile({ env }: { env: ConsoleEnv }) {
  const prefs = useLoad<Preferences>("/api/identity/preferences");
  const [saved, setSaved] = useState<string>();
  const [error, setError] = useState<string>();
  const save = async (theme: Theme) => {
    try {
      const p = await put<Preferences>("/api/identity/preferences", { theme });
      applyTheme(p.theme);
      prefs.reload();
      setSaved(`Theme set to ${p.theme}.`);
      setError(undefined);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <>
      <h1>Profile</h1>
      <dl className="card">
        <dt>Name</dt>
        <dd>{env.context.principal.displayName}</dd>
        <dt>Kind</dt>
        <dd>{env.context.principal.kind}</dd>
        <dt>Platform administrator</dt>
        <dd>{env.context.platformAdministrator ? "yes" : "no"}</dd>
      </dl>
      <section className="card" aria-labelledby="theme-h">
        <h2 id="theme-h">Theme</h2>
        <p>The Workplace and the Console follow it, on every device you sign in on.</p>
        <label htmlFor="theme">Theme</label>
        <select id="theme" value={prefs.data?.theme ?? "System"} onChange={(e) => void save(e.target.value as Theme)} disabled={!prefs.data}>
          <option value="System">Same as the system</option>
          <option value="Light">Light</option>
          <option value="Dark">Dark</option>
        </select>
        {saved && <p role="status">{saved}</p>}
        <Problem error={error ?? prefs.error} />
      </section>
      <p>
        <a href="/account/security">Password and sessions</a> · <a href="/account/pat">Personal access tokens</a>
      </p>
    </>
  );
}

export function Workspaces({ env, onSelect }: { env: ConsoleEnv; onSelect: (id: string) => Promise<void> }) {
  const list = useLoad<Items<Workspace>>("/api/identity/workspaces");
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const create = async (e: FormEvent) => {
    e.preventDefault();
    try {
      const w = await post<Workspace>("/api/identity/workspaces", { name, displayName: displayName || undefined });
      setDone(`Workspace ${w.name} created.`);
      setError(undefined);
      setName("");
      setDisplayName("");
      list.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <h1>Workspaces</h1>
      <Problem error={list.error} />
      {list.data && (
        <table aria-label="Workspaces">
          <thead>
            <tr>
              <th scope="col">Workspace</th>
              <th scope="col">Route name</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col"><span className="visually-hidden">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((w) => (
              <tr key={w.id}>
                <td>{w.displayName || w.name}</td>
                <td><code>{w.name}</code></td>
                <td>{w.status}</td>
                <td>{when(w.createdAt)}</td>
                <td>
                  {w.id === env.context.workspace.id ? (
                    <span className="muted">Selected</span>
                  ) : (
                    <button type="button" onClick={() => void onSelect(w.id)}>Select {w.name}</button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {env.can("workspaces/write") && (
        <form className="card" onSubmit={create} aria-labelledby="new-ws-h">
          <h2 id="new-ws-h">New workspace</h2>
          <label htmlFor="ws-name">Route name (lowercase letters, digits and -)</label>
          <input id="ws-name" value={name} onChange={(e) => setName(e.target.value)} required maxLength={63} pattern="[a-z0-9]([a-z0-9-]*[a-z0-9])?" />
          <label htmlFor="ws-display">Display name</label>
          <input id="ws-display" value={displayName} onChange={(e) => setDisplayName(e.target.value)} maxLength={128} />
          <p>
            <button type="submit" className="primary">Create workspace</button>
          </p>
          {done && <p role="status">{done}</p>}
          <Problem error={error} />
        </form>
      )}
    </>
  );
}

const roleSummary = (m: Member) => m.roles.map((r) => (r.scope === "tenant" ? `${r.role} of the organization` : `${r.role} in ${r.workspaceName ?? r.workspaceId}`)).join(", ");

export function Members({ env }: { env: ConsoleEnv }) {
  const list = useLoad<Items<Member>>("/api/identity/members");
  const admins = useLoad<Items<{ principalId: string; displayName: string; active: boolean }>>(env.context.platformAdministrator ? "/api/identity/platform-administrators" : undefined);
  return (
    <>
      <h1>Members</h1>
      <Problem error={list.error} />
      {(admins.data?.items.length ?? 0) > 0 && (
        <section className="card" aria-labelledby="platform-admins-h" data-section="platform-administrators">
          <h2 id="platform-admins-h">Platform administrators</h2>
          <p className="muted">They administer the whole instance and act in every active workspace. By design they hold no membership and no role, so they are not listed as members below.</p>
          <ul className="list">
            {admins.data!.items.map((a) => (
              <li key={a.principalId}>
                <strong>{a.displayName}</strong>
                {a.principalId === env.context.principal.id && <span className="pill">you</span>}
                {!a.active && <span className="pill state-failed">disabled</span>}
              </li>
            ))}
          </ul>
        </section>
      )}
      {list.data && list.data.items.length === 0 && (
        <p className="state-note info" data-state="empty">
          No one holds a role in the organization yet{env.context.platformAdministrator ? " besides the Platform administrators above, who need none" : ""}. Add people on the{" "}
          <Link href="/settings/organization/access">Access</Link> page.
        </p>
      )}
      {list.data && list.data.items.length > 0 && (
        <table aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Kind</th>
              <th scope="col">Status</th>
              <th scope="col">Roles</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((m) => (
              <tr key={m.principalId}>
                <td><Link href={`/settings/organization/members/${enc(m.principalId)}`}>{m.displayName}</Link></td>
                <td>{m.kind}</td>
                <td>{m.status}</td>
                <td>{roleSummary(m)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

export function MemberDetail({ env, principalId }: { env: ConsoleEnv; principalId: string }) {
  const list = useLoad<Items<Member>>("/api/identity/members");
  const workspaces = useLoad<Items<Workspace>>("/api/identity/workspaces");
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const [ws, setWs] = useState("");
  const [role, setRole] = useState<string>("Member");
  const member = list.data?.items.find((m) => m.principalId === principalId);
  const canWrite = env.can("authorization/write");
  const set = async (workspaceId: string, r: string) => {
    try {
      await put(`/api/identity/workspaces/${enc(workspaceId)}/memberships/${enc(principalId)}`, { role: r });
      setDone(`Role set to ${r}.`);
      setError(undefined);
      list.reload();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const remove = async (workspaceId: string) => {
    try {
      await del(`/api/identity/workspaces/${enc(workspaceId)}/memberships/${enc(principalId)}`);
      setDone("Membership removed.");
      setError(undefined);
      list.reload();
    } catch (e) {
      setError((e as Error).message);
    }
  };
  return (
    <>
      <p>
        <Link href="/settings/organization/members">← Members</Link>
      </p>
      <h1>{member?.displayName ?? "Member"}</h1>
      <Problem error={list.error} />
      {list.data && !member && <p className="state-note warn">This Principal is not a member of the organization.</p>}
      {member && (
        <>
          <dl className="card">
            <dt>Kind</dt>
            <dd>{member.kind}</dd>
            <dt>Status</dt>
            <dd>{member.status}</dd>
          </dl>
          <table aria-label="Roles">
            <thead>
              <tr>
                <th scope="col">Scope</th>
                <th scope="col">Role</th>
                <th scope="col"><span className="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {member.roles.map((r) => (
                <tr key={`${r.scope}/${r.workspaceId ?? ""}`}>
                  <td>{r.scope === "tenant" ? "Organization (inherited by its workspaces)" : `Workspace ${r.workspaceName ?? r.workspaceId}`}</td>
                  <td>
                    {r.scope === "workspace" && canWrite ? (
                      <select aria-label={`Role in ${r.workspaceName}`} value={r.role} onChange={(e) => void set(r.workspaceId!, e.target.value)}>
                        {roles.map((x) => (
                          <option key={x}>{x}</option>
                        ))}
                      </select>
                    ) : (
                      r.role
                    )}
                  </td>
                  <td>{r.scope === "workspace" && canWrite && <button type="button" className="danger" onClick={() => void remove(r.workspaceId!)}>Remove from {r.workspaceName}</button>}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {canWrite && workspaces.data && (
            <form
              className="card"
              onSubmit={(e) => {
                e.preventDefault();
                if (ws) void set(ws, role);
              }}
            >
              <h2>Add a role</h2>
              <label htmlFor="m-ws">Workspace</label>
              <select id="m-ws" value={ws} onChange={(e) => setWs(e.target.value)} required>
                <option value="">Choose…</option>
                {workspaces.data.items.map((w) => (
                  <option key={w.id} value={w.id}>{w.displayName || w.name}</option>
                ))}
              </select>
              <label htmlFor="m-role">Role</label>
              <select id="m-role" value={role} onChange={(e) => setRole(e.target.value)}>
                {roles.map((x) => (
                  <option key={x}>{x}</option>
                ))}
              </select>
              <p>
                <button type="submit" className="primary">Set role</button>
              </p>
            </form>
          )}
          {done && <p role="status">{done}</p>}
          <Problem error={error} />
        </>
      )}
    </>
  );
}

export function Access({ env }: { env: ConsoleEnv }) {
  const ws = env.context.workspace;
  const memberships = useLoad<Items<Membership>>(`/api/identity/workspaces/${enc(ws.id)}/memberships`);
  const admins = useLoad<Items<{ principalId: string; displayName: string; status: string; active: boolean; grantedAt: string }>>(env.context.platformAdministrator ? "/api/identity/platform-administrators" : undefined);
  const accounts = useLoad<Items<Account>>(env.context.platformAdministrator ? "/api/identity/accounts/" : undefined);
  const [form, setForm] = useState({ username: "", displayName: "", password: "", role: "Member" });
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();
  const create = async (e: FormEvent) => {
    e.preventDefault();
    try {
      await post("/api/identity/accounts/", { ...form, displayName: form.displayName || undefined, workspace: ws.id });
      setDone(`Account ${form.username} created with the role ${form.role} in ${ws.name}.`);
      setError(undefined);
      setForm({ username: "", displayName: "", password: "", role: "Member" });
      accounts.reload();
      memberships.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const setStatus = async (a: Account, status: "Active" | "Disabled") => {
    try {
      await put(`/api/identity/accounts/${enc(a.accountId)}/status`, { status });
      accounts.reload();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <>
      <h1>Access</h1>
      <section aria-labelledby="ms-h">
        <h2 id="ms-h">Roles in {ws.displayName || ws.name}</h2>
        <Problem error={memberships.error} />
        {memberships.data && memberships.data.items.length === 0 && <p className="state-note info" data-state="empty">Nobody has a role in this workspace yet.</p>}
        {memberships.data && memberships.data.items.length > 0 && (
          <table aria-label="Roles in the workspace">
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Role</th>
                <th scope="col">From</th>
              </tr>
            </thead>
            <tbody>
              {memberships.data.items.map((m) => (
                <tr key={`${m.principalId}/${m.scope}`}>
                  <td><Link href={`/settings/organization/members/${enc(m.principalId)}`}>{m.displayName}</Link></td>
                  <td>{m.role}</td>
                  <td>{m.scope === "tenant" ? "the organization" : "this workspace"}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      {env.context.platformAdministrator && (
        <>
          <section aria-labelledby="admins-h">
            <h2 id="admins-h">Platform administrators</h2>
            <Problem error={admins.error} />
            <ul>
              {admins.data?.items.map((a) => (
                <li key={a.principalId}>
                  {a.displayName} <span className="muted">{a.active ? "active" : "inactive"} since {when(a.grantedAt)}</span>
                </li>
              ))}
            </ul>
          </section>
          <section aria-labelledby="acc-h">
            <h2 id="acc-h">Local accounts</h2>
            <Problem error={accounts.error} />
            {accounts.data && (
              <table aria-label="Local accounts">
                <thead>
                  <tr>
                    <th scope="col">Username</th>
                    <th scope="col">Name</th>
                    <th scope="col">Status</th>
                    <th scope="col"><span className="visually-hidden">Actions</span></th>
                  </tr>
                </thead>
                <tbody>
                  {accounts.data.items.map((a) => (
                    <tr key={a.accountId}>
                      <td>{a.username}</td>
                      <td>{a.displayName}{a.platformAdministrator && <span className="muted"> (platform administrator)</span>}</td>
                      <td>{a.status}</td>
                      <td>
                        {a.principalId !== env.context.principal.id &&
                          (a.status === "Active" ? (
                            <button type="button" onClick={() => void setStatus(a, "Disabled")}>Disable {a.username}</button>
                          ) : (
                            <button type="button" onClick={() => void setStatus(a, "Active")}>Enable {a.username}</button>
                          ))}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <form className="card" onSubmit={create} aria-labelledby="new-acc-h">
              <h3 id="new-acc-h">New account in {ws.name}</h3>
              <label htmlFor="a-user">Username</label>
              <input id="a-user" value={form.username} onChange={(e) => setForm({ ...form, username: e.target.value })} required maxLength={64} autoComplete="off" />
              <label htmlFor="a-name">Display name</label>
              <input id="a-name" value={form.displayName} onChange={(e) => setForm({ ...form, displayName: e.target.value })} maxLength={128} />
              <label htmlFor="a-pass">Initial password</label>
              <input id="a-pass" type="password" value={form.password} onChange={(e) => setForm({ ...form, password: e.target.value })} required minLength={12} autoComplete="new-password" />
              <label htmlFor="a-role">Role</label>
              <select id="a-role" value={form.role} onChange={(e) => setForm({ ...form, role: e.target.value })}>
                {roles.map((x) => (
                  <option key={x}>{x}</option>
                ))}
              </select>
              <p>
                <button type="submit" className="primary">Create account</button>
              </p>
              {done && <p role="status">{done}</p>}
              <Problem error={error} />
            </form>
          </section>
        </>
      )}
    </>
  );
}

export function AuditLog({ env }: { env: ConsoleEnv }) {
  const events = useLoad<Items<AuditEvent>>(env.context.platformAdministrator ? "/api/identity/audit-events?limit=200" : undefined);
  // The records hold Principal ids only (never a username or an e-mail); their names come from
  // the organization's members and the Platform administrators.
  const members = useLoad<Items<Member>>(env.context.platformAdministrator ? "/api/identity/members" : undefined);
  const admins = useLoad<Items<{ principalId: string; displayName: string }>>(env.context.platformAdministrator ? "/api/identity/platform-administrators" : undefined);
  const names = new Map<string, string>();
  for (const m of members.data?.items ?? []) names.set(m.principalId, m.displayName);
  for (const a of admins.data?.items ?? []) names.set(a.principalId, a.displayName);
  const who = (id: string) => {
    const name = names.get(id);
    return name ? (
      <Link href={`/settings/organization/members/${enc(id)}`} title={id}>
        {name}
      </Link>
    ) : (
      <span title={id}>
        Unknown principal <code>{id.slice(0, 8)}</code>
      </span>
    );
  };
  // Most records' targets are people; a question's or a Source registry's id is named as such.
  const target = (e: AuditEvent) => {
    const id = e.targetId;
    if (!id) return "";
    const kind = e.action.startsWith("pending-action.") ? "Question" : e.action.startsWith("source-registry.") ? "Source registry" : undefined;
    return kind ? (
      <span title={id}>
        {kind} <code>{id.slice(0, 8)}</code>
      </span>
    ) : (
      who(id)
    );
  };
  return (
    <>
      <h1>Security audit</h1>
      {!env.context.platformAdministrator && <p className="state-note warn">Only Platform administrators read the security audit.</p>}
      <Problem error={events.error} />
      {events.data && (
        <table aria-label="Security audit events">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Action</th>
              <th scope="col">Outcome</th>
              <th scope="col">Actor</th>
              <th scope="col">Target</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {events.data.items.map((e) => (
              <tr key={e.id}>
                <td>{when(e.occurredAt)}</td>
                <td><code>{e.action}</code></td>
                <td>{e.outcome}</td>
                <td data-column="actor">{e.actorId ? who(e.actorId) : "anonymous"}</td>
                <td data-column="target">{target(e)}</td>
                <td>{e.reasonCode ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
