const textEncoder = new TextEncoder();

/** `data` as bytes: text in UTF-8, bytes as they are. */
export function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? textEncoder.encode(data) : data;
}
