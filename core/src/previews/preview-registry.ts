import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import { PaiError } from "../errors/pai-error.ts";
import type { ExposePortOptions, PortPreview, PreviewAccess } from "./port-preview.ts";
import { previewUrl } from "./preview-origin.ts";
import type { PreviewRequestEvent } from "./preview-request-event.ts";

/** How long a preview stays open unless its options say otherwise (one hour). */
export const DEFAULT_PREVIEW_TTL_MS = 60 * 60 * 1000;
/** The longest a preview may stay open (one day). */
const MAX_PREVIEW_TTL_MS = 24 * 60 * 60 * 1000;
/** Previews one lease may hold at once. */
const MAX_PREVIEWS_PER_LEASE = 16;

/** Whose port a preview shows: the lease it belongs to and the scope its requests run in. */
export interface PreviewOwner {
  /** The capability (e.g. `sandbox`). */
  capability: string;
  /** The lease's id in this process's lease table: the preview ends with it. */
  leaseId: string;
  threadId: string;
  identityKey: string;
}

/** One open preview, as the registry keeps it. */
export interface PreviewEntry extends PreviewOwner {
  id: string;
  /** The secret of `access: "token"` (also set for `identity`, never sent then). */
  token: string;
  port: number;
  access: PreviewAccess;
  expiresAt: number;
  /** Requests served and refused so far. */
  requests: number;
}

/** Options of {@link PreviewRegistry}. */
export interface PreviewRegistryOptions {
  /** Where previews are served: `http://localhost:3000` makes `http://<id>.localhost:3000/`. */
  baseUrl?: string | undefined;
  /** Told of every request to a preview, served or refused. */
  onRequest?: ((event: PreviewRequestEvent) => void) | undefined;
}

/**
 * The previews this process serves: each an unguessable id (the first label of its host) and token, bound to one
 * port of one lease's resource, open until it is closed, its lease ends or it expires. Connections through a
 * preview are tracked so that closing it ends them.
 */
export class PreviewRegistry {
  readonly #entries = new Map<string, PreviewEntry>();
  readonly #connections = new Map<string, Set<Duplex>>();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #onRequest: ((event: PreviewRequestEvent) => void) | undefined;
  #baseUrl: URL | undefined;

  constructor(options: PreviewRegistryOptions = {}) {
    if (options.baseUrl !== undefined) this.#baseUrl = parseBaseUrl(options.baseUrl);
    this.#onRequest = options.onRequest;
  }

  /** Where previews are served, once known (from the options, a preview server, or the handler's first request). */
  get baseUrl(): URL | undefined {
    return this.#baseUrl;
  }

  /** Sets where previews are served, unless the options named it. */
  learnBaseUrl(url: string): void {
    this.#baseUrl ??= parseBaseUrl(url);
  }

  /** Opens a preview of `port` for `owner`. */
  expose(owner: PreviewOwner, port: number, options: ExposePortOptions = {}): PortPreview {
    const baseUrl = this.#baseUrl;
    if (!baseUrl) {
      throw new PaiError(
        "PREVIEWS_UNAVAILABLE",
        "no HTTP handler serves previews yet: mount createPaiHandler (or start createPreviewServer), or set createAgentRuntime({ previews: { baseUrl } })",
      );
    }
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new PaiError("INVALID_ARGUMENT", `a port is a whole number from 1 to 65535, not ${port}`);
    const access = options.access ?? "token";
    if (access !== "token" && access !== "identity")
      throw new PaiError("INVALID_ARGUMENT", `access is "token" or "identity", not ${String(access)}`);
    const ttlMs = options.ttlMs ?? DEFAULT_PREVIEW_TTL_MS;
    if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0 || ttlMs > MAX_PREVIEW_TTL_MS)
      throw new PaiError("INVALID_ARGUMENT", `ttlMs is from 1 to ${MAX_PREVIEW_TTL_MS}, not ${ttlMs}`);
    const held = [...this.#entries.values()].filter((entry) => entry.leaseId === owner.leaseId);
    if (held.length >= MAX_PREVIEWS_PER_LEASE)
      throw new PaiError(
        "INVALID_ARGUMENT",
        `a sandbox has at most ${MAX_PREVIEWS_PER_LEASE} previews open; close one first`,
      );
    const entry: PreviewEntry = {
      ...owner,
      id: randomBytes(16).toString("hex"),
      token: randomBytes(32).toString("base64url"),
      port,
      access,
      expiresAt: Date.now() + ttlMs,
      requests: 0,
    };
    this.#entries.set(entry.id, entry);
    const timer = setTimeout(() => this.close(entry.id), ttlMs);
    timer.unref();
    this.#timers.set(entry.id, timer);
    return this.#toPreview(entry, baseUrl);
  }

