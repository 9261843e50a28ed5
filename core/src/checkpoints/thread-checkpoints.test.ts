import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { defineCapability } from "../capabilities/define-capability.ts";
import { createAgentRuntime } from "../runtime/create-agent-runtime.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import type { CheckpointBlobStore, WorkspaceManifest } from "./checkpoint-blob-store.ts";
import { loadWorkspaceManifest, storeWorkspaceManifest } from "./stored-workspace-manifest.ts";

/**
 * Checkpoints at the end of runs, through the runtime, against a capability whose state is a map of files and
 * whose checkpoints are content-addressed blobs (a sandbox's, on the engine, are tested in tests/sandbox).
 */
interface Box {
  write(path: string, content: string): Promise<void>;
}
const box = defineCapability<"box", Box>({
  name: "box",
  defaultLifetime: "thread",
  members: { write: true },
});

function memoryBlobStore(): CheckpointBlobStore & { blobs: Map<string, Uint8Array> } {
  const blobs = new Map<string, Uint8Array>();
  return {
    blobs,
    async has(digests) {
      return new Set(digests.filter((digest) => blobs.has(digest)));
    },
    async put(bytes) {
      const parts: Uint8Array[] = [];
      if (bytes instanceof Uint8Array) parts.push(bytes);
      else for await (const part of bytes) parts.push(part);
      const all = Buffer.concat(parts);
      const digest = createHash("sha256").update(all).digest("hex");
      blobs.set(digest, all);
      return { digest, bytes: all.length };
    },
    async get(digest) {
      const blob = blobs.get(digest);
      return blob ? Readable.from([blob]) : undefined;
    },
    async collect(keep) {
      const freed = { blobs: 0, bytes: 0 };
      for (const [digest, blob] of blobs) {
        if (keep.has(digest)) continue;
        blobs.delete(digest);
        freed.blobs += 1;
        freed.bytes += blob.length;
      }
      return freed;
    },
  };
}

/** Every box provisioned, by resource id. */
const boxes = new Map<string, Map<string, string>>();
let boxSeq = 0;

/** A binding of boxes: each a map of files, checkpointed file by file (only new blobs are stored). */
function boxBinding(options: { failTake?: () => boolean } = {}): CapabilityBinding<Box> {
  return {
    kind: "pai.capability-binding",
    capability: "box",
    async provision() {
      const files = new Map<string, string>();
      const resourceId = `box-${++boxSeq}`;
      boxes.set(resourceId, files);
      return {
        facade: {
          write: async (path, content) => void files.set(path, content),
          read: async () => Object.fromEntries([...files].sort()),
        },
        resourceId,
        release: async () => {},
        checkpoints: {
          async take({ store }) {
            if (options.failTake?.()) throw new Error("the box could not be read");
            let bytesAdded = 0;
            const entries: WorkspaceManifest["entries"] = [];
            for (const [path, content] of [...files].sort()) {
              const bytes = Buffer.from(content);
              const digest = createHash("sha256").update(bytes).digest("hex");
              if (!(await store.has([digest])).has(digest)) bytesAdded += (await store.put(bytes)).bytes;
              entries.push({ path, type: "file", mode: 0o644, size: bytes.length, digest });
            }
            const manifest = await storeWorkspaceManifest({ store, manifest: { version: 1, entries } });
            return {
              manifestDigest: manifest.manifestDigest,
              files: entries.length,
              totalBytes: entries.reduce((sum, entry) => sum + (entry.type === "file" ? entry.size : 0), 0),
              bytesAdded: bytesAdded + manifest.bytesAdded,
              durationMs: 0,
            };
          },
          async restore(digest, { store }) {
            const text = async (d: string) => {
              const parts: Buffer[] = [];
              for await (const part of (await store.get(d)) ?? []) parts.push(part as Buffer);
              return Buffer.concat(parts).toString();
            };
            const manifest = await loadWorkspaceManifest({ store, manifestDigest: digest });
            const removed = files.size;
            files.clear();
            for (const entry of manifest.entries) {
              if (entry.type === "file") files.set(entry.path, await text(entry.digest));
            }
            return { written: files.size, removed, bytesWritten: 0, durationMs: 0 };
          },
        },
      };
    },
    async close() {},
  };
}

