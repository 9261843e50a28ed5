import { expectTypeOf, test } from "vitest";
import { defineCapability, type FacadeMembers, type FacadeOf } from "./define-capability.ts";

interface Box {
  open(): Promise<void>;
  close(): Promise<void>;
}

test("a capability names every member of its facade, and only those", () => {
  const box = defineCapability<"box", Box>({ name: "box", members: { open: true, close: true } });
  expectTypeOf<FacadeOf<typeof box>>().toEqualTypeOf<Box>();
  expectTypeOf<FacadeMembers<Box>>().toEqualTypeOf<{ readonly open: true; readonly close: true }>();
  // @ts-expect-error a facade with members needs `members`
  defineCapability<"box", Box>({ name: "box" });
  // @ts-expect-error `close` is left out
  defineCapability<"box", Box>({ name: "box", members: { open: true } });
  // @ts-expect-error `opne` is not a member of the facade
  defineCapability<"box", Box>({ name: "box", members: { opne: true, open: true, close: true } });
});

test("a facade without members may leave `members` out", () => {
  defineCapability<"thing", object>({ name: "thing", defaultLifetime: "thread" });
  defineCapability({ name: "untyped" });
});
