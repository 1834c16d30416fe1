// listen.mjs: connects to the platform's real-time hub with the official SignalR client, joins a
// workspace's group and prints every event it receives, one line each.
//
//   cd test/signalr && npm ci
//   PLATFORM_TOKEN=<personal access token> node listen.mjs [base URL] [workspace]
//
// The base URL defaults to http://127.0.0.1:5100 (`make run`), the workspace to `default`. The
// token needs runs/read in the workspace. After a reconnection the script joins again; a client
// that shows state would also read it again over REST then.
import * as signalR from "@microsoft/signalr";

const [base = "http://127.0.0.1:5100", workspace = "default"] = process.argv.slice(2);
const token = process.env.PLATFORM_TOKEN;
if (!token) {
  console.error("set PLATFORM_TOKEN to a personal access token (POST /api/identity/pat)");
  process.exit(2);
}

const events = [
  "InteractionUpdated", "MessageAdded", "PendingActionCreated", "PendingActionResolved",
  "TaskCreated", "TaskStatusChanged", "TaskActivityAdded", "TaskResultAdded", "TaskArtifactAdded",
  "NotificationCreated", "NotificationUpdated", "UnreadNotificationCountChanged",
];

const connection = new signalR.HubConnectionBuilder()
  .withUrl(new URL("/hubs/workplace", base).toString(), { accessTokenFactory: () => token })
  .withAutomaticReconnect()
  .configureLogging(signalR.LogLevel.Warning)
  .build();
for (const name of events) {
  connection.on(name, (payload) => console.log(`${name} ${JSON.stringify(payload)}`));
}
const join = async () => {
  await connection.invoke("JoinWorkspace", workspace);
  console.log(`joined workspace ${workspace}`);
};
connection.onreconnected(() => join().catch((e) => console.error(`join failed: ${e.message}`)));
connection.onclose((e) => {
  console.error(`closed${e ? `: ${e.message}` : ""}`);
  process.exit(1);
});
process.on("SIGINT", () => connection.stop().then(() => process.exit(0)));

await connection.start();
await join();
