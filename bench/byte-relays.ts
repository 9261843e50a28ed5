import { execa } from "execa";

const MIB = 1024 * 1024;

/** Starts bench/byte-server.ts in its own process; resolves to its port and a stop function. */
export async function startByteServer(): Promise<{ port: number; stop: () => void }> {
  const child = execa(process.execPath, [new URL("./byte-server.ts", import.meta.url).pathname], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    // settles the first time only: an exit before the port is a failure, stop()'s kill later is not
    child.then(
      () => reject(new Error("the byte server exited")),
      (error: unknown) => reject(error),
    );
  });
  return { port, stop: () => child.kill() };
}

/**
 * Starts a bare relay on the host in front of the byte server: `socat` with a 1 MiB buffer, one process, no
 * container and no policy — what one user-space copy between two loopback TCP connections costs on this machine,
 * the ceiling for any proxy that moves the bytes through a program. Resolves to its port and a stop function.
 */
export async function startBareRelay(target: string): Promise<{ port: number; stop: () => void }> {
  const child = execa(
    "socat",
    ["-d", "-d", "-b", String(MIB), "TCP-LISTEN:0,bind=127.0.0.1,fork", `TCP:${target}`],
    {
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let said = "";
    child.stderr.on("data", (chunk: Buffer) => {
      said += chunk.toString();
      const listening = said.match(/listening on AF=2 127\.0\.0\.1:(\d+)/);
      if (listening) resolve(Number(listening[1]));
    });
    child.then(
      () => reject(new Error(`socat exited: ${said}`)),
      (error: unknown) => reject(error),
    );
  });
  return { port, stop: () => child.kill() };
}
