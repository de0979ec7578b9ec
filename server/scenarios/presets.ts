/**
 * Scenario presets shipped with Twinbox: named seed documents for the catalog twins, each with the counts
 * it promises. Every seed here passes its twin's validateSeed, and test/scenarios/presets.test.ts starts
 * each preset and checks every promised count with the vendor's official SDK, before and after a reset.
 * Seed shapes: docs/twins.md, "Seeds".
 */

export interface ScenarioPreset {
  id: string;
  name: string;
  description: string;
  /** Catalog twin names the preset starts. */
  twins: string[];
  /** Seed document per twin name. */
  seed: Record<string, unknown>;
  /**
   * What the twins hold right after start (and after every reset), per twin. Counts are of objects the
   * seed creates, as the vendor API lists them. Keys:
   * - github: `repos`, `open_pulls`, `closed_pulls`, `open_issues`, `closed_issues` (issues only, not
   *   pull requests), `labels`, `issue_comments` (on issues), `pull_comments` (conversation comments on
   *   pull requests), `review_comments` (comments on a pull request's diff).
   * - stripe: `customers`, `declining_customers` (customers whose default payment method is declined when
   *   a PaymentIntent is confirmed with it), `products`, `prices`, `payment_intents`.
   * - resend: `domains`, `contacts` (in every audience), `emails`.
   * - twilio: `phone_numbers`, `verify_services` (both with the twin's default number and service).
   * - aws: `buckets`, `objects` (in all buckets).
   * - linear: `teams`, `issues` (both with the engine's default ENG team and its sample issue).
   * - okta: `users`, `groups` (not the built-in `Everyone`), `memberships` (in those groups).
   * - vercel: `teams`, `projects` (in those teams), `env_vars` (of those projects).
   * - mongoatlas: `projects`, `clusters` (both with the engine's Project0 and Cluster0), `documents` (in every
   *   collection, through the Data API).
   * - google: `messages` (in the first account's mailbox), `labels` (its user labels, not Gmail's system ones).
   * - microsoft: `users` (of the tenant, as Graph `GET /users` lists them).
   * - apple: `accounts` (offered on the Sign in with Apple account picker; Apple has no API that lists them).
   * - clerk: `users`, `organizations`, `memberships` (in those organizations), as @clerk/backend lists them.
   * - slack: `users`, `channels`, `messages` (the engine also always has user `admin`, `#general`,
   *   `#random` and the bot user; those count only when the seed names them).
   */
  promises: Record<string, Record<string, number>>;
}

const SAAS_PRODUCTS = [
  {
    id: 'prod_starter',
    name: 'Starter',
    description: 'For individuals and small projects',
    prices: [
      { id: 'price_starter_monthly', unit_amount: 900, currency: 'usd', recurring: { interval: 'month' } },
      { id: 'price_starter_yearly', unit_amount: 9000, currency: 'usd', recurring: { interval: 'year' } },
    ],
  },
  {
    id: 'prod_pro',
    name: 'Pro',
    description: 'For growing teams',
    prices: [
      { id: 'price_pro_monthly', unit_amount: 2900, currency: 'usd', recurring: { interval: 'month' } },
      { id: 'price_pro_yearly', unit_amount: 29000, currency: 'usd', recurring: { interval: 'year' } },
    ],
  },
];

const DECLINES: Array<[card: string, name: string]> = [
  ['pm_card_chargeDeclined', 'Generic Decline'],
  ['pm_card_chargeDeclinedInsufficientFunds', 'Insufficient Funds'],
  ['pm_card_chargeDeclinedLostCard', 'Lost Card'],
  ['pm_card_chargeDeclinedStolenCard', 'Stolen Card'],
  ['pm_card_chargeDeclinedExpiredCard', 'Expired Card'],
  ['pm_card_chargeDeclinedIncorrectCvc', 'Incorrect Cvc'],
  ['pm_card_chargeDeclinedProcessingError', 'Processing Error'],
];

