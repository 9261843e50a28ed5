/**
 * How one check of `pai doctor` or one step of `pai engine setup` came out: `ok` (in place, nothing done),
 * `changed` (done now, and in place), `failed` (a problem, with its fix), `skipped` (not checked: an earlier
 * failure decides, e.g. no engine answers).
 */
export type CheckStatus = "ok" | "changed" | "failed" | "skipped";

/** One line of `pai doctor` or `pai engine setup`. */
export interface CheckResult {
  /** What was checked: `engine`, `runtime`, `disk plugin`, ... */
  check: string;
  status: CheckStatus;
  /** What was found, or what was done. */
  message: string;
  /** For a failure: what to do about it. */
  fix?: string;
}

const labels: Record<CheckStatus, string> = { ok: "OK", changed: "DONE", failed: "FAIL", skipped: "SKIP" };

/** The line that shows `result`: `OK engine: …`, `DONE crun: …`, `FAIL disk plugin: … Fix: …`. */
export function formatCheck(result: CheckResult): string {
  const fix = result.fix === undefined ? "" : `. Fix: ${result.fix}`;
  return `${labels[result.status]} ${result.check}: ${result.message}${fix}`;
}

/** Whether every result is in place (`ok` or `changed`). */
export function allPassed(results: readonly CheckResult[]): boolean {
  return results.every((result) => result.status === "ok" || result.status === "changed");
}
