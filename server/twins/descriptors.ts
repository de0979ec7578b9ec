import type { ScenarioPreset, TwinDescriptor } from './contract.ts';
import { githubDescriptor } from './vendors/github/descriptor.ts';
import { slackDescriptor } from './vendors/slack/descriptor.ts';
import { stripeDescriptor } from './vendors/stripe/descriptor.ts';
import { awsDescriptor } from './vendors/aws/descriptor.ts';
import { oktaDescriptor } from './vendors/okta/descriptor.ts';
import { resendDescriptor } from './vendors/resend/descriptor.ts';
import { twilioDescriptor } from './vendors/twilio/descriptor.ts';
import { linearDescriptor } from './vendors/linear/descriptor.ts';
import { vercelDescriptor } from './vendors/vercel/descriptor.ts';
import { mongoatlasDescriptor } from './vendors/mongoatlas/descriptor.ts';
import { googleDescriptor } from './vendors/google/descriptor.ts';
import { microsoftDescriptor } from './vendors/microsoft/descriptor.ts';
import { appleDescriptor } from './vendors/apple/descriptor.ts';
import { clerkDescriptor } from './vendors/clerk/descriptor.ts';

/**
 * What Twinbox knows of every twin without running one, by name: the main process's list, which feeds the
 * catalog (catalog.ts), the scenario listing (server/scenarios/presets.ts), seeds, egress, webhook targets,
 * the dashboard and the timeline. It names each folder's light `descriptor.ts` only: the twins run in pods,
 * so the main process never loads a driver, the engine or their libraries (a test holds it to that:
 * test/twins/main-graph.test.ts). The pods' list, with `create`, is registry.ts, in the same order.
 */
export const twinDescriptors: ReadonlyMap<string, TwinDescriptor> = new Map(
  [
    githubDescriptor,
    stripeDescriptor,
    slackDescriptor,
    resendDescriptor,
    twilioDescriptor,
    awsDescriptor,
    oktaDescriptor,
    vercelDescriptor,
    mongoatlasDescriptor,
    googleDescriptor,
    microsoftDescriptor,
    appleDescriptor,
    linearDescriptor,
    clerkDescriptor,
  ].map((d) => [d.name, d]),
);

/**
 * The scenario presets the twins' folders ship, in registry order (each descriptor's `presets`); the
 * scenario listing (server/scenarios/presets.ts) adds the presets that span several twins and sets the order.
 */
export const twinPresets: readonly ScenarioPreset[] = [...twinDescriptors.values()].flatMap(
  (d) => d.presets?.presets ?? [],
);
