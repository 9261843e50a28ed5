import { type AgentClient, connectContainerAgent } from "@pai/container-agent";
import type { ContainerDriver } from "@pai/pool";
import { type Browser, chromium } from "playwright-core";
import { BrowserError } from "./browser-error.ts";
import { createCdpPipeTransport } from "./cdp-pipe-transport.ts";
import { PROFILE_DIRECTORY } from "./chromium-command.ts";

/** A Chromium in one container, driven by Playwright over the agent-relayed DevTools pipe. */
export interface ChromiumConnection {
  readonly containerId: string;
  /** Chromium's version, e.g. `156.0.8078.114`. */
  readonly version: string;
  /** The Playwright browser (kept out of the public API; the facade is what tools see). */
  readonly browser: Browser;
  /** False once the connection dropped (Chromium exited, the agent or the container went away). */
  isConnected(): boolean;
  /** Disconnects Playwright, stops Chromium and ends the agent's session. Idempotent. */
  close(): Promise<void>;
}

/** Options of {@link connectChromium}. */
export interface ConnectChromiumOptions {
  driver: ContainerDriver;
  containerId: string;
  /** The Chromium command line (`chromiumCommand(...)`). */
  command: readonly string[];
  /**
   * An adopted container (after a restart) may still run the Chromium and agent of the process that made it:
   * they are stopped first, and the profile's locks removed, so the new Chromium starts on the same profile.
   */
  adopted?: boolean;
  /** Runs once the agent is connected, before Chromium starts (e.g. to serve the egress proxy). */
  onAgent?: ((client: AgentClient, signal: AbortSignal | undefined) => Promise<unknown>) | undefined;
  /** Gives up; nothing stays running. */
  signal?: AbortSignal;
  /** How long Chromium may take to start and answer. @default 30000 */
  timeoutMs?: number;
}

/**
 * Stops what an earlier session left running (its agent and Chromium), waits (up to 5 s) until none of it is left
 * but zombies (a process being killed may still hold the profile), and clears Chromium's profile locks.
 */
const CLEAR_LEFTOVERS = `leftovers() {
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$PPID" ] && continue
    cmd=$(tr '\\0' ' ' < "$d/cmdline" 2>/dev/null) || continue
    case "$cmd" in /usr/lib/chromium/*|/usr/bin/chromium*|/opt/pai/pai-agent*) echo "$p" ;; esac
  done
}
for p in $(leftovers); do kill -KILL "$p" 2>/dev/null; done
i=0
while [ -n "$(leftovers)" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
rm -f ${PROFILE_DIRECTORY}/SingletonLock ${PROFILE_DIRECTORY}/SingletonSocket ${PROFILE_DIRECTORY}/SingletonCookie`;

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Starts Chromium in a browser container through the in-container agent, with `--remote-debugging-pipe`
 * relayed over the agent's one connection, and attaches Playwright to that pipe
 * (`chromium.connectOverCDP(transport)`). No DevTools port exists anywhere, so neither another container nor
 * a process on the host can reach this browser, and a remote engine (`DOCKER_HOST`) works the same. Used when the
 * pool warms a container and when a restarted process adopts one (then on the same profile: cookies and storage
 * Chromium wrote to disk are kept, the open page is not).
 *
 * @throws BrowserError `CAPABILITY_UNAVAILABLE` when Chromium does not come up in time.
 */
export async function connectChromium(options: ConnectChromiumOptions): Promise<ChromiumConnection> {
  const { driver, containerId, signal } = options;
  const timeoutMs = options.timeoutMs ?? 30_000;
  signal?.throwIfAborted();
  let ended: ((reason: string) => void) | undefined;
  const agent = await connectContainerAgent({
    driver,
    containerId,
    signal,
    onClose: () => ended?.("the container agent's connection ended"),
  });
  try {
    // As the agent's own user (root, when it is the container's supervisor): an earlier agent runs as root too.
    const asAgent = { uid: agent.hello.uid, gid: agent.hello.gid };
    if (options.adopted) await agent.client.spawn({ argv: ["sh", "-c", CLEAR_LEFTOVERS], ...asAgent }).wait();
    await options.onAgent?.(agent.client, signal);
    let write: (bytes: Uint8Array) => Promise<void> = async () => {};
    let stop = () => {};
    const transport = createCdpPipeTransport({ write: (bytes) => write(bytes), close: () => stop() });
    ended = (reason) => transport.end(reason);
    const process = agent.client.spawn({
      argv: options.command,
      onPipe: (chunk) => transport.receive(chunk),
      // Chromium logs freely: keep the start and the end of it for diagnosis.
      maxOutputBytes: 64 * 1024,
    });
    write = (bytes) => process.writePipe(bytes);
    stop = () => process.kill("SIGTERM", { forceKillAfterMs: 2_000 });
    const exited = process.wait();
    exited.then(
      () => transport.end("Chromium exited"),
      () => transport.end("Chromium could not start"),
    );
    const connecting = chromium.connectOverCDP(transport, { timeout: timeoutMs });
    let browser: Browser;
    try {
      browser = await abortable(connecting, signal);
    } catch (error) {
      connecting.then((late) => late.close().catch(() => undefined)).catch(() => undefined);
      stop();
      if (signal?.aborted) throw signal.reason;
      const result = await Promise.race([exited.catch(() => undefined), Promise.resolve(undefined)]);
      throw new BrowserError("CAPABILITY_UNAVAILABLE", "Chromium did not start in its container", {
        cause: error,
        details: {
          containerId,
          ...(result
            ? { exitCode: result.exitCode, stderr: Buffer.from(result.stderr).toString().slice(-500) }
            : {}),
        },
      });
    }
    let connected = true;
    browser.on("disconnected", () => {
      connected = false;
    });
    const live = agent;
    let closing: Promise<void> | undefined;
    return {
      containerId,
      version: browser.version(),
      browser,
      isConnected: () => connected && browser.isConnected() && !live.client.closed,
      close() {
        closing ??= (async () => {
          const timer = new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref());
          // Chromium's own shutdown writes its profile (cookies, localStorage) to disk: a hibernated browser
          // wakes with it. A signal would end it before it commits.
          if (browser.isConnected()) {
            const shutdown = browser
              .newBrowserCDPSession()
              .then((session) => session.send("Browser.close"))
              .then(() => exited)
              .catch(() => undefined);
            await Promise.race([shutdown, timer]);
          }
          stop();
          await live.close();
        })();
        return closing;
      },
    };
  } catch (error) {
    await agent.close();
    throw error;
  }
}
