// The chat app for a page test: an in-process chat server (scripted model, a real Docker sandbox pool of its own,
// checkpoints on disk) and Debian's headless Chromium, made before the describe block's tests and closed after them,
// when no container of the pool may be left.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { dockerSandbox } from "@pai/sandbox";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect } from "vitest";
import { selectModel } from "../../examples/chat/select-model.ts";
import { type ChatServer, createChatServer } from "../../examples/chat/server/create-chat-server.ts";
import {
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "../sandbox/docker-helpers.ts";
import { launchChromium } from "./launch-chromium.ts";

/** Where page tests write their screenshots. */
export const e2eOutputDir = join(fileURLToPath(new URL("../..", import.meta.url)), "test-results", "e2e");

/** What {@link useChatPage} gives the tests of its describe block (set once its `beforeAll` ran). */
export interface ChatPage {
  readonly server: ChatServer;
  readonly browser: Browser;
  /** Errors the pages reported; printed after the tests when there are any. */
  readonly pageErrors: string[];
}

/** Makes the chat server and Chromium in `beforeAll` and closes them in `afterAll` of the calling describe block. */
export function useChatPage(options: { name: string; poolMax: number }): ChatPage {
  const poolId = uniquePoolId(options.name);
  let dataDir: string | undefined;
  let server: ChatServer | undefined;
  let browser: Browser | undefined;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    await mkdir(e2eOutputDir, { recursive: true });
    dataDir = await mkdtemp(join(tmpdir(), `pai-${options.name}-`));
    server = await createChatServer({
      dbPath: join(dataDir, "chat.db"),
      model: selectModel({}),
      sandbox: dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: options.poolMax } }),
    });
    browser = await launchChromium();
  }, 300_000);

  afterAll(async () => {
    try {
      if (pageErrors.length > 0) console.error(`page errors:\n${pageErrors.join("\n")}`);
      await browser?.close().catch(() => undefined);
      await server?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  return {
    get server() {
      return server!;
    },
    get browser() {
      return browser!;
    },
    pageErrors,
  };
}