export const PRESETS: readonly ScenarioPreset[] = [
  {
    id: 'preset_saas_billing',
    name: 'SaaS billing account',
    description:
      'A Stripe account with two subscription products (monthly and yearly prices) and three customers: two with a working Visa card and one whose card is declined.',
    twins: ['stripe'],
    seed: {
      stripe: {
        products: SAAS_PRODUCTS,
        customers: [
          {
            id: 'cus_ada',
            email: 'ada@example.com',
            name: 'Ada Lovelace',
            metadata: { plan: 'pro' },
            payment_method: 'pm_card_visa',
            payment_intents: [{ amount: 2900, currency: 'usd', status: 'succeeded' }],
          },
          {
            id: 'cus_grace',
            email: 'grace@example.com',
            name: 'Grace Hopper',
            metadata: { plan: 'starter' },
            payment_method: 'pm_card_mastercard',
          },
          {
            id: 'cus_declining',
            email: 'decline@example.com',
            name: 'Dee Klein',
            metadata: { plan: 'pro' },
            payment_method: 'pm_card_chargeDeclined',
            payment_intents: [{ amount: 2900, currency: 'usd', status: 'requires_payment_method' }],
          },
        ],
      },
    },
    promises: {
      stripe: { customers: 3, declining_customers: 1, products: 2, prices: 4, payment_intents: 2 },
    },
  },
  {
    id: 'preset_checkout_declines',
    name: 'Checkout with every decline type',
    description:
      'A one-product shop with one customer per Stripe test decline (generic, insufficient funds, lost, stolen, expired, incorrect CVC, processing error) and one customer whose card succeeds.',
    twins: ['stripe'],
    seed: {
      stripe: {
        products: [
          {
            id: 'prod_tshirt',
            name: 'Twinbox T-shirt',
            prices: [{ id: 'price_tshirt', unit_amount: 2500, currency: 'usd' }],
          },
        ],
        customers: [
          { email: 'ok@example.com', name: 'Happy Path', payment_method: 'pm_card_visa' },
          ...DECLINES.map(([card, name]) => ({
            email: `${name.toLowerCase().replace(/ /g, '.')}@example.com`,
            name,
            metadata: { test_card: card },
            payment_method: card,
          })),
        ],
      },
    },
    promises: { stripe: { customers: 8, declining_customers: 7, products: 1, prices: 1 } },
  },
  {
    id: 'preset_pull_request_review',
    name: 'Repository with pull requests under review',
    description:
      'A GitHub repository with two open pull requests (each with a diff), conversation comments and review comments on the diff, and one closed pull request.',
    twins: ['github'],
    seed: {
      github: {
        users: [
          { login: 'octocat', name: 'The Octocat', email: 'octocat@example.com' },
          { login: 'hubot', name: 'Hubot', email: 'hubot@example.com' },
          { login: 'monalisa', name: 'Mona Lisa', email: 'mona@example.com' },
        ],
        repos: [
          {
            owner: 'octocat',
            name: 'webshop',
            description: 'A small Node.js shop',
            files: {
              'package.json': '{\n  "name": "webshop",\n  "scripts": { "start": "node index.js" }\n}\n',
              'index.js':
                "import { createServer } from 'node:http';\ncreateServer((_, res) => res.end('ok')).listen(process.env.PORT ?? 3000);\n",
              'src/cart.js': 'export const total = (items) => items.reduce((n, i) => n + i.price, 0);\n',
            },
            pulls: [
              {
                title: 'Add discount codes to the cart',
                head: 'feature/discounts',
                body: 'Adds `applyDiscount` and uses it in the total.\n\nCloses nothing yet.',
                files: {
                  'src/cart.js':
                    'export const total = (items) => items.reduce((n, i) => n + i.price, 0);\nexport const applyDiscount = (amount, code) => (code === "TWIN10" ? Math.round(amount * 0.9) : amount);\n',
                  'src/discounts.test.js': 'import { applyDiscount } from "./cart.js";\n',
                },
                comments: [
                  { body: 'Thanks! Could you add a test for an unknown code?', user: 'hubot' },
                  { body: 'Added in the next commit.' },
                ],
                review_comments: [
                  {
                    path: 'src/cart.js',
                    line: 2,
                    body: 'Hard-coding the code here will not scale; read it from config?',
                    user: 'monalisa',
                  },
                  { path: 'src/discounts.test.js', body: 'This file has no assertions yet.', user: 'hubot' },
                ],
              },
              {
                title: 'Fix: empty cart total is NaN',
                head: 'fix/empty-cart',
                body: 'An empty cart should total 0.',
                files: {
                  'src/cart.js':
                    'export const total = (items = []) => items.reduce((n, i) => n + i.price, 0);\n',
                },
                comments: [{ body: 'LGTM once CI passes.', user: 'monalisa' }],
                review_comments: [
                  { path: 'src/cart.js', line: 1, body: 'Nice default parameter.', user: 'hubot' },
                ],
              },
              {
                title: 'Experiment: rewrite in Deno',
                head: 'experiment/deno',
                state: 'closed',
                files: { 'deno.json': '{}\n' },
              },
            ],
          },
        ],
      },
    },
    promises: {
      github: { repos: 1, open_pulls: 2, closed_pulls: 1, pull_comments: 3, review_comments: 3 },
    },
  },
  {
    id: 'preset_issue_triage',
    name: 'Repository with issues to triage',
    description:
      'A GitHub repository with open and closed issues, labels (bug, enhancement, question) and discussion comments.',
    twins: ['github'],
    seed: {
      github: {
        users: [
          { login: 'octocat', name: 'The Octocat', email: 'octocat@example.com' },
          { login: 'reporter', name: 'Rita Porter', email: 'rita@example.com' },
        ],
        repos: [
          {
            owner: 'octocat',
            name: 'tracker',
            description: 'Issue tracker playground',
            files: { 'README.md': '# tracker\n' },
            issues: [
              {
                title: 'Login button does nothing on Safari',
                body: 'Steps: open /login in Safari 17, click "Sign in". Nothing happens.',
                labels: ['bug'],
                comments: [
                  { body: 'Same here on iOS.', user: 'reporter' },
                  { body: 'Reproduced, looking into it.' },
                ],
              },
              {
                title: 'Dark mode',
                body: 'Please add a dark theme.',
                labels: ['enhancement'],
                comments: [{ body: '+1', user: 'reporter' }],
              },
              {
                title: 'How do I export my data?',
                labels: ['question'],
              },
              {
                title: 'Crash when the cart is empty',
                body: 'TypeError: cannot read properties of undefined',
                state: 'closed',
                labels: ['bug'],
                comments: [{ body: 'Fixed in 1.2.1.' }],
              },
              {
                title: 'Support IE11',
                state: 'closed',
                labels: ['enhancement'],
                comments: [{ body: 'Closing: IE11 is out of support.' }],
              },
            ],
          },
        ],
      },
    },
    promises: {
      github: { repos: 1, open_issues: 3, closed_issues: 2, labels: 3, issue_comments: 5 },
    },
  },
  {
    id: 'preset_team_workspace',
    name: 'Team workspace',
    description:
      'A Slack workspace with four people, three channels (#general, #engineering, #design) and a short message history in each.',
    twins: ['slack'],
    seed: {
      slack: {
        team: { name: 'Acme', domain: 'acme' },
        users: [
          { name: 'ada', real_name: 'Ada Lovelace', email: 'ada@acme.example.com' },
          { name: 'grace', real_name: 'Grace Hopper', email: 'grace@acme.example.com' },
          { name: 'linus', real_name: 'Linus Torvalds', email: 'linus@acme.example.com' },
          { name: 'margaret', real_name: 'Margaret Hamilton', email: 'margaret@acme.example.com' },
        ],
        channels: [
          {
            name: 'general',
            topic: 'Company-wide announcements',
            messages: [
              { user: 'ada', text: 'Welcome to Acme, everyone!' },
              { user: 'grace', text: 'All-hands is on Thursday at 10:00.' },
            ],
          },
          {
            name: 'engineering',
            topic: 'Builds, deploys and code review',
            members: ['ada', 'grace', 'linus'],
            messages: [
              { user: 'linus', text: 'main is green again.' },
              { user: 'grace', text: 'Deploying v1.4.0 to staging.' },
              { user: 'ada', text: 'Staging looks good, shipping to production.' },
            ],
          },
          {
            name: 'design',
            topic: 'UI and brand',
            members: ['margaret', 'ada'],
            messages: [{ user: 'margaret', text: 'New logo drafts are in Figma.' }],
          },
        ],
      },
    },
    promises: { slack: { users: 4, channels: 3, messages: 6 } },
  },
  {
    id: 'preset_support_channel',
    name: 'Customer support channel',
    description:
      'A Slack workspace with a private #support channel (two agents and the bot) holding open customer questions.',
    twins: ['slack'],
    seed: {
      slack: {
        team: { name: 'Helpdesk', domain: 'helpdesk' },
        users: [
          { name: 'sam', real_name: 'Sam Agent', email: 'sam@helpdesk.example.com' },
          { name: 'alex', real_name: 'Alex Agent', email: 'alex@helpdesk.example.com' },
          { name: 'casey', real_name: 'Casey Customer', email: 'casey@customer.example.com' },
        ],
        channels: [
          {
            name: 'support',
            topic: 'Customer questions — reply in thread',
            is_private: true,
            members: ['sam', 'alex', 'casey'],
            messages: [
              { user: 'casey', text: 'Hi! I was charged twice for my March invoice.' },
              { user: 'sam', text: 'Sorry about that, looking into it now.' },
              { user: 'casey', text: 'Also, how do I change the card on file?' },
              { user: 'alex', text: 'Settings → Billing → Payment method.' },
              { user: 'casey', text: 'Still waiting on the refund for the double charge.' },
            ],
          },
        ],
      },
    },
    promises: { slack: { users: 3, channels: 1, messages: 5 } },
  },
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
  {
    id: 'preset_transactional_email',
    name: 'Transactional email',
    description:
      'A Resend account with a verified sending domain, a newsletter audience of two contacts and two emails already delivered (a welcome and a receipt).',
    twins: ['resend'],
    seed: {
      resend: {
        domains: [{ name: 'mail.acme.dev', region: 'eu-west-1' }],
        contacts: [
          { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', audience: 'Newsletter' },
          { email: 'grace@example.com', first_name: 'Grace', last_name: 'Hopper', audience: 'Newsletter' },
        ],
        emails: [
          {
            from: 'Acme <hello@mail.acme.dev>',
            to: 'ada@example.com',
            subject: 'Welcome to Acme',
            html: '<p>Thanks for signing up.</p>',
          },
          {
            from: 'Acme Billing <billing@mail.acme.dev>',
            to: 'grace@example.com',
            subject: 'Your receipt #1042',
            text: 'You paid $29.00.',
          },
        ],
      },
    },
    promises: { resend: { domains: 1, contacts: 2, emails: 2 } },
  },
  {
    id: 'preset_sms_verification',
    name: 'SMS sign-in codes',
    description:
      'A Twilio account with two SMS numbers (alerts and support) and a Verify service for sign-in codes whose test code is 424242, beside the default number and Verify service.',
    twins: ['twilio'],
    seed: {
      twilio: {
        phone_numbers: [
          { phone_number: '+15005550006', friendly_name: 'Alerts' },
          { phone_number: '+15005550007', friendly_name: 'Support' },
        ],
        verify_services: [{ friendly_name: 'Acme sign-in', code: '424242' }],
      },
    },
    promises: { twilio: { phone_numbers: 3, verify_services: 2 } },
  },
  {
    id: 'preset_file_uploads',
    name: 'File uploads on S3',
    description:
      'An AWS account in eu-west-1 with an uploads bucket holding files of two users and an empty logs bucket, reached with the AWS SDK through AWS_ENDPOINT_URL.',
    twins: ['aws'],
    seed: {
      aws: {
        region: 'eu-west-1',
        buckets: [
          {
            name: 'acme-uploads',
            objects: {
              'users/ada/notes.txt': 'Analytical Engine notes',
              'users/grace/profile.json': '{"name":"Grace Hopper"}',
            },
          },
          { name: 'acme-logs' },
        ],
      },
    },
    promises: { aws: { buckets: 2, objects: 2 } },
  },
  {
    id: 'preset_identity_directory',
    name: 'Company directory on Okta',
    description:
      'An Okta org with four people (one of them suspended) in an Engineering and a Support group, and an OIDC app for the deployed app to sign people in with.',
    twins: ['okta'],
    seed: {
      okta: {
        users: [
          { login: 'ada@acme.example.com', first_name: 'Ada', last_name: 'Lovelace' },
          { login: 'grace@acme.example.com', first_name: 'Grace', last_name: 'Hopper' },
          { login: 'linus@acme.example.com', first_name: 'Linus', last_name: 'Torvalds' },
          { login: 'mallory@acme.example.com', first_name: 'Mallory', last_name: 'Moe', status: 'SUSPENDED' },
        ],
        groups: [
          {
            name: 'Engineering',
            description: 'Builds the product',
            members: ['ada@acme.example.com', 'grace@acme.example.com', 'linus@acme.example.com'],
          },
          { name: 'Support', description: 'Answers customers', members: ['grace@acme.example.com'] },
        ],
        redirect_uris: ['http://localhost:3000/authorization-code/callback'],
      },
    },
    promises: { okta: { users: 4, groups: 2, memberships: 4 } },
  },
  {
    id: 'preset_vercel_team',
    name: 'Vercel team with two projects',
    description:
      'A Vercel team (acme) with a Next.js web app carrying two environment variables and an API project with one, for an app that manages its deployments and settings through the Vercel REST API.',
    twins: ['vercel'],
    seed: {
      vercel: {
        teams: [{ slug: 'acme', name: 'Acme' }],
        projects: [
          {
            name: 'acme-web',
            team: 'acme',
            framework: 'nextjs',
            env: [
              { key: 'NEXT_PUBLIC_SITE_URL', value: 'https://acme.dev', type: 'plain' },
              { key: 'DATABASE_URL', value: 'postgres://acme:acme@db.acme.dev/acme', target: ['production'] },
            ],
          },
          { name: 'acme-api', team: 'acme', env: [{ key: 'LOG_LEVEL', value: 'info', type: 'plain' }] },
        ],
      },
    },
    promises: { vercel: { teams: 1, projects: 2, env_vars: 3 } },
  },
  {
    id: 'preset_google_workspace',
    name: 'Google Workspace account',
    description:
      'Two Google Workspace accounts at acme.dev; the first has an inbox of three messages (one labelled Customers), two calendar events and a Drive document, and signs in through GOOGLE_REFRESH_TOKEN.',
    twins: ['google'],
    seed: {
      google: {
        users: [
          { email: 'ada@acme.dev', name: 'Ada Lovelace', hd: 'acme.dev' },
          { email: 'grace@acme.dev', name: 'Grace Hopper', hd: 'acme.dev' },
        ],
        labels: [{ name: 'Customers' }],
        messages: [
          {
            from: 'Grace Hopper <grace@acme.dev>',
            to: 'ada@acme.dev',
            subject: 'Launch checklist',
            body_text: 'Can you review the checklist before Friday?',
          },
          {
            from: 'orders@customer.example',
            to: 'ada@acme.dev',
            subject: 'Order #1042 question',
            body_text: 'When will my order ship?',
            label_ids: ['INBOX', 'UNREAD', 'Customers'],
          },
          {
            from: 'billing@vendor.example',
            to: 'ada@acme.dev',
            subject: 'Your invoice',
            body_text: 'Invoice 42 is attached.',
            label_ids: ['INBOX'],
          },
        ],
        calendar_events: [
          {
            summary: 'Launch review',
            start_date_time: '2026-01-12T15:00:00Z',
            end_date_time: '2026-01-12T15:30:00Z',
            attendees: [{ email: 'grace@acme.dev' }],
          },
          {
            summary: 'Customer call',
            start_date_time: '2026-01-13T10:00:00Z',
            end_date_time: '2026-01-13T11:00:00Z',
          },
        ],
        drive_files: [{ name: 'Launch plan.txt', mime_type: 'text/plain', data: 'Ship on Friday.' }],
      },
    },
    promises: { google: { messages: 3, labels: 1 } },
  },
  {
    id: 'preset_mongo_orders',
    name: 'Orders on MongoDB Atlas',
    description:
      "A MongoDB Atlas project (Acme) with a production cluster holding a shop database of three orders and two customers, an app database user, beside the engine's Project0 and Cluster0, reached through the Admin API with a service account and through the Data API.",
    twins: ['mongoatlas'],
    seed: {
      mongoatlas: {
        projects: [{ name: 'Acme' }],
        clusters: [{ name: 'AcmeProd', project: 'Acme', region: 'EU_WEST_1' }],
        database_users: [{ username: 'shop-app', project: 'Acme' }],
        databases: [{ cluster: 'AcmeProd', name: 'shop', collections: ['orders', 'customers'] }],
        documents: [
          {
            cluster: 'AcmeProd',
            database: 'shop',
            collection: 'customers',
            document: { _id: 'c1', name: 'Ada Lovelace' },
          },
          {
            cluster: 'AcmeProd',
            database: 'shop',
            collection: 'customers',
            document: { _id: 'c2', name: 'Grace Hopper' },
          },
          {
            cluster: 'AcmeProd',
            database: 'shop',
            collection: 'orders',
            document: { customer: 'c1', total: 2900, status: 'paid' },
          },
          {
            cluster: 'AcmeProd',
            database: 'shop',
            collection: 'orders',
            document: { customer: 'c1', total: 900, status: 'refunded' },
          },
          {
            cluster: 'AcmeProd',
            database: 'shop',
            collection: 'orders',
            document: { customer: 'c2', total: 29000, status: 'paid' },
          },
        ],
      },
    },
    promises: { mongoatlas: { projects: 2, clusters: 2, documents: 5 } },
  },
  {
    id: 'preset_entra_tenant',
    name: 'Microsoft Entra ID tenant',
    description:
      'An Entra ID tenant (contoso.example) with three people who can sign in to the app with Microsoft, listed by Microsoft Graph.',
    twins: ['microsoft'],
    seed: {
      microsoft: {
        users: [
          { email: 'adele@contoso.example', name: 'Adele Vance' },
          { email: 'megan@contoso.example', name: 'Megan Bowen' },
          { email: 'lee@contoso.example', name: 'Lee Gu' },
        ],
      },
    },
    promises: { microsoft: { users: 3 } },
  },
  {
    id: 'preset_linear_triage',
    name: 'Linear bug triage',
    description:
      "A Linear workspace (Acme) with a Web team, two people, Bug and Regression labels and three issues (one in progress, one done, one with a comment), beside the engine's default Engineering team and its sample issue.",
    twins: ['linear'],
    seed: {
      linear: {
        organization: { name: 'Acme', url_key: 'acme' },
        users: [
          { email: 'ada@acme.dev', name: 'Ada Lovelace', admin: true },
          { email: 'grace@acme.dev', name: 'Grace Hopper' },
        ],
        teams: [{ key: 'WEB', name: 'Web' }],
        labels: [
          { name: 'Bug', color: '#d92d20', team: 'WEB' },
          { name: 'Regression', color: '#f79009', team: 'WEB' },
        ],
        issues: [
          {
            team: 'WEB',
            title: 'Checkout button does nothing on Safari',
            state: 'In Progress',
            assignee: 'grace@acme.dev',
            labels: ['Bug', 'Regression'],
            priority: 1,
          },
          { team: 'WEB', title: 'Typo on the pricing page', state: 'Done', labels: ['Bug'], priority: 4 },
          { team: 'WEB', title: 'Receipt email shows the wrong currency', state: 'Todo', priority: 2 },
        ],
        comments: [{ issue: 'WEB-1', body: 'Reproduced on Safari 17 only.', user: 'ada@acme.dev' }],
      },
    },
    promises: { linear: { teams: 2, issues: 4 } },
  },
  {
    id: 'preset_apple_sign_in',
    name: 'Sign in with Apple',
    description:
      'Two Apple Accounts that can sign in to the app with Apple, one sharing its email and one hiding it behind a private relay address.',
    twins: ['apple'],
    seed: {
      apple: {
        users: [
          { email: 'tim@icloud.example', name: 'Tim Apple' },
          { email: 'jane@icloud.example', name: 'Jane Appleseed', is_private_email: true },
        ],
      },
    },
    promises: { apple: { accounts: 2 } },
  },
  {
    id: 'preset_clerk_team',
    name: 'Clerk users in an organization',
    description:
      'Three Clerk users (one with a password, one on the pro plan in its public metadata) and an Acme organization where Ada is admin and Grace a member, for an app that signs people in with Clerk and checks their organization role.',
    twins: ['clerk'],
    seed: {
      clerk: {
        users: [
          {
            email: 'ada@acme.dev',
            first_name: 'Ada',
            last_name: 'Lovelace',
            password: 'analytical-engine',
            public_metadata: { plan: 'pro' },
          },
          { email: 'grace@acme.dev', first_name: 'Grace', last_name: 'Hopper' },
          { email: 'linus@example.org', username: 'linus' },
        ],
        organizations: [
          {
            name: 'Acme',
            slug: 'acme',
            members: [
              { email: 'ada@acme.dev', role: 'org:admin' },
              { email: 'grace@acme.dev', role: 'org:member' },
            ],
          },
        ],
      },
    },
    promises: { clerk: { users: 3, organizations: 1, memberships: 2 } },
  },
];
