import { type RefObject, useCallback, useEffect, useRef, useState } from "react";

/** How close to the end (in pixels) still counts as "at the bottom". */
const NEAR_END = 24;

/** What {@link useStickToBottom} gives the conversation. */
export interface StickToBottom {
  /** The scrolling element (its first child is the content that grows). */
  scroller: RefObject<HTMLDivElement | null>;
  /** The reader is at the end (or there is nothing to scroll): new content is followed. */
  atBottom: boolean;
  /** Scrolls to the end and follows new content again (the "jump to latest" button, sending a message). */
  jumpToLatest: (behavior?: ScrollBehavior) => void;
}

/**
 * Follows new content while the reader is at the bottom of the scroller (messages streaming in, cards growing,
 * images loading, the window or the composer resizing), and leaves them be once they scroll up to read. Only the
 * reader's own scrolling up lets go: content that grows or shrinks, or the browser clamping the scroll position,
 * does not.
 */
export function useStickToBottom(): StickToBottom {
  const scroller = useRef<HTMLDivElement | null>(null);
  const pinned = useRef(true);
  const [atBottom, setAtBottom] = useState(true);

  const update = useCallback((stick: boolean) => {
    pinned.current = stick;
    setAtBottom(stick);
  }, []);

  useEffect(() => {
    const element = scroller.current;
    const content = element?.firstElementChild;
    if (!element || !content) return;
    let lastTop = element.scrollTop;
    const distance = () => element.scrollHeight - element.scrollTop - element.clientHeight;
    const follow = () => {
      if (pinned.current) element.scrollTop = element.scrollHeight;
      lastTop = element.scrollTop;
      if (!pinned.current && distance() <= NEAR_END) update(true);
    };
    const onScroll = () => {
      const top = element.scrollTop;
      // up by the reader's hand lets go; reaching the end (by any means) takes hold again
      if (distance() <= NEAR_END) update(true);
      else if (top < lastTop - 1) update(false);
      lastTop = top;
    };
    follow();
    const observer = new ResizeObserver(follow);
    observer.observe(element);
    observer.observe(content);
    element.addEventListener("scroll", onScroll, { passive: true });
    return () => {
      observer.disconnect();
      element.removeEventListener("scroll", onScroll);
    };
  }, [update]);

  const jumpToLatest = useCallback(
    (behavior: ScrollBehavior = "auto") => {
      const element = scroller.current;
      update(true);
      element?.scrollTo({ top: element.scrollHeight, behavior });
    },
    [update],
  );

  return { scroller, atBottom, jumpToLatest };
}
