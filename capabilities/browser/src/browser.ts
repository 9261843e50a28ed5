import { defineCapability } from "@pai/core";
import type { BrowserFacade } from "./browser-facade.ts";

/**
 * The browser capability: a headless Chromium per user (default lifetime `user`), kept across that user's runs
 * and threads until it has been idle for the binding's TTL. Tools list it in `capabilities: { browser }` and get
 * the {@link BrowserFacade} at `ctx.capabilities.browser`; the runtime gets a binding such as `dockerBrowser()`.
 *
 * @example
 * export const readPage = defineTool({
 *   id: "readPage",
 *   description: "Open a web page and return its text.",
 *   inputSchema: z.object({ url: z.string() }),
 *   capabilities: { browser },
 *   execute: async (ctx) => {
 *     await ctx.capabilities.browser.goto(ctx.input.url, { signal: ctx.signal });
 *     return ctx.capabilities.browser.text(undefined, { signal: ctx.signal });
 *   },
 * });
 */
export const browser = defineCapability<"browser", BrowserFacade>({
  name: "browser",
  defaultLifetime: "user",
  description:
    "A headless Chromium (one page) per user: open URLs, read text and links, fill forms, click, take screenshots.",
  members: {
    goto: true,
    text: true,
    html: true,
    click: true,
    fill: true,
    press: true,
    screenshot: true,
    evaluate: true,
    links: true,
    info: true,
  },
});
