import t from 'tap';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { tempDir } from '../helpers/twinbox.ts';
import { storeContract } from './contract.ts';

storeContract(t, {
  async fresh(t) {
    const dataDir = await tempDir(t, 'twinbox-store-contract-');
    return { open: () => openLowdbStore(dataDir), env: { TWINBOX_DATA_DIR: dataDir } };
  },
});
