import { z } from "zod";
import { PaiError } from "../errors/pai-error.ts";
import type {
  CheckpointRecord,
  LeaseRecord,
  OwnerRecord,
  PendingActionRecord,
  PendingActionStatus,
  RunRecord,
  RunRewind,
  ThreadRecord,
  ToolDataRecord,
} from "./thread-store.ts";

/** `T` with the `unknown`-typed keys `K` optional: a missing key and `undefined` mean the same there. */
type OptionalUnknown<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>;

// Private to the thread stores: both implementations accept and reject exactly the same input.

const id = z.string().min(1);
const timestamp = z.number();
const runStatus = z.enum(["running", "completed", "suspended", "cancelled", "failed", "interrupted"]);
const actionStatus = z.enum(["pending", "resumed", "succeeded", "denied", "skipped", "cancelled", "failed"]);
const lifetime = z.enum(["run", "thread", "user", "process"]);

const thread = z.object({
  id,
  agentId: id,
  ownerKey: z.string(),
  title: z.string().optional(),
  createdAt: timestamp,
  updatedAt: timestamp,
}) satisfies z.ZodType<ThreadRecord>;

const runRewind = z.object({
  kind: z.enum(["rewind", "fork"]),
  toMessageId: z.string().nullable(),
  droppedCount: z.number().int().nonnegative(),
  forkedFrom: id.optional(),
  stoppedProcesses: z.array(z.object({ pid: z.number().int(), command: z.string() })),
}) satisfies z.ZodType<RunRewind>;

const run = z.object({
  id,
  threadId: id,
  agentId: id,
  status: runStatus,
  startedAt: timestamp,
  ownerId: id.optional(),
  endedAt: timestamp.optional(),
  error: z.string().optional(),
  rewind: runRewind.optional(),
}) satisfies z.ZodType<RunRecord>;

/**
 * Checks each message's envelope (id, role, parts) without copying it: commits carry whole threads, and a
 * parse that rebuilt every message would cost more than the write itself.
 */
const messageEnvelopes = z.superRefine((messages: unknown[], ctx) => {
  messages.forEach((value, index) => {
    const candidate = value as { id?: unknown; role?: unknown; parts?: unknown } | null;
    const valid =
      typeof candidate === "object" &&
      candidate !== null &&
      typeof candidate.id === "string" &&
      (candidate.role === "system" || candidate.role === "user" || candidate.role === "assistant") &&
      Array.isArray(candidate.parts);
    if (!valid)
      ctx.addIssue({
        code: "custom",
        message: "a message needs a string id, a role and a parts array",
        path: [index],
        input: value,
      });
  });
});

const toolData = z.object({
  threadId: id,
  runId: id,
  toolCallId: id,
  toolId: id,
  channel: z.string(),
  data: z.unknown().optional(),
  createdAt: timestamp,
}) satisfies z.ZodType<OptionalUnknown<Omit<ToolDataRecord, "seq">, "data">>;

const subagentWait = z.object({ agentId: id, threadId: id, actionId: id });

const journalCall = { key: z.string(), toolId: id, inputHash: z.string() };
const journalEntry = z.discriminatedUnion("state", [
  z.object({
    ...journalCall,
    state: z.literal("settled"),
    outcome: z.discriminatedUnion("type", [
      z.object({ type: z.literal("output"), output: z.unknown() }),
      z.object({ type: z.literal("error"), message: z.string(), code: z.string().optional() }),
    ]),
  }),
  z.object({
    ...journalCall,
    state: z.literal("waiting"),
    name: z.string(),
    suspendHistory: z.array(z.unknown()),
    subagent: subagentWait.optional(),
  }),
  z.object({
    ...journalCall,
    state: z.literal("answered"),
    answer: z.unknown(),
    name: z.string(),
    suspendHistory: z.array(z.unknown()),
    subagent: subagentWait.optional(),
  }),
]);

const pendingActionInner = z.object({
  path: z.array(z.string()).min(1),
  key: z.string().min(1),
  toolId: id,
  input: z.unknown().optional(),
});

const pendingAction = z.object({
  id,
  threadId: id,
  runId: id,
  toolCallId: id,
  toolId: id,
  toolName: z.string(),
  inputHash: z.string(),
  input: z.unknown().optional(),
  kind: z.enum(["suspend", "client"]),
  name: z.string().optional(),
  payload: z.unknown().optional(),
  suspendHistory: z.array(z.unknown()),
  status: actionStatus,
  createdAt: timestamp,
  settledAt: timestamp.optional(),
  answer: z.unknown().optional(),
  inner: pendingActionInner.optional(),
  journal: z.array(journalEntry).optional(),
  appliedBy: id.optional(),
  traceParent: z.string().max(64).optional(),
}) satisfies z.ZodType<
  OptionalUnknown<PendingActionRecord, "input" | "payload" | "answer" | "inner" | "journal">
>;

const lease = z.object({
  capability: id,
  lifetime,
  key: z.string(),
  resourceId: z.string(),
  meta: z.record(z.string(), z.unknown()),
  createdAt: timestamp,
  lastUsedAt: timestamp,
  ownerId: id.optional(),
  handoverTo: id.optional(),
}) satisfies z.ZodType<LeaseRecord>;

