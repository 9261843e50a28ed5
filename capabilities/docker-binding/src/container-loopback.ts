import { readFile } from "node:fs/promises";
import type { Duplex } from "node:stream";
import { type LoopbackConnector, openLoopbackConnector } from "@pai/container-agent";
import type { ContainerDriver } from "@pai/pool";

/**
 * OCI runtimes whose containers' loopback is their network namespace's, in this machine's kernel. Others (gVisor's
 * `runsc`, VM runtimes such as Kata) keep the container's network stack elsewhere: only their agent reaches it.
 */
const KERNEL_NAMESPACE_RUNTIMES = new Set(["runc", "crun", "youki", "io.containerd.runc.v2"]);

/**
 * Connections to a started container's loopback ports made straight from this machine (`openLoopbackConnector`: a
 * helper enters the container's network namespace, connects, and hands the socket over), so no process relays a
 * preview's bytes. The helper starts on the first connect and ends with {@link ContainerLoopback.close} (the
 * container's teardown: it stopped, or its lease ended).
 */
export interface ContainerLoopback {
  /**
   * A new connection to `port`: straight from this machine when it can, otherwise `fallback()` (the capability's own
   * path, through the container's agent), which also answers every connect the direct path could not make (a closed
   * port then gets the capability's own error). The direct path is given up for the container when it cannot be set
   * up: an engine elsewhere or in its own mount namespace (rootless), no privilege to enter the namespace, a runtime
   * whose loopback is not the namespace's.
   */
  connect(port: number, signal: AbortSignal, fallback: () => Promise<Duplex>): Promise<Duplex>;
  /** Ends the helper; later connects take the fallback. Connections already made stay open. */
  close(): void;
}

/** A {@link ContainerLoopback} for the container `containerId` of `driver`'s engine, which runs on this machine. */
export function createContainerLoopback(options: {
  driver: ContainerDriver;
  containerId: string;
}): ContainerLoopback {
  const { driver, containerId } = options;
  let connector: Promise<LoopbackConnector | undefined> | undefined;
  let closed = false;

  /**
   * The container's network namespace as a path of this machine: the engine's own name for it, else its main
   * process's, once that pid is known to be the container's here (its cgroup names the container: an engine in
   * another pid namespace, such as a VM's, numbers its processes otherwise).
   */
  async function namespaceOf(): Promise<{ path: string; pid: number | undefined } | undefined> {
    const { networkNamespace, pid, runtime } = await driver.inspect(containerId);
    if (runtime !== undefined && !KERNEL_NAMESPACE_RUNTIMES.has(runtime)) return undefined;
    if (networkNamespace) return { path: networkNamespace, pid: undefined };
    if (pid === undefined || !(await inContainerCgroup(pid))) return undefined;
    return { path: `/proc/${pid}/ns/net`, pid };
  }

  function inContainerCgroup(pid: number): Promise<boolean> {
    return readFile(`/proc/${pid}/cgroup`, "utf8").then(
      (cgroup) => cgroup.includes(containerId),
      () => false,
    );
  }

  async function open(): Promise<LoopbackConnector | undefined> {
    const namespace = await namespaceOf();
    if (!namespace) return undefined;
    const opened = await openLoopbackConnector({ networkNamespace: namespace.path });
    // The helper entered the namespace of the process that had the pid then: still the container's.
    if (opened && namespace.pid !== undefined && !(await inContainerCgroup(namespace.pid))) {
      opened.close();
      return undefined;
    }
    return opened;
  }

  /** The direct connection, or `undefined` when there is none to be had. */
  async function direct(port: number, signal: AbortSignal): Promise<Duplex | undefined> {
    connector ??= open().catch(() => undefined);
    const opened = await connector;
    if (!opened || closed) return undefined;
    try {
      return await opened.connect(port, signal);
    } catch (error) {
      if (signal.aborted) throw error;
      return undefined;
    }
  }

  return {
    async connect(port, signal, fallback) {
      return (closed ? undefined : await direct(port, signal)) ?? fallback();
    },
    close() {
      closed = true;
      void connector?.then((opened) => opened?.close());
    },
  };
}
