import { useId, useRef, useState, type KeyboardEvent } from "react";
import type { PublishedEntry } from "../shared/types";
import { entryTitle, initialValues, primaryField, sendShortcut, submission } from "./presentation";

/** Why an Entry that is not Executable cannot start, in words (its targetState is a code). */
const unavailableWhy: Record<string, string> = {
  Disabled: "an administrator disabled what it runs.",
  Unavailable: "what it runs is not available right now.",
  Unknown: "it is still being checked; try again in a moment.",
};

/**
 * The one generic renderer of every Prompt and Form Entry (rule 16): the primary input is a
 * multiline composer that suggestions fill without sending, the other fields are plain controls,
 * sending is explicit (the button, or Ctrl or Command + Enter). No attachment control is offered.
 */
export function EntryForm({ entry, onSubmit, busy, error }: { entry: PublishedEntry; onSubmit: (input: Record<string, unknown>) => void; busy: boolean; error?: string }) {
  const fields = entry.presentation.fields ?? [];
  const primary = primaryField(fields);
  const [values, setValues] = useState(() => initialValues(fields));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const composer = useRef<HTMLTextAreaElement>(null);
  const id = useId();
  const executable = !entry.targetState || entry.targetState === "Executable";

  const send = () => {
    if (busy || !executable) return;
    const s = submission(fields, values);
    setErrors(s.errors);
    if (Object.keys(s.errors).length > 0) return;
    onSubmit(s.input);
  };
  const onKey = (e: KeyboardEvent) => {
    if (sendShortcut(e)) {
      e.preventDefault();
      send();
    }
  };
  const set = (name: string, v: string) => setValues((old) => ({ ...old, [name]: v }));
  const title = entryTitle(entry);

  return (
    <form
      className="entry-form"
      aria-label={title}
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      {primary && (
        <div className="field">
          <label htmlFor={`${id}-${primary.name}`}>{primary.label || title}</label>
          <textarea
            id={`${id}-${primary.name}`}
            ref={composer}
            rows={3}
            value={values[primary.name] ?? ""}
            placeholder={primary.placeholder}
            onChange={(e) => set(primary.name, e.target.value)}
            onKeyDown={onKey}
            disabled={busy}
            aria-invalid={!!errors[primary.name]}
            aria-describedby={`${id}-hint`}
          />
          {errors[primary.name] && <p className="field-error" role="alert">{errors[primary.name]}</p>}
        </div>
      )}
      {(entry.presentation.suggestions ?? []).length > 0 && primary && (
        <div className="suggestions" role="group" aria-label="Suggestions">
          {entry.presentation.suggestions!.map((s) => (
            <button
              type="button"
              key={s}
              className="chip"
              disabled={busy}
              onClick={() => {
                set(primary.name, s);
                composer.current?.focus();
              }}
            >
              {s}
            </button>
          ))}
        </div>
      )}
      {fields
        .filter((f) => f !== primary)
        .map((f) => {
          const fid = `${id}-${f.name}`;
          const label = f.label || f.name;
          let control;
          switch (f.type) {
            case "Choice":
              control = (
                <select id={fid} value={values[f.name] ?? ""} onChange={(e) => set(f.name, e.target.value)} disabled={busy}>
                  {!f.required && !f.default && <option value="">—</option>}
                  {(f.choices ?? []).map((c) => (
                    <option key={c.value} value={c.value}>
                      {c.label || c.value}
                    </option>
                  ))}
                </select>
              );
              break;
            case "Boolean":
              control = <input id={fid} type="checkbox" checked={values[f.name] === "true"} onChange={(e) => set(f.name, String(e.target.checked))} disabled={busy} />;
              break;
            case "MultilineText":
              control = <textarea id={fid} rows={2} value={values[f.name] ?? ""} placeholder={f.placeholder} onChange={(e) => set(f.name, e.target.value)} onKeyDown={onKey} disabled={busy} />;
              break;
            default:
              control = (
                <input id={fid} type={f.type === "Number" ? "number" : "text"} value={values[f.name] ?? ""} placeholder={f.placeholder} onChange={(e) => set(f.name, e.target.value)} onKeyDown={onKey} disabled={busy} />
              );
          }
          return (
            <div className={`field ${f.type === "Boolean" ? "inline" : ""}`} key={f.name}>
              <label htmlFor={fid}>{label}</label>
              {control}
              {f.description && <p className="hint">{f.description}</p>}
              {errors[f.name] && <p className="field-error" role="alert">{errors[f.name]}</p>}
            </div>
          );
        })}
      {error && <p className="state-note error" role="alert" data-state="failure">{error}</p>}
      {!executable && (
        <p className="state-note warn" data-state="unavailable">
          This Entry cannot start now: {unavailableWhy[entry.targetState ?? ""] ?? "try again later."}
        </p>
      )}
      <div className="form-actions">
        <span id={`${id}-hint`} className="hint">Ctrl or ⌘ + Enter sends</span>
        <button type="submit" className="primary" disabled={busy || !executable} aria-busy={busy}>
          {busy ? "Sending…" : "Send"}
        </button>
      </div>
    </form>
  );
}
