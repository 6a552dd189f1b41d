"""An MCP agent for the gateway's tests: the official Python MCP SDK (PyPI `mcp`) as a client of
IRIS's `/mcp/NAME` over streamable HTTP, or of `iris mcp NAME` over stdio.

    agent.py http URL TOKEN STEPS_JSON
    agent.py stdio IRIS_BINARY NAME STEPS_JSON      (IRIS_URL and IRIS_TOKEN in the environment)

STEPS_JSON is a list of steps run in one session, in order:
    {"list": true}
    {"call": TOOL, "args": {...}, "reason": "...", "progress": true, "times": N, "again": true}
Each step's answer is printed as one JSON line: for `list` the tool names; for `call` the
result's `isError`, its text, its `_meta`, and how many progress notifications arrived (the
last call's, when `times` repeats it).
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def run_steps(session, steps):
    await session.initialize()
    for step in steps:
        if step.get("list"):
            listed = await session.list_tools()
            print(json.dumps({"tools": sorted(t.name for t in listed.tools)}), flush=True)
            continue
        meta = {}
        if step.get("reason"):
            meta["iris/reason"] = step["reason"]
        if step.get("again"):
            meta["iris/again"] = True
        for _ in range(step.get("times", 1)):
            progress = []

            async def on_progress(value, total, message):
                progress.append({"progress": value, "total": total, "message": message})

            result = await session.call_tool(
                step["call"],
                step.get("args", {}),
                read_timeout_seconds=120,
                progress_callback=on_progress if step.get("progress") else None,
                meta=meta or None,
            )
        text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
        print(
            json.dumps(
                {
                    "isError": bool(result.is_error),
                    "text": text,
                    "meta": result.meta or {},
                    "progress": len(progress),
                }
            ),
            flush=True,
        )


async def main():
    mode = sys.argv[1]
    if mode == "http":
        url, token, steps = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http:
            async with streamable_http_client(url, http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    await run_steps(session, steps)
    elif mode == "stdio":
        binary, name, steps = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
        params = StdioServerParameters(command=binary, args=["mcp", name], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await run_steps(session, steps)
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    asyncio.run(main())
