import type { VersionGate } from '../gate.ts';

/** Before dahlia, Checkout's `ui_mode` values were `hosted`, `embedded` and `custom`. */
const OLD_NAMES: Record<string, string> = {
  hosted_page: 'hosted',
  embedded_page: 'embedded',
  elements: 'custom',
};

export const checkoutUiMode: VersionGate = {
  version: '2026-03-25.dahlia',
  change:
    'Checkout Sessions: ui_mode hosted, embedded and custom renamed hosted_page, embedded_page and elements',
  objects: {
    'checkout.session': (session) => {
      const mode = session.ui_mode;
      if (typeof mode === 'string' && OLD_NAMES[mode]) session.ui_mode = OLD_NAMES[mode];
    },
  },
};
