/**
 * Parts of Twinbox that only some configurations use (the PostgreSQL store and queue, the GitHub App,
 * SMTP) are imported when the configuration asks for them, not by every process at its start: together
 * their packages (pg-boss, node-pg-migrate, probot, nodemailer, ...) cost about a second of CPU to load,
 * paid by every Twinbox process and every test that starts one. Loading one is still part of the start,
 * so a missing or broken package fails it with this error, which names the part.
 */
export class PartLoadError extends Error {
  constructor(
    readonly part: string,
    cause: unknown,
  ) {
    super(`Could not load ${part}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'PartLoadError';
  }
}

/** Imports a part (`load` is `() => import('./its/module.ts')`), failing with PartLoadError. */
export async function loadPart<T>(part: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    throw new PartLoadError(part, error);
  }
}
