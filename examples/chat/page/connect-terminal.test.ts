import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type WebSocket as ServerSocket, WebSocketServer } from "ws";
import { connectTerminal, type TerminalStatus, terminalUrl } from "./connect-terminal.ts";

/** A WebSocket server on 127.0.0.1 standing in for the handler's terminal route; resolves each connection. */
async function terminalServer() {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => server.once("listening", resolve));
  const connections: Array<{ socket: ServerSocket; url: string; received: Array<string | Buffer> }> = [];
  server.on("connection", (socket, request) => {
    const received: Array<string | Buffer> = [];
    socket.on("message", (data, isBinary) => {
      received.push(isBinary ? Buffer.from(data as Buffer) : String(data));
    });
    connections.push({ socket, url: request.url ?? "", received });
  });
  return {
    server,
    location: { protocol: "http:", host: `127.0.0.1:${(server.address() as AddressInfo).port}` },
    connections,
  };
}

let current: Awaited<ReturnType<typeof terminalServer>> | undefined;
afterEach(async () => {
  for (const client of current?.server.clients ?? []) client.terminate();
  await new Promise((resolve) => current?.server.close(resolve) ?? resolve(undefined));
  current = undefined;
});

describe("connectTerminal", () => {
  it("names the thread and the size in the address, on ws or wss like the page", () => {
    expect(terminalUrl("t 1", { cols: 80, rows: 24 }, { protocol: "http:", host: "localhost:3000" })).toBe(
      "ws://localhost:3000/api/threads/t%201/terminal?cols=80&rows=24",
    );
    expect(terminalUrl("t1", { cols: 1, rows: 2 }, { protocol: "https:", host: "chat.example" })).toBe(
      "wss://chat.example/api/threads/t1/terminal?cols=1&rows=2",
    );
  });

  it("sends keystrokes as bytes and resizes as JSON, prints output, and reports ready then the exit", async () => {
    current = await terminalServer();
    const statuses: TerminalStatus[] = [];
    const output: number[] = [];
    const terminal = connectTerminal({
      threadId: "thread-1",
      cols: 100,
      rows: 30,
      location: current.location,
      onOutput: (bytes) => output.push(...bytes),
      onStatus: (status) => statuses.push(status),
    });
    await expect.poll(() => current!.connections.length).toBe(1);
    const connection = current.connections[0]!;
    expect(connection.url).toBe("/api/threads/thread-1/terminal?cols=100&rows=30");
    connection.socket.send(JSON.stringify({ type: "ready", pid: 42 }));
    await expect.poll(() => statuses.at(-1)).toEqual({ state: "connected", pid: 42 });

    terminal.write("echo hé\r");
    terminal.resize({ cols: 120, rows: 40 });
    terminal.resize({ cols: 120, rows: 40 }); // the same size again is not sent again
    await expect.poll(() => connection.received.length).toBe(2);
    expect(connection.received[0]).toEqual(Buffer.from("echo hé\r"));
    expect(JSON.parse(String(connection.received[1]))).toEqual({ type: "resize", cols: 120, rows: 40 });

    connection.socket.send(Buffer.from("hé\r\n"));
    await expect.poll(() => Buffer.from(output).toString()).toBe("hé\r\n");

    connection.socket.send(JSON.stringify({ type: "exit", exitCode: 0, signal: null }));
    connection.socket.close(1000);
    await expect.poll(() => statuses.at(-1)).toEqual({ state: "ended", exitCode: 0, signal: null });
    expect(statuses.map((status) => status.state)).toEqual(["connecting", "connected", "ended"]);
  });

  it("fails with the server's error message, or with the close code when the socket just closes", async () => {
    current = await terminalServer();
    const errored: TerminalStatus[] = [];
    connectTerminal({
      threadId: "t",
      cols: 80,
      rows: 24,
      location: current.location,
      onOutput: () => {},
      onStatus: (status) => errored.push(status),
    });
    await expect.poll(() => current!.connections.length).toBe(1);
    current.connections[0]!.socket.send(
      JSON.stringify({ type: "error", code: "THREAD_NOT_FOUND", message: "no such thread" }),
    );
    current.connections[0]!.socket.close(1008);
    await expect.poll(() => errored.at(-1)).toEqual({ state: "failed", message: "no such thread" });

    const dropped: TerminalStatus[] = [];
    connectTerminal({
      threadId: "t",
      cols: 80,
      rows: 24,
      location: current.location,
      onOutput: () => {},
      onStatus: (status) => dropped.push(status),
    });
    await expect.poll(() => current!.connections.length).toBe(2);
    current.connections[1]!.socket.close(1011, "gone");
    await expect
      .poll(() => dropped.at(-1))
      .toEqual({ state: "failed", message: "the connection closed (1011: gone)" });
  });

  it("says it could not connect when the upgrade is refused", async () => {
    current = await terminalServer();
    current.server.options.verifyClient = (_info, done) => done(false, 404, "no such thread");
    const statuses: TerminalStatus[] = [];
    connectTerminal({
      threadId: "missing",
      cols: 80,
      rows: 24,
      location: current.location,
      onOutput: () => {},
      onStatus: (status) => statuses.push(status),
    });
    await expect
      .poll(() => statuses.at(-1))
      .toEqual({ state: "failed", message: "the terminal could not connect (1006)" });
    expect(current.connections).toEqual([]);
  });

  it("closes the socket on close(), and reports nothing more", async () => {
    current = await terminalServer();
    const statuses: TerminalStatus[] = [];
    const terminal = connectTerminal({
      threadId: "t",
      cols: 80,
      rows: 24,
      location: current.location,
      onOutput: () => {},
      onStatus: (status) => statuses.push(status),
    });
    await expect.poll(() => current!.connections.length).toBe(1);
    const closed = new Promise<number>((resolve) => current!.connections[0]!.socket.once("close", resolve));
    terminal.close();
    expect(await closed).toBe(1000);
    expect(statuses).toEqual([{ state: "connecting" }]);
  });
});
