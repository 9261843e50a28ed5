import type { ReactNode } from "react";
import type { ToolCardProps } from "./tool-card.ts";

/** Props of {@link ToolCardFrame}: the card's call and status, what follows the title, and the card's body. */
export interface ToolCardFrameProps extends Pick<ToolCardProps, "part" | "toolId" | "title" | "status"> {
  /** Class names beside `pai-tool` (e.g. the card's own). */
  className?: string;
  /** Shown after the title in the header (a language, a command line). */
  titleExtra?: ReactNode;
  children?: ReactNode;
}

/**
 * The frame every tool card shares: a `<section class="pai-tool">` carrying the tool id, call id and status as
 * `data-*` attributes and an accessible label, and a header with the title and a status badge (`pai-tool-header`,
 * `pai-tool-name`, `pai-tool-status`). A custom card wraps its body in it to look and read like the built-in ones.
 */
export function ToolCardFrame({
  part,
  toolId,
  title,
  status,
  className,
  titleExtra,
  children,
}: ToolCardFrameProps): ReactNode {
  return (
    <section
      className={className ? `pai-tool ${className}` : "pai-tool"}
      data-tool-id={toolId}
      data-tool-call-id={part.toolCallId}
      data-status={status.key}
      aria-label={`${title}: ${status.label}`}
    >
      <header className="pai-tool-header">
        <span className="pai-tool-name">
          {title}
          {titleExtra}
        </span>
        <span className="pai-tool-status" data-status={status.key}>
          {status.label}
        </span>
      </header>
      {children}
    </section>
  );
}
