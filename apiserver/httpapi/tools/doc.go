// Package tools is the tools area of the service API: ToolProviders and their Tools (list, read,
// write, refresh discovery, connectivity test, enable and disable with ETags), the tool calls
// of a run's history, and /mcp, where MCP clients reach the workspace's enabled tools and a few
// internal tools behind the platform's own authentication.
package tools
