// defineCodeInterpreterTool in a real runtime with a real sandbox: the model's code draws a chart, the UI stream gets
// its printed lines as tool data while it runs, the thread stores every representation, and the model's next step
// gets the chart as an image part.

import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { type CodeInterpreterOutput, defineCodeInterpreterTool, dockerSandbox } from "@pai/sandbox";
import { describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "./docker-helpers.ts";

const chart = [
  "import matplotlib.pyplot as plt",
  "sales = {'Mon': 3, 'Tue': 7, 'Wed': 5}",
  "print('plotting', len(sales), 'days')",
  "plt.bar(list(sales), list(sales.values()))",
  "plt.title('Sales')",
  "sum(sales.values())",
].join("\n");

describe.skipIf(dockerOptedOut)("defineCodeInterpreterTool", () => {
  it("runs the model's code in the sandbox, streams its output, and shows the model the chart it drew", async () => {
    const poolId = uniquePoolId("interpreter-tool");
    const model = createScriptedModel({
      steps: [
        { toolCalls: [{ toolName: "python", input: { code: chart }, toolCallId: "c1" }] },
        { toolCalls: [{ toolName: "python", input: { code: "len(sales)" }, toolCallId: "c2" }] },
        { text: "A bar chart of sales: Tuesday is highest." },
      ],
    });
    const runtime = createAgentRuntime({
      pai: createPai({
        agents: {
          analyst: defineAgent({ tools: { python: defineCodeInterpreterTool({ languages: ["python"] }) } }),
        },
      }),
      store: createMemoryThreadStore(),
      model,
      capabilities: { sandbox: dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 1 } }) },
    });
    try {
      const run = await runtime.run({ agentId: "analyst", message: "plot the sales" });
      const streamed: unknown[] = [];
      for await (const chunk of run.stream) {
        if (chunk.type === "data-output") streamed.push(chunk.data);
      }
      const result = await run.done;
      expect(result.status).toBe("completed");

      // printed lines reached the UI as tool data while the cell ran
      expect(JSON.stringify(streamed)).toContain("plotting 3 days");

      // the thread keeps every representation
      const outputs = result.messages
        .flatMap((message) => message.parts)
        .filter((part) => part.type === "tool-python" && part.state === "output-available")
        .map((part) => (part as { output: CodeInterpreterOutput }).output);
      expect(outputs).toHaveLength(2);
      const [drawn, counted] = outputs;
      expect(drawn?.results.find((entry) => entry.isMainResult)?.text).toBe("15");
      const figure = drawn?.results.find((entry) => entry.png);
      expect(
        Buffer.from(figure?.png ?? "", "base64")
          .subarray(1, 4)
          .toString(),
      ).toBe("PNG");
      expect(counted?.results[0]?.text).toBe("3"); // the second call saw the first one's variables

      // the model's next step got the chart as an image
      const toolMessage = model.doStreamCalls[1]?.prompt.find((message) => message.role === "tool");
      const [toolPart] = (toolMessage?.content ?? []) as Array<{
        output: { type: string; value: Array<Record<string, unknown>> };
      }>;
      const output = toolPart?.output ?? { type: "missing", value: [] };
      expect(output.type).toBe("content");
      expect(String(output.value[0]?.text)).toContain("Out[");
      expect(output.value[1]).toMatchObject({ type: "file", mediaType: "image/png" });
      expect(JSON.stringify(output.value[1])).toContain(figure?.png?.slice(0, 40));
    } finally {
      await runtime.close();
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        await removePoolContainers(poolId);
      }
    }
  }, 120_000);
});