/** A tool that runs until its run is stopped: a run held in progress. */
const hold = defineTool({
  id: "hold",
  description: "waits until the run is stopped",
  inputSchema: z.object({}),
  execute: (ctx) =>
    new Promise<string>((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))),
});

const write = defineTool({
  id: "write",
  description: "writes a file in the box",
  inputSchema: z.object({ path: z.string(), content: z.string() }),
  capabilities: { box },
  execute: async (ctx) => {
    await ctx.capabilities.box.write(ctx.input.path, ctx.input.content);
    return "written";
  },
});

/** The model writes the file the message names (`path=content`), or only answers when the message is `chat`. */
const model = createScriptedModel({
  steps: [],
  fallback: (call) => {
    const last = call.prompt.at(-1);
    if (last?.role !== "user") return { text: "done" };
    const text = last.content.map((part) => (part.type === "text" ? part.text : "")).join("");
    if (text === "chat") return { text: "just talking" };
    if (text === "hold") return { toolCalls: [{ toolName: "hold", input: {} }] };
    const [path = "", content = ""] = text.split("=");
    return { toolCalls: [{ toolName: "write", input: { path, content } }] };
  },
});

/** The files of a thread's box. */
function filesOf(
  runtime: ReturnType<typeof runtimeWith>["runtime"],
  threadId: string,
): Record<string, string> {
  const lease = runtime.leases().find((entry) => entry.key === threadId);
  const files = boxes.get(lease?.resourceId ?? "");
  if (!files) throw new Error(`thread ${threadId} has no box`);
  return Object.fromEntries([...files].sort());
}

function runtimeWith(options: { keep?: number; maxBytesPerThread?: number; failTake?: () => boolean } = {}) {
  const errors: unknown[] = [];
  const blobs = memoryBlobStore();
  const runtime = createAgentRuntime({
    pai: createPai({
      agents: { a: defineAgent({ identity: z.object({ u: z.string() }), tools: { write, hold } }) },
    }),
    store: createMemoryThreadStore(),
    model,
    capabilities: { box: boxBinding({ failTake: options.failTake }) },
    checkpoints: { store: blobs, keep: options.keep, maxBytesPerThread: options.maxBytesPerThread },
    onBackgroundError: (error) => void errors.push(error),
  });
  const send = async (message: string, threadId?: string) =>
    (await runtime.run({ agentId: "a", identity: { u: "x" }, message, ...(threadId ? { threadId } : {}) }))
      .done;
  return { runtime, blobs, errors, send };
}

