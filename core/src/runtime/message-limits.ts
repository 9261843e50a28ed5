import type { UIMessage } from "ai";
import { PaiError, type PaiErrorCode } from "../errors/pai-error.ts";

/** Caps on what a caller hands the runtime, checked before anything is stored or sent to a model. */
export interface MessageLimits {
  /** The largest new user message, in UTF-8 bytes of its JSON (of its text, for a string). @default 262144 (256 KiB) */
  maxMessageBytes?: number;
  /** The most parts a new user message may have. @default 32 */
  maxMessageParts?: number;
  /** The largest answer to a pending action, in UTF-8 bytes of its JSON. @default 262144 (256 KiB) */
  maxAnswerBytes?: number;
  /** The largest `clientData` of a run or an answer, in UTF-8 bytes of its JSON. @default 65536 (64 KiB) */
  maxClientDataBytes?: number;
}

/** The checks a runtime makes with its {@link MessageLimits}. Each throws a `PaiError` on a breach. */
export interface MessageLimitChecks {
  /**
   * A new run's user message and `clientData`: `MESSAGE_TOO_LARGE` (HTTP 413), `TOO_MANY_PARTS` (400),
   * `CLIENT_DATA_TOO_LARGE` (413).
   */
  checkRun(input: { message: string | UIMessage; clientData?: unknown }): void;
  /** An answer to a pending action and its `clientData`: `ANSWER_TOO_LARGE`, `CLIENT_DATA_TOO_LARGE` (413). */
  checkAnswer(input: { answer: unknown; clientData?: unknown }): void;
}

const defaults: Required<MessageLimits> = {
  maxMessageBytes: 256 * 1024,
  maxMessageParts: 32,
  maxAnswerBytes: 256 * 1024,
  maxClientDataBytes: 64 * 1024,
};

/**
 * Resolves `limits` against the defaults (a limit that is not a positive whole number is an `INVALID_ARGUMENT`)
 * and returns the checks `createAgentRuntime` makes on every `run` and `respond`.
 */
export function messageLimits(limits: MessageLimits = {}): MessageLimitChecks {
  const resolved = { ...defaults };
  for (const key of Object.keys(defaults) as Array<keyof MessageLimits>) {
    const value = limits[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new PaiError("INVALID_ARGUMENT", `limits.${key} must be a positive whole number, not ${value}`);
    }
    resolved[key] = value;
  }
  return {
    checkRun({ message, clientData }) {
      if (typeof message !== "string") {
        const parts = Array.isArray(message.parts) ? message.parts.length : 0;
        if (parts > resolved.maxMessageParts) {
          throw new PaiError(
            "TOO_MANY_PARTS",
            `the message has ${parts} parts; at most ${resolved.maxMessageParts} are accepted`,
            { details: { parts, maxMessageParts: resolved.maxMessageParts } },
          );
        }
      }
      const messageBytes =
        typeof message === "string" ? Buffer.byteLength(message) : jsonBytes(message, "the message");
      assertWithin("MESSAGE_TOO_LARGE", "the message", messageBytes, resolved.maxMessageBytes);
      assertClientData(clientData);
    },
    checkAnswer({ answer, clientData }) {
      assertWithin(
        "ANSWER_TOO_LARGE",
        "the answer",
        jsonBytes(answer, "the answer"),
        resolved.maxAnswerBytes,
      );
      assertClientData(clientData);
    },
  };

  function assertClientData(clientData: unknown): void {
    const bytes = jsonBytes(clientData, "clientData");
    assertWithin("CLIENT_DATA_TOO_LARGE", "clientData", bytes, resolved.maxClientDataBytes);
  }
}

function assertWithin(code: PaiErrorCode, what: string, bytes: number, maxBytes: number): void {
  if (bytes <= maxBytes) return;
  throw new PaiError(code, `${what} is ${bytes} bytes; at most ${maxBytes} are accepted`, {
    details: { bytes, maxBytes },
  });
}

/** UTF-8 bytes of `value` as JSON (0 for `undefined`). */
function jsonBytes(value: unknown, what: string): number {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new PaiError("INVALID_ARGUMENT", `${what} is not JSON-serializable`, { cause: error });
  }
  return json === undefined ? 0 : Buffer.byteLength(json);
}
