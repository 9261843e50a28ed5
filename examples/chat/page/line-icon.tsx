import type { ReactNode } from "react";

/** A line icon of the page: the path `d` on a 24-unit grid, stroked in the text's colour, hidden from screen readers. */
export function LineIcon({ d, size = 16 }: { d: string; size?: number }): ReactNode {
  return (
    <svg viewBox="0 0 24 24" width={size} height={size} aria-hidden="true">
      <path
        d={d}
        fill="none"
        stroke="currentColor"
        strokeWidth="2"
        strokeLinecap="round"
        strokeLinejoin="round"
      />
    </svg>
  );
}
