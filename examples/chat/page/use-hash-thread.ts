import { useCallback, useEffect, useState } from "react";
import { newThreadId } from "./chat-api.ts";

const PREFIX = "#/threads/";

/** The thread on screen, kept in the URL (`#/threads/<id>`) so a reload opens the same thread. */
export function useHashThread(): [string, (threadId: string) => void] {
  const [threadId, setThreadId] = useState(() => fromHash() ?? replaceHash(newThreadId()));
  useEffect(() => {
    const onChange = () => setThreadId(fromHash() ?? replaceHash(newThreadId()));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  const open = useCallback((id: string) => {
    window.location.hash = `${PREFIX}${encodeURIComponent(id)}`;
  }, []);
  return [threadId, open];
}

function fromHash(): string | undefined {
  const hash = window.location.hash;
  return hash.startsWith(PREFIX) && hash.length > PREFIX.length
    ? decodeURIComponent(hash.slice(PREFIX.length))
    : undefined;
}

function replaceHash(threadId: string): string {
  window.history.replaceState(null, "", `${PREFIX}${encodeURIComponent(threadId)}`);
  return threadId;
}
