// The official TypeScript SDK client (@modelcontextprotocol/client, as the inspector in .tools/mcp uses it) opens a
// `subscriptions/listen` stream and prints each event as one JSON line: {"ready": true} once the server
// acknowledged, then {"method", "uri"} per notification; stdin closing ends it.
// Usage: MCP_CLIENT=<the package's dist/index.mjs> node ts_listen.mjs MCP_URL URI...
import { pathToFileURL } from "node:url";

const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(process.env.MCP_CLIENT ?? "").href);

const [url, ...uris] = process.argv.slice(2);
// The SDK speaks the 2025 protocol unless asked; subscriptions/listen is 2026-07-28's, found by the probe.
const client = new Client({ name: "codap-relay-test", version: "1" }, { versionNegotiation: { mode: "auto" } });
const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
client.setNotificationHandler("notifications/resources/updated", (n) =>
  say({ method: n.method, uri: n.params.uri }),
);
client.setNotificationHandler("notifications/resources/list_changed", (n) => say({ method: n.method }));
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const subscription = await client.listen({ resourcesListChanged: true, resourceSubscriptions: uris });
say({ ready: true, subscribe: client.getServerCapabilities()?.resources?.subscribe ?? false });
process.stdin.resume();
process.stdin.on("end", async () => {
  await subscription.close();
  await client.close();
  process.exit(0);
});
