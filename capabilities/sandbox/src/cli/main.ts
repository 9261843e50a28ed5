#!/usr/bin/env node
// `pai`, the command line of @pai/sandbox: `npx pai doctor`, `npx pai engine setup`, `npx pai images build`.
import type { CliIo } from "./cli-io.ts";
import { doctorCommand } from "./doctor-command.ts";
import { engineCommand } from "./engine-command.ts";
import { imagesCommand } from "./images-command.ts";

const commands = { doctor: doctorCommand, engine: engineCommand, images: imagesCommand };

const usage = [
  "usage: pai <command> [options]",
  "",
  "  doctor                    checks the Docker engine for PAI's sandboxes: each line OK, or the problem and its fix",
  "  engine setup              equips the engine on this machine, as root: crun registered, the pai-disk plugin running",
  "  images build|list|prune   PAI's container images: build them ahead of first use, list them, prune old ones",
  "",
  "`pai <command> --help` tells a command's options.",
];

const controller = new AbortController();
const stoppedBy = new Map<NodeJS.Signals, number>([
  ["SIGINT", 130],
  ["SIGTERM", 143],
]);
for (const name of stoppedBy.keys())
  process.once(name, () =>
    controller.abort(Object.assign(new Error(`stopped by ${name}`), { signal: name })),
  );

const io: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  signal: controller.signal,
};

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === "--help" || name === "-h" || name === "help") {
    for (const line of usage) io.out(line);
    return 0;
  }
  if (name === undefined || !Object.hasOwn(commands, name)) {
    if (name !== undefined) io.err(`pai: unknown command ${name}`);
    for (const line of usage) io.err(line);
    return 2;
  }
  return commands[name as keyof typeof commands](args, io);
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (error) {
  if (!controller.signal.aborted) throw error;
  const reason = controller.signal.reason as Error & { signal?: NodeJS.Signals };
  io.err(`pai: ${reason.message}`);
  process.exitCode = (reason.signal && stoppedBy.get(reason.signal)) ?? 130;
}
