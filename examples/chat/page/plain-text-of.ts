/**
 * Markdown as the words it renders to, without its syntax: what the page shows in the markdown's place until the
 * renderer has loaded, so `**bold**`, `# Heading` or a code fence never flash on screen. Block structure stays
 * (one line per line); emphasis, heading and quote marks, fences, and link targets go.
 */
export function plainTextOf(markdown: string): string {
  return markdown
    .split("\n")
    .filter((line) => !/^\s*(`{3,}|~{3,})/.test(line))
    .map((line) =>
      line
        .replace(/^\s{0,3}#{1,6}\s+/, "")
        .replace(/^\s{0,3}>\s?/, "")
        .replace(/^(\s*)[-*+]\s+/, "$1• ")
        .replace(/^\s{0,3}([-*_])(\s*\1){2,}\s*$/, "")
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
        .replace(/(\*\*|__)(?=\S)|(?<=\S)(\*\*|__)/g, "")
        .replace(/(?<![\w*])[*_](?=\S)|(?<=\S)[*_](?![\w*])/g, "")
        .replace(/`+/g, ""),
    )
    .join("\n");
}
