import type { RunRecord, ThreadRecord, ThreadStore } from "../threads/thread-store.ts";
import type { RunTranscript, StartingCall } from "./run-transcript.ts";

/** A call runs this long before the thread is stored with it: quick calls cost nothing. */
const CHECKPOINT_AFTER_MS = 200;

/**
 * Stores a run's thread while it goes on (its reply so far, with the calls being executed), so that when the
 * process dies mid-call the stored thread holds the calls a live process then closes as `interrupted`.
 */
export interface RunCheckpoints {
  /**
   * Stores the reply so far with `call` on it once the call has run for a moment (a call that ends first
   * calls the returned `done` and is never stored mid-way). Writes are queued one at a time and coalesced;
   * never throws.
   */
  request(call: StartingCall): () => void;
  /**
   * Stores the reply so far with `call` on it now, after any checkpoint being written; rejects when the write
   * fails. For a call about to wait for an answer: its pending action is recorded only once the call is stored.
   */
  storeNow(call: StartingCall): Promise<void>;
  /**
   * Stops checkpointing (a call still running, having ignored its signal, stores nothing more) and resolves once
   * no checkpoint is being written: the run's final commit comes after.
   */
  close(): Promise<void>;
}

/** Creates the checkpoints of one run. */
export function createRunCheckpoints(options: {
  store: ThreadStore;
  transcript: RunTranscript;
  thread: ThreadRecord;
  /** The run as recorded while it goes on (`running`). */
  run: RunRecord;
}): RunCheckpoints {
  const { store, transcript, thread, run } = options;
  let chain: Promise<void> = Promise.resolve();
  let queued: StartingCall[] | undefined;
  let closed = false;
  const commit = async (calls: StartingCall[]) => {
    const messages = await transcript.soFar(calls);
    await store.commitRun({ thread: { ...thread, updatedAt: Date.now() }, messages, run });
  };
  const write = (call: StartingCall) => {
    if (closed) return;
    if (queued) {
      queued.push(call);
      return;
    }
    const calls = [call];
    queued = calls;
    chain = chain
      .then(async () => {
        queued = undefined;
        if (closed) return;
        await commit(calls);
      })
      .catch(() => undefined);
  };
  return {
    request(call) {
      const timer = setTimeout(() => write(call), CHECKPOINT_AFTER_MS);
      timer.unref();
      return () => clearTimeout(timer);
    },
    storeNow(call) {
      const writing = chain.then(() => commit([call]));
      chain = writing.catch(() => undefined);
      return writing;
    },
    close() {
      closed = true;
      return chain;
    },
  };
}
