/**
 * What a request may send depends on its version too: a parameter an older version required is refused
 * there when missing, as Stripe refuses it. One gate per change, like the answers' (gate.ts).
 */
import { missingParam, str, type FormObject } from '../params.ts';
import { isBefore, type StripeApiVersion } from './catalog.ts';

interface RequestGate {
  /** The release that relaxed the rule: requests in older versions keep it. */
  version: StripeApiVersion;
  change: string;
  method: string;
  path: RegExp;
  check: (form: FormObject) => void;
}

const REQUEST_GATES: readonly RequestGate[] = [
  {
    version: '2022-11-15',
    change: 'Checkout Sessions: cancel_url optional (a session without one has no back link)',
    method: 'POST',
    path: /^\/v1\/checkout\/sessions$/,
    check: (form) => {
      if (!str(form.cancel_url)) missingParam('cancel_url');
    },
  },
];

/** Throws Stripe's refusal when the request breaks a rule its version still has. */
export function checkRequestIn(version: StripeApiVersion, method: string, path: string, form: FormObject) {
  for (const gate of REQUEST_GATES) {
    if (isBefore(version, gate.version) && gate.method === method && gate.path.test(path)) gate.check(form);
  }
}
