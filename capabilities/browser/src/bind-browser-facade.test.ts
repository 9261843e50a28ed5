import { describe, expect, it } from "vitest";
import { bindBrowserFacade } from "./bind-browser-facade.ts";
import type { BrowserCallOptions, BrowserFacade } from "./browser-facade.ts";

/** A facade that records the options each call received. */
function recordingFacade(seen: Array<{ method: string; options: BrowserCallOptions | undefined }>) {
  const record =
    (method: string) =>
    async (...args: unknown[]): Promise<never> => {
      seen.push({ method, options: args.at(-1) as BrowserCallOptions | undefined });
      return undefined as never;
    };
  return {
    goto: record("goto"),
    text: record("text"),
    html: record("html"),
    click: record("click"),
    fill: record("fill"),
    press: record("press"),
    screenshot: record("screenshot"),
    evaluate: record("evaluate"),
    links: record("links"),
    info: record("info"),
  } as BrowserFacade;
}

describe("bindBrowserFacade", () => {
  it("hands every operation the bound signal when the caller passes none", async () => {
    const seen: Array<{ method: string; options: BrowserCallOptions | undefined }> = [];
    const run = new AbortController();
    const bound = bindBrowserFacade(recordingFacade(seen), run.signal);
    await bound.goto("http://127.0.0.1/");
    await bound.text();
    await bound.html();
    await bound.click("#a");
    await bound.fill("#a", "x");
    await bound.press("#a", "Enter");
    await bound.screenshot();
    await bound.evaluate("1");
    await bound.links();
    await bound.info();
    expect(seen.map((call) => call.method)).toEqual([
      "goto",
      "text",
      "html",
      "click",
      "fill",
      "press",
      "screenshot",
      "evaluate",
      "links",
      "info",
    ]);
    for (const call of seen) expect(call.options?.signal).toBe(run.signal);
  });

  it("aborts with either the caller's signal or the bound one, keeping the caller's other options", async () => {
    const seen: Array<{ method: string; options: BrowserCallOptions | undefined }> = [];
    const run = new AbortController();
    const own = new AbortController();
    const bound = bindBrowserFacade(recordingFacade(seen), run.signal);
    await bound.screenshot({ fullPage: true, timeoutMs: 5, signal: own.signal });
    const options = seen[0]?.options as { fullPage?: boolean; timeoutMs?: number; signal: AbortSignal };
    expect(options).toMatchObject({ fullPage: true, timeoutMs: 5 });
    expect(options.signal.aborted).toBe(false);
    own.abort(new Error("mine"));
    expect(options.signal.aborted).toBe(true);

    await bound.html({ signal: new AbortController().signal });
    const second = seen[1]?.options?.signal;
    run.abort(new Error("run"));
    expect(second?.aborted).toBe(true);
    expect(second?.reason).toEqual(new Error("run"));
  });
});
