import { drop, restore, type VersionGate } from '../gate.ts';

/**
 * 2024-04-10 renamed a product's `features` (its marketing features, from 2023-08-16) to
 * `marketing_features`, and removed invoices' `rendering_options` (superseded by `rendering`).
 */
export const productFeatures: VersionGate = {
  version: '2024-04-10',
  change: 'Products: features renamed marketing_features; invoices: rendering_options removed',
  objects: {
    product: (product) => {
      restore(product, { features: product.marketing_features ?? [] });
      drop(product, 'marketing_features');
    },
    invoice: (invoice) => restore(invoice, { rendering_options: null }),
  },
};
