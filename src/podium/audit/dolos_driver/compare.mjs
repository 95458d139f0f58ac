// podium's driver for Dolos: reads {"paths": [...], "focus": [...], "fragments": bool} on stdin,
// analyses the files with dolos-lib's default options, and writes every pair of report.allPairs()
// (with "focus": only pairs with exactly one side among those paths) as JSON on stdout:
// {"dolos": VERSION, "node": VERSION, "pairs": [{"left", "right", "similarity", "fragments": [...]}]}.
// Rows in fragments are tree-sitter's (0-based); podium adds one.
import { readFileSync } from "node:fs";
import { Dolos } from "@dodona/dolos-lib";

const request = JSON.parse(readFileSync(0, "utf8"));
const dolos = new Dolos();
const report = await dolos.analyzePaths(request.paths);
const version = JSON.parse(
  readFileSync(new URL("./node_modules/@dodona/dolos-lib/package.json", import.meta.url), "utf8"),
).version;

const focus = request.focus ? new Set(request.focus) : null;
const chosen = report
  .allPairs()
  .filter((pair) => !focus || focus.has(pair.leftFile.path) !== focus.has(pair.rightFile.path));
const pairs = chosen.map((pair) => ({
  left: pair.leftFile.path,
  right: pair.rightFile.path,
  similarity: pair.similarity,
  fragments: request.fragments === false ? [] : pair.buildFragments().map((fragment) => ({
    left: [fragment.leftSelection.startRow, fragment.leftSelection.endRow],
    right: [fragment.rightSelection.startRow, fragment.rightSelection.endRow],
  })),
}));
process.stdout.write(JSON.stringify({ dolos: version, node: process.version, pairs, warnings: report.warnings }));
