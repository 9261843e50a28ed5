import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import tar from "tar-stream";
import { afterEach, describe, expect, it } from "vitest";
import { contextDigestLines, packImageContext, readImageContext } from "./image-context.ts";

const made: string[] = [];
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function context(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "pai-context-"));
  made.push(dir);
  await writeFile(join(dir, "Dockerfile"), "ARG BASE_IMAGE\nFROM $BASE_IMAGE\nCOPY files/ /opt/\n");
  await mkdir(join(dir, "files", "B"), { recursive: true });
  await writeFile(join(dir, "files", "run.sh"), "#!/bin/sh\necho hi\n");
  await chmod(join(dir, "files", "run.sh"), 0o755);
  await writeFile(join(dir, "files", "B", "a.txt"), "upper case sorts first");
  await writeFile(join(dir, "files", "_x"), "");
  await symlink("Dockerfile", join(dir, "link"));
  return dir;
}

describe("readImageContext", () => {
  it("hashes the regular files as `find . -type f | sort | xargs sha256sum` prints them (the tag images/build gave)", async () => {
    const dir = await context();
    const { stdout } = await execa(
      "bash",
      ["-c", "find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum"],
      {
        cwd: dir,
      },
    );
    expect(contextDigestLines(await readImageContext(dir))).toBe(`${stdout}\n`);
  });

  it("packs the files with their modes for the build", async () => {
    const files = await readImageContext(await context());
    const extract = tar.extract();
    const seen: Array<{ name: string; mode: number | undefined; content: string }> = [];
    extract.on("entry", (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk) => chunks.push(chunk as Buffer));
      stream.on("end", () => {
        seen.push({ name: header.name, mode: header.mode, content: Buffer.concat(chunks).toString() });
        next();
      });
    });
    const done = new Promise<void>((resolve) => extract.on("finish", () => resolve()));
    packImageContext(files).pipe(extract);
    await done;
    expect(seen.map((entry) => entry.name)).toEqual([
      "Dockerfile",
      "files/B/a.txt",
      "files/_x",
      "files/run.sh",
    ]);
    expect(seen.find((entry) => entry.name === "files/run.sh")).toMatchObject({
      mode: 0o755,
      content: "#!/bin/sh\necho hi\n",
    });
  });
});