const owner = z.object({
  ownerId: id,
  host: z.string(),
  pid: z.number().int(),
  startedAt: timestamp,
  heartbeatAt: timestamp,
  bootId: z.string().optional(),
  pidNamespace: z.string().optional(),
  processStartTicks: z.number().int().nonnegative().optional(),
}) satisfies z.ZodType<OwnerRecord>;

/** The checks every thread store applies to its input before touching state. */
export const storeInputSchemas = {
  id,
  timestamp,
  busyTimeoutMs: z.number().int().nonnegative(),
  thread,
  threadTitle: z.string().optional(),
  run,
  runStatus,
  settleRunPatch: z.object({
    status: runStatus,
    endedAt: timestamp.optional(),
    error: z.string().optional(),
  }),
  runPatch: z.object({
    agentId: id.optional(),
    status: runStatus.optional(),
    startedAt: timestamp.optional(),
    endedAt: timestamp.optional(),
    error: z.string().optional(),
  }) satisfies z.ZodType<Partial<Omit<RunRecord, "id" | "threadId">>>,
  runCommit: z
    .object({ thread, messages: z.array(z.unknown()).check(messageEnvelopes), run })
    .refine((commit) => commit.run.threadId === commit.thread.id, {
      message: "run.threadId must equal thread.id",
      path: ["run", "threadId"],
    }),
  threadQuery: z.object({
    ownerKey: z.string(),
    agentId: z.string().optional(),
    limit: z.number().int().nonnegative().optional(),
  }),
  toolData,
  toolDataQuery: z.object({
    threadId: id,
    toolCallId: z.string().optional(),
    channel: z.string().optional(),
  }),
  pendingAction,
  pendingActionQuery: z.object({ threadId: z.string().optional(), status: actionStatus.optional() }),
  actionStatus: actionStatus satisfies z.ZodType<PendingActionStatus>,
  settlePatch: z.object({
    status: actionStatus,
    answer: z.unknown().optional(),
    settledAt: timestamp.optional(),
  }),
  checkpoint: z.object({
    id,
    threadId: id,
    messageId: id,
    capability: z.string().min(1),
    manifestDigest: z.string().regex(/^[0-9a-f]{64}$/),
    files: z.number().int().nonnegative(),
    totalBytes: z.number().int().nonnegative(),
    bytesAdded: z.number().int().nonnegative(),
    createdAt: timestamp,
  }) satisfies z.ZodType<CheckpointRecord>,
  checkpointIds: z.array(id),
  lease,
  leaseQuery: z.object({
    capability: z.string().optional(),
    lifetime: lifetime.optional(),
    key: z.string().optional(),
  }),
  lifetime,
  leaseOwners: z.object({ from: id.optional(), to: id }),
  threadLeaseRequest: z.object({ threadId: id, runId: id, ownerId: id, ttlMs: z.number().int().positive() }),
  ttlMs: z.number().int().positive(),
  runChunks: z.object({ runId: id, seq: z.number().int().nonnegative(), chunks: z.array(z.unknown()) }),
  runChunkQuery: z.object({ afterSeq: z.number().int().optional() }),
  runIds: z.array(id),
  owner,
};

/** Parses `value` with `schema`, throwing `PaiError('INVALID_ARGUMENT')` that names `what` on failure. */
export function parseStoreInput<SCHEMA extends z.ZodType>(
  schema: SCHEMA,
  value: unknown,
  what: string,
): z.output<SCHEMA> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `Invalid ${what} for the thread store: ${z.prettifyError(result.error)}`,
      {
        cause: result.error,
        details: { issues: result.error.issues },
      },
    );
  }
  return result.data;
}

/**
 * Serializes a value for storage. `undefined` becomes `null` (no value); a value JSON cannot hold
 * (a BigInt, a cycle) is an `INVALID_ARGUMENT`.
 */
export function toStoredJson(value: unknown, what: string): string | null {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (cause) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `The ${what} cannot be stored as JSON: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
  return text ?? null;
}

/** Reverses {@link toStoredJson}. */
export function fromStoredJson(text: string | null): unknown {
  return text === null ? undefined : JSON.parse(text);
}

/** A deep copy of `value` as it would come back from storage (JSON semantics: `undefined` keys dropped). */
export function asStored<VALUE>(value: VALUE, what: string): VALUE {
  return fromStoredJson(toStoredJson(value, what)) as VALUE;
}

/** Drops keys whose value is `undefined`, so both stores return records of the same shape. */
export function withoutUndefined<RECORD extends object>(record: RECORD): RECORD {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as RECORD;
}

/**
 * Applies an `updateRun` patch. A key given as `undefined` clears an optional field (`endedAt`, `error`)
 * and leaves a required one as it was.
 */
export function applyRunPatch(
  run: RunRecord,
  patch: Partial<Omit<RunRecord, "id" | "threadId">>,
  given: object,
): RunRecord {
  return withoutUndefined({
    ...run,
    agentId: patch.agentId ?? run.agentId,
    status: patch.status ?? run.status,
    startedAt: patch.startedAt ?? run.startedAt,
    endedAt: "endedAt" in given ? patch.endedAt : run.endedAt,
    error: "error" in given ? patch.error : run.error,
  });
}

/** The error every method throws once the store is closed. */
export function storeClosedError(): PaiError {
  return new PaiError("STORE_CLOSED", "The thread store is closed");
}
