import { describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import type { ThreadStore } from "../threads/thread-store.ts";
import { createRunStopPoller } from "./run-stop-poller.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A memory store that counts the poller's reads and the runs each read asked about. */
function countingStore(): { store: ThreadStore; reads: string[][] } {
  const memory = createMemoryThreadStore();
  const reads: string[][] = [];
  const store: ThreadStore = {
    ...memory,
    listRunStopRequests: (runIds) => {
      reads.push([...runIds]);
      return memory.listRunStopRequests(runIds);
    },
  };
  return { store, reads };
}

async function runningRun(store: ThreadStore, id: string): Promise<void> {
  await store.createRun({ id, threadId: "t1", agentId: "a", status: "running", startedAt: Date.now() });
}

async function until(condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await sleep(5);
  }
}

describe("run stop poller", () => {
  it("reads nothing while no run is watched, then reports a stop asked for a watched run once", async () => {
    const { store, reads } = countingStore();
    const stopped: string[] = [];
    const poller = createRunStopPoller({
      store,
      intervalMs: 10,
      onStopRequested: (runId) => stopped.push(runId),
      onError: (error) => expect.fail(String(error)),
    });
    await runningRun(store, "r1");
    await runningRun(store, "r2");
    await sleep(50);
    expect(reads).toEqual([]);

    poller.add("r1");
    poller.add("r2");
    await until(() => reads.length > 0);
    expect(reads[0]).toEqual(["r1", "r2"]);
    expect(await store.requestRunStop("r2")).toBe(true);
    await until(() => stopped.length > 0);
    await sleep(50);
    expect(stopped).toEqual(["r2"]);
    expect(reads.at(-1)).toEqual(["r1"]);

    poller.delete("r1");
    await sleep(20);
    const readsWhenIdle = reads.length;
    await sleep(50);
    expect(reads).toHaveLength(readsWhenIdle);
    await poller.close();
  });

  it("stops reading once closed, and watches nothing added after", async () => {
    const { store, reads } = countingStore();
    const poller = createRunStopPoller({
      store,
      intervalMs: 10,
      onStopRequested: () => expect.fail("nothing was asked to stop"),
      onError: (error) => expect.fail(String(error)),
    });
    poller.add("r1");
    await until(() => reads.length > 0);
    await poller.close();
    const readsAtClose = reads.length;
    poller.add("r2");
    await sleep(50);
    expect(reads).toHaveLength(readsAtClose);
  });

  it("refuses an interval that is not a positive number", () => {
    const { store } = countingStore();
    for (const intervalMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      let error: unknown;
      try {
        createRunStopPoller({ store, intervalMs, onStopRequested: () => {}, onError: () => {} });
      } catch (caught) {
        error = caught;
      }
      expect(PaiError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    }
  });
});
