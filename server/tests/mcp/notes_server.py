"""A second upstream for the gateway's tests, made with the official Python MCP SDK's server
(`MCPServer`): a notes file with a read and an append.

    notes_server.py stdio DIR
    notes_server.py http PORT DIR        (streamable HTTP at http://127.0.0.1:PORT/mcp)

`append_note` writes one line to DIR/notes.txt. With a text that starts with "hang" it first
writes DIR/hanging (so a test knows the call arrived) and then never answers that call (a hung
upstream); the server goes on answering other calls.
"""

import sys
from pathlib import Path

import anyio

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
folder = Path(sys.argv[-1])


@server.tool()
def read_notes() -> str:
    """The notes, one per line."""
    path = folder / "notes.txt"
    return path.read_text() if path.exists() else ""


@server.tool()
async def append_note(text: str) -> str:
    """Adds one line to the notes."""
    if text.startswith("hang"):
        (folder / "hanging").write_text(text)
        await anyio.sleep_forever()
    with open(folder / "notes.txt", "a") as notes:
        notes.write(text + "\n")
    return f"Added: {text}"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run("stdio")
