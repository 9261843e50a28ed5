import { basename } from "node:path";

/** A server's default name: a URL's host, or the script a command runs (`node dist/server.js` → `server`). */
export function serverName(server: {
  url?: string | URL;
  command?: string;
  args?: readonly string[];
}): string {
  if (server.url !== undefined) return new URL(server.url).host.replace(/[^a-zA-Z0-9_-]/g, "_");
  const script =
    [...(server.args ?? [])].reverse().find((arg) => !arg.startsWith("-")) ?? server.command ?? "mcp";
  return (
    basename(script)
      .replace(/\.[^.]*$/, "")
      .replace(/[^a-zA-Z0-9_-]/g, "_") || "mcp"
  );
}
