/** The query parameter a preview's `url` carries its token in (on the first visit only). */
export const PREVIEW_TOKEN_PARAM = "pai_preview_token";
/** The cookie a preview's token lives in once visited: scoped to that preview's own origin. */
export const PREVIEW_TOKEN_COOKIE = "pai_preview";

/** The URL of preview `id` under `baseUrl` (`http://localhost:3000` → `http://<id>.localhost:3000/`). */
export function previewUrl(baseUrl: URL, id: string, token: string | undefined): string {
  const url = new URL(baseUrl);
  url.hostname = `${id}.${baseUrl.hostname}`;
  if (token !== undefined) url.searchParams.set(PREVIEW_TOKEN_PARAM, token);
  return url.toString();
}

/** What a request's `Host` names: a preview (by id, which may not exist), or not a preview at all. */
export type PreviewHost = { preview: true; id: string } | { preview: false };

/**
 * Reads `host` (a `Host` header) against `baseUrl`: a preview is one label (its id) directly under the base host,
 * on the base port. Any other host is not a preview's — a request the app's routes answer or refuse.
 */
export function parsePreviewHost(host: string | null | undefined, baseUrl: URL | undefined): PreviewHost {
  if (!host || !baseUrl) return { preview: false };
  let parsed: URL;
  try {
    parsed = new URL(`${baseUrl.protocol}//${host}`);
  } catch {
    return { preview: false };
  }
  if (parsed.port !== baseUrl.port || parsed.username || parsed.password) return { preview: false };
  const suffix = `.${baseUrl.hostname}`;
  const hostname = parsed.hostname.toLowerCase();
  if (!hostname.endsWith(suffix)) return { preview: false };
  const id = hostname.slice(0, -suffix.length);
  if (id.includes(".")) return { preview: false };
  return { preview: true, id };
}

/** Whether `origin` (an `Origin` header) is a preview's origin under `baseUrl`. */
export function isPreviewOrigin(origin: string | null | undefined, baseUrl: URL | undefined): boolean {
  if (!origin || !baseUrl) return false;
  try {
    return parsePreviewHost(new URL(origin).host, baseUrl).preview;
  } catch {
    return false;
  }
}
