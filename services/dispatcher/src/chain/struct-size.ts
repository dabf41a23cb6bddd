import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/**
 * The encoded size of a JSON object as a google.protobuf.Struct, counted without encoding it:
 * every call's arguments and output are measured against the record budget, and encoding them
 * for that alone cost a Struct message tree and a buffer a call. Each map entry, list item and
 * Value is a length-delimited field with a one-byte tag (field numbers below 16); a number is a
 * fixed64, null and booleans a one-byte varint, a string its UTF-8 bytes.
 */
export function structSize(object: JsonObject): number {
  let size = 0;
  for (const key in object) {
    if (!Object.hasOwn(object, key)) continue;
    const entry = field(Buffer.byteLength(key)) + field(valueSize(object[key]));
    size += field(entry);
  }
  return size;
}

function valueSize(value: JsonValue | undefined): number {
  switch (typeof value) {
    case "number":
      return 9;
    case "string":
      return field(Buffer.byteLength(value));
    case "boolean":
      return 2;
    case "object":
      if (value === null) return 2;
      if (Array.isArray(value)) {
        let list = 0;
        for (const item of value) list += field(valueSize(item));
        return field(list);
      }
      return field(structSize(value));
    default:
      return 2;
  }
}

/** A length-delimited field of `payload` bytes: its tag, its length and the bytes. */
function field(payload: number): number {
  return 1 + varintSize(payload) + payload;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size++;
  }
  return size;
}
