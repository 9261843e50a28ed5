import { timingSafeEqual } from "node:crypto";
import type { Socket } from "node:net";
import { ContainerAgentError, type ContainerAgentErrorCode } from "@pai/container-agent";
import { PoolError, type PoolErrorCode } from "@pai/pool";
import { SandboxError, type SandboxErrorCode } from "../sandbox-error.ts";
import type { PaiSandboxPoolOptions } from "./fixture-options.ts";

/**
 * The local channel between a run's sandbox pool (in Vitest's global setup) and its test workers: JSON lines
 * over a unix socket in the run's private directory, each opening line carrying the run's secret.
 *
 * - A **lease** connection: `acquire` → `acquired` (or `error`); later `release` → `released`. The sandbox
 *   lives until it is released or the connection closes (the worker died), whichever comes first.
 * - An **agent** connection: `agent` with the lease's token; from then on the socket carries the in-container
 *   agent's own byte stream, relayed by the pool process.
 */
export type PoolRequest =
  | { type: "acquire"; secret: string; options: PaiSandboxPoolOptions }
  | { type: "agent"; secret: string; token: string }
  | { type: "release" };

/** What the pool process answers. */
export type PoolReply =
  | { type: "acquired"; containerId: string; image: string; token: string }
  | { type: "released" }
  | {
      type: "error";
      /** The error's class, so the worker rebuilds the same one. */
      error: WireErrorName;
      code: string;
      message: string;
      details?: Record<string, unknown>;
    };

/** The error classes a reply carries. */
export type WireErrorName = "SandboxError" | "PoolError" | "ContainerAgentError";

/** The longest line either side sends. */
export const MAX_LINE_BYTES = 64 * 1024;

/** Writes one message as a line. */
export function writeMessage(socket: Socket, message: PoolRequest | PoolReply): void {
  socket.write(`${JSON.stringify(message)}\n`);
}

/** Writes a last message and ends the connection. */
export function endWithMessage(socket: Socket, message: PoolReply): void {
  socket.end(`${JSON.stringify(message)}\n`);
}

/**
 * The next line the socket carries. Bytes after it are pushed back onto the (paused) socket for whoever reads
 * next. Rejects when the socket ends first or the line is longer than {@link MAX_LINE_BYTES} (which destroys it).
 */
export function readLine(socket: Socket): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    if (socket.destroyed || socket.readableEnded) {
      reject(new Error("the connection has ended"));
      return;
    }
    let buffered: Buffer = Buffer.alloc(0);
    const cleanup = () => {
      socket.off("data", onData);
      socket.off("end", onEnd);
      socket.off("close", onEnd);
      socket.pause();
    };
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const newline = buffered.indexOf(10);
      if (newline >= 0) {
        cleanup();
        const rest = buffered.subarray(newline + 1);
        if (rest.length > 0) socket.unshift(rest);
        resolve(buffered.subarray(0, newline).toString("utf8"));
      } else if (buffered.length > MAX_LINE_BYTES) {
        cleanup();
        socket.destroy();
        reject(new Error("line too long"));
      }
    };
    const onEnd = () => {
      cleanup();
      reject(new Error("the connection ended before a full line"));
    };
    socket.on("data", onData);
    socket.once("end", onEnd);
    socket.once("close", onEnd);
    socket.resume();
  });
}

/** A parsed message, or `undefined` for anything that is not a JSON object with a string `type`. */
export function parseMessage(line: string): ({ type: string } & Record<string, unknown>) | undefined {
  try {
    const value: unknown = JSON.parse(line);
    if (
      typeof value === "object" &&
      value !== null &&
      typeof (value as { type?: unknown }).type === "string"
    ) {
      return value as { type: string } & Record<string, unknown>;
    }
  } catch {
    // not JSON
  }
  return undefined;
}

/** Compares a presented secret with the run's in constant time. */
export function secretMatches(presented: unknown, secret: string): boolean {
  if (typeof presented !== "string") return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The error a pool reply stands for, rebuilt in the worker as the class it was in the pool process. */
export function replyError(reply: {
  error: WireErrorName;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}): SandboxError | PoolError | ContainerAgentError {
  const options = reply.details ? { details: reply.details } : {};
  switch (reply.error) {
    case "PoolError":
      return new PoolError(reply.code as PoolErrorCode, reply.message, options);
    case "ContainerAgentError":
      return new ContainerAgentError(reply.code as ContainerAgentErrorCode, reply.message, options);
    default:
      return new SandboxError(reply.code as SandboxErrorCode, reply.message, options);
  }
}

/** An error as an `error` reply: its class and code when it is one of PAI's, else a `SandboxError` code. */
export function errorReply(error: unknown): PoolReply {
  if (
    SandboxError.isInstance(error) ||
    PoolError.isInstance(error) ||
    ContainerAgentError.isInstance(error)
  ) {
    return {
      type: "error",
      error: SandboxError.isInstance(error)
        ? "SandboxError"
        : PoolError.isInstance(error)
          ? "PoolError"
          : "ContainerAgentError",
      code: error.code,
      message: error.message,
      ...(error.details ? { details: { ...error.details } } : {}),
    };
  }
  if (error instanceof TypeError || error instanceof RangeError) {
    return { type: "error", error: "SandboxError", code: "INVALID_ARGUMENT", message: error.message };
  }
  return {
    type: "error",
    error: "SandboxError",
    code: "CAPABILITY_UNAVAILABLE",
    message: error instanceof Error ? error.message : String(error),
  };
}
