import type { Experimental_SandboxSession } from "ai";
import { streamText } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { expectTypeOf, it } from "vitest";
import type { SandboxFacade } from "./sandbox-facade.ts";
import { toSandboxSession } from "./to-sandbox-session.ts";

declare const facade: SandboxFacade;

it("presents a facade as the AI SDK's SandboxSession", () => {
  const session = toSandboxSession(facade);
  expectTypeOf(session).toEqualTypeOf<Experimental_SandboxSession>();
  // accepted wherever the SDK takes a sandbox
  streamText({ model: new MockLanguageModelV4(), prompt: "hi", experimental_sandbox: session });
});

it("types spawn's handle by whether stdin is kept open", async () => {
  const session = toSandboxSession(facade);
  const withStdin = await session.spawn({ command: "cat", stdin: true });
  expectTypeOf(withStdin.stdin).toEqualTypeOf<WritableStream<Uint8Array>>();
  const without = await session.spawn({ command: "ls" });
  expectTypeOf(without).not.toHaveProperty("stdin");
});
