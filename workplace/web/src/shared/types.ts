// The shapes of the service API that the apps read (see /openapi/v1.json for the whole contract).
import type { Budget, UsageTotals } from "./usage";

export interface Items<T> {
  items: T[];
}

export interface IdentityContext {
  principal: { id: string; displayName: string; kind: string };
  tenant?: { id: string; name: string };
  workspace: { id: string; name: string; displayName: string };
  permissions: string[];
  platformAdministrator: boolean;
  credential: string;
}

export type Theme = "System" | "Light" | "Dark";

export interface Preferences {
  principalId: string;
  theme: Theme;
}

export interface Choice {
  value: string;
  label?: string;
}

export interface EntryField {
  name: string;
  label?: string;
  description?: string;
  type?: "Text" | "MultilineText" | "Choice" | "Number" | "Boolean";
  role?: "PrimaryInput" | "Parameter";
  required?: boolean;
  default?: string;
  placeholder?: string;
  choices?: Choice[];
}

export interface EntryPresentation {
  displayName?: string;
  description?: string;
  type?: "Prompt" | "Form";
  fields?: EntryField[];
  suggestions?: string[];
  task?: { display?: string };
  participants?: { visibility?: string };
  results?: { display?: string };
}

export interface PublishedEntry {
  name: string;
  namespace: string;
  workspace: string;
  ownerWorkspaceId: string;
  presentation: EntryPresentation;
  targetState?: string;
}

export type DashboardRole = "Primary" | "Featured" | "Standard";

export interface DashboardViewEntry {
  namespace: string;
  name: string;
  role: DashboardRole;
  order: number;
  state: string;
  entry?: PublishedEntry;
}

export interface DashboardView {
  name: string;
  displayName?: string;
  isDefault: boolean;
  entries: DashboardViewEntry[];
}

export interface Dashboard {
  metadata: { name: string };
  definition: { displayName?: string; isDefault?: boolean };
}

export interface Interaction {
  id: string;
  entry: { namespace: string; name: string };
  title: string;
  state: "Active" | "Idle" | "Closed";
  taskId?: string;
  blocked: boolean;
  /** What a follow-up does while work is in progress, as the Entry declared it. */
  followUpPolicy?: FollowUpPolicy;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export type FollowUpPolicy = "Enqueue" | "Reject" | "Interrupt";

export interface Question {
  pendingActionId: string;
  kind: PendingKind;
  options?: Choice[];
  /** Where the question stands now: an answered or expired one is shown as such before anyone clicks. */
  status?: PendingAction["status"];
}

export interface Message {
  id: string;
  seq: number;
  role: "User" | "Platform" | "System";
  kind: "text" | "answer" | "reply" | "question" | "error" | "cancelled" | "result";
  text: string;
  question?: Question;
  pending?: boolean;
  createdAt: string;
}

export type PendingKind = "text" | "choice" | "confirmation" | "file" | "approval";

export interface PendingAction {
  id: string;
  kind: PendingKind;
  prompt: string;
  options?: Choice[];
  status: "created" | "completed" | "expired" | "cancelled";
  expiresAt: string;
  /** What the question turns into when nobody answers before expiresAt. */
  onExpiry?: "fail" | "reject" | "proceed" | "escalate";
  /** When nobody answered in time and it was re-addressed to the workspace's Owners and Admins. */
  escalatedAt?: string;
  resolution?: "answered" | "failed" | "rejected" | "proceeded";
  /** The exact tool call an approval decides. */
  call?: ApprovalCall;
  /** The budget a run would cross: the approval decides whether it goes on past it. */
  budget?: Budget;
  /** Whether the caller may answer it now (absent from a server that does not say: then offered). */
  mayAnswer?: boolean;
  /** Why an open question is not the caller's to answer. */
  answerRefusal?: AnswerRefusal;
}

/** EscalatedToAdministrators: it now waits for the workspace's Owners and Admins; NotPermitted: the caller only reads work. */
export type AnswerRefusal = "EscalatedToAdministrators" | "NotPermitted";

/** The exact call an approval decides: once approved, only the call with this digest runs. */
export interface ApprovalCall {
  agent: string;
  tool: string;
  toolName: string;
  provider: string;
  /** The complete arguments, as the model sent them. */
  arguments: unknown;
  /** sha256:<hex> of the canonical encoding of the call. */
  digest: string;
}

export type ActionType =
  | "respond"
  | "requestInput"
  | "requestConfirmation"
  | "requestChoice"
  | "createTask"
  | "showResult"
  | "showError"
  | "working";

export interface Action {
  type: ActionType;
  text?: string;
  pendingAction?: PendingAction;
}

export type TaskState = "pending" | "running" | "paused" | "action-required" | "completed" | "failed" | "cancelled";

export interface Task {
  id: string;
  title: string;
  state: TaskState;
  reason?: string;
  interactionId?: string;
  visible: boolean;
  actions: { pause: boolean; resume: boolean; cancel: boolean; delete: boolean };
  /** The open questions it waits on (never a token). */
  pendingActions?: PendingAction[];
  /** What its runs' model calls used (absent from a server that does not record usage). */
  usage?: UsageTotals;
  version: string;
  createdAt: string;
  updatedAt: string;
  endedAt?: string;
}

export interface Exchange {
  interaction: Interaction;
  message?: Message;
  action?: Action;
  task?: Task;
  answered?: PendingAction;
  resumeToken?: string;
}

export interface Activity {
  seq: number;
  kind: "turn" | "question" | "run";
  phase:
    | "started"
    | "completed"
    | "waiting"
    | "answered"
    | "failed"
    | "cancelled"
    | "paused"
    | "resumed"
    | "expired"
    | "reminded"
    | "escalated"
    | "refused";
  label: string;
  participant?: string;
  createdAt: string;
}

export interface TaskResult {
  id: string;
  seq: number;
  action: string;
  text?: string;
  output?: unknown;
  createdAt: string;
}

export interface Artifact {
  id: string;
  name: string;
  mediaType: string;
  length: number;
  createdAt: string;
}

export interface Notification {
  id: string;
  kind: "question" | "task-completed" | "task-failed";
  attention: boolean;
  title: string;
  taskId?: string;
  interactionId?: string;
  pendingActionId?: string;
  /** The question no longer waits: answered, expired or closed. */
  resolved?: boolean;
  resolution?: "answered" | "expired" | "closed";
  /** The question still waits but went to the workspace's Owners and Admins when nobody answered in time. */
  escalatedAt?: string;
  /** For a question that still waits: whether the caller may answer it. */
  mayAnswer?: boolean;
  answerRefusal?: AnswerRefusal;
  read: boolean;
  createdAt: string;
}

/** An open question of the workspace, as the inbox lists it. */
export interface OpenQuestion extends PendingAction {
  taskId?: string;
  interactionId?: string;
  title: string;
  createdAt: string;
}

export interface OpenQuestionList {
  items: OpenQuestion[];
  /** How many questions are open in the workspace. */
  openCount: number;
  /** How many of them the reader may answer: what "Needs you" counts. */
  mayAnswerCount: number;
  next?: string;
}

export interface NotificationList {
  items: Notification[];
  unreadCount: number;
}
