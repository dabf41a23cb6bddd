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
