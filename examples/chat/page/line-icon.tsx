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

/** A pencil: rename, edit. */
export function PencilIcon(): ReactNode {
  return <LineIcon d="M4 20h4L19 9l-4-4L4 16v4zM14 6l4 4" />;
}

/** A circular arrow: reload, regenerate. */
export function ReloadIcon(): ReactNode {
  return <LineIcon d="M20 12a8 8 0 1 1-2.34-5.66M20 4v5h-5" />;
}
