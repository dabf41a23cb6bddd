import { invalidField } from "@toolmesh/errors";

/** An environment variable name as POSIX shells accept it. */
export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** INVALID_ARGUMENT when a string field is longer than max characters. */
export function maxLength(field: string, value: string, max: number): void {
  if (value.length > max)
    throw invalidField(field, `is ${value.length} characters; at most ${max} allowed`);
}

/** INVALID_ARGUMENT when a repeated or map field has more than max entries. */
export function maxCount(field: string, count: number, max: number): void {
  if (count > max) throw invalidField(field, `has ${count} entries; at most ${max} allowed`);
}
