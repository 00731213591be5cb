// One MCP session with the official MCP TypeScript SDK client (@modelcontextprotocol/sdk 1.x,
// as `cargo xtask setup` installs it), as a desktop agent runs one: connect over stdio (the
// server started as a child process) or streamable HTTP, list the tools, then take the steps
// in order: call a tool, or read a resource. Reads the plan on stdin:
//   {"server": {"url": "http://127.0.0.1:…/mcp"} | {"command": "…", "args": […], "env": {…}},
//    "steps": [{"call": "tool", "arguments": {…}, "cancel_after_ms": n?} | {"read": "file:///…"}
//              | {"sleep_ms": n}]}
// and prints one JSON line: {"sdk": "1.x.y", "tools": [names], "steps": [answer per step]},
// an answer being {"result": …} or {"error": {"code", "message"}}. A call with
// "cancel_after_ms" is aborted after that long, as a user stopping an agent does: the SDK
// sends notifications/cancelled for it; its answer then also has "cancelled_at" (epoch ms).
// A call with "progress": true asks for progress; its answer then also has "progress", the
// notifications/progress received, in order.
//
// With "elicitation": "approve" or "deny" in the plan the client takes URL-mode elicitation,
// as an agent's app that shows the user a page does: for each request it opens the page
// (loopback only), answers it with that decision as the user would, and accepts the
// elicitation; the line then also has "elicitations": [{"params", "page", "answer"}] with the
// page's status and text. Without it the client declares no elicitation.
//
// Only loopback addresses may be fetched. Exit 0 once the line is printed; 2 on a usage or
// setup mistake; 1 when connecting or listing fails.

import { join } from "node:path";
import { readFileSync } from "node:fs";
import { guardFetch, toolsRequire } from "./common.mjs";

function fail(code, message) {
  process.stderr.write(`mcp-sdk-session: ${message}\n`);
  process.exit(code);
}

let plan;
try {
  plan = JSON.parse(readFileSync(0, "utf8"));
} catch (error) {
  fail(2, `the plan on stdin is not JSON: ${error.message}`);
}

const { tools, require } = toolsRequire();
let Client, StreamableHTTPClientTransport, StdioClientTransport, getDefaultEnvironment, ElicitRequestSchema, sdk;
try {
  ({ Client } = require("@modelcontextprotocol/sdk/client/index.js"));
  ({ ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js"));
  ({ StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  ({ StdioClientTransport, getDefaultEnvironment } = require("@modelcontextprotocol/sdk/client/stdio.js"));
  const manifest = join(tools, "npm/node_modules/@modelcontextprotocol/sdk/package.json");
  sdk = JSON.parse(readFileSync(manifest, "utf8")).version;
} catch (error) {
  fail(2, `the MCP TypeScript SDK is not installed in ${join(tools, "npm")}; run \`cargo xtask setup\` (${error.message})`);
}

let transport;
if (plan.server?.url) {
  try {
    guardFetch(plan.server.url);
  } catch (error) {
    fail(2, error.message);
  }
  transport = new StreamableHTTPClientTransport(new URL(plan.server.url));
} else if (plan.server?.command) {
  transport = new StdioClientTransport({
    command: plan.server.command,
    args: plan.server.args ?? [],
    env: { ...getDefaultEnvironment(), ...(plan.server.env ?? {}) },
    stderr: "inherit",
  });
} else {
  fail(2, "the plan's server is neither {url} nor {command}");
}

const decision = plan.elicitation;
const capabilities = decision ? { elicitation: { url: {} } } : {};
// "client_name" in the plan names the client as a desktop agent names itself in `initialize`.
const client = new Client({ name: plan.client_name ?? "paperchain-interop", version: "0.0.0" }, { capabilities });
const elicitations = [];
if (decision) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const params = request.params;
    const seen = { params };
    try {
      // The user opens the page and answers it with the planned decision.
      const { hostname } = new URL(params.url);
      if (!["127.0.0.1", "localhost", "[::1]"].includes(hostname)) throw new Error(`not a loopback page: ${params.url}`);
      const page = await fetch(params.url);
      seen.page = { status: page.status, text: await page.text(), frameOptions: page.headers.get("x-frame-options") };
      const token = new URL(params.url).searchParams.get("token");
      const answer = await fetch(params.url.split("?")[0], {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token, decision }).toString(),
      });
      seen.answer = { status: answer.status, text: await answer.text() };
    } catch (error) {
      seen.error = String(error.message);
    }
    elicitations.push(seen);
    return { action: "accept" };
  });
}
let names;
try {
  await client.connect(transport);
  names = (await client.listTools()).tools.map((tool) => tool.name);
} catch (error) {
  fail(1, `connecting and listing the tools failed: ${error.message}`);
}

const answers = [];
for (const step of plan.steps ?? []) {
  try {
    if (step.call && step.cancel_after_ms !== undefined) {
      const abort = new AbortController();
      let cancelledAt = null;
      const timer = setTimeout(() => {
        cancelledAt = Date.now();
        abort.abort("the user stopped the agent");
      }, step.cancel_after_ms);
      try {
        const call = { name: step.call, arguments: step.arguments ?? {} };
        answers.push({ result: await client.callTool(call, undefined, { signal: abort.signal, timeout: 600000 }) });
      } catch (error) {
        answers.push({ error: { code: error.code ?? null, message: String(error.message ?? error) }, cancelled_at: cancelledAt });
      } finally {
        clearTimeout(timer);
      }
      continue;
    }
    if (step.call && step.progress) {
      // The SDK sends a progressToken and hands each notifications/progress to onprogress.
      const progress = [];
      const call = { name: step.call, arguments: step.arguments ?? {} };
      const options = { onprogress: (p) => progress.push(p), timeout: 600000 };
      answers.push({ result: await client.callTool(call, undefined, options), progress });
    } else if (step.call) {
      answers.push({ result: await client.callTool({ name: step.call, arguments: step.arguments ?? {} }) });
    } else if (step.sleep_ms !== undefined) {
      await new Promise((done) => setTimeout(done, step.sleep_ms));
      answers.push({ slept: step.sleep_ms });
    } else if (step.read) {
      answers.push({ result: await client.readResource({ uri: step.read }) });
    } else {
      fail(2, `a step is neither {call}, {read} nor {sleep_ms}: ${JSON.stringify(step)}`);
    }
  } catch (error) {
    answers.push({ error: { code: error.code ?? null, message: String(error.message) } });
  }
}
process.stdout.write(`${JSON.stringify({ sdk, tools: names, steps: answers, elicitations })}\n`);
await client.close();
