import { Readable } from "node:stream";
import tar, { type Header } from "tar-stream";
import { describe, expect, it } from "vitest";
import { SandboxError } from "./sandbox-error.ts";
import { type TarHeaderInput, transformTar } from "./transform-tar.ts";
import { createUploadHeaderSanitizer } from "./upload-header-sanitizer.ts";

function archive(entries: Array<TarHeaderInput & { body?: string }>): Readable {
  const pack = tar.pack();
  for (const { body, ...header } of entries) {
    if (body !== undefined) pack.entry(header, body);
    else pack.entry(header);
  }
  pack.finalize();
  return Readable.from(pack);
}

async function entriesOf(stream: Readable): Promise<Array<{ header: Header; body: string }>> {
  const extract = tar.extract();
  stream.on("error", (error) => extract.destroy(error));
  stream.pipe(extract as unknown as NodeJS.WritableStream);
  const out: Array<{ header: Header; body: string }> = [];
  for await (const entry of extract) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
    out.push({ header: entry.header, body: Buffer.concat(chunks).toString() });
  }
  return out;
}

async function sanitize(entries: Array<TarHeaderInput & { body?: string }>) {
  const result = transformTar(archive(entries), createUploadHeaderSanitizer());
  const [out, stats] = await Promise.all([entriesOf(result.stream), result.done]);
  return { out, stats };
}

async function failure(entries: Array<TarHeaderInput & { body?: string }>): Promise<unknown> {
  return sanitize(entries).then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe("createUploadHeaderSanitizer", () => {
  it("passes files, directories and symlinks, owned by the sandbox user, without special bits", async () => {
    const { out, stats } = await sanitize([
      { name: "./", type: "directory" },
      { name: "src/", type: "directory", mode: 0o700 },
      { name: "src/main.py", type: "file", mode: 0o4755, uid: 0, gid: 0, body: "print(1)" },
      { name: "link", type: "symlink", linkname: "/etc/passwd" },
    ]);
    expect(out.map((e) => [e.header.name, e.header.type, e.header.uid, e.header.gid])).toEqual([
      ["src", "directory", 1000, 1000],
      ["src/main.py", "file", 1000, 1000],
      ["link", "symlink", 1000, 1000],
    ]);
    expect(out[1]?.header.mode).toBe(0o755);
    expect(out[1]?.body).toBe("print(1)");
    expect(out[2]?.header.linkname).toBe("/etc/passwd");
    expect(stats).toEqual({ entries: 3, bytes: 8 });
  });

  it("refuses absolute names and names with .. as outside the workspace", async () => {
    for (const name of ["/etc/passwd", "../x", "a/../../x"]) {
      const error = await failure([{ name, type: "file", body: "x" }]);
      expect(SandboxError.hasCode(error, "PATH_OUTSIDE_WORKSPACE"), name).toBe(true);
    }
  });

  it("refuses an entry written through a symlink the archive made", async () => {
    const error = await failure([
      { name: "out", type: "symlink", linkname: "/tmp" },
      { name: "out/evil", type: "file", body: "x" },
    ]);
    expect(SandboxError.hasCode(error, "PATH_OUTSIDE_WORKSPACE")).toBe(true);
  });

  it("refuses devices and fifos", async () => {
    const error = await failure([{ name: "dev", type: "character-device", devmajor: 1, devminor: 3 }]);
    expect(SandboxError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
  });
});
