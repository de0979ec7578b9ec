// The restart tests again, on the PostgreSQL store: issue 14 asks that they pass on both stores, and this
// runs them so inside the one tap run of `npm test` (test/deploy/restart.test.ts runs them on lowdb).
export {};
process.env.TWINBOX_TEST_STORE = 'postgres';
await import('../deploy/restart.test.ts');
