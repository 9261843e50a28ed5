import { createHash } from "node:crypto";
import { canonicalJson } from "../runtime/identity-key.ts";

/** A stable hash of a tool call's input; answers to a pending action must name it. */
export function hashInput(input: unknown): string {
  return createHash("sha256").update(canonicalJson(input)).digest("hex").slice(0, 32);
}
