// PAI as users get it: every public package packed with `npm pack`, the tarballs installed into an app in a
// temporary folder outside the repo (tests/packaging/app, plus the seeds), and there: a plain-JavaScript app on
// Node 22 with no loader runs a sandbox tool on the scripted model; `tsc` checks the typed app with the config
// `tsc --init` writes; the app's own Vitest tests use the sandbox fixture; its @pai/react page goes through
// `vite build`. Also what the tarballs hold: built JavaScript and declarations, a LICENSE, no sources or tests.
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishedPackages } from "../../scripts/build-packages.ts";
import { dockerOptedOut, removePoolContainers, uniquePoolId } from "../sandbox/docker-helpers.ts";

const root = join(import.meta.dirname, "..", "..");
const template = join(import.meta.dirname, "app");
const seeds = join(root, "tests", "seeds");

/** The version of a package the repo has installed: the app asks for the same, so npm's cache serves it. */
async function installedRange(name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(root, "node_modules", name, "package.json"), "utf8"));
  return `^${manifest.version}`;
}

/** `npm pack` of every public package into `directory`; resolves with each package's name and tarball path. */
async function packAll(directory: string): Promise<Map<string, string>> {
  const { stdout } = await execa(
    "npm",
    ["pack", "--json", "--pack-destination", directory, ...publishedPackages.flatMap((dir) => ["-w", dir])],
    { cwd: root, env: { npm_config_loglevel: "error" }, stderr: "inherit" },
  );
  const packed = JSON.parse(stdout) as { name: string; filename: string }[];
  return new Map(packed.map((entry) => [entry.name, join(directory, entry.filename)]));
}

