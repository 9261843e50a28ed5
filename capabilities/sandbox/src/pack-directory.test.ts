import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { execaSync } from "execa";
import tar, { type Header } from "tar-stream";
import { describe, expect, it } from "vitest";
import { packDirectory } from "./pack-directory.ts";
import { SandboxError } from "./sandbox-error.ts";
import { createUploadHeaderSanitizer } from "./upload-header-sanitizer.ts";

async function entriesOf(stream: Readable): Promise<Array<{ header: Header; body: Buffer }>> {
  const extract = tar.extract();
  stream.on("error", (error) => extract.destroy(error));
  stream.pipe(extract as unknown as NodeJS.WritableStream);
  const out: Array<{ header: Header; body: Buffer }> = [];
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
    out.push({ header: entry.header, body: Buffer.concat(chunks) });
  }
  return out;
}

async function withDirectory(
  fill: (root: string) => void,
  use: (root: string) => Promise<void>,
): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "pai-pack-"));
  try {
    fill(root);
    await use(root);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("packDirectory", () => {
  it("packs directories, files and symlinks depth first with sorted names, links kept and not followed", async () => {
    await withDirectory(
      (root) => {
        mkdirSync(join(root, "b/inner"), { recursive: true });
        writeFileSync(join(root, "b/inner/deep.txt"), "deep");
        writeFileSync(join(root, "b/z.txt"), "zed");
        writeFileSync(join(root, "a.txt"), "alpha");
        writeFileSync(join(root, "empty"), "");
        symlinkSync("/etc/passwd", join(root, "c-link"));
        execaSync("mkfifo", [join(root, "fifo")]);
      },
      async (root) => {
        const { stream, done } = packDirectory(root);
        const entries = await entriesOf(stream);
        expect(entries.map(({ header }) => `${header.type} ${header.name}`)).toEqual([
          "file a.txt",
          "directory b/",
          "directory b/inner/",
          "file b/inner/deep.txt",
          "file b/z.txt",
          "symlink c-link",
          "file empty",
        ]);
        expect(entries.map(({ body }) => body.toString())).toEqual(["alpha", "", "", "deep", "zed", "", ""]);
        expect(entries[5]?.header.linkname).toBe("/etc/passwd");
        expect(await done).toEqual({ entries: 7, bytes: 12 });
      },
    );
  });

  it("streams files larger than a chunk, and many small ones, byte for byte", async () => {
    const big = randomBytes(3 * 1024 * 1024 + 5);
    const small = Array.from({ length: 300 }, (_, i) => randomBytes((i * 997) % 20_000));
    await withDirectory(
      (root) => {
        writeFileSync(join(root, "big.bin"), big);
        mkdirSync(join(root, "many"));
        for (const [i, bytes] of small.entries())
          writeFileSync(join(root, "many", `f${String(i).padStart(3, "0")}`), bytes);
      },
      async (root) => {
        const { stream, done } = packDirectory(root);
        const entries = await entriesOf(stream);
        expect(sha(entries[0]?.body ?? Buffer.alloc(0))).toBe(sha(big));
        expect(entries.slice(2).map(({ body }) => sha(body))).toEqual(small.map(sha));
        const total = big.length + small.reduce((sum, bytes) => sum + bytes.length, 0);
        expect(await done).toEqual({ entries: 302, bytes: total });
      },
    );
  });

  it("writes names too long for ustar and non-ASCII names so GNU tar extracts the same tree", async () => {
    const long = `${"d".repeat(120)}/${"e".repeat(110)}`;
    await withDirectory(
      (root) => {
        mkdirSync(join(root, "src", long), { recursive: true });
        writeFileSync(join(root, "src", long, "x.py"), "long\n");
        writeFileSync(join(root, "src", "ünïcödé.py"), "unicode\n");
        symlinkSync("t".repeat(150), join(root, "src", "far"));
      },
      async (root) => {
        const out = mkdtempSync(join(tmpdir(), "pai-pack-out-"));
        try {
          const chunks: Buffer[] = [];
          for await (const chunk of packDirectory(join(root, "src")).stream) chunks.push(chunk as Buffer);
          execaSync("tar", ["-x", "-C", out, "-f", "-"], { input: Buffer.concat(chunks) });
          execaSync("diff", ["-r", "--no-dereference", join(root, "src"), out]);
        } finally {
          rmSync(out, { recursive: true, force: true });
        }
      },
    );
  });

  it("writes each header as the map returns it, leaves out dropped entries, and fails with the map's error", async () => {
    await withDirectory(
      (root) => {
        writeFileSync(join(root, "keep.txt"), "keep");
        writeFileSync(join(root, "skip.log"), "skip");
      },
      async (root) => {
        const sanitize = createUploadHeaderSanitizer({ uid: 1234, gid: 5678 });
        const kept = packDirectory(root, {
          map: (header) => (header.name.endsWith(".log") ? undefined : sanitize(header)),
        });
        const entries = await entriesOf(kept.stream);
        expect(entries.map(({ header }) => [header.name, header.uid, header.gid])).toEqual([
          ["keep.txt", 1234, 5678],
        ]);
        expect(await kept.done).toEqual({ entries: 1, bytes: 4 });

        const refusal = new SandboxError("PATH_OUTSIDE_WORKSPACE", "no");
        const refused = packDirectory(root, {
          map: (header) => {
            if (header.name === "skip.log") throw refusal;
            return header;
          },
        });
        await expect(entriesOf(refused.stream)).rejects.toBe(refusal);
        await expect(refused.done).rejects.toBe(refusal);
      },
    );
  });

  it("fails with INVALID_ARGUMENT for a path that is not a directory", async () => {
    await withDirectory(
      (root) => writeFileSync(join(root, "file"), "x"),
      async (root) => {
        const { stream, done } = packDirectory(join(root, "file"));
        const error = await entriesOf(stream).catch((caught: unknown) => caught);
        expect(SandboxError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
        await expect(done).rejects.toBe(error);
      },
    );
  });

  it("stops when its signal aborts", async () => {
    await withDirectory(
      (root) => {
        for (let i = 0; i < 50; i++) writeFileSync(join(root, `f${i}`), randomBytes(64 * 1024));
      },
      async (root) => {
        const controller = new AbortController();
        const { stream, done } = packDirectory(root, { signal: controller.signal });
        controller.abort(new Error("stopped"));
        await expect(entriesOf(stream)).rejects.toThrow("stopped");
        await expect(done).rejects.toThrow("stopped");
      },
    );
  });

  it("settles done with what was written when the reader stops early", async () => {
    await withDirectory(
      (root) => writeFileSync(join(root, "big.bin"), Buffer.alloc(4 * 1024 * 1024, 1)),
      async (root) => {
        const { stream, done } = packDirectory(root);
        for await (const _chunk of stream) break;
        expect(await done).toEqual({ entries: 0, bytes: 0 });
      },
    );
  });
});
