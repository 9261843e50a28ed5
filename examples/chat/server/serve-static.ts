import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, normalize, sep } from "node:path";

const contentTypes: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".map": "application/json",
};

/**
 * Serves the built page from `root`: files as they are (hashed assets cached for a year), and `index.html`
 * for any other GET so client-side routes survive a reload. Paths cannot leave `root`.
 */
export function createStaticHandler(
  root: string,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const base = normalize(root + sep);
  return async (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    const pathname = decodeURIComponent(new URL(req.url ?? "/", "http://localhost").pathname);
    const candidate = normalize(join(base, pathname));
    const inside = candidate.startsWith(base);
    const file = inside && (await isFile(candidate)) ? candidate : join(base, "index.html");
    if (!(await isFile(file))) {
      res.writeHead(404, { "content-type": "text/plain" }).end("The page is not built.");
      return;
    }
    const immutable = file.includes(`${sep}assets${sep}`);
    res.writeHead(200, {
      "content-type": contentTypes[extname(file)] ?? "application/octet-stream",
      "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
    });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    createReadStream(file).pipe(res);
  };
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
