"""`kb mcp`: the knowledge base as an MCP server, for agents (Copilot agent mode, Claude
Code, Continue, …). A third thin front end over the runtime, beside the language server
(`lsp/`) and the command line (`cli/`); built on the official `mcp` SDK.

`kb_lsp.mcp` is a subpackage: an absolute `import mcp` (there are no implicit relative
imports) is always the SDK; this package is always named `kb_lsp.mcp`.

* `server.py` — `KbMcpServer`: the tools, the `kb://` resources, the error mapping;
* `text.py` — the short texts the calling model reads;
* `files.py` — the file scan and the `kb://` resource addresses (reads are the
  runtime's `read_file` / `file_text`: one confined reader, `kb_lsp/reading.py`);
* `transport.py` — stdio or Streamable HTTP (loopback unless allowed, bearer token).
"""

from kb_lsp.mcp.transport import HttpOptions, TransportError, run

__all__ = ["HttpOptions", "TransportError", "run"]
