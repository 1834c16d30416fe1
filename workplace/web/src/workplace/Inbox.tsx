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
 * The open questions of the workspace the reader may answer (mayAnswer "true") or may not
 * ("false"), a page at a time: the pages shown so far are read again from the start on every
 * tick, so that answered questions leave them and escalated ones change lists.
 */
function useQuestions(api: string, mayAnswer: "true" | "false", tick: number, onApiDown: (detail: string) => void) {
  const [items, setItems] = useState<OpenQuestion[]>();
  const [next, setNext] = useState<string>();
  const [pages, setPages] = useState(1);
  const [error, setError] = useState<string>();

  const load = useCallback(async () => {
    try {
      let list: OpenQuestion[] = [];
      let after: string | undefined;
      for (let n = 0; n < pages; n++) {
        const page = await get<OpenQuestionList>(`${api}/pending-actions?state=open&mayAnswer=${mayAnswer}&take=${PAGE}${after ? `&after=${enc(after)}` : ""}`);
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
  }, [api, mayAnswer, pages, onApiDown]);

  useEffect(() => {
    void load();
  }, [load, tick]);

  return { items, next, error, load, more: () => setPages((p) => p + 1) };
}

/**
 * "Needs you": the open questions of the workspace the reader may answer, of conversations and of
 * autonomous Tasks, oldest first, each answerable in place with the conversation's controls. The
 * questions the reader may not answer (escalated to the workspace's Owners and Admins, for a
 * Member; every one, for a reader who may only follow the work) are listed apart, read-only, under
 * a heading that says whom they wait for. A question answered or escalated anywhere moves on the
 * next refresh (the hub tells, tick changes).
 */
export function Inbox({ api, workspace, dashPath, tick, onChanged, onApiDown }: Props) {
  const mine = useQuestions(api, "true", tick, onApiDown);
  const others = useQuestions(api, "false", tick, onApiDown);
  // onChanged refreshes the page's counts and moves tick, which reads both lists again.
  const reload = onChanged;
  const card = (q: OpenQuestion) => (
    <li key={q.id}>
      <QuestionCard
        place={{ api, workspace, interactionId: q.interactionId, taskId: q.taskId }}
        action={q}
        onApiDown={onApiDown}
        onAnswered={reload}
        heading={
          <p className="question-source">
            <Link href={q.interactionId ? `${dashPath}?c=${enc(q.interactionId)}` : `/w/${enc(workspace)}/tasks/${enc(q.taskId ?? "")}`}>{q.title}</Link>
            <span className="muted"> · {q.interactionId ? "conversation" : "autonomous Task"} · asked {when(q.createdAt)}</span>
          </p>
        }
      />
    </li>
  );
  // An escalated question waits for an administrator whoever reads it; any other the reader may
  // not answer waits for someone who may run work.
  const escalated = (others.items ?? []).filter((q) => q.escalatedAt);
  const readable = (others.items ?? []).filter((q) => !q.escalatedAt);

  return (
    <section className="inbox" aria-labelledby="inbox-h">
      <Link href={dashPath}>← Back to the Dashboard</Link>
      <h1 id="inbox-h">Needs you</h1>
      <p className="muted">Every question in this workspace that waits for your answer, oldest first.</p>
      {mine.error && <StateNote state="failure" tone="error">{mine.error}</StateNote>}
      {!mine.items && !mine.error && <Loading label="Loading your questions…" />}
      {mine.items && mine.items.length === 0 && <StateNote state="empty">Nothing needs your answer right now.</StateNote>}
      {mine.items && mine.items.length > 0 && <ol className="inbox-list" data-list="may-answer">{mine.items.map(card)}</ol>}
      {mine.next && (
        <button type="button" onClick={mine.more}>
          Show more
        </button>
      )}

      {others.error && <StateNote state="failure" tone="error">{others.error}</StateNote>}
      {escalated.length > 0 && (
        <section className="inbox-others" aria-labelledby="inbox-escalated-h" data-list="escalated">
          <h2 id="inbox-escalated-h">Waiting for an administrator</h2>
          <p className="muted">Nobody answered these in time, so only the workspace's Owners and Admins may answer them now. They leave this list once answered.</p>
          <ol className="inbox-list">{escalated.map(card)}</ol>
        </section>
      )}
      {readable.length > 0 && (
        <section className="inbox-others" aria-labelledby="inbox-readable-h" data-list="read-only">
          <h2 id="inbox-readable-h">Waiting for others</h2>
          <p className="muted">You may follow the work of this workspace but not answer its questions.</p>
          <ol className="inbox-list">{readable.map(card)}</ol>
        </section>
      )}
      {others.next && (
        <button type="button" onClick={others.more}>
          Show more of the questions waiting for others
        </button>
      )}
    </section>
  );
}
