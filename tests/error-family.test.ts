import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { BrowserError } from "@pai/browser";
import { ContainerAgentError } from "@pai/container-agent";
import { PaiError } from "@pai/core";
import { McpError } from "@pai/mcp";
import { PoolError } from "@pai/pool";
import { PaiResponseError } from "@pai/react";
import { SandboxError } from "@pai/sandbox";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");

const members = [
  { name: "PaiError", of: PaiError, make: () => new PaiError("NOT_FOUND", "no thread") },
  { name: "PoolError", of: PoolError, make: () => new PoolError("NOT_FOUND", "no container") },
  { name: "SandboxError", of: SandboxError, make: () => new SandboxError("NOT_FOUND", "no directory") },
  { name: "BrowserError", of: BrowserError, make: () => new BrowserError("NOT_FOUND", "no element") },
  {
    name: "ContainerAgentError",
    of: ContainerAgentError,
    make: () => new ContainerAgentError("INVALID_ARGUMENT", "a NUL in an argument"),
  },
  { name: "McpError", of: McpError, make: () => new McpError("INVALID_ARGUMENT", "no url or command") },
  {
    name: "PaiResponseError",
    of: PaiResponseError,
    make: () => new PaiResponseError({ code: "NOT_FOUND", message: "no thread", status: 404 }),
  },
] as const;

describe("PAI's error family", () => {
  it("recognizes each member only by its own class, even when they share a code", () => {
    const matrix = members.map((checker) => members.map((member) => checker.of.isInstance(member.make())));
    const diagonal = members.map((_, row) => members.map((__, column) => row === column));
    expect(matrix).toEqual(diagonal);
    for (const { name, make } of members) expect(make().name).toBe(name);
  });

  it("recognizes a subclass instance by its parent class, and a sibling's subclass not at all", () => {
    class ThreadGone extends PaiError {}
    class LeaseLost extends PoolError {}
    const gone = new ThreadGone("NOT_FOUND", "no thread");
    const lost = new LeaseLost("CONTAINER_FAILED", "lost");
    expect([PaiError.isInstance(gone), PoolError.isInstance(gone)]).toEqual([true, false]);
    expect([PoolError.isInstance(lost), PaiError.isInstance(lost)]).toEqual([true, false]);
    expect(PoolError.hasCode(lost, "CONTAINER_FAILED")).toBe(true);
  });

  it("recognizes a member from another copy of its package by its marker, not by its name or code", () => {
    for (const { name, of } of members) {
      expect(of.isInstance({ [Symbol.for(`pai.error.${name}`)]: true, code: "NOT_FOUND" }), name).toBe(true);
      // the one marker every member used to carry, and a look-alike by name and code
      expect(of.isInstance({ [Symbol.for("pai.error")]: true, code: "NOT_FOUND" }), name).toBe(false);
      expect(of.isInstance(Object.assign(new Error("x"), { name, code: "NOT_FOUND" })), name).toBe(false);
    }
    for (const value of [null, undefined, "PaiError", 42]) expect(PaiError.isInstance(value)).toBe(false);
  });
});

/** The package's sources, tests left out, comments stripped. */
function sources(dir: string): Array<{ file: string; text: string }> {
  const found: Array<{ file: string; text: string }> = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) found.push(...sources(path));
    else if (/\.tsx?$/.test(entry) && !/\.test(-d)?\.tsx?$/.test(entry)) {
      const text = readFileSync(path, "utf8")
        .replace(/\/\*[\s\S]*?\*\//g, "")
        .replace(/^\s*\/\/.*$/gm, "");
      found.push({ file: path, text });
    }
  }
  return found;
}

/** The string literals of the `export type <name> = | "A" | "B"` union in `file`. */
function declaredCodes(file: string, typeName: string): string[] {
  const text = readFileSync(join(root, file), "utf8");
  const union = new RegExp(`export type ${typeName} =([^;]+);`).exec(text)?.[1] ?? "";
  return [...union.matchAll(/"([A-Z_]+)"/g)].map((match) => match[1] as string);
}

const owners = [
  { dir: "core/src", file: "core/src/errors/pai-error.ts", type: "PaiErrorCode" },
  { dir: "pool/src", file: "pool/src/pool-error.ts", type: "PoolErrorCode" },
  {
    dir: "capabilities/sandbox/src",
    file: "capabilities/sandbox/src/sandbox-error.ts",
    type: "SandboxErrorCode",
  },
  {
    dir: "capabilities/browser/src",
    file: "capabilities/browser/src/browser-error.ts",
    type: "BrowserErrorCode",
  },
  { dir: "mcp/src", file: "mcp/src/mcp-error.ts", type: "McpErrorCode" },
  {
    dir: "capabilities/container-agent/src",
    file: "capabilities/container-agent/src/container-agent-error.ts",
    type: "ContainerAgentErrorCode",
  },
];

describe("each package owns the codes it throws", () => {
  it.each(owners)("every code $type declares is used as a value in $dir", ({ dir, file, type }) => {
    const codes = declaredCodes(file, type);
    expect(codes.length).toBeGreaterThan(0);
    const texts = sources(join(root, dir))
      .filter((source) => source.file !== join(root, file))
      .map((source) => source.text);
    // a use as a value: not a key (`CODE: 404`), a comparison (`=== "CODE"`) or a member of another type union
    const used = (code: string) =>
      texts.some((text) => new RegExp(`(?<!(===|!==|\\|)\\s*)"${code}"(?!\\s*[:|])`).test(text));
    expect(codes.filter((code) => !used(code))).toEqual([]);
  });

  it("leaves the pool's and the sandbox's codes out of core's PaiErrorCode", () => {
    const core = declaredCodes("core/src/errors/pai-error.ts", "PaiErrorCode");
    const others = ["POOL_EXHAUSTED", "POOL_CLOSED", "DOCKER_UNAVAILABLE", "CONTAINER_FAILED"].concat(
      ["PATH_OUTSIDE_WORKSPACE", "SANDBOX_PROTOCOL", "SANDBOX_SPAWN_FAILED", "SANDBOX_FILE_FAILED"],
      declaredCodes("capabilities/browser/src/browser-error.ts", "BrowserErrorCode").filter((code) =>
        code.startsWith("BROWSER_"),
      ),
    );
    expect(core.filter((code) => others.includes(code))).toEqual([]);
  });
});
