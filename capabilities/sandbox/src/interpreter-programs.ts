import { readFile } from "node:fs/promises";
import type { CodeLanguage } from "./code-interpreter/code-context.ts";

/**
 * The driver programs of code contexts, shipped in this package's `interpreter/` folder (found from here, directly
 * under `src/`, so the same path works from `dist/`): the Python one (IPython) and the Node one (JavaScript, and
 * TypeScript once the host stripped its types).
 */
const programFiles = {
  python: new URL("../interpreter/python-driver.py", import.meta.url),
  node: new URL("../interpreter/node-driver.cjs", import.meta.url),
} as const;

const loaded = new Map<keyof typeof programFiles, Promise<string>>();

/** The source of the driver program that runs `language`, read once per process. */
export function interpreterProgram(language: CodeLanguage): Promise<string> {
  const which = language === "python" ? "python" : "node";
  let program = loaded.get(which);
  if (!program) {
    program = readFile(programFiles[which], "utf8");
    program.catch(() => loaded.delete(which));
    loaded.set(which, program);
  }
  return program;
}
