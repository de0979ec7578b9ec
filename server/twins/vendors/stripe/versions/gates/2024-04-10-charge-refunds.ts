import { idOf, restore, type VersionGate } from '../gate.ts';

/**
 * A charge carried its `refunds` list until stripe-node's 2024-04-10 types (refunds are listed with
 * `GET /v1/refunds?charge=` since); older versions get the list, newest first.
 */
export const chargeRefunds: VersionGate = {
  version: '2024-04-10',
  change: 'Charges: refunds list no longer included',
  objects: {
    charge: (charge, { store }) => {
      const id = idOf(charge.id);
      const refunds = id
        ? store
            .all('refund')
            .filter((r) => r.charge === id)
            .reverse()
        : [];
      restore(charge, {
        refunds: {
          object: 'list',
          data: refunds.map((refund) => structuredClone(refund)),
          has_more: false,
          total_count: refunds.length,
          url: `/v1/charges/${id ?? ''}/refunds`,
        },
      });
    },
  },
};
