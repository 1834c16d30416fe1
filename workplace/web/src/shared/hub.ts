// The real-time hub client: the official SignalR client, which reconnects by itself; after every
// (re)connection the app joins its workspace's group again and refreshes over REST, which stays
// authoritative. The hub only says what changed.
import { HubConnectionBuilder, HubConnectionState, LogLevel, type HubConnection } from "@microsoft/signalr";

export const hubEvents = [
  "InteractionUpdated",
  "MessageAdded",
  "PendingActionCreated",
  "PendingActionResolved",
  "TaskCreated",
  "TaskStatusChanged",
  "TaskActivityAdded",
  "TaskResultAdded",
  "TaskArtifactAdded",
  "NotificationCreated",
  "NotificationUpdated",
  "UnreadNotificationCountChanged",
] as const;

export type HubEventName = (typeof hubEvents)[number];

export type LiveState = "connecting" | "connected" | "reconnecting" | "disconnected";

export interface HubEvent {
  name: HubEventName;
  payload: Record<string, unknown>;
}

/** What a hub event invalidates: the projection it names, and the ids it carries when it does. */
export interface Invalidation {
  conversation: boolean;
  tasks: boolean;
  notifications: boolean;
  interactionId?: string;
  taskId?: string;
}

function idOf(payload: Record<string, unknown>, ...keys: string[]): string | undefined {
  for (const k of keys) {
    const v = payload[k];
    if (typeof v === "string" && v) return v;
  }
  for (const nested of ["interaction", "task", "notification", "message", "pendingAction"]) {
    const n = payload[nested];
    if (n && typeof n === "object") {
      for (const k of keys) {
        const v = (n as Record<string, unknown>)[k];
        if (typeof v === "string" && v) return v;
      }
    }
  }
  return undefined;
}

export function invalidation(e: HubEvent): Invalidation {
  const p = e.payload ?? {};
  const out: Invalidation = { conversation: false, tasks: false, notifications: false };
  out.interactionId = idOf(p, "interactionId");
  out.taskId = idOf(p, "taskId");
  switch (e.name) {
    case "InteractionUpdated":
    case "MessageAdded":
    case "PendingActionCreated":
    case "PendingActionResolved":
      out.conversation = true;
      if (!out.interactionId && e.name === "InteractionUpdated") out.interactionId = idOf(p, "id");
      break;
    case "TaskCreated":
    case "TaskStatusChanged":
    case "TaskActivityAdded":
    case "TaskResultAdded":
    case "TaskArtifactAdded":
      out.tasks = true;
      out.conversation = !!out.interactionId;
      if (!out.taskId && (e.name === "TaskCreated" || e.name === "TaskStatusChanged")) out.taskId = idOf(p, "id");
      break;
    default:
      out.notifications = true;
  }
  return out;
}

export interface HubOptions {
  url: string;
  workspaceId: string;
  accessToken?: () => string | undefined;
  onEvent: (e: HubEvent) => void;
  /** Called after each (re)connection once the workspace is joined: refresh over REST. */
  onJoined: () => void;
  onState: (s: LiveState) => void;
}

/** connectHub keeps a connection until the returned stop is called. */
export function connectHub(opts: HubOptions): () => void {
  let stopped = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let attempts = 0;
  const builder = new HubConnectionBuilder()
    .withUrl(opts.url, opts.accessToken ? { accessTokenFactory: () => opts.accessToken?.() ?? "" } : {})
    .withAutomaticReconnect({ nextRetryDelayInMilliseconds: (ctx) => Math.min(500 * 2 ** ctx.previousRetryCount, 10000) })
    .configureLogging(LogLevel.None);
  const connection: HubConnection = builder.build();
  for (const name of hubEvents) {
    connection.on(name, (payload: Record<string, unknown>) => opts.onEvent({ name, payload: payload ?? {} }));
  }
  const join = async () => {
    await connection.invoke("JoinWorkspace", opts.workspaceId);
    opts.onState("connected");
    opts.onJoined();
  };
  connection.onreconnecting(() => opts.onState("reconnecting"));
  connection.onreconnected(() => {
    join().catch(() => opts.onState("disconnected"));
  });
  connection.onclose(() => {
    if (stopped) return;
    opts.onState("disconnected");
    schedule();
  });
  const start = async () => {
    if (stopped) return;
    opts.onState(attempts === 0 ? "connecting" : "reconnecting");
    try {
      await connection.start();
      attempts = 0;
      await join();
    } catch {
      attempts++;
      opts.onState("disconnected");
      if (connection.state !== HubConnectionState.Disconnected) await connection.stop().catch(() => undefined);
      else schedule();
    }
  };
  // Before the first connection (or after the automatic reconnection gave up) the client retries
  // on its own schedule, so that a server restart is picked up.
  const schedule = () => {
    if (stopped || retry) return;
    const delay = Math.min(1000 * 2 ** Math.min(attempts, 4), 15000);
    retry = setTimeout(() => {
      retry = undefined;
      void start();
    }, delay);
  };
  void start();
  return () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    void connection.stop();
  };
}
