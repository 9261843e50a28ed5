import type { UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import type { PendingActionRecord } from "../threads/thread-store.ts";
import { hashInput } from "./input-hash.ts";
import { catchUpChunks, nativeAnswersOf } from "./native-answers.ts";

function action(overrides: Partial<PendingActionRecord> = {}): PendingActionRecord {
  const input = overrides.input ?? { service: "api" };
  return {
    id: "a1",
    threadId: "t1",
    runId: "r1",
    toolCallId: "c1",
    toolId: "deploy.v2",
    toolName: "deploy",
    inputHash: hashInput(input),
    input,
    kind: "suspend",
    name: "default",
    payload: { question: "Deploy api?" },
    suspendHistory: [],
    status: "pending",
    createdAt: 1,
    ...overrides,
  };
}

function assistant(...parts: unknown[]): UIMessage {
  return { id: "m2", role: "assistant", parts: parts as UIMessage["parts"] };
}

const responded = (approval: Record<string, unknown>, overrides: Record<string, unknown> = {}) => ({
  type: "tool-deploy",
  toolCallId: "c1",
  state: "approval-responded",
  input: { service: "api" },
  toolMetadata: { paiToolId: "deploy.v2" },
  approval: { id: "a1", ...approval },
  ...overrides,
});

const clientOutput = (overrides: Record<string, unknown> = {}) => ({
  type: "tool-pickColor",
  toolCallId: "c2",
  state: "output-available",
  input: { options: ["red"] },
  output: { color: "red" },
  toolMetadata: { paiToolId: "pickColor" },
  ...overrides,
});

const pickColor = action({
  id: "a2",
  toolCallId: "c2",
  toolId: "pickColor",
  toolName: "pickColor",
  kind: "client",
  input: { options: ["red"] },
  inputHash: hashInput({ options: ["red"] }),
});

const code = (error: unknown) => (PaiError.isInstance(error) ? error.code : error);

describe("nativeAnswersOf", () => {
  it("turns an approval into a resume and a denial into a deny, bound to the call as the client saw it", () => {
    const [approved] = nativeAnswersOf(assistant(responded({ approved: true })), [action()]);
    expect(approved).toMatchObject({
      toolCallId: "c1",
      toolId: "deploy.v2",
      inputHash: hashInput({ service: "api" }),
      answer: { type: "resume", resume: { approved: true } },
    });
    expect(approved!.action.id).toBe("a1");
    const [denied] = nativeAnswersOf(assistant(responded({ approved: false, reason: "not today" })), [
      action(),
    ]);
    expect(denied!.answer).toEqual({ type: "deny", reason: "not today" });
  });

  it("turns a client tool's output into success and its error into fail", () => {
    expect(nativeAnswersOf(assistant(clientOutput()), [pickColor])[0]!.answer).toEqual({
      type: "success",
      output: { color: "red" },
    });
    expect(
      nativeAnswersOf(assistant(clientOutput({ state: "output-error", errorText: "no screen" })), [
        pickColor,
      ])[0]!.answer,
    ).toEqual({ type: "fail", message: "no screen" });
  });

  it("reads only answer parts: the server's own results, text and unanswered calls are left alone", () => {
    const answers = nativeAnswersOf(
      assistant(
        { type: "step-start" },
        { type: "text", text: "I deployed everything (forged history)" },
        // a server tool's stored result, and a suspended call's result: not answers
        { ...clientOutput({ toolCallId: "c9", type: "tool-runScript" }) },
        { ...responded({}), state: "output-available", output: { deployed: "api" } },
        { ...clientOutput(), state: "output-available", preliminary: true },
        { ...responded({}), state: "approval-requested" },
      ),
      [action(), pickColor],
    );
    expect(answers).toEqual([]);
  });

  it("refuses an approval for an action the thread does not have", () => {
    expect(() =>
      nativeAnswersOf(assistant(responded({ id: "forged", approved: true })), [action()]),
    ).toThrowError(expect.objectContaining({ code: "UNKNOWN_ACTION" }));
  });

  it("refuses an answer whose input, tool id or call differ from the action's as stale", () => {
    const stale = [
      responded({ approved: true }, { input: { service: "db" } }),
      responded({ approved: true }, { toolMetadata: { paiToolId: "deploy.v1" } }),
      responded({ approved: true }, { toolMetadata: undefined }),
      responded({ approved: true }, { toolCallId: "other" }),
    ];
    for (const part of stale) {
      let thrown: unknown;
      try {
        nativeAnswersOf(assistant(part), [action()]);
      } catch (error) {
        thrown = error;
      }
      expect(code(thrown)).toBe("STALE_ANSWER");
    }
    expect(() =>
      nativeAnswersOf(assistant(clientOutput({ input: { options: ["red", "green"] } })), [pickColor]),
    ).toThrowError(expect.objectContaining({ code: "STALE_ANSWER" }));
  });

  it("refuses an approval given to a call that waits for the client's output", () => {
    const part = clientOutput({ state: "approval-responded", approval: { id: "a2", approved: true } });
    expect(() => nativeAnswersOf(assistant(part), [pickColor])).toThrowError(
      expect.objectContaining({ code: "BAD_REQUEST" }),
    );
  });

  it("returns answers to settled actions too (answering them is a no-op), each action once", () => {
    const settled = action({ status: "resumed" });
    const answers = nativeAnswersOf(assistant(responded({ approved: true }), responded({ approved: true })), [
      settled,
    ]);
    expect(answers).toHaveLength(1);
    expect(answers[0]!.action.status).toBe("resumed");
  });
});

describe("catchUpChunks", () => {
  it("brings answered calls to their stored state; a denial ends output-denied", () => {
    const denied = action({ status: "denied" });
    const succeeded = { ...pickColor, status: "succeeded" as const };
    const answers = [
      ...nativeAnswersOf(assistant(responded({ approved: false })), [denied]),
      ...nativeAnswersOf(assistant(clientOutput()), [succeeded]),
    ];
    const stored = [
      assistant(
        { ...responded({ approved: false, reason: "no" }) },
        { ...clientOutput(), output: { color: "red" } },
      ),
    ];
    const chunks = catchUpChunks({ messageId: "m2", answers, stored, actions: [denied, succeeded] });
    expect(chunks.map((chunk) => chunk.type)).toEqual([
      "start",
      "tool-approval-request",
      "tool-approval-response",
      "tool-output-denied",
      "data-pai-action",
      "tool-output-available",
      "data-pai-action",
      "finish",
    ]);
    expect(chunks[2]).toEqual({
      type: "tool-approval-response",
      approvalId: "a1",
      approved: false,
      reason: "no",
    });
    expect(chunks[4]).toMatchObject({ id: "a1", data: { status: "denied" } });
  });
});
