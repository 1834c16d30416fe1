// Model usage and budgets for people: token counts, costs with their currency, day ranges and how
// much of a budget is used. Pure functions, so the Console's Usage page and the Task detail say
// the same thing and are tested without a browser.

/** An amount of money as the API sends it: a decimal string (never a float) and its currency. */
export interface Money {
  amount: string;
  currency: string;
}

/** What model calls used: the sums of a run, a Task or a row of the usage report. */
export interface UsageTotals {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Absent when no price is known for the models called. */
  cost?: Money;
  /** The cost in each currency the calls were priced in (a run's, a step's or a Task's read). */
  costs?: Money[];
}

/** One row of GET /api/workspaces/{workspace}/usage: the keys it was grouped by, then its sums. */
export interface UsageRow extends UsageTotals {
  day?: string;
  agent?: string;
  entry?: string;
  model?: string;
}

export type BudgetScope = "Workspace" | "Entry" | "Agent";

/** A declared budget and how much of its current period is used; limits absent when not declared. */
export interface Budget {
  scope: BudgetScope;
  name: string;
  period: "Day" | "Week" | "Month" | string;
  periodStart?: string;
  limitTokens?: number;
  limitCost?: Money;
  usedTokens?: number;
  usedCost?: Money;
  /** Whether a limit is used up; a budget question's budget leaves it out (it is, or it would be). */
  exceeded?: boolean;
  /** On a budget question: the agent whose model call waits. */
  agent?: string;
}

export interface UsageReport {
  items: UsageRow[];
  budgets?: Budget[];
}

export type GroupBy = "day" | "agent" | "entry" | "model";

const LOCALE = "en-US";

/** tokens says a count with thousands separators: 12,345. */
export function tokens(n: number | undefined): string {
  return (n ?? 0).toLocaleString(LOCALE);
}

/** plural says a count with its noun: "1 model call", "3 model calls". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${tokens(n)} ${n === 1 ? one : many}`;
}

/**
 * money says an amount in its currency, with as many decimals as a small cost needs (up to six:
 * a model call often costs a fraction of a cent) and at least two: $0.0004, €1.20. A currency
 * the browser does not know is written after the amount.
 */
export function money(m: Money | undefined): string {
  if (!m) return "";
  const n = Number(m.amount);
  if (!Number.isFinite(n)) return `${m.amount} ${m.currency}`.trim();
  try {
    return new Intl.NumberFormat(LOCALE, { style: "currency", currency: m.currency, minimumFractionDigits: 2, maximumFractionDigits: 6 }).format(n);
  } catch {
    return `${n.toLocaleString(LOCALE, { minimumFractionDigits: 2, maximumFractionDigits: 6 })} ${m.currency}`.trim();
  }
}

const decimal = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * addMoney sums amounts per currency exactly (decimal strings through integers, never floats),
 * keeping the currencies in the order they first appear.
 */
export function addMoney(amounts: (Money | undefined)[]): Money[] {
  const sums = new Map<string, { units: bigint; scale: number }>();
  for (const m of amounts) {
    const d = m && decimal.exec(m.amount.trim());
    if (!m || !d) continue;
    const [, sign, whole, frac = ""] = d;
    const cur = sums.get(m.currency) ?? { units: 0n, scale: 0 };
    const scale = Math.max(cur.scale, frac.length);
    const units = BigInt(whole + frac.padEnd(scale, "0")) * (sign ? -1n : 1n);
    sums.set(m.currency, { units: cur.units * 10n ** BigInt(scale - cur.scale) + units, scale });
  }
  return [...sums].map(([currency, { units, scale }]) => {
    const neg = units < 0n;
    const digits = (neg ? -units : units).toString().padStart(scale + 1, "0");
    const amount = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
    return { amount: (neg ? "-" : "") + amount, currency };
  });
}

/** The sums of rows: calls and tokens, and the cost per currency. */
export function totals(rows: UsageTotals[]): Omit<UsageTotals, "cost"> & { costs: Money[] } {
  return {
    modelCalls: rows.reduce((n, r) => n + (r.modelCalls ?? 0), 0),
    inputTokens: rows.reduce((n, r) => n + (r.inputTokens ?? 0), 0),
    outputTokens: rows.reduce((n, r) => n + (r.outputTokens ?? 0), 0),
    totalTokens: rows.reduce((n, r) => n + (r.totalTokens ?? 0), 0),
    costs: addMoney(rows.map((r) => r.cost)),
  };
}

/** costText says one or several costs ("$0.0004", "$1.20 and €0.30"), or that none is known. */
export function costText(costs: (Money | undefined)[]): string {
  const known = costs.filter((c): c is Money => !!c);
  return known.length ? known.map(money).join(" and ") : "no price known";
}

/**
 * usageSentence says what a run or a Task used, in plain words: "3 model calls used 200 tokens
 * (120 read, 80 written), costing $0.0004."
 */
