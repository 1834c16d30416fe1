import { useCallback, useEffect, useRef, useState } from "react";
import { ApiError, enc, get, post } from "../shared/api";
import { taskStateLabel, when } from "../shared/format";
import { connectHub, invalidation, type LiveState } from "../shared/hub";
import { Link, navigate, useLocation } from "../shared/router";
import type { Dashboard, DashboardView, DashboardViewEntry, Exchange, IdentityContext, Interaction, Items, Notification, NotificationList, OpenQuestionList, Task } from "../shared/types";
import { serverPage, type HostConfig } from "./App";
import { Loading, StateNote } from "./components";
import { Conversation } from "./Conversation";
import { EntryForm } from "./EntryForm";
import { Inbox } from "./Inbox";
import { dashboardLayout, entryTitle } from "./presentation";
import { rememberResumeToken } from "../shared/questions";
import { bearerToken } from "./session";
import { TaskDetail } from "./TaskDetail";

type Panel = "home" | "conversations" | "tasks" | "notifications";
const panels: Panel[] = ["home", "conversations", "tasks", "notifications"];

export interface WorkplaceProps {
  cfg: HostConfig;
  context: IdentityContext;
  workspace: string;
  dashboard?: string;
  taskId?: string;
  /** The "Needs you" inbox is shown in the main column. */
  inbox?: boolean;
}

const keyOf = (e: DashboardViewEntry) => `${e.namespace}/${e.name}`;

/**
 * signOut ends the session in one click through the relay (the API and the relay refuse another
 * site's request) and reloads this page, which then offers to sign in again and come back here.
 * Should the API refuse, the server's sign-out page takes over.
 */
async function signOut(cfg: HostConfig) {
  const here = window.location.pathname + window.location.search;
  try {
    await post("/api/auth/logout");
    window.location.assign(here);
  } catch {
    window.location.assign(serverPage(cfg, "logout", here));
  }
}

