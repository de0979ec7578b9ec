import { githubTwin } from './github/twin.ts';
import { slackTwin } from './slack/twin.ts';
import { stripeTwin } from './stripe/twin.ts';
import { awsTwin } from './aws/twin.ts';
import { oktaTwin } from './okta/twin.ts';
import { resendTwin } from './resend/twin.ts';
import { twilioTwin } from './twilio/twin.ts';
import { linearTwin } from './linear/twin.ts';
import { vercelTwin } from './vercel/twin.ts';
import { mongoatlasTwin } from './mongoatlas/twin.ts';
import { googleTwin } from './google/twin.ts';
import { microsoftTwin } from './microsoft/twin.ts';
import { appleTwin } from './apple/twin.ts';

/**
 * The twin catalog: the names `POST /sandboxes` accepts in `twins` and `GET /twins` lists.
 * A name joins only when an official-SDK flow passes against it in our tests (see docs/twins.md).
 */
export interface TwinCatalogEntry {
  name: string;
  description: string;
  /** Names of the environment variables an instance of this twin provides to the deployed app. */
  env_vars: string[];
}

export interface TwinCatalog {
  list(): TwinCatalogEntry[];
  has(name: string): boolean;
}

export function createCatalog(entries: TwinCatalogEntry[]): TwinCatalog {
  const byName = new Map(entries.map((entry) => [entry.name, entry]));
  return {
    list: () => [...byName.values()],
    has: (name) => byName.has(name),
  };
}

/**
 * The catalog Twinbox ships with: each of these passes its official-SDK flow in test/twins
 * (github: @octokit/rest, stripe: stripe, slack: @slack/web-api).
 */
export const builtInCatalog: TwinCatalog = createCatalog(
  [
    githubTwin,
    stripeTwin,
    slackTwin,
    resendTwin,
    twilioTwin,
    awsTwin,
    oktaTwin,
    vercelTwin,
    mongoatlasTwin,
    googleTwin,
    microsoftTwin,
    appleTwin,
    linearTwin,
  ].map((f) => ({
    name: f.name,
    description: f.description,
    env_vars: [...f.envVarNames],
  })),
);
