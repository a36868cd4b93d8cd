/**
 * Sets `obj[key] = value` as an own property, whatever the key. Assignment to `__proto__` changes
 * the object's prototype instead of making a property, so a map keyed by user text (an HTTP header
 * named `__proto__`, which JSON and YAML both read as an ordinary key) lost that entry when copied
 * key by key.
 */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/** `obj[key]` when it is the object's own property; an inherited name (`constructor`) reads as absent. */
export function getOwn(obj: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}
