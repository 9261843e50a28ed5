import { PaiError } from "@pai/core";
import { describe, expect, it } from "vitest";
import { egressSocketHostDirectory } from "../host-socket-directory.ts";
import { wantsEgressChannel } from "./egress-channel.ts";

describe("egress channel options", () => {
  it('uses the fast channel unless channel is "tunnel", and refuses anything else with INVALID_ARGUMENT', () => {
    expect(wantsEgressChannel({ allow: [] })).toBe(true);
    expect(wantsEgressChannel({ allow: [], channel: "auto" })).toBe(true);
    expect(wantsEgressChannel({ allow: [], channel: "tunnel" })).toBe(false);
    const bad = () => wantsEgressChannel({ allow: [], channel: "fast" as "auto" });
    expect(bad).toThrow(PaiError);
    expect(() => bad()).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(bad).toThrow(/network.channel is "auto" or "tunnel"/);
  });

  it("keeps the sockets' directory the same for every process of a user", () => {
    const expected = process.getuid?.() === 0 ? "/run/pai-egress" : expect.stringMatching(/pai-egress-\d+$/);
    expect(egressSocketHostDirectory()).toEqual(expected);
    expect(egressSocketHostDirectory()).toBe(egressSocketHostDirectory());
  });
});
