import { describe, expect, it } from "vitest";
import { capabilityStatusOf } from "./capability-status-of.ts";
import { wokenNoteOf } from "./woken-note-of.ts";

const woken = {
  type: "data-pai-capability",
  data: { capability: "sandbox", lifetime: "thread", status: "woken", resourceId: "c1", durationMs: 154 },
};

describe("wokenNoteOf", () => {
  it("tells the user what a wake kept and what it did not, with its wait", () => {
    expect(wokenNoteOf(woken)).toBe(
      "The sandbox had hibernated while idle and was woken (0.2 s): its files are kept, processes started before are gone.",
    );
    expect(wokenNoteOf({ ...woken, data: { ...woken.data, durationMs: undefined } })).toBe(
      "The sandbox had hibernated while idle and was woken: its files are kept, processes started before are gone.",
    );
  });

  it("tells the user why a capability that stopped on its own was started again", () => {
    const restarted = {
      type: "data-pai-capability",
      data: { ...woken.data, status: "restarted", reason: "its container was killed (exit code 137)" },
    };
    expect(wokenNoteOf(restarted)).toBe(
      "The sandbox had stopped (its container was killed (exit code 137)) and was started again (0.2 s): its files are kept, processes started before are gone.",
    );
  });

  it("says nothing for other statuses, other parts and malformed data", () => {
    expect(wokenNoteOf({ ...woken, data: { ...woken.data, status: "provisioning" } })).toBeUndefined();
    expect(wokenNoteOf({ type: "text" })).toBeUndefined();
    expect(wokenNoteOf({ type: "data-pai-capability", data: null })).toBeUndefined();
    expect(capabilityStatusOf({ type: "data-pai-capability", data: { status: "woken" } })).toBe(undefined);
  });
});
