import type { Logger } from 'pino';
import type { SandboxRecord } from '../store/records.ts';
import type { TwinAdminReach, TwinHolder } from '../twins/kit/admin-client.ts';
import type { RequestLogEntry } from '../twins/runtime/request-log.ts';
import type { WebhookDelivery } from '../twins/runtime/webhooks.ts';

/** What a twin's admin API tells of its traffic. */
export interface TwinLog {
  /** Request log entries after the id asked for, oldest first. */
  calls: RequestLogEntry[];
  /** The newest id in the whole log (0 when empty): lower than a reader's position means it restarted. */
  lastId: number;
  /** Every delivery the twin keeps (at most 200). */
  deliveries: WebhookDelivery[];
  /** Read from the copy taken when the sandbox ended, not from a running twin. */
  archived?: boolean;
}

interface ArchivedTwin {
  calls: RequestLogEntry[];
  lastId: number;
  deliveries: WebhookDelivery[];
}

export interface TwinLogsOptions {
  /** A client of a sandbox's twin wherever the sandbox runs; undefined while it runs nowhere reachable. */
  reach: TwinAdminReach;
  /** Twins to look for when a sandbox ends (its record may not list twins its profile added). */
  twinNames: readonly string[];
  logger: Logger;
  /** Per admin call (default 5 s). */
  timeoutMs?: number;
  /** Ended sandboxes whose twin logs are kept in memory (default 200); the oldest go first. */
  archivedSandboxes?: number;
}

/**
 * Reads the request logs and webhook deliveries of a sandbox's twins through their admin API, wherever
 * the sandbox runs (`reach`: the pod's Unix sockets here, or the runner holding it). A sandbox's twins
 * stop with it, so their logs are copied into memory as it ends (archive), and read from there
 * afterwards, until Twinbox restarts.
 */
export class TwinLogs {
  private readonly archives = new Map<string, Promise<Map<string, ArchivedTwin>>>();

  constructor(private readonly options: TwinLogsOptions) {}

  /** The twin's log after `afterId` (at most `limit` calls), or why it cannot be read. */
  async read(
    sandbox: SandboxRecord,
    twin: string,
    afterId: number,
    limit: number,
  ): Promise<TwinLog | { unavailable: string }> {
    // An ended sandbox's twins stopped with it (or are stopping, on whichever runner held it): its log
    // is the copy taken as it ended, if any.
    const ended = sandbox.status === 'failed' || sandbox.status === 'expired' || sandbox.status === 'deleted';
    const client = ended ? undefined : await this.reachOf(sandbox, twin);
    if (client) {
      try {
        const [page, hooks] = await Promise.all([
          client.requestPage({ after: afterId, limit }),
          client.webhooks(),
        ]);
        return { calls: page.requests, lastId: page.last_id, deliveries: hooks.deliveries };
      } catch (error) {
        // An ending sandbox's twin can go between the lookup and the call: the archive may have it.
        const archived = await this.fromArchive(sandbox.id, twin, afterId, limit);
        if (archived) return archived;
        // Routine while a sandbox starts or stops, so not a warning; the reason stays in Twinbox's log
        // (it names socket paths and runner addresses, which are not the owner's business).
        this.options.logger.debug(
          { err: error, sandbox_id: sandbox.id, twin },
          'timeline: twin not readable',
        );
        return { unavailable: `The ${twin} twin did not answer (it may be starting or stopping).` };
      }
    }
    const archived = await this.fromArchive(sandbox.id, twin, afterId, limit);
    if (archived) return archived;
    return {
      unavailable:
        sandbox.status === 'queued' || sandbox.status === 'building'
          ? `The ${twin} twin is not running yet.`
          : `The ${twin} twin stopped with the sandbox, and Twinbox kept no copy of its log (it ended before Twinbox last started, or before its twins answered).`,
    };
  }

  /** Settles once the copy of this sandbox's twin logs, if one was started, is taken. */
  async copied(sandboxId: string): Promise<void> {
    await this.archives.get(sandboxId);
  }

  /** Twin names with an archived log for this sandbox. */
  async archivedNames(sandboxId: string): Promise<string[]> {
    const archive = this.archives.get(sandboxId);
    return archive ? [...(await archive).keys()] : [];
  }

  /**
   * Copies the logs of every twin of a sandbox that is about to stop. Called synchronously from the
   * event that announces the end (the pod is stopped right after), so the requests leave at once.
   */
  archive(sandbox: TwinHolder): void {
    const sandboxId = sandbox.id;
    if (this.archives.has(sandboxId)) return;
    const copies = this.options.twinNames.map(async (twin): Promise<[string, ArchivedTwin] | undefined> => {
      const client = await this.reachOf(sandbox, twin);
      if (!client) return undefined;
      try {
        const [page, hooks] = await Promise.all([client.requestPage({}), client.webhooks()]);
        return [twin, { calls: page.requests, lastId: page.last_id, deliveries: hooks.deliveries }];
      } catch {
        // No such twin in this sandbox, or it is already gone.
        return undefined;
      }
    });
    const archive = Promise.all(copies).then(
      (found) => new Map(found.filter((entry): entry is [string, ArchivedTwin] => entry !== undefined)),
    );
    this.archives.set(sandboxId, archive);
    const max = this.options.archivedSandboxes ?? 200;
    while (this.archives.size > max) this.archives.delete(this.archives.keys().next().value!);
  }

  /** The twin's client, or undefined when it cannot be reached (a failed lookup is not an answer). */
  private async reachOf(sandbox: TwinHolder, twin: string) {
    try {
      return await this.options.reach(sandbox, twin, { timeoutMs: this.options.timeoutMs ?? 5_000 });
    } catch (error) {
      this.options.logger.debug({ err: error, sandbox_id: sandbox.id, twin }, 'timeline: twin not found');
      return undefined;
    }
  }

  private async fromArchive(
    sandboxId: string,
    twin: string,
    afterId: number,
    limit: number,
  ): Promise<TwinLog | undefined> {
    const copy = (await this.archives.get(sandboxId))?.get(twin);
    if (!copy) return undefined;
    return {
      calls: copy.calls.filter((call) => call.id > afterId).slice(0, limit),
      lastId: copy.lastId,
      deliveries: copy.deliveries,
      archived: true,
    };
  }
}
