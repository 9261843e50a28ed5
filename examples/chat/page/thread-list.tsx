import { type ReactNode, useEffect, useRef, useState } from "react";
import { deleteThread, listThreads, renameThread, type ThreadSummary } from "./chat-api.ts";
import { LineIcon, PencilIcon } from "./line-icon.tsx";

/** What {@link ThreadList} accepts. */
export interface ThreadListProps {
  activeId: string;
  /** Bumped to reload the list. */
  version: number;
  onOpen: (threadId: string) => void;
  /** A thread was deleted (the app opens a new one when it was the open thread). */
  onDeleted: (threadId: string) => void;
}

/**
 * The caller's threads from `GET /api/threads`, newest first; those waiting for an approval, stopped, or with an
 * approval denied are marked. Each can be renamed (in place: Enter saves, Escape cancels) and deleted (after a
 * second press that confirms).
 */
export function ThreadList({ activeId, version, onOpen, onDeleted }: ThreadListProps): ReactNode {
  const [threads, setThreads] = useState<ThreadSummary[] | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [reloads, setReloads] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `version`, `activeId` and `reloads` trigger a reload
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
  }, [version, activeId, reloads]);

  const act = (work: Promise<void>) =>
    work.then(
      () => setReloads((value) => value + 1),
      (cause: unknown) => setError(cause instanceof Error ? cause.message : String(cause)),
    );

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
          <ThreadRow
            key={thread.id}
            thread={thread}
            active={thread.id === activeId}
            onOpen={() => onOpen(thread.id)}
            onRename={(title) => act(renameThread(thread.id, title))}
            onDelete={() =>
              act(
                deleteThread(thread.id).then(() => {
                  setThreads((list) => list?.filter((entry) => entry.id !== thread.id));
                  onDeleted(thread.id);
                }),
              )
            }
          />
        ))}
      </ul>
    </nav>
  );
}

interface ThreadRowProps {
  thread: ThreadSummary;
  active: boolean;
  onOpen: () => void;
  onRename: (title: string) => Promise<void>;
  onDelete: () => Promise<void>;
}

/** One thread: open it, rename it, delete it. */
function ThreadRow({ thread, active, onOpen, onRename, onDelete }: ThreadRowProps): ReactNode {
  const [mode, setMode] = useState<"view" | "rename" | "confirm-delete">("view");
  const title = thread.title || "Untitled";
  const renameButton = useRef<HTMLButtonElement>(null);
  const wasRenaming = useRef(false);
  useEffect(() => {
    if (wasRenaming.current && mode === "view") renameButton.current?.focus({ preventScroll: true });
    wasRenaming.current = mode === "rename";
  }, [mode]);

  if (mode === "rename") {
    return (
      <li className="thread-row" data-thread-id={thread.id} data-mode="rename">
        <form
          className="thread-rename"
          onSubmit={(event) => {
            event.preventDefault();
            const value = new FormData(event.currentTarget).get("title");
            const next = typeof value === "string" ? value.trim() : "";
            setMode("view");
            if (next && next !== thread.title) void onRename(next);
          }}
        >
          <label className="sr-only" htmlFor={`rename-${thread.id}`}>
            New name for {title}
          </label>
          <input
            id={`rename-${thread.id}`}
            name="title"
            defaultValue={thread.title ?? ""}
            maxLength={200}
            // biome-ignore lint/a11y/noAutofocus: the field appears because Rename was pressed
            autoFocus
            onFocus={(event) => event.currentTarget.select()}
            onKeyDown={(event) => {
              if (event.key === "Escape") {
                event.stopPropagation();
                setMode("view");
              }
            }}
          />
          <button type="submit" className="thread-action">
            Save
          </button>
        </form>
      </li>
    );
  }

  return (
    <li className="thread-row" data-thread-id={thread.id} data-active={active ? "true" : undefined}>
      <button
        type="button"
        className={active ? "thread active" : "thread"}
        data-thread-id={thread.id}
        data-waiting={thread.waiting ? "true" : undefined}
        data-stopped={thread.stopped ? "true" : undefined}
        data-denied={thread.denied ? "true" : undefined}
        aria-current={active ? "page" : undefined}
        onClick={onOpen}
      >
        <span className="thread-title">{title}</span>
        <span className="thread-meta">
          {thread.waiting ? <span className="thread-mark waiting">Needs approval</span> : null}
          {thread.stopped ? <span className="thread-mark stopped">Stopped</span> : null}
          {thread.denied && !thread.stopped ? <span className="thread-mark denied">Denied</span> : null}
          <time dateTime={new Date(thread.updatedAt).toISOString()}>{formatTime(thread.updatedAt)}</time>
        </span>
      </button>
      {mode === "confirm-delete" ? (
        <div className="thread-actions confirming">
          <button
            type="button"
            className="thread-action danger"
            // biome-ignore lint/a11y/noAutofocus: the confirmation appears because Delete was pressed
            autoFocus
            onClick={() => void onDelete()}
          >
            Delete
          </button>
          <button type="button" className="thread-action" onClick={() => setMode("view")}>
            Cancel
          </button>
        </div>
      ) : (
        <div className="thread-actions">
          <button
            ref={renameButton}
            type="button"
            className="thread-action icon"
            aria-label={`Rename ${title}`}
            title="Rename"
            onClick={() => setMode("rename")}
          >
            <PencilIcon />
          </button>
          <button
            type="button"
            className="thread-action icon"
            aria-label={`Delete ${title}`}
            title="Delete"
            onClick={() => setMode("confirm-delete")}
          >
            <TrashIcon />
          </button>
        </div>
      )}
    </li>
  );
}

/** The time for today's threads, the date for older ones. */
function formatTime(at: number): string {
  const date = new Date(at);
  return date.toDateString() === new Date().toDateString()
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
}

function TrashIcon(): ReactNode {
  return <LineIcon d="M4 7h16M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3" />;
}
