import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { measureShape, shapeLimits } from "../scripts/shape.ts";

const root = join(import.meta.dirname, "..");

function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules" || entry === "dist" || entry === "build") continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) found.push(...sourceFiles(path));
    else if (/\.(ts|tsx)$/.test(entry)) found.push(path);
  }
  return found;
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  return [
    ...text.matchAll(
      /(?:^|\n)\s*(?:import|export)[^'"]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g,
    ),
  ].map((match) => (match[1] ?? match[2]) as string);
}

/** Every import in `dir` that matches one of `forbidden`, as "file → module". */
function violations(dir: string, forbidden: RegExp[]): string[] {
  return sourceFiles(join(root, dir)).flatMap((file) =>
    importsOf(file)
      .filter((module) => forbidden.some((pattern) => pattern.test(module)))
      .map((module) => `${relative(root, file)} → ${module}`),
  );
}

describe("dependencies point one way", () => {
  it("keeps Docker out of core", () => {
    expect(
      violations("core", [
        /^dockerode/,
        /^@pai\/(pool|container-agent|sandbox|browser|react)/,
        /^generic-pool/,
        /^tar-stream/,
        /^testcontainers/,
      ]),
    ).toEqual([]);
  });

  it("keeps pg behind @pai/core/postgres, so only apps that import it need the pg package", () => {
    const outsidePostgres = (violation: string) => !violation.startsWith("core/src/threads/postgres/");
    const shipped = (violation: string) => !/\.test\.ts /.test(violation);
    expect(violations("core", [/^pg$/, /^pg\//]).filter(outsidePostgres)).toEqual([]);
    expect(
      violations("core", [/\/postgres\//])
        .filter(outsidePostgres)
        .filter(shipped),
    ).toEqual([]);
  });

  it("keeps agents out of the pool", () => {
    // @pai/errors, the error family's base, is the one PAI package below the pool
    expect(violations("pool", [/^@pai\/(?!errors$)/, /^ai$/, /^ai\//, /^@ai-sdk\//])).toEqual([]);
  });

  it("keeps @pai/errors at the bottom: its sources import nothing but its own files", () => {
    const shipped = (violation: string) => !/\.test\.ts /.test(violation);
    expect(violations("errors", [/^[^.]/]).filter(shipped)).toEqual([]);
  });

  it("lets react depend only on core's public surface and the AI SDK's React bindings", () => {
    expect(
      violations("react", [/^@pai\/(pool|container-agent|sandbox|browser)/, /^dockerode/, /core\/src/]),
    ).toEqual([]);
  });

  it("lets capabilities reach core and pool only through their public entry points", () => {
    expect(violations("capabilities", [/core\/src/, /pool\/src/, /^@pai\/react/])).toEqual([]);
  });

  it("keeps @pai/core/client free of Node and of the runtime, so a browser bundle can import it", () => {
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const module of importsOf(file)) {
        if (!module.startsWith(".")) throw new Error(`${relative(root, file)} imports ${module}`);
        visit(join(file, "..", module));
      }
    };
    visit(join(root, "core", "src", "client", "index.ts"));
    expect([...seen].map((file) => relative(root, file)).sort()).toEqual([
      "core/src/actions/tool-end.ts",
      "core/src/client/index.ts",
      "core/src/client/last-message-only.ts",
    ]);
  });

  it("keeps the Docker binding between the pool and the capabilities: core and react never see it, it never sees them", () => {
    expect(violations("core", [/^@pai\/docker-binding/])).toEqual([]);
    expect(violations("react", [/^@pai\/docker-binding/])).toEqual([]);
    expect(
      violations("capabilities/docker-binding", [/^@pai\/(sandbox|browser|react)/, /^playwright/]),
    ).toEqual([]);
    expect(violations("capabilities/container-agent", [/^@pai\/docker-binding/])).toEqual([]);
  });

  it("shares the in-container agent without one capability depending on another", () => {
    expect(violations("capabilities/container-agent", [/^@pai\/(sandbox|browser)/, /^playwright/])).toEqual(
      [],
    );
    expect(violations("capabilities/sandbox", [/^@pai\/browser/, /agent\/src/])).toEqual([]);
    expect(violations("capabilities/browser", [/^@pai\/sandbox/, /agent\/src/])).toEqual([]);
  });
});

/** The files of a strongly connected set of more than one file: an import circle (Tarjan's algorithm). */
function importCircles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  const visit = (file: string) => {
    order.set(file, order.size);
    low.set(file, order.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(file, Math.min(low.get(file)!, order.get(next)!));
      }
    }
    if (low.get(file) !== order.get(file)) return;
    const circle: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      circle.push(relative(root, member));
    } while (member !== file);
    if (circle.length > 1) circles.push(circle.sort());
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return circles;
}

describe("no import circles", () => {
  const packages = ["core", "pool", "errors", "capabilities", "react", "mcp"];

  it("has none between the files of any package, type imports included", () => {
    const graph = new Map<string, string[]>();
    for (const file of packages.flatMap((dir) => sourceFiles(join(root, dir)))) {
      if (/\.test(-d)?\.tsx?$/.test(file) || file.includes("/testing/")) continue;
      const relativeImports = importsOf(file).filter((module) => module.startsWith("."));
      graph.set(
        file,
        relativeImports.map((module) => join(file, "..", module)),
      );
    }
    expect(graph.size).toBeGreaterThan(200);
    expect(importCircles(graph)).toEqual([]);
  });

  it("has none between the packages", () => {
    const manifests = packages
      .flatMap((dir) =>
        dir === "capabilities" ? readdirSync(join(root, dir)).map((name) => `${dir}/${name}`) : [dir],
      )
      .map((dir) => JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")));
    const graph = new Map<string, string[]>(
      manifests.map((manifest) => [
        manifest.name,
        Object.keys({ ...manifest.dependencies, ...manifest.peerDependencies }).filter((name) =>
          name.startsWith("@pai/"),
        ),
      ]),
    );
    expect(importCircles(graph)).toEqual([]);
  });
});

describe("the house's shape (npm run shape)", () => {
  it("keeps every source function and class within 250 lines and every source file within 600", async () => {
    const shape = await measureShape();
    expect(shape.files.length).toBeGreaterThan(300);
    expect(shape.units.filter((unit) => unit.lines > shapeLimits.functionLines)).toEqual([]);
    expect(shape.files.filter((file) => file.lines > shapeLimits.fileLines)).toEqual([]);
  });
});
