// The shared sign-in state tests again, on the PostgreSQL store: issue 14 asks that they pass on both stores, and this
// runs them so inside the one tap run of `npm test` (test/identity/shared-state.test.ts runs them on lowdb).
export {};
process.env.TWINBOX_TEST_STORE = 'postgres';
await import('../identity/shared-state.test.ts');
