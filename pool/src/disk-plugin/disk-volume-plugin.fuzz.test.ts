// Properties of the disk plugin's request handling, over its real unix socket: whatever path and body a request
// carries (bytes, JSON of any shape, near-valid volume requests), the plugin answers it (an Err, a 400 or a 413),
// keeps serving, and records a volume only for a create it answered without Err. Needs root and loop devices, as
// the plugin's other test does (a create that happens to be valid makes a real disk).
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDiskVolumePlugin, type DiskVolumePlugin } from "./disk-volume-plugin.ts";

// Property runs: a quick number in `npm test`, many in `npm run fuzz` (PAI_FUZZ_RUNS).
fc.configureGlobal({ numRuns: Number(process.env.PAI_FUZZ_RUNS) || 200 });

const MiB = 1024 * 1024;
let stateDir: string;
let socketPath: string;
let plugin: DiskVolumePlugin;

beforeAll(async () => {
  stateDir = await mkdtemp(join(tmpdir(), "pai-disk-fuzz-"));
  socketPath = join(stateDir, "plugin.sock");
  plugin = createDiskVolumePlugin({ stateDir: join(stateDir, "state") });
  await plugin.listen(socketPath);
});

afterAll(async () => {
  for (const name of await readdir(join(stateDir, "state", "volumes")).catch(() => [] as string[])) {
    await plugin.call("/VolumeDriver.Remove", { Name: name.replace(/\.json$/, "") });
  }
  await plugin.close();
  await rm(stateDir, { recursive: true, force: true });
});

/** POSTs `body` to `path` on the plugin's socket; its status and body. */
function post(path: string, body: Uint8Array): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request({ socketPath, path, method: "POST" }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () =>
        resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
      );
      response.on("error", reject);
    });
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

const paths = fc.oneof(
  fc.constantFrom(
    "/Plugin.Activate",
    "/VolumeDriver.Create",
    "/VolumeDriver.Remove",
    "/VolumeDriver.Mount",
    "/VolumeDriver.Unmount",
    "/VolumeDriver.Path",
    "/VolumeDriver.Get",
    "/VolumeDriver.List",
    "/VolumeDriver.Capabilities",
  ),
  fc.string({ maxLength: 40 }).map((tail) => `/${encodeURIComponent(tail)}`),
);

/** Names and options near the valid ones, and the ones that escape (`..`, `/`, NUL, huge, negative). */
const nameLike = fc.oneof(
  fc.constantFrom("v", "fuzz-a", "..", "../etc", "a/b", "", ".", "x\u0000", "v".repeat(300)),
  fc.string({ maxLength: 20 }),
  fc.anything(),
);
const sizeLike = fc.oneof(
  fc.constantFrom(String(16 * MiB), String(64 * MiB), "0", "-1", "1e9", String(2 ** 41), " 64", "64 "),
  fc.nat().map(String),
  fc.anything(),
);
const volumeBody = fc.record(
  {
    Name: nameLike,
    ID: fc.oneof(fc.string({ maxLength: 12 }), fc.anything()),
    Opts: fc.oneof(
      fc.record({ size: sizeLike, disk: nameLike, dir: nameLike, colour: fc.string() }, { requiredKeys: [] }),
      fc.anything(),
    ),
  },
  { requiredKeys: [] },
);
const bodies = fc.oneof(
  volumeBody.map((body) => new TextEncoder().encode(JSON.stringify(body) ?? "")),
  fc.jsonValue().map((value) => new TextEncoder().encode(JSON.stringify(value))),
  fc.uint8Array({ maxLength: 2048 }),
  fc.string({ maxLength: 200 }).map((text) => new TextEncoder().encode(text)),
);

describe("pai-disk volume plugin under any request", () => {
  it("answers every request, keeps serving, and records only volumes it created", async () => {
    const created = new Set<string>();
    await fc.assert(
      fc.asyncProperty(paths, bodies, async (path, body) => {
        const { status, text } = await post(path, body);
        expect([200, 400, 413]).toContain(status);
        const answer = JSON.parse(text) as Record<string, unknown>;
        expect(typeof answer).toBe("object");
        if (status !== 200) expect(typeof answer.Err).toBe("string");
        if (path === "/VolumeDriver.Create" && status === 200 && answer.Err === undefined) {
          created.add(String((JSON.parse(new TextDecoder().decode(body)) as { Name: string }).Name));
        }
        if (path === "/VolumeDriver.Remove" && status === 200 && answer.Err === undefined) {
          created.delete(String((JSON.parse(new TextDecoder().decode(body)) as { Name: string }).Name));
        }
      }),
    );
    // Still serving, and what it keeps is exactly what it said it created.
    expect(JSON.parse((await post("/Plugin.Activate", new Uint8Array())).text)).toEqual({
      Implements: ["VolumeDriver"],
    });
    const recorded = (await readdir(join(stateDir, "state", "volumes")).catch(() => [] as string[])).map(
      (file) => file.replace(/\.json$/, ""),
    );
    expect(recorded.sort()).toEqual([...created].sort());
  }, 120_000);
});
