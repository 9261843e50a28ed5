import type { ReactNode } from "react";
import type { ToolCallStatus } from "./tool-call-status.ts";

/**
 * Why a call ended without a result, when the status badge cannot say it: a failure's or a denial's reason. The
 * badge already says Failed, Denied or Stopped, so the card says its state once.
 */
export function ToolEndNote({ status }: { status: ToolCallStatus }): ReactNode {
  if ((status.key !== "failed" && status.key !== "denied") || !status.reason) return null;
  return (
    <p className="pai-tool-error" data-reason={status.key}>
      {status.reason}
    </p>
  );
}
