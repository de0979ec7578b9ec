import { KeyedLock } from '../../keyed-lock.ts';
import { mkdir } from 'node:fs/promises';
import type { TwinFactory } from '../contract.ts';
import { TwinInputError } from '../contract.ts';
import { TwinInstance, type Logger, type TwinEntry } from './instance.ts';
import { purgeSandbox, readSandbox } from './persistence.ts';
import { sha256Hex } from './secrets.ts';
import { twinSocketPath } from './paths.ts';

export type { TwinEntry } from './instance.ts';

export { TwinInputError } from '../contract.ts';

export interface TwinHostOptions {
  /** Persistent directory for twin state, e.g. `<TWINBOX_DATA_DIR>/twins`. */
  dataDir: string;
  /** Host name put in `base_url` / `admin_url`, e.g. `127.0.0.1`. */
  publicHost: string;
  /** Address instances listen on; defaults to `publicHost`. */
  bindHost?: string;
  logger?: Logger;
  /**
   * Twin implementations by name, from the caller (the registry's `twinFactories`, or a test's own): the
   * runtime knows no vendor.
   */
  factories: ReadonlyMap<string, TwinFactory>;
  /** Largest request body an instance reads (TWINBOX_TWIN_BODY_BYTES); default 1 MiB. */
  bodyLimitBytes?: number;
  /** Each instance also listens on `<socketDir>/twin-<name>.sock` (a sandbox pod hosts one sandbox). */
  socketDir?: string;
  /** false: changes are snapshotted after the answer, not journalled before it (bench/twins only). */
  durableWrites?: boolean;
  /**
   * Each twin's own URL is its public URL (`publicUrls`), not its loopback address: in a sandbox pod
   * whose front door answers the public URLs inside the sandbox too (server/pod/front-door.ts).
   */
  publicBase?: boolean;
  /**
   * false: no twin's `prepare` after a start (TwinFactory.prepare). A sandbox pod serves one sandbox and
   * prepares once, in its spare's warm-up. Default: after each start, for the next.
   */
  makeAhead?: boolean;
}

export interface StartTwinsOptions {
  /** The sandbox's admin token; the admin API of its instances accepts only this bearer token. */
  adminToken: string;
  /** Seed document per twin name (see docs/twins.md for each twin's seed shape). */
  seeds?: Record<string, unknown>;
  /** Per twin name, where browsers reach it when not at its own base URL (the router's URL). */
  publicUrls?: Record<string, string>;
}

/**
 * Runs the twin instances of every sandbox: one instance per (sandbox, twin), each on its own loopback
 * port with its own state, so sandboxes never see each other's data.
 */
export class TwinHost {
  private readonly sandboxes = new Map<string, Map<string, TwinInstance>>();
  /** Serialises start/stop per sandbox so a stop cannot race a start that is still seeding. */
  private readonly locks = new KeyedLock();
  private readonly factories: ReadonlyMap<string, TwinFactory>;

  constructor(private readonly opts: TwinHostOptions) {
    this.factories = opts.factories;
  }

  private factory(name: string): TwinFactory {
    const factory = this.factories.get(name);
    if (!factory) throw new TwinInputError(400, `unknown twin: ${name}`);
    return factory;
  }

  /**
   * Starts (or returns the running) instances of the named twins for a sandbox. Seeds are validated
   * before anything starts, so bad input fails with TwinInputError (status 400) and starts nothing.
   */
  start(sandboxId: string, names: string[], opts: StartTwinsOptions): Promise<Record<string, TwinEntry>> {
    if (!opts.adminToken) return Promise.reject(new TwinInputError(400, 'adminToken is required'));
    const unique = [...new Set(names)];
    const seeds = new Map<string, unknown>();
    try {
      for (const name of unique) seeds.set(name, this.factory(name).validateSeed(opts.seeds?.[name]));
    } catch (error) {
      return Promise.reject(error);
    }
    return this.locks.run(sandboxId, async () => {
      await mkdir(this.opts.dataDir, { recursive: true, mode: 0o700 });
      const running = this.sandboxes.get(sandboxId) ?? new Map<string, TwinInstance>();
      this.sandboxes.set(sandboxId, running);
      const adminTokenHash = sha256Hex(opts.adminToken);
      const started: TwinInstance[] = [];
      try {
        await Promise.all(
          unique
            .filter((name) => !running.has(name))
            .map(async (name) => {
              const instance = await TwinInstance.start({
                factory: this.factory(name),
                sandboxId,
                dataDir: this.opts.dataDir,
                bindHost: this.opts.bindHost ?? this.opts.publicHost,
                publicHost: this.opts.publicHost,
                port: 0,
                adminTokenHash,
                seed: seeds.get(name),
                logger: this.opts.logger,
                socketPath: this.socketPath(name),
                bodyLimitBytes: this.opts.bodyLimitBytes,
                publicUrl: opts.publicUrls?.[name],
                publicBase: this.opts.publicBase,
                durableWrites: this.opts.durableWrites,
              });
              started.push(instance);
              running.set(name, instance);
            }),
        );
      } catch (error) {
        // All or nothing: a sandbox never keeps half of the twins it asked for.
        await Promise.allSettled(started.map((i) => i.stop()));
        for (const i of started) running.delete(i.name);
        if (running.size === 0) this.sandboxes.delete(sandboxId);
        throw error;
      }
      this.opts.logger?.info({ sandbox_id: sandboxId, twins: unique }, 'twins started');
      if (this.opts.makeAhead !== false)
        for (const name of unique)
          void this.factory(name)
            .prepare?.()
            .catch(() => {});
      return this.entries(running, unique);
    });
  }

