import { describe, expect, it } from "vitest";
import { SSEParser } from "./sse";

describe("the run stream's server-sent events", () => {
  it("are read with their id and event name, across chunk boundaries", () => {
    const p = new SSEParser();
    expect(p.push('id: 1\nevent: RunCreated\ndata: {"seq":1}\n\nid: 2\nevent: Step')).toEqual([{ id: "1", event: "RunCreated", data: '{"seq":1}' }]);
    expect(p.push('Started\ndata: {"seq":2}\r\n\r\n: comment\n\n')).toEqual([{ id: "2", event: "StepStarted", data: '{"seq":2}' }]);
  });
  it("join multi-line data and default the event name to message", () => {
    expect(new SSEParser().push("data: a\ndata: b\n\n")).toEqual([{ id: undefined, event: "message", data: "a\nb" }]);
  });
});
