// The TypeScript SDK's echo server for `cargo bench --bench compare`: one `echo` tool, stdio.
// The bench copies this file next to the SDK it installs (target/compare-ts), so that the
// imports resolve there.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "ts-echo", version: "1.0.0" });
server.registerTool(
  "echo",
  { description: "Returns its text unchanged", inputSchema: { text: z.string() } },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);
await server.connect(new StdioServerTransport());
