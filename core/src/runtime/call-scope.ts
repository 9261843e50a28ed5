import type { PaiError } from "../errors/pai-error.ts";
import type { PendingActionKind } from "../threads/thread-store.ts";
import { ToolSuspendSignal } from "../tools/tool-signals.ts";
import { type CallJournal, createCallJournal } from "./call-journal.ts";

/** A call that waits for an answer, somewhere in a top-level call: it becomes the call's pending action. */
export interface CallWait {
  /** Its journal key (`""`: the top-level call itself). */
  key: string;
  /** Names from the top-level call down to it. */
  path: string[];
  /** The tool that waits, and its input. */
  toolId: string;
  input: unknown;
  kind: PendingActionKind;
  /** The suspension point's name. */
  name: string;
  payload: unknown;
  /** Its earlier suspend payloads. */
  suspendHistory: unknown[];
  /** What every caller above the call that waits is thrown. */
  signal: ToolSuspendSignal;
}

/**
 * One run of a top-level call's `execute` with everything below it: its journal, the first call that waits (one
 * pending action per top-level call), whether the run diverged from its journal, and the inner calls in flight.
 */
export interface CallScope {
  readonly journal: CallJournal;
  /** The first call that waits, if any. */
  readonly wait: CallWait | undefined;
  /** Set once a call did not match its journal entry. */
  readonly diverged: PaiError | undefined;
  /** Records `wait` unless a call waits already; returns the call that waits. */
  waitFor(wait: Omit<CallWait, "signal">): CallWait;
  /** Records that the run diverged from its journal (the first time counts) and returns the error. */
  diverge(error: PaiError): PaiError;
  /** Why a new inner call must not start: a call waits, or the run diverged. */
  blocked(): Error | undefined;
  /** Tracks an inner call until it settles. */
  track<RESULT>(call: Promise<RESULT>): Promise<RESULT>;
  /** Resolves once no inner call is running (calls started meanwhile included). */
  idle(): Promise<void>;
}

/** A scope over the journal a suspension stored (empty for a first run). */
export function createCallScope(journal: CallJournal = createCallJournal()): CallScope {
  let wait: CallWait | undefined;
  let diverged: PaiError | undefined;
  const running = new Set<Promise<unknown>>();
  return {
    journal,
    get wait() {
      return wait;
    },
    get diverged() {
      return diverged;
    },
    waitFor(candidate) {
      wait ??= {
        ...candidate,
        signal: new ToolSuspendSignal(candidate.payload, candidate.name),
      };
      return wait;
    },
    diverge(error) {
      diverged ??= error;
      return diverged;
    },
    blocked: () => diverged ?? wait?.signal,
    track(call) {
      const settled = call.then(
        () => undefined,
        () => undefined,
      );
      running.add(settled);
      void settled.then(() => running.delete(settled));
      return call;
    },
    async idle() {
      while (running.size > 0) await Promise.all(running);
    },
  };
}

/** Whether the call at `key` is the call at `scopeKey` or below it. */
export function isWithin(key: string, scopeKey: string): boolean {
  return scopeKey === "" || key === scopeKey || key.startsWith(`${scopeKey}.`);
}
