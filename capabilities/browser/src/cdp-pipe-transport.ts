import type { ConnectOverCDPTransport } from "playwright-core";

/** The far end of a DevTools pipe: how bytes are written to Chromium's fd 3 and how the pipe is closed. */
export interface CdpPipeEnd {
  /** Writes bytes to Chromium's fd 3, resolving when the connection took them. */
  write(bytes: Uint8Array): Promise<void>;
  /** Ends the pipe (stops Chromium). */
  close(): void;
}

/** A {@link ConnectOverCDPTransport} fed by the bytes Chromium writes to fd 4. */
export interface CdpPipeTransport extends ConnectOverCDPTransport {
  /** Bytes Chromium wrote to fd 4 (NUL-separated JSON messages, split anywhere). */
  receive(chunk: Uint8Array): void;
  /** The pipe is gone (Chromium exited, or the agent's connection ended). Idempotent. */
  end(reason?: string): void;
}

const decoder = new TextDecoder();

/**
 * Chromium's `--remote-debugging-pipe` protocol (NUL-terminated JSON messages both ways) as the transport
 * playwright-core's `chromium.connectOverCDP(transport)` takes, so Playwright drives a Chromium whose pipe the
 * in-container agent relays: no DevTools port anywhere.
 */
export function createCdpPipeTransport(end: CdpPipeEnd): CdpPipeTransport {
  let pending: Uint8Array[] = [];
  let closed = false;
  const transport: CdpPipeTransport = {
    send(message) {
      if (closed) return;
      end.write(Buffer.from(`${JSON.stringify(message)}\0`)).catch(() => transport.end("the pipe failed"));
    },
    close() {
      if (closed) return;
      end.close();
      transport.end("closed");
    },
    receive(chunk) {
      if (closed) return;
      let start = 0;
      for (let index = chunk.indexOf(0); index >= 0; index = chunk.indexOf(0, start)) {
        pending.push(chunk.subarray(start, index));
        const text = decoder.decode(pending.length === 1 ? pending[0] : Buffer.concat(pending));
        pending = [];
        start = index + 1;
        let message: object;
        try {
          message = JSON.parse(text) as object;
        } catch {
          transport.end("Chromium sent a message that is not JSON");
          return;
        }
        transport.onmessage?.(message);
      }
      // A copy: the chunk's memory may belong to a larger frame.
      if (start < chunk.length) pending.push(Uint8Array.prototype.slice.call(chunk, start));
    },
    end(reason) {
      if (closed) return;
      closed = true;
      pending = [];
      transport.onclose?.(reason);
    },
  };
  return transport;
}
