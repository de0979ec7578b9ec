-- The job queues (server/jobs/, docs/jobs.md). On PostgreSQL the jobs themselves live in pg-boss's own
-- schema, which pg-boss creates and migrates at start. Here: job_keys, one row per (queue, key) ever
-- accepted, written in the transaction that sends the job, so a key (a GitHub delivery id, a sandbox
-- id) is accepted once however many processes send it and however long ago the first job finished;
-- and the `jobs` collection of collections.ts, which only the embedded queue fills.

-- Up Migration

CREATE TABLE job_keys (
  queue text NOT NULL,
  key text NOT NULL,
  job_id uuid NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, key)
);

CREATE TABLE jobs (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));
CREATE INDEX jobs_state_idx ON jobs ((data ->> 'state'));

-- Down Migration

DROP TABLE jobs;
DROP TABLE job_keys;
