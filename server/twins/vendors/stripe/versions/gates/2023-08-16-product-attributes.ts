import { drop, restore, type VersionGate } from '../gate.ts';

/**
 * 2023-08-16 removed products' `attributes` (the old Orders API's) and charges' `destination` and
 * `dispute`, and gave products their marketing `features`, which older versions do not have.
 */
export const productAttributes: VersionGate = {
  version: '2023-08-16',
  change: 'Products: attributes removed, features added; charges: destination and dispute removed',
  objects: {
    product: (product) => {
      restore(product, { attributes: [] });
      drop(product, 'features');
    },
    charge: (charge) => restore(charge, { destination: null, dispute: null }),
  },
};
