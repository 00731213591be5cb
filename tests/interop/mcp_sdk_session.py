"""One MCP session with the official MCP Python SDK client (PyPI `mcp`, as `cargo xtask setup`
installs it into the tools venv), as a desktop agent runs one: connect over stdio (the server
started as a child process) or streamable HTTP, list the tools, then take the steps in order.

Reads the same plan on stdin as mcp-sdk-session.mjs:
  {"server": {"url": ...} | {"command": ..., "args": [...], "env": {...}},
   "client_name": "..." (optional, the name the client gives itself),
   "steps": [{"call": "tool", "arguments": {...}} | {"read": "file:///..."}]}
and prints one JSON line: {"sdk": "x.y.z", "tools": [names], "steps": [answer per step]}, an
answer being {"result": ...} or {"error": {"code", "message"}}.

Only loopback addresses may be reached. Exit 0 once the line is printed; 2 on a usage or setup
mistake; 1 when connecting or listing fails.
"""

import asyncio
import importlib.metadata
import json
import sys
import urllib.parse

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def fail(code, message):
    sys.stderr.write(f"mcp_sdk_session: {message}\n")
    sys.exit(code)


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def session(plan):
    from mcp import Client, StdioServerParameters

    server = plan.get("server") or {}
    if server.get("url"):
        host = urllib.parse.urlsplit(server["url"]).hostname
        if host not in LOOPBACK:
            fail(2, f"refusing {server['url']}: only loopback addresses are allowed here")
        target = server["url"]
    elif server.get("command"):
        target = StdioServerParameters(
            command=server["command"], args=server.get("args", []), env=server.get("env") or None
        )
    else:
        fail(2, "the plan's server is neither {url} nor {command}")

    options = {}
    if plan.get("client_name"):
        # Named as a desktop agent names itself (in `initialize`, or in each request's metadata).
        from mcp.types import Implementation

        options["client_info"] = Implementation(name=plan["client_name"], version="0.0.0")
    try:
        client = Client(target, **options)
        await client.__aenter__()
        names = [tool.name for tool in (await client.list_tools()).tools]
    except Exception as error:  # noqa: BLE001 - any failure to connect is reported the same way
        fail(1, f"connecting and listing the tools failed: {error!r}")

    answers = []
    for step in plan.get("steps", []):
        try:
            if "call" in step:
                answers.append({"result": dump(await client.call_tool(step["call"], step.get("arguments") or {}))})
            elif "read" in step:
                answers.append({"result": dump(await client.read_resource(step["read"]))})
            else:
                fail(2, f"a step is neither call nor read: {step}")
        except Exception as error:  # noqa: BLE001 - a refused step is an answer, not a crash
            code = getattr(getattr(error, "error", None), "code", None)
            answers.append({"error": {"code": code, "message": str(error)}})
    await client.__aexit__(None, None, None)
    return {"sdk": importlib.metadata.version("mcp"), "tools": names, "steps": answers}


def main():
    try:
        plan = json.load(sys.stdin)
    except ValueError as error:
        fail(2, f"the plan on stdin is not JSON: {error}")
    try:
        import mcp  # noqa: F401
    except ImportError as error:
        fail(2, f"the MCP Python SDK is not installed in the tools venv; run `cargo xtask setup` ({error})")
    line = asyncio.run(session(plan))
    sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
