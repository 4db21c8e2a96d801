// Drives `ramem mcp` over stdio with the TypeScript SDK's client and prints what it saw as
// JSON on stdout; tests/mcp/test_clients.py checks it. Usage: node client.mjs PYTHON MEMORY_DIR
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [python, path] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "ramem_core.cli", "mcp", "--path", path, "--namespace", "ts"],
  stderr: "ignore",
});
const client = new Client({ name: "ramem-ts-test", version: "1.0.0" });
await client.connect(transport);

const call = async (name, args) => {
  const result = await client.callTool({ name, arguments: args });
  return {
    isError: result.isError ?? false,
    text: result.content.map((c) => c.text).join("\n"),
    structured: result.structuredContent ?? null,
  };
};

const { tools } = await client.listTools();
const out = {
  server: client.getServerVersion(),
  tools: tools.map((t) => ({ name: t.name, inputSchema: t.inputSchema, outputSchema: t.outputSchema })),
  lisbon: await call("remember", { speaker: "user", text: "I live in Lisbon", at: "2024-04-10T09:00:00Z" }),
  porto: await call("remember", {
    speaker: "user",
    text: "I moved to Porto last week",
    at: "2024-05-28T18:30:00+02:00",
    idempotency_key: "msg-2",
  }),
  portoAgain: await call("remember", {
    speaker: "user",
    text: "I moved to Porto last week",
    at: "2024-05-28T18:30:00+02:00",
    idempotency_key: "msg-2",
  }),
  badTime: await call("remember", { speaker: "user", text: "I like figs", at: "next Tuesday" }),
  now: await call("recall", { question: "Where do I live now?", at: "2024-06-10T09:00:00Z" }),
  april: await call("recall", { question: "Where did I live in April?", at: "2024-08-01T09:00:00Z" }),
  page: await call("list", { limit: 10 }),
};
await client.close();
process.stdout.write(JSON.stringify(out));
