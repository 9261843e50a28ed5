/** The languages a code context runs: Python (IPython), JavaScript (a Node REPL context), TypeScript (the same, types stripped on the host). */
export type CodeLanguage = "python" | "javascript" | "typescript";

/** A code context: a language's interpreter kept alive in the sandbox, with its variables and imports, between calls. */
export interface CodeContext {
  /** Unique in its sandbox; the default context of a language is `default-<language>`. */
  id: string;
  language: CodeLanguage;
  /** The working directory of its code (absolute). */
  cwd: string;
}

/** Options of {@link CodeInterpreter.createCodeContext}. */
export interface CreateCodeContextOptions {
  /** @default "python" */
  language?: CodeLanguage;
  /**
   * Working directory; relative paths resolve against the workspace.
   * @default the workspace (`/workspace`)
   */
  cwd?: string;
  /** Extra environment variables of the context's process (and of what it starts). */
  env?: Readonly<Record<string, string>>;
  /** Aborts the start of the context's process (a context already started stays). */
  signal?: AbortSignal;
}

/**
 * One thing a cell displayed, in every representation it gave: `display(...)` calls, a matplotlib figure shown or
 * left open at the end of the cell (`png`), and the value of the cell's last expression (`isMainResult`).
 */
export interface CodeResult {
  /** True for the value of the cell's last expression (Python's `Out[n]`, the REPL's completion value). */
  isMainResult: boolean;
  /** `text/plain`: the value's repr. */
  text?: string;
  /** `text/html` (a pandas data frame's table, unsanitised: the code wrote it). */
  html?: string;
  /** `text/markdown`. */
  markdown?: string;
  /** `image/svg+xml`. */
  svg?: string;
  /** `image/png`, base64. */
  png?: string;
  /** `image/jpeg`, base64. */
  jpeg?: string;
  /** `application/json`, as parsed JSON. */
  json?: unknown;
  /** `text/latex`. */
  latex?: string;
  /** `application/javascript`. */
  javascript?: string;
  /** Every other MIME type given, as given (e.g. `application/vnd.plotly.v1+json`). */
  extra?: Record<string, unknown>;
}

/** An exception the cell raised, as the interpreter reported it. */
export interface CodeError {
  /** The exception's class, e.g. `ZeroDivisionError`, `KeyboardInterrupt`, `TypeError`. */
  name: string;
  /** Its message. */
  value: string;
  /** The interpreter's traceback, as text without colours. */
  traceback: string;
}

/**
 * How a cell ended: on its own (`completed`, also when it raised an exception: see `error`), interrupted by its
 * `timeoutMs` or its `signal` (the context and its state stay), or with the context's process gone (`context-exited`:
 * out of memory, killed, exited; the next call starts the context again, empty, and says so).
 */
export type CodeTerminationReason = "completed" | "timeout" | "abort" | "context-exited";

/** What {@link CodeInterpreter.runCode} gives back. An exception in the code is `error`, not a throw. */
export interface RunCodeResult {
  /** What the cell displayed, in order; the main result (last expression) among them. */
  results: CodeResult[];
  /** What the cell printed, chunk by chunk. */
  logs: { stdout: string[]; stderr: string[] };
  /** The exception the cell raised (a timeout or abort shows as Python's `KeyboardInterrupt`). */
  error?: CodeError;
  /** The context's count of cells run, this one included (Python's `In [n]`). */
  executionCount: number;
  /** The context the cell ran in. */
  context: CodeContext;
  terminationReason: CodeTerminationReason;
  /**
   * True when the context had to be started again, empty, before this cell: its process was gone (the sandbox
   * hibernated or restarted, its memory ran out, it was killed after an interrupt it ignored). `restartReason`
   * says why.
   */
  restarted?: boolean;
  /** Why the context was started again (with `restarted`). */
  restartReason?: string;
  /** From the call to the cell's end, measured on the host. */
  durationMs: number;
}

/** Options of {@link CodeInterpreter.runCode}. */
export interface RunCodeOptions {
  /**
   * The context to run in (or its id).
   * @default the default context of `language`, started on first use
   */
  context?: CodeContext | string;
  /**
   * The language of the default context to use, when `context` is not given (or the context's own, which it must
   * match).
   * @default "python"
   */
  language?: CodeLanguage;
  /** Every stdout chunk as it arrives. */
  onStdout?: (chunk: string) => void;
  /** Every stderr chunk as it arrives. */
  onStderr?: (chunk: string) => void;
  /** Every result as it arrives (the main result last). */
  onResult?: (result: CodeResult) => void;
  /** Interrupts the cell after this long (the context stays); `terminationReason` says `timeout`. */
  timeoutMs?: number;
  /**
   * Aborting interrupts the cell (the context stays); `terminationReason` says `abort`. A signal already aborted
   * rejects the call with its reason (nothing runs).
   */
  signal?: AbortSignal;
  /**
   * Characters of each stream kept in `logs`: later chunks still reach `onStdout`/`onStderr`, and `logs` ends with a
   * note of how much was left out.
   * @default 1_000_000
   */
  maxLogLength?: number;
  /**
   * How long an interrupted cell may take to stop before the context's process is killed (the next call then
   * starts it again, empty).
   * @default 2000
   */
  forceKillAfterMs?: number;
}

/** Options of the context members that only take a signal. */
export interface CodeContextCallOptions {
  signal?: AbortSignal;
}

/**
 * Code contexts of a sandbox (members of the {@link SandboxFacade}): a language's interpreter kept alive between
 * calls, returning rich results. They live inside the sandbox, under its limits, as the sandbox user; they belong to
 * the sandbox (a thread's contexts are there on its next turn) and lose their state when its processes stop
 * (hibernation, a restart): the next `runCode` starts such a context again and says so (`restarted`).
 */
export interface CodeInterpreter {
  /**
   * Starts a new context and returns it once its interpreter is ready.
   * @throws SandboxError `INTERPRETER_UNAVAILABLE` when the image lacks the interpreter (IPython, node) or it does
   * not start; `NOT_FOUND` when `cwd` is not a directory; `INVALID_ARGUMENT` for an unknown language
   * @example
   * const context = await sandbox.createCodeContext({ language: "python", cwd: "data" });
   * await sandbox.runCode("import pandas as pd; df = pd.read_csv('sales.csv')", { context });
   */
  createCodeContext(options?: CreateCodeContextOptions): Promise<CodeContext>;
  /** The sandbox's contexts (also those whose process is gone and will be started again on their next call). */
  listCodeContexts(options?: CodeContextCallOptions): Promise<CodeContext[]>;
  /**
   * Starts the context again, empty (a running cell is stopped). Resolves with the context.
   * @throws SandboxError `NOT_FOUND` for a context this sandbox does not have
   */
  restartCodeContext(context: CodeContext | string, options?: CodeContextCallOptions): Promise<CodeContext>;
  /** Stops the context and forgets it. Resolves `false` when the sandbox had no such context. */
  removeCodeContext(context: CodeContext | string, options?: CodeContextCallOptions): Promise<boolean>;
  /**
   * Runs a cell in a context and returns what it displayed, printed and raised. Cells of one context run one at a
   * time, in call order.
   * @example
   * await sandbox.runCode("x = 2");
   * const { results } = await sandbox.runCode("x * 21"); // results[0].text === "42", isMainResult: true
   * await sandbox.runCode("const r = await fetchIt(); r.length", { language: "javascript", timeoutMs: 10_000 });
   */
  runCode(code: string, options?: RunCodeOptions): Promise<RunCodeResult>;
}