  /** The live preview `id`, or `undefined` (unknown, closed or expired). */
  get(id: string): PreviewEntry | undefined {
    const entry = this.#entries.get(id);
    if (entry && entry.expiresAt <= Date.now()) {
      this.close(id);
      return undefined;
    }
    return entry;
  }

  /** The live previews of a thread. */
  listThread(threadId: string): PortPreview[] {
    const baseUrl = this.#baseUrl;
    if (!baseUrl) return [];
    return [...this.#entries.values()]
      .filter((entry) => entry.threadId === threadId && entry.expiresAt > Date.now())
      .map((entry) => this.#toPreview(entry, baseUrl));
  }

  /** Keeps `connection` (a request's or a WebSocket's way to the port) until it closes or the preview does. */
  track(id: string, connection: Duplex): void {
    if (!this.#entries.has(id)) {
      connection.destroy();
      return;
    }
    let open = this.#connections.get(id);
    if (!open) {
      open = new Set();
      this.#connections.set(id, open);
    }
    open.add(connection);
    connection.once("close", () => open.delete(connection));
  }

  /** Reports one request (see {@link PreviewRegistryOptions.onRequest}). */
  report(event: PreviewRequestEvent): void {
    const entry = event.previewId === undefined ? undefined : this.#entries.get(event.previewId);
    if (entry) entry.requests += 1;
    try {
      this.#onRequest?.(event);
    } catch {
      // a listener's failure is not the request's
    }
  }

  /** Closes one preview: later requests get 404, its connections end. */
  close(id: string): void {
    this.#entries.delete(id);
    const timer = this.#timers.get(id);
    if (timer) clearTimeout(timer);
    this.#timers.delete(id);
    const open = this.#connections.get(id);
    this.#connections.delete(id);
    for (const connection of open ?? []) connection.destroy();
  }

  /** Closes every preview of a lease (it ended, or was let go to another process). */
  closeLease(leaseId: string): void {
    for (const entry of [...this.#entries.values()]) {
      if (entry.leaseId === leaseId) this.close(entry.id);
    }
  }

  /** Closes every preview (the runtime closes). */
  closeAll(): void {
    for (const id of [...this.#entries.keys()]) this.close(id);
  }

  #toPreview(entry: PreviewEntry, baseUrl: URL): PortPreview {
    return {
      id: entry.id,
      url: previewUrl(baseUrl, entry.id, entry.access === "token" ? entry.token : undefined),
      port: entry.port,
      access: entry.access,
      expiresAt: new Date(entry.expiresAt).toISOString(),
      close: async () => this.close(entry.id),
    };
  }
}

function parseBaseUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new PaiError("INVALID_ARGUMENT", `previews.baseUrl is not a URL: ${url}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    throw new PaiError("INVALID_ARGUMENT", `previews.baseUrl is http: or https:, not ${parsed.protocol}`);
  // 127.0.0.1 has no subdomains; *.localhost resolves to loopback in browsers
  if (parsed.hostname === "127.0.0.1" || parsed.hostname === "[::1]") parsed.hostname = "localhost";
  parsed.pathname = "/";
  parsed.search = "";
  parsed.hash = "";
  return parsed;
}
