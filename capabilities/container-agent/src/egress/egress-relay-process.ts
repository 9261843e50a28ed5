import { isIP } from "node:net";
import { execa } from "execa";
import { ContainerAgentError } from "../container-agent-error.ts";
import { createFrameDecoder, encodeFrame, type Frame } from "../frame-codec.ts";
import { canonicalAddress } from "./address-class.ts";
import {
  MAX_REQUEST_HEAD_BYTES,
  type ProxiedConnection,
  type ProxiedConnectionEvents,
  type UpstreamRequest,
} from "./egress-proxy.ts";
import { decodeRelayReport, RELAY_REPORT_TYPES } from "./relay-report.ts";

/** Control frames to the relay (see pai-egress-relay.c). */
const Command = {
  admit: 0x01,
  revoke: 0x02,
  refuse: 0x03,
  connect: 0x04,
  close: 0x05,
  listen: 0x06,
} as const;
/** Addresses the relay tries for one connection, at most. */
const MAX_ADDRESSES = 16;
/** How long the relay may take to listen. */
const START_TIMEOUT_MS = 10_000;
/** How long a relay asked to stop may take before it is killed. */
const STOP_TIMEOUT_MS = 2_000;

/** An admitted token as a relay process needs it: what it admits, and where its connections go. */
export interface RelayAdmission {
  readonly token: string;
  readonly handle: (connection: ProxiedConnection) => void;
}

