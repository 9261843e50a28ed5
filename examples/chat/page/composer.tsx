import { type FormEvent, type ReactNode, type Ref, useLayoutEffect, useRef, useState } from "react";

/** What {@link Composer} accepts. */
export interface ComposerProps {
  /** A run is streaming: the button stops it instead of sending. */
  busy: boolean;
  onSend: (text: string) => void;
  onStop: () => void;
  /** The text box, for giving focus back after an answer. */
  inputRef: Ref<HTMLTextAreaElement>;
}

/** Tallest the text box grows before it scrolls, in pixels. */
const MAX_HEIGHT = 200;

/** The message box: grows with its text, Enter sends, Shift+Enter breaks the line; Stop while a run streams. */
export function Composer({ busy, onSend, onStop, inputRef }: ComposerProps): ReactNode {
  const [draft, setDraft] = useState("");
  const box = useRef<HTMLTextAreaElement | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the height follows the text
  useLayoutEffect(() => {
    const element = box.current;
    if (!element) return;
    element.style.height = "auto";
    element.style.height = `${Math.min(element.scrollHeight, MAX_HEIGHT)}px`;
  }, [draft]);

  const send = (event: FormEvent) => {
    event.preventDefault();
    const text = draft.trim();
    if (!text || busy) return;
    setDraft("");
    onSend(text);
  };

  return (
    <form className="composer" onSubmit={send}>
      <div className="composer-box">
        <label className="sr-only" htmlFor="composer-input">
          Message
        </label>
        <textarea
          id="composer-input"
          ref={(element) => {
            box.current = element;
            if (typeof inputRef === "function") inputRef(element);
            else if (inputRef) inputRef.current = element;
          }}
          name="message"
          placeholder="Ask for something to run…"
          value={draft}
          rows={1}
          aria-describedby="composer-hint"
          onChange={(event) => setDraft(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) send(event);
          }}
        />
        {busy ? (
          // distinct keys: React must not turn the focused Stop button into a disabled Send button
          <button key="stop" type="button" className="stop" onClick={onStop}>
            <svg viewBox="0 0 24 24" width="14" height="14" aria-hidden="true">
              <rect x="5" y="5" width="14" height="14" rx="2" fill="currentColor" />
            </svg>
            Stop
          </button>
        ) : (
          <button key="send" type="submit" className="send" disabled={!draft.trim()}>
            Send
          </button>
        )}
      </div>
      <p id="composer-hint" className="composer-hint">
        Enter to send · Shift+Enter for a new line
      </p>
    </form>
  );
}
