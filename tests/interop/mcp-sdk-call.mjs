// Calls one tool of a Paperchain MCP endpoint with the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk 1.x, as `cargo xtask setup` installs it) over streamable HTTP,
// the way an agent does: connect, list the tools (the SDK then validates every
// structuredContent against the tool's outputSchema), call. Prints one JSON line:
//   {"sdk": "1.x.y", "tools": [names], "result": CallToolResult} when the call returns,
//   {"sdk": "1.x.y", "tools": [names], "callError": {"code", "message"}} when the SDK refuses it.
//
//   node mcp-sdk-call.mjs MCP_URL TOOL_NAME JSON_ARGUMENTS|-
//
// The arguments are read from stdin when they are `-` (document inputs outgrow an argument).
// Only loopback addresses may be fetched: this is a test against a local sandbox, and nothing
// here may reach the internet. Exit 0 once a line is printed; 2 on a usage or setup mistake;
// 1 when connecting or listing fails.

import { join } from "node:path";
import { readFileSync } from "node:fs";
import { guardFetch, toolsRequire } from "./common.mjs";

function fail(code, message) {
  process.stderr.write(`mcp-sdk-call: ${message}\n`);
  process.exit(code);
}

const [url, toolName, argumentsArg] = process.argv.slice(2);
if (!url || !toolName || argumentsArg === undefined) {
  fail(2, "usage: node mcp-sdk-call.mjs MCP_URL TOOL_NAME JSON_ARGUMENTS|-");
}
let toolArguments;
try {
  toolArguments = JSON.parse(argumentsArg === "-" ? readFileSync(0, "utf8") : argumentsArg);
} catch (error) {
  fail(2, `the arguments are not JSON: ${error.message}`);
}

try {
  guardFetch(url);
} catch (error) {
  fail(2, error.message);
}
const { tools, require } = toolsRequire();
let Client, StreamableHTTPClientTransport, sdk;
try {
  ({ Client } = require("@modelcontextprotocol/sdk/client/index.js"));
  ({ StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  // Its exports map hides package.json; the version is read from the file.
  const manifest = join(tools, "npm/node_modules/@modelcontextprotocol/sdk/package.json");
  sdk = JSON.parse(readFileSync(manifest, "utf8")).version;
} catch (error) {
  fail(2, `the MCP TypeScript SDK is not installed in ${join(tools, "npm")}; run \`cargo xtask setup\` (${error.message})`);
}

const client = new Client({ name: "paperchain-interop", version: "0.0.0" });
let names;
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  // Listing caches each tool's output validator: from here on callTool validates.
  names = (await client.listTools()).tools.map((tool) => tool.name);
} catch (error) {
  fail(1, `connecting to ${url} and listing its tools failed: ${error.message}`);
}
let line;
try {
  const result = await client.callTool({ name: toolName, arguments: toolArguments });
  line = { sdk, tools: names, result };
} catch (error) {
  line = { sdk, tools: names, callError: { code: error.code ?? null, message: String(error.message) } };
}
process.stdout.write(`${JSON.stringify(line)}\n`);
await client.close();
