import { type Duplex, PassThrough, Readable } from "node:stream";
import type Docker from "dockerode";
import type {
  ContainerDriver,
  ExecDuplexOptions,
  ExecOptions,
  ExecResult,
  ExecSession,
} from "./container-driver.ts";
import { abortOption, dockerCall } from "./docker-call.ts";
import { envList } from "./docker-create-body.ts";
import { createDockerStreamDemuxer } from "./docker-stream-demuxer.ts";
import { createTailBuffer } from "./tail-buffer.ts";

/** The exec calls of a {@link ContainerDriver}: what {@link createDockerExec} makes. */
export type DockerExec = Pick<ContainerDriver, "exec" | "execDuplex">;

const defaultMaxOutputBytes = 16 * 1024 * 1024;

async function exitCodeOf(exec: Docker.Exec): Promise<{ running: boolean; exitCode: number | null }> {
  const info = await exec.inspect();
  return { running: info.Running, exitCode: info.Running ? null : (info.ExitCode ?? null) };
}

/** The exit code of an exec whose stream ended: its state can lag the end of its stream by a few milliseconds. */
async function settledExitCode(exec: Docker.Exec): Promise<number | null> {
  let state = await exitCodeOf(exec);
  for (let attempt = 0; state.running && attempt < 50; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    state = await exitCodeOf(exec);
  }
  return state.exitCode;
}

/** Creates an exec in container `id` and starts it on a hijacked connection (stdin attached when asked). */
async function startExec(
  docker: Docker,
  id: string,
  execOptions: ExecDuplexOptions & { attachStdin: boolean },
): Promise<{ exec: Docker.Exec; socket: Duplex }> {
  const container = docker.getContainer(id);
  const exec = await container.exec({
    Cmd: [...execOptions.cmd],
    ...(execOptions.user !== undefined ? { User: execOptions.user } : {}),
    ...(execOptions.env !== undefined ? { Env: envList(execOptions.env) } : {}),
    ...(execOptions.workingDir !== undefined ? { WorkingDir: execOptions.workingDir } : {}),
    AttachStdin: execOptions.attachStdin,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    ...abortOption(execOptions.signal),
  });
  const socket = (await exec.start({
    hijack: true,
    stdin: execOptions.attachStdin,
    Tty: false,
    ...abortOption(execOptions.signal),
  })) as Duplex;
  return { exec, socket };
}

/**
 * Feeds an exec's connection to `demuxer` until it ends, writing `stdin` (when given) and then closing it; rejects
 * with the signal's reason (the connection destroyed) or the connection's error.
 */
function pumpExec(
  socket: Duplex,
  demuxer: { write(chunk: Buffer): void },
  stdin: ExecOptions["stdin"],
  signal: AbortSignal | undefined,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let done = false;
    const finish = (error?: unknown) => {
      if (done) return;
      done = true;
      signal?.removeEventListener("abort", onAbort);
      if (error) {
        socket.destroy();
        reject(error);
      } else resolve();
    };
    const onAbort = () => finish(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    socket.on("data", (chunk: Buffer) => demuxer.write(chunk));
    socket.on("end", () => finish());
    socket.on("close", () => finish());
    socket.on("error", (error) => finish(error));
    if (stdin !== undefined) {
      if (stdin instanceof Readable) {
        stdin.on("error", (error) => finish(error));
        stdin.pipe(socket);
      } else {
        socket.end(typeof stdin === "string" ? Buffer.from(stdin) : Buffer.from(stdin as Uint8Array));
      }
    }
  });
}

/** Commands in a container on the Docker engine: one-shot (output collected) and duplex (a live session). */
export function createDockerExec(docker: Docker): DockerExec {
  return {
    exec(id, execOptions: ExecOptions) {
      return dockerCall(
        "exec in container",
        { containerId: id },
        async (): Promise<ExecResult> => {
          const { signal } = execOptions;
          signal?.throwIfAborted();
          const attachStdin = execOptions.stdin !== undefined;
          const { exec, socket } = await startExec(docker, id, { ...execOptions, attachStdin });
          const max = execOptions.maxOutputBytes ?? defaultMaxOutputBytes;
          const stdout = createTailBuffer(max);
          const stderr = createTailBuffer(max);
          const demuxer = createDockerStreamDemuxer((stream, payload) =>
            (stream === 2 ? stderr : stdout).push(payload),
          );
          await pumpExec(socket, demuxer, execOptions.stdin, signal);
          const exitCode = await settledExitCode(exec);
          return {
            exitCode: exitCode ?? -1,
            stdout: stdout.toBuffer().toString("utf8"),
            stderr: stderr.toBuffer().toString("utf8"),
            truncated: stdout.truncated || stderr.truncated,
          };
        },
        execOptions.signal,
      );
    },

    execDuplex(id, execOptions) {
      return dockerCall(
        "exec in container",
        { containerId: id },
        async (): Promise<ExecSession> => {
          execOptions.signal?.throwIfAborted();
          const { exec, socket } = await startExec(docker, id, { ...execOptions, attachStdin: true });
          const stdout = new PassThrough();
          const stderr = new PassThrough();
          const demuxer = createDockerStreamDemuxer((stream, payload) => {
            (stream === 2 ? stderr : stdout).write(payload);
          });
          socket.on("data", (chunk: Buffer) => demuxer.write(chunk));
          const endOutputs = () => {
            stdout.end();
            stderr.end();
          };
          socket.on("end", endOutputs);
          socket.on("close", endOutputs);
          socket.on("error", (error) => {
            stdout.destroy(error);
            stderr.destroy(error);
          });
          const onAbort = () => socket.destroy();
          execOptions.signal?.addEventListener("abort", onAbort, { once: true });
          socket.on("close", () => execOptions.signal?.removeEventListener("abort", onAbort));
          return {
            stream: socket,
            stdin: socket,
            stdout,
            stderr,
            inspect: () => dockerCall("inspect exec", { containerId: id }, () => exitCodeOf(exec)),
            close: () => socket.destroy(),
          };
        },
        execOptions.signal,
      );
    },
  };
}
