// harness.mjs drives the official SignalR client for the Go tests (signalrtest): the options are
// a JSON object in the first argument, commands arrive as JSON lines on standard input, and what
// the client sees leaves as JSON lines on standard output.
//
// Options: url (of the hub), token (accessTokenFactory), cookie and origin (headers, as a browser
// would send them), skipNegotiation, reconnectMs (automatic reconnection at that interval).
// Commands: {"op":"invoke","id":N,"method":M,"args":[...]}, {"op":"stop"}.
import * as signalR from "@microsoft/signalr";
import readline from "node:readline";

const options = JSON.parse(process.argv[2] ?? "{}");
const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const events = [
  "InteractionUpdated", "MessageAdded", "PendingActionCreated", "PendingActionResolved",
  "TaskCreated", "TaskStatusChanged", "TaskActivityAdded", "TaskResultAdded", "TaskArtifactAdded",
  "NotificationCreated", "NotificationUpdated", "UnreadNotificationCountChanged",
];

const headers = {};
if (options.cookie) headers.Cookie = options.cookie;
if (options.origin) headers.Origin = options.origin;
const http = { headers };
if (options.token) http.accessTokenFactory = () => options.token;
if (options.skipNegotiation) {
  http.skipNegotiation = true;
  http.transport = signalR.HttpTransportType.WebSockets;
}
let builder = new signalR.HubConnectionBuilder().withUrl(options.url, http).configureLogging(signalR.LogLevel.None);
if (options.reconnectMs) {
  builder = builder.withAutomaticReconnect({
    nextRetryDelayInMilliseconds: (ctx) => (ctx.elapsedMilliseconds > 180000 ? null : options.reconnectMs),
  });
}
const connection = builder.build();
for (const name of events) {
  connection.on(name, (payload) => emit({ type: "event", name, payload }));
}
connection.onreconnecting((e) => emit({ type: "reconnecting", error: e?.message ?? "" }));
connection.onreconnected(() => emit({ type: "reconnected" }));
connection.onclose((e) => emit({ type: "closed", error: e?.message ?? "" }));

try {
  await connection.start();
  emit({ type: "started" });
} catch (e) {
  emit({ type: "start-failed", error: e.message });
  process.exit(0);
}

readline.createInterface({ input: process.stdin }).on("line", async (line) => {
  const cmd = JSON.parse(line);
  if (cmd.op === "stop") {
    await connection.stop();
    process.exit(0);
  }
  if (cmd.op === "invoke") {
    try {
      const result = await connection.invoke(cmd.method, ...(cmd.args ?? []));
      emit({ type: "result", id: cmd.id, ok: true, result: result ?? null });
    } catch (e) {
      emit({ type: "result", id: cmd.id, ok: false, error: e.message });
    }
  }
});
