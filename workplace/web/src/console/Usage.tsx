import { useEffect, useState, type FormEvent } from "react";
import { ApiError, enc, get } from "../shared/api";
import { navigate } from "../shared/router";
import {
  addMoney,
  budgetLine,
  byDayNewestFirst,
  byTokens,
  costText,
  dayLabel,
  lastDays,
  mergeRows,
  type MergedRow,
  rangeProblem,
  tokens,
  totals,
  type Budget,
  type GroupBy,
  type UsageReport,
} from "../shared/usage";
import type { ConsoleEnv } from "./App";

const presets = [
  { days: 1, label: "Today" },
  { days: 7, label: "Last 7 days" },
  { days: 30, label: "Last 30 days" },
];

type Load = { day?: UsageReport; agent?: UsageReport; error?: string; unsupported?: boolean };

/**
 * The workspace's model usage per day and per agent over a range of UTC days, with totals and
 * each declared budget's use in its current period. The range lives in the address, so a reload
 * or a shared link shows the same page.
 */
export function Usage({ env, from: qFrom, to: qTo }: { env: ConsoleEnv; from?: string; to?: string }) {
  const ws = env.context.workspace.name;
  const fallback = lastDays(7);
  const from = qFrom || fallback.from;
  const to = qTo || fallback.to;
  const [draft, setDraft] = useState({ from, to });
  const [load, setLoad] = useState<Load>({});
  const [tick, setTick] = useState(0);
  const problem = rangeProblem(from, to);

  useEffect(() => setDraft({ from, to }), [from, to]);

  useEffect(() => {
    if (problem) return;
    let stop = false;
    setLoad({});
    const read = (groupBy: GroupBy) => get<UsageReport>(`/api/workspaces/${enc(ws)}/usage?from=${enc(from)}&to=${enc(to)}&groupBy=${groupBy}`);
    Promise.all([read("day"), read("agent")]).then(
      ([day, agent]) => !stop && setLoad({ day, agent }),
      (e: unknown) => {
        if (stop) return;
        if (e instanceof ApiError && e.status === 404 && !e.problem.code) setLoad({ unsupported: true, error: "This server does not record model usage yet." });
        else if (e instanceof ApiError && e.status === 403) setLoad({ error: "You have no permission to read this workspace's usage." });
        else if (e instanceof ApiError && e.unavailable) setLoad({ error: "The platform API is unavailable; usage cannot be read now." });
        else setLoad({ error: `The usage cannot be read: ${e instanceof ApiError ? e.message : String(e)}` });
      },
    );
    return () => {
      stop = true;
    };
  }, [ws, env.context.workspace.id, from, to, problem, tick]);

  const show = (range: { from: string; to: string }) => navigate(`/usage?from=${enc(range.from)}&to=${enc(range.to)}`);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    show(draft);
  };
  const draftProblem = rangeProblem(draft.from, draft.to);
  const days = mergeRows(load.day?.items ?? [], (r) => r.day ?? "").sort(byDayNewestFirst);
  const agents = mergeRows(load.agent?.items ?? [], (r) => r.agent ?? "").sort(byTokens);
  const sum = totals(load.day?.items ?? []);
  const budgets = load.day?.budgets ?? [];
  const single = from === to;

  return (
    <div className="usage-page">
      <div className="toolbar">
        <h1>Usage</h1>
        <button type="button" onClick={() => setTick((t) => t + 1)}>
          Refresh
        </button>
      </div>
      <p className="muted">
        What the model calls of the workspace <strong>{env.context.workspace.displayName || ws}</strong> used: tokens read and written, and what they cost. Days are
        UTC days.
      </p>

      <form className="card usage-range" aria-label="Days to show" onSubmit={submit}>
        <div className="actions" role="group" aria-label="Quick ranges">
          {presets.map((p) => {
            const r = lastDays(p.days);
            const current = r.from === from && r.to === to;
            return (
              <button key={p.days} type="button" aria-pressed={current} className={current ? "primary" : undefined} onClick={() => show(r)}>
                {p.label}
              </button>
            );
          })}
        </div>
        <div className="actions">
          <label>
            From <input type="date" value={draft.from} max={draft.to || undefined} onChange={(e) => setDraft((d) => ({ ...d, from: e.target.value }))} required />
          </label>
          <label>
            To <input type="date" value={draft.to} min={draft.from || undefined} onChange={(e) => setDraft((d) => ({ ...d, to: e.target.value }))} required />
          </label>
          <button type="submit" disabled={!!draftProblem}>Show</button>
        </div>
        {draftProblem && (draft.from !== from || draft.to !== to) && (
          <p className="state-note warn" role="alert" data-state="invalid-range">
            {draftProblem}
          </p>
        )}
      </form>

      {problem ? (
        <p className="state-note warn" role="alert" data-state="invalid-range">
          {problem} Pick another range above.
        </p>
      ) : load.error ? (
        <p className={`state-note ${load.unsupported ? "info" : "error"}`} role="alert" data-state={load.unsupported ? "unsupported" : "failure"}>
          {load.error}
        </p>
      ) : !load.day || !load.agent ? (
        <p role="status" className="muted">
          Loading the usage…
        </p>
      ) : (
        <>
          <section className="card" aria-labelledby="usage-totals-h" data-section="totals">
            <h2 id="usage-totals-h">{single ? `Total on ${dayLabel(from)}` : `Total from ${dayLabel(from)} to ${dayLabel(to)}`}</h2>
            {sum.modelCalls === 0 ? (
              <div className="state-note info" data-state="empty">
                <p>No model call was recorded {single ? "on this day" : "in these days"}.</p>
                <p>
                  Usage is recorded for every model call an agent makes. Start work from an Entry in the <a href={env.workplaceUrl}>Workplace</a>, or choose a longer range
                  above.
                </p>
              </div>
            ) : (
              <dl className="counts usage-totals">
                <div data-total="modelCalls">
                  <dt>Model calls</dt>
                  <dd>{tokens(sum.modelCalls)}</dd>
                </div>
                <div data-total="totalTokens">
                  <dt>Tokens</dt>
                  <dd>{tokens(sum.totalTokens)}</dd>
                </div>
                <div data-total="inputTokens">
                  <dt>Read (input)</dt>
                  <dd>{tokens(sum.inputTokens)}</dd>
                </div>
                <div data-total="outputTokens">
                  <dt>Written (output)</dt>
                  <dd>{tokens(sum.outputTokens)}</dd>
                </div>
                <div data-total="cost">
                  <dt>Cost</dt>
                  {sum.costs.length ? <dd>{costText(sum.costs)}</dd> : <dd className="no-price">No price is known for the models called</dd>}
                </div>
              </dl>
            )}
          </section>

          <Budgets budgets={budgets} />

          {sum.modelCalls > 0 && (
            <>
              <UsageTable id="usage-days" title="Per day" first="Day" rows={days} cell={(r) => dayLabel(r.day ?? "")} />
              <UsageTable id="usage-agents" title="Per agent" first="Agent" rows={agents} cell={(r) => r.agent || "Without an agent"} />
            </>
          )}
        </>
      )}
    </div>
  );
}

