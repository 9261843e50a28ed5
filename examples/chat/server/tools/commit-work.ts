import { defineTool } from "@pai/core";
import { sandbox } from "@pai/sandbox";
import { z } from "zod";
import { createOutputStream } from "./output-stream.ts";

/**
 * Commits files of the sandbox's workspace to a git repository there, after a person approves: the call
 * suspends with the question, and a denial reaches the model as a denied tool call.
 */
export const commitWork = defineTool({
  id: "commitWork",
  description:
    "Commit files of this conversation's sandbox workspace to its git repository. A person must approve it first.",
  inputSchema: z.object({
    paths: z.array(z.string()).min(1).describe("Files to commit, relative to /workspace"),
    message: z.string().describe("The commit message"),
  }),
  outputSchema: z.object({ commit: z.string(), files: z.array(z.string()) }),
  resumeSchema: z.object({ approved: z.boolean() }),
  data: { output: z.string() },
  capabilities: { sandbox },
  execute: async (ctx) => {
    if (ctx.entry.type === "initial") {
      return ctx.suspend({
        question: `Commit ${ctx.input.paths.join(", ")} with the message "${ctx.input.message}"?`,
      });
    }
    const resume = ctx.entry.resume as { approved: boolean };
    if (!resume.approved) return ctx.fail("The person did not approve the commit.");
    const box = ctx.capabilities.sandbox;
    const output = createOutputStream((chunk) => ctx.data.write("output", chunk));
    const quoted = ctx.input.paths.map(shellQuote).join(" ");
    const command = [
      "git init -q 2>/dev/null || true",
      `git add -- ${quoted}`,
      `git -c user.name=PAI -c user.email=pai@localhost commit -q -m ${shellQuote(ctx.input.message)}`,
      "git log --oneline -n 1",
    ].join(" && ");
    output.write(`$ git add ${ctx.input.paths.join(" ")} && git commit\n`);
    const result = await box.runCommand({
      command,
      timeoutMs: 30_000,
      signal: ctx.signal,
      onStdout: output.write,
      onStderr: output.write,
    });
    await output.flush();
    if (result.exitCode !== 0)
      return ctx.fail(`git failed (exit ${result.exitCode}): ${whatGitSaid(result)}`);
    return { commit: result.stdout.trim().split(" ")[0] ?? "", files: ctx.input.paths };
  },
});

/**
 * Why git failed, in its own words: stderr, then stdout (`git commit -q` with nothing to commit says so on
 * stdout), the last 1,000 characters; or how the command ended when it printed nothing.
 */
export function whatGitSaid(result: { stdout: string; stderr: string; terminationReason: string }): string {
  const said = [result.stderr.trim(), result.stdout.trim()].filter((text) => text !== "").join("\n");
  if (said === "") return `no output (${result.terminationReason})`;
  return said.length > 1000 ? `…${said.slice(-1000)}` : said;
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}
