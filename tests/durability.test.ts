import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const fixture = join(import.meta.dirname, "fixtures", "pending-runtime.ts");
let dir: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pai-durable-"));
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the fixture and resolves with the first stdout line starting with `prefix`. */
function runFixture(args: string[], prefix: string): Promise<{ child: ChildProcess; payload: any }> {
  const child = spawn(process.execPath, [fixture, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout!.on("data", (data: Buffer) => {
      out += data.toString();
      const line = out.split("\n").find((candidate) => candidate.startsWith(prefix));
      if (line) resolve({ child, payload: JSON.parse(line.slice(prefix.length + 1)) });
    });
    child.stderr!.on("data", (data: Buffer) => {
      err += data.toString();
    });
    child.on("exit", (code) =>
      reject(new Error(`fixture exited ${code} before "${prefix}": ${out}\n${err}`)),
    );
  });
}

async function kill(child: ChildProcess) {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe("pending actions survive a killed process", () => {
  it("resumes an approval in a new process after SIGKILL", async () => {
    const db = join(dir, "threads.db");
    const first = await runFixture([db, "start", "approval"], "PENDING");
    expect(first.payload.status).toBe("suspended");
    expect(first.payload.actions).toMatchObject([
      { toolName: "approveRefund", payload: { question: "Refund o-42?" } },
    ]);
    await kill(first.child);

    const second = await runFixture(
      [db, "answer", JSON.stringify({ type: "resume", resume: { by: "manager" } })],
      "DONE",
    );
    expect(second.payload).toEqual({
      listed: 1,
      status: "completed",
      text: 'The tool said: [{"type":"json","value":{"refunded":"o-42","by":"manager"}}]',
    });
  });

  it("resumes an approval two calls below a tool in a new process after SIGKILL, running earlier calls once", async () => {
    const db = join(dir, "threads.db");
    const first = await runFixture([db, "start", "nested"], "PENDING");
    expect(first.payload.status).toBe("suspended");
    expect(first.payload.actions).toMatchObject([
      {
        toolName: "refundOrder",
        path: ["refundOrder", "checkRefund", "approveRefund"],
        payload: { question: "Refund o-42?" },
        inner: { toolId: "approveRefund", input: { orderId: "o-42" } },
      },
    ]);
    await kill(first.child);

    const second = await runFixture(
      [db, "answer", JSON.stringify({ type: "resume", resume: { by: "manager" } })],
      "DONE",
    );
    expect(second.payload).toEqual({
      listed: 1,
      status: "completed",
      text: 'The tool said: [{"type":"json","value":{"entry":"L-o-42","refundedBy":"manager"}}]',
    });
    const effects = readFileSync(`${db}.effects`, "utf8").trim().split("\n");
    expect(effects).toEqual([
      `ledger o-42 (pid ${first.child.pid})`,
      `receipt o-42 by manager (pid ${second.child.pid})`,
    ]);
  });

  it("gives the inner caller a denial answered in a new process after SIGKILL", async () => {
    const db = join(dir, "threads.db");
    const first = await runFixture([db, "start", "nested"], "PENDING");
    await kill(first.child);

    const second = await runFixture(
      [db, "answer", JSON.stringify({ type: "deny", reason: "not this one" })],
      "DONE",
    );
    expect(second.payload).toEqual({
      listed: 1,
      status: "completed",
      text: 'The tool said: [{"type":"json","value":{"entry":"L-o-42","refused":"DENIED"}}]',
    });
    expect(readFileSync(`${db}.effects`, "utf8").trim().split("\n")).toEqual([
      `ledger o-42 (pid ${first.child.pid})`,
    ]);
  });

  it("accepts a client tool's output in a new process after SIGKILL", async () => {
    const db = join(dir, "threads.db");
    const first = await runFixture([db, "start", "client"], "PENDING");
    expect(first.payload.actions).toMatchObject([{ toolName: "askLocation", kind: "client" }]);
    await kill(first.child);

    const second = await runFixture(
      [db, "answer", JSON.stringify({ type: "success", output: { city: "Lisbon" } })],
      "DONE",
    );
    expect(second.payload).toEqual({
      listed: 1,
      status: "completed",
      text: 'The tool said: [{"type":"json","value":{"city":"Lisbon"}}]',
    });
  });
});
