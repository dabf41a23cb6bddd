/**
 * The sum of a metric's samples on a service's /metrics (Prometheus text), over the samples whose
 * labels include `labels`; 0 when it has none.
 */
export async function metricSum(
  serviceUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const text = await (await fetch(`${serviceUrl}/metrics`)).text();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const space = line.lastIndexOf(" ");
    const head = line.slice(0, space);
    if (wanted.every((pair) => head.includes(pair))) sum += Number(line.slice(space + 1));
  }
  return sum;
}
