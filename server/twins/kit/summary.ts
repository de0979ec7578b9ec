import type { TwinSummary } from '../contract.ts';

/** Rows a summary table shows at most: a state page must stay quick to render and to read. */
export const SUMMARY_ROWS = 50;

type Table = TwinSummary['tables'][number];

/** A table of at most `SUMMARY_ROWS` rows; `rows` come newest first, so the newest are kept. */
export function summaryTable(title: string, columns: string[], rows: string[][]): Table {
  return {
    title,
    columns,
    rows: rows.slice(0, SUMMARY_ROWS),
    omitted: Math.max(0, rows.length - SUMMARY_ROWS),
  };
}

/** A plain object, else undefined: summaries read state they did not write, and must not throw on it. */
export function record(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** A scalar as text ('' for null, undefined, objects). */
export function text(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

/**
 * The items of one collection of an emulate engine snapshot (`{ engine: { collections: { name: { items } } } }`),
 * the state of the GitHub and Slack twins; [] when the snapshot has another shape.
 */
export function engineItems(state: unknown, collection: string): Array<Record<string, unknown>> {
  const collections = record(record(record(state)?.engine)?.collections);
  const items = record(collections?.[collection])?.items;
  return Array.isArray(items)
    ? items.map(record).filter((item): item is Record<string, unknown> => !!item)
    : [];
}

/** Newest first by the engine's `id`, which grows with each insert. */
export function newestFirst(items: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return [...items].sort((a, b) => Number(b.id ?? 0) - Number(a.id ?? 0));
}
