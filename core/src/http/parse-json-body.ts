import { z } from "zod";
import { PaiError } from "../errors/pai-error.ts";
import { readLimitedBody } from "./read-limited-body.ts";

/** A request's JSON body, at most `maxBytes`, checked against `schema`; `BAD_REQUEST` when it is not JSON or does not match. */
export async function parseJsonBody<SCHEMA extends z.ZodType>(
  request: Request,
  schema: SCHEMA,
  maxBytes: number,
): Promise<z.output<SCHEMA>> {
  const text = await readLimitedBody(request, { maxBytes });
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new PaiError("BAD_REQUEST", "the body is not valid JSON");
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new PaiError("BAD_REQUEST", `the body does not match: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
