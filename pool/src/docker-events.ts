import type { Readable } from "node:stream";
import type Docker from "dockerode";
import type { ContainerEvent, LabelFilter } from "./container-driver.ts";
import { labelFilters } from "./docker-containers.ts";

/** One line of the engine's event stream as a {@link ContainerEvent}; `undefined` for any other line. */
function parseContainerEvent(line: string): ContainerEvent | undefined {
  let raw: {
    Action?: string;
    status?: string;
    id?: string;
    Actor?: { ID?: string; Attributes?: Record<string, string> };
  };
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined;
  }
  const action = raw.Action ?? raw.status;
  const containerId = raw.Actor?.ID ?? raw.id;
  if ((action !== "die" && action !== "oom") || !containerId) return undefined;
  const attributes = raw.Actor?.Attributes ?? {};
  const exitCode = attributes.exitCode !== undefined ? Number(attributes.exitCode) : null;
  return {
    type: action,
    containerId,
    exitCode: exitCode !== null && Number.isFinite(exitCode) ? exitCode : null,
    labels: attributes,
  };
}

/**
 * `ContainerDriver.events` on the Docker engine: its `die` and `oom` events of containers matching `filter`, from
 * `GET /events`, connected again (with backoff up to 30 s) whenever the stream ends. Returns the unsubscribe
 * function.
 */
export function subscribeDockerEvents(
  docker: Docker,
  filter: LabelFilter,
  onEvent: (event: ContainerEvent) => void,
): () => void {
  let stopped = false;
  let current: Readable | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryDelay = 500;
  const controller = new AbortController();

  const connect = async () => {
    if (stopped) return;
    let stream: Readable;
    try {
      stream = (await docker.getEvents({
        filters: { type: ["container"], event: ["die", "oom"], label: labelFilters(filter) },
        abortSignal: controller.signal,
      } as Docker.GetEventsOptions)) as unknown as Readable;
    } catch {
      scheduleReconnect();
      return;
    }
    if (stopped) {
      stream.destroy();
      return;
    }
    current = stream;
    retryDelay = 500;
    let pending = "";
    stream.setEncoding("utf8");
    stream.on("data", (text: string) => {
      pending += text;
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        newline = pending.indexOf("\n");
        const event = line === "" ? undefined : parseContainerEvent(line);
        if (!event) continue;
        try {
          onEvent(event);
        } catch {
          // A listener's bug must not end the subscription.
        }
      }
    });
    const onGone = () => {
      if (current === stream) current = undefined;
      scheduleReconnect();
    };
    stream.on("end", onGone);
    stream.on("close", onGone);
    stream.on("error", () => {});
  };

  const scheduleReconnect = () => {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, retryDelay);
    retryTimer.unref();
    retryDelay = Math.min(retryDelay * 2, 30_000);
  };

  void connect();
  return () => {
    stopped = true;
    if (retryTimer) clearTimeout(retryTimer);
    controller.abort();
    current?.destroy();
  };
}