describe("checkpoints at the end of runs", () => {
  it("records one per run that used the resource, keyed by the thread's last message, storing only what changed", async () => {
    const { runtime, send } = runtimeWith();
    const first = await send("a.txt=one");
    const second = await send(`b.txt=${"x".repeat(1000)}`, first.threadId);
    const talk = await send("chat", first.threadId);
    const third = await send("a.txt=two", first.threadId);
    const checkpoints = await runtime.listCheckpoints(first.threadId);
    expect(checkpoints.map((checkpoint) => checkpoint.messageId)).toEqual([
      first.messages.at(-1)?.id,
      second.messages.at(-1)?.id,
      third.messages.at(-1)?.id,
    ]);
    expect(talk.status).toBe("completed");
    expect(checkpoints.map((checkpoint) => checkpoint.files)).toEqual([1, 2, 2]);
    // the third changed three bytes: it stores them and its manifest, not the 1000-byte file again
    expect(checkpoints[1]!.bytesAdded).toBeGreaterThan(1000);
    expect(checkpoints[2]!.bytesAdded).toBeLessThan(400);
    expect(new Set(checkpoints.map((checkpoint) => checkpoint.manifestDigest)).size).toBe(3);
    await runtime.close();
  });

  it("keeps the newest `keep` and stays within the byte budget", async () => {
    const { runtime, send } = runtimeWith({ keep: 3 });
    const { threadId } = await send("f0=0");
    for (let i = 1; i < 6; i++) await send(`f${i}=${i}`, threadId);
    const kept = await runtime.listCheckpoints(threadId);
    expect(kept.map((checkpoint) => checkpoint.files)).toEqual([4, 5, 6]);
    await runtime.close();

    const budget = runtimeWith({ maxBytesPerThread: 1500 });
    const big = await budget.send(`big=${"y".repeat(1200)}`);
    await budget.send(`big=${"z".repeat(1200)}`, big.threadId);
    const left = await budget.runtime.listCheckpoints(big.threadId);
    // the newest always stays; the older one went over the budget
    expect(left).toHaveLength(1);
    expect(left[0]!.messageId).toBe((await budget.runtime.getThread(big.threadId))?.messages.at(-1)?.id);
    await budget.runtime.close();
  });

  it("reports a checkpoint that failed; the run's result is unchanged", async () => {
    const { runtime, errors, send } = runtimeWith({ failTake: () => true });
    const result = await send("a=1");
    expect(result.status).toBe("completed");
    expect(await runtime.listCheckpoints(result.threadId)).toEqual([]);
    expect(String(errors[0])).toContain("could not be read");
    await runtime.close();
  });

  it("removes a thread's checkpoints with the thread, and refuses bad retention options", async () => {
    const { runtime, send } = runtimeWith();
    const { threadId } = await send("a=1");
    expect(await runtime.listCheckpoints(threadId)).toHaveLength(1);
    await runtime.deleteThread(threadId);
    expect(await runtime.listCheckpoints(threadId)).toEqual([]);
    await runtime.close();
    expect(() => runtimeWith({ keep: 0 })).toThrow(/keep/);
  });
});

describe("collecting the blobs of dropped checkpoints", () => {
  /** The text of every file blob the store holds (manifests left out). */
  const fileBlobs = (blobs: Map<string, Uint8Array>) =>
    [...blobs.values()]
      .map((blob) => Buffer.from(blob).toString())
      .filter((text) => !text.startsWith("{"))
      .sort();

  it("removes what retention, a rewind and a thread's deletion dropped; keeps what a checkpoint or a fork holds", async () => {
    const { runtime, blobs, errors, send } = runtimeWith({ keep: 2 });
    const first = await send("a=one");
    const { threadId } = first;
    await send("a=two", threadId);
    await send("a=three", threadId);
    // retention dropped the first checkpoint: its blob goes at the next pass, the other two stay
    expect(fileBlobs(blobs.blobs)).toEqual(["one", "three", "two"]);
    await runtime.sweep();
    expect(fileBlobs(blobs.blobs)).toEqual(["three", "two"]);

    const kept = await runtime.listCheckpoints(threadId);
    const fork = await runtime.forkThread({
      threadId,
      atMessageId: kept[0]!.messageId,
      identity: { u: "x" },
    });
    await runtime.rewindThread({ threadId, toMessageId: first.messages[0]!.id, identity: { u: "x" } });
    // the rewind dropped both of the thread's checkpoints; the fork's copy of the first still holds "two"
    await runtime.sweep();
    expect(fileBlobs(blobs.blobs)).toEqual(["two"]);
    expect(filesOf(runtime, fork.threadId)).toEqual({ a: "two" });

    await runtime.deleteThread(fork.threadId);
    await runtime.sweep();
    expect(blobs.blobs.size).toBe(0);
    expect(errors).toEqual([]);
    await runtime.close();
  });

  it("passes over a checkpoint whose manifest is gone, reporting it, and still collects", async () => {
    const { runtime, blobs, errors, send } = runtimeWith({ keep: 1 });
    const { threadId } = await send("a=one");
    const [lost] = await runtime.listCheckpoints(threadId);
    await send("a=two", threadId);
    // a record of another thread naming a manifest the store does not have
    await runtime.store.putCheckpoint({
      ...lost!,
      id: "lost",
      threadId: "other",
      manifestDigest: "0".repeat(64),
    });
    await runtime.sweep();
    expect(fileBlobs(blobs.blobs)).toEqual(["two"]);
    expect(errors).toMatchObject([{ code: "NOT_FOUND" }]);
    await runtime.close();
  });
});

