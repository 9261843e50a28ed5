import { type ReactNode, useCallback, useEffect, useRef, useState } from "react";
import { newThreadId } from "./chat-api.ts";
import { ChatView } from "./chat-view.tsx";
import { LineIcon } from "./line-icon.tsx";
import { ThreadList } from "./thread-list.tsx";
import { useHashThread } from "./use-hash-thread.ts";
import { useMediaQuery } from "./use-media-query.ts";

/** Below this width the thread list is a drawer over the conversation. */
const NARROW = "(max-width: 767.98px)";

/** The chat app: the thread list (a sidebar, or a drawer on narrow screens) and the open thread. */
export function App(): ReactNode {
  const [threadId, openThread] = useHashThread();
  const [version, setVersion] = useState(0);
  const refreshThreads = useCallback(() => setVersion((value) => value + 1), []);
  const narrow = useMediaQuery(NARROW);
  const [drawerOpen, setDrawerOpen] = useState(false);
  const drawer = narrow && drawerOpen;
  const menuButton = useRef<HTMLButtonElement>(null);
  const sidebar = useRef<HTMLElement>(null);

  const closeDrawer = useCallback(() => setDrawerOpen(false), []);
  const open = useCallback(
    (id: string) => {
      openThread(id);
      setDrawerOpen(false);
    },
    [openThread],
  );

  // a closed drawer gives focus back to the button that opened it (once the top bar is no longer inert)
  const wasOpen = useRef(false);
  useEffect(() => {
    if (wasOpen.current && !drawer) menuButton.current?.focus();
    wasOpen.current = drawer;
  }, [drawer]);

  useEffect(() => {
    if (!drawer) return;
    sidebar.current?.querySelector<HTMLElement>("button")?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === "Escape") closeDrawer();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [drawer, closeDrawer]);

  return (
    <div className="app" data-layout={narrow ? "narrow" : "wide"} data-drawer={drawer ? "open" : "closed"}>
      {narrow ? (
        <header className="topbar" inert={drawer}>
          <button
            ref={menuButton}
            type="button"
            className="icon-button"
            aria-label="Conversations"
            aria-expanded={drawer}
            aria-controls="sidebar"
            onClick={() => setDrawerOpen(true)}
          >
            <MenuIcon />
          </button>
          <div className="brand">
            PAI <span>chat</span>
          </div>
          <button
            type="button"
            className="icon-button"
            aria-label="New chat"
            onClick={() => open(newThreadId())}
          >
            <PlusIcon />
          </button>
        </header>
      ) : null}
      <aside
        id="sidebar"
        ref={sidebar}
        className="sidebar"
        aria-label="Conversations"
        inert={narrow && !drawer}
        {...(drawer ? { role: "dialog", "aria-modal": true } : {})}
      >
        <div className="sidebar-head">
          <div className="brand">
            PAI <span>chat</span>
          </div>
          {drawer ? (
            <button type="button" className="icon-button" aria-label="Close" onClick={closeDrawer}>
              <CloseIcon />
            </button>
          ) : null}
        </div>
        <button type="button" className="new-chat" onClick={() => open(newThreadId())}>
          <PlusIcon /> New chat
        </button>
        <ThreadList
          activeId={threadId}
          version={version}
          onOpen={open}
          onDeleted={(id) => {
            if (id === threadId) openThread(newThreadId());
          }}
        />
      </aside>
      {drawer ? <div className="backdrop" onClick={closeDrawer} aria-hidden="true" /> : null}
      <main className="main" inert={drawer}>
        <ChatView key={threadId} threadId={threadId} onActivity={refreshThreads} onOpenThread={open} />
      </main>
    </div>
  );
}

function MenuIcon(): ReactNode {
  return <LineIcon d="M4 6h16M4 12h16M4 18h16" size={20} />;
}

function PlusIcon(): ReactNode {
  return <LineIcon d="M12 5v14M5 12h14" size={18} />;
}

function CloseIcon(): ReactNode {
  return <LineIcon d="M6 6l12 12M18 6L6 18" size={20} />;
}
