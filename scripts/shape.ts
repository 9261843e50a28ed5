// `npm run shape`: the house's shape in numbers — the ten longest functions and classes and the ten longest files
// of the packages' sources (tests, benchmarks, examples and C left out), and how many pass the limits a newcomer
// can still read: a function or class of at most 250 lines, a file of at most 600.
//   node scripts/shape.ts [--json]
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import ts from "typescript";

/** The limits the house keeps. */
export const shapeLimits = { functionLines: 250, fileLines: 600 } as const;

const root = join(import.meta.dirname, "..");
const sourceRoots = ["errors/src", "core/src", "pool/src", "capabilities", "react/src", "mcp/src"];

/** A function or class of a source file, with the lines it spans. */
export interface ShapeUnit {
  file: string;
  name: string;
  lines: number;
}

export interface Shape {
  files: { file: string; lines: number }[];
  units: ShapeUnit[];
}

function isSource(path: string): boolean {
  return (
    /\.tsx?$/.test(path) &&
    !/\.test(-d)?\.tsx?$/.test(path) &&
    !path.endsWith(".d.ts") &&
    !/\/(node_modules|dist|scripts|prebuilt)\//.test(path)
  );
}

async function* sourceFiles(directory: string): AsyncGenerator<string> {
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      if (!["node_modules", "dist", "scripts", "prebuilt", "native"].includes(entry.name))
        yield* sourceFiles(path);
    } else if (isSource(path)) {
      yield path;
    }
  }
}

/** The name a function or class is known by: its own, or the variable, property or method it is assigned to. */
function nameOf(node: ts.Node, source: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) return named.name.getText(source);
  const parent = node.parent;
  if (
    ts.isVariableDeclaration(parent) ||
    ts.isPropertyAssignment(parent) ||
    ts.isPropertyDeclaration(parent)
  ) {
    return parent.name.getText(source);
  }
  return `(anonymous at line ${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1})`;
}

function unitsOf(file: string, text: string): ShapeUnit[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const units: ShapeUnit[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isFunctionLike(node) && "body" in node && node.body !== undefined) || ts.isClassLike(node)) {
      const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      units.push({ file, name: nameOf(node, source), lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return units;
}

/** Measures the packages' sources. */
export async function measureShape(): Promise<Shape> {
  const shape: Shape = { files: [], units: [] };
  for (const sourceRoot of sourceRoots) {
    for await (const path of sourceFiles(join(root, sourceRoot))) {
      const file = relative(root, path);
      const text = await readFile(path, "utf8");
      shape.files.push({ file, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) });
      shape.units.push(...unitsOf(file, text));
    }
  }
  shape.files.sort((a, b) => b.lines - a.lines);
  shape.units.sort((a, b) => b.lines - a.lines);
  return shape;
}

if (import.meta.main) {
  const shape = await measureShape();
  if (process.argv.includes("--json")) {
    console.log(JSON.stringify(shape, null, 2));
  } else {
    console.log("Longest functions and classes:");
    for (const unit of shape.units.slice(0, 10))
      console.log(`  ${String(unit.lines).padStart(5)}  ${unit.name}  (${unit.file})`);
    console.log("Longest files:");
    for (const file of shape.files.slice(0, 10))
      console.log(`  ${String(file.lines).padStart(5)}  ${file.file}`);
    const longUnits = shape.units.filter((unit) => unit.lines > shapeLimits.functionLines).length;
    const longFiles = shape.files.filter((file) => file.lines > shapeLimits.fileLines).length;
    console.log(
      `${longUnits} functions or classes over ${shapeLimits.functionLines} lines, ` +
        `${longFiles} files over ${shapeLimits.fileLines} lines (of ${shape.files.length} source files)`,
    );
  }
}
