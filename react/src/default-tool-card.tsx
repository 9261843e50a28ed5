import type { ReactNode } from "react";
import type { PaiToolPart } from "./is-pai-tool-part.ts";
import { toolCallStatus } from "./tool-call-status.ts";
import type { ToolCardProps } from "./tool-card.ts";
import type { ToolDataItem } from "./tool-data-of.ts";

/**
 * The card `<Assistant.Tool>` renders when no custom card is registered for a tool: name, status badge, input,
 * streamed tool data, approve/deny buttons while an approval is pending, then the result (folded when data was
 * streamed) or the error.
 * Class names (`pai-tool`, `pai-tool-header`, `pai-tool-status`, `pai-tool-data`, `pai-tool-approval`,
 * `pai-tool-output`, `pai-tool-error`) and `data-status` are there to style it.
 */
export function DefaultToolCard(props: ToolCardProps): ReactNode {
  const { part, toolId, toolName, data, pendingAction, answer, answering, answerError } = props;
  const status = toolCallStatus(part, pendingAction);
  const denial = deniedReason(part);
  return (
    <section
      className="pai-tool"
      data-tool-id={toolId}
      data-tool-call-id={part.toolCallId}
      data-status={status.key}
    >
      <header className="pai-tool-header">
        <span className="pai-tool-name">{part.title ?? toolName}</span>
        <span className="pai-tool-status" data-status={status.key}>
          {status.label}
        </span>
      </header>
      {part.input !== undefined ? (
        <details className="pai-tool-input" open={part.state !== "output-available"}>
          <summary>Input</summary>
          <pre>{formatValue(part.input)}</pre>
        </details>
      ) : null}
      {groupByChannel(data).map(([channel, items]) => (
        <div className="pai-tool-data" data-channel={channel} key={channel}>
          <div className="pai-tool-data-channel">{channel}</div>
          <pre>{joinData(items)}</pre>
        </div>
      ))}
      {pendingAction ? (
        <div className="pai-tool-approval" data-action-id={pendingAction.actionId}>
          <p className="pai-tool-question">{describePayload(pendingAction.payload, toolName)}</p>
          {pendingAction.kind === "suspend" ? (
            <div className="pai-tool-buttons">
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
            </div>
          ) : (
            <div className="pai-tool-buttons">
              <button
                type="button"
                className="pai-tool-cancel"
                disabled={answering}
                onClick={() => void answer({ type: "cancel", reason: "The user cancelled it." })}
              >
                Cancel
              </button>
            </div>
          )}
          {answerError ? <p className="pai-tool-error">{answerError}</p> : null}
        </div>
      ) : null}
      {part.state === "output-available" ? (
        <details className="pai-tool-output" open={data.length === 0}>
          <summary>Result</summary>
          <pre>{formatValue(part.output)}</pre>
        </details>
      ) : null}
      {part.state === "output-error" ? <p className="pai-tool-error">{part.errorText}</p> : null}
      {denial !== undefined ? (
        <p className="pai-tool-error">{denial ? `Denied: ${denial}` : "Denied"}</p>
      ) : null}
    </section>
  );
}

/**
 * A denial's reason ("" when none was given). A streamed `tool-output-denied` chunk leaves the part without an
 * `approval` object (the stored thread records `approval-responded` with one), so both shapes are read.
 */
function deniedReason(part: PaiToolPart): string | undefined {
  const approval = part.approval as { approved?: boolean; reason?: string } | undefined;
  if (
    part.state === "output-denied" ||
    (part.state === "approval-responded" && approval?.approved === false)
  ) {
    return approval?.reason ?? "";
  }
  return undefined;
}

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

function describePayload(payload: unknown, toolName: string): string {
  if (typeof payload === "string") return payload;
  if (typeof payload === "object" && payload !== null) {
    const record = payload as Record<string, unknown>;
    for (const key of ["question", "message", "title", "reason"]) {
      if (typeof record[key] === "string") return record[key];
    }
    return `${toolName} asks: ${formatValue(payload)}`;
  }
  return `${toolName} is waiting for your answer.`;
}

function formatValue(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
