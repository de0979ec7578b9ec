import t from 'tap';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import { freshSchema, postgresSkip } from '../helpers/postgres.ts';
import { storeContract } from './contract.ts';

// Each case gets its own schema in the test database, so this file runs beside any other.
const skip = await postgresSkip();
t.test('the Store contract on PostgreSQL', { skip }, async (t) => {
  storeContract(t, {
    shared: true,
    async fresh() {
      const { url } = await freshSchema();
      return { open: () => openPostgresStore({ url }), env: { TWINBOX_DATABASE_URL: url } };
    },
  });
});
