// examples/telemetry exports its spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT: run against a small OTLP
// receiver on loopback, its run's pai.run span (and the rest of the tree) arrives at POST /v1/traces.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, describe, expect, it } from "vitest";
import { dockerOptedOut, poolContainers, uniquePoolId } from "./docker-helpers.ts";

const example = join(import.meta.dirname, "..", "..", "examples", "telemetry");
const poolId = uniquePoolId("telemetry-example");

interface OtlpSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** The spans of an OTLP/HTTP JSON trace export. */
function spansOf(body: string): OtlpSpan[] {
  const request = JSON.parse(body) as {
    resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
  };
  return request.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans));
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

describe.skipIf(dockerOptedOut)("examples/telemetry", () => {
  afterAll(async () => {
    expect(await poolContainers(poolId)).toEqual([]);
  });

  it("exports the run's spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT", async () => {
    const received: Array<{ path: string | undefined; contentType: string | undefined; body: string }> = [];
    const receiver = createServer(async (request, response) => {
      const body = await bodyOf(request);
      received.push({ path: request.url, contentType: request.headers["content-type"], body });
      response.writeHead(request.method === "POST" && request.url === "/v1/traces" ? 200 : 404, {
        "content-type": "application/json",
      });
      response.end("{}");
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    const { port } = receiver.address() as AddressInfo;
    try {
      const result = await execa(process.execPath, ["main.ts"], {
        cwd: example,
        env: {
          OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
          PAI_TELEMETRY_POOL_ID: poolId,
          OPENAI_API_KEY: "",
          ANTHROPIC_API_KEY: "",
          PAI_MODEL_BASE_URL: "",
        },
        timeout: 60_000,
      });
      expect(result.stdout).toContain(`spans: OTLP/HTTP to http://127.0.0.1:${port}`);
      expect(result.stdout).toMatch(/run \S+: completed/);

      expect(received.length).toBeGreaterThan(0);
      expect(received.every((request) => request.path === "/v1/traces")).toBe(true);
      expect(received[0]!.contentType).toBe("application/json");
      const spans = received.flatMap((request) => spansOf(request.body));
      const runs = spans.filter((span) => span.name === "pai.run");
      expect(runs).toHaveLength(1);
      const status = runs[0]!.attributes.find((attribute) => attribute.key === "pai.run.status");
      expect(status?.value).toEqual({ stringValue: "completed" });
      const names = spans.filter((span) => span.traceId === runs[0]!.traceId).map((span) => span.name);
      expect(names).toEqual(
        expect.arrayContaining([
          "pai.tool",
          "pai.capability.acquire",
          "pai.sandbox.command",
          "pai.sandbox.files",
        ]),
      );
      const command = spans.find((span) => span.name === "pai.sandbox.command")!;
      // The example opted in to command text.
      expect(command.attributes).toContainEqual({
        key: "pai.sandbox.command.text",
        value: { stringValue: "python3 squares.py" },
      });
    } finally {
      await new Promise((resolve) => receiver.close(resolve));
    }
  });
});
