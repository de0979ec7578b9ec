// The private-repository tests (production mode, both paths) again, on the PostgreSQL store: issue 14 asks that they pass on both stores, and this
// runs them so inside the one tap run of `npm test` (test/e2e/private-repos.test.ts runs them on lowdb).
export {};
process.env.TWINBOX_TEST_STORE = 'postgres';
await import('../e2e/private-repos.test.ts');
