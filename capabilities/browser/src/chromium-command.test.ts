import { describe, expect, it } from "vitest";
import { chromiumCommand } from "./chromium-command.ts";

describe("chromiumCommand", () => {
  it("speaks DevTools over a pipe, listening nowhere, with a writable profile", () => {
    const argv = chromiumCommand({});
    expect(argv[0]).toBe("/usr/bin/chromium");
    expect(argv).toEqual(
      expect.arrayContaining([
        "--headless=new",
        "--no-sandbox",
        "--remote-debugging-pipe",
        "--user-data-dir=/tmp/profile",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        "--window-size=1280,800",
      ]),
    );
    expect(argv.some((arg) => arg.startsWith("--remote-debugging-port"))).toBe(false);
    expect(argv.some((arg) => arg.startsWith("--proxy-server"))).toBe(false);
    expect(argv.at(-1)).toBe("about:blank");
  });

  it("sends everything, loopback included, through the egress proxy when given one", () => {
    const argv = chromiumCommand({ proxyServer: "http://127.0.0.1:3128" });
    expect(argv).toContain("--proxy-server=http://127.0.0.1:3128");
    expect(argv).toContain("--proxy-bypass-list=<-loopback>");
  });

  it("puts extra flags after its own and sizes the window", () => {
    const argv = chromiumCommand({ windowSize: { width: 800, height: 600 }, extraArgs: ["--lang=de"] });
    expect(argv).toContain("--window-size=800,600");
    expect(argv.indexOf("--lang=de")).toBeGreaterThan(argv.indexOf("--no-first-run"));
  });
});
