// The load test (`npm run load`) in small: 3 runtime processes on one Postgres schema and the Docker engine, a few
// conversations of approved commands over HTTP, one process killed -9 half-way — and still no answer lost, no call
// executed twice, no container left.
import { expect, it } from "vitest";
import { runLoadTest } from "../bench/load/load-test.ts";
import { testPostgresUrl } from "./fixtures/test-postgres.ts";
import { sandboxImage } from "./sandbox/docker-helpers.ts";

it("loses no answer, executes no call twice and leaves no container when a runtime process is killed -9 mid-load", async () => {
  const report = await runLoadTest({
    postgres: testPostgresUrl(),
    image: sandboxImage,
    engines: [process.env.DOCKER_HOST ?? "unix:///var/run/docker.sock"],
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
}, 300_000);
