import { existsSync, readFileSync } from 'node:fs';
import { twinDescriptors } from './descriptors.ts';

/**
 * The twin catalog: the names `POST /sandboxes` accepts in `twins` and `GET /twins` lists.
 * A name joins only when an official-SDK flow passes against it in our tests (see docs/twins.md).
 */
export interface TwinCatalogEntry {
  name: string;
  description: string;
  /** Names of the environment variables an instance of this twin provides to the deployed app. */
  env_vars: string[];
  /** The vendor's host names that reach this twin inside a sandbox (TwinDescriptor.hosts). */
  hosts: string[];
  /**
   * What the twin supports: the vendor operations it serves (`POST /emails`, Slack's `/chat.postMessage`),
   * as its vendored API description lists them; empty for a twin that has none yet.
   */
  operations: string[];
  /** The vendor description its answers are checked against in our tests, or null when there is none. */
  schema_source: TwinSchemaSource | null;
}

export interface TwinSchemaSource {
  /** The description's title, as its `source.json` records it. */
  name: string;
  /** The description's version: its package or API version, else the commit it was taken from. */
  version: string | null;
  /** Where it is published. */
  url: string | null;
}

/** An entry as a caller builds it: what the twin supports may be left out (none known). */
export type TwinCatalogInput = Omit<TwinCatalogEntry, 'operations' | 'schema_source' | 'hosts'> &
  Partial<Pick<TwinCatalogEntry, 'operations' | 'schema_source' | 'hosts'>>;

export interface TwinCatalog {
  list(): TwinCatalogEntry[];
  has(name: string): boolean;
}

export function createCatalog(entries: TwinCatalogInput[]): TwinCatalog {
  const byName = new Map(
    entries.map((entry) => [entry.name, { operations: [], schema_source: null, hosts: [], ...entry }]),
  );
  return {
    list: () => [...byName.values()],
    has: (name) => byName.has(name),
  };
}

interface VendorSourceFile {
  title?: string;
  vendor?: string;
  version?: string;
  sdk_version?: string;
  commit?: string;
  url?: string;
  operations?: string[];
}

/** A twin's own record of what it serves, `server/twins/vendors/<name>/catalog.json`. */
interface TwinCatalogFile {
  operations: string[];
  schema_source: TwinSchemaSource;
}

/**
 * A twin's record of what it supports, read by name so that this file knows no twin: its `catalog.json`
 * where its vendor's description comes from a fetched repository (that description is not shipped: it is
 * in `../shared/vendor-schemas/`, for the tests), else its committed description's `vendor-schema/source.json`.
 * Looked up beside this module, and from a build (`build/server/twins/`) in the source tree, which the build
 * does not copy JSON into.
 */
function vendorSource(name: string): VendorSourceFile | undefined {
  for (const base of ['./vendors/', '../../../server/twins/vendors/']) {
    const own = new URL(`${base}${name}/catalog.json`, import.meta.url);
    if (existsSync(own)) {
      const entry = JSON.parse(readFileSync(own, 'utf8')) as TwinCatalogFile;
      const { name: title, version, url } = entry.schema_source;
      return { title, url: url ?? undefined, version: version ?? undefined, operations: entry.operations };
    }
    const file = new URL(`${base}${name}/vendor-schema/source.json`, import.meta.url);
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as VendorSourceFile;
  }
  return undefined;
}

/** What a twin supports, from its vendored description record (none: no operations, no source). */
export function twinSupport(name: string): Pick<TwinCatalogEntry, 'operations' | 'schema_source'> {
  const source = vendorSource(name);
  if (!source) return { operations: [], schema_source: null };
  return {
    operations: [...(source.operations ?? [])],
    schema_source: {
      name: source.title ?? source.vendor ?? name,
      version: source.version ?? source.sdk_version ?? source.commit ?? null,
      url: source.url ?? null,
    },
  };
}

/**
 * The catalog Twinbox ships with: every twin of the registry, each of which passes its official-SDK flow in
 * test/twins (docs/twins.md names the client of each).
 */
export const builtInCatalog: TwinCatalog = createCatalog(
  [...twinDescriptors.values()].map((f) => ({
    name: f.name,
    description: f.description,
    env_vars: [...f.envVarNames],
    hosts: [...f.hosts],
    ...twinSupport(f.name),
  })),
);
