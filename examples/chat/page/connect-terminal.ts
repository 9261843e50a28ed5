import { API } from "./chat-api.ts";

/** A terminal's size in character cells. */
export interface TerminalSize {
  cols: number;
  rows: number;
}

/** Where a terminal session stands, as the panel shows it. */
export type TerminalStatus =
  | { state: "connecting" }
  | { state: "connected"; pid: number }
  | { state: "ended"; exitCode: number | null; signal: string | null }
  | { state: "failed"; message: string };

/** What {@link connectTerminal} accepts. */
export interface ConnectTerminalOptions extends TerminalSize {
  threadId: string;
  /** Bytes the terminal printed. */
  onOutput: (bytes: Uint8Array) => void;
  /** Every change of {@link TerminalStatus}, from `connecting` on. */
  onStatus: (status: TerminalStatus) => void;
  /** The page's address, to reach the app's host. @default window.location */
  location?: Pick<Location, "protocol" | "host">;
}

/** A terminal session over the thread's WebSocket. */
export interface TerminalConnection {
  /** Sends keystrokes (xterm's `onData`) as the terminal's input bytes. */
  write(data: string): void;
  /** Tells the terminal its new size. */
  resize(size: TerminalSize): void;
  /** Closes the socket, which ends the shell; no status follows. */
  close(): void;
}

/** The WebSocket address of a thread's terminal: `ws://<host>/api/threads/<id>/terminal?cols=&rows=`. */
export function terminalUrl(
  threadId: string,
  size: TerminalSize,
  location: Pick<Location, "protocol" | "host">,
): string {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams({ cols: String(size.cols), rows: String(size.rows) });
  return `${scheme}://${location.host}${API}/threads/${encodeURIComponent(threadId)}/terminal?${query}`;
}

/**
 * Opens a shell in the thread's sandbox over the handler's terminal WebSocket. Keystrokes go out as binary
 * messages, resizes as `{"type":"resize"}`; output comes in as binary messages, and `ready`, `exit` and `error`
 * as JSON text, which become {@link TerminalStatus} changes (a socket that closes without `exit` or `error`, or
 * never opens, fails with its close code).
 */
export function connectTerminal(options: ConnectTerminalOptions): TerminalConnection {
  const { threadId, onOutput, onStatus } = options;
  const encoder = new TextEncoder();
  let size: TerminalSize = { cols: options.cols, rows: options.rows };
  let sentSize = size;
  let settled = false;
  let closedByUs = false;
  const socket = new WebSocket(terminalUrl(threadId, size, options.location ?? window.location));
  socket.binaryType = "arraybuffer";
  onStatus({ state: "connecting" });

  const settle = (status: TerminalStatus) => {
    if (settled || closedByUs) return;
    settled = true;
    onStatus(status);
  };
  const sendSize = () => {
    if (socket.readyState !== WebSocket.OPEN) return;
    if (size.cols === sentSize.cols && size.rows === sentSize.rows) return;
    sentSize = size;
    socket.send(JSON.stringify({ type: "resize", ...size }));
  };

  let opened = false;
  socket.addEventListener("open", () => {
    opened = true;
    sendSize();
  });
  socket.addEventListener("message", (event: MessageEvent<ArrayBuffer | string>) => {
    if (typeof event.data !== "string") {
      onOutput(new Uint8Array(event.data));
      return;
    }
    const message = parseMessage(event.data);
    if (message?.type === "ready" && !settled && !closedByUs) {
      onStatus({ state: "connected", pid: Number(message.pid) });
    } else if (message?.type === "exit") {
      settle({
        state: "ended",
        exitCode: typeof message.exitCode === "number" ? message.exitCode : null,
        signal: typeof message.signal === "string" ? message.signal : null,
      });
    } else if (message?.type === "error") {
      settle({ state: "failed", message: String(message.message ?? message.code ?? "the terminal failed") });
    }
  });
  socket.addEventListener("close", (event) => {
    // a refused upgrade (no such thread, another identity) shows the page nothing but 1006
    const what = opened ? "the connection closed" : "the terminal could not connect";
    settle({ state: "failed", message: `${what} (${event.code}${event.reason ? `: ${event.reason}` : ""})` });
  });

  return {
    write(data) {
      if (socket.readyState === WebSocket.OPEN) socket.send(encoder.encode(data));
    },
    resize(next) {
      size = next;
      sendSize();
    },
    close() {
      closedByUs = true;
      socket.close(1000);
    },
  };
}

function parseMessage(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
