import { type ToolCallStatus, ToolCardFrame, type ToolCardPropsFor } from "@pai/react";
import { type ReactNode, useEffect, useState } from "react";
import type { ChatMessage } from "./chat-message.ts";
import { ReloadIcon } from "./line-icon.tsx";

/** Where a preview stands, as the card shows it (`data-preview`). */
export type PreviewState = "starting" | "live" | "expired" | "failed" | "stopped";

/** The longest delay `setTimeout` takes (about 24.8 days); a later expiry is not watched. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The chat app's card for `startServer` (registered by tool id in `<PaiProvider cards>`): while the server starts,
 * what runs; once its port answers, the page in an `<iframe>` on the preview's own origin, with its address, a
 * reload button, an Open link (a new tab, with no opener or referrer) and when the preview closes; the reason
 * when it failed.
 */
export function PreviewCard({
  part,
  toolId,
  title,
  status,
}: ToolCardPropsFor<ChatMessage, "startServer">): ReactNode {
  const result = part.state === "output-available" ? part.output : undefined;
  const expired = useExpired(result?.expiresAt);
  const [reloads, setReloads] = useState(0);
  const state = previewState(status, result !== undefined, expired);
  const port = result?.port ?? part.input?.port;
  return (
    <ToolCardFrame
      part={part}
      toolId={toolId}
      title={title}
      status={status}
      className="preview-card"
      titleExtra={
        part.input?.command ? <code className="run-script-command">{part.input.command}</code> : null
      }
    >
      <div className="preview" data-preview={state}>
        {state === "starting" ? (
          <p className="pai-tool-note">Starting the server and waiting for port {port ?? "…"} to answer…</p>
        ) : null}
        {state === "live" && result ? (
          <>
            <div className="preview-bar">
              <span className="preview-address" title={new URL(result.url).origin}>
                {new URL(result.url).host}
              </span>
              <button
                type="button"
                className="preview-reload"
                aria-label="Reload the preview"
                title="Reload"
                onClick={() => setReloads((count) => count + 1)}
              >
                <ReloadIcon />
              </button>
              <a className="preview-open" href={result.url} target="_blank" rel="noopener noreferrer">
                Open
              </a>
            </div>
            <iframe
              key={reloads}
              className="preview-frame"
              src={result.url}
              title={`Preview of port ${result.port}`}
              sandbox="allow-scripts allow-forms allow-same-origin"
              referrerPolicy="no-referrer"
            />
            <footer className="preview-meta">
              port {result.port} · open until <ExpiryTime at={result.expiresAt} />
            </footer>
          </>
        ) : null}
        {state === "expired" && result ? (
          <p className="pai-tool-note">
            The preview of port {result.port} closed at <ExpiryTime at={result.expiresAt} />. Ask for the
            server again to see it.
          </p>
        ) : null}
        {state === "failed" ? (
          <>
            <p className="pai-tool-error">The server did not start.</p>
            {status.reason ? <pre className="preview-reason">{status.reason}</pre> : null}
          </>
        ) : null}
        {state === "stopped" ? <p className="pai-tool-note">The server had not answered yet.</p> : null}
      </div>
    </ToolCardFrame>
  );
}

/** The card's state from the call's status, whether the preview was opened, and whether it has expired. */
export function previewState(status: ToolCallStatus, opened: boolean, expired: boolean): PreviewState {
  if (status.key === "failed" || status.key === "denied") return "failed";
  if (status.key === "stopped") return "stopped";
  if (!opened) return "starting";
  return expired ? "expired" : "live";
}

/** Whether `expiresAt` (ISO 8601) has passed, turning true when it does. */
function useExpired(expiresAt: string | undefined): boolean {
  const at = expiresAt === undefined ? Number.NaN : Date.parse(expiresAt);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const left = at - Date.now();
    if (!(left > 0) || left > MAX_TIMER_MS) return;
    const timer = setTimeout(() => setNow(Date.now()), left);
    return () => clearTimeout(timer);
  }, [at]);
  return at <= now;
}

function ExpiryTime({ at }: { at: string }): ReactNode {
  return (
    <time dateTime={at}>{new Date(at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}</time>
  );
}