describe("rewinding and forking a thread", () => {
  it("rewinds to a message: later messages dropped, the box's files as they were then, later checkpoints gone", async () => {
    const { runtime, send } = runtimeWith();
    const first = await send("a.txt=one");
    const second = await send("b.txt=two", first.threadId);
    await send("a.txt=changed", first.threadId);
    expect(filesOf(runtime, first.threadId)).toEqual({ "a.txt": "changed", "b.txt": "two" });
    const toMessageId = first.messages.at(-1)!.id;
    const result = await runtime.rewindThread({
      threadId: first.threadId,
      toMessageId,
      identity: { u: "x" },
    });
    expect(result.droppedMessageIds).toHaveLength(4);
    expect(result.restored).toMatchObject([{ capability: "box", written: 1, removed: 2 }]);
    expect(filesOf(runtime, first.threadId)).toEqual({ "a.txt": "one" });
    const thread = await runtime.getThread(first.threadId);
    expect(thread?.messages.map((message) => message.id)).toEqual(
      first.messages.map((message) => message.id),
    );
    expect((await runtime.listCheckpoints(first.threadId)).map((c) => c.messageId)).toEqual([toMessageId]);
    // the conversation goes on from there
    const next = await send("c.txt=three", first.threadId);
    expect(next.status).toBe("completed");
    expect(filesOf(runtime, first.threadId)).toEqual({ "a.txt": "one", "c.txt": "three" });
    void second;
    await runtime.close();
  });

  it("rewinds to before the first checkpoint: the box is empty again", async () => {
    const { runtime, send } = runtimeWith();
    const first = await send("a.txt=one");
    const userMessageId = first.messages[0]!.id;
    await runtime.rewindThread({
      threadId: first.threadId,
      toMessageId: userMessageId,
      identity: { u: "x" },
    });
    expect(filesOf(runtime, first.threadId)).toEqual({});
    await runtime.close();
  });

  it("forks at a message: a new thread with the history and files of then; the original untouched", async () => {
    const { runtime, send } = runtimeWith();
    const first = await send("a.txt=one");
    await send("b.txt=two", first.threadId);
    const fork = await runtime.forkThread({
      threadId: first.threadId,
      atMessageId: first.messages.at(-1)!.id,
      identity: { u: "x" },
    });
    expect(fork.threadId).not.toBe(first.threadId);
    expect(filesOf(runtime, fork.threadId)).toEqual({ "a.txt": "one" });
    expect(filesOf(runtime, first.threadId)).toEqual({ "a.txt": "one", "b.txt": "two" });
    await send("c.txt=fork", fork.threadId);
    expect(filesOf(runtime, fork.threadId)).toEqual({ "a.txt": "one", "c.txt": "fork" });
    expect(filesOf(runtime, first.threadId)).toEqual({ "a.txt": "one", "b.txt": "two" });
    expect((await runtime.getThread(fork.threadId))?.messages).toHaveLength(4);
    expect((await runtime.getThread(first.threadId))?.messages).toHaveLength(4);
    await runtime.close();
  });

  it("refuses another identity, an unknown message, and a thread with a run in progress", async () => {
    const { runtime, send } = runtimeWith();
    const first = await send("a.txt=one");
    const toMessageId = first.messages[0]!.id;
    await expect(
      runtime.rewindThread({ threadId: first.threadId, toMessageId, identity: { u: "mallory" } }),
    ).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(
      runtime.forkThread({ threadId: first.threadId, identity: { u: "mallory" } }),
    ).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(
      runtime.rewindThread({ threadId: first.threadId, toMessageId: "nope", identity: { u: "x" } }),
    ).rejects.toMatchObject({ code: "UNKNOWN_MESSAGE" });
    const held = await runtime.run({
      agentId: "a",
      identity: { u: "x" },
      message: "hold",
      threadId: first.threadId,
    });
    await expect(
      runtime.rewindThread({ threadId: first.threadId, toMessageId, identity: { u: "x" } }),
    ).rejects.toMatchObject({ code: "THREAD_BUSY" });
    await runtime.stop({ threadId: first.threadId });
    expect((await held.done).status).toBe("cancelled");
    await runtime.close();
  });
});