/** One run of `pai-egress-relay`, from its start to its exit; see {@link spawnEgressRelayProcess}. */
export interface EgressRelayProcess {
  /** The process's id (`undefined` when it could not be spawned at all). */
  readonly pid: number | undefined;
  /**
   * Resolves once it listens. Rejects with `ContainerAgentError` `SANDBOX_PROTOCOL` once it exited without
   * listening: it failed, did not listen within 10 s, or the signal aborted (it is killed for the last two).
   */
  readonly listening: Promise<void>;
  /** Resolves, once it exited and every connection it held was closed for its handler, to why it ended. */
  readonly exited: Promise<string>;
  /** Admits `token` as admission `id` (a fresh id). */
  admit(id: number, token: string): void;
  /** Stops admitting admission `id`. */
  revoke(id: number): void;
  /** Connections it refused for a wrong or missing token so far. */
  refused(): number;
  /** Connections open on it now that have not said their header yet. */
  pending(): number;
  /** Ends it (its stdin closes: it removes its socket file and exits; killed after 2 s); resolves once it exited. */
  stop(): Promise<void>;
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

/** Why a process ended, from execa's result: `killed by SIGKILL`, `exited with code 70`. */
function describeExit(result: { signal?: string | undefined; exitCode?: number | undefined }): string {
  if (result.signal) return `killed by ${result.signal}`;
  return result.exitCode === undefined ? "could not be spawned" : `exited with code ${result.exitCode}`;
}

/**
 * Spawns the `pai-egress-relay` at `binary` (see `findPrebuiltBinary`) on the socket `path`. Every admission in
 * `admissions` is admitted before the relay binds the socket, so an agent of a container that is already running
 * finds its token known on its first connection; `admissions` is also where each admitted connection's handler is
 * looked up. The relay then hands each admitted connection, after its request head, to this process as a
 * {@link ProxiedConnection}, connects upstream when told to and splices the bytes in the kernel. When it exits,
 * every connection it held is closed for its handler.
 *
 * The relay exits when this process does (its stdin ends). `holdProcess`: until it listens, it keeps this process
 * alive (for a caller awaiting `listening`); never afterwards.
 */
export function spawnEgressRelayProcess(options: {
  binary: string;
  path: string;
  /** Its second argument: `<uid>:<gid>` to become once it listens, `-` to keep its ids. */
  user: string;
  /** Whether it installs its seccomp filter: only an emulator that cannot (qemu-user, in a test) says no. @default true */
  seccomp?: boolean;
  admissions: ReadonlyMap<number, RelayAdmission>;
  holdProcess: boolean;
  signal?: AbortSignal | undefined;
}): EgressRelayProcess {
  const { binary, path, user, admissions, holdProcess, signal } = options;
  const child = execa(binary, [path, user, ...(options.seccomp === false ? ["--without-seccomp"] : [])], {
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
  const relayed = new Map<number, Relayed>();
  let refusedCount = 0;
  let pendingCount = 0;
  let exitedYet = false;
  let listened = false;
  /** Why this process killed it, when it did. */
  let killedFor: string | undefined;
  let onReady: (() => void) | undefined;

  const send = (type: number, id: number, payload?: Uint8Array) => {
    if (!exitedYet && child.stdin.writable) child.stdin.write(encodeFrame(type, id, payload));
  };
  const kill = (why: string) => {
    killedFor ??= why;
    child.kill("SIGKILL");
  };

  /** Its bytes so far are `up` and `down` in all: tell the proxy what is new. */
  const account = (connection: Relayed, up: number, down: number) => {
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

  const onFrame = (frame: Frame) => {
    const report = decodeRelayReport(frame);
    if (report.kind === "ready") return onReady?.();
    if (report.kind === "counts") {
      refusedCount = report.refused;
      pendingCount = report.pending;
      return;
    }
    if (report.kind === "open") {
      const handle = admissions.get(report.admission)?.handle;
      if (!handle) return send(Command.close, report.id); // revoked as it connected
      const connection: Relayed = {
        events: undefined,
        early: undefined,
        opening: undefined,
        up: 0,
        down: 0,
        closed: false,
      };
      relayed.set(report.id, connection);
      handle(connectionFor(report.id, connection));
      return;
    }
    const connection = relayed.get(report.id);
    if (!connection) return;
    switch (report.kind) {
      case "head":
        if (connection.events) connection.events.head(report.head ?? undefined);
        else connection.early = report.head;
        return;
      case "connected":
      case "failed": {
        const opening = connection.opening;
        connection.opening = undefined;
        if (!opening) return;
        if (report.kind === "failed") return opening.done({ error: report.error });
        return opening.done({ address: opening.addresses[report.index] ?? opening.addresses[0]! });
      }
      case "status":
        return connection.events?.status(report.status);
      case "bytes":
        return account(connection, report.up, report.down);
      case "closed":
        account(connection, report.up, report.down);
        return finish(report.id, connection);
    }
  };

  const decoder = createFrameDecoder({
    onFrame,
    frameTypes: RELAY_REPORT_TYPES,
    maxPayloadBytes: MAX_REQUEST_HEAD_BYTES + 1024,
  });
  child.stdout.on("data", (chunk: Buffer) => {
    try {
      decoder.write(chunk);
    } catch {
      kill("it sent a malformed frame"); // its connections close
    }
  });
  const exited = child.then((result) => {
    exitedYet = true;
    for (const [id, connection] of [...relayed]) finish(id, connection);
    const tail = diagnostics.trim();
    return `${killedFor ?? describeExit(result)}${tail ? `: ${tail}` : ""}`;
  });

  const release = () => {
    // Never keeps this process alive: it exits when this process does (its stdin ends).
    child.nodeChildProcess.unref();
    for (const stream of [child.stdin, child.stdout, child.stderr])
      (stream as { unref?: () => void }).unref?.();
  };
  if (!holdProcess) release();

  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => kill(`it did not listen on ${path} within ${START_TIMEOUT_MS} ms`),
      START_TIMEOUT_MS,
    );
    if (!holdProcess) timer.unref();
    const abort = () => kill("its start was aborted");
    const settle = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", abort);
      onReady = undefined;
    };
    onReady = () => {
      settle();
      listened = true;
      if (holdProcess) release();
      resolve();
    };
    void exited.then((reason) => {
      if (listened) return;
      settle();
      reject(
        new ContainerAgentError("SANDBOX_PROTOCOL", `the egress relay did not start: ${reason}`, {
          details: { path },
        }),
      );
    });
    if (signal?.aborted) abort();
    else signal?.addEventListener("abort", abort, { once: true });
  });

  // The admissions first, then LISTEN: the relay reads them all before it binds the socket.
  for (const [id, { token }] of admissions) send(Command.admit, id, Buffer.from(token, "latin1"));
  send(Command.listen, 0);

  return {
    pid: child.pid,
    listening,
    exited,
    admit: (id, token) => send(Command.admit, id, Buffer.from(token, "latin1")),
    revoke: (id) => send(Command.revoke, id),
    refused: () => refusedCount,
    pending: () => pendingCount,
    async stop() {
      child.stdin.end();
      const timer = setTimeout(() => kill("it did not stop"), STOP_TIMEOUT_MS);
      try {
        await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
