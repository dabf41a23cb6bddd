import { useEffect, useState } from "preact/hooks";
import { Head } from "../widgets.js";

interface ServiceHealth {
  service: string;
  url: string;
  status: string;
  ms?: number;
  error?: string;
}

/** Each service's grpc.health.v1 status, as the console's process sees it. */
export function HealthPage() {
  const [services, setServices] = useState<ServiceHealth[]>([]);
  const [error, setError] = useState("");
  useEffect(() => {
    const load = () =>
      fetch("/api/health")
        .then((r) => r.json() as Promise<ServiceHealth[]>)
        .then(setServices, (e: unknown) => setError(String(e)));
    load();
    const timer = setInterval(load, 5000);
    return () => clearInterval(timer);
  }, []);
  return (
    <section>
      <h2>Service health</h2>
      {error && <p class="error">{error}</p>}
      <table>
        <Head columns={["service", "url", "status", "ms"]} />
        <tbody>
          {services.map((s) => (
            <tr key={s.service}>
              <td>{s.service}</td>
              <td>{s.url}</td>
              <td>
                <span class={`status ${s.status === "SERVING" ? "success" : "failure"}`}>
                  {s.status}
                </span>
              </td>
              <td>{s.ms ?? "-"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
