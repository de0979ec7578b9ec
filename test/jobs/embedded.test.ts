import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { EmbeddedJobQueue } from '../../server/jobs/embedded.ts';
import { jobQueueContract, silent } from './contract.ts';

t.test('the JobQueue contract on the embedded queue (Store `jobs` collection)', async (t) => {
  jobQueueContract(t, {
    oneProcessAtATime: true,
    async fresh(t) {
      const dir = mkdtempSync(join(tmpdir(), 'twinbox-jobs-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      return {
        env: { TWINBOX_DATA_DIR: dir },
        async open() {
          const store = await openLowdbStore(dir);
          const queue = new EmbeddedJobQueue(store.jobs, silent);
          return {
            store,
            queue,
            async close() {
              await queue.stop();
              await store.close();
            },
          };
        },
      };
    },
  });
});
