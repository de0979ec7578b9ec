/**
 * A map bounded in entries and in size (each entry's size given as it is set), the least recently used
 * going first: what a twin keeps of its answers between calls (engine/kept-answers.ts, Stripe's stored
 * objects' JSON). An entry larger than the whole size bound is not kept.
 */
export class BoundedLru<V> {
  private readonly entries = new Map<string, { value: V; size: number }>();
  private size = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxSize: number,
  ) {}

  /** The value kept for `key`, which becomes the most recently used; undefined when none is. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Keeps `value` for `key` (in place of what was), then drops the least recently used past the bounds. */
  set(key: string, value: V, size: number): void {
    if (size > this.maxSize) return;
    this.delete(key);
    this.entries.set(key, { value, size });
    this.size += size;
    for (const [oldest] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.size <= this.maxSize) break;
      this.delete(oldest);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.size -= entry.size;
  }
}
