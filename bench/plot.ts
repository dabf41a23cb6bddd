/** One line of the plot: a path's p50 latency at each concurrency. */
export interface Series {
  name: string;
  points: { concurrency: number; p50: number }[];
}

const COLOURS = ["#6b7280", "#2563eb", "#dc2626", "#16a34a", "#9333ea"];

/**
 * p50 latency against concurrency, both axes logarithmic, as a self-contained SVG: the
 * benchmark's results page shows it next to the table.
 */
export function latencyPlot(series: Series[]): string {
  const width = 640;
  const height = 400;
  const margin = { left: 64, right: 16, top: 24, bottom: 96 };
  const all = series.flatMap((s) => s.points).filter((p) => p.p50 > 0);
  if (all.length === 0)
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="40"><text x="8" y="24">no data</text></svg>\n`;
  const log = Math.log10;
  const [cMin, cMax] = [
    Math.min(...all.map((p) => p.concurrency)),
    Math.max(...all.map((p) => p.concurrency)),
  ];
  const [lMin, lMax] = [Math.min(...all.map((p) => p.p50)), Math.max(...all.map((p) => p.p50))];
  const x0 = log(cMin);
  const x1 = Math.max(log(cMax), x0 + 1);
  const y0 = Math.floor(log(lMin));
  const y1 = Math.max(Math.ceil(log(lMax)), y0 + 1);
  const px = (c: number) =>
    margin.left + ((log(c) - x0) / (x1 - x0)) * (width - margin.left - margin.right);
  const py = (ms: number) =>
    height - margin.bottom - ((log(ms) - y0) / (y1 - y0)) * (height - margin.top - margin.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12" role="img" aria-label="p50 latency against concurrency">`,
    "<title>p50 latency against concurrency</title>",
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="16" text-anchor="middle">p50 latency (ms, log) against concurrency (log)</text>`,
  ];
  for (let e = y0; e <= y1; e++) {
    const y = py(10 ** e);
    out.push(
      `<line x1="${margin.left}" x2="${width - margin.right}" y1="${y}" y2="${y}" stroke="#e5e7eb"/>`,
      `<text x="${margin.left - 6}" y="${y + 4}" text-anchor="end">${10 ** e}</text>`,
    );
  }
  for (const c of [...new Set(all.map((p) => p.concurrency))]) {
    const x = px(c);
    out.push(
      `<line x1="${x}" x2="${x}" y1="${margin.top}" y2="${height - margin.bottom}" stroke="#e5e7eb"/>`,
      `<text x="${x}" y="${height - margin.bottom + 16}" text-anchor="middle">${c}</text>`,
    );
  }
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length];
    const points = s.points.filter((p) => p.p50 > 0).sort((a, b) => a.concurrency - b.concurrency);
    out.push(
      `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.map((p) => `${px(p.concurrency).toFixed(1)},${py(p.p50).toFixed(1)}`).join(" ")}"/>`,
      ...points.map(
        (p) =>
          `<circle cx="${px(p.concurrency).toFixed(1)}" cy="${py(p.p50).toFixed(1)}" r="3" fill="${colour}"/>`,
      ),
      `<rect x="${margin.left}" y="${height - margin.bottom + 30 + i * 16}" width="12" height="4" fill="${colour}"/>`,
      `<text x="${margin.left + 18}" y="${height - margin.bottom + 36 + i * 16}">${s.name}</text>`,
    );
  });
  out.push("</svg>");
  return `${out.join("\n")}\n`;
}
