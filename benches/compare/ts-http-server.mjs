// The TypeScript SDK's echo server over Streamable HTTP for `cargo bench --bench compare`
// (its `http` group): one `echo` tool, sessions (a transport and an McpServer per session,
// minted at `initialize`, as the SDK's stateful example does) and JSON answers
// (`enableJsonResponse`), which is how corral answers a call that sends no progress first.
// Plain `node:http`, so that no framework sits between the SDK and the socket. It listens on
// 127.0.0.1 on a free port and logs the same line as corral, which the bench waits for.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

const transports = new Map();

function echoServer() {
  const server = new McpServer({ name: "ts-echo", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Returns its text unchanged", inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString();
  const body = text ? JSON.parse(text) : undefined;
  const id = req.headers["mcp-session-id"];
  let transport = id ? transports.get(id) : undefined;
  if (!transport) {
    if (id || req.method !== "POST" || !isInitializeRequest(body)) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "no such session" } }));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (sid) => transports.set(sid, transport),
    });
    transport.onclose = () => transports.delete(transport.sessionId);
    await echoServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
});
httpServer.keepAliveTimeout = 60_000;
httpServer.listen(0, "127.0.0.1", () => {
  console.error(`serving MCP over HTTP at http://127.0.0.1:${httpServer.address().port}/mcp`);
});
