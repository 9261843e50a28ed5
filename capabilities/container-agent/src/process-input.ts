import { FrameType } from "./agent-protocol.ts";
import { protocolError } from "./container-agent-error.ts";

/** Bytes sent per frame at most. */
const CHUNK_BYTES = 64 * 1024;

interface QueuedInput {
  data: Uint8Array | undefined; // undefined: end of stdin
  done: (() => void) | undefined;
}

/**
 * Bytes on their way to one of a command's inputs (its stdin or its fd 3), flow-controlled by the agent's
 * acknowledgements: a chunk waits while it would bring the bytes sent and not yet taken by the command over
 * `windowBytes` (unless there are none).
 */
export interface ProcessInput {
  /**
   * Queues bytes or, with `undefined`, the end of stdin. Resolves once they are handed to the connection; at once
   * (dropping them) when the command is gone.
   */
  write(data: Uint8Array | undefined): Promise<void>;
  /** The command took `count` more bytes. */
  acknowledged(count: number): void;
  /** The command is gone: what is still queued is dropped, and its writes resolve. */
  drop(): void;
}

/** Options of {@link createProcessInput}. */
export interface ProcessInputOptions {
  /** The frame type that carries the bytes (`Stdin` or `PipeIn`). */
  frame: number;
  /** Sends one frame of the command. */
  send(type: number, payload?: Uint8Array): void;
  /** False once the command or the connection is gone. */
  live(): boolean;
  /** See `AgentClientOptions.stdinWindowBytes`. */
  windowBytes: number;
}

/** An input of a command with nothing queued. */
export function createProcessInput(options: ProcessInputOptions): ProcessInput {
  const { frame, send, live, windowBytes } = options;
  const queue: QueuedInput[] = [];
  let unacked = 0;

  function pump(): void {
    while (live() && queue.length > 0) {
      const item = queue[0]!;
      if (item.data === undefined) {
        queue.shift();
        send(FrameType.StdinEof);
        item.done?.();
        continue;
      }
      if (unacked > 0 && unacked + item.data.length > windowBytes) return;
      queue.shift();
      send(frame, item.data);
      unacked += item.data.length;
      item.done?.();
    }
  }

  return {
    write(data) {
      if (!live()) return Promise.resolve();
      const { promise, resolve } = Promise.withResolvers<void>();
      if (data === undefined) {
        queue.push({ data: undefined, done: resolve });
      } else if (data.length === 0) {
        return Promise.resolve();
      } else {
        for (let offset = 0; offset < data.length; offset += CHUNK_BYTES) {
          const end = Math.min(offset + CHUNK_BYTES, data.length);
          queue.push({ data: data.slice(offset, end), done: end === data.length ? resolve : undefined });
        }
      }
      pump();
      return promise;
    },
    acknowledged(count) {
      if (count > unacked)
        throw protocolError("protocol error: an acknowledgement for more bytes than were sent");
      unacked -= count;
      pump();
    },
    drop() {
      for (const item of queue.splice(0)) item.done?.();
    },
  };
}
