-- The PostgreSQL job queue (server/jobs/postgres.ts, docs/jobs.md). job_runs: which process holds each
-- run of a job, written in the transaction that fetches it: `worker` is the process's identity, the
-- same across its restarts (host, data directory, runner id), and `incarnation` differs at every start
-- and is the key of a session advisory lock that incarnation holds while it lives. So a process that
-- restarts after kill -9 takes back at once the runs its dead incarnation held (the lock is free),
-- and never those of a live process. Rows of runs that ended are deleted with the end, or by the
-- queue's maintenance. The index on job_keys.created_at serves the maintenance that prunes old keys.

-- Up Migration

CREATE TABLE job_runs (
  queue text NOT NULL,
  job_id uuid NOT NULL,
  run integer NOT NULL,
  worker text NOT NULL,
  incarnation bigint NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, job_id)
);
CREATE INDEX job_runs_worker_idx ON job_runs (worker);

CREATE INDEX job_keys_created_at_idx ON job_keys (created_at);

-- Down Migration

DROP INDEX job_keys_created_at_idx;
DROP TABLE job_runs;
