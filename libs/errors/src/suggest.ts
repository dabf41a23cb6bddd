/** Levenshtein distance: the fewest single-character edits that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] ?? 0;
      row[j] = Math.min(
        current + 1,
        (row[j - 1] ?? 0) + 1,
        previous + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      previous = current;
    }
  }
  return row[b.length] ?? 0;
}

/** Every candidate, nearest to `requested` first (ties by name). */
export function byNearness(requested: string, candidates: Iterable<string>): string[] {
  // Distances of very long names are not worth their quadratic cost; they sort last.
  const measure = (name: string) =>
    requested.length > 256 || name.length > 256
      ? Number.MAX_SAFE_INTEGER
      : editDistance(requested, name);
  return [...candidates]
    .map((name) => ({ name, distance: measure(name) }))
    .sort((a, b) => a.distance - b.distance || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((s) => s.name);
}

/**
 * Up to five candidates close enough to `requested` to be what the caller meant: a few edits
 * away, or containing it (or contained in it).
 */
export function nearNames(requested: string, candidates: Iterable<string>): string[] {
  const close = (name: string) =>
    editDistance(requested, name) <= Math.max(2, Math.floor(requested.length / 3)) ||
    (requested.length >= 3 && (name.includes(requested) || requested.includes(name)));
  return byNearness(
    requested,
    [...candidates].filter((name) => requested.length <= 256 && name.length <= 256 && close(name)),
  ).slice(0, 5);
}

/**
 * The hint after "not found": "did you mean a, b?" when a candidate is close, otherwise where to
 * look (`see ListTools for the tools available to you`), or that nothing is available.
 */
export function didYouMean(requested: string, candidates: string[], plural: string): string {
  if (candidates.length === 0) return `no ${plural} are available to you`;
  const near = nearNames(requested, candidates);
  if (near.length > 0) return `did you mean ${near.join(", ")}?`;
  const listRpc = `List${plural[0]?.toUpperCase()}${plural.slice(1)}`;
  return `see ${listRpc} for the ${plural} available to you`;
}
