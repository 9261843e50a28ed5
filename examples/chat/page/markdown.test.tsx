// @vitest-environment happy-dom
import { act } from "react";
import { createRoot } from "react-dom/client";
import { describe, expect, it } from "vitest";
import Markdown from "./markdown.tsx";

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

/**
 * The HTML `<Markdown>` renders in a browser-like DOM once its lazy parts (code blocks) have loaded, without
 * class attributes (streamdown's Tailwind classes, which the page does not use).
 */
async function render(text: string, streaming: boolean): Promise<string> {
  const container = document.createElement("div");
  document.body.append(container);
  const root = createRoot(container);
  try {
    await act(async () => root.render(<Markdown text={text} streaming={streaming} />));
    await act(() => new Promise((resolve) => setTimeout(resolve, 50)));
    return container.innerHTML.replace(/ class="[^"]*"/g, "");
  } finally {
    act(() => root.unmount());
    container.remove();
  }
}

describe("<Markdown>", () => {
  it("renders a model's markdown: emphasis, inline code, lists, links and a fenced code block", async () => {
    const html = await render(
      [
        "## Result",
        "",
        "Ran **fib.py** with `python3`:",
        "",
        "- fast",
        "- [docs](https://example.com/docs)",
        "",
        "```python",
        "print(6 * 7)",
        "```",
      ].join("\n"),
      false,
    );
    expect(html).toMatch(/<h2[^>]*>Result<\/h2>/);
    expect(html).toMatch(/<span[^>]*data-streamdown="strong"[^>]*>fib\.py<\/span>/);
    expect(html).toMatch(/<code[^>]*data-streamdown="inline-code"[^>]*>python3<\/code>/);
    expect(html).toMatch(/<li[^>]*data-streamdown="list-item"[^>]*>fast/);
    expect(html).toMatch(/<a[^>]*href="https:\/\/example.com\/docs"/);
    expect(html).toContain('data-streamdown="code-block"');
    expect(html).toContain("print(6 * 7)");
    expect(html).not.toContain("**");
    expect(html).not.toContain("```");
  });

  it("shows half-streamed markdown as it will end, not as raw marks", async () => {
    const html = await render("Committed **fib.py", true);
    expect(html).toMatch(/<span[^>]*data-streamdown="strong"[^>]*>fib\.py<\/span>/);
    expect(html).not.toContain("**");
  });

  it("drops raw HTML a model might write", async () => {
    const html = await render('Hello <img src=x onerror="alert(1)"> <script>alert(2)</script>', false);
    expect(html).not.toContain("onerror");
    expect(html).not.toContain("<script");
  });
});
