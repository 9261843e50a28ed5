import { parseArgs } from "node:util";
import type { CliIo } from "./cli-io.ts";

type OptionsConfig = NonNullable<Parameters<typeof parseArgs>[0]>["options"] & {};

/**
 * A command's options (`--name value`, `--flag`; no positionals), parsed strictly: an unknown option or a
 * missing value is written to `io.err` with the command's one-line usage, and gives `undefined` (the command then
 * exits 2).
 */
export function parseCliOptions<const OPTIONS extends OptionsConfig>(options: {
  args: readonly string[];
  options: OPTIONS;
  /** `usage: pai … [options]`, the first line of the command's help. */
  usage: string;
  io: CliIo;
}): ReturnType<typeof parseArgs<{ options: OPTIONS; strict: true }>>["values"] | undefined {
  try {
    return parseArgs({ args: [...options.args], options: options.options, strict: true }).values;
  } catch (error) {
    options.io.err(`pai: ${error instanceof Error ? error.message : String(error)}`);
    options.io.err(options.usage);
    return undefined;
  }
}
