import { type FormEvent, type ReactNode, useState } from "react";

/** What {@link MessageEditor} accepts. */
export interface MessageEditorProps {
  /** The user message being edited. */
  messageId: string;
  /** The text the field starts with (the message's, or an edit that was refused). */
  draft: string;
  /** Sends the edited text in place of the message. */
  onSave: (text: string) => void;
  onCancel: () => void;
  /** Why the last save was refused (the field holds its text again). */
  refusal?: string;
}

/**
 * A user message turned into a text field with Save and Cancel: Enter saves (Shift+Enter breaks the line), Escape
 * cancels. Saving replaces the message, and everything after it, with the edit and a new answer.
 */
export function MessageEditor({
  messageId,
  draft,
  onSave,
  onCancel,
  refusal,
}: MessageEditorProps): ReactNode {
  const [text, setText] = useState(draft);
  const save = (event: FormEvent) => {
    event.preventDefault();
    if (text.trim()) onSave(text.trim());
  };
  const field = `edit-${messageId}`;
  return (
    <article className="message user editing" data-message-id={messageId} data-role="user">
      <h2 className="sr-only">Editing your message</h2>
      <form className="message-editor" onSubmit={save}>
        <label className="sr-only" htmlFor={field}>
          Edit your message
        </label>
        <textarea
          id={field}
          name="message"
          value={text}
          rows={2}
          aria-describedby={`${field}-hint`}
          // biome-ignore lint/a11y/noAutofocus: the field appears because Edit was pressed
          autoFocus
          onFocus={(event) => {
            const end = event.currentTarget.value.length;
            event.currentTarget.setSelectionRange(end, end);
          }}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) save(event);
            else if (event.key === "Escape") {
              event.stopPropagation();
              onCancel();
            }
          }}
        />
        {refusal ? (
          <p className="message-refusal" role="alert">
            {refusal}
          </p>
        ) : null}
        <div className="message-editor-foot">
          <p id={`${field}-hint`} className="message-editor-hint">
            Saving replaces the answer below · Enter to save · Esc to cancel
          </p>
          <button type="button" className="message-editor-cancel" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className="message-editor-save" disabled={!text.trim()}>
            Save
          </button>
        </div>
      </form>
    </article>
  );
}
