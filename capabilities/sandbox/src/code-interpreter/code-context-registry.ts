import type { SandboxFacade } from "../sandbox-facade.ts";
import type { CodeLanguage } from "./code-context.ts";

/** Where each context's driver records it (`<id>.json`): in `/tmp`, a volume that outlives hibernation. */
export const CODE_CONTEXT_REGISTRY = "/tmp/.pai-code-contexts";

/** A context as its driver recorded it in the sandbox. */
export interface CodeContextRecord {
  id: string;
  language: CodeLanguage;
  cwd: string;
  env?: Record<string, string>;
  /** The pid of the driver that wrote it. */
  pid?: number;
}

/** What {@link loadCodeContextRecords} found. */
export interface LoadedCodeContexts {
  records: CodeContextRecord[];
  /** Ids of the contexts whose driver was still running (left by another connection) and was killed. */
  killed: Set<string>;
}

const LANGUAGES = new Set<string>(["python", "javascript", "typescript"]);
/** A context id: also a file name. */
export const CODE_CONTEXT_ID = /^[A-Za-z0-9_-]{1,64}$/;

// Prints each record on a line; kills a recorded driver that still runs (its argv carries the drivers' first
// comment line), reporting its pid on stderr.
const loadScript = `d=${CODE_CONTEXT_REGISTRY}
for f in "$d"/*.json; do [ -f "$f" ] && { cat "$f"; echo; }; done
for f in "$d"/*.json; do
  [ -f "$f" ] || continue
  p=$(sed -n 's/.*"pid": *\\([0-9][0-9]*\\).*/\\1/p' "$f")
  [ -n "$p" ] && grep -aq "PAI code context driver" "/proc/$p/cmdline" 2>/dev/null && {
    kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null
    echo "$p" >&2
  }
done
exit 0`;

function parseRecord(line: string): CodeContextRecord | undefined {
  try {
    const value = JSON.parse(line) as Partial<CodeContextRecord> | null;
    if (
      typeof value?.id !== "string" ||
      !CODE_CONTEXT_ID.test(value.id) ||
      typeof value.language !== "string" ||
      !LANGUAGES.has(value.language) ||
      typeof value.cwd !== "string"
    )
      return undefined;
    const env =
      value.env && typeof value.env === "object"
        ? Object.fromEntries(Object.entries(value.env).filter(([, v]) => typeof v === "string"))
        : undefined;
    return {
      id: value.id,
      language: value.language,
      cwd: value.cwd,
      ...(env ? { env } : {}),
      ...(typeof value.pid === "number" ? { pid: value.pid } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * The contexts recorded in the sandbox by the drivers of earlier connections (before a wake, or a runtime restart
 * that reattached the sandbox): their processes are gone, or are killed here (nobody can speak to them any more),
 * so each is started again, empty, on its next use. The records are the sandbox user's files: what does not parse
 * is skipped.
 */
export async function loadCodeContextRecords(
  runCommand: SandboxFacade["runCommand"],
  signal?: AbortSignal,
): Promise<LoadedCodeContexts> {
  const result = await runCommand({
    command: "sh",
    args: ["-c", loadScript],
    timeoutMs: 30_000,
    ...(signal ? { signal } : {}),
  });
  const records = result.stdout
    .split("\n")
    .map(parseRecord)
    .filter((record) => record !== undefined);
  const killedPids = new Set(result.stderr.split("\n").filter((line) => /^\d+$/.test(line)));
  const killed = new Set(
    records.filter((record) => killedPids.has(String(record.pid))).map((record) => record.id),
  );
  return { records, killed };
}

/** Forgets a removed context's record. */
export async function removeCodeContextRecord(
  runCommand: SandboxFacade["runCommand"],
  id: string,
  signal?: AbortSignal,
): Promise<void> {
  await runCommand({
    command: "rm",
    args: ["-f", "--", `${CODE_CONTEXT_REGISTRY}/${id}.json`],
    timeoutMs: 30_000,
    ...(signal ? { signal } : {}),
  });
}
