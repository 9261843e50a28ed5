/** True for Playwright's errors that say the page, its context or the browser is gone. */
export function isClosedError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /Target (page, context or browser )?(has been )?closed|Browser has been closed|browser has disconnected|Connection closed/i.test(
    message,
  );
}

/** True for Playwright's errors that say a selector cannot be parsed. */
export function isSelectorError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /Unexpected token|is not a valid selector|Unknown engine|Failed to parse selector/i.test(message);
}

/** The first line of an error's message, at most 300 characters: what a `BrowserError` message quotes. */
export function shortMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0]?.slice(0, 300) ?? "";
}
