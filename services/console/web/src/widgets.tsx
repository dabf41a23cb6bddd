import { useCallback, useEffect, useState } from "preact/hooks";
import { describeError } from "./api.js";

/** A table's header row. */
export function Head({ columns }: { columns: string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c, i) => (
          <th key={`${c}-${i}`}>{c}</th>
        ))}
      </tr>
    </thead>
  );
}

/** A one-line text input bound to a state setter. */
export function Field(props: {
  name: string;
  placeholder: string;
  value: string;
  onValue: (value: string) => void;
}) {
  return (
    <input
      name={props.name}
      placeholder={props.placeholder}
      value={props.value}
      onInput={(e) => props.onValue((e.target as HTMLInputElement).value)}
    />
  );
}

/**
 * A page's load and its actions: `load` runs at mount and again after each action; what fails
 * is described in `error` (cleared when an action starts).
 */
export function usePageActions(load: () => Promise<void>) {
  const [error, setError] = useState("");
  const reload = useCallback(() => {
    load().catch((e: unknown) => setError(describeError(e)));
  }, []);
  useEffect(reload, []);
  const act = (work: () => Promise<unknown>) => () => {
    setError("");
    work().then(reload, (e: unknown) => setError(describeError(e)));
  };
  return { error, act };
}
