import { type ReactNode, useEffect, useRef, useState } from "react";
import { connectTerminal, type TerminalConnection, type TerminalStatus } from "./connect-terminal.ts";
import { LineIcon } from "./line-icon.tsx";
import type { XtermView } from "./xterm-view.ts";

/** What {@link TerminalPanel} accepts. */
export interface TerminalPanelProps {
  /** The thread whose sandbox the shell runs in (it must exist: it has messages). */
  threadId: string;
  /** Closes the panel (which closes the socket and ends the shell). */
  onClose: () => void;
}

/**
 * A shell in the conversation's sandbox: xterm.js (loaded when the panel first opens) over the thread's terminal
 * WebSocket, sized to the panel and resized with it. Shows whether it is connecting, connected or ended (with the
 * exit code), and offers to reconnect once it ended. Unmounting closes the socket, which ends the shell.
 */
export function TerminalPanel({ threadId, onClose }: TerminalPanelProps): ReactNode {
  const screen = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState<TerminalStatus>({ state: "connecting" });
  const [session, setSession] = useState(0);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `session` triggers a reconnect on a fresh screen
  useEffect(() => {
    const element = screen.current;
    if (!element) return;
    let closed = false;
    let view: XtermView | undefined;
    let connection: TerminalConnection | undefined;
    setStatus({ state: "connecting" });
    import("./xterm-view.ts")
      .then(({ createXtermView }) => {
        if (closed) return;
        const opened = createXtermView(element);
        view = opened;
        const live = connectTerminal({
          threadId,
          ...opened.size(),
          onOutput: (bytes) => opened.write(bytes),
          onStatus: setStatus,
        });
        connection = live;
        opened.onData((data) => live.write(data));
        opened.onResize((size) => live.resize(size));
        opened.focus();
      })
      .catch((error: unknown) => {
        if (!closed) {
          setStatus({ state: "failed", message: error instanceof Error ? error.message : String(error) });
        }
      });
    return () => {
      closed = true;
      connection?.close();
      view?.dispose();
    };
  }, [threadId, session]);

  const ended = status.state === "ended" || status.state === "failed";
  return (
    <section id="terminal-panel" className="terminal-panel" aria-label="Terminal" data-state={status.state}>
      <header className="terminal-head">
        <span className="terminal-title">Terminal</span>
        <span className="terminal-status" role="status">
          {describeStatus(status)}
        </span>
        {ended ? (
          <button type="button" className="terminal-reconnect" onClick={() => setSession((n) => n + 1)}>
            Reconnect
          </button>
        ) : null}
        <button
          type="button"
          className="icon-button terminal-close"
          aria-label="Close the terminal"
          onClick={onClose}
        >
          <LineIcon d="M6 6l12 12M18 6L6 18" size={18} />
        </button>
      </header>
      {/* a reconnect starts on a fresh screen */}
      <div className="terminal-screen" ref={screen} key={session} />
    </section>
  );
}

/** The status line: "Connecting…", "Connected", "Ended (exit 0)", or why it failed. */
export function describeStatus(status: TerminalStatus): string {
  switch (status.state) {
    case "connecting":
      return "Connecting…";
    case "connected":
      return "Connected";
    case "ended":
      return status.exitCode !== null
        ? `Ended (exit ${status.exitCode})`
        : `Ended (${status.signal ?? "no exit code"})`;
    case "failed":
      return `Ended: ${status.message}`;
  }
}