/** The app: the template, the seeds as a user's files, a package.json installing the tarballs. */
async function writeApp(directory: string, tarballs: Map<string, string>): Promise<void> {
  await cp(template, directory, { recursive: true });
  await mkdir(join(directory, "src", "seeds"));
  for (const file of await readdir(seeds)) {
    if (!file.endsWith(".seed.ts")) continue;
    // The seeds import each other as the repo does (`./x.seed.ts`); a stock config wants `./x.seed.js`.
    const text = (await readFile(join(seeds, file), "utf8")).replaceAll(/(\.seed)\.ts"/g, '$1.js"');
    await writeFile(join(directory, "src", "seeds", file), text);
  }
  const dependencies: Record<string, string> = Object.fromEntries(
    [...tarballs].map(([name, tarball]) => [name, `file:${tarball}`]),
  );
  for (const name of ["ai", "zod", "@ai-sdk/openai", "react", "react-dom"]) {
    dependencies[name] = await installedRange(name);
  }
  const devDependencies: Record<string, string> = { node: "^22.12.0" };
  for (const name of ["typescript", "vitest", "vite", "@types/node", "@types/react", "@types/react-dom"]) {
    devDependencies[name] = await installedRange(name);
  }
  const manifest = {
    name: "pai-user-app",
    private: true,
    type: "module",
    dependencies,
    devDependencies,
    allowScripts: { node: true },
  };
  await writeFile(join(directory, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
}

/** The config `tsc --init` writes, as it resolves, with Node's types (which it leaves out) and the app's files. */
async function writeStockTsconfig(directory: string): Promise<Record<string, unknown>> {
  await execa("node_modules/.bin/tsc", ["--init"], { cwd: directory });
  const { stdout } = await execa("node_modules/.bin/tsc", ["--showConfig"], { cwd: directory });
  const config = JSON.parse(stdout) as { compilerOptions: Record<string, unknown> };
  const stock = { compilerOptions: { ...config.compilerOptions, types: ["node"], noEmit: true } };
  await writeFile(
    join(directory, "tsconfig.json"),
    JSON.stringify({ ...stock, include: ["src", "page", "test"] }),
  );
  return stock.compilerOptions;
}

// Each step runs real tools (npm, tsc, vitest, vite, a sandbox) in the app: minutes on a busy 2-core machine.
describe.skipIf(dockerOptedOut)("the packages as users install them", { timeout: 300_000 }, () => {
  let work: string;
  let app: string;
  let tarballs: Map<string, string>;
  const poolId = uniquePoolId("packaging");
  /** Runs a program of the app's own node_modules/.bin in the app, on the app's Node (22). */
  const inApp = (bin: string, args: string[], options: { env?: Record<string, string> } = {}) =>
    execa(join(app, "node_modules", ".bin", bin), args, {
      cwd: app,
      reject: false,
      all: true,
      // Nothing of the repo's: no source condition, no PATH to its Node 24.
      env: {
        ...options.env,
        NO_COLOR: "1",
        FORCE_COLOR: "0",
        NODE_OPTIONS: "",
        PATH: `${join(app, "node_modules", ".bin")}:/usr/bin:/bin`,
      },
      extendEnv: true,
    });

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), "pai-packaging-"));
    app = join(work, "app");
    tarballs = await packAll(work);
    await writeApp(app, tarballs);
    await execa("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], {
      cwd: app,
      env: { NODE_OPTIONS: "" },
    });
  }, 600_000);

  afterAll(async () => {
    await removePoolContainers(poolId);
    if (work) await rm(work, { recursive: true, force: true });
  });

  it("packs every public package with built JavaScript, declarations and a LICENSE, and no sources or tests", async () => {
    expect([...tarballs.keys()].sort()).toEqual([
      "@pai/browser",
      "@pai/container-agent",
      "@pai/core",
      "@pai/docker-binding",
      "@pai/errors",
      "@pai/mcp",
      "@pai/pool",
      "@pai/react",
      "@pai/sandbox",
    ]);
    for (const [name, tarball] of tarballs) {
      const { stdout } = await execa("tar", ["-tzf", tarball]);
      const files = stdout.split("\n").map((line) => line.replace(/^package\//, ""));
      expect(files, name).toContain("LICENSE");
      expect(files, name).toContain("dist/index.js");
      expect(files, name).toContain("dist/index.d.ts");
      expect(
        files.filter((file) => /\.tsx?$/.test(file) && !file.endsWith(".d.ts")),
        name,
      ).toEqual([]);
      expect(
        files.filter((file) => /\.test(-d)?\.|tsbuildinfo|\.lock$/.test(file)),
        name,
      ).toEqual([]);
      const manifest = JSON.parse((await execa("tar", ["-xzOf", tarball, "package/package.json"])).stdout);
      expect(manifest.license, name).toBe("Apache-2.0");
      expect(manifest.engines, name).toEqual({ node: ">=22" });
      expect(manifest.repository, name).toMatchObject({ type: "git" });
      for (const [subpath, target] of Object.entries(
        manifest.exports as Record<string, Record<string, string>>,
      )) {
        expect(Object.keys(target), `${name} ${subpath}`).toEqual(["types", "import", "default"]);
        for (const file of Object.values(target)) {
          expect(files, `${name} ${subpath}`).toContain(file.replace(/^\.\//, ""));
        }
      }
      for (const [dependency, range] of Object.entries({ ...manifest.dependencies })) {
        if (dependency.startsWith("@pai/")) expect(range, `${name} -> ${dependency}`).toBe("^0.1.0");
      }
    }
  });

  it("lets a script in the repo import the packages with plain node (their built dist/, made by npm install)", async () => {
    const script =
      'const core = await import("@pai/core"); await import("@pai/sandbox"); await import("@pai/react");' +
      'console.log(typeof core.createAgentRuntime, import.meta.resolve("@pai/core"))';
    const result = await execa(process.execPath, ["--input-type=module", "-e", script], {
      cwd: join(root, "examples", "code-agent"),
      env: { NODE_OPTIONS: "" },
    });
    expect(result.stdout).toBe(`function ${pathToFileURL(join(root, "core", "dist", "index.js"))}`);
  });

  it("runs a sandbox tool and the code interpreter from a plain JavaScript app on Node 22 with no loader", async () => {
    const result = await inApp("node", ["run-sandbox-tool.mjs", poolId]);
    expect(result.exitCode, result.all).toBe(0);
    const report = JSON.parse(result.stdout.trim().split("\n").at(-1)!);
    expect(report.node).toMatch(/^v22\./);
    expect(report.status).toBe("completed");
    expect(report.state).toBe("output-available");
    expect(report.output).toMatchObject({ exitCode: 0, terminationReason: "exit" });
    expect(report.output.stdout).toMatch(/^hello from (x86_64|aarch64)\n1000\n\/workspace\n$/);
    expect(report.interpreted).toMatchObject({
      language: "python",
      terminationReason: "completed",
      results: [{ isMainResult: true, text: "42" }],
    });
  });

  it("gives the app the pai command line: npx pai doctor checks this machine", async () => {
    const result = await inApp("pai", ["doctor"]);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.stdout).toMatch(/^OK .*engine/im);
    expect(result.stdout).toMatch(/^OK .*images?/im);
  });

  it("checks the typed app (the seeds and a sandbox tool) with the config tsc --init writes", async () => {
    const options = await writeStockTsconfig(app);
    expect(options).toMatchObject({ strict: true, module: "nodenext", skipLibCheck: true });
    const checked = await inApp("tsc", ["-p", "."]);
    expect(checked.all).toBe("");
    expect(checked.exitCode).toBe(0);
    // With the libraries' declarations checked too, none of the errors (if any, of other libraries) is PAI's.
    const strict = await inApp("tsc", ["-p", ".", "--skipLibCheck", "false"]);
    expect(strict.all.split("\n").filter((line) => line.includes("@pai/"))).toEqual([]);
  });

  it("runs the app's own Vitest tests on the sandbox fixture", async () => {
    const result = await inApp("vitest", ["run"]);
    expect(result.exitCode, result.all).toBe(0);
    expect(result.all).toMatch(/Tests\s+2 passed/);
  });

  it("bundles the app's @pai/react page with vite build", async () => {
    const result = await inApp("vite", ["build"]);
    expect(result.exitCode, result.all).toBe(0);
    const assets = await readdir(join(app, "dist-page", "assets"));
    const script = assets.find((file) => file.endsWith(".js"));
    expect(script).toBeDefined();
    const bundle = await readFile(join(app, "dist-page", "assets", script!), "utf8");
    expect(bundle).toContain("PAI client helper:");
  });
});
