import type { Socket } from "node:net";

/**
 * The key of a method a connection to a resource's port may carry (`CapabilityBinding`'s `openPort`): it moves the
 * connection's next `bytes` to `destination`, a socket of this process, in the kernel — not through JavaScript —
 * and resolves to what it moved. The preview gateway moves large response bodies this way; a connection without it
 * is read and written by Node as any stream. Neither socket is ended or closed by it.
 */
export const spliceBytes: unique symbol = Symbol.for("pai.splice-bytes");

/** The method under {@link spliceBytes}. `complete` is false when a side ended or failed first, or `signal` aborted. */
export type SpliceBytes = (
  destination: Socket,
  bytes: number,
  signal: AbortSignal,
) => Promise<{ moved: number; complete: boolean }>;

/** The connection's {@link SpliceBytes}, when it has one. */
export function spliceOf(connection: object): SpliceBytes | undefined {
  const method = (connection as { [spliceBytes]?: unknown })[spliceBytes];
  return typeof method === "function" ? (method as SpliceBytes) : undefined;
}
