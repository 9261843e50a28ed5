import type { ReactNode } from "react";
import type { ToolCallStatus } from "./tool-call-status.ts";

/** One line on how a call ended without a result: failed or denied (with the reason), or stopped. */
export function ToolEndNote({ status }: { status: ToolCallStatus }): ReactNode {
  switch (status.key) {
    case "failed":
      return <p className="pai-tool-error">{status.reason ? `Failed: ${status.reason}` : "Failed"}</p>;
    case "denied":
      return <p className="pai-tool-error">{status.reason ? `Denied: ${status.reason}` : "Denied"}</p>;
    case "stopped":
      return <p className="pai-tool-note">Stopped before it finished.</p>;
    default:
      return null;
  }
}
