/**
 * The PostgreSQL store's failures at start, apart from the store itself: main.ts names them to the person
 * starting Twinbox, and importing them must not load the PostgreSQL stack (pg, node-pg-migrate, pg-boss),
 * which a process loads only when TWINBOX_DATABASE_URL is set.
 */
export class DatabaseUnavailableError extends Error {
  constructor(where: string, cause: unknown) {
    super(
      `Could not open the PostgreSQL store at ${where} (TWINBOX_DATABASE_URL): ${(cause as Error).message}`,
      {
        cause,
      },
    );
    this.name = 'DatabaseUnavailableError';
  }
}

export class SchemaMismatchError extends Error {
  constructor(problems: string[]) {
    super(
      `The PostgreSQL schema lacks what server/store/collections.ts declares; add a migration under ` +
        `server/store/postgres/migrations/ with:\n${problems.join('\n')}`,
    );
    this.name = 'SchemaMismatchError';
  }
}