export function usageSentence(u: UsageTotals | undefined): string {
  if (!u || !u.modelCalls) return "No model was called yet.";
  const priced = u.costs?.length ? u.costs : u.cost ? [u.cost] : [];
  const cost = priced.length ? `, costing ${costText(priced)}` : " (no price is known for the models called)";
  return `${plural(u.modelCalls, "model call")} used ${plural(u.totalTokens, "token")} (${tokens(u.inputTokens)} read, ${tokens(u.outputTokens)} written)${cost}.`;
}

/** A day as the API writes it (UTC): YYYY-MM-DD. */
export function isoDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The longest range the usage route reads at once. */
export const MAX_RANGE_DAYS = 366;

/** lastDays is the range of the last n days, today (UTC) included. */
export function lastDays(n: number, now = new Date()): { from: string; to: string } {
  return { from: isoDay(new Date(now.getTime() - (n - 1) * DAY_MS)), to: isoDay(now) };
}

/** rangeProblem says what is wrong with a day range, or undefined when the API will take it. */
export function rangeProblem(from: string, to: string): string | undefined {
  const valid = (s: string) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && isoDay(new Date(`${s}T00:00:00Z`)) === s;
  if (!valid(from)) return "Choose the first day of the range.";
  if (!valid(to)) return "Choose the last day of the range.";
  const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS + 1;
  if (days < 1) return "The first day must not be after the last day.";
  if (days > MAX_RANGE_DAYS) return `A range covers at most ${MAX_RANGE_DAYS} days.`;
  return undefined;
}

/** dayLabel says a UTC day for people: "Fri, Nov 27, 2026". */
export function dayLabel(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(d.getTime())) return day;
  return d.toLocaleDateString(LOCALE, { weekday: "short", month: "short", day: "numeric", year: "numeric", timeZone: "UTC" });
}

/** A row of a table: the report's rows of one key merged, with a cost per currency. */
export interface MergedRow extends Omit<UsageRow, "cost"> {
  costs: Money[];
}

/**
 * mergeRows merges the rows that share their key (the API answers a group priced in two
 * currencies as two rows): one line per day or agent, its calls and tokens summed, its costs per
 * currency.
 */
export function mergeRows(rows: UsageRow[], key: (r: UsageRow) => string): MergedRow[] {
  const groups = new Map<string, UsageRow[]>();
  for (const r of rows) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  return [...groups.values()].map((g) => {
    const { cost: _cost, ...first } = g[0];
    return { ...first, ...totals(g) };
  });
}

/** byDayNewestFirst and byTokens order the report's rows as a person reads them. */
export const byDayNewestFirst = (a: Pick<UsageRow, "day">, b: Pick<UsageRow, "day">) => (b.day ?? "").localeCompare(a.day ?? "");
export const byTokens = (a: Pick<UsageRow, "agent" | "totalTokens">, b: Pick<UsageRow, "agent" | "totalTokens">) => b.totalTokens - a.totalTokens || (a.agent ?? "").localeCompare(b.agent ?? "");

const periods: Record<string, string> = { Day: "today (UTC)", Week: "this week (UTC)", Month: "this month (UTC)" };

export interface BudgetLine {
  /** "Workspace default", "Entry support-request", "Agent writer". */
  title: string;
  /** "per day", with the current period. */
  period: string;
  /** Each declared limit with how much of it is used: "1,200 of 1,000 tokens". */
  limits: { what: "tokens" | "cost"; used: string; limit: string; share: number }[];
  /** exceeded, near (at least 80 % of a limit) or ok. */
  state: "exceeded" | "near" | "ok";
}

/** budgetLine says a budget for people: what it covers, its period, each limit's use and its state. */
export function budgetLine(b: Budget): BudgetLine {
  const limits: BudgetLine["limits"] = [];
  if (b.limitTokens !== undefined && b.limitTokens !== null) {
    const used = b.usedTokens ?? 0;
    limits.push({ what: "tokens", used: tokens(used), limit: plural(b.limitTokens, "token"), share: b.limitTokens > 0 ? used / b.limitTokens : used > 0 ? Infinity : 0 });
  }
  if (b.limitCost) {
    const limit = Number(b.limitCost.amount);
    const used = Number(b.usedCost?.amount ?? "0");
    limits.push({ what: "cost", used: money(b.usedCost ?? { amount: "0", currency: b.limitCost.currency }), limit: money(b.limitCost), share: limit > 0 ? used / limit : used > 0 ? Infinity : 0 });
  }
  const top = Math.max(0, ...limits.map((l) => l.share));
  const state = b.exceeded || top >= 1 ? "exceeded" : top >= 0.8 ? "near" : "ok";
  const title = b.scope === "Workspace" ? "The whole workspace" : `${b.scope} ${b.name}`;
  const per: Record<string, string> = { Day: "Per day", Week: "Per week", Month: "Per month" };
  return { title, period: `${per[b.period] ?? `Per ${b.period}`}; used ${periods[b.period] ?? "in this period"}`, limits, state };
}
