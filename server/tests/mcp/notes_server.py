"""A second upstream for the gateway's tests, made with the official Python MCP SDK's server
(`MCPServer`): a notes file with a read and an append.

    notes_server.py stdio DIR
    notes_server.py http PORT DIR        (streamable HTTP at http://127.0.0.1:PORT/mcp)

`append_note` writes one line to DIR/notes.txt. With the text "hang" it first writes
DIR/hanging (so a test knows the call arrived) and then never answers: a test kills the server
while the call is in flight.
"""

import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")
folder = Path(sys.argv[-1])


@server.tool()
def read_notes() -> str:
    """The notes, one per line."""
    path = folder / "notes.txt"
    return path.read_text() if path.exists() else ""


@server.tool()
def append_note(text: str) -> str:
    """Adds one line to the notes."""
    if text == "hang":
        (folder / "hanging").write_text("yes")
        while True:
            time.sleep(1)
    with open(folder / "notes.txt", "a") as notes:
        notes.write(text + "\n")
    return f"Added: {text}"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run("stdio")
