/** One request to a preview, served or refused: the runtime's `previews.onRequest` hears each. */
export interface PreviewRequestEvent {
  /** The preview asked for; absent when the host named none that exists. */
  previewId?: string;
  threadId?: string;
  /** The port inside the resource. */
  port?: number;
  method: string;
  /** The path and query, without the preview's token. */
  path: string;
  /** `upgrade` for a WebSocket (or other upgraded) connection. */
  kind: "http" | "upgrade";
  decision: "allowed" | "refused";
  /** The HTTP status sent (for an upgrade, 101 once connected). */
  status: number;
  /** Why it was refused or failed, in one line. */
  reason?: string;
  /** Bytes from the browser to the port and back. */
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
}
