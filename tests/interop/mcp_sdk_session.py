"""One MCP session with the official MCP Python SDK client (PyPI `mcp`, as `cargo xtask setup`
installs it into the tools venv), as a desktop agent runs one: connect over stdio (the server
started as a child process) or streamable HTTP, list the tools, then take the steps in order.

Reads the same plan on stdin as mcp-sdk-session.mjs:
  {"server": {"url": ...} | {"command": ..., "args": [...], "env": {...}},
   "client_name": "..." (optional, the name the client gives itself),
   "protocol": "2026-07-28" (optional: speak that revision, no handshake; else the SDK's default),
   "elicitation": "approve" | "deny" (optional: take elicitation; a URL-mode request's page is
                  opened and answered with that decision, as its user would, then accepted),
   "steps": [{"call": "tool", "arguments": {...}} | {"read": "file:///..."}]}
A call step with "round": {"input_responses": {...}, "request_state": "..." | "previous"} is sent
once as it is, an InputRequiredResult answered as it came ("previous": the requestState of the
step before's answer), not driven by the SDK.
and prints one JSON line: {"sdk": "x.y.z", "tools": [names], "steps": [answer per step],
"elicitations": [{"params", "page", "answer"}]}, an answer being {"result": ...} or
{"error": {"code", "message"}}.

Only loopback addresses may be reached. Exit 0 once the line is printed; 2 on a usage or setup
mistake; 1 when connecting or listing fails.
"""

import asyncio
import importlib.metadata
import json
import sys
import urllib.parse
import urllib.request

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
    if plan.get("protocol"):
        options["mode"] = plan["protocol"]
    elicitations = []
    if plan.get("elicitation"):
        options["elicitation_callback"] = answering(plan["elicitation"], elicitations)
    try:
        client = Client(target, **options)
        await client.__aenter__()
        names = [tool.name for tool in (await client.list_tools()).tools]
    except Exception as error:  # noqa: BLE001 - any failure to connect is reported the same way
        fail(1, f"connecting and listing the tools failed: {error!r}")

    answers = []
    for step in plan.get("steps", []):
        try:
            if "call" in step and "round" in step:
                state = step["round"].get("request_state")
                if state == "previous":
                    state = (answers[-1].get("result") or {}).get("requestState")
                result = await client.session.call_tool(
                    step["call"],
                    step.get("arguments") or {},
                    input_responses=step["round"].get("input_responses"),
                    request_state=state,
                    allow_input_required=True,
                )
                answers.append({"result": dump(result)})
            elif "call" in step:
                answers.append({"result": dump(await client.call_tool(step["call"], step.get("arguments") or {}))})
            elif "read" in step:
                answers.append({"result": dump(await client.read_resource(step["read"]))})
            else:
                fail(2, f"a step is neither call nor read: {step}")
        except Exception as error:  # noqa: BLE001 - a refused step is an answer, not a crash
            code = getattr(getattr(error, "error", None), "code", None)
            answers.append({"error": {"code": code, "message": str(error)}})
    await client.__aexit__(None, None, None)
    return {"sdk": importlib.metadata.version("mcp"), "tools": names, "steps": answers, "elicitations": elicitations}


def answering(decision, elicitations):
    """An elicitation callback that opens a URL-mode request's page on loopback and answers it
    with `decision` (the user's), then accepts; each request is recorded in `elicitations`."""
    from mcp.types import ElicitResult

    def visit(url):
        seen = {}
        parts = urllib.parse.urlsplit(url)
        if parts.hostname not in LOOPBACK:
            raise ValueError(f"not a loopback page: {url}")
        with urllib.request.urlopen(url, timeout=30) as page:
            seen["page"] = {"status": page.status, "text": page.read().decode(), "frameOptions": page.headers.get("x-frame-options")}
        token = urllib.parse.parse_qs(parts.query).get("token", [""])[0]
        form = urllib.parse.urlencode({"token": token, "decision": decision}).encode()
        post = urllib.request.Request(url.split("?")[0], data=form, method="POST")
        post.add_header("content-type", "application/x-www-form-urlencoded")
        with urllib.request.urlopen(post, timeout=30) as answer:
            seen["answer"] = {"status": answer.status, "text": answer.read().decode()}
        return seen

    async def callback(context, params):
        seen = {"params": params.model_dump(mode="json", by_alias=True, exclude_none=True)}
        try:
            if getattr(params, "mode", None) == "url":
                seen.update(await asyncio.to_thread(visit, params.url))
        except Exception as error:  # noqa: BLE001 - recorded for the test to see
            seen["error"] = str(error)
        elicitations.append(seen)
        return ElicitResult(action="accept")

    return callback


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