export function Workplace({ cfg, context, workspace, dashboard, taskId, inbox }: WorkplaceProps) {
  const loc = useLocation();
  const api = `/api/workspaces/${enc(workspace)}`;
  const wsHeader = { "X-Platform-Workspace": workspace };
  const current = loc.query.get("c") ?? undefined;
  // A reader who may only follow the work (a Viewer) is offered nothing that starts or changes
  // it: the server would refuse it.
  const mayRun = context.permissions.includes("runs/execute");
  const [apiDown, setApiDown] = useState<string>();
  const [live, setLive] = useState<LiveState>("connecting");
  const [dashboards, setDashboards] = useState<Dashboard[]>([]);
  const [view, setView] = useState<DashboardView>();
  const [viewError, setViewError] = useState<string>();
  const [interactions, setInteractions] = useState<Interaction[]>();
  const [tasks, setTasks] = useState<Task[]>();
  const [notes, setNotes] = useState<NotificationList>();
  // The section a phone shows is in the URL (?panel=), so that a reload, the back button and a
  // shared link keep it; a link without it (a Task, a conversation, a notification) shows Home.
  const panelParam = loc.query.get("panel");
  const panel: Panel = panels.includes(panelParam as Panel) ? (panelParam as Panel) : "home";
  const [selected, setSelected] = useState<string>();
  const [opening, setOpening] = useState(false);
  const [openError, setOpenError] = useState<string>();
  const [conversationTick, setConversationTick] = useState(0);
  const [taskTick, setTaskTick] = useState(0);
  const [inboxTick, setInboxTick] = useState(0);
  const [openQuestions, setOpenQuestions] = useState<number>();
  // The conversations whose open question this person may not answer, and whether it escalated.
  const [waitingForOthers, setWaitingForOthers] = useState<Map<string, boolean>>(new Map());
  const currentRef = useRef(current);
  currentRef.current = current;
  const taskRef = useRef(taskId);
  taskRef.current = taskId;
  // The Task of the current conversation: its Task events refresh the conversation's reference.
  const conversationTaskRef = useRef<string | undefined>(undefined);
  const onConversationTask = useCallback((id: string | undefined) => {
    conversationTaskRef.current = id;
  }, []);

  // Every read goes through guard: an unreachable API is a state of the page, not an error of a
  // section, and it clears itself on the next successful read.
  const guard = useCallback(async <T,>(p: Promise<T>): Promise<T | undefined> => {
    try {
      const v = await p;
      setApiDown(undefined);
      return v;
    } catch (e) {
      if (e instanceof ApiError && e.unavailable) {
        setApiDown(e.message);
        return undefined;
      }
      throw e;
    }
  }, []);

  const refreshInteractions = useCallback(() => {
    guard(get<Items<Interaction>>(`${api}/interactions?take=20`)).then((l) => l && setInteractions(l.items), () => setInteractions([]));
  }, [api, guard]);
  const refreshTasks = useCallback(() => {
    guard(get<Items<Task>>(`${api}/tasks?take=6`)).then((l) => l && setTasks(l.items), () => setTasks([]));
  }, [api, guard]);
  const refreshNotifications = useCallback(() => {
    guard(get<NotificationList>(`${api}/notifications?take=6`)).then((l) => l && setNotes(l), () => setNotes({ items: [], unreadCount: 0 }));
  }, [api, guard]);
  // The inbox's count, beside its link: how many questions wait for this person's answer (not
  // those escalated to the workspace's Owners and Admins, unless this person is one of them). The
  // same read lists the open questions this person may not answer (none, for most, without a
  // query), so that a conversation blocked on one does not say it waits for them.
  const refreshInbox = useCallback(() => {
    guard(get<OpenQuestionList>(`${api}/pending-actions?state=open&mayAnswer=false&take=50`)).then((l) => {
      if (!l) return;
      setOpenQuestions(l.mayAnswerCount);
      setWaitingForOthers(new Map(l.items.filter((q) => q.interactionId).map((q) => [q.interactionId!, !!q.escalatedAt])));
    }, () => undefined);
    setInboxTick((t) => t + 1);
  }, [api, guard]);
  const refreshView = useCallback(() => {
    guard(get<Items<Dashboard>>("/api/dashboards", wsHeader)).then((l) => l && setDashboards(l.items), () => undefined);
    if (!dashboard) return;
    guard(get<DashboardView>(`/api/dashboards/${enc(dashboard)}/view`, wsHeader)).then(
      (v) => {
        if (!v) return;
        setView(v);
        setViewError(undefined);
      },
      (e: ApiError) => setViewError(e.status === 404 ? `The Dashboard “${dashboard}” does not exist in this workspace.` : e.message),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [dashboard, workspace, guard]);

  const refreshAll = useCallback(() => {
    refreshView();
    refreshInteractions();
    refreshTasks();
    refreshNotifications();
    refreshInbox();
    setConversationTick((t) => t + 1);
    setTaskTick((t) => t + 1);
  }, [refreshView, refreshInteractions, refreshTasks, refreshNotifications, refreshInbox]);

  // Entries are published asynchronously (right after the first sign-in, the demo Entries still
  // are), and an Entry's Flow can be briefly not executable while the controllers look at it
  // again after a restart (no hub event says when that ends): while a reference of the Dashboard
  // waits for its publication or its Flow, the view is read again, for a bounded time.
  const viewPolls = useRef(0);
  useEffect(() => {
    if (!view) return;
    const waiting =
      view.entries.length === 0 || view.entries.some((e) => !e.entry || (e.entry.targetState !== undefined && e.entry.targetState !== "Executable"));
    if (!waiting) {
      viewPolls.current = 0;
      return;
    }
    if (viewPolls.current >= 45) return;
    const t = setTimeout(() => {
      viewPolls.current++;
      refreshView();
    }, 2000);
    return () => clearTimeout(t);
  }, [view, refreshView]);

  useEffect(() => {
    refreshView();
    refreshInteractions();
    refreshTasks();
    refreshNotifications();
    refreshInbox();
  }, [refreshView, refreshInteractions, refreshTasks, refreshNotifications, refreshInbox]);

  // The hub only invalidates: each event refreshes the one projection it concerns over REST.
  useEffect(() => {
    return connectHub({
      url: cfg.hubPath,
      workspaceId: context.workspace.id,
      accessToken: cfg.authentication === "bearer" ? bearerToken : undefined,
      onState: setLive,
      onJoined: refreshAll,
      onEvent: (e) => {
        const inv = invalidation(e);
        if (inv.conversation) {
          refreshInteractions();
          if (!inv.interactionId || inv.interactionId === currentRef.current) setConversationTick((t) => t + 1);
        }
        if (inv.tasks) {
          refreshTasks();
          if (inv.taskId && inv.taskId === conversationTaskRef.current && !inv.conversation) setConversationTick((t) => t + 1);
          if (!inv.taskId || inv.taskId === taskRef.current) setTaskTick((t) => t + 1);
        }
        if (inv.notifications) refreshNotifications();
        // A question asked, escalated (told anew) or answered anywhere changes the inbox, and the
        // Task that waits on it.
        if (e.name === "PendingActionCreated" || e.name === "PendingActionResolved" || e.name === "TaskStatusChanged") {
          refreshInbox();
          if (inv.taskId && inv.taskId === taskRef.current) setTaskTick((t) => t + 1);
        }
      },
    });
  }, [cfg, context.workspace.id, refreshAll, refreshInteractions, refreshTasks, refreshNotifications, refreshInbox]);

  // Without live updates the inbox and its count are read again every few seconds.
  useEffect(() => {
    if (live === "connected") return;
    const t = setInterval(refreshInbox, 4000);
    return () => clearInterval(t);
  }, [live, refreshInbox]);

  const layout = view ? dashboardLayout(view) : undefined;
  const all = layout ? [layout.primary, ...layout.featured, ...layout.standard].filter((e): e is DashboardViewEntry => !!e) : [];
  const selectedEntry = current ? undefined : (all.find((e) => keyOf(e) === selected) ?? all[0]);
  const dashPath = `/w/${enc(workspace)}/d/${enc(dashboard ?? view?.name ?? "home")}`;
  const inboxPath = `/w/${enc(workspace)}/inbox`;
  // A notification leads where its subject is answerable or readable: a question to its
  // conversation, a Task that completed or failed to its page, where its Result or failure is.
  const notificationHref = (n: Notification) => {
    const task = n.taskId ? `/w/${enc(workspace)}/tasks/${enc(n.taskId)}` : undefined;
    if (n.kind !== "question" && task) return task;
    return n.interactionId ? `${dashPath}?c=${enc(n.interactionId)}` : (task ?? dashPath);
  };

  const open = async (e: DashboardViewEntry, input: Record<string, unknown>) => {
    setOpening(true);
    setOpenError(undefined);
    try {
      const ns = e.namespace && e.namespace !== "default" ? `?namespace=${enc(e.namespace)}&waitSeconds=5` : "?waitSeconds=5";
      const x = await post<Exchange>(`${api}/entries/${enc(e.name)}/interactions${ns}`, { input });
      rememberResumeToken(workspace, x.interaction.id, x.resumeToken);
      navigate(`${dashPath}?c=${enc(x.interaction.id)}`);
      refreshInteractions();
      refreshTasks();
      refreshNotifications();
    } catch (err) {
      if (err instanceof ApiError && err.unavailable) setApiDown(err.message);
      setOpenError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setOpening(false);
    }
  };

  const newRequest = () => {
    setSelected(layout?.primary ? keyOf(layout.primary) : undefined);
    setOpenError(undefined);
    navigate(dashPath);
  };

  const currentInteraction = interactions?.find((i) => i.id === current);
  const recent = (interactions ?? []).filter((i) => i.id !== current);

  return (
    <div className="app" data-live={live}>
      <a className="skip" href="#main">Skip to content</a>
      <header className="topbar">
        <Link href={dashPath} className="brand">Workplace</Link>
        <span className="workspace" title="Workspace">{context.workspace.displayName || workspace}</span>
        {dashboards.length > 1 && (
          <label className="dashboard-switch">
            <span className="visually-hidden">Dashboard</span>
            <select value={dashboard} onChange={(e) => navigate(`/w/${enc(workspace)}/d/${enc(e.target.value)}${window.location.search}`)}>
              {dashboards.map((d) => (
                <option key={d.metadata.name} value={d.metadata.name}>
                  {d.definition.displayName || d.metadata.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <Link href={inboxPath} className="inbox-link" aria-current={inbox ? "page" : undefined}>
          Needs you{openQuestions ? <span className="badge" aria-label={`${openQuestions} waiting for your answer`}>{openQuestions}</span> : null}
        </Link>
        <span className={`live live-${live}`} role="status" aria-live="polite">
          {live === "connected" ? "Live" : live === "disconnected" ? "Offline updates" : "Connecting…"}
        </span>
        <span className="who">{context.principal.displayName}</span>
        {context.credential === "session" && (
          <button type="button" className="sign-out" onClick={() => void signOut(cfg)}>
            Sign out
          </button>
        )}
      </header>

      {apiDown && (
        <div className="banner error" role="alert" data-state="api-unavailable">
          <strong>The platform API is unavailable.</strong> {apiDown} What you see may be out of date.
          <button type="button" onClick={refreshAll}>Try again</button>
        </div>
      )}
      {live === "disconnected" && !apiDown && (
        <div className="banner warn" role="status" data-state="realtime-disconnected">
          <strong>Live updates are disconnected.</strong> The page keeps working and refreshes after your actions; it reconnects by itself.
        </div>
      )}

      <main id="main" className="layout" data-panel={panel}>
        {inbox ? (
          <section className="col-main panel" data-panel="home" aria-label="Needs you">
            <Inbox api={api} workspace={workspace} dashPath={dashPath} tick={inboxTick} onChanged={() => (refreshTasks(), refreshInteractions(), refreshNotifications(), refreshInbox())} onApiDown={setApiDown} />
          </section>
        ) : taskId ? (
          <section className="col-main panel" data-panel="home" aria-label="Task">
            <TaskDetail api={api} workspace={workspace} taskId={taskId} tick={taskTick} backHref={dashPath} mayRun={mayRun} onChanged={() => (refreshTasks(), refreshInteractions(), refreshNotifications(), refreshInbox())} onApiDown={setApiDown} />
          </section>
        ) : (
          <section className="col-main panel" data-panel="home" aria-label="Dashboard">
            <h1 className="visually-hidden">{view?.displayName || dashboard}</h1>
            {viewError && <StateNote state="failure" tone="error">{viewError}</StateNote>}
            {!view && !viewError && <Loading label="Loading the Dashboard…" />}
            {view && all.length === 0 && <StateNote state="empty">This Dashboard has no Entries yet. An administrator adds them in the Console.</StateNote>}
            {layout && all.length > 0 && !mayRun && (
              <StateNote state="read-only" tone="info">Your role in this workspace lets you follow its work, not start it.</StateNote>
            )}
            {layout && all.length > 0 && (
              <div className={`entries ${current ? "compact" : ""}`}>
                {all.map((e) => {
                  const isSelected = !!selectedEntry && keyOf(e) === keyOf(selectedEntry);
                  const role = e === layout.primary ? "primary" : layout.featured.includes(e) ? "featured" : "standard";
                  return (
                    <article key={keyOf(e)} className={`entry ${role} ${isSelected ? "selected" : ""}`} aria-label={entryTitle(e.entry!)} data-role={role}>
                      <header>
                        <h2>{entryTitle(e.entry!)}</h2>
                        {e.entry!.presentation.description && <p>{e.entry!.presentation.description}</p>}
                      </header>
                      {isSelected && mayRun ? (
                        <EntryForm key={keyOf(e)} entry={e.entry!} busy={opening} error={openError} onSubmit={(input) => void open(e, input)} />
                      ) : (
                        mayRun && (
                          <button type="button" onClick={() => (setSelected(keyOf(e)), setOpenError(undefined), current && navigate(dashPath))}>
                            Start {entryTitle(e.entry!)}
                          </button>
                        )
                      )}
                    </article>
                  );
                })}
              </div>
            )}
            {current && (
              <Conversation
                key={current}
                api={api}
                interactionId={current}
                tick={conversationTick}
                live={live === "connected"}
                workspace={workspace}
                onNewRequest={newRequest}
                onChanged={() => (refreshInteractions(), refreshTasks(), refreshNotifications(), refreshInbox())}
                onApiDown={setApiDown}
                onTask={onConversationTask}
                title={currentInteraction?.title}
                diagnostics={cfg.diagnostics}
                mayRun={mayRun}
              />
            )}
          </section>
        )}

        <aside className="col-side" aria-label="Your work">
          <section className="panel" data-panel="tasks" aria-labelledby="tasks-h">
            <h2 id="tasks-h">Recent Tasks</h2>
            {!tasks ? (
              <Loading label="Loading Tasks…" />
            ) : tasks.length === 0 ? (
              <StateNote state="empty">No Tasks yet. Work that takes a while or needs you appears here.</StateNote>
            ) : (
              <ul className="list">
                {tasks.map((t) => (
                  <li key={t.id}>
                    <Link href={`/w/${enc(workspace)}/tasks/${enc(t.id)}`}>{t.title}</Link>
                    <span className={`pill state-${t.state}`}>{taskStateLabel(t.state, t.pendingActions)}</span>
                    <span className="muted">{when(t.updatedAt)}</span>
                  </li>
                ))}
              </ul>
            )}
          </section>
          <section className="panel" data-panel="notifications" aria-labelledby="notes-h">
            <h2 id="notes-h">
              Notifications {notes && notes.unreadCount > 0 && <span className="badge" aria-label={`${notes.unreadCount} unread`}>{notes.unreadCount}</span>}
            </h2>
            {!notes ? (
              <Loading label="Loading notifications…" />
            ) : notes.items.length === 0 ? (
              <StateNote state="empty">Nothing needs your attention.</StateNote>
            ) : (
              <>
                <ul className="list notifications">
                  {notes.items.map((n) => (
                    <li
                      key={n.id}
                      className={`${n.attention && !n.read ? "attention" : ""} ${n.read ? "read" : "unread"} ${n.resolved ? "resolved" : ""}`}
                      data-notification-kind={n.kind}
                      data-resolved={n.resolved ? n.resolution : undefined}
                      data-escalated={!n.resolved && n.escalatedAt ? (n.mayAnswer === false ? "read-only" : "answerable") : undefined}
                    >
                      <Link
                        href={notificationHref(n)}
                        onClick={() => {
                          if (!n.read) void post(`${api}/notifications/${enc(n.id)}/read`).then(refreshNotifications, () => undefined);
                        }}
                      >
                        {n.title}
                      </Link>
                      {/* One the reader may no longer answer says so in its title (news, no attention). */}
                      {!n.resolved && n.escalatedAt && n.mayAnswer !== false && <span className="muted"> · escalated to you</span>}
                      {!n.read && <span className="visually-hidden"> (unread)</span>}
                      <span className="muted">{when(n.createdAt)}</span>
                    </li>
                  ))}
                </ul>
                {notes.unreadCount > 0 && (
                  <button type="button" onClick={() => void post(`${api}/notifications/read-all`).then(refreshNotifications, () => undefined)}>
                    Mark all read
                  </button>
                )}
              </>
            )}
          </section>
          <section className="panel" data-panel="conversations" aria-labelledby="recent-h">
            <h2 id="recent-h">Recent conversations</h2>
            {!interactions ? (
              <Loading label="Loading conversations…" />
            ) : recent.length === 0 ? (
              <StateNote state="empty">No earlier conversations.</StateNote>
            ) : (
              <ul className="list">
                {recent.map((i) => (
                  <li key={i.id}>
                    <Link href={`${dashPath}?c=${enc(i.id)}`}>
                      {i.title}
                    </Link>
                    <span className="muted">
                      {i.blocked
                        ? waitingForOthers.has(i.id)
                          ? waitingForOthers.get(i.id)
                            ? "Waiting for an administrator"
                            : "Waiting for an answer"
                          : "Waiting for you"
                        : i.state === "Active"
                          ? "Working"
                          : when(i.updatedAt)}
                    </span>
                  </li>
                ))}
              </ul>
            )}
          </section>
        </aside>
      </main>

      <nav className="bottom-nav" aria-label="Sections">
        {(
          [
            ["home", "Home"],
            ["inbox", "Needs you"],
            ["conversations", "Conversations"],
            ["tasks", "Tasks"],
            ["notifications", "Notifications"],
          ] as [Panel | "inbox", string][]
        ).map(([p, label]) =>
          p === "inbox" ? (
            <Link key={p} href={inboxPath} aria-current={inbox ? "page" : undefined}>
              {label}
              {openQuestions ? ` (${openQuestions})` : ""}
            </Link>
          ) : (
            <button
              key={p}
              type="button"
              aria-current={!inbox && panel === p ? "page" : undefined}
              onClick={() => {
                // The inbox is a page of its own: its sections are the Dashboard's.
                const q = new URLSearchParams(inbox ? "" : window.location.search);
                if (p === "home") q.delete("panel");
                else q.set("panel", p);
                const search = q.toString();
                navigate((inbox ? dashPath : window.location.pathname) + (search ? `?${search}` : ""));
              }}
            >
              {label}
              {p === "notifications" && notes && notes.unreadCount > 0 ? ` (${notes.unreadCount})` : ""}
            </button>
          ),
        )}
      </nav>
    </div>
  );
}
