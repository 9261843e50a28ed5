import { PROFILE_DIRECTORY } from "./connect-chromium.ts";

/** The Chromium command line every container runs as its main process. */
export function chromiumCommand(options: {
  windowSize?: { width: number; height: number };
  extraArgs?: readonly string[];
}): string[] {
  const { width, height } = options.windowSize ?? { width: 1280, height: 800 };
  return [
    "/usr/bin/chromium",
    "--headless=new",
    // The container is the sandbox: Chromium's own needs user namespaces or SYS_ADMIN, both dropped.
    "--no-sandbox",
    `--user-data-dir=${PROFILE_DIRECTORY}`,
    // Loopback only; port 0 lets the kernel pick a free port, which Chromium writes to DevToolsActivePort.
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-breakpad",
    "--disable-default-apps",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-pings",
    "--mute-audio",
    "--hide-scrollbars",
    `--window-size=${width},${height}`,
    ...(options.extraArgs ?? []),
    "about:blank",
  ];
}
