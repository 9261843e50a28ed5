// PAI code context driver for JavaScript (and TypeScript, whose types the host strips): one Node REPL context kept
// alive between cells, so declarations persist, the last expression's value is the cell's result and top-level
// `await` works (the REPL's own evaluator).
//
// Started by @pai/sandbox (`createCodeContext`, `runCode`) as `node -e <this file>` inside the sandbox, as the
// sandbox user. Requests arrive as JSON lines on stdin ({"type": "execute", "id", "code"}); events leave on stdout as
// lines that start with "\x1ePAI" + PAI_CODE_TOKEN followed by JSON, so what a child process writes straight to
// file descriptor 1 stays apart from them. The host interrupts a cell with SIGINT to this process: a synchronous
// loop is broken off (`breakEvalOnSigint`), an awaited promise is given up; the context and its state stay.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const readline = require("node:readline");
const repl = require("node:repl");
const { PassThrough, Writable } = require("node:stream");
const util = require("node:util");

const TOKEN = process.env.PAI_CODE_TOKEN || "";
const RECORD = process.env.PAI_CODE_CONTEXT || "";
delete process.env.PAI_CODE_TOKEN;
delete process.env.PAI_CODE_CONTEXT;
const MARK = `\x1ePAI${TOKEN}`;
let current; // { id, finish } of the running cell

function emit(event) {
  fs.writeSync(1, `${MARK}${JSON.stringify(event)}\n`);
}

function eventStream(name) {
  return new Writable({
    write(chunk, _encoding, callback) {
      const text = chunk.toString("utf8");
      if (text !== "" && current) emit({ type: name, id: current.id, text });
      callback();
    },
  });
}

const stdout = eventStream("stdout");
const stderr = eventStream("stderr");
// process.stdout.write from the cell's code reaches the host as stdout events, not as protocol lines.
process.stdout.write = (chunk, encoding, callback) => stdout.write(chunk, encoding, callback);
process.stderr.write = (chunk, encoding, callback) => stderr.write(chunk, encoding, callback);

const server = repl.start({
  prompt: "",
  input: new PassThrough(),
  output: new PassThrough(),
  terminal: false,
  useGlobal: false,
  breakEvalOnSigint: true,
});
server.context.console = new console.Console({ stdout, stderr });
// The REPL reports a cell's exception (thrown, or a rejected top-level await) on its domain, not to eval's callback.
server._domain.on("error", (error) => current?.finish(error));

/** A MIME bundle of a value: its inspection as text, JSON for plain data. */
function bundleOf(value) {
  const data = { "text/plain": typeof value === "string" ? value : util.inspect(value, { depth: 4 }) };
  if (value !== null && typeof value === "object") {
    try {
      const json = JSON.parse(JSON.stringify(value));
      if (json !== null && typeof json === "object") data["application/json"] = json;
    } catch {}
  }
  return data;
}

/** `display(value)` or `display({ "text/html": "..." }, { raw: true })` inside a cell. */
server.context.display = (value, options = {}) => {
  if (!current) return;
  const data = options.raw ? value : bundleOf(value);
  emit({ type: "display", id: current.id, data });
};

/** A stack without the driver's own frames (the REPL, vm, domain and this file). */
function userStack(stack) {
  return String(stack || "")
    .split("\n")
    .filter((line) => !/^\s+at .*(node:|\[eval\]|<anonymous>)/.test(line))
    .join("\n");
}

function errorEvent(id, error) {
  const inner = error?.constructor?.name === "Recoverable" && error.err ? error.err : error;
  if (inner instanceof Error || (inner && typeof inner === "object" && "stack" in inner)) {
    return {
      type: "error",
      id,
      name: inner.name || "Error",
      value: inner.message || "",
      traceback: userStack(inner.stack),
    };
  }
  return { type: "error", id, name: "Error", value: util.inspect(inner), traceback: "" };
}

/**
 * Static `import` lines as dynamic imports (a REPL context is a script, where `import ... from` is a syntax error):
 * `import x from "m"`, `import * as m from "m"`, `import { a, b as c } from "m"`, `import x, { a } from "m"` and
 * `import "m"`, each on a line of its own. `var`, so running the cell again declares them again.
 */
function rewriteImports(code) {
  return code
    .replace(/^[ \t]*import\s+(['"][^'"\n]+['"])[ \t]*;?[ \t]*$/gm, "await import($1);")
    .replace(
      /^[ \t]*import\s+([^'"\n]+?)\s+from\s+(['"][^'"\n]+['"])[ \t]*;?[ \t]*$/gm,
      (line, clause, source) => {
        const parts = [];
        const named = /\{([^}]*)\}/.exec(clause);
        const rest = clause
          .replace(/\{[^}]*\}/, "")
          .replace(/,/g, " ")
          .trim();
        const namespace = /^\*\s+as\s+([\w$]+)$/.exec(rest);
        if (namespace) parts.push(`var ${namespace[1]} = __pai_module;`);
        else if (/^[\w$]+$/.test(rest)) parts.push(`var ${rest} = __pai_module.default;`);
        else if (rest !== "") return line;
        if (named) {
          const bindings = named[1]
            .split(",")
            .map((binding) => binding.trim())
            .filter(Boolean)
            .map((binding) => binding.replace(/^([\w$]+)\s+as\s+([\w$]+)$/, "$1: $2"));
          parts.push(`var { ${bindings.join(", ")} } = __pai_module;`);
        }
        return `var __pai_module = await import(${source}); ${parts.join(" ")}`;
      },
    );
}

let executionCount = 0;

function execute(id, code) {
  executionCount += 1;
  const count = executionCount;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (error, value) => {
      if (settled) return;
      settled = true;
      current = undefined;
      if (error) emit(errorEvent(id, error));
      else if (value !== undefined) emit({ type: "result", id, data: bundleOf(value) });
      emit({ type: "done", id, executionCount: count });
      resolve();
    };
    current = { id, finish };
    // While the cell's synchronous part runs, SIGINT belongs to the REPL's watchdog (`breakEvalOnSigint`), which a
    // listener of ours would disable; once it waits on a promise, to `interruptAwait`.
    process.removeListener("SIGINT", interruptAwait);
    try {
      server.eval(rewriteImports(code), server.context, `cell-${count}`, (error, value) => {
        // a SIGINT during synchronous code arrives here (or on the domain) as the REPL's interruption error
        finish(error, value);
      });
    } catch (error) {
      finish(error);
    } finally {
      process.on("SIGINT", interruptAwait);
    }
  });
}

/** A SIGINT while the cell waits on a promise (or between cells): the promise is given up. */
function interruptAwait() {
  if (!current) return;
  const error = new Error("Script execution was interrupted by `SIGINT`");
  error.name = "KeyboardInterrupt";
  current.finish(error);
}
process.on("SIGINT", interruptAwait);

if (RECORD) {
  try {
    const record = { ...JSON.parse(RECORD), pid: process.pid };
    const directory = "/tmp/.pai-code-contexts";
    fs.mkdirSync(directory, { recursive: true });
    const file = path.join(directory, `${record.id}.json`);
    fs.writeFileSync(`${file}.new`, JSON.stringify(record));
    fs.renameSync(`${file}.new`, file);
  } catch (error) {
    emit({ type: "warning", message: `cannot record the context: ${error}` });
  }
}

let queue = Promise.resolve();
const lines = readline.createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
lines.on("line", (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return;
  }
  if (request.type !== "execute") return;
  queue = queue.then(() => execute(request.id, String(request.code ?? "")));
});
lines.on("close", () => queue.then(() => process.exit(0)));
emit({ type: "ready", pid: process.pid });
