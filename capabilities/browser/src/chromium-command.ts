/** Chromium's user data directory inside the container (on its `/tmp` volume). */
export const PROFILE_DIRECTORY = "/tmp/profile";

/**
 * The Chromium command line the in-container agent starts. DevTools goes over `--remote-debugging-pipe` (fds 3
 * and 4, relayed by the agent over its one connection to the host): nothing listens, in the container or on the
 * host. With `proxyServer` every request, loopback included (`<-loopback>`), goes through the egress proxy.
 */
export function chromiumCommand(options: {
  windowSize?: { width: number; height: number };
  /** The egress proxy, e.g. `http://127.0.0.1:3128`. */
  proxyServer?: string;
  extraArgs?: readonly string[];
}): string[] {
  const { width, height } = options.windowSize ?? { width: 1280, height: 800 };
  return [
    "/usr/bin/chromium",
    "--headless=new",
    // The container is the sandbox: Chromium's own needs user namespaces or SYS_ADMIN, both dropped.
    "--no-sandbox",
    `--user-data-dir=${PROFILE_DIRECTORY}`,
    "--remote-debugging-pipe",
    ...(options.proxyServer
      ? [`--proxy-server=${options.proxyServer}`, "--proxy-bypass-list=<-loopback>"]
      : []),
    // No traffic of Chromium's own (time queries, updates, hints, preconnects): what goes out is the pages'.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-field-trial-config",
    "--disable-extensions",
    "--no-service-autorun",
    "--metrics-recording-only",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,PreconnectToSearch,AimEnabled,MediaRouter,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable",
    // A navigation that leaves a page does not keep it alive in the back-forward cache.
    "--disable-back-forward-cache",
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
