import { type ReactNode, useEffect, useState } from "react";
import { listThreads, type ThreadSummary } from "./chat-api.ts";

/** What {@link ThreadList} accepts. */
export interface ThreadListProps {
  activeId: string;
  /** Bumped to reload the list. */
  version: number;
  onOpen: (threadId: string) => void;
}

/** The caller's threads from `GET /api/threads`, newest first; those waiting for an approval are marked. */
export function ThreadList({ activeId, version, onOpen }: ThreadListProps): ReactNode {
  const [threads, setThreads] = useState<ThreadSummary[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `version` and `activeId` trigger a reload
  useEffect(() => {
    const controller = new AbortController();
    listThreads(controller.signal)
      .then((list) => {
        setThreads(list);
        setError(undefined);
      })
      .catch((cause: unknown) => {
        if (!controller.signal.aborted) setError(cause instanceof Error ? cause.message : String(cause));
      });
    return () => controller.abort();
  }, [version, activeId]);
  return (
    <nav className="threads" aria-label="Threads">
      {error ? (
        <p className="threads-error" role="alert">
          {error}
        </p>
      ) : null}
      {threads?.length === 0 && !error ? <p className="threads-empty">No conversations yet.</p> : null}
      <ul>
        {(threads ?? []).map((thread) => (
          <li key={thread.id}>
            <button
              type="button"
              className={thread.id === activeId ? "thread active" : "thread"}
              data-thread-id={thread.id}
              data-waiting={thread.waiting ? "true" : undefined}
              aria-current={thread.id === activeId ? "page" : undefined}
              onClick={() => onOpen(thread.id)}
            >
              <span className="thread-title">{thread.title || "Untitled"}</span>
              <span className="thread-meta">
                {thread.waiting ? <span className="thread-waiting">Needs approval</span> : null}
                <time dateTime={new Date(thread.updatedAt).toISOString()}>
                  {formatTime(thread.updatedAt)}
                </time>
              </span>
            </button>
          </li>
        ))}
      </ul>
    </nav>
  );
}

/** The time for today's threads, the date for older ones. */
function formatTime(at: number): string {
  const date = new Date(at);
  return date.toDateString() === new Date().toDateString()
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
}
