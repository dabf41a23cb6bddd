// npm run lint's layering check: the rules of .dependency-cruiser.cjs over services/ and libs/
// (no import loops, services apart, libs below services, the Dispatcher's layers), then the
// Dispatcher's import levels counted between the top-level entries of services/dispatcher/src.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cruise, format, type ICruiseResult } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import extractTsConfig from "dependency-cruiser/config-utl/extract-ts-config";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
process.chdir(root);

/** The most levels of imports between the Dispatcher's top-level files and folders. */
const MAX_LEVELS = 8;
/** The most imports that point from a lower level to a higher one. */
const MAX_UPWARD = 3;
const DISPATCHER = "services/dispatcher/src/";

const options = await extractDepcruiseOptions("./.dependency-cruiser.cjs");
const tsConfig = extractTsConfig("tsconfig.json");
const { output } = await cruise(
  ["services", "libs", "test", "bench", "scripts"],
  { ...options, validate: true },
  undefined,
  { tsConfig },
);
const result = output as ICruiseResult;
const violations = result.summary.violations.filter((v) => v.rule.severity === "error");
if (violations.length > 0) {
  process.stderr.write(String((await format(result, { outputType: "err" })).output));
}

const levels = importLevels(result);
process.stdout.write(
  `layers: ${result.summary.totalCruised} modules, ${violations.length} rule violations; the Dispatcher's ${levels.nodes} top-level entries stand on ${levels.levels} levels of imports (${levels.imports} imports, ${levels.upward} pointing upward; at most ${MAX_LEVELS} and ${MAX_UPWARD})\n`,
);
for (const edge of levels.upwardEdges) process.stderr.write(`  upward import: ${edge}\n`);
if (violations.length > 0 || levels.levels > MAX_LEVELS || levels.upward > MAX_UPWARD) {
  process.exit(1);
}

/**
 * Levels of imports between the top-level files and folders of the Dispatcher: an entry that
 * imports nothing of the others is level 1, any other one level above the highest it imports.
 * An import found closing a loop (depth-first from main) points upward; it is counted and
 * skipped, so the levels are those of what is left.
 */
function importLevels(cruised: ICruiseResult) {
  const entry = (source: string) =>
    source.slice(DISPATCHER.length).split("/")[0]?.replace(/\.ts$/, "") ?? "";
  const edges = new Map<string, Map<string, number>>();
  let imports = 0;
  for (const module of cruised.modules) {
    if (!module.source.startsWith(DISPATCHER)) continue;
    const from = entry(module.source);
    if (!edges.has(from)) edges.set(from, new Map());
    for (const dependency of module.dependencies) {
      if (!dependency.resolved.startsWith(DISPATCHER)) continue;
      const to = entry(dependency.resolved);
      if (to === from) continue;
      imports++;
      const targets = edges.get(from) as Map<string, number>;
      targets.set(to, (targets.get(to) ?? 0) + 1);
    }
  }
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const upwardEdges: string[] = [];
  let upward = 0;
  const visit = (node: string): number => {
    const known = level.get(node);
    if (known !== undefined) return known;
    visiting.add(node);
    let own = 1;
    for (const [to, count] of edges.get(node) ?? []) {
      if (visiting.has(to)) {
        upward += count;
        upwardEdges.push(`${node} → ${to} (${count})`);
        continue;
      }
      own = Math.max(own, visit(to) + 1);
    }
    visiting.delete(node);
    level.set(node, own);
    return own;
  };
  const nodes = [...edges.keys()].sort((a, b) => (a === "main" ? -1 : b === "main" ? 1 : 0));
  for (const node of nodes) visit(node);
  return {
    nodes: nodes.length,
    imports,
    levels: Math.max(0, ...level.values()),
    upward,
    upwardEdges,
  };
}
