/**
 * Where a command of the `pai` command line writes, and what stops it. `main.ts` binds it to the process (stdout,
 * stderr, SIGINT/SIGTERM); a test can bind it to arrays.
 */
export interface CliIo {
  /** Writes one line of the command's result (stdout). */
  out(line: string): void;
  /** Writes one line of usage or of an error (stderr). */
  err(line: string): void;
  /** Aborted when the user stops the command (Ctrl-C, SIGTERM): whatever it waits for stops. */
  signal: AbortSignal;
}
