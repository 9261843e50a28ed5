import type { ReactNode } from "react";
import { Streamdown } from "streamdown";

/** What {@link Markdown} accepts. */
export interface MarkdownProps {
  /** The markdown, complete or still streaming in. */
  text: string;
  /** More text is on its way: unfinished syntax is completed for display and a caret shows. */
  streaming: boolean;
}

/**
 * Assistant text as markdown, rendered with streamdown (made for streaming: an unclosed code fence or `**`
 * renders as it will end, not as raw marks). Code blocks get a copy button; raw HTML is sanitized.
 */
export default function Markdown({ text, streaming }: MarkdownProps): ReactNode {
  return (
    <Streamdown
      isAnimating={streaming}
      caret="block"
      controls={{ code: { copy: true, download: false }, table: false, mermaid: false }}
      linkSafety={{ enabled: false }}
      lineNumbers={false}
    >
      {text}
    </Streamdown>
  );
}
