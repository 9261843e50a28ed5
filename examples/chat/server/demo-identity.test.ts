import { describe, expect, it } from "vitest";
import { demoIdentity } from "./demo-identity.ts";

describe("demoIdentity", () => {
  it("is the fixed demo user unless the request names another", () => {
    expect(demoIdentity(new Request("http://x/api/threads"))).toEqual({ userId: "demo" });
    expect(demoIdentity(new Request("http://x", { headers: { "x-pai-user": "ada" } }))).toEqual({
      userId: "ada",
    });
    expect(demoIdentity(new Request("http://x", { headers: { cookie: "a=1; pai_user=grace" } }))).toEqual({
      userId: "grace",
    });
  });
});