  private socketPath(name: string): string | undefined {
    return this.opts.socketDir ? twinSocketPath(this.opts.socketDir, name) : undefined;
  }

  private entries(running: Map<string, TwinInstance>, names?: string[]): Record<string, TwinEntry> {
    const out: Record<string, TwinEntry> = {};
    for (const [name, instance] of running) if (!names || names.includes(name)) out[name] = instance.entry();
    return out;
  }

  /** The running instances of a sandbox, or undefined when it has none. */
  get(sandboxId: string): Record<string, TwinEntry> | undefined {
    const running = this.sandboxes.get(sandboxId);
    return running && running.size ? this.entries(running) : undefined;
  }

  /** Stops a sandbox's instances and frees their ports; `purge` also deletes their persisted state. */
  stop(sandboxId: string, opts: { purge?: boolean } = {}): Promise<void> {
    return this.locks.run(sandboxId, async () => {
      const running = this.sandboxes.get(sandboxId);
      this.sandboxes.delete(sandboxId);
      if (running) await Promise.allSettled([...running.values()].map((i) => i.stop()));
      if (opts.purge) await purgeSandbox(this.opts.dataDir, sandboxId);
    });
  }

  /**
   * After a restart: brings back each sandbox's instances from their state files, on their previous ports
   * when free (else new ports: read the URLs again with get()). Sandboxes without state are skipped.
   */
  async restore(sandboxIds: string[]): Promise<void> {
    await Promise.all(
      sandboxIds.map((sandboxId) =>
        this.locks.run(sandboxId, async () => {
          const restored = await readSandbox(this.opts.dataDir, sandboxId);
          const running = this.sandboxes.get(sandboxId) ?? new Map<string, TwinInstance>();
          for (const { record, replayed, problem } of restored) {
            if (problem) {
              this.opts.logger?.warn(
                { sandbox_id: sandboxId, twin: record.twin, replayed, problem },
                'twin journal replay stopped early',
              );
            }
            const factory = this.factories.get(record.twin);
            if (!factory || running.has(record.twin)) continue;
            try {
              const instance = await TwinInstance.start({
                factory,
                sandboxId,
                dataDir: this.opts.dataDir,
                bindHost: this.opts.bindHost ?? this.opts.publicHost,
                publicHost: this.opts.publicHost,
                port: record.port,
                adminTokenHash: record.admin_token_sha256,
                seed: record.seed,
                saved: record.state,
                logger: this.opts.logger,
                socketPath: this.socketPath(record.twin),
                bodyLimitBytes: this.opts.bodyLimitBytes,
                publicUrl: record.public_url,
                publicBase: this.opts.publicBase,
                durableWrites: this.opts.durableWrites,
              });
              running.set(record.twin, instance);
            } catch (error) {
              this.opts.logger?.error(
                { err: error, sandbox_id: sandboxId, twin: record.twin },
                'twin restore failed',
              );
            }
          }
          if (running.size) this.sandboxes.set(sandboxId, running);
        }),
      ),
    );
  }

  /**
   * The running instance a request for `hostname` belongs to: a twin whose vendor hosts (TwinFactory.hosts)
   * or public URL name it. Only this host's instances are looked at; a pod hosts one sandbox, so another
   * sandbox's twins are never found here.
   */
  byHost(hostname: string): TwinInstance | undefined {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    for (const running of this.sandboxes.values()) {
      for (const instance of running.values()) if (instance.answersFor(name)) return instance;
    }
    return undefined;
  }

  /** The public URLs of the running instances (the ports a pod's front door must answer on). */
  publicUrls(): string[] {
    const urls: string[] = [];
    for (const running of this.sandboxes.values())
      for (const instance of running.values()) if (instance.publicUrl) urls.push(instance.publicUrl);
    return urls;
  }

  /** Every host name (or `*` pattern) the running instances answer for: the names its certificate covers. */
  hostNames(): string[] {
    const names = new Set<string>();
    for (const running of this.sandboxes.values())
      for (const instance of running.values()) for (const host of instance.hostNames()) names.add(host);
    return [...names];
  }

  /** Stops every instance (server shutdown); state stays on disk for restore(). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.sandboxes.keys()].map((id) => this.stop(id)));
  }
}
