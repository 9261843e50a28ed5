// xterm.js's stylesheet, imported for its side effect by `xterm-view.ts`: Vite bundles it into that lazy chunk.
declare module "@xterm/xterm/css/xterm.css";
