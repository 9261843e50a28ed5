import { randomBytes } from "node:crypto";
import { unlinkSync } from "node:fs";
import { isIP } from "node:net";
import { basename } from "node:path";
import { execa } from "execa";
import { buildAgentBinary, egressRelayBinaryPath } from "../agent-binary.ts";
import { ContainerAgentError } from "../container-agent-error.ts";
import { createFrameDecoder, encodeFrame, type Frame } from "../frame-codec.ts";
import { claimSocketPath } from "../host-socket-directory.ts";
import { canonicalAddress } from "./address-class.ts";
import {
  MAX_REQUEST_HEAD_BYTES,
  type ProxiedConnection,
  type ProxiedConnectionEvents,
  type UpstreamRequest,
} from "./egress-proxy.ts";

/** Control frames to the relay (see pai-egress-relay.c). */
const Command = { admit: 0x01, revoke: 0x02, refuse: 0x03, connect: 0x04, close: 0x05 } as const;
/** Control frames from the relay. */
const Report = {
  ready: 0x81,
  open: 0x82,
  head: 0x83,
  tooBig: 0x84,
  connected: 0x85,
  failed: 0x86,
  status: 0x87,
  bytes: 0x88,
  closed: 0x89,
  counts: 0x8a,
} as const;
/** Addresses the relay tries for one connection, at most. */
const MAX_ADDRESSES = 16;
/** How long the relay may take to listen. */
const START_TIMEOUT_MS = 10_000;

/** A token admitted by {@link EgressRelay.admit}. */
export interface EgressAdmission {
  /** What the agent must send (random, 256 bits); give it to the agent only, over its own connection. */
  readonly token: string;
  /** Stops admitting the token (connections already handed over are not touched). Idempotent. */
  revoke(): void;
}

/**
 * This process's egress relay: a native process listening on a unix socket that agents relay their containers'
 * egress connections to. It admits a connection by its token and moves its bytes in the kernel; this process
 * decides every connection (through the proxy the admission names).
 */
export interface EgressRelay {
  /** The socket's file name in its directory. */
  readonly fileName: string;
  /**
   * Admits connections that present a fresh token: each is handed to `handle` after its header line, as a
   * {@link ProxiedConnection} (give it to `EgressProxy.handle`). A connection with any other token, or none
   * within 5 s, is closed by the relay and seen by no handler.
   */
  admit(handle: (connection: ProxiedConnection) => void): EgressAdmission;
  /** Connections refused for a wrong or missing token so far (or closed as the oldest without one). */
  refused(): number;
  /** Connections open now that have not said their header yet. */
  pending(): number;
  /** Stops the relay: its socket file is removed and every connection closed (their handlers hear of it). */
  close(): Promise<void>;
}

/** `u8 family | 16 address bytes` for the relay; `undefined` for what is not an IP address. */
function encodeAddress(address: string): Uint8Array | undefined {
  const canonical = canonicalAddress(address);
  if (canonical === undefined) return undefined;
  const entry = new Uint8Array(17);
  if (isIP(canonical) === 4) {
    entry[0] = 4;
    entry.set(canonical.split(".").map(Number), 1);
    return entry;
  }
  const [head = "", tail] = canonical.split("::");
  const groups = (text: string) =>
    text === "" ? [] : text.split(":").map((group) => Number.parseInt(group, 16));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  if (all.length !== 8 || all.some((group) => !(group >= 0 && group <= 0xffff))) return undefined;
  entry[0] = 6;
  all.forEach((group, index) => {
    entry[1 + index * 2] = group >> 8;
    entry[2 + index * 2] = group & 0xff;
  });
  return entry;
}

