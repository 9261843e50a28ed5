import type { RewindResult } from "@pai/core";
import type { UIMessage } from "ai";
import { bold, dim } from "./terminal-view.ts";

/** Prints what a rewind did: the messages dropped, and per sandbox the files restored and the programs stopped. */
export function printRewind(result: RewindResult): void {
  console.log(
    `${bold("rewound")} thread ${result.threadId} to ${result.toMessageId ?? "its start"}: ` +
      `${result.droppedMessageIds.length} later messages dropped` +
      (result.cancelledActionIds.length > 0
        ? `, ${result.cancelledActionIds.length} approvals cancelled`
        : ""),
  );
  for (const restored of result.restored) {
    const from = restored.checkpointId
      ? `checkpoint ${restored.checkpointId}`
      : "empty (before the first checkpoint)";
    console.log(
      dim(
        `  ${restored.capability}: restored from ${from} — ${restored.written} files written, ${restored.removed} removed`,
      ),
    );
    for (const process of restored.stoppedProcesses)
      console.log(dim(`  ${restored.capability}: stopped ${process.pid} ${process.command.slice(0, 80)}`));
  }
  if (result.restored.length === 0) console.log(dim("  no checkpoint of a sandbox to restore"));
}

/** Lists a thread's messages with their ids: where `--rewind` can go. */
export function printMessageIds(messages: readonly UIMessage[]): void {
  for (const message of messages) {
    const text = message.parts.map((part) => (part.type === "text" ? part.text : "")).join(" ");
    console.log(dim(`  ${message.id}  ${message.role.padEnd(9)} ${text.replace(/\s+/g, " ").slice(0, 60)}`));
  }
}
