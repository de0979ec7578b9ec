-- The collections of server/store/collections.ts: one table each, the record as jsonb under its id.
-- Unique fields get unique expression indexes (<table>_<field>_key) so uniqueness holds across every
-- process sharing the database; looked-up fields get plain ones (<table>_<field>_idx). ->> yields NULL
-- for a null or absent value, which a unique index does not constrain, as the Store contract says.

-- Up Migration

CREATE TABLE accounts (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE UNIQUE INDEX accounts_email_key ON accounts ((data ->> 'email'));

CREATE TABLE api_keys (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE UNIQUE INDEX api_keys_hash_key ON api_keys ((data ->> 'hash'));
CREATE INDEX api_keys_account_id_idx ON api_keys ((data ->> 'account_id'));

CREATE TABLE identities (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE UNIQUE INDEX identities_provider_key_key ON identities ((data ->> 'provider_key'));
CREATE INDEX identities_account_id_idx ON identities ((data ->> 'account_id'));

CREATE TABLE scenarios (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX scenarios_owner_id_idx ON scenarios ((data ->> 'owner_id'));

CREATE TABLE sandboxes (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX sandboxes_owner_id_idx ON sandboxes ((data ->> 'owner_id'));
CREATE INDEX sandboxes_status_idx ON sandboxes ((data ->> 'status'));

CREATE TABLE verification_codes (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));

CREATE TABLE github_installations (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));

CREATE TABLE github_pulls (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX github_pulls_sandbox_id_idx ON github_pulls ((data ->> 'sandbox_id'));

CREATE TABLE github_deliveries (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));

CREATE TABLE sandbox_events (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX sandbox_events_sandbox_id_idx ON sandbox_events ((data ->> 'sandbox_id'));

-- Down Migration

DROP TABLE sandbox_events;
DROP TABLE github_deliveries;
DROP TABLE github_pulls;
DROP TABLE github_installations;
DROP TABLE verification_codes;
DROP TABLE sandboxes;
DROP TABLE scenarios;
DROP TABLE identities;
DROP TABLE api_keys;
DROP TABLE accounts;
