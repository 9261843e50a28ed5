/**
 * A readable title from a tool's registration key: `runScript` → "Run script", `commit_work` → "Commit work".
 * What cards show when neither the part nor `<PaiProvider titles>` names the tool.
 */
export function toolTitleOf(toolName: string): string {
  const words = toolName
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_\-.]+/g, " ")
    .trim()
    .toLowerCase();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : toolName;
}
