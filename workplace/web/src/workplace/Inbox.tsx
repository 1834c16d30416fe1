import { useCallback, useEffect, useState } from "react";
import { ApiError, enc, get } from "../shared/api";
import { when } from "../shared/format";
import { QuestionCard } from "../shared/questions";
import { Link } from "../shared/router";
import type { OpenQuestion, OpenQuestionList } from "../shared/types";
import { Loading, StateNote } from "./components";

interface Props {
  api: string;
  workspace: string;
  dashPath: string;
  tick: number;
  onChanged: () => void;
  onApiDown: (detail: string) => void;
}

const PAGE = 50;

/**
 * "Needs you": every open question of the workspace, of conversations and of autonomous Tasks,
 * oldest first, each answerable in place with the conversation's controls. A question answered
 * anywhere leaves the list on the next refresh (the hub tells, tick changes).
 */
export function Inbox({ api, workspace, dashPath, tick, onChanged, onApiDown }: Props) {
  const [items, setItems] = useState<OpenQuestion[]>();
  const [next, setNext] = useState<string>();
  const [pages, setPages] = useState(1);
  const [error, setError] = useState<string>();

  const load = useCallback(async () => {
    try {
      // The pages shown so far are read again from the start: answered questions leave them.
      let list: OpenQuestion[] = [];
      let after: string | undefined;
      for (let n = 0; n < pages; n++) {
        const page = await get<OpenQuestionList>(`${api}/pending-actions?state=open&take=${PAGE}${after ? `&after=${enc(after)}` : ""}`);
        list = list.concat(page.items);
        after = page.next;
        if (!after) break;
      }
      setItems(list);
      setNext(after);
      setError(undefined);
    } catch (e) {
      if (e instanceof ApiError && e.unavailable) onApiDown(e.message);
      else setError(e instanceof ApiError ? e.message : String(e));
    }
  }, [api, pages, onApiDown]);

  useEffect(() => {
    void load();
  }, [load, tick]);

  return (
    <section className="inbox" aria-labelledby="inbox-h">
      <Link href={dashPath}>← Back to the Dashboard</Link>
      <h1 id="inbox-h">Needs you</h1>
      <p className="muted">Every question waiting for an answer in this workspace, oldest first.</p>
      {error && <StateNote state="failure" tone="error">{error}</StateNote>}
      {!items && !error && <Loading label="Loading your questions…" />}
      {items && items.length === 0 && <StateNote state="empty">Nothing needs your answer right now.</StateNote>}
      {items && items.length > 0 && (
        <ol className="inbox-list">
          {items.map((q) => (
            <li key={q.id}>
              <QuestionCard
                place={{ api, workspace, interactionId: q.interactionId, taskId: q.taskId }}
                action={q}
                onApiDown={onApiDown}
                onAnswered={() => (onChanged(), void load())}
                heading={
                  <p className="question-source">
                    <Link href={q.interactionId ? `${dashPath}?c=${enc(q.interactionId)}` : `/w/${enc(workspace)}/tasks/${enc(q.taskId ?? "")}`}>{q.title}</Link>
                    <span className="muted"> · {q.interactionId ? "conversation" : "autonomous Task"} · asked {when(q.createdAt)}</span>
                  </p>
                }
              />
            </li>
          ))}
        </ol>
      )}
      {next && (
        <button type="button" onClick={() => setPages((p) => p + 1)}>
          Show more
        </button>
      )}
    </section>
  );
}
