/** Who may open a preview. */
export type PreviewAccess = "token" | "identity";

/** Options of a facade's `exposePort(port, options)`. */
export interface ExposePortOptions {
  /**
   * `"token"` (default): the preview opens with the unguessable token in its `url`, which becomes a cookie scoped to
   * the preview's own origin on the first visit. `"identity"`: only for the identity that owns the thread, as the
   * HTTP handler's `authenticate` sees it (the `url` then carries no token).
   */
  access?: PreviewAccess | undefined;
  /** How long the preview stays open. @default 3600000 (one hour) */
  ttlMs?: number | undefined;
}

/**
 * A port of a resource (a server listening in a sandbox) reachable from a browser at `url`, through the runtime's
 * HTTP handler, on an origin of its own. Requests travel over the resource's own connection (a sandbox keeps no
 * network); the preview ends with its lease, on `close()` and at `expiresAt`.
 */
export interface PortPreview {
  /** The preview's id: the first label of its host. */
  id: string;
  /** Where a browser opens it (with the token for `access: "token"`). */
  url: string;
  /** The port inside the resource. */
  port: number;
  access: PreviewAccess;
  /** When it closes by itself (ISO 8601). */
  expiresAt: string;
  /** Closes it now: later requests get 404, open connections end. */
  close(): Promise<void>;
}

/** What the runtime hands a resource's `bind` so that its facade can expose ports (see `ProvisionedResource.openPort`). */
export interface PreviewExposer {
  /** Opens a preview of `port` for the scope's thread and identity. */
  expose(port: number, options?: ExposePortOptions): Promise<PortPreview>;
}
