/** Marks a line the program writes for the host (a tool call or its result), never shown as a log. */
export const MESSAGE_MARK = "\u001ePAI";

/**
 * The CommonJS program that runs the model's code inside the sandbox. `tools.<name>(input)` sends a call to
 * the host on stdout and waits for the answer on stdin; the code's return value (or error) goes back last.
 */
export function codeModeProgram(code: string): string {
  return `"use strict";
const readline = require("node:readline");
const pending = new Map();
let nextId = 0;
const send = (message) => process.stdout.write("\\n${MESSAGE_MARK}" + JSON.stringify(message) + "\\n");
const answers = readline.createInterface({ input: process.stdin });
answers.on("line", (line) => {
  if (!line.trim()) return;
  const answer = JSON.parse(line);
  const waiting = pending.get(answer.id);
  if (!waiting) return;
  pending.delete(answer.id);
  if (answer.ok) waiting.resolve(answer.value);
  else waiting.reject(new Error(answer.error));
});
const tools = new Proxy({}, {
  get: (_target, name) => (input) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      send({ type: "call", id, tool: String(name), input: input === undefined ? {} : input });
    }),
});
(async () => {
${code}
})().then(
  (value) => send({ type: "result", value: value === undefined ? null : value }),
  (error) => send({ type: "error", message: error && error.stack ? String(error.stack) : String(error) }),
).finally(() => answers.close());
`;
}
