// @vitest-environment happy-dom
import type { UIMessage } from "ai";
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { renderToString } from "react-dom/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Assistant } from "./assistant.ts";
import { isPaiToolPart } from "./is-pai-tool-part.ts";
import type { PendingActionAnswerEvent } from "./pai-provider.tsx";
import { registerToolCard } from "./register-tool-card.ts";
import { sampleAction, sampleMessage } from "./testing/sample-message.ts";
import type { ToolCardProps } from "./tool-card.ts";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

function Messages({ message }: { message: UIMessage }) {
  return (
    <div>
      {message.parts.map((part) =>
        isPaiToolPart(part) ? <Assistant.Tool key={part.toolCallId} message={message} part={part} /> : null,
      )}
    </div>
  );
}

function ProviderCard({ toolName, data, pendingAction }: ToolCardProps) {
  return (
    <p>
      provider card for {toolName}: {data.length} writes, waiting on {pendingAction?.actionId}
    </p>
  );
}
function RegisteredCard({ toolId }: ToolCardProps) {
  return <p>registered card for {toolId}</p>;
}

let container: HTMLElement;
let root: Root;

beforeEach(() => {
  container = document.createElement("div");
  document.body.append(container);
  root = createRoot(container);
});

afterEach(() => {
  act(() => root.unmount());
  container.remove();
});

