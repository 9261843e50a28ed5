import * as nodeModule from "node:module";
import { SandboxError } from "../sandbox-error.ts";

type StripTypeScriptTypes = (code: string, options?: { mode?: "strip" | "transform" }) => string;

/**
 * TypeScript as JavaScript, with Node's own type stripping (`stripTypeScriptTypes` of `node:module`, Node ≥ 22.13),
 * on the host: the sandbox's Node does not need it. `transform` mode, so enums and namespaces work too.
 * @throws SandboxError `INTERPRETER_UNAVAILABLE` when this Node lacks it; the parser's `SyntaxError` for bad code
 */
export function stripTypeScript(code: string): string {
  const strip = (nodeModule as { stripTypeScriptTypes?: StripTypeScriptTypes }).stripTypeScriptTypes;
  if (typeof strip !== "function") {
    throw new SandboxError(
      "INTERPRETER_UNAVAILABLE",
      `TypeScript contexts need Node's stripTypeScriptTypes (node:module, Node >= 22.13); this is Node ${process.versions.node}`,
    );
  }
  // Node warns once that the API is experimental: that warning is not the caller's business.
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return strip(code, { mode: "transform" });
  } finally {
    process.emitWarning = emitWarning;
  }
}
