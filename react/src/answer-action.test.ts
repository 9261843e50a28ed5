import { describe, expect, it } from "vitest";
import { answerAction } from "./answer-action.ts";
import { PaiResponseError } from "./pai-response-error.ts";
import { sampleAction } from "./testing/sample-message.ts";

function recordingFetch(response: () => Response) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const fetch = (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return response();
  }) as typeof globalThis.fetch;
  return { calls, fetch };
}

describe("answerAction", () => {
  it("posts the answer bound to the exact call", async () => {
    const { calls, fetch } = recordingFetch(() =>
      Response.json({ status: "accepted", runId: "r2", waiting: 0, action: {} }),
    );
    const result = await answerAction({
      api: "/base/",
      action: sampleAction(),
      answer: { type: "resume", resume: { approved: true } },
      fetch,
    });
    expect(result).toEqual({ status: "accepted", runId: "r2", waiting: 0, stream: undefined });
    expect(calls[0]!.url).toBe("/base/threads/t1/actions/a1");
    expect(JSON.parse(calls[0]!.init.body as string)).toEqual({
      toolCallId: "c1",
      toolId: "deploy.v2",
      inputHash: "h1",
      answer: { type: "resume", resume: { approved: true } },
    });
  });

  it("returns the continuation stream when asked for one", async () => {
    const { calls, fetch } = recordingFetch(
      () =>
        new Response("data: {}\n\n", {
          headers: { "content-type": "text/event-stream", "x-pai-run-id": "r3" },
        }),
    );
    const result = await answerAction({
      action: sampleAction(),
      answer: { type: "deny", reason: "no" },
      stream: true,
      fetch,
    });
    expect((calls[0]!.init.headers as Record<string, string>).accept).toBe("text/event-stream");
    expect(result.status).toBe("accepted");
    expect(result.runId).toBe("r3");
    expect(await new Response(result.stream).text()).toBe("data: {}\n\n");
  });

  it("reports an already settled action as a value", async () => {
    const { fetch } = recordingFetch(() => Response.json({ status: "already-settled", action: {} }));
    const result = await answerAction({ action: sampleAction(), answer: { type: "skip" }, fetch });
    expect(result.status).toBe("already-settled");
  });

  it("rejects with the server's error code", async () => {
    const { fetch } = recordingFetch(() =>
      Response.json({ error: { code: "STALE_ANSWER", message: "does not match" } }, { status: 409 }),
    );
    const error = await answerAction({ action: sampleAction(), answer: { type: "skip" }, fetch }).catch(
      (e: unknown) => e,
    );
    expect(PaiResponseError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "STALE_ANSWER", status: 409, message: "does not match" });
  });
});