describe("<Assistant.Tool>", () => {
  it("renders the default card: name, status, input, streamed tool data and the question", () => {
    const html = renderToString(<Messages message={sampleMessage()} />);
    expect(html).toContain('data-tool-id="deploy.v2"');
    expect(html).toContain("deploy");
    expect(html).toContain("Needs approval");
    expect(html).toContain("hello world\n");
    expect(html).not.toContain("not mine");
    expect(html).toContain("Deploy api?");
    expect(html).toContain("Approve");
  });

  it("answers the pending action through the provider when Approve or Deny is clicked", async () => {
    const answers: PendingActionAnswerEvent[] = [];
    const render = () =>
      act(async () =>
        root.render(
          <Assistant.Provider api="/api" threadId="t1" onAnswer={(event) => void answers.push(event)}>
            <Messages message={sampleMessage()} />
          </Assistant.Provider>,
        ),
      );
    await render();
    await act(async () => container.querySelector<HTMLButtonElement>(".pai-tool-approve")!.click());
    act(() => root.unmount());
    root = createRoot(container);
    await render();
    await act(async () => container.querySelector<HTMLButtonElement>(".pai-tool-deny")!.click());
    expect(answers.map((event) => event.answer)).toEqual([
      { type: "resume", resume: { approved: true } },
      { type: "deny", reason: "The user denied it." },
    ]);
    expect(answers[0]!.action).toMatchObject({ actionId: "a1", toolCallId: "c1", inputHash: "h1" });
  });

  it("shows a wait below the call with its path and that call's input, and answers it bound to the top-level call", async () => {
    const nested = sampleAction({
      path: ["deploy", "checks", "approveRelease"],
      payload: { question: "Release api 2.1?" },
      inner: { toolId: "approveRelease", input: { version: "2.1" } },
    });
    const answers: PendingActionAnswerEvent[] = [];
    await act(async () =>
      root.render(
        <Assistant.Provider api="/api" threadId="t1" onAnswer={(event) => void answers.push(event)}>
          <Messages message={sampleMessage(nested)} />
        </Assistant.Provider>,
      ),
    );
    expect(container.querySelector(".pai-tool-path")?.textContent).toBe("deploy › checks › approveRelease");
    expect(container.querySelector(".pai-tool-question")?.textContent).toBe("Release api 2.1?");
    const innerInput = container.querySelector(".pai-tool-input[data-inner]");
    expect(innerInput?.querySelector("summary")?.textContent).toBe("approveRelease input");
    expect(innerInput?.querySelector("pre")?.textContent).toContain('"version": "2.1"');
    await act(async () => container.querySelector<HTMLButtonElement>(".pai-tool-approve")!.click());
    expect(answers[0]!.action).toMatchObject({
      actionId: "a1",
      toolCallId: "c1",
      toolId: "deploy.v2",
      inputHash: "h1",
    });

    act(() => root.unmount());
    root = createRoot(container);
    await act(async () => root.render(<Messages message={sampleMessage()} />));
    expect(container.querySelector(".pai-tool-path")).toBeNull();
  });

  it("shows Approved as soon as Approve is clicked, then Running once the server took the answer", async () => {
    let accept: (() => void) | undefined;
    let finish: (() => void) | undefined;
    await act(async () =>
      root.render(
        <Assistant.Provider
          onAnswer={(event) =>
            new Promise<void>((resolve) => {
              accept = event.onAccepted;
              finish = resolve;
            })
          }
        >
          <Messages message={sampleMessage()} />
        </Assistant.Provider>,
      ),
    );
    const card = () => container.querySelector(".pai-tool")!;
    expect(card().getAttribute("data-status")).toBe("needs-approval");
    await act(async () => container.querySelector<HTMLButtonElement>(".pai-tool-approve")!.click());
    expect(card().getAttribute("data-status")).toBe("approved");
    expect(card().querySelector(".pai-tool-approve")).toBeNull();
    expect(card().querySelector(".pai-tool-question")?.textContent).toBe("Deploy api?");
    await act(async () => accept?.());
    expect(card().getAttribute("data-status")).toBe("running");
    await act(async () => finish?.());
    expect(card().getAttribute("data-status")).toBe("running");
  });

  it("shows the error of a failed answer on the card", async () => {
    await act(async () =>
      root.render(
        <Assistant.Provider
          onAnswer={() => {
            throw new Error("the tool is disabled");
          }}
        >
          <Messages message={sampleMessage()} />
        </Assistant.Provider>,
      ),
    );
    await act(async () => container.querySelector<HTMLButtonElement>(".pai-tool-approve")!.click());
    expect(container.querySelector(".pai-tool-approval .pai-tool-error")?.textContent).toBe(
      "the tool is disabled",
    );
    // the answer did not go through: the card asks again
    expect(container.querySelector(".pai-tool")?.getAttribute("data-status")).toBe("needs-approval");
    expect(container.querySelector(".pai-tool-approve")).not.toBeNull();
  });

  it("folds the call's input under the question, and names the tool by its title", () => {
    const html = renderToString(<Messages message={sampleMessage()} />);
    expect(html).toMatch(
      /<p class="pai-tool-question">Deploy api\?<\/p><details class="pai-tool-input"><summary>Details<\/summary>/,
    );
    expect(html).toContain('<span class="pai-tool-name">Deploy</span>');
    const titled = renderToString(
      <Assistant.Provider titles={{ "deploy.v2": "Deploy a service" }}>
        <Messages message={sampleMessage()} />
      </Assistant.Provider>,
    );
    expect(titled).toContain('<span class="pai-tool-name">Deploy a service</span>');
  });

  it("shows Starting sandbox while the run provisions it, and Running once it is ready", () => {
    const message = sampleMessage(sampleAction({ status: "resumed" }));
    const provisioning = { capability: "sandbox", lifetime: "thread", status: "provisioning" };
    message.parts.push({ type: "data-pai-capability", data: provisioning });
    expect(renderToString(<Messages message={message} />)).toContain("Starting sandbox");
    message.parts.push({
      type: "data-pai-capability",
      data: { ...provisioning, status: "ready", durationMs: 5 },
    });
    const ready = renderToString(<Messages message={message} />);
    expect(ready).toContain('data-status="running"');
    expect(ready).not.toContain("Starting sandbox");
  });

  it("shows an open call of a stopped run as Stopped, and a failed call with its reason", () => {
    const stopped = sampleMessage(sampleAction({ status: "cancelled" }));
    const html = renderToString(
      <div>
        {stopped.parts.map((part) =>
          isPaiToolPart(part) ? (
            <Assistant.Tool key={part.toolCallId} message={stopped} part={part} runStatus="cancelled" />
          ) : null,
        )}
      </div>,
    );
    expect(html).toContain('data-status="stopped"');
    // the badge says it, once
    expect(html.match(/>Cancelled</g)).toHaveLength(1);
    expect(html).not.toContain("pai-tool-note");

    const failed = sampleMessage(sampleAction({ status: "resumed" }));
    Object.assign(failed.parts[2] as Record<string, unknown>, {
      state: "output-error",
      errorText: "git failed (exit 1): nothing to commit",
    });
    const failedHtml = renderToString(<Messages message={failed} />);
    expect(failedHtml).toContain('data-status="failed"');
    expect(failedHtml).toContain(
      '<p class="pai-tool-error" data-reason="failed">git failed (exit 1): nothing to commit</p>',
    );
    expect(failedHtml.match(/>Failed</g)).toHaveLength(1);
  });

  it("drops the buttons once the action is settled and shows the output", () => {
    const message = sampleMessage(sampleAction({ status: "resumed" }));
    const part = message.parts[2] as Record<string, unknown>;
    Object.assign(part, { state: "output-available", output: { deployed: "api" } });
    const html = renderToString(<Messages message={message} />);
    expect(html).not.toContain("pai-tool-approve");
    expect(html).toContain("Done");
    // the question stays, with how it was answered
    expect(html).toContain('<p class="pai-tool-question">Deploy api?</p>');
    expect(html).toContain('<p class="pai-tool-answered" data-answer="resumed">Approved</p>');
    expect(html).toContain("&quot;deployed&quot;: &quot;api&quot;");
  });

  it("shows a call whose action a new message cancelled as Cancelled, without buttons", () => {
    const message = sampleMessage(sampleAction({ status: "cancelled" }));
    const html = renderToString(<Messages message={message} />);
    expect(html).toContain('data-status="stopped"');
    expect(html).toContain("Cancelled");
    expect(html).not.toContain("pai-tool-approve");
  });

  it("shows a denial recorded on the stored part", () => {
    const message = sampleMessage(sampleAction({ status: "denied" }));
    Object.assign(message.parts[2] as Record<string, unknown>, {
      state: "approval-responded",
      approval: { id: "a1", approved: false, reason: "not now" },
    });
    const html = renderToString(<Messages message={message} />);
    expect(html).toContain('data-status="denied"');
    expect(html).toContain('<p class="pai-tool-error" data-reason="denied">not now</p>');
    expect(html.match(/>Denied</g)).toHaveLength(1);
  });

  it("shows a denial streamed as tool-output-denied, which carries no approval", () => {
    const message = sampleMessage(sampleAction({ status: "denied" }));
    Object.assign(message.parts[2] as Record<string, unknown>, { state: "output-denied" });
    const html = renderToString(<Messages message={message} />);
    expect(html).toContain('data-status="denied"');
    expect(html).not.toContain("pai-tool-approve");
  });

  it("uses a custom card for the tool id from the provider, then from the registry", () => {
    const unregister = registerToolCard("deploy.v2", RegisteredCard);
    try {
      expect(renderToString(<Messages message={sampleMessage()} />)).toContain(
        "registered card for <!-- -->deploy.v2",
      );
      const html = renderToString(
        <Assistant.Provider cards={{ "deploy.v2": ProviderCard }}>
          <Messages message={sampleMessage()} />
        </Assistant.Provider>,
      );
      expect(html).toContain("provider card for <!-- -->deploy<!-- -->: <!-- -->2<!-- --> writes");
      expect(html).toContain("waiting on <!-- -->a1");
    } finally {
      unregister();
    }
    expect(renderToString(<Messages message={sampleMessage()} />)).toContain("pai-tool-approve");
  });

  it("falls back to the registration key for parts without a tool id", () => {
    const message = sampleMessage();
    delete (message.parts[2] as Record<string, unknown>).toolMetadata;
    const html = renderToString(
      <Assistant.Provider cards={{ deploy: ({ toolId }) => <p>by key {toolId}</p> }}>
        <Messages message={message} />
      </Assistant.Provider>,
    );
    expect(html).toContain("by key <!-- -->deploy");
  });
});
