import { ToolCardFrame, type ToolCardPropsFor } from "@pai/react";
import type { ReactNode } from "react";
import type { ChatMessage } from "./chat-message.ts";

/**
 * The chat app's own card for `runScript` (registered by tool id in `<PaiProvider cards>`): the command, the
 * file folded under it, the output as it streams from the sandbox, and how it ended (the badge says its state;
 * the body adds only a failure's reason). Typed from the agent's
 * contract.
 */
export function RunScriptCard({
  part,
  toolId,
  title,
  status,
  data,
}: ToolCardPropsFor<ChatMessage, "runScript">): ReactNode {
  const streamed = data
    .filter((item) => item.channel === "output")
    .map((item) => String(item.value))
    .join("");
  const result = part.state === "output-available" ? part.output : undefined;
  return (
    <ToolCardFrame
      part={part}
      toolId={toolId}
      title={title}
      status={status}
      className="run-script"
      titleExtra={
        part.input?.command ? <code className="run-script-command">{part.input.command}</code> : null
      }
    >
      {part.input?.content ? (
        <details className="pai-tool-input">
          <summary>{part.input.path}</summary>
          <pre>{part.input.content}</pre>
        </details>
      ) : null}
      {streamed ? (
        <div className="pai-tool-data" data-channel="output">
          <pre>{streamed}</pre>
        </div>
      ) : null}
      {result ? (
        <footer className={result.exitCode === 0 ? "run-script-exit ok" : "run-script-exit bad"}>
          exit {result.exitCode}
          {result.terminationReason !== "exit" ? ` (${result.terminationReason})` : ""} ·{" "}
          {(result.durationMs / 1000).toFixed(1)} s in the sandbox
        </footer>
      ) : null}
      {status.key === "failed" && status.reason ? <p className="pai-tool-error">{status.reason}</p> : null}
    </ToolCardFrame>
  );
}
