/** A string callback fed from byte chunks. */
export interface StreamingDecoder {
  push(chunk: Uint8Array): void;
  /** Hands over what the last chunk left of a multi-byte character. */
  flush(): void;
}

/**
 * Feeds `callback` (a command's `onStdout`/`onStderr`) from byte chunks, keeping multi-byte characters whole across
 * chunks; `undefined` without a callback.
 */
export function streamingDecoder(
  callback: ((chunk: string) => void) | undefined,
): StreamingDecoder | undefined {
  if (!callback) return undefined;
  const decoder = new TextDecoder();
  return {
    push(chunk) {
      const text = decoder.decode(chunk, { stream: true });
      if (text !== "") callback(text);
    },
    flush() {
      const text = decoder.decode();
      if (text !== "") callback(text);
    },
  };
}
