import { generateText, isStepCount, streamText, tool } from "ai";
import { expect, it } from "vitest";
import { z } from "zod";
import { createScriptedModel } from "./scripted-model.ts";

it("plays text and tool-call steps in order and reports unplayed steps", async () => {
  const model = createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "double", input: { n: 21 } }] },
      (call) => ({ text: `saw ${call.prompt.length} messages` }),
      { text: "never" },
    ],
  });
  const result = await generateText({
    model,
    prompt: "go",
    tools: { double: tool({ inputSchema: z.object({ n: z.number() }), execute: ({ n }) => n * 2 }) },
    stopWhen: isStepCount(2),
  });
  expect(result.steps[0]?.toolResults.map((r) => r.output)).toEqual([42]);
  expect(result.text).toBe("saw 3 messages");
  expect(model.stepsPlayed).toBe(2);
  expect(() => model.assertComplete()).toThrow(/1 of 3 steps were never played/);

  const streamed = streamText({ model, prompt: "again" });
  expect(await streamed.text).toBe("never");
  expect(() => model.assertComplete()).not.toThrow();
});
