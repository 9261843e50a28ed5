import { type ReactNode, useCallback, useState } from "react";
import { newThreadId } from "./chat-api.ts";
import { ChatView } from "./chat-view.tsx";
import { ThreadList } from "./thread-list.tsx";
import { useHashThread } from "./use-hash-thread.ts";

/** The chat app: thread list on the left, the open thread on the right. */
export function App(): ReactNode {
  const [threadId, openThread] = useHashThread();
  const [version, setVersion] = useState(0);
  const refreshThreads = useCallback(() => setVersion((value) => value + 1), []);
  return (
    <div className="app">
      <aside className="sidebar">
        <div className="brand">
          PAI <span>chat</span>
        </div>
        <button type="button" className="new-chat" onClick={() => openThread(newThreadId())}>
          + New chat
        </button>
        <ThreadList activeId={threadId} version={version} onOpen={openThread} />
      </aside>
      <main className="main">
        <ChatView key={threadId} threadId={threadId} onActivity={refreshThreads} />
      </main>
    </div>
  );
}
