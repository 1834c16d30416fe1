import type { ReactNode } from "react";

/** A whole-page state (loading, signed out, API unavailable, ...). */
export function Screen({ title, children, busy, state }: { title: string; children: ReactNode; busy?: boolean; state?: string }) {
  return (
    <main className="screen" data-state={state ?? (busy ? "loading" : undefined)}>
      <div className="screen-card">
        <h1>{title}</h1>
        <div role={busy ? "status" : undefined} aria-live={busy ? "polite" : undefined}>
          {busy && <span className="spinner" aria-hidden="true" />}
          {children}
        </div>
      </div>
    </main>
  );
}

/** An explicit state inside a section: empty, failure, no result, ... */
export function StateNote({ state, children, tone }: { state: string; children: ReactNode; tone?: "info" | "warn" | "error" }) {
  return (
    <p className={`state-note ${tone ?? "info"}`} data-state={state}>
      {children}
    </p>
  );
}

export function Loading({ label }: { label: string }) {
  return (
    <p className="state-note info" role="status" data-state="loading">
      <span className="spinner" aria-hidden="true" /> {label}
    </p>
  );
}
