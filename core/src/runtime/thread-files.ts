import type { UIMessage } from "ai";
import type { ThreadFile, ToolFiles } from "../tools/tool-context.ts";

/** `ctx.files` over the file parts of a thread's messages. Only `data:` URLs are read inline; others are fetched. */
export function createThreadFiles(messages: () => UIMessage[], signal: AbortSignal): ToolFiles {
  const list = (): ThreadFile[] =>
    messages().flatMap((message) =>
      message.parts.flatMap((part, index) =>
        part.type === "file"
          ? [{ id: `${message.id}:${index}`, name: part.filename, mediaType: part.mediaType, url: part.url }]
          : [],
      ),
    );
  return {
    list: async () => list(),
    read: async (fileId) => {
      const file = list().find((candidate) => candidate.id === fileId);
      if (!file) return null;
      const response = await fetch(file.url, { signal });
      if (!response.ok) return null;
      return new Uint8Array(await response.arrayBuffer());
    },
  };
}
