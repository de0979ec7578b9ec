-- What every process sharing the database must see the same (issue 14): GitHub sign-in flows, the
-- sign-in rate-limit counters, signed-out sessions, the keys sessions and codes are signed with, and
-- how far the expiry sweep (server/store/expiry.ts) has gone. Expiring records are found hour by hour
-- through their indexed expires_hour.

-- Up Migration

CREATE TABLE oauth_states (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX oauth_states_expires_hour_idx ON oauth_states ((data ->> 'expires_hour'));

CREATE TABLE rate_limits (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX rate_limits_expires_hour_idx ON rate_limits ((data ->> 'expires_hour'));

CREATE TABLE revoked_sessions (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX revoked_sessions_expires_hour_idx ON revoked_sessions ((data ->> 'expires_hour'));

CREATE TABLE server_secrets (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));

CREATE TABLE sweep_cursors (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));

-- Down Migration

DROP TABLE sweep_cursors;
DROP TABLE server_secrets;
DROP TABLE revoked_sessions;
DROP TABLE rate_limits;
DROP TABLE oauth_states;
