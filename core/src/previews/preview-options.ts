import type { PreviewRequestEvent } from "./preview-request-event.ts";

/** How a runtime serves previews of its resources' ports (`createAgentRuntime({ previews })`). */
export interface PreviewOptions {
  /**
   * Where previews are served: `https://preview.example.com` makes `https://<id>.preview.example.com/` (a wildcard
   * DNS name pointing at the app's handler). Unset: the first request the HTTP handler serves on a loopback host
   * sets it (`http://<id>.localhost:<port>/`), or `createPreviewServer` does when it listens.
   */
  baseUrl?: string;
  /** Told of every request to a preview, served or refused. */
  onRequest?: (event: PreviewRequestEvent) => void;
}
