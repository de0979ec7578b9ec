import { twinFactories } from './registry.ts';

/**
 * The twin catalog: the names `POST /sandboxes` accepts in `twins` and `GET /twins` lists.
 * A name joins only when an official-SDK flow passes against it in our tests (see docs/twins.md).
 */
export interface TwinCatalogEntry {
  name: string;
  description: string;
  /** Names of the environment variables an instance of this twin provides to the deployed app. */
  env_vars: string[];
}

export interface TwinCatalog {
  list(): TwinCatalogEntry[];
  has(name: string): boolean;
}

export function createCatalog(entries: TwinCatalogEntry[]): TwinCatalog {
  const byName = new Map(entries.map((entry) => [entry.name, entry]));
  return {
    list: () => [...byName.values()],
    has: (name) => byName.has(name),
  };
}

/**
 * The catalog Twinbox ships with: every twin of the registry, each of which passes its official-SDK flow in
 * test/twins (docs/twins.md names the client of each).
 */
export const builtInCatalog: TwinCatalog = createCatalog(
  [...twinFactories.values()].map((f) => ({
    name: f.name,
    description: f.description,
    env_vars: [...f.envVarNames],
  })),
);
