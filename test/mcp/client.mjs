// The official MCP TypeScript client against the platform's /mcp, as the Go tests drive it.
//
// Environment: MCP_URL (the endpoint), MCP_TOKEN (a bearer token: a personal access token or a
// JWT; never an argument, which other users of the machine could read), MCP_CALLS (a JSON list of
// {"name", "arguments"} to call after listing the tools). Prints one JSON object: the server's
// name and version, the tools listed and the result of each call (or the error it raised), or
// {"error": ...} when the client cannot connect.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.env.MCP_URL);
const headers = process.env.MCP_TOKEN ? { Authorization: `Bearer ${process.env.MCP_TOKEN}` } : {};
const calls = JSON.parse(process.env.MCP_CALLS || "[]");

const client = new Client({ name: "platform-test-client", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
try {
  await client.connect(transport);
} catch (e) {
  console.log(JSON.stringify({ error: String(e && e.message ? e.message : e) }));
  process.exit(0);
}
const out = { server: client.getServerVersion(), tools: [], results: [] };
const listed = await client.listTools();
out.tools = listed.tools.map((t) => ({ name: t.name, description: t.description || "", inputSchema: t.inputSchema }));
for (const c of calls) {
  try {
    const r = await client.callTool({ name: c.name, arguments: c.arguments || {} });
    out.results.push({ isError: !!r.isError, text: (r.content || []).filter((p) => p.type === "text").map((p) => p.text).join("\n") });
  } catch (e) {
    out.results.push({ error: String(e && e.message ? e.message : e) });
  }
}
await client.close();
console.log(JSON.stringify(out));
