import { availableServices, ensureBundles } from "@toolmesh/launcher";
import { repoRoot } from "@toolmesh/testkit";

/**
 * Builds dist/ once before the test files run, when the sources changed since the last build, so
 * every service process a test starts runs the same plain JavaScript the image ships, and no two
 * test workers build at once.
 */
export default function setup(): void {
  ensureBundles(
    repoRoot,
    availableServices(repoRoot).map((s) => s.name),
    (line) => process.stderr.write(`test setup: ${line}\n`),
  );
}
