// Package tools reaches the MCP servers that ToolProviders declare, over STDIO (a supervised
// process) or Streamable HTTP, with the go-sdk client, and the extensions of the platform's
// extension protocol (package aep) over HTTP, both behind one peer interface: it discovers their
// tools into Tool objects (disabled until someone enables them), calls enabled tools with
// bounded time and results, issues and redeems the one-use Secret capabilities of extension
// calls, and reports each provider's connection in its status. The flow executor governs
// tool calls in runs; the service API's /mcp endpoint and tools area call it too.
package tools
