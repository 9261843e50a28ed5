import { randomBytes } from "node:crypto";
import { unlinkSync } from "node:fs";
import { unlink } from "node:fs/promises";
import { basename } from "node:path";
import { ContainerAgentError } from "../container-agent-error.ts";
import { claimSocketPath } from "../host-socket-directory.ts";
import { findPrebuiltBinary } from "../prebuilt-binary.ts";
import { createRestartSchedule, type RestartBackoffOptions } from "../restart-schedule.ts";
import type { ProxiedConnection } from "./egress-proxy.ts";
import {
  type EgressRelayProcess,
  type RelayAdmission,
  spawnEgressRelayProcess,
} from "./egress-relay-process.ts";
import { type RelayUser, relayUserArgument, resolveRelayUser } from "./relay-user.ts";

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
  /** The relay process's id now; `undefined` while one that exited waits to be started again. */
  pid(): number | undefined;
  /**
   * Stops the relay, and any restart that is waiting: its socket file is removed and every connection closed
   * (their handlers hear of it).
   */
  close(): Promise<void>;
}

/** What {@link createEgressRelay} accepts. */
export interface EgressRelayOptions {
  /** The host socket directory; it must exist and be this process's. */
  directory: string;
  /** Aborts the first start (until it listens). */
  signal?: AbortSignal | undefined;
  /**
   * Whom the relay becomes once its socket listens (it also sets no_new_privs and a seccomp filter allowing only the
   * system calls of its loop): these ids, or `"self"` to keep this process's.
   * @default `PAI_EGRESS_RELAY_USER` (`self`, `<uid>:<gid>` or a user name), else `nobody` when this process is
   * root, else `"self"`
   */
  user?: RelayUser | undefined;
  /** How a relay that exited unexpectedly is started again. */
  restart?: RestartBackoffOptions | undefined;
  /**
   * Told once of each unexpected exit of the relay (a failed restart included): a `ContainerAgentError`
   * `SANDBOX_PROTOCOL` saying why (the relay's last words on stderr) and, in `details`, `pid`, `path` and
   * `restartInMs`. @default process.emitWarning
   */
  onError?: ((error: ContainerAgentError) => void) | undefined;
}

/**
 * Starts this process's egress relay (`pai-egress-relay`, shipped prebuilt with the agent for this machine's
 * architecture; nothing is compiled): it listens on
 * `<directory>/<pid>.sock`, this process's pid (mode 0666: a container's user must be able to connect; the token
 * is what admits), after removing the sockets of processes that are gone. The directory must exist and be this
 * process's. Each admitted connection's request head comes here to be decided; the relay then connects upstream
 * and moves the bytes both ways in the kernel (splice), reporting them. The relay does not keep this process
 * alive, and exits when this process does; the file is removed then (by this process's exit handler; after a
 * kill -9 of this process, by the next process that claims the directory, since the relay may run as another user
 * that cannot remove it: see `user`).
 *
 * When the relay exits while this process lives (killed, out of memory, a crash), it is reported to `onError`
 * and started again on the same path after a wait (100 ms, doubling with each exit up to 10 s; back to 100 ms
 * once one has listened for a minute), admitting every token admitted and not revoked before it listens: the
 * containers already running use it again as they were, without being recreated. The connections it was
 * relaying are lost (closed for their handlers); until the new one listens, agents find the socket unreachable and
 * tunnel their new connections over their exec stream. No wait keeps this process alive; `close()` cancels it.
 *
 * @throws ContainerAgentError `PREBUILT_BINARY_MISSING` when this package ships no relay for this machine
 *   (`process.platform`, `process.arch`); `SANDBOX_PROTOCOL` when the relay does not start listening
 * @example
 * const relay = await createEgressRelay({ directory: "/run/pai-egress" });
 * const { token } = relay.admit((connection) => proxy.handle(connection, { channel: "socket" }));
 */
export async function createEgressRelay(options: EgressRelayOptions): Promise<EgressRelay> {
  const { signal } = options;
  const binary = await findPrebuiltBinary({
    program: "pai-egress-relay",
    platform: process.platform,
    architecture: process.arch,
  });
  const user = relayUserArgument(resolveRelayUser(options.user));
  const path = await claimSocketPath(options.directory, ".sock");
  const fileName = basename(path);
  /** Every token admitted and not revoked: each relay that starts admits them all before it listens. */
  const admissions = new Map<number, RelayAdmission>();
  let nextAdmission = 1;
  let current: EgressRelayProcess | undefined;
  /** Refusals counted by the relays that exited. */
  let refusedEarlier = 0;
  let closed = false;
  const restarts = createRestartSchedule({
    restart: () => watch(spawnEgressRelayProcess({ binary, path, user, admissions, holdProcess: false })),
    backoff: options.restart,
    onError: options.onError,
  });

  /** Follows `relay` to its exit: unless the relay is closing, it is reported and started again after a wait. */
  const watch = (relay: EgressRelayProcess) => {
    current = relay;
    let listenedAt: number | undefined;
    relay.listening.then(
      () => {
        listenedAt = Date.now();
      },
      () => {}, // seen by its exit
    );
    void relay.exited.then((reason) => {
      refusedEarlier += relay.refused();
      if (current === relay) current = undefined;
      if (closed) return;
      restarts.schedule(
        listenedAt,
        (wait) =>
          new ContainerAgentError(
            "SANDBOX_PROTOCOL",
            `the egress relay (pid ${relay.pid}) ${reason}; starting it again in ${wait} ms (the connections ` +
              "it relayed are lost; containers tunnel until it listens)",
            { details: { pid: relay.pid, path, restartInMs: wait } },
          ),
      );
    });
  };

  const first = spawnEgressRelayProcess({ binary, path, user, admissions, holdProcess: true, signal });
  await first.listening;
  watch(first);
  const removeFile = () => {
    try {
      unlinkSync(path); // the process is exiting: nothing asynchronous runs any more
    } catch {
      // already gone
    }
  };
  process.once("exit", removeFile);

  return {
    fileName,
    admit(handle) {
      const token = randomBytes(32).toString("base64url");
      const id = nextAdmission++;
      admissions.set(id, { token, handle });
      current?.admit(id, token);
      return {
        token,
        revoke() {
          if (admissions.delete(id)) current?.revoke(id);
        },
      };
    },
    refused: () => refusedEarlier + (current?.refused() ?? 0),
    pending: () => current?.pending() ?? 0,
    pid: () => current?.pid,
    async close() {
      closed = true;
      restarts.cancel();
      process.off("exit", removeFile);
      admissions.clear();
      try {
        await current?.stop();
      } finally {
        await unlink(path).catch(() => undefined); // left behind by a relay that was killed
      }
    },
  };
}
