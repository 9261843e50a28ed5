import type { ContainerDriver } from "@pai/pool";
import { type Browser, chromium } from "playwright-core";
import { BrowserError } from "./browser-error.ts";

/** Chromium's user data directory inside the container; `DevToolsActivePort` appears in it once it listens. */
export const PROFILE_DIRECTORY = "/tmp/profile";

/** A live CDP connection to the Chromium of one container. */
export interface ChromiumConnection {
  readonly containerId: string;
  /** `ws://127.0.0.1:<port>/devtools/browser/<id>`: Chromium's DevTools endpoint, on the loopback only. */
  readonly wsEndpoint: string;
  /** Chromium's version, e.g. `156.0.8078.114`. */
  readonly version: string;
  /** The Playwright browser (kept out of the public API; the facade is what tools see). */
  readonly browser: Browser;
  /** False once the connection dropped (Chromium exited or the container went away). */
  isConnected(): boolean;
  /** Disconnects (Chromium keeps running until its container is removed). Idempotent. */
  close(): Promise<void>;
}

/** Options of {@link connectChromium}. */
export interface ConnectChromiumOptions {
  driver: ContainerDriver;
  containerId: string;
  /** Gives up; nothing stays connected. */
  signal?: AbortSignal;
  /** How long to wait for Chromium to listen and for the connection. @default 30000 */
  timeoutMs?: number;
}

/** Polls for `DevToolsActivePort` (port, then path) inside the container in one exec. */
function readActivePortScript(attempts: number): string {
  const file = `${PROFILE_DIRECTORY}/DevToolsActivePort`;
  return [
    "i=0",
    `while [ "$i" -lt ${attempts} ]; do`,
    `  if [ -s ${file} ] && grep -q /devtools/ ${file}; then cat ${file}; exit 0; fi`,
    "  i=$((i + 1)); sleep 0.05",
    "done",
    "exit 3",
  ].join("\n");
}

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
 * Connects to the Chromium a browser container runs as its main process: waits for it to write
 * `DevToolsActivePort` (it listens on `127.0.0.1:<port chosen by the kernel>`, the container sharing the host's
 * network namespace), then attaches Playwright over CDP. Used when the pool warms a container and when a
 * restarted process adopts one.
 *
 * @throws BrowserError `CAPABILITY_UNAVAILABLE` when Chromium does not come up in time.
 */
export async function connectChromium(options: ConnectChromiumOptions): Promise<ChromiumConnection> {
  const { driver, containerId, signal } = options;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const started = Date.now();
  signal?.throwIfAborted();
  const probe = await driver.exec(containerId, {
    cmd: ["sh", "-c", readActivePortScript(Math.max(1, Math.ceil(timeoutMs / 50)))],
    ...(signal ? { signal } : {}),
  });
  const [portLine, pathLine] = probe.stdout.split("\n").map((line) => line.trim());
  const port = Number(portLine);
  if (probe.exitCode !== 0 || !Number.isInteger(port) || port <= 0 || !pathLine?.startsWith("/devtools/")) {
    throw new BrowserError("CAPABILITY_UNAVAILABLE", "Chromium did not start listening in its container", {
      details: { containerId, exitCode: probe.exitCode, stderr: probe.stderr.slice(-500) },
    });
  }
  const wsEndpoint = `ws://127.0.0.1:${port}${pathLine}`;
  const remaining = Math.max(1_000, timeoutMs - (Date.now() - started));
  const connecting = chromium.connectOverCDP(wsEndpoint, { timeout: remaining });
  let browser: Browser;
  try {
    browser = await abortable(connecting, signal);
  } catch (error) {
    // An abandoned connect may still succeed: disconnect it then.
    connecting.then((late) => late.close().catch(() => undefined)).catch(() => undefined);
    if (signal?.aborted) throw signal.reason;
    throw new BrowserError("CAPABILITY_UNAVAILABLE", "could not connect to Chromium over CDP", {
      cause: error,
      details: { containerId, wsEndpoint },
    });
  }
  let connected = true;
  browser.on("disconnected", () => {
    connected = false;
  });
  let closing: Promise<void> | undefined;
  return {
    containerId,
    wsEndpoint,
    version: browser.version(),
    browser,
    isConnected: () => connected && browser.isConnected(),
    close() {
      closing ??= (async () => {
        if (!browser.isConnected()) return;
        const timer = new Promise<void>((resolve) => setTimeout(resolve, 5_000).unref());
        await Promise.race([browser.close().catch(() => undefined), timer]);
      })();
      return closing;
    },
  };
}
