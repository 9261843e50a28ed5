import { createHash } from "node:crypto";
import { type ContainerSpec, type ResolvedContainerSpec, resolveContainerSpec } from "./container-spec.ts";

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return Object.fromEntries(entries.map(([k, v]) => [k, canonical(v)]));
  }
  return value;
}

/**
 * A stable 12-hex-digit id of a spec: sha256 of the canonical JSON (sorted keys) of the spec with its defaults
 * filled in, so `{ image }` and the same spec spelled out in full hash alike. Stored as the `pai.spec` label.
 *
 * @example
 * specHash({ image: "pai/sandbox:latest" }) // "3f1c0a9b2e7d"
 */
export function specHash(spec: ContainerSpec | ResolvedContainerSpec): string {
  const json = JSON.stringify(canonical(resolveContainerSpec(spec)));
  return createHash("sha256").update(json).digest("hex").slice(0, 12);
}
