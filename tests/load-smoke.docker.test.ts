// The load test (`npm run load`) in small: 3 runtime processes on one Postgres schema and two Docker engines (the
// main one and extra engine 1), a few conversations of approved commands over HTTP, one process killed -9 half-way —
// and still no answer lost, no call executed twice, no container left on either engine.
import { expect, it } from "vitest";
import { runLoadTest } from "../bench/load/load-test.ts";
import { engineSandboxImage, ensureTestEngines } from "./fixtures/test-engines.ts";
import { testPostgresUrl } from "./fixtures/test-postgres.ts";

it("loses no answer, executes no call twice and leaves no container on either engine when a runtime process is killed -9 mid-load", async () => {
  const [extra] = ensureTestEngines(1);
  const engines = [process.env.DOCKER_HOST || "unix:///var/run/docker.sock", `unix://${extra!.socketPath}`];
  const report = await runLoadTest({
    postgres: testPostgresUrl(),
    image: engineSandboxImage(),
    engines,
    processes: 3,
    conversationsPerProcess: 2,
    commands: 2,
    concurrency: 6,
    kill: true,
    deadlineMs: 240_000,
  });

  expect(report.killedOwner).toBeDefined();
  expect(report).toMatchObject({
    conversationsCompleted: 6,
    commandsCompleted: 12,
    answersLost: 0,
    toolCallsExecutedTwice: 0,
    containersLeft: 0,
  });
  // Each process holds two conversations at once, so each places sandboxes on both engines.
  expect(report.engines).toEqual(
    engines.map((engine) => ({ engine, sandboxes: expect.any(Number), containersLeft: 0 })),
  );
  for (const engine of report.engines) expect(engine.sandboxes).toBeGreaterThan(0);
}, 300_000);