/** The CONNECT command's payload and the addresses it names, in order. */
function encodeConnect(request: UpstreamRequest): { payload: Uint8Array; addresses: string[] } | undefined {
  const addresses: string[] = [];
  const entries: Uint8Array[] = [];
  for (const address of request.addresses) {
    const entry = encodeAddress(address);
    if (!entry || entries.length === MAX_ADDRESSES) continue;
    addresses.push(address);
    entries.push(entry);
  }
  if (entries.length === 0) return undefined;
  const prelude = Buffer.from(request.prelude, "latin1");
  const upstreamHead = Buffer.from(request.upstreamHead, "latin1");
  const payload = Buffer.alloc(16 + entries.length * 17 + 4 + prelude.length + upstreamHead.length);
  payload.writeUInt32BE(Math.min(Math.max(Math.ceil(request.timeoutMs), 1), 0xffffffff), 0);
  payload.writeBigUInt64BE(
    BigInt(Math.max(0, Math.floor(Math.min(request.maxBytes, Number.MAX_SAFE_INTEGER)))),
    4,
  );
  payload.writeUInt16BE(request.port, 12);
  payload[14] = request.reportStatus ? 1 : 0;
  payload[15] = entries.length;
  let offset = 16;
  for (const entry of entries) {
    payload.set(entry, offset);
    offset += entry.length;
  }
  payload.writeUInt32BE(prelude.length, offset);
  prelude.copy(payload, offset + 4);
  upstreamHead.copy(payload, offset + 4 + prelude.length);
  return { payload, addresses };
}

/** What this process knows of one connection the relay admitted. */
interface Relayed {
  events: ProxiedConnectionEvents | undefined;
  /** The head (or `null`: too big) when it came before `start`. */
  early: string | null | undefined;
  /** Awaiting CONNECTED or FAILED. */
  opening:
    | { addresses: string[]; done: (outcome: { address: string } | { error: string }) => void }
    | undefined;
  up: number;
  down: number;
  closed: boolean;
}

/**
 * Starts this process's egress relay (`pai-egress-relay`, built with the agent): it listens on
 * `<directory>/<pid>.sock`, this process's pid (mode 0666: a container's user must be able to connect; the token
 * is what admits), after removing the sockets of processes that are gone. The directory must exist and be this
 * process's. Each admitted connection's request head comes here to be decided; the relay then connects upstream
 * and moves the bytes both ways in the kernel (splice), reporting them. The relay does not keep this process
 * alive, and exits (removing the file) when this process does.
 *
 * @throws ContainerAgentError `SANDBOX_PROTOCOL` when the relay cannot be built or does not start listening
 * @example
 * const relay = await createEgressRelay({ directory: "/run/pai-egress" });
 * const { token } = relay.admit((connection) => proxy.handle(connection, { channel: "socket" }));
 */
