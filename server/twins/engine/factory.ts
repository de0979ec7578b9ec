/**
 * The factory of a twin whose state is the engine's store plus a record of credentials (EngineTwinSaved):
 * every such twin starts the same way, so the steps live here once and each twin's folder gives only what
 * is its own (its descriptor, its credentials, the engine's start seed, its driver, what a new instance adds).
 */
import type { SeedConfig } from 'emulate';
import type { TwinDescriptor, TwinFactory } from '../contract.ts';
import { startEngine, type Engine, type EngineService } from './emulate.ts';
import type { EngineTwin, EngineTwinSaved } from './engine-twin.ts';

/** How an engine twin starts; what it is (its descriptor, whose name is also its engine service) comes apart. */
export interface EngineTwinSpec<Seed, Twin extends EngineTwin> {
  /** A new instance's credentials (env var values and more): persisted, kept by reset and restore. */
  newCredentials(baseUrl: string): Record<string, string>;
  /** The engine's start seed (its token map and the service's config), which its reset re-applies. */
  engineSeed(seed: Seed, credentials: Record<string, string>): unknown;
  /** The twin's driver on the started engine, with any routes of its own added. */
  driver(engine: Engine, baseUrl: string, credentials: Record<string, string>, seed: Seed): Twin;
  /** What a new instance does once started (one restored from its snapshot has it already). */
  fresh?(twin: Twin, seed: Seed): void | Promise<void>;
  /**
   * A snapshot as EngineTwinSaved, for a twin whose saved format was once another: it reads the old one
   * here (once: its next save is EngineTwinSaved). Default: the snapshot is EngineTwinSaved already.
   */
  readSaved?(saved: unknown): EngineTwinSaved;
  /** TwinFactory.prepare: what the next fresh instance needs, made ahead. */
  prepare?(): Promise<void>;
}

export function engineTwinFactory<Seed, Twin extends EngineTwin>(
  descriptor: TwinDescriptor<Seed, EngineService>,
  spec: EngineTwinSpec<Seed, Twin>,
): TwinFactory {
  const { newCredentials, engineSeed, driver, fresh, readSaved, prepare } = spec;
  return {
    ...descriptor,
    ...(prepare && { prepare }),
    async create({ baseUrl, seed: rawSeed, saved: rawSaved }) {
      const seed = descriptor.validateSeed(rawSeed);
      const saved =
        rawSaved == null ? undefined : readSaved ? readSaved(rawSaved) : (rawSaved as EngineTwinSaved);
      const credentials = saved?.credentials ?? newCredentials(baseUrl);
      const engine = await startEngine(descriptor.name, baseUrl, engineSeed(seed, credentials) as SeedConfig);
      const twin = driver(engine, baseUrl, credentials, seed);
      if (saved) twin.restore(saved);
      else await fresh?.(twin, seed);
      return twin;
    },
  };
}

/**
 * `readSaved` for a twin that once saved its credentials in fields of their own beside the engine's state
 * (`{ token, webhook_secret, target, tokens, engine, ... }`): `fields` names the field of each credential,
 * and the snapshot's other fields become `extra`. A snapshot in today's format is returned as it is; one
 * that kept no token map (aws, okta) restores with an empty one.
 */
export function credentialFieldsSaved(fields: Record<string, string>): (saved: unknown) => EngineTwinSaved {
  return (saved) => {
    if (!saved || typeof saved !== 'object' || 'credentials' in saved) return saved as EngineTwinSaved;
    const { target, tokens, engine, ...extra } = saved as Omit<EngineTwinSaved, 'credentials' | 'extra'> &
      Record<string, unknown>;
    const credentials: Record<string, string> = {};
    for (const [name, field] of Object.entries(fields)) {
      credentials[name] = String(extra[field]);
      delete extra[field];
    }
    return { credentials, target, tokens: tokens ?? [], engine, extra };
  };
}
