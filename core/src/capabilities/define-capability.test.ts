import { describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import { defineCapability } from "./define-capability.ts";

interface Box {
  open(): Promise<void>;
  close(): Promise<void>;
}

describe("defineCapability", () => {
  it("lists the members the declaration names, and none for a facade without members", () => {
    const box = defineCapability<"box", Box>({ name: "box", members: { open: true, close: true } });
    expect(box).toEqual({
      kind: "pai.capability",
      name: "box",
      defaultLifetime: "thread",
      description: undefined,
      members: ["open", "close"],
    });
    expect(defineCapability<"thing", object>({ name: "thing" }).members).toEqual([]);
  });

  it("refuses a member named then, which would make the facade pass for a promise", () => {
    let error: unknown;
    try {
      // biome-ignore lint/suspicious/noThenProperty: the member this test refuses
      defineCapability<"odd", { then(): void }>({ name: "odd", members: { then: true } });
    } catch (caught) {
      error = caught;
    }
    expect(PaiError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    expect((error as Error).message).toContain('"then"');
  });
});