export async function createEgressRelay(options: {
  directory: string;
  signal?: AbortSignal | undefined;
}): Promise<EgressRelay> {
  const { signal } = options;
  const path = await claimSocketPath(options.directory, ".sock");
  const fileName = basename(path);
  try {
    await buildAgentBinary({ signal });
  } catch (error) {
    throw new ContainerAgentError("SANDBOX_PROTOCOL", `the egress relay cannot be built: ${String(error)}`, {
      cause: error,
    });
  }
  const child = execa(egressRelayBinaryPath, [path], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
    buffer: false,
    reject: false,
  });
  // A relay that died is seen by its exit; a write after that must not throw out of this process.
  child.stdin.on("error", () => {});
  let diagnostics = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (text: string) => {
    diagnostics = (diagnostics + text).slice(-4096);
  });
  const handlers = new Map<number, (connection: ProxiedConnection) => void>();
  const relayed = new Map<number, Relayed>();
  let nextAdmission = 1;
  let refusedCount = 0;
  let pendingCount = 0;
  let exited = false;
  let ready: ((version: string) => void) | undefined;

  const send = (type: number, id: number, payload?: Uint8Array) => {
    if (!exited && child.stdin.writable) child.stdin.write(encodeFrame(type, id, payload));
  };

  /** Its bytes so far are `up` and `down` in all: tell the proxy what is new. */
  const account = (connection: Relayed, payload: Uint8Array) => {
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    const up = Number(view.getBigUint64(0));
    const down = Number(view.getBigUint64(8));
    if (up > connection.up || down > connection.down) {
      const [moreUp, moreDown] = [up - connection.up, down - connection.down];
      connection.up = up;
      connection.down = down;
      connection.events?.bytes(moreUp, moreDown);
    }
  };

  const finish = (id: number, connection: Relayed) => {
    relayed.delete(id);
    connection.closed = true;
    connection.events?.close();
  };

  const connectionFor = (id: number, connection: Relayed): ProxiedConnection => ({
    start(events) {
      connection.events = events;
      if (connection.early !== undefined) events.head(connection.early ?? undefined);
      connection.early = undefined;
    },
    refuse(answer) {
      if (!connection.closed) send(Command.refuse, id, Buffer.from(answer, "utf8"));
    },
    open(request, done) {
      if (connection.closed) return;
      const encoded = encodeConnect(request);
      if (!encoded) return done({ error: "no address the relay can connect to" });
      connection.opening = { addresses: encoded.addresses, done };
      send(Command.connect, id, encoded.payload);
    },
    destroy() {
      if (!connection.closed) send(Command.close, id);
    },
  });

  const onFrame = ({ type, requestId: id, payload }: Frame) => {
    if (type === Report.ready) return ready?.(Buffer.from(payload).toString("latin1"));
    if (type === Report.counts) {
      const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
      refusedCount = view.getUint32(0);
      pendingCount = view.getUint32(4);
      return;
    }
    if (type === Report.open) {
      const admission = new DataView(payload.buffer, payload.byteOffset, payload.byteLength).getUint32(0);
      const handle = handlers.get(admission);
      if (!handle) return send(Command.close, id); // revoked as it connected
      const connection: Relayed = {
        events: undefined,
        early: undefined,
        opening: undefined,
        up: 0,
        down: 0,
        closed: false,
      };
      relayed.set(id, connection);
      handle(connectionFor(id, connection));
      return;
    }
    const connection = relayed.get(id);
    if (!connection) return;
    switch (type) {
      case Report.head:
      case Report.tooBig: {
        const head = type === Report.head ? Buffer.from(payload).toString("latin1") : null;
        if (connection.events) connection.events.head(head ?? undefined);
        else connection.early = head;
        return;
      }
      case Report.connected:
      case Report.failed: {
        const opening = connection.opening;
        connection.opening = undefined;
        if (!opening) return;
        if (type === Report.failed) return opening.done({ error: Buffer.from(payload).toString("latin1") });
        return opening.done({ address: opening.addresses[payload[0] ?? 0] ?? opening.addresses[0]! });
      }
      case Report.status:
        return connection.events?.status((payload[0]! << 8) | payload[1]!);
      case Report.bytes:
        return account(connection, payload);
      case Report.closed:
        account(connection, payload);
        return finish(id, connection);
    }
  };

  const decoder = createFrameDecoder({
    onFrame,
    frameTypes: new Set<number>(Object.values(Report)),
    maxPayloadBytes: MAX_REQUEST_HEAD_BYTES + 1024,
  });
  child.stdout.on("data", (chunk: Buffer) => {
    try {
      decoder.write(chunk);
    } catch {
      child.kill("SIGKILL"); // the relay spoke nonsense: stop it (its connections close)
    }
  });
  const exit = child.then(() => {
    exited = true;
    handlers.clear();
    for (const [id, connection] of [...relayed]) finish(id, connection);
  });

  const removeFile = () => {
    try {
      unlinkSync(path); // the process is exiting: nothing asynchronous runs any more
    } catch {
      // already gone
    }
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => settle(`the egress relay did not listen on ${path} within ${START_TIMEOUT_MS} ms`),
        START_TIMEOUT_MS,
      );
      const abort = () => settle("aborted");
      function settle(failure?: string) {
        clearTimeout(timer);
        signal?.removeEventListener("abort", abort);
        ready = undefined;
        if (failure === undefined) resolve();
        else reject(new ContainerAgentError("SANDBOX_PROTOCOL", failure, { details: { path } }));
      }
      ready = () => settle();
      void exit.then(() => settle(`the egress relay exited: ${diagnostics.trim() || "no reason given"}`));
      if (signal?.aborted) abort();
      else signal?.addEventListener("abort", abort, { once: true });
    });
  } catch (error) {
    child.kill("SIGKILL");
    await exit;
    throw error;
  }
  process.once("exit", removeFile);
  // The relay must not keep this process alive; it exits when this process does (its stdin ends).
  child.nodeChildProcess.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr])
    (stream as { unref?: () => void }).unref?.();

  return {
    fileName,
    admit(handle) {
      const token = randomBytes(32).toString("base64url");
      const id = nextAdmission++;
      handlers.set(id, handle);
      send(Command.admit, id, Buffer.from(token, "latin1"));
      return {
        token,
        revoke() {
          if (handlers.delete(id)) send(Command.revoke, id);
        },
      };
    },
    refused: () => refusedCount,
    pending: () => pendingCount,
    async close() {
      process.off("exit", removeFile);
      handlers.clear();
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), 2_000);
      try {
        await exit;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
