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

  it("reads why the runtime ended a call from the part: Stop is stopped, a dead process stopped with why, a deadline or a failed provision failed", () => {
    const ended = (reason: string, errorText: string) =>
      part("output-error", { errorText, toolMetadata: { paiToolId: "deploy", paiEnd: { reason } } });
    expect(toolCallStatus(ended("cancelled", "The run was stopped before this tool call finished."))).toEqual(
      {
        key: "stopped",
        label: "Stopped",
      },
    );
    expect(toolCallStatus(ended("interrupted", "The process running this tool call stopped."))).toEqual({
      key: "stopped",
      label: "Stopped",
      reason: "The process running this tool call stopped.",
    });
    expect(toolCallStatus(ended("timeout", "The run timed out before this tool call finished."))).toEqual({
      key: "failed",
      label: "Failed",
      reason: "The run timed out before this tool call finished.",
    });
    expect(toolCallEnd(ended("provision-failed", "No sandbox is free (8 of 8 in use)."), "failed")).toEqual({
      key: "failed",
      reason: "No sandbox is free (8 of 8 in use).",
      end: { reason: "provision-failed" },
    });
  });

  it("reads an error the runtime did not end as the call's own failure, whatever the run did after", () => {
    const errored = part("output-error", { errorText: "exit 1: boom" });
    for (const runStatus of ["cancelled", "completed", "suspended", undefined] as Array<
      RunStatus | undefined
    >) {
      expect(toolCallStatus(errored, { runStatus })).toEqual({
        key: "failed",
        label: "Failed",
        reason: "exit 1: boom",
      });
    }
    expect(toolCallEnd(part("output-available"), "cancelled")).toBeUndefined();
  });

  it("follows an action settled while its part still waits: cancelled by a new message, or answered elsewhere", () => {
    const waiting = part("approval-requested", { approval: { id: "a1" } });
    expect(toolCallStatus(waiting, { settledAction: sampleAction({ status: "cancelled" }) })).toEqual({
      key: "stopped",
      label: "Cancelled",
    });
    expect(toolCallStatus(waiting, { settledAction: sampleAction({ status: "resumed" }) }).key).toBe(
      "running",
    );
    expect(
      toolCallStatus(part("approval-responded", { approval: { id: "a1", approved: false, reason: "no" } }), {
        settledAction: sampleAction({ status: "denied" }),
      }),
    ).toEqual({ key: "denied", label: "Denied", reason: "no" });
    // a result that arrived wins over the action's state
    expect(
      toolCallStatus(part("output-available", { output: 1 }), {
        settledAction: sampleAction({ status: "resumed" }),
      }).key,
    ).toBe("done");
  });
});
