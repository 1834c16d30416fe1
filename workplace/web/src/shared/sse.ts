// A reader of server-sent events over fetch: the run stream names each event after its type, which
// EventSource would only deliver to listeners registered per name, and the reader resumes with
// Last-Event-ID after a dropped connection.

export interface ServerEvent {
  id?: string;
  event: string;
  data: string;
}

/** SSEParser turns chunks of a text/event-stream into events (the WHATWG rules that matter here). */
export class SSEParser {
  private buffer = "";
  private data: string[] = [];
  private event = "";
  private id: string | undefined;

  push(chunk: string): ServerEvent[] {
    this.buffer += chunk;
    const out: ServerEvent[] = [];
    for (;;) {
      const nl = this.buffer.search(/\r\n|\r|\n/);
      if (nl < 0) break;
      const line = this.buffer.slice(0, nl);
      const sep = this.buffer.startsWith("\r\n", nl) ? 2 : 1;
      this.buffer = this.buffer.slice(nl + sep);
      if (line === "") {
        if (this.data.length > 0) out.push({ id: this.id, event: this.event || "message", data: this.data.join("\n") });
        this.data = [];
        this.event = "";
        continue;
      }
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") this.data.push(value);
      else if (field === "event") this.event = value;
      else if (field === "id" && !value.includes("\0")) this.id = value;
    }
    return out;
  }
}

export interface StreamHandlers {
  onEvent: (e: ServerEvent) => void;
  onState: (state: "open" | "reconnecting" | "ended" | "failed", detail?: string) => void;
}

/** stream reads url until it ends or signal aborts, reconnecting with Last-Event-ID. */
export async function stream(url: string, handlers: StreamHandlers, signal: AbortSignal) {
  let last: string | undefined;
  let failures = 0;
  while (!signal.aborted) {
    try {
      const headers: Record<string, string> = { Accept: "text/event-stream" };
      if (last) headers["Last-Event-ID"] = last;
      const resp = await fetch(url, { headers, signal, credentials: "same-origin" });
      if (!resp.ok || !resp.body) {
        const problem = await resp.json().catch(() => ({}));
        handlers.onState("failed", problem.detail ?? resp.statusText);
        return;
      }
      handlers.onState("open");
      failures = 0;
      const parser = new SSEParser();
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const e of parser.push(value)) {
          if (e.id) last = e.id;
          handlers.onEvent(e);
        }
      }
      // The server ends the stream once the run is over and every event was sent.
      handlers.onState("ended");
      return;
    } catch (e) {
      if (signal.aborted) return;
      failures++;
      handlers.onState("reconnecting", (e as Error).message);
      await new Promise((r) => setTimeout(r, Math.min(1000 * 2 ** failures, 15000)));
    }
  }
}
