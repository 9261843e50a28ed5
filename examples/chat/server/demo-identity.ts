/** The user id every request gets unless it names another. */
export const DEMO_USER_ID = "demo";

/** The header that picks the demo user. */
export const DEMO_USER_HEADER = "x-pai-user";

/** The cookie that picks the demo user (the page never sets it; set it by hand to try a second user). */
export const DEMO_USER_COOKIE = "pai_user";

/**
 * The chat server's `authenticate`: a fixed demo identity, `{ userId: "demo" }`, unless the request names
 * another user in the `x-pai-user` header or the `pai_user` cookie. There is no password: the server listens
 * on 127.0.0.1 only. A real app parses its session here instead; the identity never comes from the body.
 */
export function demoIdentity(request: Request): { userId: string } {
  const header = request.headers.get(DEMO_USER_HEADER)?.trim();
  if (header) return { userId: header };
  const cookie = cookieValue(request.headers.get("cookie"), DEMO_USER_COOKIE);
  return { userId: cookie || DEMO_USER_ID };
}

function cookieValue(header: string | null, name: string): string | undefined {
  for (const pair of (header ?? "").split(";")) {
    const [key, ...rest] = pair.trim().split("=");
    if (key === name) return decodeURIComponent(rest.join("="));
  }
  return undefined;
}
