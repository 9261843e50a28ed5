import { SandboxError } from "../sandbox-error.ts";

/**
 * A command's stdout as it arrives (`push` from `onStdout`), read back by lines and by exact byte counts. It holds
 * what has arrived and not yet been read: the sender keeps that bounded (the checkpoint program's window).
 */
export interface OutputReader {
  push(chunk: Uint8Array): void;
  /** No more output: reads past what is held fail with `error`, or `SANDBOX_PROTOCOL` without it. */
  end(error?: unknown): void;
  /** The next line (without its `\n`), at most `maxBytes` long. */
  readLine(maxBytes: number): Promise<Buffer>;
  /** Exactly the next `count` bytes. */
  read(count: number): Promise<Buffer>;
}

/** An {@link OutputReader}; `what` names the command in errors. */
export function createOutputReader(what: string): OutputReader {
  const chunks: Buffer[] = [];
  let held = 0;
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;

  const more = async (): Promise<void> => {
    if (ended) {
      throw failure ?? new SandboxError("SANDBOX_PROTOCOL", `${what} ended before its answer was complete`);
    }
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  };
  /** Removes the first `count` held bytes (all there), copying only when they span chunks. */
  const take = (count: number): Buffer => {
    const parts: Buffer[] = [];
    let needed = count;
    while (needed > 0) {
      const first = chunks[0]!;
      if (first.length <= needed) {
        parts.push(first);
        chunks.shift();
        needed -= first.length;
      } else {
        parts.push(first.subarray(0, needed));
        chunks[0] = first.subarray(needed);
        needed = 0;
      }
    }
    held -= count;
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts, count);
  };

  return {
    push(chunk) {
      if (chunk.byteLength === 0) return;
      chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      held += chunk.byteLength;
      wake?.();
      wake = undefined;
    },
    end(error) {
      ended = true;
      failure = error;
      wake?.();
      wake = undefined;
    },
    async readLine(maxBytes) {
      let searched = 0;
      for (;;) {
        let offset = 0;
        for (const chunk of chunks) {
          const start = Math.max(0, searched - offset);
          const newline = start < chunk.length ? chunk.indexOf(10, start) : -1;
          if (newline >= 0) {
            const line = take(offset + newline + 1);
            return line.subarray(0, line.length - 1);
          }
          offset += chunk.length;
        }
        searched = offset;
        if (held > maxBytes)
          throw new SandboxError("SANDBOX_PROTOCOL", `${what} wrote a line over ${maxBytes} bytes`);
        await more();
      }
    },
    async read(count) {
      while (held < count) await more();
      return take(count);
    },
  };
}
