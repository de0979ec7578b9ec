/**
 * The scenario presets shipped with Twinbox, as GET /scenarios lists them. Each twin's own presets live in
 * its folder (server/twins/vendors/<name>/presets.ts, collected through the registry); only presets that span
 * several twins live here. Every seed passes its twin's validateSeed, and test/scenarios/presets.test.ts
 * starts each preset and checks every promised count with the vendor's official SDK, before and after a
 * reset. Seed shapes: docs/twins.md, "Seeds".
 */
import { type ScenarioPreset } from '../twins/contract.ts';
import { twinPresets } from '../twins/descriptors.ts';
import { SAAS_PRODUCTS } from '../twins/vendors/stripe/presets.ts';

export type { ScenarioPreset };

/** Presets that seed several twins at once; a twin's own presets are in its folder. */
const SPANNING_PRESETS: readonly ScenarioPreset[] = [
  {
    id: 'preset_saas_launch',
    name: 'SaaS launch: code, billing and team chat',
    description:
      'All three twins: a GitHub repository with an open pull request under review and an open bug, a Stripe account with a subscription product and a customer whose card declines, and a Slack workspace with #deploys history.',
    twins: ['github', 'stripe', 'slack'],
    seed: {
      github: {
        users: [
          { login: 'octocat', name: 'The Octocat', email: 'octocat@example.com' },
          { login: 'hubot', name: 'Hubot', email: 'hubot@example.com' },
        ],
        repos: [
          {
            owner: 'octocat',
            name: 'saas-app',
            files: {
              'package.json': '{\n  "name": "saas-app",\n  "scripts": { "start": "node server.js" }\n}\n',
              'server.js':
                "import { createServer } from 'node:http';\ncreateServer((_, res) => res.end('ok')).listen(process.env.PORT ?? 3000);\n",
            },
            issues: [
              {
                title: 'Checkout fails for declined cards with a 500',
                labels: ['bug', 'billing'],
                comments: [{ body: 'Should show "Your card was declined." instead.', user: 'hubot' }],
              },
            ],
            pulls: [
              {
                title: 'Handle card declines at checkout',
                head: 'fix/declines',
                body: 'Catches StripeCardError and shows its message.',
                files: {
                  'checkout.js':
                    'export async function checkout(stripe, customer) {\n  try {\n    return await stripe.paymentIntents.create({ amount: 2900, currency: "usd", customer, confirm: true });\n  } catch (e) {\n    return { error: e.message };\n  }\n}\n',
                },
                comments: [{ body: 'Can we log the decline_code too?', user: 'hubot' }],
                review_comments: [
                  { path: 'checkout.js', line: 5, body: 'Only catch StripeCardError here.', user: 'hubot' },
                ],
              },
            ],
          },
        ],
      },
      stripe: {
        products: [SAAS_PRODUCTS[1]],
        customers: [
          {
            id: 'cus_happy',
            email: 'happy@example.com',
            name: 'Happy Customer',
            payment_method: 'pm_card_visa',
          },
          {
            id: 'cus_declined',
            email: 'declined@example.com',
            name: 'Declined Customer',
            payment_method: 'pm_card_chargeDeclinedInsufficientFunds',
          },
        ],
      },
      slack: {
        team: { name: 'SaaS Inc', domain: 'saas' },
        users: [
          { name: 'ada', real_name: 'Ada Lovelace', email: 'ada@saas.example.com' },
          { name: 'grace', real_name: 'Grace Hopper', email: 'grace@saas.example.com' },
        ],
        channels: [
          {
            name: 'deploys',
            topic: 'Deploy notifications',
            messages: [
              { user: 'ada', text: 'Deployed main to production.' },
              { user: 'grace', text: 'Checkout errors spiking after the deploy, investigating.' },
            ],
          },
        ],
      },
    },
    promises: {
      github: {
        repos: 1,
        open_pulls: 1,
        open_issues: 1,
        labels: 2,
        issue_comments: 1,
        pull_comments: 1,
        review_comments: 1,
      },
      stripe: { customers: 2, declining_customers: 1, products: 1, prices: 2 },
      slack: { users: 2, channels: 1, messages: 2 },
    },
  },
];

/**
 * The order the presets were listed in before each twin's moved into its folder, kept so that GET /scenarios
 * lists them as it always has. A preset not named here (a new twin's, say) follows these, in registry order.
 */
const LISTING_ORDER = [
  'preset_saas_billing',
  'preset_checkout_declines',
  'preset_pull_request_review',
  'preset_issue_triage',
  'preset_team_workspace',
  'preset_support_channel',
  'preset_saas_launch',
  'preset_transactional_email',
  'preset_sms_verification',
  'preset_file_uploads',
  'preset_identity_directory',
  'preset_vercel_team',
  'preset_google_workspace',
  'preset_mongo_orders',
  'preset_entra_tenant',
  'preset_linear_triage',
  'preset_apple_sign_in',
  'preset_clerk_team',
];

/** `presets` in listing order: the named ones by their place in `order`, then the rest as they came. */
export function inListingOrder(
  presets: readonly ScenarioPreset[],
  order: readonly string[] = LISTING_ORDER,
): ScenarioPreset[] {
  const rank = (p: ScenarioPreset) => {
    const at = order.indexOf(p.id);
    return at === -1 ? order.length : at;
  };
  // Array.prototype.sort is stable: unnamed presets keep the registry's order among themselves.
  return [...presets].sort((a, b) => rank(a) - rank(b));
}

export const PRESETS: readonly ScenarioPreset[] = inListingOrder([...twinPresets, ...SPANNING_PRESETS]);
