/**
 * The GitHub twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const githubPresets: TwinPresets = {
  promiseKeys: {
    repos: 'repositories',
    open_pulls: 'open pull requests',
    closed_pulls: 'closed pull requests',
    open_issues: 'open issues (issues only, not pull requests)',
    closed_issues: 'closed issues (issues only, not pull requests)',
    labels: 'labels',
    issue_comments: 'comments on issues',
    pull_comments: 'conversation comments on pull requests',
    review_comments: "comments on a pull request's diff",
  },
  presets: [
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
                    'src/discounts.test.js': 'import { applyDiscount } from "../../github/cart.js";\n',
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
                    {
                      path: 'src/discounts.test.js',
                      body: 'This file has no assertions yet.',
                      user: 'hubot',
                    },
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
  ],
};
