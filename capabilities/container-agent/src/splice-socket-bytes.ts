import { spawn } from "node:child_process";
import type { Socket } from "node:net";
import type { SpliceBytes } from "@pai/core";
import { findPrebuiltBinary } from "./prebuilt-binary.ts";

/** Exit statuses of `pai-splice` (native/pai-splice.c) that say it ran: all moved, the source ended, the reader left. */
const RAN = new Set([0, 1, 2]);

let binary: Promise<string | undefined> | undefined;

/** This machine's `pai-splice`, looked up once; `undefined` where the package ships none. */
function spliceBinary(): Promise<string | undefined> {
  binary ??= findPrebuiltBinary({ program: "pai-splice", architecture: process.arch }).catch(() => undefined);
  return binary;
}

/**
 * A {@link SpliceBytes} reading from `source`: each call runs `pai-splice`, which moves exactly the bytes asked from
 * `source` to the destination in the kernel, the two sockets handed to it as descriptors 3 and 4 (Node's
 * `child_process.spawn` passes a socket's descriptor to a child; execa would pipe the stream through instead). The
 * caller stops reading `source` first; `source` stays paused after, the destination is read again. Where the package has no `pai-splice` for this machine, a call resolves to
 * nothing moved and `complete: false` before touching either socket, so the caller copies instead.
 */
export function spliceFrom(source: Socket): SpliceBytes {
  return async (destination, bytes, signal) => {
    const program = await spliceBinary();
    if (!program || signal.aborted) return { moved: 0, complete: false };
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(program, [String(bytes)], {
        stdio: ["ignore", "pipe", "ignore", destination, source],
        signal,
        killSignal: "SIGKILL",
      });
    } catch {
      return { moved: 0, complete: false }; // a socket already closed has no descriptor to hand over
    }
    let said = "";
    child.stdout?.setEncoding("utf8").on("data", (text: string) => {
      said += text;
    });
    const status = await new Promise<number | null>((resolve) => {
      child.once("error", () => {}); // an abort, or a spawn that failed: its close follows
      child.once("close", (code) => resolve(code));
    });
    // spawn stopped Node reading a socket it handed to the child: the destination is read again as before (its
    // server reads the connection's next request)
    if (!destination.destroyed) destination.resume();
    const moved = status !== null && RAN.has(status) ? Number(said.trim()) : 0;
    return { moved: Number.isSafeInteger(moved) ? moved : 0, complete: status === 0 && moved === bytes };
  };
}
