import type { TwinFactory } from './contract.ts';
import { twinDescriptors } from './descriptors.ts';

/**
 * The twins of registry.ts, each loaded on its first use: the pods' list (server/pod/main.ts). A pod runs
 * the few twins its sandbox names, and evaluating all fourteen (GraphQL, the vendors' shapes) took every
 * pod start ~230 ms of CPU before it could answer. Each folder's `twin.ts` exports its factory as
 * `<name>Twin` (the shape every vendor folder has); the pod bundle puts each in a chunk of its own
 * (deploy/pods/pod-bundle.ts). test/twins/loaders.test.ts holds this list to registry.ts.
 */
const loading = new Map<string, Promise<TwinFactory>>();

/** The names a pod can run: every twin with a descriptor. */
export const twinNames: readonly string[] = [...twinDescriptors.keys()];

/** The factory of twin `name`, loaded once; undefined for a name no twin has. */
export function loadTwin(name: string): Promise<TwinFactory> | undefined {
  // Only a known name reaches the import below, so a request cannot name another module.
  if (!twinDescriptors.has(name)) return undefined;
  let loaded = loading.get(name);
  if (!loaded) {
    loaded = import(`./vendors/${name}/twin.ts`).then((module: Record<string, unknown>) => {
      const factory = module[`${name}Twin`] as TwinFactory | undefined;
      if (factory?.name !== name)
        throw new Error(`server/twins/vendors/${name}/twin.ts exports no ${name}Twin`);
      return factory;
    });
    loading.set(name, loaded);
    // A failed load is tried again by the next caller.
    loaded.catch(() => loading.delete(name));
  }
  return loaded;
}

/** Loads the named twins that exist into `into` (names no twin has are left for the caller to refuse). */
export async function loadTwins(names: Iterable<string>, into: Map<string, TwinFactory>): Promise<void> {
  await Promise.all(
    [...new Set(names)].map(async (name) => {
      const factory = await loadTwin(name);
      if (factory) into.set(name, factory);
    }),
  );
}
