/**
 * Where the twin tests find each twin's vendor API description.
 *
 * Descriptions the project derives from an npm package (GitHub from @octokit/openapi, Stripe from
 * stripe-node's types, Vercel from @vercel/sdk) or wrote by hand (Apple) are committed, in
 * `server/twins/vendors/<twin>/vendor-schema/`. The others come from the vendors' public repositories, and data
 * taken from a fetched repository is never committed: they live beside the checkout, in
 * `<repository>/../shared/vendor-schemas/<twin>/` (CI puts `shared/` there), or in the folder
 * `TWINBOX_VENDOR_SCHEMAS_DIR` names. A description that is missing fails the test that needs it, in CI
 * and elsewhere alike, naming the file: a schema check that cannot run must never pass.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The twins whose description comes from a vendor's repository, so from `../shared/vendor-schemas/`. */
export const SHARED_VENDOR_SCHEMA_TWINS: readonly string[] = [
  'aws',
  'clerk',
  'google',
  'linear',
  'microsoft',
  'mongoatlas',
  'okta',
  'resend',
  'slack',
  'twilio',
];

export class VendorSchemaMissingError extends Error {
  override name = 'VendorSchemaMissingError';
  readonly kind = 'vendor_schema_missing';
  constructor(
    readonly twin: string,
    readonly path: string,
  ) {
    super(
      SHARED_VENDOR_SCHEMA_TWINS.includes(twin)
        ? `${twin}: the vendor's API description ${path} is missing. It comes from a fetched repository, so it ` +
            'is not in the repository: the twin tests read it from ../shared/vendor-schemas/<twin>/ beside ' +
            'the checkout, or from the folder TWINBOX_VENDOR_SCHEMAS_DIR names (docs/twins.md).'
        : `${twin}: the vendor's API description ${path} is missing from the repository.`,
    );
  }
}

/** The folder holding one folder per twin of the fetched descriptions. */
export function sharedVendorSchemasRoot(env: NodeJS.ProcessEnv = process.env): string {
  const override = env.TWINBOX_VENDOR_SCHEMAS_DIR?.trim();
  return resolve(override ? override : join(ROOT, '..', 'shared', 'vendor-schemas'));
}

/** Where a twin's description lives (with a trailing slash). */
export function vendorSchemaDir(twin: string, env: NodeJS.ProcessEnv = process.env): string {
  // `stripe@2022-11-15`: the description of one API version of a twin that serves several.
  const [name, version] = twin.split('@');
  if (version) return `${ROOT}server/twins/vendors/${name}/vendor-schema/versions/${version}/`;
  return SHARED_VENDOR_SCHEMA_TWINS.includes(twin)
    ? `${join(sharedVendorSchemasRoot(env), twin)}/`
    : `${ROOT}server/twins/vendors/${twin}/vendor-schema/`;
}

/** The path of one file of a twin's description; throws VendorSchemaMissingError when it is not there. */
export function vendorSchemaFile(twin: string, file: string, env: NodeJS.ProcessEnv = process.env): string {
  const path = `${vendorSchemaDir(twin, env)}${file}`;
  if (!existsSync(path)) throw new VendorSchemaMissingError(twin, path);
  return path;
}

export function readVendorSchemaText(twin: string, file: string): string {
  return readFileSync(vendorSchemaFile(twin, file), 'utf8');
}

export function readVendorSchemaJson<T = unknown>(twin: string, file: string): T {
  return JSON.parse(readVendorSchemaText(twin, file)) as T;
}
