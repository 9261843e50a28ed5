// Loaded lazily by the Terminal panel: xterm.js and its stylesheet are a chunk of their own.
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import "@xterm/xterm/css/xterm.css";
import type { TerminalSize } from "./connect-terminal.ts";

/** An xterm.js terminal filling an element, refitted as the element resizes. */
export interface XtermView {
  /** Its size in cells now. */
  size(): TerminalSize;
  /** Prints bytes the shell wrote. */
  write(bytes: Uint8Array): void;
  /** Calls `listener` with each keystroke (or paste) as text. */
  onData(listener: (data: string) => void): void;
  /** Calls `listener` when fitting changed the size in cells. */
  onResize(listener: (size: TerminalSize) => void): void;
  focus(): void;
  dispose(): void;
}

/** Opens an xterm.js terminal in `element`, fitted to it (`@xterm/addon-fit`) now and on every resize. */
export function createXtermView(element: HTMLElement): XtermView {
  const terminal = new Terminal({
    cursorBlink: true,
    fontFamily: '"DejaVu Sans Mono", ui-monospace, Menlo, monospace',
    fontSize: 13,
    scrollback: 5000,
    theme: { background: "#111827", foreground: "#e5e7eb" },
  });
  const fit = new FitAddon();
  terminal.loadAddon(fit);
  terminal.open(element);
  const refit = () => {
    // a hidden element has no size to fit to
    if (element.clientWidth > 0 && element.clientHeight > 0) fit.fit();
  };
  refit();
  const observer = new ResizeObserver(refit);
  observer.observe(element);
  return {
    size: () => ({ cols: terminal.cols, rows: terminal.rows }),
    write: (bytes) => terminal.write(bytes),
    onData: (listener) => void terminal.onData(listener),
    onResize: (listener) => void terminal.onResize(({ cols, rows }) => listener({ cols, rows })),
    focus: () => terminal.focus(),
    dispose: () => {
      observer.disconnect();
      terminal.dispose();
    },
  };
}
