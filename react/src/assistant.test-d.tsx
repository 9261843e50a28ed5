import { defineAgent, defineTool, type InferAgentUIMessage } from "@pai/core";
import type { DynamicToolUIPart } from "ai";
import type { ReactNode } from "react";
import { describe, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { Assistant } from "./assistant.ts";
import { isPaiToolPart, type PaiToolPart } from "./is-pai-tool-part.ts";
import type { ToolCardProps, ToolCardPropsFor } from "./tool-card.ts";

const runCode = defineTool({
  id: "runCode.v1",
  description: "Run code",
  inputSchema: z.object({ code: z.string() }),
  outputSchema: z.object({ exitCode: z.number(), stdout: z.string() }),
  execute: async () => ({ exitCode: 0, stdout: "" }),
});
const approve = defineTool({
  id: "approve",
  description: "Ask a person",
  inputSchema: z.object({ summary: z.string() }),
  outputSchema: z.object({ approved: z.boolean() }),
  execute: async () => ({ approved: true }),
});
const release = defineTool({
  id: "release",
  description: "Release after checks",
  inputSchema: z.object({ version: z.string() }),
  tools: { approve },
  execute: (ctx) => ctx.tools.approve({ summary: ctx.input.version }),
});
const agent = defineAgent({ tools: { runCode, approve, release } });
type ChatMessage = InferAgentUIMessage<typeof agent>;
declare const message: ChatMessage;

function RunCodeCard({ part }: ToolCardPropsFor<ChatMessage, "runCode">) {
  expectTypeOf(part.type).toEqualTypeOf<"tool-runCode">();
  return part.state === "output-available" ? <pre>{part.output.stdout}</pre> : null;
}

describe("@pai/react types", () => {
  it("narrows message parts to the agent's tool parts", () => {
    for (const part of message.parts) {
      if (!isPaiToolPart(part)) continue;
      expectTypeOf(part).toEqualTypeOf<PaiToolPart<ChatMessage>>();
      expectTypeOf(part.type).toEqualTypeOf<
        "tool-runCode" | "tool-approve" | "tool-release" | "dynamic-tool"
      >();
      if (part.type === "tool-runCode" && part.state === "output-available") {
        expectTypeOf(part.input).toEqualTypeOf<{ code: string }>();
        expectTypeOf(part.output).toEqualTypeOf<{ exitCode: number; stdout: string }>();
      }
      if (part.type === "tool-approve" && part.state === "output-available") {
        expectTypeOf(part.output).toEqualTypeOf<{ approved: boolean }>();
      }
    }
  });

  it("takes exactly the seed's snippet", () => {
    const rendered = message.parts.map((part) =>
      isPaiToolPart(part) ? <Assistant.Tool key={part.toolCallId} message={message} part={part} /> : null,
    );
    expectTypeOf(rendered).toExtend<ReactNode[]>();
  });

  it("rejects parts that are not tool calls", () => {
    // @ts-expect-error a text part is not a tool part
    const _text = <Assistant.Tool message={message} part={{ type: "text", text: "hi" }} />;
    const dynamic = {} as DynamicToolUIPart;
    const _dynamic = <Assistant.Tool message={message} part={dynamic} />;
  });

  it("types a card's pending action path from the tool's nested tools", () => {
    type ReleaseAction = NonNullable<ToolCardPropsFor<ChatMessage, "release">["pendingAction"]>;
    expectTypeOf<ReleaseAction["path"]>().toEqualTypeOf<["release"] | ["release", "approve"]>();
    expectTypeOf<
      NonNullable<ToolCardPropsFor<ChatMessage, "runCode">["pendingAction"]>["path"]
    >().toEqualTypeOf<["runCode"]>();
    expectTypeOf<NonNullable<ToolCardProps["pendingAction"]>["path"]>().toEqualTypeOf<string[]>();
  });

  it("types a custom card by registration key", () => {
    const _element = <Assistant.Provider cards={{ "runCode.v1": RunCodeCard }} />;
    // @ts-expect-error not a tool of this agent
    type _Unknown = ToolCardPropsFor<ChatMessage, "deleteEverything">;
  });
});
