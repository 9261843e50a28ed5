import type { PublicPendingAction } from "@pai/core";
import type { ReactNode } from "react";
import { pendingActionsOf } from "./pending-actions-of.ts";
import type { ToolCardProps } from "./tool-card.ts";
import { ToolCardFrame } from "./tool-card-frame.tsx";
import type { ToolDataItem } from "./tool-data-of.ts";
import { ToolEndNote } from "./tool-end-note.tsx";

/**
 * The card `<Assistant.Tool>` renders when no custom card is registered for a tool: title and status badge;
 * the question of a pending action with the call's input folded under it and Approve/Deny while it waits (once
 * answered, the question stays with how it was answered, unless the badge says that already); otherwise the input,
 * folded; the streamed tool data; then the result (folded when data was streamed) or why the call failed or was
 * denied. The badge alone says the card's state.
 * A wait below the call (a nested tool, a code-mode program's call, a subagent's tool) shows its path
 * (`code › approve`) and that call's input.
 * Class names (`pai-tool`, `pai-tool-header`, `pai-tool-name`, `pai-tool-status`, `pai-tool-approval`,
 * `pai-tool-path`, `pai-tool-question`, `pai-tool-answered`, `pai-tool-input`, `pai-tool-data`, `pai-tool-output`,
 * `pai-tool-error`, `pai-tool-note`)
 * and `data-status` are there to style it.
 */
export function DefaultToolCard(props: ToolCardProps): ReactNode {
  const { message, part, toolId, title, status, data, pendingAction, answer, answering, answerError } = props;
  const action = pendingAction ?? pendingActionsOf(message, part.toolCallId).at(-1);
  const awaiting = status.key === "needs-approval" || status.key === "waiting";
  const input =
    part.input !== undefined ? (
      <details className="pai-tool-input">
        <summary>{action ? "Details" : "Input"}</summary>
        <pre>{formatValue(part.input)}</pre>
      </details>
    ) : null;
  /** A wait below the call: where it is, and the input of the call that waits. */
  const inner =
    action?.inner !== undefined ? (
      <>
        <p className="pai-tool-path">{action.path.join(" › ")}</p>
        <details className="pai-tool-input" data-inner>
          <summary>{`${action.path.at(-1)} input`}</summary>
          <pre>{formatValue(action.inner.input)}</pre>
        </details>
      </>
    ) : null;
  return (
    <ToolCardFrame part={part} toolId={toolId} title={title} status={status}>
      {action ? (
        <div
          className="pai-tool-approval"
          data-action-id={action.actionId}
          data-action-status={action.status}
        >
          {inner}
          <p className="pai-tool-question">{describePayload(action.payload, title)}</p>
          {/* how it was answered, unless the badge says just that (Approved, Denied) */}
          {action.status !== "pending" && ANSWERED[action.status] !== status.label ? (
            <p className="pai-tool-answered" data-answer={action.status}>
              {ANSWERED[action.status]}
            </p>
          ) : null}
          {input}
          {pendingAction && awaiting ? (
            <div className="pai-tool-buttons">
              {pendingAction.kind === "suspend" ? (
                <>
                  <button
                    type="button"
                    className="pai-tool-approve"
                    disabled={answering}
                    onClick={() => void answer({ type: "resume", resume: { approved: true } })}
                  >
                    Approve
                  </button>
                  <button
                    type="button"
                    className="pai-tool-deny"
                    disabled={answering}
                    onClick={() => void answer({ type: "deny", reason: "The user denied it." })}
                  >
                    Deny
                  </button>
                </>
              ) : (
                <button
                  type="button"
                  className="pai-tool-cancel"
                  disabled={answering}
                  onClick={() => void answer({ type: "cancel", reason: "The user cancelled it." })}
                >
                  Cancel
                </button>
              )}
            </div>
          ) : null}
          {answerError ? (
            <p className="pai-tool-error" role="alert">
              {answerError}
            </p>
          ) : null}
        </div>
      ) : (
        input
      )}
      {groupByChannel(data).map(([channel, items]) => (
        <div className="pai-tool-data" data-channel={channel} key={channel}>
          <div className="pai-tool-data-channel">{channel}</div>
          <pre>{joinData(items)}</pre>
        </div>
      ))}
      {part.state === "output-available" ? (
        <details className="pai-tool-output" open={data.length === 0}>
          <summary>Result</summary>
          <pre>{formatValue(part.output)}</pre>
        </details>
      ) : null}
      <ToolEndNote status={status} />
    </ToolCardFrame>
  );
}

/** How a settled action was answered, as the card says it under the question. */
const ANSWERED: Record<Exclude<PublicPendingAction["status"], "pending">, string> = {
  resumed: "Approved",
  succeeded: "Answered",
  denied: "Denied",
  skipped: "Skipped",
  cancelled: "Cancelled",
  failed: "Failed",
};

function groupByChannel(items: ToolDataItem[]): Array<[string, ToolDataItem[]]> {
  const groups = new Map<string, ToolDataItem[]>();
  for (const item of items) {
    const group = groups.get(item.channel);
    if (group) group.push(item);
    else groups.set(item.channel, [item]);
  }
  return [...groups];
}

/** Strings (stdout chunks) are concatenated; anything else is shown one JSON value per line. */
function joinData(items: ToolDataItem[]): string {
  if (items.every((item) => typeof item.value === "string")) return items.map((item) => item.value).join("");
  return items.map((item) => formatValue(item.value)).join("\n");
}

function describePayload(payload: unknown, title: string): string {
  if (typeof payload === "string") return payload;
  if (typeof payload === "object" && payload !== null) {
    const record = payload as Record<string, unknown>;
    for (const key of ["question", "message", "title", "reason"]) {
      if (typeof record[key] === "string") return record[key];
    }
    return `${title} asks: ${formatValue(payload)}`;
  }
  return `${title} is waiting for your answer.`;
}

function formatValue(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
