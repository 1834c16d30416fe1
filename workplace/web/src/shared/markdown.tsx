import type { ReactNode } from "react";

/**
 * A safe subset of Markdown as React elements: headings, paragraphs, bullet and numbered lists,
 * tables, **bold**, *emphasis* and `code`. Text only ever becomes text nodes: raw HTML in the
 * source is shown as typed, never interpreted, and links are not made (an answer cannot send
 * anyone elsewhere).
 */
export type Block =
  | { kind: "heading"; level: number; text: string }
  | { kind: "paragraph"; text: string }
  | { kind: "list"; ordered: boolean; items: string[] }
  | { kind: "table"; header: string[]; rows: string[][] };

/** Bounds what one text can cost to render. */
const MAX_CHARS = 200_000;

const cells = (line: string) =>
  line
    .trim()
    .replace(/^\|/, "")
    .replace(/\|$/, "")
    .split("|")
    .map((c) => c.trim());
const isRule = (line: string) => /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(line);
const bullet = /^\s*[-*+]\s+(.*)$/;
const numbered = /^\s*\d+[.)]\s+(.*)$/;

export function parseMarkdown(source: string): Block[] {
  const lines = source.slice(0, MAX_CHARS).replace(/\r\n?/g, "\n").split("\n");
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      blocks.push({ kind: "heading", level: heading[1].length, text: heading[2].trim() });
      i++;
      continue;
    }
    if (line.trim().startsWith("|") && i + 1 < lines.length && isRule(lines[i + 1])) {
      const header = cells(line);
      const rows: string[][] = [];
      i += 2;
      while (i < lines.length && lines[i].trim().startsWith("|")) rows.push(cells(lines[i++]));
      blocks.push({ kind: "table", header, rows });
      continue;
    }
    const list = bullet.exec(line) ? bullet : numbered.exec(line) ? numbered : undefined;
    if (list) {
      const items: string[] = [];
      while (i < lines.length) {
        const m = list.exec(lines[i]);
        // An indented line under an item continues it (a README wraps its items).
        if (m) items.push(m[1]);
        else if (/^\s+\S/.test(lines[i]) && !bullet.test(lines[i]) && !numbered.test(lines[i])) items[items.length - 1] += ` ${lines[i].trim()}`;
        else break;
        i++;
      }
      blocks.push({ kind: "list", ordered: list === numbered, items });
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i].trim() && !/^#{1,6}\s/.test(lines[i]) && !bullet.test(lines[i]) && !numbered.test(lines[i]) && !lines[i].trim().startsWith("|"))
      para.push(lines[i++].trim());
    if (para.length === 0) para.push(lines[i++].trim());
    blocks.push({ kind: "paragraph", text: para.join("\n") });
  }
  return blocks;
}

/** Inline marks: **bold**, *emphasis*, `code`; everything else stays text. */
export function inline(text: string): ReactNode[] {
  const out: ReactNode[] = [];
  const re = /(\*\*[^*]+\*\*|`[^`]+`|\*[^*\s][^*]*\*)/g;
  let last = 0;
  let m: RegExpExecArray | null;
  let n = 0;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    const t = m[0];
    if (t.startsWith("**")) out.push(<strong key={n++}>{t.slice(2, -2)}</strong>);
    else if (t.startsWith("`")) out.push(<code key={n++}>{t.slice(1, -1)}</code>);
    else out.push(<em key={n++}>{t.slice(1, -1)}</em>);
    last = m.index + t.length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** Renders text written in Markdown; headings start at h3 so that they sit under the page's own. */
export function Markdown({ text, className }: { text: string; className?: string }) {
  const blocks = parseMarkdown(text);
  return (
    <div className={`markdown ${className ?? ""}`.trim()}>
      {blocks.map((b, n) => {
        switch (b.kind) {
          case "heading": {
            const level = Math.min(6, b.level + 2);
            const H = `h${level}` as "h3" | "h4" | "h5" | "h6";
            return <H key={n}>{inline(b.text)}</H>;
          }
          case "list":
            return b.ordered ? (
              <ol key={n}>{b.items.map((it, k) => <li key={k}>{inline(it)}</li>)}</ol>
            ) : (
              <ul key={n}>{b.items.map((it, k) => <li key={k}>{inline(it)}</li>)}</ul>
            );
          case "table":
            return (
              <div className="table-scroll" key={n}>
                <table>
                  <thead>
                    <tr>{b.header.map((h, k) => <th key={k} scope="col">{inline(h)}</th>)}</tr>
                  </thead>
                  <tbody>
                    {b.rows.map((r, k) => (
                      <tr key={k}>{b.header.map((_, c) => <td key={c}>{inline(r[c] ?? "")}</td>)}</tr>
                    ))}
                  </tbody>
                </table>
              </div>
            );
          default:
            return <p key={n}>{inline(b.text)}</p>;
        }
      })}
    </div>
  );
}

/**
 * A Result as what it is: its text as Markdown; without text, structured output as a table (a
 * list of records) or as named values (a record), never as raw JSON.
 */
export function ResultView({ text, output }: { text?: string; output?: unknown }) {
  if (text) return <Markdown text={text} />;
  if (typeof output === "string") return <Markdown text={output} />;
  if (Array.isArray(output) && output.length > 0 && output.every((r) => r && typeof r === "object" && !Array.isArray(r))) {
    const columns = [...new Set(output.flatMap((r) => Object.keys(r as object)))].slice(0, 20);
    return (
      <div className="table-scroll">
        <table>
          <thead>
            <tr>{columns.map((c) => <th key={c} scope="col">{c}</th>)}</tr>
          </thead>
          <tbody>
            {output.slice(0, 500).map((r, k) => (
              <tr key={k}>{columns.map((c) => <td key={c}>{plain((r as Record<string, unknown>)[c])}</td>)}</tr>
            ))}
          </tbody>
        </table>
      </div>
    );
  }
  if (output && typeof output === "object") {
    return (
      <dl className="result-values">
        {Object.entries(output as Record<string, unknown>).slice(0, 50).map(([k, v]) => (
          <div key={k}>
            <dt>{k}</dt>
            <dd>{plain(v)}</dd>
          </div>
        ))}
      </dl>
    );
  }
  return null;
}

/** A value as a person reads it in a cell. */
function plain(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "object") return Array.isArray(v) ? v.map(plain).join(", ") : Object.entries(v as object).map(([k, x]) => `${k}: ${plain(x)}`).join("; ");
  return String(v);
}
