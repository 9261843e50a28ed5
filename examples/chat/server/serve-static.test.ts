import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createStaticHandler } from "./serve-static.ts";

let root: string;
let server: Server;
let base: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "pai-static-"));
  await mkdir(join(root, "assets"));
  await writeFile(join(root, "index.html"), "<html>page</html>");
  await writeFile(join(root, "assets", "app.js"), "console.log(1)");
  await writeFile(join(root, "..", `${root.split("/").at(-1)}-secret.txt`), "secret");
  server = createServer(createStaticHandler(root));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rm(`${root}-secret.txt`, { force: true });
  await rm(root, { recursive: true, force: true });
});

describe("createStaticHandler", () => {
  it("serves built files with their type and caches hashed assets", async () => {
    const response = await fetch(`${base}/assets/app.js`);
    expect(response.headers.get("content-type")).toContain("text/javascript");
    expect(response.headers.get("cache-control")).toContain("immutable");
    expect(await response.text()).toBe("console.log(1)");
  });

  it("answers unknown paths with the page, so client routes survive a reload", async () => {
    expect(await (await fetch(`${base}/threads/abc`)).text()).toBe("<html>page</html>");
  });

  it("never serves a file outside its root", async () => {
    const name = `${root.split("/").at(-1)}-secret.txt`;
    for (const path of [`/../${name}`, `/%2e%2e/${name}`, `/assets/..%2f..%2f${name}`]) {
      expect(await (await fetch(`${base}${path}`)).text()).toBe("<html>page</html>");
    }
  });
});
