import type { RunStatus } from "@pai/core";
import { describe, expect, it } from "vitest";
import type { PaiToolPart } from "./is-pai-tool-part.ts";
import { sampleAction } from "./testing/sample-message.ts";
import { toolCallEnd } from "./tool-call-end.ts";
import { toolCallStatus } from "./tool-call-status.ts";

function part(state: string, extra: Record<string, unknown> = {}): PaiToolPart {
  return { type: "tool-deploy", toolCallId: "c1", state, input: {}, ...extra } as unknown as PaiToolPart;
}

describe("toolCallStatus", () => {
  it("walks an approval through Needs approval, Approved, Running and Done", () => {
    const pendingAction = sampleAction();
    const answer = { type: "resume" as const, resume: { approved: true } };
    expect(toolCallStatus(part("input-available"), { pendingAction }).key).toBe("needs-approval");
    expect(
      toolCallStatus(part("input-available"), { pendingAction, sent: { answer, accepted: false } }),
    ).toEqual({
      key: "approved",
      label: "Approved",
    });
    expect(
      toolCallStatus(part("input-available"), { pendingAction, sent: { answer, accepted: true } }).key,
    ).toBe("running");
    expect(
      toolCallStatus(part("input-available"), {
        pendingAction,
        sent: { answer, accepted: true },
        starting: ["sandbox"],
      }),
    ).toEqual({ key: "starting", label: "Starting sandbox" });
    expect(toolCallStatus(part("output-available", { output: 1 }), { runStatus: "completed" }).key).toBe(
      "done",
    );
  });

  it("shows a denial and a cancellation as soon as they are sent", () => {
    const pendingAction = sampleAction();
    expect(
      toolCallStatus(part("input-available"), {
        pendingAction,
        sent: { answer: { type: "deny", reason: "not now" }, accepted: false },
      }),
    ).toEqual({ key: "denied", label: "Denied", reason: "not now" });
    expect(
      toolCallStatus(part("input-available"), {
        pendingAction: sampleAction({ kind: "client" }),
        sent: { answer: { type: "cancel" }, accepted: false },
      }).key,
    ).toBe("stopped");
  });

  it("keeps a call of a running or suspended run going, and ends open calls of an ended run", () => {
    const open = part("input-available");
    expect(toolCallStatus(open, { runStatus: "running" }).key).toBe("running");
    expect(toolCallStatus(open, { runStatus: "suspended" }).key).toBe("running");
    expect(toolCallStatus(open).key).toBe("running");
    expect(toolCallStatus(open, { runStatus: "cancelled" })).toEqual({ key: "stopped", label: "Stopped" });
    expect(toolCallStatus(part("input-streaming"), { runStatus: "completed" }).key).toBe("stopped");
    expect(toolCallStatus(open, { runStatus: "failed" })).toMatchObject({
      key: "failed",
      reason: "The run failed before the call finished.",
    });
  });

  it("reads an errored call of a cancelled run as stopped, and any other error as a failure with its reason", () => {
    const errored = part("output-error", { errorText: "exit 1: boom" });
    expect(toolCallStatus(errored, { runStatus: "cancelled" }).key).toBe("stopped");
    for (const runStatus of ["completed", "suspended", undefined] as Array<RunStatus | undefined>) {
      expect(toolCallStatus(errored, { runStatus })).toEqual({
        key: "failed",
        label: "Failed",
        reason: "exit 1: boom",
      });
    }
    expect(toolCallEnd(part("output-available"), "cancelled")).toBeUndefined();
  });
});
