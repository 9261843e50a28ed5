import type { WebSocket } from "ws";
import { z } from "zod";
import { PaiError } from "../errors/pai-error.ts";
import type { ThreadFacadeUse } from "../runtime/runtime-services.ts";

/** A terminal session as a capability's `openTerminal` gives it (the sandbox's `TerminalSession`). */
export interface TerminalSessionLike {
  readonly pid: number;
  write(data: string | Uint8Array): Promise<void>;
  resize(size: { cols: number; rows: number }): Promise<void>;
  signal(signal: string): Promise<void>;
  readonly output: ReadableStream<Uint8Array>;
  readonly exit: Promise<{ exitCode: number | null; signal: string | null }>;
  close(): Promise<void>;
}

/** The terminal's size when the client names none, and the largest it may ask for. */
export const DEFAULT_TERMINAL_SIZE = { cols: 80, rows: 24 } as const;
const MAX_TERMINAL_SIDE = 1000;

/** A text message from the browser: input, a resize or a signal. Binary messages are input bytes. */
const clientMessage = z.discriminatedUnion("type", [
  z.object({ type: z.literal("input"), data: z.string().max(64 * 1024) }),
  z.object({
    type: z.literal("resize"),
    cols: z.number().int().min(1).max(MAX_TERMINAL_SIDE),
    rows: z.number().int().min(1).max(MAX_TERMINAL_SIDE),
  }),
  z.object({
    type: z.literal("signal"),
    signal: z.enum(["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL", "SIGQUIT"]),
  }),
]);

/** The size a client asks for in the query (`?cols=&rows=`), within bounds. */
export function terminalSizeOf(url: URL): { cols: number; rows: number } {
  const side = (name: "cols" | "rows") => {
    const raw = url.searchParams.get(name);
    if (raw === null) return DEFAULT_TERMINAL_SIZE[name];
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1 || value > MAX_TERMINAL_SIDE)
      throw new PaiError("BAD_REQUEST", `${name} is a whole number from 1 to ${MAX_TERMINAL_SIDE}`);
    return value;
  };
  return { cols: side("cols"), rows: side("rows") };
}

/**
 * Runs one terminal over `socket`: opens it with the capability's `openTerminal`, sends `{"type":"ready","pid"}`,
 * then output as binary messages (one in flight at a time, so a reader that does not keep up slows the terminal
 * rather than the server's memory), and `{"type":"exit",...}` or `{"type":"error",...}` before closing. The
 * socket closing ends the session and the use of the facade.
 */
export async function serveTerminal(
  socket: WebSocket,
  use: ThreadFacadeUse,
  size: { cols: number; rows: number },
  controller: AbortController,
): Promise<void> {
  let session: TerminalSessionLike | undefined;
  const ended = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.once("close", () => controller.abort());
  try {
    const open = use.facade.openTerminal;
    if (typeof open !== "function")
      throw new PaiError("INVALID_ARGUMENT", "this capability offers no terminal (openTerminal)");
    session = (await open({ ...size, signal: controller.signal })) as TerminalSessionLike;
    const opened = session;
    socket.on("message", (data, isBinary) => void onMessage(opened, socket, data, isBinary));
    sendText(socket, { type: "ready", pid: opened.pid });
    await Promise.race([pumpOutput(opened, socket), ended]);
    if (socket.readyState === socket.OPEN) {
      const exit = await opened.exit;
      sendText(socket, { type: "exit", exitCode: exit.exitCode, signal: exit.signal });
      socket.close(1000, "exited");
    }
  } catch (error) {
    if (socket.readyState === socket.OPEN) {
      const code = PaiError.isInstance(error) ? error.code : errorCode(error);
      const message = error instanceof Error ? error.message : "the terminal failed";
      sendText(socket, { type: "error", code, message });
      socket.close(1011, "terminal error");
    }
  } finally {
    await session?.close().catch(() => undefined);
    await use.release();
    if (socket.readyState !== socket.CLOSED) socket.terminate();
  }
}

async function onMessage(
  session: TerminalSessionLike,
  socket: WebSocket,
  data: unknown,
  isBinary: boolean,
): Promise<void> {
  try {
    if (isBinary) {
      await session.write(toBytes(data));
      return;
    }
    let parsed: z.infer<typeof clientMessage>;
    try {
      parsed = clientMessage.parse(JSON.parse(toBytes(data).toString("utf8")));
    } catch {
      sendText(socket, { type: "error", code: "BAD_REQUEST", message: "not a terminal message" });
      return;
    }
    if (parsed.type === "input") await session.write(parsed.data);
    else if (parsed.type === "resize") await session.resize({ cols: parsed.cols, rows: parsed.rows });
    else await session.signal(parsed.signal);
  } catch {
    // the session ended meanwhile: its exit (or the socket's close) says so
  }
}

/** Sends the session's output, one message at a time. */
async function pumpOutput(session: TerminalSessionLike, socket: WebSocket): Promise<void> {
  const reader = session.output.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || socket.readyState !== socket.OPEN) return;
      await new Promise<void>((resolve) => socket.send(value, { binary: true }, () => resolve()));
    }
  } finally {
    void reader.cancel().catch(() => undefined);
  }
}

function sendText(socket: WebSocket, message: unknown): void {
  if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
}

function toBytes(data: unknown): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data as Buffer[]);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  return Buffer.from(String(data));
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "INTERNAL";
}
