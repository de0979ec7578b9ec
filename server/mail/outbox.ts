import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { MailMessage, MailTransport } from './transport.ts';

export interface OutboxEntry extends MailMessage {
  from: string;
  date: string;
}

/**
 * Writes each message to `<dir>/<time>-<uuid>.json` (mode 0600, the directory 0700): the mail of a
 * single machine with no SMTP server, readable by the operator and by tests. Messages may carry
 * sign-in codes, hence the modes.
 */
export class OutboxTransport implements MailTransport {
  readonly kind = 'outbox';

  constructor(
    readonly directory: string,
    private readonly from: string,
  ) {}

  async send(message: MailMessage): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const date = new Date().toISOString();
    const entry: OutboxEntry = { from: this.from, date, ...message };
    // The time first, so a directory listing is in sending order.
    const name = `${date.replace(/[:.]/g, '-')}-${randomUUID()}.json`;
    await writeFile(join(this.directory, name), `${JSON.stringify(entry, null, 2)}\n`, {
      mode: 0o600,
      flag: 'wx',
    });
  }

  async close(): Promise<void> {}
}

/** The messages in an outbox directory, oldest first (for tests and operators). */
export async function readOutbox(directory: string): Promise<(OutboxEntry & { file: string })[]> {
  let names: string[];
  try {
    names = (await readdir(directory)).filter((name) => name.endsWith('.json')).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return Promise.all(
    names.map(async (name) => {
      const entry = JSON.parse(await readFile(join(directory, name), 'utf8')) as OutboxEntry;
      return { ...entry, file: join(directory, name) };
    }),
  );
}
