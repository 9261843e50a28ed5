import { callAgent } from "./agent-call.ts";
import type { AgentConnection } from "./agent-connection.ts";
import {
  encodeReadFilePayload,
  encodeWriteFilePayload,
  FrameType,
  MAX_FRAME_PAYLOAD_BYTES,
} from "./agent-protocol.ts";
import { agentError, unexpectedFrame } from "./agent-reply-errors.ts";
import { toBytes } from "./to-bytes.ts";

/** Options of `AgentClient.readFile`. */
export interface AgentReadFileOptions {
  /**
   * The directory the read is confined to: `path` is resolved inside the container (symlinks followed) and
   * refused with `SANDBOX_FILE_FAILED` `EXDEV` (the resolved path as the message) when it leaves `root`.
   */
  root: string;
  /** Largest file accepted; a larger one fails with `SANDBOX_FILE_FAILED`. @default 1048576 (the maximum) */
  maxBytes?: number | undefined;
  /** Read as this user. @default the agent's default user */
  uid?: number | undefined;
  /** Read as this group. @default the agent's default group */
  gid?: number | undefined;
  /** Stops waiting for the answer. */
  signal?: AbortSignal | undefined;
}

/** Options of `AgentClient.writeFile`. */
export interface AgentWriteFileOptions {
  /**
   * The directory the write is confined to, as for reads. The file is written by its name in its parent (a
   * symlink there is replaced; a directory is refused with `EISDIR`); missing parents are created.
   */
  root: string;
  /** Permission bits, applied even when the file exists. @default 0o644 for a new file, unchanged otherwise */
  mode?: number | undefined;
  /** Only check where the file would go (outside `root`, a directory): nothing is written. */
  checkOnly?: boolean | undefined;
  /** Write as this user (it owns new files and directories). @default the agent's default user */
  uid?: number | undefined;
  /** Write as this group. @default the agent's default group */
  gid?: number | undefined;
  /** Stops waiting for the answer. */
  signal?: AbortSignal | undefined;
}

/** A small file's bytes through the agent, or null when it (or a parent directory) does not exist. */
export function readAgentFile(
  connection: AgentConnection,
  path: string,
  options: AgentReadFileOptions,
): Promise<Uint8Array | null> {
  let payload: Uint8Array;
  try {
    payload = encodeReadFilePayload({
      root: options.root,
      path,
      maxBytes: options.maxBytes ?? MAX_FRAME_PAYLOAD_BYTES,
      uid: options.uid,
      gid: options.gid,
    });
  } catch (error) {
    return Promise.reject(error);
  }
  return callAgent(connection, {
    type: FrameType.ReadFile,
    payload,
    signal: options.signal,
    onReply(frame) {
      switch (frame.type) {
        case FrameType.FileData:
          return new Uint8Array(frame.payload); // a copy, and a plain Uint8Array
        case FrameType.FileMissing:
          return null;
        case FrameType.Error:
          throw agentError("SANDBOX_FILE_FAILED", frame.payload, { path, operation: "read" });
        default:
          return unexpectedFrame(frame, "READ_FILE");
      }
    },
  });
}

/** Writes a small file through the agent (at most about 1 MiB), creating parent directories. */
export function writeAgentFile(
  connection: AgentConnection,
  path: string,
  content: Uint8Array | string,
  options: AgentWriteFileOptions,
): Promise<void> {
  let payload: Uint8Array;
  try {
    payload = encodeWriteFilePayload({
      root: options.root,
      path,
      content: toBytes(content),
      mode: options.mode,
      checkOnly: options.checkOnly,
      uid: options.uid,
      gid: options.gid,
    });
  } catch (error) {
    return Promise.reject(error);
  }
  return callAgent(connection, {
    type: FrameType.WriteFile,
    payload,
    signal: options.signal,
    onReply(frame): void {
      if (frame.type === FrameType.FileWritten) return;
      if (frame.type === FrameType.Error) {
        throw agentError("SANDBOX_FILE_FAILED", frame.payload, { path, operation: "write" });
      }
      unexpectedFrame(frame, "WRITE_FILE");
    },
  });
}
