import type { AccountRecord, SandboxRecord, SandboxStatus } from '../../store/records.ts';
import type { SandboxPage, SandboxService } from '../../sandboxes/service.ts';
import type { AppLogReader, LogSlice } from '../../sandboxes/routes.ts';
import { ACTIVE_STATUSES, SANDBOX_STATUSES } from '../../sandboxes/states.ts';
import { REPO_PATTERN } from '../../sandboxes/validation.ts';
import type { ListFilterView } from './views/list.ts';
import type { LogView } from './views/sandbox.ts';

/** Rows of the list page: the API's default page size, so the two compare like for like. */
export const LIST_PAGE_SIZE = 20;

/** The log's tail the sandbox page starts with; the live part follows on from its end. */
export const PAGE_LOG_BYTES = 64 * 1024;

/** The most one live poll sends of the log (a chatty app must not make one answer huge). */
export const LIVE_LOG_BYTES = 256 * 1024;

export interface ListQuery {
  status?: unknown;
  repo?: unknown;
  cursor?: unknown;
}

/** The list page's filters as typed into its form: empty fields are no filter; a bad repo name says why. */
export function readListQuery(query: ListQuery): { filter: ListFilterView; error?: string } {
  const text = (value: unknown) => (typeof value === 'string' ? value.trim() : '');
  const status = text(query.status);
  const repo = text(query.repo);
  const cursor = text(query.cursor);
  const filter: ListFilterView = {};
  const problems: string[] = [];
  if (status) {
    if ((SANDBOX_STATUSES as string[]).includes(status)) filter.status = status as SandboxStatus;
    else
      problems.push(
        `There is no status "${status.slice(0, 40)}": pick one of ${SANDBOX_STATUSES.join(', ')}.`,
      );
  }
  if (repo) {
    if (repo.length <= 140 && REPO_PATTERN.test(repo)) filter.repo = repo;
    else problems.push(`"${repo.slice(0, 140)}" is not a repository name: type it as owner/name.`);
  }
  if (cursor) filter.cursor = cursor.slice(0, 200);
  return problems.length ? { filter, error: problems.join(' ') } : { filter };
}

/**
 * What the dashboard pages read, through the services the API uses (the same owner scoping: another
 * account's sandbox is a 404, like a missing one).
 */
export class DashboardService {
  constructor(
    private readonly sandboxes: SandboxService,
    private readonly logs: AppLogReader | undefined,
  ) {}

  list(account: AccountRecord, filter: ListFilterView): Promise<SandboxPage> {
    return this.sandboxes.list(account, {
      limit: LIST_PAGE_SIZE,
      ...(filter.status ? { status: filter.status } : {}),
      ...(filter.repo ? { repo: filter.repo } : {}),
      ...(filter.cursor ? { cursor: filter.cursor } : {}),
    });
  }

  get(account: AccountRecord, id: string): Promise<SandboxRecord> {
    return this.sandboxes.get(account, id);
  }

  /** The end of the log for the page: the last PAGE_LOG_BYTES, cut at a line start. */
  async logTail(sandbox: SandboxRecord): Promise<LogView> {
    if (!this.logs) return { text: '', end: 0, trimmed: false };
    const whole = await this.logs.slice(sandbox.id, 0);
    if (Buffer.byteLength(whole.text) <= PAGE_LOG_BYTES) {
      return { text: whole.text, end: whole.end, trimmed: whole.start > 0 };
    }
    const tail = Buffer.from(whole.text).subarray(-PAGE_LOG_BYTES).toString('utf8');
    const lineStart = tail.indexOf('\n');
    // The first character may be the replacement of a cut UTF-8 sequence; a whole line drops it.
    return { text: lineStart >= 0 ? tail.slice(lineStart + 1) : tail, end: whole.end, trimmed: true };
  }

  /** What the log gained after `offset` (at most LIVE_LOG_BYTES of it; the rest comes next poll). */
  async logAfter(sandbox: SandboxRecord, offset: number): Promise<LogSlice & { complete: boolean }> {
    const slice: LogSlice = this.logs
      ? await this.logs.slice(sandbox.id, offset)
      : { text: '', start: offset, end: offset, open: false };
    let { text, end } = slice;
    if (Buffer.byteLength(text) > LIVE_LOG_BYTES) {
      const cut = Buffer.from(text)
        .subarray(0, LIVE_LOG_BYTES)
        .toString('utf8')
        .replace(/\uFFFD$/, '');
      text = cut;
      end = slice.start + Buffer.byteLength(cut);
    }
    const complete = !ACTIVE_STATUSES.has(sandbox.status) && !slice.open && end >= slice.end;
    return { ...slice, text, end, complete };
  }

  extend(account: AccountRecord, id: string, minutes: number): Promise<SandboxRecord> {
    return this.sandboxes.extend(account, id, minutes);
  }

  delete(account: AccountRecord, id: string): Promise<SandboxRecord> {
    return this.sandboxes.delete(account, id);
  }
}