function UsageTable({ id, title, first, rows, cell }: { id: string; title: string; first: string; rows: MergedRow[]; cell: (r: MergedRow) => string }) {
  const sum = { ...totals(rows), costs: rows.flatMap((r) => r.costs) };
  return (
    <section className="card" aria-labelledby={`${id}-h`} data-section={id}>
      <h2 id={`${id}-h`}>{title}</h2>
      {/* A narrow screen scrolls the table inside its box, never the page; the box takes the keyboard too. */}
      <div className="table-scroll" role="region" aria-labelledby={`${id}-h`} tabIndex={0}>
        <table className="usage-table">
          <thead>
            <tr>
              <th scope="col">{first}</th>
              <th scope="col" className="num">Model calls</th>
              <th scope="col" className="num">Read</th>
              <th scope="col" className="num">Written</th>
              <th scope="col" className="num">Tokens</th>
              <th scope="col" className="num">Cost</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, n) => (
              <tr key={`${r.day ?? ""}/${r.agent ?? ""}/${n}`} data-row={r.day || r.agent || ""}>
                <th scope="row">{cell(r)}</th>
                <td className="num">{tokens(r.modelCalls)}</td>
                <td className="num">{tokens(r.inputTokens)}</td>
                <td className="num">{tokens(r.outputTokens)}</td>
                <td className="num">{tokens(r.totalTokens)}</td>
                <td className="num">{r.costs.length ? costText(r.costs) : <span className="muted">no price</span>}</td>
              </tr>
            ))}
          </tbody>
          {rows.length > 1 && (
            <tfoot>
              <tr>
                <th scope="row">Total</th>
                <td className="num">{tokens(sum.modelCalls)}</td>
                <td className="num">{tokens(sum.inputTokens)}</td>
                <td className="num">{tokens(sum.outputTokens)}</td>
                <td className="num">{tokens(sum.totalTokens)}</td>
                <td className="num">{costText(addMoney(sum.costs))}</td>
              </tr>
            </tfoot>
          )}
        </table>
      </div>
    </section>
  );
}

const stateText = { exceeded: "Exceeded", near: "Near its limit", ok: "Within budget" } as const;
const statePill = { exceeded: "state-failed", near: "state-action-required", ok: "state-completed" } as const;

/** Each declared budget with how much of its current period is used and whether it is exceeded. */
function Budgets({ budgets }: { budgets: Budget[] }) {
  const exceeded = budgets.filter((b) => budgetLine(b).state === "exceeded").length;
  return (
    <section className="card" aria-labelledby="usage-budgets-h" data-section="budgets">
      <h2 id="usage-budgets-h">Budgets</h2>
      {budgets.length === 0 ? (
        <p className="state-note info" data-state="no-budget">
          No budget is declared. The workspace, an Entry or an Agent may declare one per day, week or month, in tokens or in cost: a run that would cross it waits on a
          question (continue past the budget?) instead of spending on.
        </p>
      ) : (
        <>
          {exceeded > 0 && (
            <p className="state-note warn" data-state="budget-exceeded" role="status">
              {exceeded === 1 ? "1 budget is exceeded" : `${exceeded} budgets are exceeded`}: runs that would spend more wait for someone to approve going on.
            </p>
          )}
          <ul className="list budgets">
            {budgets.map((b) => {
              const line = budgetLine(b);
              return (
                <li key={`${b.scope}/${b.name}/${b.period}`} className={`budget budget-${line.state}`} data-budget-scope={b.scope} data-budget-name={b.name} data-budget-state={line.state}>
                  <div className="budget-head">
                    <strong>{line.title}</strong>
                    <span className={`pill ${statePill[line.state]}`}>{stateText[line.state]}</span>
                  </div>
                  <p className="muted">{line.period}</p>
                  {line.limits.map((l) => (
                    <div key={l.what} className="budget-limit">
                      <meter min={0} max={1} low={0.8} high={0.99} optimum={0} value={Math.min(l.share, 1)} aria-label={`${line.title}: ${l.what} used`} />
                      <span>
                        {l.used} of {l.limit}
                        {Number.isFinite(l.share) && <span className="muted"> ({Math.round(l.share * 100)} %)</span>}
                      </span>
                    </div>
                  ))}
                </li>
              );
            })}
          </ul>
        </>
      )}
    </section>
  );
}
