/** What Twinbox knows of the GitHub twin without running it (TwinDescriptor); its driver is twin.ts. */
import type { TwinDescriptor } from '../../contract.ts';
import { validateGitHubSeed, type GitHubSeed } from './seed.ts';
import { summarizeGitHub } from './summary.ts';
import { describeGitHubChange } from './changes.ts';
import { githubPresets } from './presets.ts';

export const githubDescriptor: TwinDescriptor<GitHubSeed, 'github'> = {
  name: 'github',
  description:
    'GitHub REST API (repos and contents, branches, pulls, issue comments, deployments, checks, OAuth, GitHub Apps, webhooks, tarballs)',
  hosts: ['api.github.com', 'github.com', 'uploads.github.com', 'codeload.github.com'],
  envVarNames: [
    'GITHUB_TOKEN',
    'GITHUB_API_URL',
    'GITHUB_SERVER_URL',
    'GITHUB_WEBHOOK_SECRET',
    // The sandbox's GitHub App (app.ts): Probot's names and the GITHUB_APP_* family.
    'APP_ID',
    'PRIVATE_KEY',
    'WEBHOOK_SECRET',
    'GITHUB_APP_ID',
    'GITHUB_APP_PRIVATE_KEY',
    'GITHUB_APP_WEBHOOK_SECRET',
    'GITHUB_APP_INSTALLATION_ID',
  ],
  // Probot's and @octokit/webhooks' middleware's default path.
  webhook: { path: '/api/github/webhooks', secretVar: 'GITHUB_WEBHOOK_SECRET' },
  // The sandbox's App key (app.ts), unless the seed brings its own app.
  rsaKeys: 1,
  summarize: summarizeGitHub,
  validateSeed: validateGitHubSeed,
  presets: githubPresets,
  describeChange: describeGitHubChange,
};
